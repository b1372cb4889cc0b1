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
	"strconv"
	"syscall"
)

// Write writes data to path through a temporary file in its folder, so a
// reader never sees half a file, and a crash or a full disk leaves the old
// file or the new one: the data reaches the disk before the rename (else
// the rename may be kept and the data lost, an empty file after a power
// cut on ext4 or XFS), and the folder after it, so that the new name is
// kept. A new file's mode is mode less the umask, as os.Create's is; a
// file that exists keeps its permissions, and a symbolic link its place,
// as they do under os.Create. A path that is a device or a pipe
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
	type staged struct{ tmp, path string }
	var ready []staged
	defer func() {
		for _, f := range ready {
			os.Remove(f.tmp) // renamed, it is gone
		}
	}()
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
		tmp, err := createTemp(filepath.Dir(path), f.Mode)
		if err != nil {
			return err
		}
		ready = append(ready, staged{tmp.Name(), path})
		err = fill(tmp, f.Data, old)
		if closeErr := tmp.Close(); err == nil {
			err = closeErr
		}
		if err != nil {
			return err
		}
	}
	for _, f := range ready {
		if err := os.Rename(f.tmp, f.path); err != nil {
			return err
		}
		if err := syncDir(filepath.Dir(f.path)); err != nil {
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

// fill writes data to the temporary file tmp and flushes it to the disk,
// with the permissions of the file old it replaces, if any: chmod, since
// the umask took its part when tmp was made.
func fill(tmp *os.File, data []byte, old os.FileInfo) error {
	if old != nil {
		if err := tmp.Chmod(old.Mode().Perm()); err != nil {
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

// createTemp creates a new file in dir of mode less the umask, as a program
// creates any file: os.CreateTemp's are 0600, and a chmod to mode after it
// passed over the umask (0644 for a user whose umask is 077).
func createTemp(dir string, mode os.FileMode) (*os.File, error) {
	for range 100 {
		f, err := os.OpenFile(filepath.Join(dir, ".nccltune-"+strconv.FormatUint(rand.Uint64(), 36)), os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
	return nil, fmt.Errorf("%s: no free name for a temporary file", dir)
}
