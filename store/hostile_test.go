package store

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestOneWriterWhateverPathNamesIt: the writer lock belongs to the file, so
// a second writer is refused through every other name of it.
func TestOneWriterWhateverPathNamesIt(t *testing.T) {
	s, path := openWriter(t)
	dir := filepath.Dir(path)
	symlink := filepath.Join(t.TempDir(), "elsewhere.db")
	hardlink := filepath.Join(dir, "hard.db")
	if err := os.Symlink(path, symlink); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(path, hardlink); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{symlink, hardlink, dir + "/./trials.db", dir + "//trials.db"} {
		other, err := Open(name)
		if err != nil && name == hardlink {
			continue // SQLite itself refuses a second name for a file in WAL mode
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := other.LockWriter(); !errors.Is(err, ErrLocked) {
			t.Errorf("second writer through %s: %v", name, err)
		}
		if err := other.StartTrial(&Trial{}); err == nil {
			t.Errorf("a store without the lock wrote through %s", name)
		}
		other.Close()
	}
	// Closing the refused stores took none of the writer's locks with it.
	if _, err := s.CreateCampaign(Campaign{Name: "still", SpaceHash: "h", Space: []byte{}, Budget: 3, Sampler: "tpe"}); err != nil {
		t.Errorf("the writer lost its store: %v", err)
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
