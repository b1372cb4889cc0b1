package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOneRankCampaignSaysSo: on one GPU NCCL's communicator has one rank,
// which chooses no algorithm or protocol (NCCL 2.28 on an H100 never read
// NCCL_ALGO there): status says so, in place of "unknown to this NCCL
// version?" for what NCCL did not read, and doctor's probe warns before any
// trial runs.
func TestOneRankCampaignSaysSo(t *testing.T) {
	dir := t.TempDir()
	eight, err := filepath.Abs("../../examples/sim-1node-nvlink.toml")
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile(eight)
	if err != nil {
		t.Fatal(err)
	}
	oneGPU := strings.NewReplacer("gpus = 8", "gpus = 1", "gpus_per_node = 8", "gpus_per_node = 1").Replace(string(example))
	if err := os.WriteFile(filepath.Join(dir, "one.toml"), []byte(oneGPU), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := nccltune(t, dir, "run", "--space", "one.toml", "--trials", "6", "--no-validate", "--no-simplify"); code != 0 {
		t.Fatalf("run exited %d\n%s\n%s", code, out, errOut)
	}
	_, out, _ := nccltune(t, dir, "status")
	if !strings.Contains(out, "communicator had one rank (nRanks 1)") || !strings.Contains(out, "does not show it read NCCL_ALGO") ||
		!strings.Contains(out, "(a communicator of one rank sets up no algorithm") || strings.Contains(out, "NCCL version") {
		t.Errorf("status on one rank does not say so:\n%s", out)
	}
	_, out, _ = nccltune(t, dir, "doctor", "--space", "one.toml")
	if !strings.Contains(out, "the probe ran one rank") {
		t.Errorf("doctor on one rank does not warn:\n%s", out)
	}
	// Eight ranks say nothing of it.
	if code, out, errOut := nccltune(t, dir, "run", "--space", eight, "--store", "eight.db", "--trials", "3", "--no-validate", "--no-simplify"); code != 0 {
		t.Fatalf("run exited %d\n%s\n%s", code, out, errOut)
	}
	if _, out, _ = nccltune(t, dir, "status", "--store", "eight.db"); strings.Contains(out, "one rank") {
		t.Errorf("status on eight ranks:\n%s", out)
	}
}
