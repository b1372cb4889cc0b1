package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/nccltune/nccltune/runner/nccltests"
	"github.com/nccltune/nccltune/space"
)

// TestWrongColumn: show prints an unchecked #wrong as nccl-tests does (N/A:
// alltoall's and sendrecv's in-place half), not as the -1 it is stored as.
func TestWrongColumn(t *testing.T) {
	for wrongs, want := range map[int64]string{-1: "N/A", 0: "0", 3: "3"} {
		if got := wrong(nccltests.Measure{Wrong: wrongs}); got != want {
			t.Errorf("%d wrong: %q, want %q", wrongs, got, want)
		}
	}
}

// TestShowOfAWorkloadTrial: a trial of a workload runs one benchmark per
// collective. show names each row's collective (it printed all_gather's and
// reduce_scatter's 64M rows as two unnamed rows of one size), and its command
// line runs every benchmark when pasted (the '&&' between them was quoted,
// an argument of the first).
func TestShowOfAWorkloadTrial(t *testing.T) {
	dir := t.TempDir()
	spaceFile, _ := filepath.Abs("../../examples/sim-2node-ib-workload.toml")
	if code, out, errOut := nccltune(t, dir, "run", "-q", "--space", spaceFile, "--trials", "3", "--no-simplify", "--no-validate"); code != 0 {
		t.Fatalf("run: %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := nccltune(t, dir, "show", "0")
	if code != 0 {
		t.Fatalf("show: %d\n%s%s", code, out, errOut)
	}
	if strings.Contains(out, "'&&'") || strings.Count(out, " && ") != 2 {
		t.Errorf("show's command line does not run three benchmarks:\n%s", out)
	}
	for _, row := range []string{"all_gather  67108864", "reduce_scatter  67108864", "all_reduce         8"} {
		if !strings.Contains(out, row) {
			t.Errorf("show has no row %q:\n%s", row, out)
		}
	}
}

// TestSizesOfTheWholeSweep: a space without ranges has one, the whole sweep,
// whose exclusive bound is one byte past its largest size: status showed it
// as "8-1073741825". It reads as the sweep, as ranges' bounds do.
func TestSizesOfTheWholeSweep(t *testing.T) {
	sp, err := space.Parse("all.toml", []byte("[campaign]\nsizes = { min = \"8\", max = \"1G\", factor = 2 }\n[simulator]\nnodes = 1\n[[param]]\nname = \"NCCL_ALGO\"\nvalues = [\"default\", \"Ring\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := sizes(sp, sp.Ranges[0]); got != "8-1G" {
		t.Errorf("sizes of the whole sweep: %q, want 8-1G", got)
	}
}

// TestStatusCountsOneSimplifyingTrial: status counted one of the
// simplification's trials as many ("then 1 trials tried ...").
func TestStatusCountsOneSimplifyingTrial(t *testing.T) {
	code, out, errOut := nccltune(t, t.TempDir(), "run", "--trials", "3", "--no-validate", "--quiet")
	if code != 0 || !strings.Contains(out, "then 1 trial tried each range's choice") {
		t.Errorf("run --trials 3: exit %d\n%s%s", code, out, errOut)
	}
}

// TestShowOfATamperedCollective: show's per-size table wrote a stored
// row's collective raw, so one holding a tab or a newline (an altered
// store's) split the row; the collective is one cell, escaped.
func TestShowOfATamperedCollective(t *testing.T) {
	dir := t.TempDir()
	spaceFile, _ := filepath.Abs("../../examples/sim-2node-ib-workload.toml")
	if code, out, errOut := nccltune(t, dir, "run", "-q", "--space", spaceFile, "--trials", "3", "--no-simplify", "--no-validate"); code != 0 {
		t.Fatalf("run: %d\n%s%s", code, out, errOut)
	}
	tamper(t, filepath.Join(dir, "nccltune.db"), `UPDATE results SET collective = 'all' || char(9) || 'gather' || char(10) || 'X' WHERE collective = 'all_gather'`)
	code, out, errOut := nccltune(t, dir, "show", "0")
	if code != 0 || strings.Contains(out, "\t") || !strings.Contains(out, `all\u0009gather\u000aX  67108864`) {
		t.Errorf("show: exit %d, standard output %q\n%s", code, out, errOut)
	}
}
