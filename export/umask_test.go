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

// TestWrapperStaysExecutable: a wrapper written over a file of its name
// that is not executable (copied without its modes, made by hand) kept that
// file's modes, as every file replaced does, and the export said it wrote
// a wrapper that `./nccl-large.torchrun.sh ...` then could not run. It is
// executable by whoever may read it; its other modes stay.
func TestWrapperStaysExecutable(t *testing.T) {
	ex := pinned(t)
	dir := t.TempDir()
	for _, mode := range []os.FileMode{0o644, 0o640, 0o600} {
		for _, name := range []string{"nccl-small.torchrun.sh", "nccl-mid.torchrun.sh", "nccl-large.torchrun.sh"} {
			if err := os.WriteFile(dir+"/"+name, []byte("old\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			os.Chmod(dir+"/"+name, mode)
		}
		paths, err := ex.Write("torchrun", dir)
		if err != nil || len(paths) != 3 {
			t.Fatalf("%v %v", paths, err)
		}
		want := mode | (mode&0o444)>>2
		for _, p := range paths {
			if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
				t.Errorf("%s over a file of mode %v: mode %v (%v), want %v", p, mode, fi.Mode().Perm(), err, want)
			}
		}
	}
}
