package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestInterruptedSaysWhatGoesOn: a campaign stopped by a signal says its
// finished trials are stored and how it goes on; compare, which stores
// nothing, says only that it was interrupted (it said a `nccltune run`
// would go on from its trials), and so does a benchmark, which stops.
func TestInterruptedSaysWhatGoesOn(t *testing.T) {
	dir := t.TempDir()
	spaceFile := slowSpace(t, dir, 6)
	os.WriteFile(filepath.Join(dir, "a.env"), []byte("# NCCL's defaults\n"), 0o644)
	for _, tc := range []struct {
		args []string
		hint bool
	}{
		{[]string{"run", "--space", spaceFile}, true},
		{[]string{"compare", "--space", spaceFile, "a.env", "a.env"}, false},
		// bench ran every campaign to its end, deaf to the signal, and
		// was ended by the forced exit a minute later.
		{[]string{"bench", "search", "--landscapes", "20", "--smooth", "0", "--trials", "80", "--out", dir}, false},
	} {
		cmd := exec.Command(os.Args[0], tc.args...)
		cmd.Dir = dir
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = io.Discard, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		cmd.Process.Signal(syscall.SIGTERM)
		err := cmd.Wait()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 || !strings.Contains(stderr.String(), "nccltune: interrupted") ||
			strings.Contains(stderr.String(), "finished trials are stored") != tc.hint {
			t.Errorf("nccltune %v stopped: %v\n%s", tc.args[0], err, stderr.String())
		}
	}
}
