package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStatusOfTheLatestRun: a campaign run again with another patience and
// benchmark.timeout (neither is part of its space's identity) is reported
// as the latest run ran it, by the summary that ends the run and by status,
// and a resume without --space goes on with them: both read the stored
// copy of the space, the first run's, which said no range settles (no
// patience) and quoted the first timeout as the one the iteration count
// keeps to, where the shorter one of the latest run caps it.
func TestStatusOfTheLatestRun(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile("../../examples/sim-2node-ib.toml")
	if err != nil {
		t.Fatal(err)
	}
	// A noise target that wants more iterations than a sweep fits in a third of the timeout.
	spaceWith := func(name, timeout, patience string) string {
		s := strings.Replace(string(src), `timeout = "2m"`, "timeout = "+timeout+"\nnoise_target = 0.001", 1)
		s = strings.Replace(s, "trials = 60", "trials = 60\npatience = "+patience, 1)
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	first, latest := spaceWith("first.toml", `"3s"`, "0"), spaceWith("latest.toml", `"2s"`, "5")
	if code, out, errOut := nccltune(t, dir, "run", "-q", "--space", first, "--trials", "6", "--no-simplify", "--no-validate"); code != 0 || !strings.Contains(out, "of the 3s timeout") {
		t.Fatalf("first run: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := nccltune(t, dir, "run", "-q", "--space", latest, "--trials", "40", "--no-simplify", "--no-validate")
	if code != 0 || !strings.Contains(out, "of the 2s timeout") {
		t.Errorf("the run's summary does not quote its own timeout: exit %d\n%s%s", code, out, errOut)
	}
	for _, args := range [][]string{{"status"}, {"status", "--json"}} {
		_, out, _ := nccltune(t, dir, args...)
		if !strings.Contains(out, "of the 2s timeout") {
			t.Errorf("%v does not quote the latest run's timeout:\n%s", args, out)
		}
	}
	_, out, _ = nccltune(t, dir, "status", "--json")
	var status struct{ Settled map[string]int }
	if err := json.Unmarshal([]byte(out), &status); err != nil || len(status.Settled) == 0 {
		t.Errorf("status --json: no range settled under the latest run's patience (%v):\n%s", err, out)
	}
	// resume, without the space file, goes on as the latest run ran.
	if code, out, errOut := nccltune(t, dir, "resume", "-q", "--trials", "41", "--no-simplify", "--no-validate"); code != 0 || !strings.Contains(out, "of the 2s timeout") {
		t.Errorf("resume: exit %d\n%s%s", code, out, errOut)
	}
}
