package store

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nccltune/nccltune/runner/nccltests"
)

// TestOneWriterWhateverPathNamesIt: the writer lock belongs to the file, so
// a second writer is refused through every other name of it; readers through
// those names, while the writer runs, leave every row the writer wrote; a
// hard link, whose log SQLite would keep apart, is refused outright.
func TestOneWriterWhateverPathNamesIt(t *testing.T) {
	s, path := openWriter(t)
	dir := filepath.Dir(path)
	symlink := filepath.Join(t.TempDir(), "elsewhere.db")
	hardlink := filepath.Join(dir, "hard.db")
	if err := os.Symlink(path, symlink); err != nil {
		t.Fatal(err)
	}
	c, err := s.CreateCampaign(Campaign{Name: "c", SpaceHash: "h", Space: []byte{}, Budget: 3, Sampler: "tpe"})
	if err != nil {
		t.Fatal(err)
	}
	write := func(n int) {
		t.Helper()
		tr := &Trial{CampaignID: c.ID, Number: n, Params: map[string]string{}}
		if err := s.StartTrial(tr); err != nil {
			t.Fatal(err)
		}
		tr.State = Complete
		if err := s.FinishTrial(context.Background(), tr); err != nil {
			t.Fatal(err)
		}
	}
	count := func(st *Store) int {
		t.Helper()
		ts, err := st.Trials(c.ID)
		if err != nil {
			t.Fatal(err)
		}
		return len(ts)
	}
	write(0)
	names := []string{symlink, dir + "/./trials.db", dir + "//trials.db"}
	for i, name := range names {
		for _, open := range []func(string) (*Store, error){Open, OpenReader} {
			other, err := open(name)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if n := count(other); n != i+1 {
				t.Errorf("reader through %s sees %d trials, the writer wrote %d", name, n, i+1)
			}
			if err := other.LockWriter(); err == nil || (!errors.Is(err, ErrLocked) && !other.readOnly) {
				t.Errorf("second writer through %s: %v", name, err)
			}
			if err := other.StartTrial(&Trial{}); err == nil {
				t.Errorf("a store without the lock wrote through %s", name)
			}
			other.Close()
		}
		write(i + 1)
	}
	// A hard link made while the writer runs: refused through either name,
	// and the writer's rows survive readers that tried it.
	if err := os.Link(path, hardlink); err != nil {
		t.Fatal(err)
	}
	for _, open := range []func(string) (*Store, error){Open, OpenReader} {
		if other, err := open(hardlink); !errors.Is(err, ErrOtherName) {
			t.Errorf("open through a hard link: %v", err)
			if other != nil {
				other.Close()
			}
		}
	}
	if _, err := os.Stat(hardlink + "-wal"); err == nil {
		t.Errorf("opening through the hard link made a log of its own")
	}
	write(len(names) + 1)
	if n := count(s); n != len(names)+2 {
		t.Errorf("the writer sees %d trials, wrote %d", n, len(names)+2)
	}
	s.Close()
	os.Remove(hardlink)
	r, err := OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if n := count(r); n != len(names)+2 {
		t.Errorf("after the writer closed, the store holds %d trials of %d", n, len(names)+2)
	}
}

// TestReaderNeverWrites: a reader leaves the file byte for byte as it was,
// and refuses a store it would have to migrate.
func TestReaderNeverWrites(t *testing.T) {
	path := closedStore(t)
	before, _ := os.ReadFile(path)
	r, err := OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.db.Exec(`DELETE FROM trials`); err == nil {
		t.Error("a reader's connection wrote")
	}
	r.Close()
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Error("a reader changed the file")
	}
	if _, err := OpenReader(filepath.Join(t.TempDir(), "none.db")); err == nil {
		t.Error("a reader created a store")
	}
}

