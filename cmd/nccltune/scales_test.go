package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestScalesExport runs a campaign of three node counts and exports the
// tuner plugin's rules: one file holds the rules of every node count, each
// rule naming its nodes and ranks, and each node count has its job's
// environment, which a shell sources.
func TestScalesExport(t *testing.T) {
	dir := t.TempDir()
	example, _ := filepath.Abs("../../examples/sim-scales-ib.toml")
	code, out, errOut := nccltune(t, dir, "run", "--space", example, "--trials", "5", "--validate-rounds", "2")
	if code != 0 {
		t.Fatalf("run: %d\n%s%s", code, out, errOut)
	}
	for _, name := range []string{"sim-scales-ib@2n", "sim-scales-ib@4n", "sim-scales-ib@8n"} {
		if !strings.Contains(out, `campaign "`+name+`": 5 of 5 trials finished`) || !strings.Contains(errOut, `campaign "`+name+`"`) {
			t.Errorf("run does not report campaign %s:\n%s%s", name, out, errOut)
		}
	}
	// The family's own name is no campaign: the error names the scales'.
	if code, _, errOut := nccltune(t, dir, "status", "--campaign", "sim-scales-ib"); code != 1 || !strings.Contains(errOut, "--campaign sim-scales-ib@2n, sim-scales-ib@4n, sim-scales-ib@8n") {
		t.Errorf("status --campaign of the family: exit %d, %s", code, errOut)
	}
	if code, _, errOut := nccltune(t, dir, "show", "--campaign", "nosuch", "0"); code != 1 || !strings.Contains(errOut, `campaign "nosuch": not found; the store holds sim-scales-ib@2n, sim-scales-ib@4n, sim-scales-ib@8n`) {
		t.Errorf("show --campaign nosuch: exit %d, %s", code, errOut)
	}
	for _, format := range []string{"plugin", "tuner-csv"} {
		code, out, errOut = nccltune(t, dir, "export", "--format", format, "--out", format)
		if code != 0 {
			t.Fatalf("export --format %s: %d\n%s%s", format, code, out, errOut)
		}
	}
	rules, err := os.ReadFile(filepath.Join(dir, "plugin", "nccltune.rules"))
	if err != nil {
		t.Fatal(err)
	}
	csv, err := os.ReadFile(filepath.Join(dir, "tuner-csv", "nccl_tuner.conf"))
	if err != nil {
		t.Fatal(err)
	}
	// A plugin rule is where a scale's choice sets an algorithm or protocol
	// (elsewhere NCCL's own stands); the example plugin's cover every size.
	ruleLine := regexp.MustCompile(`(?m)^allreduce \d+ \S+ (\S+) (\S+) `)
	if m := ruleLine.FindAllSubmatch(rules, -1); len(m) == 0 {
		t.Errorf("no plugin rule:\n%s", rules)
	} else {
		for _, r := range m {
			if at := string(r[1]) + "/" + string(r[2]); at != "2/8" && at != "4/16" && at != "8/32" {
				t.Errorf("a plugin rule for %s nodes/ranks:\n%s", at, rules)
			}
		}
	}
	for _, scale := range []struct{ nodes, ranks string }{{"2", "8"}, {"4", "16"}, {"8", "32"}} {
		if !regexp.MustCompile(`(?m)^allreduce,\d+,\d+,\w+,\w+,\d+,` + scale.nodes + `,` + scale.ranks + `,`).Match(csv) {
			t.Errorf("no example plugin rule for %s nodes, %s ranks:\n%s", scale.nodes, scale.ranks, csv)
		}
		env := filepath.Join(dir, "plugin", "nccl-plugin-"+scale.nodes+"n.env")
		got, err := exec.Command("sh", "-c", `. "$1" && printf '%s\n' "$NCCLTUNE_RULES"`, "sh", env).Output()
		if err != nil || strings.TrimSpace(string(got)) != filepath.Join(dir, "plugin", "nccltune.rules") {
			t.Errorf("%s: %q, %v", env, got, err)
		}
	}
	if strings.Count(string(rules), "nccltune-rules 1") != 1 {
		t.Errorf("rules file:\n%s", rules)
	}
}

