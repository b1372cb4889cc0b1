package store

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nccltune/nccltune/runner/nccltests"
)

// TestReaderLeavesNoLog: a reader of a store no campaign has open leaves
// the folder as it found it. A read-only connection cannot remove the
// -wal and -shm it makes, so every status, show and report left them.
func TestReaderLeavesNoLog(t *testing.T) {
	path := closedStore(t)
	before := listDir(t, filepath.Dir(path))
	r, err := OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	if cs, err := r.Campaigns(); err != nil || len(cs) != 1 {
		t.Errorf("campaigns %v, %v", cs, err)
	}
	r.Close()
	if after := listDir(t, filepath.Dir(path)); after != before {
		t.Errorf("the folder held %s before the reader, %s after", before, after)
	}
}

func listDir(t *testing.T, dir string) string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range names {
		names[i] = filepath.Base(names[i])
	}
	return fmt.Sprint(names)
}

// TestCampaignStartedBesideAReader: a campaign that opens, writes and
// closes the store while a reader reads it immutable (no log when the
// reader came) does not change the file under the reader (its checkpoints
// wait for the reader to leave: the one on closing, and the automatic one
// after 1000 pages of log, which the campaign's 8M space passes and which
// wrote the file under the reader), and the next reader sees what it wrote.
// The campaign is another process, as a real one is: POSIX locks are a
// process's.
func TestCampaignStartedBesideAReader(t *testing.T) {
	if path := os.Getenv("NCCLTUNE_TEST_STORE_WRITER"); path != "" {
		w, err := Open(path)
		if err == nil {
			err = w.LockWriter()
		}
		if err == nil {
			_, err = w.CreateCampaign(Campaign{Name: "d", SpaceHash: "h", Space: make([]byte, 8<<20), Budget: 3, Sampler: "tpe"})
		}
		if err == nil && os.Getenv("NCCLTUNE_TEST_STORE_KILL") != "" {
			syscall.Kill(os.Getpid(), syscall.SIGKILL) // as kill -9 would, before any checkpoint
		}
		if err == nil {
			err = w.Close()
		}
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	path, before, r, out, err := campaignBesideAReader(t)
	if err != nil {
		t.Fatalf("the campaign failed: %v\n%s", err, out)
	}
	if now, _ := os.ReadFile(path); !bytes.Equal(before, now) {
		t.Error("the campaign wrote the file under an immutable reader")
	}
	if _, err := r.Campaigns(); err != nil {
		t.Errorf("the reader no longer reads: %v", err)
	}
	r.Close()
	twoCampaigns(t, OpenReader, path)
}

// campaignBesideAReader opens an immutable reader on closedStore's store
// and runs a campaign beside it in a child process (this file's writer,
// env added to its environment). It returns the store's path, its bytes
// before the campaign, the reader (closed when the test ends), and the
// child's output and error.
func campaignBesideAReader(t *testing.T, env ...string) (string, []byte, *Store, []byte, error) {
	t.Helper()
	path := closedStore(t)
	before, _ := os.ReadFile(path)
	r, err := OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	if cs, err := r.Campaigns(); err != nil || len(cs) != 1 {
		t.Fatalf("campaigns %v, %v", cs, err)
	}
	writer := exec.Command(os.Args[0], "-test.run=^TestCampaignStartedBesideAReader$")
	writer.Env = append(append(os.Environ(), "NCCLTUNE_TEST_STORE_WRITER="+path), env...)
	out, err := writer.CombinedOutput()
	return path, before, r, out, err
}

// twoCampaigns checks that the store at path, opened by open, holds the
// two campaigns of closedStore and the writer's.
func twoCampaigns(t *testing.T, open func(string) (*Store, error), path string) {
	t.Helper()
	s, err := open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if cs, err := s.Campaigns(); err != nil || len(cs) != 2 {
		t.Errorf("%d campaigns (%v), want 2", len(cs), err)
	}
}

// TestCampaignCheckpointsWithoutReaders: with no immutable reader, the
// campaign's automatic checkpoints are on, and a log past 1000 pages is
// copied into the file before the campaign closes, so that it does not
// grow for the whole campaign.
func TestCampaignCheckpointsWithoutReaders(t *testing.T) {
	s, path := openWriter(t)
	defer s.Close()
	if _, err := s.CreateCampaign(Campaign{Name: "d", SpaceHash: "h", Space: make([]byte, 8<<20), Budget: 3, Sampler: "tpe"}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() < 8<<20 {
		t.Errorf("the file holds %v bytes (%v) after 8M were written: no checkpoint", fi.Size(), err)
	}
}

// TestCampaignClosedBesideALogReader: a campaign that ends while a reader
// reads through its log (`watch nccltune status`) leaves everything in the
// file: SQLite's checkpoint on closing, which needs the store to itself,
// was skipped, and the last trials stayed in the -wal alone, which a copy
// of the file (scp nccltune.db) lacked.
func TestCampaignClosedBesideALogReader(t *testing.T) {
	w, path := openWriter(t)
	if _, err := w.CreateCampaign(Campaign{Name: "c", SpaceHash: "h", Space: []byte{}, Budget: 3, Sampler: "tpe"}); err != nil {
		t.Fatal(err)
	}
	r, err := OpenReader(path) // through the log, which the campaign made
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if cs, err := r.Campaigns(); err != nil || len(cs) != 1 {
		t.Fatalf("campaigns %v, %v", cs, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > 0 {
		t.Errorf("the campaign closed with %d bytes of its log not in the file", fi.Size())
	}
}

// TestCampaignKilledBesideAReader: a campaign killed while an immutable
// reader kept its checkpoints off loses nothing: its trials are in its
// log, which the next reader reads through and the next campaign, once
// it closes with no reader left, copies into the file.
func TestCampaignKilledBesideAReader(t *testing.T) {
	path, before, r, out, err := campaignBesideAReader(t, "NCCLTUNE_TEST_STORE_KILL=1")
	if err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("the campaign was not killed: %v\n%s", err, out)
	}
	if now, _ := os.ReadFile(path); !bytes.Equal(before, now) {
		t.Fatal("the campaign wrote the file under an immutable reader")
	}
	r.Close()
	twoCampaigns(t, OpenReader, path)
	twoCampaigns(t, Open, path)
	if _, err := os.Stat(path + "-wal"); !os.IsNotExist(err) {
		t.Errorf("the log outlived the next campaign: %v", err)
	}
	twoCampaigns(t, OpenReader, path)
}

// TestTrialsBesideAWriterAreOneSnapshot: a reader beside a running campaign
// (status, export) reads the trials and their result rows as of one moment.
// Read in two statements, a trial the campaign started and finished between
// them had its rows given to the first trial read, NCCL's defaults.
func TestTrialsBesideAWriterAreOneSnapshot(t *testing.T) {
	w, path := openWriter(t)
	c, err := w.CreateCampaign(Campaign{Name: "c", SpaceHash: "h", Space: []byte{}, Budget: 3, Sampler: "tpe"})
	if err != nil {
		t.Fatal(err)
	}
	trial := func(n int) error {
		tr := &Trial{CampaignID: c.ID, Number: n, Params: map[string]string{}, Env: []string{}}
		if err := w.StartTrial(tr); err != nil {
			return err
		}
		// Each row says which trial it is of.
		tr.State, tr.Rows = Complete, []nccltests.Row{{Size: 8, Count: int64(n), Type: "float", Redop: "sum", Root: -1}}
		return w.FinishTrial(context.Background(), tr)
	}
	// Enough trials that reading them takes a while.
	const before = 3000
	for n := range before {
		if err := trial(n); err != nil {
			t.Fatal(err)
		}
	}
	r, err := OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	done := make(chan error, 1)
	stop := make(chan struct{})
	go func() {
		for n := before; ; n++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			if err := trial(n); err != nil {
				done <- err
				return
			}
		}
	}()
	defer func() {
		close(stop)
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); {
		ts, err := r.Trials(c.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range ts {
			if tr.State == Running && len(tr.Rows) == 0 {
				continue // read between its start and its end
			}
			if len(tr.Rows) != 1 || tr.Rows[0].Count != int64(tr.Number) {
				t.Fatalf("%s trial %d (of %d read) has %d result rows: %+v", tr.State, tr.Number, len(ts), len(tr.Rows), tr.Rows)
			}
		}
	}
}
