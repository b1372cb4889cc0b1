package store

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// ErrLocked means another process is running a campaign on the same store.
var ErrLocked = errors.New("store is in use by another nccltune run")

// LockWriter makes this process the store's only writer until Close. A second
// `nccltune run` on the same store is refused; readers (status, export, show)
// take no lock and are never blocked. The lock is an flock on FILE.lock, so
// it dies with its process, even under kill -9.
func (s *Store) LockWriter() error {
	if s.lock != nil {
		return nil
	}
	f, err := os.OpenFile(s.path+".lock", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("store %s: lock: %w", s.path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(s.path + ".lock")
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return fmt.Errorf("%w (%s, pid %s)", ErrLocked, s.path, strings.TrimSpace(string(holder)))
		}
		return fmt.Errorf("store %s: lock: %w", s.path, err)
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	s.lock = f
	return nil
}

// MarkInterrupted turns trials left running by a process that died into
// interrupted ones. Only the writer may call it: a running trial is then stale.
func (s *Store) MarkInterrupted(campaignID int64) (int, error) {
	if s.lock == nil {
		return 0, errors.New("MarkInterrupted needs the writer lock")
	}
	res, err := s.db.Exec(`UPDATE trials SET state = ?, failure_kind = 'interrupted',
		failure_reason = 'nccltune stopped while the trial ran' WHERE campaign_id = ? AND state = ?`,
		Interrupted, campaignID, Running)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}
