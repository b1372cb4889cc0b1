package main

import (
	"strings"
	"testing"
)

// TestStatusOfACampaignStoppedFailing: a campaign whose trials all failed
// the same way stops early (run says so); status, asked later, says so too,
// not only "5 of 40 trials finished".
func TestStatusOfACampaignStoppedFailing(t *testing.T) {
	dir := t.TempDir()
	spaceFile := scriptSpace(t, dir, "broken", 40, "echo 'cudaErrorNoDevice' >&2\nexit 3\n")
	if code, out, errOut := nccltune(t, dir, "run", "--space", spaceFile); code != 1 || !strings.Contains(errOut, "stopping early") {
		t.Fatalf("run of a broken benchmark: exit %d\n%s\n%s", code, out, errOut)
	}
	_, out, _ := nccltune(t, dir, "status")
	if !strings.Contains(out, "stopping early: every trial so far failed the same way (5 trials") || !strings.Contains(out, "nccltune resume") {
		t.Errorf("status of a campaign stopped failing:\n%s", out)
	}
	if _, out, _ = nccltune(t, dir, "status", "--json"); !strings.Contains(out, `"stopped": "stopping early: every trial so far failed the same way`) {
		t.Errorf("status --json of a campaign stopped failing:\n%s", out)
	}
}
