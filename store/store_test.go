package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nccltune/nccltune/runner/nccllog"
	"github.com/nccltune/nccltune/runner/nccltests"
)

func openTemp(t *testing.T) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "trials.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}

// openWriter is openTemp with the writer lock taken.
func openWriter(t *testing.T) (*Store, string) {
	t.Helper()
	s, path := openTemp(t)
	if err := s.LockWriter(); err != nil {
		t.Fatal(err)
	}
	return s, path
}

// closedStore is the path of a store that a writer made with one campaign
// ("c") and closed.
func closedStore(t *testing.T) string {
	t.Helper()
	s, path := openWriter(t)
	if _, err := s.CreateCampaign(Campaign{Name: "c", SpaceHash: "h", Space: []byte{}, Budget: 3, Sampler: "tpe"}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	return path
}

func TestRoundTrip(t *testing.T) {
	s, path := openWriter(t)
	c, err := s.CreateCampaign(Campaign{Name: "c1", SpaceHash: "abc", Space: []byte("[campaign]\n")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateCampaign(Campaign{Name: "c1", SpaceHash: "x"}); err == nil {
		t.Error("a second campaign with the same name was accepted")
	}
	tr := &Trial{CampaignID: c.ID, Number: 1, Params: map[string]string{"NCCL_ALGO": "Ring"}, Env: []string{"NCCL_ALGO=Ring"},
		Group: 2, Nodes: []string{"gpu-017", "gpu-018"}}
	if err := s.StartTrial(tr); err != nil {
		t.Fatal(err)
	}
	running, err := s.Trials(c.ID)
	if err != nil || len(running) != 1 || running[0].State != Running {
		t.Fatalf("after start: %+v, %v", running, err)
	}
	tr.State, tr.ExitCode, tr.Command = Complete, 0, []string{"all_reduce_perf", "-b", "8"}
	tr.Output = []byte("the output\x00with a NUL")
	tr.NCCLLog = nccllog.Log{Version: "2.28.3", Debug: true, Read: map[string]string{"NCCL_ALGO": "Ring"}, Network: "IB", GDR: true}
	tr.Scores = map[string]float64{"small": 1.5, "large": 300.25}
	tr.Rows = []nccltests.Row{
		{Size: 8, Count: 2, Type: "float", Redop: "sum", Root: -1, OutOfPlace: nccltests.Measure{TimeUs: 10.5, AlgBW: 0, BusBW: 0, Wrong: 0}, InPlace: nccltests.Measure{TimeUs: 10, Wrong: -1}},
		{Size: 1 << 30, Count: 1 << 28, Type: "float", Redop: "sum", Root: -1, OutOfPlace: nccltests.Measure{TimeUs: 4000, AlgBW: 250, BusBW: 400, Wrong: 0}},
	}
	if err := s.FinishTrial(context.Background(), tr); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	got, err := s2.Trials(c.ID)
	if err != nil || len(got) != 1 {
		t.Fatalf("Trials: %v, %v", got, err)
	}
	g := got[0]
	if g.State != Complete || g.Phase != Search || !reflect.DeepEqual(g.Params, tr.Params) || !reflect.DeepEqual(g.Env, tr.Env) ||
		!reflect.DeepEqual(g.Command, tr.Command) || !reflect.DeepEqual(g.Scores, tr.Scores) || !reflect.DeepEqual(g.Rows, tr.Rows) ||
		!reflect.DeepEqual(g.NCCLLog, tr.NCCLLog) || g.Group != 2 || !reflect.DeepEqual(g.Nodes, tr.Nodes) {
		t.Errorf("read back %+v\nwant %+v", g, *tr)
	}
	out, err := s2.Output(g.ID)
	if err != nil || string(out) != string(tr.Output) {
		t.Errorf("Output = %q, %v", out, err)
	}
	if _, err := s2.Campaign("nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing campaign: %v", err)
	}
}

func TestOpenRejects(t *testing.T) {
	dir := t.TempDir()
	notDB := filepath.Join(dir, "notes.txt")
	os.WriteFile(notDB, []byte(strings.Repeat("this is not a database\n", 200)), 0o644)
	if _, err := Open(notDB); err == nil || !strings.Contains(err.Error(), "notes.txt") {
		t.Errorf("a text file opened as a store: %v", err)
	}
	if _, err := Open(dir); err == nil {
		t.Error("a directory opened as a store")
	}
	if _, err := Open(filepath.Join(dir, "no such folder", "new.db")); err == nil || !strings.Contains(err.Error(), "cannot be opened or made") {
		t.Errorf("a store in a missing folder: %v", err)
	}
	// An empty file, as a campaign starting makes one before its tables,
	// is no other program's database: a reader says it holds no campaign.
	empty := filepath.Join(dir, "empty.db")
	os.WriteFile(empty, nil, 0o644)
	if _, err := OpenReader(empty); err == nil || strings.Contains(err.Error(), "not an nccltune store") || !strings.Contains(err.Error(), "no campaign yet") {
		t.Errorf("an empty store read with %v", err)
	}
	for _, open := range []func(string) (*Store, error){Open, OpenReader} {
		if _, err := open(""); err == nil || !strings.Contains(err.Error(), "empty path") {
			t.Errorf("an empty path opened as a store: %v", err)
		}
	}
	// A named pipe would block SQLite's open for good, a device read as empty.
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{fifo, os.DevNull} {
		for _, open := range []func(string) (*Store, error){Open, OpenReader} {
			if _, err := open(path); err == nil || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("%s opened as a store: %v", path, err)
			}
		}
	}

	// Another program's database is refused and left as it was: no table
	// of ours, nor the write-ahead log, which changes the file's header.
	other := filepath.Join(dir, "other.sqlite")
	db, err := sql.Open("sqlite", other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE notes (text TEXT); INSERT INTO notes VALUES ('mine')"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	before, _ := os.ReadFile(other)
	for _, open := range []func(string) (*Store, error){Open, OpenReader} {
		if _, err := open(other); err == nil || !strings.Contains(err.Error(), "not an nccltune store") || !strings.Contains(err.Error(), other) {
			t.Errorf("another program's database opened as a store: %v", err)
		}
	}
	if after, _ := os.ReadFile(other); !bytes.Equal(before, after) {
		t.Error("opening another program's database changed it")
	}

}

// TestAnotherProgramsDatabaseAtAnyVersion: another program's database is
// told apart by its tables, not by its schema version, which many programs
// set (Firefox's places.sqlite is at 70s, Android's at their own): it was
// told to upgrade nccltune, or that the store was edited or damaged.
func TestAnotherProgramsDatabaseAtAnyVersion(t *testing.T) {
	for _, version := range []int{70, 5, 1, -1} {
		path := built(t, []string{"CREATE TABLE moz_places (id INTEGER PRIMARY KEY, url TEXT)", fmt.Sprintf("PRAGMA user_version = %d", version)})
		before, _ := os.ReadFile(path)
		for _, open := range []func(string) (*Store, error){Open, OpenReader} {
			s, err := open(path)
			if err == nil {
				s.Close()
			}
			if err == nil || !strings.Contains(err.Error(), "not an nccltune store") || strings.Contains(err.Error(), "upgrade") || errors.Is(err, ErrTampered) {
				t.Errorf("another program's database at schema version %d opened with %v", version, err)
			}
		}
		if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
			t.Errorf("schema version %d: opening another program's database changed it", version)
		}
	}
	// A newer nccltune's store holds every table of this one's: the
	// migrations only add.
	path := built(t, append(slices.Clone(migrations), "CREATE TABLE later (x)", "PRAGMA user_version = 99"))
	if _, err := Open(path); err == nil || !strings.Contains(err.Error(), "newer than this nccltune") {
		t.Errorf("a newer nccltune's store opened with %v", err)
	}
}

// TestReaderThatCannotOpenTheLog: a reader that SQLite cannot let read the
// log a campaign keeps beside the store (a -wal this user may not read, no
// -shm in a folder this user may not write; here a -wal that is a folder)
// is told so: it was told that the store's folder must exist and a new
// store's be writable, of a store that exists and that it only reads.
func TestReaderThatCannotOpenTheLog(t *testing.T) {
	path := closedStore(t)
	if err := os.Mkdir(path+"-wal", 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenReader(path); err == nil || strings.Contains(err.Error(), "a new store") || !strings.Contains(err.Error(), "-wal") {
		t.Errorf("a reader that cannot open the log: %v", err)
	}
}

// TestForeignSchemaVersions: a store whose schema version no nccltune
// wrote, newer or negative (an edited user_version, a 32-bit integer), is
// refused by writers and readers alike, with the version named and the file
// left as it was (a negative one crashed the writer: index out of range in
// the migrations).
func TestForeignSchemaVersions(t *testing.T) {
	for _, tc := range []struct {
		version int
		want    string
	}{
		{99, "newer than this nccltune"},
		{-1, "schema version -1: " + ErrTampered.Error()},
		{math.MinInt32, fmt.Sprintf("schema version %d: ", math.MinInt32)},
	} {
		path := closedStore(t)
		s, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.db.Exec(fmt.Sprintf("PRAGMA user_version = %d", tc.version)); err != nil {
			t.Fatal(err)
		}
		s.Close()
		before, _ := os.ReadFile(path)
		for _, open := range []func(string) (*Store, error){Open, OpenReader} {
			if s, err := open(path); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("schema version %d opened with %v", tc.version, err)
				if err == nil {
					s.Close()
				}
			}
		}
		if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
			t.Errorf("schema version %d: opening changed the file", tc.version)
		}
	}
}

