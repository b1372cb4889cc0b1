package export

import (
	"os"
	"path/filepath"
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
	paths, err := pinned(t).Write("env", dir)
	if err != nil || len(paths) == 0 {
		t.Fatalf("%v %v", paths, err)
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
