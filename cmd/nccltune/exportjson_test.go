package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
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
