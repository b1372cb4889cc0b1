// Package store keeps campaigns, trials and their per-size results in one
// SQLite file (WAL mode), so that a campaign can be inspected while it runs and
// resumed after it stops.
package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/nccltune/nccltune/runner"
	"github.com/nccltune/nccltune/runner/nccllog"
	"github.com/nccltune/nccltune/runner/nccltests"
	"modernc.org/sqlite" // the pure-Go SQLite driver
	sqlite3 "modernc.org/sqlite/lib"
)

// State is where a trial is in its life.
type State string

const (
	Running     State = "running"
	Complete    State = "complete"
	Failed      State = "failed"
	Interrupted State = "interrupted" // stopped by the user or by a crash; re-run on resume
	Pruned      State = "pruned"      // a quick pass showed it could not compete; not run in full
)

// Finished reports whether a trial is done with (run again on resume otherwise).
func (s State) Finished() bool { return s == Complete || s == Failed || s == Pruned }

// Phase is the part of a campaign that ran a trial.
type Phase string

const (
	// Search trials are the budget's: proposed by the sampler, NCCL's
	// defaults and try_first among them.
	Search Phase = "search"
	// Simplification trials follow the search: each range's choice run
	// again, and without each of its settings (the budget does not count them).
	Simplification Phase = "simplification"
)

// Campaign is one tuning campaign: a space file and the trials run on it.
type Campaign struct {
	ID        int64
	Name      string
	SpaceHash string
	Space     []byte // the space.toml as it was read
	// The search settings in force, which `run` flags may override: a resume
	// continues with them unless told otherwise.
	Budget  int
	Sampler string
	Seed    int64
	Created time.Time
	// Stopped says why the campaign ended before its budget ("" if it did not).
	Stopped string
	// Scale is the node count of a campaign of one of its space's
	// campaign.scales (see space.AtScale); 0 for another.
	Scale int
	// How the campaign ends once its budget is spent, as the run that
	// started it asked, which a resume keeps unless told otherwise:
	// Simplify tries each range's choice without each of its settings;
	// ValidateRounds, when at least 2, validates the result.
	Simplify       bool
	ValidateRounds int
	// Latest is how the latest run or resume ran the campaign where that
	// is no part of its space's identity, and may differ from Space, the
	// first run's; nil for a campaign stored before it was kept.
	Latest *RunSettings
}

// RunSettings are the settings of a space that a run or resume of its
// campaign may change: neither is part of the space's identity.
type RunSettings struct {
	Patience int           // campaign.patience
	Timeout  time.Duration // benchmark.timeout
	// ShortestTimeout is the shortest benchmark.timeout the campaign's
	// trials were measured under, of the runs the store kept it for, which
	// caps the iteration count; a run that completed none, as this one may,
	// leaves it. A
	// campaign stored before it was kept reads its Timeout.
	ShortestTimeout time.Duration
}

// Trial is one launch of the benchmark with one configuration.
type Trial struct {
	ID            int64
	CampaignID    int64
	Number        int // 0 is NCCL's defaults
	State         State
	Phase         Phase             // Search where StartTrial is given none
	Params        map[string]string // the searched variables' values
	Env           []string          // every NCCL_* variable the trial set
	Command       []string          // what was executed, launcher included
	Started       time.Time
	Finished      time.Time
	ExitCode      int
	FailureKind   string
	FailureReason string
	Output        []byte             // loaded only by Trial, not by Trials
	Scores        map[string]float64 // objective per size range, as told to the sampler
	Rows          []nccltests.Row
	NCCLLog       nccllog.Log        // what NCCL reported reading and using
	Fingerprint   runner.Fingerprint // what it ran on
	Group         int                // the group of nodes it ran on (launcher.groups), from 0
	Nodes         []string           // the group's nodes, where the launcher names them
}

// Searched reports whether the search ran t: a trial of no phase, as one
// not yet stored (StartTrial gives it Search), is the search's.
func (t *Trial) Searched() bool { return t.Phase != Simplification }

// Store is an open trial store.
type Store struct {
	db   *sql.DB
	path string
	// The writer's flock on the database file (LockWriter), and the file it
	// locked, which must stay the file at path.
	lock     *os.File
	identity os.FileInfo
	readOnly bool // OpenReader's: never writes
	// A reader's read lock on a store it reads immutable (readWithoutLog).
	shared *os.File
	// Whether the writer's automatic checkpoints are on (checkpoints).
	checkpointing bool
	// The schema version the store was opened at: a reader reads one from
	// readableFrom, a writer upgrades it to SchemaVersion.
	version int
}

