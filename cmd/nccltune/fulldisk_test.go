package main

import (
	"os"
	"os/exec"
	"path/filepath"
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
	// doctor --node, the fan-out's per-node report: a node that could not
	// write it reads as one that sent none.
	runs := [][]string{{"export", "--out", "env"}, {"doctor", "--python", ""}, {"doctor", "--node", "--python", ""}, {"sim", "all_reduce_perf", "-b", "8", "-e", "1K"}}
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

// TestExportToAFullDiskKeepsTheOldSet: an export that cannot write one of
// its files (a full disk, /dev/full here) replaces none of the older
// export's: it replaced those before it, and a launch script then sourced
// one range's new settings beside another's old.
func TestExportToAFullDiskKeepsTheOldSet(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip(err)
	}
	dir := smallCampaign(t)
	env := filepath.Join(dir, "env")
	if err := os.Mkdir(env, 0o755); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(env, "nccl-small.env")
	if err := os.WriteFile(old, []byte("# the older export\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/full", filepath.Join(env, "nccl-medium.env")); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := nccltune(t, dir, "export", "--out", "env"); code != 1 || !strings.Contains(errOut, "no space left") {
		t.Errorf("export with its second file on a full disk: exit %d\n%s", code, errOut)
	}
	if data, _ := os.ReadFile(old); string(data) != "# the older export\n" {
		t.Errorf("the first file was replaced:\n%s", data)
	}
	if _, err := os.Stat(filepath.Join(env, "nccl-large.env")); err == nil {
		t.Error("the third file was written")
	}
}