// TestOtherCampaignsOfTheSameSpace: a campaign's name is no part of its
// space's hash, so the same space run under a longer name ("-large")
// beside it is another campaign: run reports each its own, and a campaign
// renamed by --allow-space-change (NAME-2) is still found as NAME's.
func TestOtherCampaignsOfTheSameSpace(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile("../../examples/sim-2node-ib.toml")
	if err != nil {
		t.Fatal(err)
	}
	write := func(file, name string) string {
		path := filepath.Join(dir, file)
		if err := os.WriteFile(path, []byte(strings.Replace(string(src), `name = "sim-2node-ib"`, `name = "`+name+`"`, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	ib, large := write("ib.toml", "ib"), write("large.toml", "ib-large")
	for _, run := range []struct {
		space, trials, want string
	}{{ib, "3", `campaign "ib": 3 of 3`}, {large, "4", `campaign "ib-large": 4 of 4`}, {ib, "3", `campaign "ib": 3 of 3`}} {
		code, out, errOut := nccltune(t, dir, "run", "--space", run.space, "--trials", run.trials, "--no-validate")
		if code != 0 || !strings.Contains(out, run.want) || strings.Count(out, "trials finished") != 1 {
			t.Errorf("run %s: exit %d, want %s\n%s%s", filepath.Base(run.space), code, run.want, out, errOut)
		}
	}
}

// TestScalesExportOfAScaleAddedLater: campaign.scales is no part of a
// scale's space, so a run with a node count added to the list ([2, 4]
// then [2, 4, 8]) keeps the scales it ran and tunes the new one; the
// plugin's export names every scale the store holds of that space,
// whichever scale --campaign names: exported from the first scale, whose
// stored copy lists [2, 4], it left the 8 nodes' rules out, and removed the
// nccl-plugin-8n.env an export of the last scale had written. A resume of
// the first scale goes on to the last, as a resume of the last does.
func TestScalesExportOfAScaleAddedLater(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile("../../examples/sim-scales-ib.toml")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "scales.toml")
	for _, scales := range []string{"[2, 4]", "[2, 4, 8]"} {
		if err := os.WriteFile(path, []byte(strings.Replace(string(src), "scales = [2, 4, 8]", "scales = "+scales, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		if code, out, errOut := nccltune(t, dir, "run", "--space", path, "--trials", "4", "--validate-rounds", "2"); code != 0 {
			t.Fatalf("run with scales %s: %d\n%s%s", scales, code, out, errOut)
		}
	}
	// A budget given to the resume of any scale is every scale's.
	if code, out, errOut := nccltune(t, dir, "resume", "--campaign", "sim-scales-ib@2n", "--trials", "5"); code != 0 {
		t.Fatalf("resume --campaign sim-scales-ib@2n: %d\n%s%s", code, out, errOut)
	} else if !strings.Contains(out, `campaign "sim-scales-ib@8n": 5 of 5 trials finished`) {
		t.Errorf("resume --campaign sim-scales-ib@2n --trials 5 did not go on to 8 nodes:\n%s%s", out, errOut)
	}
	for _, name := range []string{"sim-scales-ib@8n", "sim-scales-ib@2n", "sim-scales-ib@4n"} {
		code, out, errOut := nccltune(t, dir, "export", "--campaign", name, "--format", "plugin", "--out", "plugin")
		if code != 0 {
			t.Fatalf("export --campaign %s: %d\n%s%s", name, code, out, errOut)
		}
		rules, err := os.ReadFile(filepath.Join(dir, "plugin", "nccltune.rules"))
		if err != nil {
			t.Fatal(err)
		}
		for _, scale := range []struct{ nodes, ranks string }{{"2", "8"}, {"4", "16"}, {"8", "32"}} {
			if _, err := os.Stat(filepath.Join(dir, "plugin", "nccl-plugin-"+scale.nodes+"n.env")); err != nil {
				t.Errorf("export --campaign %s: %v", name, err)
			}
			if !strings.Contains(string(rules), "# "+scale.nodes+" nodes, range large: ") {
				t.Errorf("export --campaign %s: the rules leave %s nodes out:\n%s", name, scale.nodes, rules)
			}
		}
	}
}
