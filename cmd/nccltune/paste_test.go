package main

import (
	"strings"
	"testing"
)

// TestSuggestedCommandsPaste: a command nccltune suggests quotes the path
// it names, so that it pastes as one argument: a path with a space was
// written bare, and the suggested command named two files.
func TestSuggestedCommandsPaste(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"status", "--store", "my store.db"}, "`nccltune run --store 'my store.db'`"},
		{[]string{"run", "my space.toml"}, "did you mean --space 'my space.toml'?"},
		{[]string{"run", "space.toml"}, "did you mean --space space.toml?"},
	} {
		if _, _, errOut := nccltune(t, dir, tc.args...); !strings.Contains(errOut, tc.want) {
			t.Errorf("nccltune %v: stderr %q, want %q", tc.args, errOut, tc.want)
		}
	}
	ranCampaign(t, dir, "-q", "--trials", "4", "--no-validate")
	if _, _, errOut := nccltune(t, dir, "export", "--format", "plugin", "--out", "out dir"); !strings.Contains(errOut, "nccltune plugin build --out 'out dir'") {
		t.Errorf("export --format plugin: stderr %q", errOut)
	}
}

// TestNoPluginBuildAdviceWithoutRules: an export of the plugin format that
// wrote no rules (no trial completed) still told the user to build the
// plugin "beside the rules", of which there were none.
func TestNoPluginBuildAdviceWithoutRules(t *testing.T) {
	dir := t.TempDir()
	spaceFile := scriptSpace(t, dir, "broken", 4, "exit 3\n")
	if code, out, errOut := nccltune(t, dir, "run", "-q", "--space", spaceFile, "--no-validate"); code != 1 {
		t.Fatalf("run of a benchmark that always fails: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := nccltune(t, dir, "export", "--format", "plugin", "--out", "out")
	if code != 1 || strings.Contains(errOut, "plugin build") {
		t.Errorf("export --format plugin with nothing to export: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
