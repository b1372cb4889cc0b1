// Package atomicfile writes a file whole or not at all.
package atomicfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Write writes data to path through a temporary file in its folder, so a
// reader never sees half a file, and a crash or a full disk leaves the old
// file or the new one: the data reaches the disk before the rename (else
// the rename may be kept and the data lost, an empty file after a power
// cut on ext4 or XFS), and the folder after it, so that the new name is
// kept. A new file's mode is mode less the umask, as os.Create's is; a
// file that exists keeps its permissions (made executable where mode is,
// see fill), and a symbolic link its place, as they do under os.Create. A path that is a device or a pipe
// (/dev/stdout) is written into as it is: a rename would replace it.
func Write(path string, data []byte, mode os.FileMode) error {
	return WriteAll([]File{{path, data, mode}})
}

// File is one file WriteAll writes: Write's arguments.
type File struct {
	Path string
	Data []byte
	Mode os.FileMode
}

// WriteAll writes files as Write writes each, and replaces none of them
// where one cannot be written (a full disk): each is written to its
// temporary file before any is renamed, so that an export's files are the
// new set or the old one, not one range's new beside another's old.
func WriteAll(files []File) error {
	type staged struct {
		f    *os.File // open until it has its name
		held int      // a copy of f's descriptor, holding its lock until it is renamed; -1 before
		tmp  string   // its temporary name, "" while it has none
		path string
	}
	var ready []staged
	defer func() {
		for _, s := range ready {
			s.f.Close()
			if s.tmp != "" {
				os.Remove(s.tmp) // renamed, it is gone
			}
			if s.held >= 0 {
				unix.Close(s.held)
			}
		}
	}()
	written := map[string]string{} // by the file each path replaces (identity), the path
	var swept []string
	for _, f := range files {
		path, old, err := target(f.Path)
		switch {
		case err != nil:
			return err
		case old != nil && !old.Mode().IsRegular():
			if err := writeInto(path, f.Data); err != nil {
				return err
			}
			continue
		}
		if dir := filepath.Dir(path); !slices.Contains(swept, dir) {
			sweep(dir)
			swept = append(swept, dir)
		}
		// Two paths of one file (a link to another of the set) would each
		// be renamed over it, the second's data kept under both names.
		id, err := identity(path)
		if err != nil {
			return err
		}
		if other, ok := written[id]; ok {
			return fmt.Errorf("%s and %s are one file (a symbolic link names it): refusing to write one over the other", other, f.Path)
		}
		written[id] = f.Path
		tmp, named, err := createTemp(path, f.Mode)
		if err != nil {
			return err
		}
		s := staged{f: tmp, held: -1, path: path}
		if named {
			s.tmp = tmp.Name()
		}
		ready = append(ready, s)
		if err := fill(tmp, f.Data, old, f.Mode); err != nil {
			return err
		}
	}
	// Every file has its name before the first rename, and the folders are
	// synced after the last: a step that fails (a full disk refuses a
	// folder's new entry) leaves the old set.
	for i := range ready {
		s := &ready[i]
		if s.tmp == "" {
			tmp, err := link(s.f, filepath.Dir(s.path))
			if err != nil {
				return err
			}
			s.tmp = tmp
		}
		// Closed on exec, as every descriptor Go opens: a program another
		// goroutine starts meanwhile would hold the lock as long as it ran.
		held, err := unix.FcntlInt(s.f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			return err
		}
		s.held = held
		if err := s.f.Close(); err != nil {
			return err
		}
	}
	var dirs []string
	for _, s := range ready {
		if err := os.Rename(s.tmp, s.path); err != nil {
			return err
		}
		if dir := filepath.Dir(s.path); !slices.Contains(dirs, dir) {
			dirs = append(dirs, dir)
		}
	}
	for _, dir := range dirs {
		if err := syncDir(dir); err != nil {
			return err
		}
	}
	return nil
}

// WriteFrom is Write of what w writes (a plot's PNG encoder), held in
// memory until it is whole.
func WriteFrom(path string, w io.WriterTo, mode os.FileMode) error {
	var b bytes.Buffer
	if _, err := w.WriteTo(&b); err != nil {
		return err
	}
	return Write(path, b.Bytes(), mode)
}

// Replaces reports whether a write to path would replace file (the store a
// command reads): path names it, as it is or through a link.
func Replaces(path, file string) bool {
	p, err := os.Stat(path)
	if err != nil {
		return false
	}
	f, err := os.Stat(file)
	return err == nil && os.SameFile(p, f)
}

// target is the file a write to path replaces, a symbolic link's target
// (the rename would replace the link itself), and its information where
// it exists (nil otherwise, or where a link names no file: the link is
// then replaced). A folder is refused: the rename said "file exists". A
// file that is not a regular one is named as given: its link may be one
// of /proc's (/dev/stdout), which only the kernel resolves.
func target(path string) (string, os.FileInfo, error) {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return path, nil, nil
	case err != nil:
		return "", nil, err
	case fi.IsDir():
		return "", nil, fmt.Errorf("%s is a directory", path)
	case !fi.Mode().IsRegular():
		return path, fi, nil
	}
	real, err := filepath.EvalSymlinks(path)
	return real, fi, err
}