// ErrOtherName means the store's file has another name (a hard link): SQLite
// names its write-ahead log after the path, so two names of one file are two
// logs, and a reader or writer through the other name would read stale pages
// or, checkpointing, overwrite the campaign's.
var ErrOtherName = errors.New("the store's file has more than one name (a hard link); SQLite keeps its log per name, so nccltune opens only a file with one (remove the other: find / -samefile FILE)")

// maxValue bounds a value the store holds: the longest nccltune writes is a
// trial's output, 8 MiB a launch (runner's maxOutput) for each of a
// workload's seven collectives, or a stored space of space.MaxFile; SQLite
// allows a gigabyte, which a reader escaping it for the terminal took
// tens of gigabytes to print. A variable for the tests, which make smaller
// values than that.
var maxValue = 128 << 20

// Open opens or creates the store at path for writing, migrating its schema
// to the current version and checking its integrity.
func Open(path string) (*Store, error) { return open(path, false) }

// OpenReader opens an existing store read-only: it never writes to the file,
// its schema included (an older schema is an error, not migrated), so that
// status, show, report and export cannot change what they read.
func OpenReader(path string) (*Store, error) { return open(path, true) }

func open(path string, readOnly bool) (*Store, error) {
	// filepath.EvalSymlinks reads "" as ".", the working folder, whose
	// links made it a hard-linked store below.
	if path == "" {
		return nil, errors.New("store: no file named (an empty path)")
	}
	// SQLite would block on a named pipe, for good, and read a device as
	// an empty database.
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("store %s is a directory", path)
	} else if err == nil && !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("store %s is not a regular file (%s)", path, fi.Mode().Type())
	}
	// The log is named after the path: every name of the file must give the
	// same one. A symbolic link resolves to its target; a hard link, which
	// has no canonical name, is refused.
	real := path
	if r, err := filepath.EvalSymlinks(path); err == nil {
		real = r
		var st syscall.Stat_t
		if syscall.Stat(real, &st) == nil && st.Nlink > 1 {
			return nil, fmt.Errorf("store %s: %w", path, ErrOtherName)
		}
	} else if readOnly {
		return nil, fmt.Errorf("store %s: %w", path, err)
	}
	// SQLite refuses a longer one as "unable to open database file", which
	// sent its owner after a missing folder or a campaign's log.
	if abs, err := filepath.Abs(real); err == nil && len(abs) > maxPath {
		return nil, fmt.Errorf("store %s: its absolute path (links resolved) is %d bytes long, and SQLite opens a database at a path of %d bytes at most: move it, or name one in a shallower folder", path, len(abs), maxPath)
	}
	if err := companions(real); err != nil {
		return nil, fmt.Errorf("store %s: %w", path, err)
	}
	if err := sqliteOrEmpty(real); err != nil {
		return nil, fmt.Errorf("store %s: %w", path, err)
	}
	if err := probe(real); err != nil {
		return nil, fmt.Errorf("store %s: %w", path, err)
	}
	// A writer that may not write the file is refused before SQLite opens
	// it: SQLite would fall back to reading it, and make its -wal and -shm
	// as this user's, which another user who owns the store cannot then
	// write ("attempt to write a readonly database" on the owner's next run).
	if !readOnly {
		if f, err := os.OpenFile(real, os.O_RDWR, 0); err == nil {
			f.Close() // no lock is held yet, none is lost
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("store %s cannot be written: %w; a campaign needs write access to it", path, err)
		} else {
			createHonouringUmask(real)
		}
	}
	var shared *os.File
	if readOnly {
		var err error
		if shared, err = readWithoutLog(real); err != nil {
			return nil, fmt.Errorf("store %s: %w", path, err)
		}
	}
	dsn, err := uri(real, readOnly, shared != nil)
	if err != nil {
		shared.Close()
		return nil, fmt.Errorf("store %s: %w", path, err)
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		shared.Close()
		return nil, fmt.Errorf("store %s: %w", path, err)
	}
	db.SetMaxOpenConns(1) // one connection: SQLite serialises writers anyway
	s := &Store{db: db, path: path, readOnly: readOnly, shared: shared}
	if err := s.limitValues(); err != nil {
		s.Close()
		return nil, fmt.Errorf("store %s: %w", path, s.unreadable(err))
	}
	if err := s.init(); err != nil {
		s.Close()
		return nil, fmt.Errorf("store %s: %w", path, err)
	}
	return s, nil
}

