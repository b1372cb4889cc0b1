package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestWriteSyncsBeforeAndAfterTheRename: each file's data reaches the disk
// before it is renamed into place, and its folder after, so that a crash
// leaves the old file or the new one, never an empty one under the new
// name. Without the syncs the rename went first and nothing was synced.
func TestWriteSyncsBeforeAndAfterTheRename(t *testing.T) {
	dir := t.TempDir()
	var synced []string
	old := fsync
	t.Cleanup(func() { fsync = old })
	fsync = func(f *os.File) error {
		fi, err := f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		if !fi.IsDir() {
			// The file synced is the temporary one, not yet renamed.
			if _, err := os.Stat(f.Name()); err != nil || filepath.Dir(f.Name()) != dir {
				t.Errorf("synced %s after its rename (%v)", f.Name(), err)
			}
			if matches, _ := filepath.Glob(filepath.Join(dir, "*.env")); len(matches) != len(synced)/2 {
				t.Errorf("synced %s with %d files in place, want %d", f.Name(), len(matches), len(synced)/2)
			}
			synced = append(synced, "file")
			return old(f)
		}
		if f.Name() != dir {
			t.Errorf("synced folder %s, want %s", f.Name(), dir)
		}
		synced = append(synced, "folder")
		return old(f)
	}
	paths := []string{filepath.Join(dir, "a.env"), filepath.Join(dir, "b.env")}
	for _, p := range paths {
		if err := Write(p, []byte("X=1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if len(synced) != 2*len(paths) {
		t.Fatalf("%d files written, syncs %v; want each file then its folder", len(paths), synced)
	}
	for i := 0; i < len(synced); i += 2 {
		if synced[i] != "file" || synced[i+1] != "folder" {
			t.Errorf("syncs %v; want each file then its folder", synced)
			break
		}
	}
}

// TestWriteFailsWhole: a write that fails (here its sync, as a full disk
// fails it) returns the error and leaves the old file as it was, with no
// temporary file beside it.
func TestWriteFailsWhole(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "w.toml")
	if err := os.WriteFile(path, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := fsync
	t.Cleanup(func() { fsync = old })
	fsync = func(*os.File) error { return syscall.ENOSPC }
	if err := Write(path, []byte("new\n"), 0o644); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("err = %v, want ENOSPC", err)
	}
	if data, err := os.ReadFile(path); string(data) != "old\n" {
		t.Errorf("%s = %q (%v), want it as it was", path, data, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("left %v in the folder", entries)
	}
}