// identity is the file that path, as target gives it, names: its absolute
// path with the links of its folders resolved, the same for two paths of it.
func identity(path string) (string, error) {
	dir, err := filepath.EvalSymlinks(filepath.Dir(path))
	if err != nil {
		return "", err
	}
	return filepath.Abs(filepath.Join(dir, filepath.Base(path)))
}

// fill writes data to the temporary file tmp and flushes it to the disk,
// with the permissions of the file old it replaces, if any: chmod, since
// the umask took its part when tmp was made. Where mode is executable, so
// is the file, for whoever may read it: a wrapper written over a copy that
// lost its modes could not be run.
func fill(tmp *os.File, data []byte, old os.FileInfo, mode os.FileMode) error {
	if old != nil {
		perm := old.Mode().Perm()
		if mode&0o111 != 0 {
			perm |= (perm & 0o444) >> 2
		}
		if err := tmp.Chmod(perm); err != nil {
			return err
		}
	}
	if _, err := tmp.Write(data); err != nil {
		return err
	}
	return fsync(tmp)
}

// writeInto writes data into a file that is not a regular one, as
// os.WriteFile would; its Close error is returned too.
func writeInto(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	return errors.Join(err, f.Close())
}

// fsync flushes a file to the disk; a variable, so that a test can see
// what is synced when.
var fsync = (*os.File).Sync

// syncDir flushes a folder's entries (a rename in it) to the disk. Some
// file systems refuse to sync a folder (EINVAL, as on some network file
// systems); the file itself is then written all the same.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := fsync(d); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, errors.ErrUnsupported) {
		return err
	}
	return nil
}

// createTemp creates the file of the data of path, a new file, in its
// folder, of mode less
// the umask, as a program creates any file: os.CreateTemp's are 0600, and a
// chmod to mode after it passed over the umask (0644 for a user whose umask
// is 077). Where the file system can, the file has no name (O_TMPFILE)
// until link gives it one, once it is whole: a process killed while it
// wrote left its hidden .nccltune-* file behind, one a kill. named says
// it has one.
//
// The file is locked (flock) from its making until WriteAll has renamed
// it, so that sweep, which removes what a killed writer left, leaves it.
func createTemp(path string, mode os.FileMode) (f *os.File, named bool, err error) {
	f, named, err = openTemp(path, mode)
	if err != nil {
		return nil, false, err
	}
	// Best effort: where the file system has no flock, sweep cannot take
	// the lock either, and removes nothing.
	_ = unix.Flock(int(f.Fd()), unix.LOCK_EX)
	return f, named, nil
}

func openTemp(path string, mode os.FileMode) (f *os.File, named bool, err error) {
	dir := filepath.Dir(path)
	if _, err := os.Stat(procFD); err == nil { // link names it through /proc
		fd, err := unix.Open(dir, unix.O_WRONLY|unix.O_TMPFILE|unix.O_CLOEXEC, uint32(mode.Perm()))
		if err == nil {
			return os.NewFile(uintptr(fd), path), false, nil // the name its errors give
		}
	}
	for range 100 {
		f, err := os.OpenFile(filepath.Join(dir, tempName()), os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
		if !errors.Is(err, fs.ErrExist) {
			return f, true, err
		}
	}
	return nil, false, fmt.Errorf("%s: no free name for a temporary file", dir)
}

// sweep removes from dir the temporary files of writers killed before they
// renamed them (a second Ctrl-C, kill -9 as an export ended), which no
// later write removed: one that no process holds locked, and not just made
// (a named one is locked just after it is made). Best effort: what it
// cannot remove stays, as before.
func sweep(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), tempPrefix) || !e.Type().IsRegular() {
			continue
		}
		if info, err := e.Info(); err != nil || time.Since(info.ModTime()) < staleAfter {
			continue
		}
		path := filepath.Join(dir, e.Name())
		// Swapped for a link or a FIFO since it was listed, it is not
		// followed, nor waited on.
		f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
		if err != nil {
			continue
		}
		if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil {
			os.Remove(path)
		}
		f.Close()
	}
}

// staleAfter is how old a temporary file no process holds must be for
// sweep to remove it.
const staleAfter = time.Minute

// procFD is where the kernel names a process's open files.
const procFD = "/proc/self/fd"

// link gives f, a file createTemp made without a name, a temporary name in
// dir, which it returns.
func link(f *os.File, dir string) (string, error) {
	for range 100 {
		tmp := filepath.Join(dir, tempName())
		err := unix.Linkat(unix.AT_FDCWD, filepath.Join(procFD, strconv.Itoa(int(f.Fd()))), unix.AT_FDCWD, tmp, unix.AT_SYMLINK_FOLLOW)
		if !errors.Is(err, fs.ErrExist) {
			if err != nil {
				return "", &fs.PathError{Op: "link", Path: tmp, Err: err}
			}
			return tmp, nil
		}
	}
	return "", fmt.Errorf("%s: no free name for a temporary file", dir)
}

// tempPrefix begins every temporary file's name.
const tempPrefix = ".nccltune-"

func tempName() string { return tempPrefix + strconv.FormatUint(rand.Uint64(), 36) }
