package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchSearchOutBeforeMeasuring: an --out bench search cannot write is
// refused before the campaigns run, not after them (by default hours of
// them), which lost every result to the plot's write.
func TestBenchSearchOutBeforeMeasuring(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "file"), nil, 0o644)
	code, out, errOut := nccltune(t, dir, "bench", "search", "--scenarios", "2node-tcp", "--seeds", "1", "--trials", "10",
		"--samplers", "random", "--landscapes", "0", "--smooth", "0", "--out", "file/plots")
	if code != 1 || strings.Contains(errOut, "done") || !strings.Contains(errOut, "file") {
		t.Errorf("bench search --out file/plots: exit %d\n%s%s", code, out, errOut)
	}
}

// TestBenchJobUnknownScenario: bench job refuses an unknown scenario as a
// usage error before it runs any, as bench search and bench groups do; it
// ran the scenarios named before it, then failed with exit 1.
func TestBenchJobUnknownScenario(t *testing.T) {
	code, out, errOut := nccltune(t, t.TempDir(), "bench", "job", "--scenarios", "2node-tcp,infiniband", "--seeds", "1", "--trials", "10", "--rounds", "2")
	if code != 2 || !strings.Contains(errOut, `--scenarios: unknown scenario "infiniband"`) {
		t.Errorf("bench job --scenarios 2node-tcp,infiniband: exit %d\n%s%s", code, out, errOut)
	}
}