// built is the path of a database built by stmts (an older schema's).
func built(t *testing.T, stmts []string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, stmt := range stmts {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// migrated is the store that Open makes of a database built by stmts (an
// older schema's), closed when the test ends.
func migrated(t *testing.T, stmts []string) *Store {
	t.Helper()
	s, err := Open(built(t, stmts))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestMigratesOlderStore opens a store written at schema version 1 and
// finds its trial intact after the upgrade.
func TestMigratesOlderStore(t *testing.T) {
	s := migrated(t, []string{migrations[0], "PRAGMA user_version = 1",
		`INSERT INTO campaigns (id, name, space_hash, space, budget, sampler, seed, created_at) VALUES (1, 'old', 'h', 'x', 10, 'tpe', 1, '2026-01-01T00:00:00Z')`,
		`INSERT INTO trials (id, campaign_id, number, state, params, env, started_at) VALUES (1, 1, 0, 'complete', '{}', '[]', '2026-01-01T00:00:00Z')`})
	var version int
	s.db.QueryRow("PRAGMA user_version").Scan(&version)
	trials, err := s.Trials(1)
	if version != SchemaVersion || err != nil || len(trials) != 1 || trials[0].State != Complete {
		t.Errorf("after migration: version %d, trials %+v, %v", version, trials, err)
	}
	// Resumed before, it simplified and validated as the flags' defaults
	// say; it goes on doing so.
	// Its latest run's settings were not kept: its stored space's describe it.
	if c, err := s.Campaign("old"); err != nil || !c.Simplify || c.ValidateRounds != 5 || c.Latest != nil {
		t.Errorf("after migration: %+v, %v", c, err)
	}
}

// TestMigrationClassesTrialsByNumber: a store of the schema before trials
// recorded their phase reads its trials numbered from the campaign's stored
// budget up as the simplification's, as that nccltune numbered them, and
// those below it as the search's; each campaign by its own budget.
func TestMigrationClassesTrialsByNumber(t *testing.T) {
	phased := slices.IndexFunc(migrations, func(m string) bool { return strings.Contains(m, "ADD COLUMN phase") })
	stmts := append(slices.Clone(migrations[:phased]), fmt.Sprintf("PRAGMA user_version = %d", phased))
	for id, budget := range []int{4, 2} {
		stmts = append(stmts, fmt.Sprintf(`INSERT INTO campaigns (id, name, space_hash, space, budget, sampler, seed, created_at)
			VALUES (%d, 'c%d', 'h', 'x', %d, 'tpe', 1, '2026-01-01T00:00:00Z')`, id+1, id+1, budget))
		for n := range 6 {
			stmts = append(stmts, fmt.Sprintf(`INSERT INTO trials (campaign_id, number, state, params, env, started_at)
				VALUES (%d, %d, 'complete', '{}', '[]', '2026-01-01T00:00:00Z')`, id+1, n))
		}
	}
	s := migrated(t, stmts)
	for id, budget := range []int{4, 2} {
		trials, err := s.Trials(int64(id + 1))
		if err != nil || len(trials) != 6 {
			t.Fatalf("campaign c%d after migration: %d trials, %v", id+1, len(trials), err)
		}
		for _, tr := range trials {
			if want := map[bool]Phase{true: Search, false: Simplification}[tr.Number < budget]; tr.Phase != want {
				t.Errorf("campaign c%d (budget %d), trial %d: phase %q, want %q", id+1, budget, tr.Number, tr.Phase, want)
			}
		}
	}
}

// TestNoMigrationUnderARunningCampaign: an older nccltune's campaign
// running on the store (holding the writer lock) writes on as its schema
// says, so the schema is not upgraded under it (its later trials would
// take the new columns' defaults: a simplification trial the search's);
// the opener is refused as a second writer is, and upgrades it once the
// campaign has let go.
func TestNoMigrationUnderARunningCampaign(t *testing.T) {
	path := built(t, append(slices.Clone(migrations[:SchemaVersion-1]), fmt.Sprintf("PRAGMA user_version = %d", SchemaVersion-1),
		`INSERT INTO campaigns (id, name, space_hash, space, budget, sampler, seed, created_at) VALUES (1, 'c', 'h', 'x', 2, 'tpe', 1, '2026-01-01T00:00:00Z')`,
		fmt.Sprintf(`INSERT INTO writer VALUES (1, %d, '%s', '2026-01-01T00:00:00Z')`, os.Getpid(), hostname(t))))
	old, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if err := syscall.Flock(int(old.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	if s, err := Open(path); !errors.Is(err, ErrLocked) {
		if err == nil {
			s.Close()
		}
		t.Errorf("opened under a running campaign: %v", err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var version int
	if err := db.QueryRow("PRAGMA user_version").Scan(&version); err != nil || version != SchemaVersion-1 {
		t.Errorf("schema version %d under the running campaign (%v), want %d", version, err, SchemaVersion-1)
	}
	syscall.Flock(int(old.Fd()), syscall.LOCK_UN)
	s, err := Open(path)
	if err != nil {
		t.Fatalf("once the campaign ended: %v", err)
	}
	defer s.Close()
	if err := s.LockWriter(); err != nil {
		t.Errorf("after the upgrade: %v", err)
	}
}

// TestOpenerOfAStoreUpgradedMeanwhile: two runs starting on one new (or
// older) store at once. The one that read the old version waits for the
// other's upgrade; once the other has upgraded the store and runs its
// campaign on it, the first is refused as a second writer is, not as if
// the schema were still old ("schema version 0 is not upgraded under a
// running campaign"), which it no longer is.
func TestOpenerOfAStoreUpgradedMeanwhile(t *testing.T) {
	path := built(t, append(slices.Clone(migrations[:SchemaVersion-1]), fmt.Sprintf("PRAGMA user_version = %d", SchemaVersion-1)))
	other, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := syscall.Flock(int(other.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	opened := make(chan error, 1)
	go func() {
		s, err := Open(path)
		if err == nil {
			err = s.LockWriter()
			s.Close()
		}
		opened <- err
	}()
	time.Sleep(300 * time.Millisecond) // it has read the old version, and waits for the lock
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := migrateLocked(ctx, conn); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, `INSERT INTO writer VALUES (1, ?, ?, '2026-01-01T00:00:00Z')`, os.Getpid(), hostname(t)); err != nil {
		t.Fatal(err)
	}
	if err := <-opened; !errors.Is(err, ErrLocked) || strings.Contains(err.Error(), "schema version") {
		t.Errorf("opening a store another opener upgraded and runs a campaign on: %v", err)
	}
}

func hostname(t *testing.T) string {
	t.Helper()
	h, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestOverlongPathIsSaidSo: SQLite opens no database whose absolute path,
// with the "-journal" it derives from it, is past 512 bytes; such a store,
// a campaign's moved deep into an archive or a new one's in a deep folder,
// is refused as that, not as a folder that does not exist or a damaged
// file, and a writer leaves no empty store behind.
func TestOverlongPathIsSaidSo(t *testing.T) {
	data, err := os.ReadFile(closedStore(t))
	if err != nil {
		t.Fatal(err)
	}
	// at is a path of n bytes in a folder of its own.
	at := func(n int) string {
		dir := t.TempDir()
		for len(dir)+101 < n-10 {
			dir = filepath.Join(dir, strings.Repeat("d", 100))
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return filepath.Join(dir, strings.Repeat("f", n-len(dir)-4)+".db")
	}
	s, err := Open(at(maxPath))
	if err != nil {
		t.Fatalf("a path of %d bytes: %v", maxPath, err)
	}
	s.Close()
	long := at(maxPath + 1)
	if _, err := Open(long); err == nil || !strings.Contains(err.Error(), "bytes long") {
		t.Errorf("a new store at a path of %d bytes: %v", maxPath+1, err)
	}
	if _, err := os.Stat(long); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a store refused left its file: %v", err)
	}
	if err := os.WriteFile(long, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, open := range []func(string) (*Store, error){Open, OpenReader} {
		if _, err := open(long); err == nil || !strings.Contains(err.Error(), "bytes long") {
			t.Errorf("a store at a path of %d bytes: %v", maxPath+1, err)
		}
	}
}

// TestCampaignKeepsHowItEnds: whether a campaign simplifies and how many
// rounds validate it, as its run asked, read back as written, for a
// resume to keep.
func TestCampaignKeepsHowItEnds(t *testing.T) {
	s, _ := openWriter(t)
	c, err := s.CreateCampaign(Campaign{Name: "c", SpaceHash: "h", Space: []byte{}, Budget: 3, Sampler: "tpe", Simplify: false, ValidateRounds: 0})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.Campaign("c"); err != nil || got.Simplify || got.ValidateRounds != 0 {
		t.Errorf("created: %+v, %v", got, err)
	}
	c.Simplify, c.ValidateRounds = true, 7
	if err := s.UpdateSettings(c); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Campaign("c"); err != nil || !got.Simplify || got.ValidateRounds != 7 {
		t.Errorf("updated: %+v, %v", got, err)
	}
}

// TestCampaignKeepsItsLatestRun: the patience and timeout of the latest
// run, which may differ from the stored space's (the first run's), read
// back as written, none (a campaign stored before they were kept) as none;
// a negative one, which nccltune never writes, is refused.
func TestCampaignKeepsItsLatestRun(t *testing.T) {
	s, _ := openWriter(t)
	c, err := s.CreateCampaign(Campaign{Name: "c", SpaceHash: "h", Space: []byte{}, Budget: 3, Sampler: "tpe"})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.Campaign("c"); err != nil || got.Latest != nil {
		t.Errorf("created without: %+v, %v", got, err)
	}
	c.Latest = &RunSettings{Patience: 7, Timeout: 90 * time.Second, ShortestTimeout: 30 * time.Second}
	if err := s.UpdateSettings(c); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Campaign("c"); err != nil || got.Latest == nil || *got.Latest != *c.Latest {
		t.Errorf("updated: %+v, %v", got, err)
	}
	// A campaign a store of schema version 14 kept, before the shortest
	// timeout was: the latest one is the shortest known.
	if _, err := s.db.Exec("UPDATE campaigns SET shortest_timeout_ns = NULL"); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Campaign("c"); err != nil || got.Latest == nil || got.Latest.ShortestTimeout != c.Latest.Timeout {
		t.Errorf("without the shortest timeout: %+v, %v", got.Latest, err)
	}
	if _, err := s.db.Exec("UPDATE campaigns SET latest_timeout_ns = -1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Campaign("c"); !errors.Is(err, ErrTampered) {
		t.Errorf("a negative timeout read with %v", err)
	}
}

func TestOneWriter(t *testing.T) {
	s1, path := openTemp(t)
	if err := s1.LockWriter(); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if err := s2.LockWriter(); !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "pid") {
		t.Errorf("second writer: %v", err)
	}
	if _, err := s2.Campaigns(); err != nil {
		t.Errorf("a reader was blocked: %v", err)
	}
	if _, err := s2.MarkInterrupted(1); err == nil {
		t.Error("MarkInterrupted without the lock")
	}
	s1.Close()
	if err := s2.LockWriter(); err != nil {
		t.Errorf("lock not released by Close: %v", err)
	}
}

func TestDamagedStores(t *testing.T) {
	s, path := openWriter(t)
	c, err := s.CreateCampaign(Campaign{Name: "c", SpaceHash: "h", Space: []byte{}, Budget: 5, Sampler: "tpe"})
	if err != nil {
		t.Fatal(err)
	}
	for n := range 200 { // enough pages that damage lands inside the data
		tr := &Trial{CampaignID: c.ID, Number: n, Params: map[string]string{}, Env: []string{}}
		if err := s.StartTrial(tr); err != nil {
			t.Fatal(err)
		}
		tr.State, tr.Output = Complete, []byte(strings.Repeat("output ", 300))
		if err := s.FinishTrial(context.Background(), tr); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	data, _ := os.ReadFile(path)
	dir := t.TempDir()
	truncated := filepath.Join(dir, "truncated.db")
	os.WriteFile(truncated, data[:len(data)/3], 0o644)
	corrupt := filepath.Join(dir, "corrupt.db")
	damaged := append([]byte{}, data...)
	for i := len(damaged) / 2; i < len(damaged)/2+8192; i++ {
		damaged[i] = 0xA5
	}
	os.WriteFile(corrupt, damaged, 0o644)
	// A reader, which checks pages as it reads them (no whole-file check),
	// fails at the first damaged one; here every trial's output is read.
	readAll := func(st *Store) error {
		trials, err := st.Trials(c.ID)
		for _, tr := range trials {
			if err == nil {
				_, err = st.Output(tr.ID)
			}
		}
		return err
	}
	for _, p := range []string{truncated, corrupt} {
		for _, open := range []func(string) (*Store, error){Open, OpenReader} {
			st, err := open(p)
			if err == nil {
				err = readAll(st)
				st.Close()
			}
			if err == nil || !strings.Contains(err.Error(), filepath.Base(p)) && !strings.Contains(err.Error(), "malformed") {
				t.Errorf("%s opened and read without a clear error: %v", filepath.Base(p), err)
			}
		}
	}
	// /proc refuses new files even to root, like a read-only mount.
	if _, err := Open("/proc/self/new.db"); err == nil {
		t.Error("created a store in a read-only directory")
	}
}

// TestWritesOnlyWhatReadsBack: a budget, scale or trial number that the
// reader would refuse as tampered is refused when written, instead of
// leaving a campaign whose trials no later command can read.
func TestWritesOnlyWhatReadsBack(t *testing.T) {
	s, _ := openWriter(t)
	defer s.Close()
	for _, c := range []Campaign{
		{Name: "budget", Space: []byte("x"), Budget: maxTrialNumber + 1},
		{Name: "negative", Space: []byte("x"), Budget: -1},
		{Name: "scale", Space: []byte("x"), Budget: 10, Scale: 1<<20 + 1},
		{Name: "rounds", Space: []byte("x"), Budget: 10, ValidateRounds: maxValidateRounds + 1},
	} {
		if _, err := s.CreateCampaign(c); err == nil {
			t.Errorf("CreateCampaign(%+v) wrote what Campaigns refuses to read", c)
		}
	}
	c, err := s.CreateCampaign(Campaign{Name: "ok", Space: []byte("x"), Budget: 10})
	if err != nil {
		t.Fatal(err)
	}
	c.Budget = 2_000_000
	if err := s.UpdateSettings(c); err == nil {
		t.Error("UpdateSettings wrote a budget Campaigns refuses to read")
	}
	for _, n := range []int{-1, maxTrialNumber} {
		if err := s.StartTrial(&Trial{CampaignID: c.ID, Number: n}); err == nil {
			t.Errorf("StartTrial wrote trial %d, which Trials refuses to read", n)
		}
	}
	if _, err := s.Campaign("ok"); err != nil {
		t.Errorf("the store no longer reads: %v", err)
	}
	if _, err := s.Trials(c.ID); err != nil {
		t.Errorf("the store no longer reads: %v", err)
	}
}

// TestValidationsInTheOrderStored: verdicts read back in the order they
// were stored, the latest last, whatever the clock of the host that stored
// them said: a validation stored on a host whose clock is behind read as
// older than the one it replaced, and results took that one's verdicts.
func TestValidationsInTheOrderStored(t *testing.T) {
	s, _ := openWriter(t)
	c, err := s.CreateCampaign(Campaign{Name: "c", SpaceHash: "h", Space: []byte{}, Budget: 3, Sampler: "tpe"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, at := range []time.Time{now, now.Add(-time.Hour)} {
		v := Validation{Batch: at.UnixNano(), Range: "small", Candidate: 1, Config: "k", Rounds: 2, Verdict: "default", Reason: "r", Created: at}
		if err := s.SaveValidation(c.ID, v.Batch, nil, []Validation{v}); err != nil {
			t.Fatal(err)
		}
	}
	vals, err := s.Validations(c.ID)
	if err != nil || len(vals) != 2 || !vals[1].Created.Before(vals[0].Created) {
		t.Errorf("validations %+v (%v); want the one stored last, an hour behind, last", vals, err)
	}
}

// TestCommitsAreDurable: a trial the writer committed outlives a power
// loss or a crash of the machine, as it outlives kill -9. In WAL mode,
// synchronous NORMAL does not sync the log on commit, so the last trials
// committed before the power went were lost, and run again on resume.
func TestCommitsAreDurable(t *testing.T) {
	s, _ := openWriter(t)
	var mode int
	if err := s.db.QueryRow("PRAGMA synchronous").Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if mode < 2 {
		t.Errorf("PRAGMA synchronous = %d, want FULL (2) or EXTRA (3)", mode)
	}
}

// TestRefusesAFileThatIsNotSQLite: an existing file that is neither empty
// nor an SQLite database (one byte, a short note: SQLite reads a file
// shorter than a page as an empty database, and wrote a store over it) is
// refused by writers and readers, and left as it was, with no -wal or -shm
// beside it. An empty file is a store a campaign starting made (see
// createHonouringUmask): a writer makes it a store.
func TestRefusesAFileThatIsNotSQLite(t *testing.T) {
	for _, content := range []string{"x", "\x00", "SQLite format", "a note of a few words\n", strings.Repeat("z", 4095)} {
		path := filepath.Join(t.TempDir(), "notes")
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, open := range []func(string) (*Store, error){Open, OpenReader} {
			s, err := open(path)
			if err == nil {
				s.Close()
			}
			if err == nil || !strings.Contains(err.Error(), "not an SQLite database") || !strings.Contains(err.Error(), path) {
				t.Errorf("a file of %d bytes opened as a store: %v", len(content), err)
			}
		}
		if after, _ := os.ReadFile(path); string(after) != content {
			t.Errorf("a file of %d bytes was changed to %d bytes", len(content), len(after))
		}
		for _, suffix := range []string{"-wal", "-shm", "-journal"} {
			if _, err := os.Stat(path + suffix); err == nil {
				t.Errorf("a file of %d bytes: %s made beside it", len(content), suffix)
			}
		}
	}
	empty := filepath.Join(t.TempDir(), "empty.db")
	os.WriteFile(empty, nil, 0o644)
	s, err := Open(empty)
	if err != nil {
		t.Fatalf("an empty file: %v", err)
	}
	s.Close()
}

// TestReaderReadsThePreviousSchema: a store a previous nccltune wrote
// (schema version 13, before a campaign's latest run's settings were kept,
// or 14, before the shortest timeout of its runs was) is read by a reader
// as it is, its campaigns' latest settings none (their stored spaces
// describe them) or the latest run's timeout the shortest, and left
// unwritten: status refused every
// such store until a resume upgraded it, which a campaign the previous
// nccltune still runs, or a store this user may not write, never allows.
// Every reading method is tried at every version from readableFrom, so
// that a migration adding what a reader reads raises readableFrom or reads
// around it. An older version is still refused, with resume named.
func TestReaderReadsThePreviousSchema(t *testing.T) {
	for version := readableFrom; version < SchemaVersion; version++ {
		stmts := append(slices.Clone(migrations[:version]), fmt.Sprintf("PRAGMA user_version = %d", version),
			`INSERT INTO campaigns (id, name, space_hash, space, budget, sampler, seed, created_at) VALUES (1, 'old', 'h', 'x', 10, 'tpe', 1, '2026-01-01T00:00:00Z')`,
			`INSERT INTO trials (id, campaign_id, number, state, params, env, started_at) VALUES (1, 1, 0, 'complete', '{}', '[]', '2026-01-01T00:00:00Z')`,
			`INSERT INTO validation_runs (campaign_id, batch, round, arm, env, state, failure, scores, unconfirmed) VALUES (1, 1, 0, 'default', '[]', 'complete', '', '{}', '[]')`)
		if version >= latestSince {
			stmts = append(stmts, `INSERT INTO campaigns (id, name, space_hash, space, budget, sampler, seed, created_at, latest_patience, latest_timeout_ns)
				VALUES (2, 'latest', 'h', 'x', 10, 'tpe', 1, '2026-01-01T00:00:00Z', 3, 60000000000)`)
		}
		path := built(t, stmts)
		before, _ := os.ReadFile(path)
		s, err := OpenReader(path)
		if err != nil {
			t.Fatalf("a store of schema version %d: %v", version, err)
		}
		if c, err := s.Campaign("old"); err != nil || c.Latest != nil {
			t.Errorf("version %d: campaign %+v, %v", version, c, err)
		}
		// Its latest run's timeout is the shortest it knows.
		if c, err := s.Campaign("latest"); version >= latestSince && (err != nil || c.Latest == nil ||
			*c.Latest != RunSettings{Patience: 3, Timeout: time.Minute, ShortestTimeout: time.Minute}) {
			t.Errorf("version %d: campaign %+v, %v", version, c.Latest, err)
		}
		if trials, err := s.Trials(1); err != nil || len(trials) != 1 {
			t.Errorf("version %d: trials %+v, %v", version, trials, err)
		}
		for what, read := range map[string]func() error{
			"output":      func() error { _, err := s.Output(1); return err },
			"validations": func() error { _, err := s.Validations(1); return err },
			"validation runs": func() error {
				runs, err := s.AllValidationRuns(1)
				if err == nil && (len(runs) != 1 || runs[0].Info != InfoUnknown) {
					err = fmt.Errorf("runs %+v", runs)
				}
				return err
			},
			"decisions": func() error { _, err := s.Decisions(1); return err },
		} {
			if err := read(); err != nil {
				t.Errorf("version %d: %s: %v", version, what, err)
			}
		}
		s.Close()
		if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
			t.Errorf("version %d: reading changed the file", version)
		}
	}
	older := built(t, append(slices.Clone(migrations[:readableFrom-1]), fmt.Sprintf("PRAGMA user_version = %d", readableFrom-1)))
	if s, err := OpenReader(older); err == nil || !strings.Contains(err.Error(), "`nccltune resume` upgrades it") {
		t.Errorf("schema version %d read with %v", readableFrom-1, err)
		if err == nil {
			s.Close()
		}
	}
}

// TestLatestRunOutsideTheSpacesBounds: a campaign's latest run's patience
// and timeout go into the space a resume without --space runs, past the
// space file's checks: a timeout of 0 (read as none: a hung trial waits for
// good), one of a nanosecond or of years, a negative patience, a shortest
// timeout of 0 or of years, or one of the two without the other or the
// shortest without both (nccltune writes all three), which it never
// writes, is refused as tampered.
func TestLatestRunOutsideTheSpacesBounds(t *testing.T) {
	s, _ := openWriter(t)
	c, err := s.CreateCampaign(Campaign{Name: "c", SpaceHash: "h", Space: []byte{}, Budget: 3, Sampler: "tpe",
		Latest: &RunSettings{Patience: 5, Timeout: time.Minute, ShortestTimeout: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	for _, set := range []string{
		"latest_timeout_ns = 0", "latest_timeout_ns = 1", fmt.Sprintf("latest_timeout_ns = %d", 400*24*time.Hour),
		"latest_patience = -1",
		"latest_timeout_ns = NULL", "latest_patience = NULL",
		"shortest_timeout_ns = 0", fmt.Sprintf("shortest_timeout_ns = %d", 400*24*time.Hour),
		"latest_timeout_ns = NULL, latest_patience = NULL",
	} {
		if _, err := s.db.Exec("UPDATE campaigns SET "+set+" WHERE id = ?", c.ID); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Campaign("c"); !errors.Is(err, ErrTampered) {
			t.Errorf("%s: read as %+v, %v", set, got.Latest, err)
		}
		if _, err := s.db.Exec("UPDATE campaigns SET latest_patience = 5, latest_timeout_ns = ?, shortest_timeout_ns = ? WHERE id = ?", time.Minute, time.Minute, c.ID); err != nil {
			t.Fatal(err)
		}
	}
	for _, patience := range []int{0, 5, 1000} {
		c.Latest = &RunSettings{Patience: patience, Timeout: time.Second, ShortestTimeout: time.Second}
		if err := s.UpdateSettings(c); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Campaign("c"); err != nil || *got.Latest != *c.Latest {
			t.Errorf("patience %d: %+v, %v", patience, got.Latest, err)
		}
	}
}

// TestValidationRunKeepsItsNCCLInfo: whether a validation run's output held
// NCCL INFO lines reads back as stored, so that a run of a program that
// logs NCCL elsewhere is told apart from one whose NCCL read another value.
func TestValidationRunKeepsItsNCCLInfo(t *testing.T) {
	s, _ := openWriter(t)
	c, err := s.CreateCampaign(Campaign{Name: "c", SpaceHash: "h", Space: []byte{}, Budget: 3, Sampler: "tpe"})
	if err != nil {
		t.Fatal(err)
	}
	var runs []ValidationRun
	for round, info := range []NCCLInfo{InfoUnknown, InfoLines, InfoNone} {
		runs = append(runs, ValidationRun{Round: round, Arm: "default", Env: []string{}, State: Complete, Scores: map[string]float64{"small": 1}, Info: info})
	}
	if err := s.SaveValidation(c.ID, 1, runs, nil); err != nil {
		t.Fatal(err)
	}
	got, err := s.ValidationRuns(c.ID, 1)
	if err != nil || len(got) != len(runs) {
		t.Fatalf("runs %+v (%v)", got, err)
	}
	for i, r := range got {
		if r.Info != runs[i].Info {
			t.Errorf("round %d: info %d, stored %d", i, r.Info, runs[i].Info)
		}
	}
}