// TestPathsAreVerbatim: characters a URI reads as syntax name the file, not a query.
func TestPathsAreVerbatim(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a?mode=ro.db", "b#frag.db", "c%41%2e.db", "d?_pragma=journal_mode(DELETE)#x%.db", "with space.db"} {
		path := filepath.Join(dir, name)
		s, err := Open(path)
		if err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		if err := s.LockWriter(); err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		if _, err := s.CreateCampaign(Campaign{Name: "c", SpaceHash: "h", Space: []byte{}, Budget: 3, Sampler: "tpe"}); err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		s.Close()
		if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
			t.Errorf("%q: no database at that very path: %v", name, err)
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() == "a" || e.Name() == "b" || e.Name() == "d" || e.Name() == "cA..db" {
			t.Errorf("a database went to %q instead", e.Name())
		}
	}
}

// TestDeletedOrReplacedStoreIsAnError: every later write fails instead of
// going into a file no one can open any more.
func TestDeletedOrReplacedStoreIsAnError(t *testing.T) {
	for _, replace := range []func(path string) error{
		os.Remove,
		func(path string) error { os.Remove(path); return os.WriteFile(path, nil, 0o644) },
		func(path string) error { return os.Rename(path, path+".moved") },
	} {
		s, path := openWriter(t)
		c, err := s.CreateCampaign(Campaign{Name: "c", SpaceHash: "h", Space: []byte{}, Budget: 3, Sampler: "tpe"})
		if err != nil {
			t.Fatal(err)
		}
		if err := replace(path); err != nil {
			t.Fatal(err)
		}
		if err := s.StartTrial(&Trial{CampaignID: c.ID}); !errors.Is(err, ErrReplaced) {
			t.Errorf("write after the store was replaced: %v", err)
		}
	}
}

// TestLockWaitsForADeadWritersTrials: a writer that died while its trial's
// supervisor still holds the lock is waited for, not overlapped nor refused
// at once; a live writer is refused at once.
func TestLockWaitsForADeadWritersTrials(t *testing.T) {
	s, path := openWriter(t)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	other, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := other.LockWriter(); !errors.Is(err, ErrLocked) {
		t.Fatalf("a live writer's lock: %v", err)
	}
	other.Close()
	if _, err := s.db.Exec(`UPDATE writer SET pid = ?`, dead.Process.Pid); err != nil {
		t.Fatal(err)
	}
	// s stands in for the supervisor, which holds the lock a while longer.
	go func() { time.Sleep(500 * time.Millisecond); s.Close() }()
	start := time.Now()
	if other, err = Open(path); err != nil {
		t.Fatal(err)
	}
	if err := other.LockWriter(); err != nil {
		t.Fatalf("after the dead writer's trial ended: %v", err)
	}
	if waited := time.Since(start); waited < 400*time.Millisecond {
		t.Errorf("took the lock after %s, while the old trial held it", waited)
	}
}

