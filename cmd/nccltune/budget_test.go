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
	ranCampaign(t, dir, "-q", "--trials", "6", "--no-simplify", "--validate-rounds", "2")
	for _, args := range [][]string{{"resume", "--trials", "4"}, {"run", "--trials", "4", "--no-simplify", "--validate-rounds", "2"}} {
		code, out, errOut := nccltune(t, dir, args...)
		if code != 1 || !strings.Contains(errOut, "a budget of 4 is spent already: give at least 6 trials") {
			t.Errorf("%v of a 6-trial campaign: exit %d\n%s%s", args, code, out, errOut)
		}
	}
}
