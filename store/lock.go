package store

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// ErrLocked means another process is running a campaign on the same store.
var ErrLocked = errors.New("store is in use by another nccltune run")

// ErrReplaced means the store's file was deleted or replaced under a running campaign.
var ErrReplaced = errors.New("the store's file was deleted or replaced while the campaign ran")

// LockWriter makes this process the store's only writer until Close. A second
// `nccltune run` on the same store is refused, whatever path names the file
// (a symbolic or hard link, another spelling of the path): the lock is an
// flock on the database file itself, so it is the file's, and it dies with its
// process, even under kill -9. (SQLite's own locks are POSIX locks, which
// flocks do not touch.) Readers (status, export, show) take no lock and are
// never blocked.
func (s *Store) LockWriter() error {
	if s.identity != nil {
		return nil // held
	}
	if s.readOnly {
		return fmt.Errorf("store %s: opened read-only", s.path)
	}
	// A writer killed mid-trial leaves its trial's supervisor holding the
	// lock (runner.WithHeld) until the trial's last process is gone, a grace
	// period at most: wait for that rather than overlap the old trial.
	if err := s.flock(HeldWait, func() bool { known, runs := s.recordedWriter(); return known && !runs }); err != nil {
		return err
	}
	fi, err := s.lock.Stat()
	if err != nil {
		return fmt.Errorf("store %s: lock: %w", s.path, err)
	}
	s.identity = fi
	host, _ := os.Hostname()
	if _, err := s.db.Exec(`INSERT OR REPLACE INTO writer(id, pid, host, since) VALUES (1, ?, ?, ?)`,
		os.Getpid(), host, time.Now().UTC().Format(time.RFC3339)); err != nil {
		return fmt.Errorf("store %s: %w", s.path, err)
	}
	return nil
}

// HeldWait is how long LockWriter waits for the trials of a writer that
// died to end (their supervisors hold the lock until then).
var HeldWait = 30 * time.Second

// flock takes the flock on the store's file, trying again for up to
// patience while wait says that its holder is about to let it go.
func (s *Store) flock(patience time.Duration, wait func() bool) error {
	// Kept open until Close, the lock taken or not: closing any descriptor
	// of the file would drop SQLite's locks. A call after a refusal tries
	// again on it.
	if s.lock == nil {
		f, err := os.OpenFile(s.path, os.O_RDWR, 0)
		if err != nil {
			return fmt.Errorf("store %s: lock: %w", s.path, err)
		}
		s.lock = f
	}
	fd := int(s.lock.Fd())
	err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
	for deadline := time.Now().Add(patience); errors.Is(err, syscall.EWOULDBLOCK) && wait() && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		err = syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
	}
	switch {
	case errors.Is(err, syscall.EWOULDBLOCK):
		return fmt.Errorf("%w (%s%s)", ErrLocked, s.path, s.holder())
	case err != nil:
		return fmt.Errorf("store %s: lock: %w", s.path, err)
	}
	return nil
}

// Writer is the process that last took the store's writer lock, as it
// recorded itself (LockWriter).
type Writer struct {
	PID         int
	Host, Since string
	// Runs says whether it still runs, where it is a process of this
	// host; nil where it is another host's, which cannot be asked.
	Runs *bool
}

// LastWriter is the store's last writer; false where no process took the
// lock (or the store is an older nccltune's, which recorded none).
func (s *Store) LastWriter() (Writer, bool) {
	var w Writer
	if s.db.QueryRow(`SELECT pid, host, since FROM writer WHERE id = 1`).Scan(&w.PID, &w.Host, &w.Since) != nil || w.PID <= 0 {
		return Writer{}, false
	}
	if h, _ := os.Hostname(); h == w.Host {
		runs := !errors.Is(syscall.Kill(w.PID, 0), syscall.ESRCH)
		w.Runs = &runs
	}
	return w, true
}

// recordedWriter says whether the writer recorded in the store is a
// process of this host (known), and if so whether it still runs.
func (s *Store) recordedWriter() (known, runs bool) {
	w, ok := s.LastWriter()
	if !ok || w.Runs == nil {
		return false, false
	}
	return true, *w.Runs
}

// LockFile is the file the writer lock is held on (nil before LockWriter):
// a trial's supervisor keeps it open (runner.WithHeld), so that the lock
// lasts as long as the trial's processes.
func (s *Store) LockFile() *os.File {
	if s.identity == nil {
		return nil
	}
	return s.lock
}

// holder says which process holds the writer lock, as it recorded itself;
// not a writer of this host that is gone, which LockWriter waited for.
func (s *Store) holder() string {
	w, ok := s.LastWriter()
	switch {
	case !ok:
		return ""
	case w.Runs != nil && !*w.Runs:
		return fmt.Sprintf(", held by another process, not by pid %d, which recorded itself as its writer and is gone: a trial of its that outlived it by %s, or another program's flock on the file (lslocks names it)", w.PID, HeldWait)
	}
	return fmt.Sprintf(", pid %d on %s since %s", w.PID, w.Host, w.Since)
}

// writable checks, before the writer writes, that it holds the lock and that
// the file at the store's path is still the one it locked: a store deleted or
// replaced mid-campaign would take every later trial with it, unnoticed.
func (s *Store) writable() error {
	if s.identity == nil {
		return errors.New("writing needs the writer lock (LockWriter)")
	}
	fi, err := os.Stat(s.path)
	if err != nil || !os.SameFile(fi, s.identity) {
		return fmt.Errorf("store %s: %w", s.path, ErrReplaced)
	}
	if st, ok := s.identity.Sys().(*syscall.Stat_t); ok {
		var now syscall.Stat_t
		if syscall.Fstat(int(s.lock.Fd()), &now) == nil && now.Nlink == 0 && st.Nlink > 0 {
			return fmt.Errorf("store %s: %w", s.path, ErrReplaced)
		}
	}
	return s.checkpoints()
}

// MarkInterrupted turns trials left running by a process that died into
// interrupted ones. Only the writer may call it: a running trial is then stale.
func (s *Store) MarkInterrupted(campaignID int64) (int, error) {
	if err := s.writable(); err != nil {
		return 0, err
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
