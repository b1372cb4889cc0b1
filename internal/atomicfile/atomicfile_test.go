package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
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
			// The file synced is not yet in place.
			matches, _ := filepath.Glob(filepath.Join(dir, "*.env"))
			for _, m := range matches {
				if in, err := os.Stat(m); err == nil && os.SameFile(fi, in) {
					t.Errorf("synced %s after its rename", m)
				}
			}
			if len(matches) != len(synced)/2 {
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

// TestWriteLeavesNothingToAKill: while the data is written and synced, the
// time a kill -9 most likely comes in, no name in the folder holds it: each
// write killed so left a hidden .nccltune-* file behind, which piled up.
func TestWriteLeavesNothingToAKill(t *testing.T) {
	dir := t.TempDir()
	old := fsync
	t.Cleanup(func() { fsync = old })
	fsync = func(f *os.File) error {
		if fi, err := f.Stat(); err == nil && !fi.IsDir() {
			if entries, _ := os.ReadDir(dir); slices.ContainsFunc(entries, func(e os.DirEntry) bool { return e.Name() != "a.env" }) {
				t.Errorf("while its data was synced, the folder held %v", entries)
			}
		}
		return old(f)
	}
	path := filepath.Join(dir, "a.env")
	for _, text := range []string{"X=1\n", "X=2\n"} { // new, then replaced
		if err := WriteAll([]File{{path, []byte(text), 0o644}}); err != nil {
			t.Fatal(err)
		}
		if data, err := os.ReadFile(path); string(data) != text {
			t.Errorf("%s = %q (%v), want %q", path, data, err, text)
		}
	}
}

// TestWriteSweepsWhatAKillLeft: a writer killed between naming its
// temporary files and renaming them (a second Ctrl-C, kill -9 at an
// export's end) left a hidden .nccltune-* file that no later write
// removed; the next write in its folder removes it, but not one a live
// writer holds (locked), nor one just made.
func TestWriteSweepsWhatAKillLeft(t *testing.T) {
	dir := t.TempDir()
	long := time.Now().Add(-time.Hour)
	made := func(name string, at time.Time) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte("X=0\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, at, at); err != nil {
			t.Fatal(err)
		}
		return path
	}
	left, fresh, live := made(".nccltune-left", long), made(".nccltune-fresh", time.Now()), made(".nccltune-live", long)
	f, err := os.Open(live)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	if err := WriteAll([]File{{filepath.Join(dir, "a.env"), []byte("X=1\n"), 0o644}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(left); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a killed writer's %s is left (%v)", left, err)
	}
	for _, kept := range []string{fresh, live} {
		if _, err := os.Stat(kept); err != nil {
			t.Errorf("%s was removed: %v", kept, err)
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

// TestWriteAllFailsWhole: where a file cannot be given its name in its
// folder (a full disk, a folder gone or made read-only meanwhile), no file
// is replaced: the name was given in the loop of renames, after the files
// before it had replaced their old ones.
func TestWriteAllFailsWhole(t *testing.T) {
	dir := t.TempDir()
	first, gone := filepath.Join(dir, "a.env"), filepath.Join(dir, "gone")
	if err := os.WriteFile(first, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(gone, 0o755); err != nil {
		t.Fatal(err)
	}
	old := fsync
	t.Cleanup(func() { fsync = old })
	fsync = func(f *os.File) error {
		// Once the second file is written, its folder goes: a file
		// without a name leaves it empty.
		if filepath.Dir(f.Name()) != gone {
			return old(f)
		}
		if err := os.Remove(gone); err != nil {
			t.Skipf("the file system names files as they are made: %v", err)
		}
		return old(f)
	}
	err := WriteAll([]File{{first, []byte("new\n"), 0o644}, {filepath.Join(gone, "b.env"), []byte("new\n"), 0o644}})
	if err == nil {
		t.Fatal("written into a folder that is gone")
	}
	if data, err := os.ReadFile(first); string(data) != "old\n" {
		t.Errorf("%s = %q (%v), want it as it was", first, data, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("left %v in the folder", entries)
	}
}

// TestWriteThroughALink: a symbolic link is written through, as os.Create
// writes through it: the rename replaced the link with a file, and the
// file it named kept the old text.
func TestWriteThroughALink(t *testing.T) {
	dir := t.TempDir()
	target, link := filepath.Join(dir, "space.toml"), filepath.Join(dir, "link.toml")
	if err := os.WriteFile(target, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("space.toml", link); err != nil {
		t.Fatal(err)
	}
	if err := Write(link, []byte("new\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode().Type() != os.ModeSymlink {
		t.Errorf("%s is no longer a link: %v (%v)", link, fi.Mode(), err)
	}
	if data, err := os.ReadFile(target); string(data) != "new\n" {
		t.Errorf("%s = %q (%v), want the new text", target, data, err)
	}
}

// TestWriteKeepsTheMode: a file that exists keeps its permissions, as
// os.Create keeps them: a file its owner made private (0600) became
// readable by all (0666 less the umask).
func TestWriteKeepsTheMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.toml")
	if err := os.WriteFile(path, []byte("old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("new\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v (%v), want 0640 as it was", fi.Mode().Perm(), err)
	}
}

// TestWriteRefusesADirectory: a folder at the path is named as such, and
// left as it was, with no temporary file beside it.
func TestWriteRefusesADirectory(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out")
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("new\n"), 0o666); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("err = %v, want one that says %s is a directory", err, path)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("left %v in the folder", entries)
	}
}

// TestWriteIntoAPipe: a path that is no regular file is written into, not
// replaced: the rename put a regular file in a named pipe's place (and, as
// root, over /dev/null), and /dev/stdout's link, which /proc resolves to
// "pipe:[N]", failed.
func TestWriteIntoAPipe(t *testing.T) {
	named := filepath.Join(t.TempDir(), "pipe")
	if err := syscall.Mkfifo(named, 0o644); err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for path, open := range map[string]func() (*os.File, error){
		named: func() (*os.File, error) { return os.Open(named) },
		"/proc/self/fd/" + strconv.Itoa(int(w.Fd())): func() (*os.File, error) { return r, nil },
	} {
		read := make(chan string)
		go func() {
			f, err := open()
			if err != nil {
				read <- err.Error()
				return
			}
			data := make([]byte, 64)
			n, _ := f.Read(data)
			read <- string(data[:n])
		}()
		if err := Write(path, []byte("new\n"), 0o666); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(path); err != nil || fi.Mode().Type() != os.ModeNamedPipe {
			t.Fatalf("%s is no longer a pipe: %v (%v)", path, fi.Mode(), err)
		}
		if got := <-read; got != "new\n" {
			t.Errorf("%s: its reader read %q, want the text", path, got)
		}
	}
	w.Close()
}

// TestWriteAllRefusesOneFileTwice: two paths of one set that name one file
// (a symbolic link to the other, under a name or a path of its own) were
// each written through, the second over the first, and both reported
// written: an export's nccl-small.env then held the large range's settings.
// The set is refused, and nothing is replaced.
func TestWriteAllRefusesOneFileTwice(t *testing.T) {
	dir := t.TempDir()
	large, small := filepath.Join(dir, "nccl-large.env"), filepath.Join(dir, "nccl-small.env")
	if err := os.WriteFile(large, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, to := range []string{"nccl-large.env", large, "./../" + filepath.Base(dir) + "/nccl-large.env"} {
		os.Remove(small)
		if err := os.Symlink(to, small); err != nil {
			t.Fatal(err)
		}
		err := WriteAll([]File{{small, []byte("small\n"), 0o644}, {large, []byte("large\n"), 0o644}})
		if err == nil || !strings.Contains(err.Error(), "one file") {
			t.Errorf("link to %s: err = %v, want one that says the two are one file", to, err)
		}
		if data, err := os.ReadFile(large); string(data) != "old\n" {
			t.Errorf("link to %s: %s = %q (%v), want it as it was", to, large, data, err)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 2 {
			t.Errorf("link to %s: left %v in the folder", to, entries)
		}
	}
}

// TestWriteLeaksNoDescriptor: the descriptor that holds a temporary file's
// lock until its rename is closed on exec, as every one Go opens is: a
// program started meanwhile (another goroutine's) inherited it, kept the
// file open, and held its lock for as long as it ran.
func TestWriteLeaksNoDescriptor(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.env")
	old := fsync
	t.Cleanup(func() { fsync = old })
	checked := false
	fsync = func(f *os.File) error {
		if fi, err := f.Stat(); err != nil || !fi.IsDir() {
			return old(f)
		}
		// Renamed, not yet returned: the lock's descriptor is open.
		entries, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skip(err)
		}
		written, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			fd, err := strconv.Atoi(e.Name())
			if fi, _ := os.Stat(filepath.Join("/proc/self/fd", e.Name())); err != nil || fi == nil || !os.SameFile(fi, written) {
				continue
			}
			checked = true
			if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil || flags&unix.FD_CLOEXEC == 0 {
				t.Errorf("descriptor %d of %s is not closed on exec (flags %#x, %v)", fd, path, flags, err)
			}
		}
		return old(f)
	}
	if err := Write(path, []byte("X=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if !checked {
		t.Fatal("no descriptor of the file was open as its folder was synced")
	}
}