// readWithoutLog decides how a reader reads the store at path. Where it
// has no -wal, no connection has it open and the file holds everything: the
// reader reads it immutable, which makes no -wal or -shm (a read-only
// connection cannot delete them, so every status, show or report left
// them behind, and those another user's reader made, the owner's next run
// could not write: "attempt to write a readonly database"). It returns the
// file with a read lock on SQLite's SHARED range and on readerByte, held
// until Close, so that a campaign started meanwhile cannot write the file
// under the reader: its checkpoint on closing, and a new store's first
// writes (not yet in WAL mode), need the EXCLUSIVE lock this one bars, and
// it checkpoints no sooner than readerByte is free (see checkpoints).
// Where a -wal exists, a campaign has the store open, and the reader reads
// through its log: it returns nil.
func readWithoutLog(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	shared := syscall.Flock_t{Type: syscall.F_RDLCK, Whence: io.SeekStart, Start: sharedFirst, Len: sharedSize + 1}
	// A writer holds EXCLUSIVE only while it commits outside WAL mode or
	// checkpoints on closing: wait as SQLite would (busy timeout).
	for deadline := time.Now().Add(busyTimeout); ; time.Sleep(10 * time.Millisecond) {
		err = syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &shared)
		if err == nil || !errors.Is(err, syscall.EAGAIN) && !errors.Is(err, syscall.EACCES) || time.Now().After(deadline) {
			break
		}
	}
	switch {
	case errors.Is(err, syscall.ENOLCK):
		// A file system without POSIX locks (some NFS mounts): no writer
		// can run there either (SQLite's locks are the same), and the
		// file is read as it is.
	case errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EACCES):
		f.Close()
		return nil, fmt.Errorf("read lock: %w", errHeld)
	case err != nil:
		f.Close()
		return nil, fmt.Errorf("read lock: %w", err)
	}
	// Checked under the lock: a writer closing had checkpointed and
	// removed its log before it let the lock go.
	if _, err := os.Stat(path + "-wal"); err == nil {
		// Closed before SQLite opens the file: closing a descriptor of it
		// drops every POSIX lock this process holds on it, SQLite's too.
		f.Close()
		return nil, nil
	}
	return f, nil
}

// SQLite's lock bytes (os.c): SHARED_FIRST is PENDING_BYTE + 2, and
// SHARED_SIZE bytes from it are the last it locks. readerByte, the byte
// after them, is locked by immutable readers alone.
const (
	sharedFirst = 0x40000000 + 2
	sharedSize  = 510
	readerByte  = sharedFirst + sharedSize
)

// autocheckpoint is SQLite's default wal_autocheckpoint, in pages of log.
const autocheckpoint = 1000

// checkpoints turns the writer's automatic checkpoints on (uri opens it
// with them off) once no reader reads the store immutable. Such a reader
// came before the writer's log, reads the file alone, and takes no part in
// the log's read marks, so a checkpoint, which copies the log into the
// file without the EXCLUSIVE lock the reader bars, would change pages
// under it. A reader that comes once the log exists (the writer's
// connection made it) reads through the log, so once none holds
// readerByte, none can come. Until then the log grows: readers are brief.
func (s *Store) checkpoints() error {
	if s.checkpointing {
		return nil
	}
	reader := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: io.SeekStart, Start: readerByte, Len: 1}
	// F_GETLK sees other processes' locks only, this one's readers' not:
	// none of this process reads while it writes. Where the file system has
	// no locks, no reader has one either (readWithoutLog).
	if err := syscall.FcntlFlock(s.lock.Fd(), syscall.F_GETLK, &reader); err == nil && reader.Type != syscall.F_UNLCK {
		return nil
	}
	if _, err := s.db.Exec(fmt.Sprintf("PRAGMA wal_autocheckpoint = %d", autocheckpoint)); err != nil {
		return fmt.Errorf("store %s: %w", s.path, err)
	}
	s.checkpointing = true
	return nil
}

// createHonouringUmask makes a new store's file as a program makes any
// file, 0666 less the umask: SQLite makes it 0644 less the umask, so a
// user whose umask shares files with their group (002) got a store the
// group could not write. SQLite gives the -wal and -shm the file's mode.
// An empty file is an empty database, which migrate makes a store. Where
// the file cannot be made (no such folder, no right to write there),
// SQLite's open fails next and says why. Not O_EXCL, which refuses a
// symbolic link to where the store is to be made: SQLite followed it and
// made the file 0644 less the umask. A file made meanwhile by another
// process is opened and left as it is.
func createHonouringUmask(path string) {
	if f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o666); err == nil {
		f.Close()
	}
}

