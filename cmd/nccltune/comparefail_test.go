package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCompareOfAFailedRunExits1: a compare whose run failed has no verdict,
// which it prints, table or JSON, and exits 1: it exited 0, and a script
// read a comparison that never happened as done.
func TestCompareOfAFailedRunExits1(t *testing.T) {
	dir, spaceFile := treeFails(t, "exit 3")
	code, out, errOut := nccltune(t, dir, "compare", "--space", spaceFile, "--rounds", "2", "a.env", "b.env")
	if code != 1 || !strings.Contains(out, "no verdict: B failed") || !strings.Contains(errOut, "B failed") {
		t.Errorf("compare with B failing: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = nccltune(t, dir, "compare", "--space", spaceFile, "--rounds", "2", "--json", "a.env", "b.env")
	var rows []struct{ Verdict string }
	if err := json.Unmarshal([]byte(out), &rows); code != 1 || err != nil || len(rows) != 1 || !strings.HasPrefix(rows[0].Verdict, "no verdict") {
		t.Errorf("compare --json with B failing: exit %d, %v\n%s%s", code, err, out, errOut)
	}
	if code, out, errOut := nccltune(t, dir, "compare", "--space", spaceFile, "--rounds", "2", "a.env", "a.env"); code != 0 {
		t.Errorf("compare of runs that all ran: exit %d\n%s%s", code, out, errOut)
	}
}

// TestCompareJSONInTheMetricsUnit: compare --json gives each mean as the
// table prints it, in the benchmark's unit, with the unit and direction: it
// gave the scores, which for a time (goal "min") are its inverse, so a
// script read 0.1 where the command measured 10 ms.
func TestCompareJSONInTheMetricsUnit(t *testing.T) {
	dir := t.TempDir()
	spaceFile, _ := filepath.Abs("../../tuner/testdata/silent-command.toml")
	os.WriteFile(filepath.Join(dir, "a.env"), []byte("NCCL_ALGO=Ring\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "b.env"), []byte("NCCL_ALGO=Tree\n"), 0o644)
	code, out, errOut := nccltune(t, dir, "compare", "--space", spaceFile, "--rounds", "2", "--json", "a.env", "b.env")
	var rows []struct {
		MeanA, MeanB, Gain float64
		Unit               string
		LowerIsBetter      bool
	}
	if err := json.Unmarshal([]byte(out), &rows); code != 0 || err != nil || len(rows) != 1 {
		t.Fatalf("compare --json: exit %d, %v\n%s%s", code, err, out, errOut)
	}
	if r := rows[0]; math.Abs(r.MeanA-10) > 1e-9 || math.Abs(r.MeanB-5) > 1e-9 || r.Unit != "ms" || !r.LowerIsBetter || r.Gain < 0.99 || r.Gain > 1.01 {
		t.Errorf("compare --json of 10 ms against 5 ms: %+v", r)
	}
}

// TestCompareTableDrivesNoTerminal: a failed run's verdict quotes the
// benchmark's output, which compare's table printed raw: a benchmark could
// set the terminal's title or clear it. It is escaped, as status's is.
func TestCompareTableDrivesNoTerminal(t *testing.T) {
	dir, spaceFile := treeFails(t, `{ printf 'NCCL WARN \033]0;pwned\007\033[2J\n'; exit 3; }`)
	code, out, errOut := nccltune(t, dir, "compare", "--space", spaceFile, "--rounds", "2", "a.env", "b.env")
	if code != 1 || !strings.Contains(out, "no verdict: B failed") || strings.ContainsAny(out+errOut, "\x1b\a") {
		t.Errorf("compare with B failing: exit %d\nstdout %q\nstderr %q", code, out, errOut)
	}
}

// treeFails is a folder holding a.env (NCCL_ALGO=Ring) and b.env (Tree),
// and a space whose benchmark runs fail under Tree with the shell command
// fail (which exits non-zero).
func treeFails(t *testing.T, fail string) (dir, spaceFile string) {
	t.Helper()
	dir = t.TempDir()
	spaceFile = scriptSpace(t, dir, "treefails", 4, `[ "$NCCL_ALGO" != Tree ] || `+fail+`
for s in 1024 2048 4096; do
  echo "  $s  $((s/4))  float  sum  -1  20.5  0.05  0.09  0  19.9  0.05  0.09  0"
done
`)
	os.WriteFile(filepath.Join(dir, "a.env"), []byte("export NCCL_ALGO='Ring'\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "b.env"), []byte("export NCCL_ALGO='Tree'\n"), 0o644)
	return dir, spaceFile
}

// TestCompareOfASpaceAndACampaign: --space and --store or --campaign name
// two benchmarks to compare on, and compare reads one: a usage error. It
// ran on the space's, the campaign named left unread without a word.
func TestCompareOfASpaceAndACampaign(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.env"), []byte("NCCL_ALGO=Ring\n"), 0o644)
	spaceFile, _ := filepath.Abs("../../examples/sim-2node-ib.toml")
	for _, flag := range []string{"--campaign=other", "--store=other.db"} {
		code, out, errOut := nccltune(t, dir, "compare", "--space", spaceFile, flag, "--rounds", "2", "a.env", "a.env")
		if code != 2 || !strings.Contains(errOut, "--space") {
			t.Errorf("compare --space %s: exit %d\n%s%s", flag, code, out, errOut)
		}
	}
}

// TestCompareVerdictIsOneCell: a failed run's verdict quotes the
// benchmark's output, whose tab the table read as the end of the verdict's
// cell, a column more on its line, and whose line feed (a DDP script's
// message) as the end of its line, the rest a row of its own. Both are
// escaped with the rest of the cell.
func TestCompareVerdictIsOneCell(t *testing.T) {
	dir, spaceFile := treeFails(t, `{ printf 'NCCL WARN bad\tthing\n'; exit 3; }`)
	code, out, errOut := nccltune(t, dir, "compare", "--space", spaceFile, "--rounds", "2", "a.env", "b.env")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if code != 1 || len(lines) != 2 || !strings.Contains(lines[1], `bad\u0009thing`) {
		t.Errorf("compare with B failing: exit %d\nstdout %q\nstderr %q", code, out, errOut)
	}
}

// TestCompareOfAStoredProgram: compare on a stored campaign whose space
// starts a program advised "give the space file ..., --space FILE", which
// with the --store it was given is a usage error; it says to give the
// space file in place of the store, and doing so compares.
func TestCompareOfAStoredProgram(t *testing.T) {
	dir, spaceFile := treeFails(t, "exit 3")
	if code, out, errOut := nccltune(t, dir, "run", "-q", "--space", spaceFile, "--trials", "3", "--no-simplify", "--no-validate"); code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := nccltune(t, dir, "compare", "--store", "nccltune.db", "--rounds", "2", "a.env", "a.env")
	if code != 1 || !strings.Contains(errOut, "--space FILE in place of --store and --campaign") {
		t.Errorf("compare --store of a campaign that starts a program: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := nccltune(t, dir, "compare", "--space", spaceFile, "--rounds", "2", "a.env", "a.env"); code != 0 {
		t.Errorf("compare --space as advised: exit %d\n%s%s", code, out, errOut)
	}
}
