package store

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestNewStoreHonoursTheUmask: a new store, and its -wal and -shm, get
// 0666 less the umask, as any file a program makes: SQLite made the store
// 0644 less the umask, so under umask 002 (files shared with the group)
// the group could not write it. So does one named through a symbolic link
// to where it is to be made (a link to a group's shared folder, made before
// the first run), which SQLite made 0644 less the umask all the same.
func TestNewStoreHonoursTheUmask(t *testing.T) {
	for umask, want := range map[int]os.FileMode{0o002: 0o664, 0o077: 0o600, 0o022: 0o644} {
		for _, linked := range []bool{false, true} {
			dir := t.TempDir()
			path := filepath.Join(dir, "new.db")
			named := path
			if linked {
				named = filepath.Join(dir, "link.db")
				if err := os.Symlink(path, named); err != nil {
					t.Fatal(err)
				}
			}
			old := syscall.Umask(umask)
			s, err := Open(named)
			syscall.Umask(old)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.LockWriter(); err != nil {
				t.Fatal(err)
			}
			if _, err := s.CreateCampaign(Campaign{Name: "c", SpaceHash: "h", Space: []byte{}, Budget: 3, Sampler: "tpe"}); err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{path, path + "-wal", path + "-shm"} {
				fi, err := os.Stat(name)
				if err != nil {
					t.Errorf("umask %03o, through a link %v: %v", umask, linked, err)
				} else if fi.Mode().Perm() != want {
					t.Errorf("umask %03o, through a link %v: %s: mode %v, want %v", umask, linked, filepath.Base(name), fi.Mode().Perm(), want)
				}
			}
			s.Close()
		}
	}
}