// TestTamperedRowsAreRefused mutates stored rows as an attacker or a damaged
// disk would: each such store is refused on read with ErrTampered, before
// anything indexes or loops on what it holds. A validation run was read as
// stored: one of a state nccltune never writes read as failed, and status
// kept NCCL's defaults for the range it had validated.
func TestTamperedRowsAreRefused(t *testing.T) {
	for _, mutation := range []string{
		`UPDATE trials SET number = -1 WHERE number = 0`,
		`UPDATE trials SET number = 1 WHERE number = 0`,
		`UPDATE trials SET number = 9223372036854775807 WHERE number = 2`,
		`UPDATE trials SET state = 'bogus' WHERE number = 1`,
		`UPDATE trials SET scores = '{"small":-5}' WHERE number = 1`,
		`UPDATE trials SET node_group = -1 WHERE number = 1`,
		`UPDATE trials SET phase = 'bogus' WHERE number = 1`,
		`INSERT INTO trials (campaign_id, number, state, phase, params, env, started_at) VALUES (1, 1, 'interrupted', 'simplification', '{}', '[]', '')`,
		`UPDATE results SET oop_busbw = 9e999`,
		`UPDATE results SET ip_busbw = -9e999`,
		`UPDATE results SET ip_time_us = -1`,
		`UPDATE results SET size = -8`,
		`UPDATE campaigns SET budget = -3`,
		`UPDATE campaigns SET budget = 9223372036854775807`,
		`UPDATE campaigns SET validate_rounds = -1`,
		`UPDATE campaigns SET validate_rounds = 1000000000`,
		// A stored space the loader would not read (status took 19 s and
		// 1.2 GB to parse 100 MB of one).
		`UPDATE campaigns SET space = space || '#' || hex(zeroblob(8388608))`,
		validation("bogus", 5, "0.1"),
		validation("tuned", -5, "0.1"),
		validation("tuned", 5, "9e999"),
		validation("default", 5, "-9e999"),
		validationRun(0, "bogus", `{"small":10}`),
		validationRun(0, "complete", `{"small":-5}`),
		validationRun(-1, "complete", `{"small":10}`),
		validationRun(1000000000, "complete", `{"small":10}`),
	} {
		s, _, c := threeTrials(t)
		if _, err := s.db.Exec(mutation); err != nil {
			t.Fatalf("%s: %v", mutation, err)
		}
		if err := readAll(s, c); !errors.Is(err, ErrTampered) {
			t.Errorf("%s: read back with %v", mutation, err)
		}
		s.Close()
	}
}

// endless is a query that never returns: a recursive one whose every row the WHERE refuses.
const endless = `WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT x FROM n WHERE x = 0`

