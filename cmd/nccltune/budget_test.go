package main

import (
	"strings"
	"testing"
)

// TestSmallerBudgetIsRefused: a budget below the search trials a campaign
// ran is refused, as the README says, also once the campaign is finished
// (run its budget, validated): there it was taken for finished, said
// "nothing to run" and exited 0, the budget asked for ignored.
func TestSmallerBudgetIsRefused(t *testing.T) {
	dir := t.TempDir()
	if code, out, errOut := nccltune(t, dir, "run", "-q", "--trials", "5", "--no-simplify", "--validate-rounds", "2"); code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, out, errOut)
	}
	for _, args := range [][]string{{"resume", "--trials", "4"}, {"run", "--trials", "4", "--no-simplify", "--validate-rounds", "2"}} {
		code, out, errOut := nccltune(t, dir, args...)
		if code != 1 || !strings.Contains(errOut, "a budget of 4 is spent already: give at least 5 trials") {
			t.Errorf("%v of a 5-trial campaign: exit %d\n%s%s", args, code, out, errOut)
		}
	}
}
