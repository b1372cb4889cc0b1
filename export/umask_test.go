//go:build unix

package export

import (
	"os"
	"syscall"
	"testing"
)

// TestWriteHonoursTheUmask: a user whose umask keeps files to themselves
// (077) gets exports they alone can read, as from any program that creates
// files; a chmod after the write made them 0644 and the wrapper 0755
// whatever the umask.
func TestWriteHonoursTheUmask(t *testing.T) {
	old := syscall.Umask(0o077)
	t.Cleanup(func() { syscall.Umask(old) })
	ex := pinned(t)
	for format, want := range map[string]os.FileMode{"env": 0o600, "torchrun": 0o700} {
		paths, err := ex.Write(format, t.TempDir())
		if err != nil || len(paths) == 0 {
			t.Fatalf("%s: %v %v", format, paths, err)
		}
		for _, p := range paths {
			if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
				t.Errorf("%s: mode %v (%v), want %v", p, fi.Mode().Perm(), err, want)
			}
		}
	}
}