// TestStoredSQLIsRefused: a store whose schema holds SQL of its own, which
// nccltune never makes, is refused by writers and readers as they open it,
// before any of it runs: every read of a view, or write that fires a
// trigger, ran the file's query, which never ended (status, export and
// resume spun until killed); the expression of an index, a generated
// column or a CHECK, which the integrity check on opening evaluates for
// every row (one building a 300 MB string held status for minutes on a
// store of 300 result rows), or the schema of another version under this
// one's number (or under none, another program's).
func TestStoredSQLIsRefused(t *testing.T) {
	for _, schema := range []string{
		`ALTER TABLE campaigns RENAME TO c0; CREATE VIEW campaigns AS SELECT * FROM c0 WHERE id NOT IN (` + endless + `)`,
		`ALTER TABLE trials RENAME TO t0; CREATE VIEW trials AS SELECT * FROM t0 WHERE id NOT IN (` + endless + `)`,
		`CREATE TRIGGER spin AFTER INSERT ON trials BEGIN SELECT count(*) FROM (` + endless + `); END`,
		`CREATE TRIGGER spin BEFORE UPDATE ON campaigns BEGIN SELECT count(*) FROM (` + endless + `); END`,
		`CREATE INDEX slow ON results(length(printf('%.*c', size, 'x')))`,
		`CREATE INDEX slow ON trials(number) WHERE length(printf('%.*c', number, 'x')) >= 0`,
		`ALTER TABLE results ADD COLUMN slow INTEGER AS (length(printf('%.*c', size, 'x')))`,
		`ALTER TABLE trials ADD COLUMN slow INTEGER CHECK (length(printf('%.*c', 8, 'x')) > 0)`,
		`CREATE TABLE notes (text TEXT)`,
		`ALTER TABLE trials DROP COLUMN nodes`,
		`PRAGMA user_version = 0`,
	} {
		s, path, _ := threeTrials(t)
		if _, err := s.db.Exec(`PRAGMA foreign_keys = OFF; ` + schema); err != nil {
			t.Fatalf("%s: %v", schema, err)
		}
		s.Close()
		for _, open := range []func(string) (*Store, error){Open, OpenReader} {
			done := make(chan error, 1)
			go func() { done <- useStore(open, path) }()
			select {
			case err := <-done:
				if !errors.Is(err, ErrTampered) && !strings.Contains(err.Error(), "not an nccltune store") || !strings.Contains(err.Error(), path) {
					t.Errorf("%s: %v", schema, err)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s: still reading or writing after 10 s", schema)
			}
		}
	}
}

// useStore opens the store at path as open does, reads campaign "c", and
// a writer adds a trial to it: the first error, or one saying it all went.
func useStore(open func(string) (*Store, error), path string) error {
	s, err := open(path)
	if err != nil {
		return err
	}
	defer s.Close()
	c, err := s.Campaign("c")
	if err == nil {
		err = readAll(s, c)
	}
	if err == nil && !s.readOnly {
		if err = s.LockWriter(); err == nil {
			err = s.StartTrial(&Trial{CampaignID: c.ID, Number: 3})
		}
	}
	if err == nil {
		return errors.New("opened, read and written")
	}
	return err
}

// validation inserts a verdict on trial 1 of threeTrials' campaign.
func validation(verdict string, rounds int, gain string) string {
	return fmt.Sprintf(`INSERT INTO validations (campaign_id, batch, range_name, candidate, rounds, verdict, gain, reason, created_at)
		VALUES (1, 1, 'small', 1, %d, '%s', %s, '', '')`, rounds, verdict, gain)
}

// validationRun inserts a run of batch 1 of threeTrials' campaign.
func validationRun(round int, state, scores string) string {
	return fmt.Sprintf(`INSERT INTO validation_runs (campaign_id, batch, round, arm, env, state, scores, unconfirmed)
		VALUES (1, 1, %d, 'trial 1', '[]', '%s', '%s', 'null')`, round, state, scores)
}

// TestDamagedRowsNameTheStore: a row that does not read back (a column of
// another type, JSON that does not decode, a schema not nccltune's) is an
// error that names the store's file.
func TestDamagedRowsNameTheStore(t *testing.T) {
	for _, mutation := range []string{
		`UPDATE trials SET number = 'abc' WHERE number = 1`,
		`UPDATE trials SET exit_code = 'abc' WHERE number = 1`,
		`UPDATE trials SET params = '{not json' WHERE number = 1`,
		`UPDATE trials SET scores = '{"small":NaN}' WHERE number = 1`,
		`UPDATE results SET oop_busbw = 'abc'`,
		`UPDATE campaigns SET seed = 'abc'`,
		`INSERT INTO validations VALUES (1, 1, 'small', 'x', 5, 1, 1, 0, 0, 0, 'tuned', '', '', '')`,
		`INSERT INTO validation_runs VALUES (1, 1, 0, 'tuned', '{', 'complete', '', '{}', '[]', 0)`,
		`INSERT INTO decisions VALUES (1, 'k', 'not json')`,
		`ALTER TABLE trials DROP COLUMN nodes`,
	} {
		s, path, c := threeTrials(t)
		if _, err := s.db.Exec(mutation); err != nil {
			t.Fatalf("%s: %v", mutation, err)
		}
		if err := readAll(s, c); err == nil || !strings.Contains(err.Error(), "store "+path+": ") {
			t.Errorf("%s: read back with %v", mutation, err)
		}
		s.Close()
	}
}

// TestNullParamsAreNoSettings: a trial whose params column is JSON null
// reads back with no settings, a map the sampler can extend (resume
// panicked, assignment to entry in nil map, in the Gaussian process's
// candidates).
func TestNullParamsAreNoSettings(t *testing.T) {
	s, _, c := threeTrials(t)
	defer s.Close()
	if _, err := s.db.Exec(`UPDATE trials SET params = 'null' WHERE number = 1`); err != nil {
		t.Fatal(err)
	}
	ts, err := s.Trials(c.ID)
	if err != nil || ts[1].Params == nil {
		t.Fatalf("trial 1 read back as %v, %v", ts[1].Params, err)
	}
}

// TestOrphanRowsAreRefusedToWriters: result rows left by a trial deleted
// with foreign keys off are refused when a writer opens the store (resume
// failed at the same trial every time, its new trial taking the deleted
// one's id and colliding with its rows); readers, which never meet them,
// still read.
func TestOrphanRowsAreRefusedToWriters(t *testing.T) {
	for _, deleted := range []string{"trials", "campaigns"} {
		s, path, _ := threeTrials(t)
		if _, err := s.db.Exec(`PRAGMA foreign_keys = OFF; DELETE FROM ` + deleted); err != nil {
			t.Fatal(err)
		}
		s.Close()
		if _, err := Open(path); !errors.Is(err, ErrTampered) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s deleted: the writer opened with %v", deleted, err)
		}
		r, err := OpenReader(path)
		if err != nil {
			t.Fatalf("%s deleted: the reader: %v", deleted, err)
		}
		r.Close()
	}
}

