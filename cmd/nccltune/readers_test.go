package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestReadersCloseBeforePrinting: a read-only command closes the store
// before it prints, so that one blocked on its output (a pager, a
// suspended shell) keeps no campaign from checkpointing (store's readers
// hold a lock the writer waits to see released). Here show's output fills
// a pipe nobody reads.
func TestReadersCloseBeforePrinting(t *testing.T) {
	dir := t.TempDir()
	ranCampaign(t, dir, "-q", "--trials", "4", "--no-simplify", "--no-validate")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	const pipeSize = 4096 // the least Linux allows; show --output prints more
	if _, err := unix.FcntlInt(w.Fd(), unix.F_SETPIPE_SZ, pipeSize); err != nil {
		t.Skip("pipe size:", err)
	}
	cmd := exec.Command(os.Args[0], "show", "--output", "1")
	cmd.Dir, cmd.Stdout = dir, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	defer func() {
		io.Copy(io.Discard, r)
		cmd.Wait()
	}()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if n, err := unix.IoctlGetInt(int(r.Fd()), unix.TIOCINQ); err == nil && n >= pipeSize {
			break // show is blocked on its output
		}
		if time.Now().After(deadline) {
			t.Fatal("show never filled its output")
		}
	}
	f, err := os.Open(filepath.Join(dir, "nccltune.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Any lock in SQLite's lock bytes and past them (the readers' byte).
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Start: 0x40000000, Len: 1024}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_GETLK, &lk); err != nil {
		t.Fatal(err)
	}
	if lk.Type != syscall.F_UNLCK {
		t.Errorf("show blocked on its output still holds a lock on the store (pid %d)", lk.Pid)
	}
}