// companions refuses a file SQLite keeps beside the store at path (its
// log, the log's index, a rollback journal) that is not a regular file, or
// is one with another name (a hard link), which SQLite never makes: it
// opened a named pipe as the journal and waited on it for good, wrote the
// log into one, told of a symbolic link or a folder as of a folder missing
// or a file this user may not read, and truncated the file of another name
// to the index's size.
func companions(path string) error {
	for _, suffix := range []string{"-wal", "-shm", "-journal"} {
		fi, err := os.Lstat(path + suffix)
		switch {
		case err != nil:
		case !fi.Mode().IsRegular():
			return fmt.Errorf("its %s is not a regular file (%s), which SQLite never makes: remove it", suffix, fi.Mode().Type())
		case fi.Sys().(*syscall.Stat_t).Nlink > 1:
			// It may be the store's own log or hot journal, which a snapshot
			// of hard links (cp -al) kept after a crash: removing it would
			// lose the store's last transactions, a copy keeps both files.
			return fmt.Errorf("its %s has another name (a hard link), which SQLite never makes and would write into; it may hold the store's last transactions: give it a file of its own (cp -p '%s' '%[2]s.own' && mv '%[2]s.own' '%[2]s'), or remove its other name (find / -samefile '%[2]s')", suffix, path+suffix)
		}
	}
	return nil
}

// sqliteHeader starts every SQLite database file.
const sqliteHeader = "SQLite format 3\x00"

// sqliteOrEmpty refuses an existing file that is neither empty nor starts
// as an SQLite database does: SQLite reads a file shorter than its header
// (one byte, a short note) as an empty database, and a writer wrote a
// store over it. An empty file is a store a campaign starting made, or
// was killed before giving its tables (createHonouringUmask): SQLite
// makes it a database, and a writer a store. A file missing or unreadable
// is left for the open to tell of.
func sqliteOrEmpty(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	head := make([]byte, len(sqliteHeader))
	n, _ := io.ReadFull(f, head)
	if n > 0 && string(head[:n]) != sqliteHeader {
		return errors.New("not an SQLite database (it does not start with SQLite's header): nccltune makes a store only in a new or empty file, and leaves this one as it is")
	}
	return nil
}

// maxPath is the longest absolute path of a database that SQLite opens:
// its MAX_PATHNAME, less the "-journal" it adds for the journal's name.
const maxPath = 512 - len("-journal")

// busyTimeout is how long a connection waits for another's lock.
const busyTimeout = 10 * time.Second

var busyPragma = fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds())

// uri is the SQLite URI of the file at path, with nccltune's settings. The
// path is taken verbatim: '?', '#' and '%', which a URI reads as its query,
// fragment and escapes, are escaped, so that no name sends the database to
// another file. An immutable store is read without its log and locks.
func uri(path string, readOnly, immutable bool) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	escaped := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(abs)
	q := url.Values{}
	// No journal_mode here: it is the file's, not the connection's, and
	// init sets it only once the file is known to be a store (migrate).
	// synchronous FULL syncs the log on every commit: under NORMAL, a
	// trial committed before a power loss could be gone after it, and run
	// again. A sync a trial is nothing beside the trial.
	pragmas := []string{busyPragma, "foreign_keys(1)", "synchronous(FULL)", "wal_autocheckpoint(0)"}
	if readOnly {
		// mode=ro opens the file O_RDONLY; query_only refuses any write
		// SQLite would otherwise make for us.
		pragmas = []string{busyPragma, "query_only(1)", "cell_size_check(1)"}
		q.Set("mode", "ro")
	}
	if immutable {
		q.Set("immutable", "1")
	}
	for _, p := range pragmas {
		q.Add("_pragma", p)
	}
	return "file:" + escaped + "?" + q.Encode(), nil
}

func (s *Store) init() error {
	version, err := checkSchema(s.db)
	if err != nil {
		return s.unreadable(err)
	}
	// A writer checks the whole file: what it writes builds on what is
	// there (a damaged index would be written on), and damage comes while
	// no campaign runs as well (a disk, an edit), so a clean last stop is
	// no reason to skip it. A reader does not: the check reads every page,
	// seconds on a store of a GB, mostly trials' output that status never
	// reads, and quick_check, which leaves out only matching each index
	// against its table, costs nearly as much (BenchmarkCheck). Each page a
	// reader reads is checked as read (cell_size_check, uri), and a
	// damaged one fails the read that met it; damage in pages it does not
	// read changes nothing it prints, and the next writer finds it.
	if s.readOnly {
		s.version = version
		return checkVersion(version)
	}
	var check string
	if err := s.db.QueryRow("PRAGMA integrity_check").Scan(&check); err != nil {
		return s.unreadable(err)
	}
	if check != "ok" {
		return fmt.Errorf("integrity check failed: %s", check)
	}
	if err := s.migrate(); err != nil {
		return err
	}
	s.version = SchemaVersion
	// A row whose trial or campaign is gone (deleted with foreign keys
	// off) is refused before the writer adds any: a new trial takes a
	// freed id, and finishing it would collide with the orphan's rows,
	// at the same trial on every resume.
	var table, parent string
	var row sql.NullInt64
	var fk int
	switch err := s.db.QueryRow("PRAGMA foreign_key_check").Scan(&table, &row, &parent, &fk); {
	case err == nil:
		return fmt.Errorf("%s row %d belongs to a row of %s that is not in the store: %w", table, row.Int64, parent, ErrTampered)
	case !errors.Is(err, sql.ErrNoRows):
		return err
	}
	// SQLite refuses the switch to WAL at once, busy timeout or not, while
	// another connection reads the file, as when two runs create one store
	// together: it is tried again for as long as that timeout.
	for deadline := time.Now().Add(busyTimeout); ; time.Sleep(10 * time.Millisecond) {
		_, err := s.db.Exec("PRAGMA journal_mode = WAL")
		if !Busy(err) || time.Now().After(deadline) {
			return err
		}
	}
}