// TestConcurrentOpensMigrateOnce: nccltune processes opening one new store
// at once (two runs started together) make its schema once; each open
// succeeds, and the writer lock then says which of them may run.
func TestConcurrentOpensMigrateOnce(t *testing.T) {
	for range 5 {
		path := filepath.Join(t.TempDir(), "new.db")
		errs := make(chan error, 4)
		for range cap(errs) {
			go func() {
				s, err := Open(path)
				if err == nil {
					s.Close()
				}
				errs <- err
			}()
		}
		for range cap(errs) {
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}
	}
}

// threeTrials is a writer's store of a campaign of three complete trials.
func threeTrials(t *testing.T) (*Store, string, Campaign) {
	t.Helper()
	s, path := openWriter(t)
	c, err := s.CreateCampaign(Campaign{Name: "c", SpaceHash: "h", Space: []byte{}, Budget: 3, Sampler: "tpe"})
	if err != nil {
		t.Fatal(err)
	}
	for n := range 3 {
		tr := &Trial{CampaignID: c.ID, Number: n, Params: map[string]string{}}
		if err := s.StartTrial(tr); err != nil {
			t.Fatal(err)
		}
		tr.State, tr.Scores = Complete, map[string]float64{"small": 10}
		tr.Rows = []nccltests.Row{{Collective: "all_reduce", Size: 8, Count: 2, Type: "float", Redop: "sum",
			OutOfPlace: nccltests.Measure{TimeUs: 5, AlgBW: 1, BusBW: 1}, InPlace: nccltests.Measure{TimeUs: 5, AlgBW: 1, BusBW: 1}}}
		if err := s.FinishTrial(context.Background(), tr); err != nil {
			t.Fatal(err)
		}
	}
	if err := readAll(s, c); err != nil {
		t.Fatalf("untampered: %v", err)
	}
	return s, path, c
}

// readAll reads everything the store holds of campaign c, as status and
// export do; the first error.
func readAll(s *Store, c Campaign) error {
	if _, err := s.Campaigns(); err != nil {
		return err
	}
	if _, err := s.Trials(c.ID); err != nil {
		return err
	}
	if _, err := s.Validations(c.ID); err != nil {
		return err
	}
	if _, err := s.ValidationRuns(c.ID, 1); err != nil {
		return err
	}
	_, err := s.Decisions(c.ID)
	return err
}

// TestAnotherUsersReaderLeavesNoLog: a reader of a store another user owns
// (a colleague's status) makes no log files of its own where none exist,
// which the owner's next run could not write ("attempt to write a readonly
// database"); while the owner's campaign has the store open, it reads
// through the owner's log. Needs root, to give the store to another user.
func TestAnotherUsersReaderLeavesNoLog(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give the store to another user")
	}
	const other = 65534 // nobody
	path := closedStore(t)
	read := func() {
		t.Helper()
		r, err := OpenReader(path)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if cs, err := r.Campaigns(); err != nil || len(cs) != 1 {
			t.Errorf("campaigns %v, %v", cs, err)
		}
	}
	if err := os.Chown(path, other, other); err != nil {
		t.Fatal(err)
	}
	read()
	for _, log := range []string{"-wal", "-shm"} {
		if _, err := os.Stat(path + log); err == nil {
			t.Errorf("another user's reader left %s%s", filepath.Base(path), log)
		}
	}
	// The owner's campaign open: its log holds what the file does not yet.
	w, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.LockWriter(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.CreateCampaign(Campaign{Name: "d", SpaceHash: "h", Space: []byte{}, Budget: 3, Sampler: "tpe"}); err != nil {
		t.Fatal(err)
	}
	r, err := OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if cs, err := r.Campaigns(); err != nil || len(cs) != 2 {
		t.Errorf("while the owner writes, a reader sees %d campaigns (%v), want 2", len(cs), err)
	}
}

