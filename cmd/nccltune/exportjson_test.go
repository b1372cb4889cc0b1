package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nccltune/nccltune/examples"
)

// TestExportJSONWhereDefaultsStandUntried: where validation kept NCCL's
// defaults and no trial of them completed, the range has no chosen trial,
// yet was measured: every format writes it with NCCL's defaults, json
// included, which refused as "no completed trial measured any range".
func TestExportJSONWhereDefaultsStandUntried(t *testing.T) {
	dir := untriedDefaults(t)
	for _, format := range []string{"env", "json"} {
		if code, out, errOut := nccltune(t, dir, "export", "--format", format, "--out", "out"); code != 0 {
			t.Errorf("export --format %s: exit %d\n%s%s", format, code, out, errOut)
		}
	}
	data, _ := os.ReadFile(filepath.Join(dir, "out", "nccl-tuned.json"))
	var got struct {
		Ranges []struct {
			Name       string
			Validation struct{ Verdict string }
			Env        map[string]string
		}
	}
	if err := json.Unmarshal(data, &got); err != nil || len(got.Ranges) != 1 || got.Ranges[0].Validation.Verdict != "default" || len(got.Ranges[0].Env) != 0 {
		t.Errorf("nccl-tuned.json: %v\n%s", err, data)
	}
}

// untriedDefaults is the folder of a campaign whose one range keeps NCCL's
// defaults, which no trial measured: they fail, and Ring and Tree measure
// without NCCL's log (so validation rejects them).
func untriedDefaults(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	spaceFile := scriptSpace(t, dir, "nodefaults", 4, `[ -n "$NCCL_ALGO" ] || exit 3
for s in 1024 2048 4096; do
  echo "  $s  $((s/4))  float  sum  -1  20.5  0.05  0.09  0  19.9  0.05  0.09  0"
done
`)
	if code, out, errOut := nccltune(t, dir, "run", "-q", "--space", spaceFile, "--validate-rounds", "2"); code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, out, errOut)
	}
	return dir
}

// TestExportWithoutTheSpaceKnowsItsValidation: a campaign whose space pins
// a variable that names a file (NCCL_TOPO_FILE, which cloud VMs need) is
// exported from the store without it (space.Exportable). The store's
// validations and NCCL's recorded decisions are under the configurations'
// keys in the campaign's own space, NCCL_TOPO_FILE in each: looked up in the
// space without it, the plugin formats found none, and called a validated
// campaign "not validated" (tuner-csv failed, asking for `nccltune validate`).
func TestExportWithoutTheSpaceKnowsItsValidation(t *testing.T) {
	dir := t.TempDir()
	data, err := examples.Files.ReadFile(examples.Default)
	if err != nil {
		t.Fatal(err)
	}
	own := filepath.Join(dir, "space.toml")
	os.WriteFile(own, []byte(strings.Replace(string(data), "[fixed]\n", "[fixed]\nNCCL_TOPO_FILE = \"/opt/topo.xml\"\n", 1)), 0o644)
	if code, out, errOut := nccltune(t, dir, "run", "-q", "--space", own, "--trials", "4", "--no-simplify", "--validate-rounds", "2"); code != 0 {
		t.Fatalf("run: %d\n%s%s", code, out, errOut)
	}
	for _, format := range []string{"plugin", "tuner-csv"} {
		out := filepath.Join(dir, format)
		code, stdout, errOut := nccltune(t, dir, "export", "--format", format, "--out", out)
		if code != 0 {
			t.Errorf("%s: exit %d\n%s%s", format, code, stdout, errOut)
			continue
		}
		rules, _ := filepath.Glob(filepath.Join(out, "*.conf"))
		rules = append(rules, filepath.Join(out, "nccltune.rules"))
		data, _ := os.ReadFile(rules[0])
		if strings.Contains(string(data), "not validated") || !strings.Contains(string(data), "validated") {
			t.Errorf("%s:\n%s", rules[0], data)
		}
	}
}

// TestTunerCSVOfAWorkloadWithSendRecv: NCCL asks no tuner plugin about
// sendrecv and alltoall, which run as NCCL decides, as the export's own
// header says. A workload holding them (a pipeline's sends, an expert
// layer's alltoall) was refused the example plugin's rules as a whole ("does
// not handle sendrecv"), then for want of NCCL's decisions on their sizes,
// which NCCL's log never holds: its collectives get their rules, and the
// sendrecv none.
func TestTunerCSVOfAWorkloadWithSendRecv(t *testing.T) {
	dir := t.TempDir()
	data, err := examples.Files.ReadFile("sim-2node-ib-workload.toml")
	if err != nil {
		t.Fatal(err)
	}
	p2p := "[[workload]]\ncollective = \"sendrecv\"\nsize = \"4M\"\ncount = 800\nranks = 16\n\n[[workload]]\ncollective = \"alltoall\"\nsize = \"16M\"\ncount = 100\nranks = 16\n\n[[param]]"
	own := filepath.Join(dir, "space.toml")
	os.WriteFile(own, []byte(strings.Replace(string(data), "[[param]]", p2p, 1)), 0o644)
	if code, out, errOut := nccltune(t, dir, "run", "-q", "--space", own, "--trials", "3", "--no-simplify", "--validate-rounds", "2"); code != 0 {
		t.Fatalf("run: %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := nccltune(t, dir, "export", "--format", "tuner-csv", "--out", "csv"); code != 0 {
		t.Fatalf("export --format tuner-csv: exit %d\n%s%s", code, out, errOut)
	}
	conf, _ := os.ReadFile(filepath.Join(dir, "csv", "nccl_tuner.conf"))
	for _, line := range strings.Split(string(conf), "\n") {
		if strings.HasPrefix(line, "sendrecv,") || strings.HasPrefix(line, "alltoall,") {
			t.Errorf("a rule NCCL never asks about: %s", line)
		}
	}
	for _, coll := range []string{"allreduce,", "allgather,", "reducescatter,"} {
		if !strings.Contains(string(conf), "\n"+coll) {
			t.Errorf("no %s rule:\n%s", coll, conf)
		}
	}
}