// unreadable says why SQLite could not read the store, an error of its
// own (not one of the checks') told by its kind.
func (s *Store) unreadable(err error) error {
	var se *sqlite.Error
	switch {
	case !errors.As(err, &se):
		return err
	// A reader opens a store that exists, and makes nothing but the -shm
	// where a campaign's log lies beside it without one.
	case s.readOnly && (se.Code()&0xff == sqlite3.SQLITE_CANTOPEN || se.Code()&0xff == sqlite3.SQLITE_READONLY):
		return fmt.Errorf("cannot be read (%w): a campaign's log lies beside it, which SQLite reads with it: this user needs read access to its -wal and -shm, and write access to the folder where the -shm is missing", err)
	// A writer that may not write there is refused before any read:
	// the database is readable, and saying otherwise sends its owner
	// after a damage that is not there.
	case se.Code()&0xff == sqlite3.SQLITE_READONLY:
		return fmt.Errorf("cannot be written (%w): a campaign needs write access to the file and to its folder, where SQLite keeps the file's -wal and -shm", err)
	case se.Code()&0xff == sqlite3.SQLITE_CANTOPEN:
		return fmt.Errorf("cannot be opened or made (%w): its folder must exist, and a new store's be writable", err)
	case NoRoom(err) || Busy(err):
		return fmt.Errorf("cannot be opened: %w", err)
	}
	return fmt.Errorf("not a readable SQLite database: %w", err)
}

// NoRoom reports whether err is SQLite's of a write the file system
// refused, as it refuses them where the disk is full (or a quota or a
// file-size limit is reached): the store's -shm, which even a reader
// remakes beside a log left behind, included.
func NoRoom(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() {
	case sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR_WRITE, sqlite3.SQLITE_IOERR_FSYNC, sqlite3.SQLITE_IOERR_TRUNCATE,
		sqlite3.SQLITE_IOERR_SHMSIZE, sqlite3.SQLITE_IOERR_SHMMAP, sqlite3.SQLITE_IOERR_IN_PAGE:
		return true
	}
	return false
}

// errHeld is a reader's read lock on the store refused for all of the busy
// timeout (see readWithoutLog).
var errHeld = fmt.Errorf("refused for %s", busyTimeout)

// Busy reports whether err is of a lock on the store waited for in vain
// (the busy timeout), SQLite's or a reader's: not another nccltune's,
// which the writer lock tells by its pid, but another program's, a sqlite3
// shell's open transaction.
func Busy(err error) bool {
	var se *sqlite.Error
	return errors.Is(err, errHeld) || errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY
}

// Close closes the store and releases the writer lock.
func (s *Store) Close() error {
	// The writer copies its log into the file first: SQLite's checkpoint
	// on closing needs the store to itself, and one reader through the log
	// (`watch nccltune status`) left the last trials in the -wal alone,
	// which a copy of the file lacks. Not under an immutable reader (see
	// checkpoints); a checkpoint that fails leaves the log, which the next
	// reader reads through and the next writer copies.
	if s.identity != nil && s.checkpoints() == nil && s.checkpointing {
		s.db.Exec("PRAGMA wal_checkpoint(TRUNCATE)")
	}
	err := s.db.Close()
	// After SQLite's own descriptors: closing any descriptor of the file
	// drops the POSIX locks this process holds on it.
	if s.lock != nil {
		s.lock.Close()
	}
	if s.shared != nil {
		s.shared.Close()
	}
	return err
}

// Path is the file the store lives in.
func (s *Store) Path() string { return s.path }

// ErrNotFound is returned when a campaign or trial does not exist.
var ErrNotFound = errors.New("not found")