// TestLockRefusedTwice: a LockWriter refused because another process writes
// is refused again when called again, and the store takes no write. Before,
// the second call reported the lock held (its file was kept open for
// SQLite's sake) and the writes then failed as "deleted or replaced".
func TestLockRefusedTwice(t *testing.T) {
	_, path := openWriter(t)
	other, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	for i := range 2 {
		if err := other.LockWriter(); !errors.Is(err, ErrLocked) {
			t.Fatalf("call %d: %v, want ErrLocked", i+1, err)
		}
	}
	if f := other.LockFile(); f != nil {
		t.Errorf("LockFile gave %s without the lock", f.Name())
	}
	if _, err := other.MarkInterrupted(1); err == nil || errors.Is(err, ErrReplaced) {
		t.Errorf("a write without the lock: %v, want the lock asked for", err)
	}
}

// TestAnotherProgramsLogIsLeftAlone: another program's database in WAL
// mode, its last transactions still in its -wal (the program runs, or was
// killed), is refused by a writer and a reader and left byte for byte as
// it was, its -wal and -shm included, made or not: the writer read its
// schema through a connection that could write, and closing it copied the
// program's log into its file and deleted the log (SQLite's checkpoint on
// the last connection's close), and a reader's wrote its read mark into
// the -shm, or made one. So is a newer nccltune's store, which that
// nccltune goes on with, and a database whose program was killed in a
// transaction, its journal hot.
func TestAnotherProgramsLogIsLeftAlone(t *testing.T) {
	if path := os.Getenv("NCCLTUNE_TEST_OTHER_PROGRAM"); path != "" {
		anotherProgram(t, path, os.Getenv("NCCLTUNE_TEST_OTHER_SQL"))
		return
	}
	for _, program := range []struct{ sql, refusal string }{
		{"PRAGMA journal_mode = WAL; CREATE TABLE notes (text TEXT); INSERT INTO notes VALUES ('mine'); PRAGMA user_version = 3", "not an nccltune store"},
		// As nccltune makes a store: its tables, then WAL mode.
		{strings.Join(migrations, ";\n") + "; CREATE TABLE later (x); PRAGMA user_version = 99; PRAGMA journal_mode = WAL; INSERT INTO later VALUES (1)",
			"newer than this nccltune"},
		// In rollback mode, its transaction spilled into the file: a hot
		// journal, which a writer's connection rolled back.
		{"CREATE TABLE notes (text TEXT); PRAGMA cache_size = 1; BEGIN; INSERT INTO notes SELECT hex(randomblob(1000)) FROM (WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 200) SELECT x FROM n)",
			"not an nccltune store"},
	} {
		leftAlone(t, program.sql, program.refusal)
	}
}

