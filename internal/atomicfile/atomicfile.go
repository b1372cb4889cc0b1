// Package atomicfile writes a file whole or not at all.
package atomicfile

import (
	"errors"
	"fmt"
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
// kept. The file's mode is mode less the umask, as os.Create's is.
func Write(path string, data []byte, mode os.FileMode) error {
	dir := filepath.Dir(path)
	tmp, err := createTemp(dir, mode)
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := fsync(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return syncDir(dir)
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