// CreateCampaign records a new campaign and returns it with its ID.
func (s *Store) CreateCampaign(c Campaign) (Campaign, error) {
	if err := s.writable(); err != nil {
		return c, err
	}
	if err := storable(c); err != nil {
		return c, fmt.Errorf("store %s: %w", s.path, err)
	}
	c.Created = time.Now().UTC()
	patience, timeout, shortest := c.latest()
	res, err := s.db.Exec(`INSERT INTO campaigns(name, space_hash, space, budget, sampler, seed, created_at, scale, simplify, validate_rounds,
		latest_patience, latest_timeout_ns, shortest_timeout_ns)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		c.Name, c.SpaceHash, c.Space, c.Budget, c.Sampler, c.Seed, c.Created.Format(time.RFC3339Nano), c.Scale, c.Simplify, c.ValidateRounds,
		patience, timeout, shortest)
	if err != nil {
		return c, fmt.Errorf("create campaign %s: %w", c.Name, err)
	}
	c.ID, err = res.LastInsertId()
	return c, err
}

// latest is c.Latest as its columns hold it: NULL for none.
func (c Campaign) latest() (patience, timeout, shortest sql.NullInt64) {
	if c.Latest != nil {
		patience = sql.NullInt64{Int64: int64(c.Latest.Patience), Valid: true}
		timeout = sql.NullInt64{Int64: int64(c.Latest.Timeout), Valid: true}
		shortest = sql.NullInt64{Int64: int64(c.Latest.ShortestTimeout), Valid: true}
	}
	return patience, timeout, shortest
}

// UpdateSettings records a campaign's budget, sampler, seed, stop reason,
// how it ends (Simplify, ValidateRounds) and its latest run's settings.
func (s *Store) UpdateSettings(c Campaign) error {
	if err := s.writable(); err != nil {
		return err
	}
	if err := storable(c); err != nil {
		return fmt.Errorf("store %s: %w", s.path, err)
	}
	patience, timeout, shortest := c.latest()
	_, err := s.db.Exec(`UPDATE campaigns SET budget = ?, sampler = ?, seed = ?, stopped = ?, simplify = ?, validate_rounds = ?,
		latest_patience = ?, latest_timeout_ns = ?, shortest_timeout_ns = ? WHERE id = ?`,
		c.Budget, c.Sampler, c.Seed, c.Stopped, c.Simplify, c.ValidateRounds, patience, timeout, shortest, c.ID)
	if err != nil {
		return fmt.Errorf("campaign %s: %w", c.Name, err)
	}
	return nil
}

// Campaign returns the campaign with the given name.
func (s *Store) Campaign(name string) (Campaign, error) {
	cs, err := s.campaigns(`WHERE name = ?`, name)
	if err != nil {
		return Campaign{}, err
	}
	if len(cs) == 0 {
		return Campaign{}, fmt.Errorf("campaign %q: %w", name, ErrNotFound)
	}
	return cs[0], nil
}

// Campaigns lists every campaign, oldest first.
func (s *Store) Campaigns() ([]Campaign, error) { return s.campaigns("") }

func (s *Store) campaigns(where string, args ...any) (_ []Campaign, err error) {
	defer s.located(&err)
	latest := "latest_patience, latest_timeout_ns, shortest_timeout_ns"
	switch {
	case s.version < latestSince:
		latest = "NULL, NULL, NULL"
	case s.version < shortestSince:
		latest = "latest_patience, latest_timeout_ns, NULL"
	}
	rows, err := s.db.Query(`SELECT id, name, space_hash, space, budget, sampler, seed, created_at, stopped, scale, simplify, validate_rounds,
		`+latest+` FROM campaigns `+where+` ORDER BY id`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Campaign
	for rows.Next() {
		var c Campaign
		var created string
		var patience, timeout, shortest sql.NullInt64
		if err := rows.Scan(&c.ID, &c.Name, &c.SpaceHash, &c.Space, &c.Budget, &c.Sampler, &c.Seed, &created, &c.Stopped, &c.Scale,
			&c.Simplify, &c.ValidateRounds, &patience, &timeout, &shortest); err != nil {
			return nil, err
		}
		c.Created, _ = time.Parse(time.RFC3339Nano, created)
		switch {
		case patience.Valid != timeout.Valid || shortest.Valid && !timeout.Valid: // written together, or not at all
			return nil, fmt.Errorf("campaign %d: a latest run's patience or timeouts without the others: %w", c.ID, ErrTampered)
		case patience.Valid:
			c.Latest = &RunSettings{Patience: int(patience.Int64), Timeout: time.Duration(timeout.Int64), ShortestTimeout: time.Duration(timeout.Int64)}
			if shortest.Valid {
				c.Latest.ShortestTimeout = time.Duration(shortest.Int64)
			}
		}
		if err := checkCampaign(c); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// StartTrial records a trial as running before its benchmark is launched, so
// that a crash leaves a trace that resume can find. It sets t.ID.
func (s *Store) StartTrial(t *Trial) error {
	if err := s.writable(); err != nil {
		return err
	}
	if t.Number < 0 || t.Number >= maxTrialNumber {
		return fmt.Errorf("store %s: trial number %d is beyond what a store holds (0 to %d)", s.path, t.Number, maxTrialNumber-1)
	}
	t.State, t.Started = Running, time.Now().UTC()
	if t.Phase == "" {
		t.Phase = Search
	}
	cols, err := encode(t.Params, t.Env, t.Nodes)
	if err != nil {
		return fmt.Errorf("store %s: start trial %d: %w", s.path, t.Number, err)
	}
	res, err := s.db.Exec(`INSERT INTO trials(campaign_id, number, state, phase, params, env, started_at, node_group, nodes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		t.CampaignID, t.Number, t.State, t.Phase, cols[0], cols[1], t.Started.Format(time.RFC3339Nano), t.Group, cols[2])
	if err != nil {
		return fmt.Errorf("store %s: start trial %d: %w", s.path, t.Number, err)
	}
	t.ID, err = res.LastInsertId()
	return err
}

// FinishTrial records a trial's outcome and its result rows in one transaction.
func (s *Store) FinishTrial(ctx context.Context, t *Trial) error {
	if err := s.writable(); err != nil {
		return err
	}
	if t.Finished.IsZero() {
		t.Finished = time.Now().UTC()
	}
	// JSON has no NaN or infinity: a trial carrying one is refused, not stored half.
	cols, err := encode(t.Env, t.Command, t.Scores, t.NCCLLog, t.Fingerprint)
	if err != nil {
		return fmt.Errorf("store %s: finish trial %d: %w", s.path, t.Number, err)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store %s: finish trial %d: %w", s.path, t.Number, err)
	}
	defer tx.Rollback()
	var started any // the launch's start, where the trial has one; else the start stored
	if !t.Started.IsZero() {
		started = t.Started.Format(time.RFC3339Nano)
	}
	_, err = tx.Exec(`UPDATE trials SET state = ?, env = ?, command = ?, started_at = COALESCE(?, started_at), finished_at = ?, exit_code = ?,
		failure_kind = ?, failure_reason = ?, output = ?, scores = ?, nccl_log = ?, fingerprint = ? WHERE id = ?`,
		t.State, cols[0], cols[1], started, t.Finished.Format(time.RFC3339Nano), t.ExitCode,
		t.FailureKind, t.FailureReason, t.Output, cols[2], cols[3], cols[4], t.ID)
	if err != nil {
		return fmt.Errorf("store %s: finish trial %d: %w", s.path, t.Number, err)
	}
	for i, r := range t.Rows {
		_, err = tx.Exec(`INSERT INTO results(trial_id, seq, collective, size, count, type, redop, root,
			oop_time_us, oop_algbw, oop_busbw, oop_wrong, ip_time_us, ip_algbw, ip_busbw, ip_wrong)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			t.ID, i, r.Collective, r.Size, r.Count, r.Type, r.Redop, r.Root,
			r.OutOfPlace.TimeUs, r.OutOfPlace.AlgBW, r.OutOfPlace.BusBW, r.OutOfPlace.Wrong,
			r.InPlace.TimeUs, r.InPlace.AlgBW, r.InPlace.BusBW, r.InPlace.Wrong)
		if err != nil {
			return fmt.Errorf("store %s: finish trial %d: result row %d: %w", s.path, t.Number, i, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store %s: finish trial %d: %w", s.path, t.Number, err)
	}
	return nil
}

const trialColumns = `id, campaign_id, number, state, phase, params, env, command, started_at, finished_at,
	exit_code, failure_kind, failure_reason, scores, nccl_log, fingerprint, node_group, nodes`

// Trials returns a campaign's trials in order, with their result rows but
// without their output.
func (s *Store) Trials(campaignID int64) (_ []Trial, err error) {
	defer s.located(&err)
	// Both statements read one snapshot: beside a running campaign, the
	// result rows of a trial it started and finished between them were read
	// without the trial, and went to the first trial, NCCL's defaults.
	tx, err := s.db.Begin()
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	rows, err := tx.Query(`SELECT `+trialColumns+` FROM trials WHERE campaign_id = ? ORDER BY number, id`, campaignID)
	if err != nil {
		return nil, err
	}
	var out []Trial
	byID := map[int64]int{}
	for rows.Next() {
		t, err := scanTrial(rows)
		if err != nil {
			rows.Close()
			return nil, err
		}
		byID[t.ID] = len(out)
		out = append(out, t)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	res, err := tx.Query(`SELECT r.trial_id, r.collective, r.size, r.count, r.type, r.redop, r.root,
		r.oop_time_us, r.oop_algbw, r.oop_busbw, r.oop_wrong, r.ip_time_us, r.ip_algbw, r.ip_busbw, r.ip_wrong
		FROM results r JOIN trials t ON t.id = r.trial_id WHERE t.campaign_id = ? ORDER BY r.trial_id, r.seq`, campaignID)
	if err != nil {
		return nil, err
	}
	defer res.Close()
	for res.Next() {
		var id int64
		var r nccltests.Row
		if err := res.Scan(&id, &r.Collective, &r.Size, &r.Count, &r.Type, &r.Redop, &r.Root,
			&r.OutOfPlace.TimeUs, &r.OutOfPlace.AlgBW, &r.OutOfPlace.BusBW, &r.OutOfPlace.Wrong,
			&r.InPlace.TimeUs, &r.InPlace.AlgBW, &r.InPlace.BusBW, &r.InPlace.Wrong); err != nil {
			return nil, fmt.Errorf("result row of trial row %d: %w", id, err)
		}
		t := &out[byID[id]]
		t.Rows = append(t.Rows, r)
	}
	if err := res.Err(); err != nil {
		return nil, err
	}
	if err := checkTrials(out); err != nil {
		return nil, err
	}
	return out, nil
}

// Output returns the captured output of one trial.
func (s *Store) Output(trialID int64) (out []byte, err error) {
	defer s.located(&err)
	err = s.db.QueryRow(`SELECT output FROM trials WHERE id = ?`, trialID).Scan(&out)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("trial id %d: %w", trialID, ErrNotFound)
	}
	return out, err
}

type scanner interface{ Scan(...any) error }

func scanTrial(sc scanner) (Trial, error) {
	var t Trial
	var params, env string
	var command, finished, kind, reason, scores, log, fp, nodes sql.NullString
	var started string
	var exit sql.NullInt64
	if err := sc.Scan(&t.ID, &t.CampaignID, &t.Number, &t.State, &t.Phase, &params, &env, &command, &started, &finished,
		&exit, &kind, &reason, &scores, &log, &fp, &t.Group, &nodes); err != nil {
		return t, fmt.Errorf("trial row %d: %w", t.ID, err)
	}
	t.Started, _ = time.Parse(time.RFC3339Nano, started)
	t.Finished, _ = time.Parse(time.RFC3339Nano, finished.String)
	t.ExitCode, t.FailureKind, t.FailureReason = int(exit.Int64), kind.String, reason.String
	for _, f := range []struct {
		src string
		dst any
	}{{params, &t.Params}, {env, &t.Env}, {command.String, &t.Command}, {scores.String, &t.Scores}, {log.String, &t.NCCLLog},
		{fp.String, &t.Fingerprint}, {nodes.String, &t.Nodes}} {
		if f.src == "" || f.src == "null" {
			continue
		}
		if err := json.Unmarshal([]byte(f.src), f.dst); err != nil {
			return t, fmt.Errorf("trial %d: corrupt JSON column: %w", t.Number, err)
		}
	}
	// A trial's settings are a map its readers add to (the samplers'
	// neighbours): params of JSON null, which nccltune never writes, read
	// as no settings, not as a nil map.
	if t.Params == nil {
		t.Params = map[string]string{}
	}
	return t, nil
}

// located names the store in a read's error, which may come of a damaged
// or edited row (a column SQLite gave another type, JSON that does not
// decode), so that the message says which file holds it.
func (s *Store) located(err *error) {
	var se *sqlite.Error
	if errors.As(*err, &se) && se.Code()&0xff == sqlite3.SQLITE_TOOBIG {
		*err = fmt.Errorf("a value over %d MiB, longer than any nccltune writes (%w): %w", maxValue>>20, *err, ErrTampered)
	}
	if *err != nil {
		*err = fmt.Errorf("store %s: %w", s.path, *err)
	}
}

// limitValues has SQLite refuse to read or write a value over maxValue
// (SQLITE_TOOBIG) on the store's one connection, which the pool keeps.
func (s *Store) limitValues() error {
	c, err := s.db.Conn(context.Background())
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = sqlite.Limit(c, sqlite3.SQLITE_LIMIT_LENGTH, maxValue)
	return err
}

// encode renders each value as a JSON column.
func encode(values ...any) ([]string, error) {
	out := make([]string, len(values))
	for i, v := range values {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		out[i] = string(b)
	}
	return out, nil
}