// leftAlone runs anotherProgram with stmts in a child process and checks
// that a writer and a reader refuse its database, with refusal, and leave
// it as it was, while it runs and once it was killed, with and without its
// -shm.
func leftAlone(t *testing.T, stmts, refusal string) {
	path := filepath.Join(t.TempDir(), "app.sqlite")
	program := exec.Command(os.Args[0], "-test.run=^TestAnotherProgramsLogIsLeftAlone$")
	program.Env = append(os.Environ(), "NCCLTUNE_TEST_OTHER_PROGRAM="+path, "NCCLTUNE_TEST_OTHER_SQL="+stmts)
	quit, err := program.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	ready, err := program.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := program.Start(); err != nil {
		t.Fatal(err)
	}
	defer program.Wait()
	defer quit.Close()
	if line, err := bufio.NewReader(ready).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("the other program: %q, %v", line, err)
	}
	files := func() (out [4]string) {
		for i, suffix := range []string{"", "-wal", "-shm", "-journal"} {
			b, _ := os.ReadFile(path + suffix)
			out[i] = string(b)
		}
		return out
	}
	refused := func(state string) {
		t.Helper()
		for _, open := range []func(string) (*Store, error){Open, OpenReader} {
			before := files()
			_, shmErr := os.Stat(path + "-shm")
			s, err := open(path)
			if err == nil {
				s.Close()
			}
			if err == nil || !strings.Contains(err.Error(), refusal) {
				t.Errorf("%s: opened with %v, want %q", state, err, refusal)
			}
			if after := files(); after != before {
				t.Errorf("%s (%s): refusing it changed the file, -wal, -shm or -journal (sizes %d, %d, %d, %d; were %d, %d, %d, %d)", state, refusal,
					len(after[0]), len(after[1]), len(after[2]), len(after[3]), len(before[0]), len(before[1]), len(before[2]), len(before[3]))
			}
			if _, err := os.Stat(path + "-shm"); errors.Is(err, os.ErrNotExist) != errors.Is(shmErr, os.ErrNotExist) {
				t.Errorf("%s (%s): its -shm made or removed (%v)", state, refusal, err)
			}
		}
	}
	refused("the program running")
	quit.Close()
	if err := program.Wait(); err != nil {
		t.Fatal(err)
	}
	refused("the program killed")
	os.Remove(path + "-shm")
	refused("the program killed, its -shm deleted")
}

