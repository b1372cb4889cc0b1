package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestOutputToAFullDisk: output lost (stdout on a full disk, /dev/full
// here) fails the command, as status's table does: export's and plugin
// build's listing of what they wrote, doctor's table, and sim's
// nccl-tests output, exited 0.
func TestOutputToAFullDisk(t *testing.T) {
	dir := smallCampaign(t)
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skip(err)
	}
	defer full.Close()
	runs := [][]string{{"export", "--out", "env"}, {"doctor", "--python", ""}, {"sim", "all_reduce_perf", "-b", "8", "-e", "1K"}}
	if _, err := exec.LookPath("cc"); err == nil {
		runs = append(runs, []string{"plugin", "build", "--out", "plugin"})
	}
	for _, args := range runs {
		cmd := exec.Command(os.Args[0], args...)
		var stderr strings.Builder
		cmd.Dir, cmd.Stdout, cmd.Stderr = dir, full, &stderr
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(stderr.String(), "no space left") {
			t.Errorf("nccltune %v > /dev/full: %v\n%s", args, err, stderr.String())
		}
	}
}

// TestHelpToAFullDisk: help that could not be written (--help > /dev/full)
// fails the command, as any other output lost does; it exited 0.
func TestHelpToAFullDisk(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skip(err)
	}
	defer full.Close()
	for _, args := range [][]string{{"--help"}, {"help"}, {"status", "--help"}, {"help", "bench", "search"}, {"plugin"}} {
		cmd := exec.Command(os.Args[0], args...)
		var stderr strings.Builder
		cmd.Dir, cmd.Stdout, cmd.Stderr = t.TempDir(), full, &stderr
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(stderr.String(), "no space left") {
			t.Errorf("nccltune %v > /dev/full: %v\n%s", args, err, stderr.String())
		}
	}
}