// anotherProgram makes a database at path with stmts, says "ready", and
// exits once its input ends, as if killed: its log, or its journal, stays.
func anotherProgram(t *testing.T, path, stmts string) {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=wal_autocheckpoint(0)")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(stmts); err != nil {
		t.Fatal(err)
	}
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// TestCompanionsNotRegularFilesAreRefused: a -wal, -shm or -journal beside
// the store that is not a file (a symbolic link, a named pipe, a folder),
// which SQLite never makes, is refused by name by a writer and a reader:
// a pipe as the -wal was read and written as the store's log (a log past
// the pipe's buffer would block the campaign for good), and the others
// failed as a folder missing or a file this user may not read.
func TestCompanionsNotRegularFilesAreRefused(t *testing.T) {
	for _, suffix := range []string{"-wal", "-shm", "-journal"} {
		for kind, lay := range map[string]func(string) error{
			"symbolic link": func(p string) error { return os.Symlink(filepath.Join(t.TempDir(), "elsewhere"), p) },
			"named pipe":    func(p string) error { return syscall.Mkfifo(p, 0o644) },
			"folder":        func(p string) error { return os.Mkdir(p, 0o755) },
		} {
			for _, open := range []func(string) (*Store, error){Open, OpenReader} {
				path := closedStore(t)
				if err := lay(path + suffix); err != nil {
					t.Fatal(err)
				}
				done := make(chan error, 1)
				go func() {
					s, err := open(path)
					if err == nil {
						s.Close()
					}
					done <- err
				}()
				select {
				case err := <-done:
					if err == nil || !strings.Contains(err.Error(), suffix+" is not a regular file") {
						t.Errorf("its %s a %s: opened with %v", suffix, kind, err)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("its %s a %s: still opening after 10 s", suffix, kind)
				}
			}
		}
	}
}

// TestCompanionsWithAnotherNameAreRefused: a -wal, -shm or -journal beside
// the store that is a hard link, another name of some file, which SQLite
// never makes, is refused by name by a writer and a reader, and the file
// is left as it was: SQLite writes its log and index into those files
// (truncating them first) and removes the name.
func TestCompanionsWithAnotherNameAreRefused(t *testing.T) {
	for _, suffix := range []string{"-wal", "-shm", "-journal"} {
		for _, open := range []func(string) (*Store, error){Open, OpenReader} {
			path := closedStore(t)
			other := filepath.Join(t.TempDir(), "notes.txt")
			want := strings.Repeat("a line of someone's notes\n", 4096)
			if err := os.WriteFile(other, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Link(other, path+suffix); err != nil {
				t.Skip("no hard links here:", err)
			}
			s, err := open(path)
			if err == nil {
				if _, err := s.Campaigns(); err != nil {
					t.Error(err)
				}
				s.Close()
			}
			if err == nil || !strings.Contains(err.Error(), suffix+" has another name") {
				t.Errorf("its %s a hard link: opened with %v", suffix, err)
			}
			// The file may be the store's own log or hot journal, kept by a
			// snapshot of hard links (cp -al) after a crash: removing this
			// name would lose the store's last transactions.
			if err != nil && (!strings.Contains(err.Error(), "cp -p '"+path+suffix+"'") || strings.Contains(err.Error(), "remove this name")) {
				t.Errorf("its %s a hard link: the refusal does not tell how to keep its content: %v", suffix, err)
			}
			if got, err := os.ReadFile(other); err != nil || string(got) != want {
				t.Errorf("its %s a hard link: the other name's file holds %d bytes (%v), not its %d", suffix, len(got), err, len(want))
			}
		}
	}
}

// TestOversizedValuesAreRefused: a value longer than any nccltune writes,
// edited in, is refused as read, by readers and writers alike, before
// anything escapes or parses it: a campaign's stop reason of 100 MB held
// status for 31 s and 2.8 GB, and a trial's output of 200 MB show --output
// for 43 s and 5.2 GB (one of SQLite's gigabyte would exhaust memory).
func TestOversizedValuesAreRefused(t *testing.T) {
	defer func(v int) { maxValue = v }(maxValue)
	maxValue = 1 << 20
	for _, mutation := range []string{
		`UPDATE campaigns SET stopped = hex(zeroblob(?))`,
		`UPDATE trials SET output = zeroblob(? * 2) WHERE number = 1`,
	} {
		s, path, c := threeTrials(t)
		s.Close()
		raw, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := raw.Exec(mutation, maxValue/2+1); err != nil {
			t.Fatalf("%s: %v", mutation, err)
		}
		raw.Close()
		for _, open := range []func(string) (*Store, error){Open, OpenReader} {
			s, err := open(path)
			if err != nil {
				t.Fatalf("%s: open: %v", mutation, err)
			}
			err = readAll(s, c)
			if err == nil {
				var ts []Trial
				if ts, err = s.Trials(c.ID); err == nil {
					_, err = s.Output(ts[1].ID)
				}
			}
			if !errors.Is(err, ErrTampered) {
				t.Errorf("%s: read back with %.200v", mutation, err)
			}
			s.Close()
		}
	}
}

// TestLockHeldPastADeadWriterSaysSo: a lock still held once the wait for
// a dead writer's trials is over (an flock of another program's, a trial
// that outlived its grace) is not that writer's: the refusal named the
// dead process as the nccltune run using the store.
func TestLockHeldPastADeadWriterSaysSo(t *testing.T) {
	defer func(d time.Duration) { HeldWait = d }(HeldWait)
	HeldWait = 100 * time.Millisecond
	s, path := openWriter(t)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.Exec(`UPDATE writer SET pid = ?`, dead.Process.Pid); err != nil {
		t.Fatal(err)
	}
	defer s.Close() // holds the lock, as a program's flock would
	other, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	err = other.LockWriter()
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), fmt.Sprintf("not by pid %d, which recorded itself as its writer and is gone", dead.Process.Pid)) {
		t.Errorf("a lock held past a dead writer: %v", err)
	}
}
