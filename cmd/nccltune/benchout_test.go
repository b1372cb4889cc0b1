package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchSearchOutBeforeMeasuring: an --out bench search cannot write is
// refused before the campaigns run, not after them (by default hours of
// them), which lost every result to the plot's write.
func TestBenchSearchOutBeforeMeasuring(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "file"), nil, 0o644)
	code, out, errOut := nccltune(t, dir, "bench", "search", "--scenarios", "2node-tcp", "--seeds", "1", "--trials", "10",
		"--samplers", "random", "--landscapes", "0", "--smooth", "0", "--out", "file/plots")
	if code != 1 || strings.Contains(errOut, "done") || !strings.Contains(errOut, "file") {
		t.Errorf("bench search --out file/plots: exit %d\n%s%s", code, out, errOut)
	}
}

// TestBenchJobUnknownScenario: bench job refuses an unknown scenario as a
// usage error before it runs any, as bench search and bench groups do; it
// ran the scenarios named before it, then failed with exit 1.
func TestBenchJobUnknownScenario(t *testing.T) {
	code, out, errOut := nccltune(t, t.TempDir(), "bench", "job", "--scenarios", "2node-tcp,infiniband", "--seeds", "1", "--trials", "10", "--rounds", "2")
	if code != 2 || !strings.Contains(errOut, `--scenarios: unknown scenario "infiniband"`) {
		t.Errorf("bench job --scenarios 2node-tcp,infiniband: exit %d\n%s%s", code, out, errOut)
	}
}

// TestBenchCampaignFlagsAreUsageErrors: a --noise, --noise-target or
// --patience that each campaign's space would refuse (NaN, negative, past
// the simulator's range) is a usage error before any campaign runs, as a
// bad --pace is; it ran the noise-free enumeration, then failed every
// campaign with exit 1, naming a temporary space file. So is a count
// past what any run could finish (--seeds, --landscapes or --smooth of
// 2000000000, a budget past space.MaxTrials): they crashed, out of memory.
func TestBenchCampaignFlagsAreUsageErrors(t *testing.T) {
	dir := t.TempDir()
	search := []string{"bench", "search", "--scenarios", "2node-tcp", "--seeds", "1", "--trials", "10", "--samplers", "random", "--landscapes", "0", "--smooth", "0"}
	for _, args := range [][]string{
		append(search, "--noise", "NaN"),
		append(search, "--noise", "-1"),
		append(search, "--noise", "0.6"),
		append(search, "--noise-target", "NaN"),
		append(search, "--noise-target", "0.5"),
		append(search, "--patience", "-3"),
		append(search, "--patience", "2"),
		append(search, "--seeds", "2000000000"),
		append(search, "--landscapes", "2000000000"),
		append(search, "--smooth", "2000000000"),
		append(search, "--trials", "100000"),
		{"bench", "job", "--scenarios", "2node-tcp", "--seeds", "2000000000", "--trials", "10", "--rounds", "2"},
		{"bench", "job", "--scenarios", "2node-tcp", "--seeds", "1", "--trials", "100000", "--rounds", "2"},
		{"bench", "groups", "--scenarios", "2node-tcp", "--seeds", "2000000000", "--trials", "10"},
		{"bench", "groups", "--scenarios", "2node-tcp", "--seeds", "1", "--trials", "100000"},
		{"bench", "job", "--scenarios", "2node-tcp", "--seeds", "1", "--trials", "10", "--rounds", "2", "--noise", "NaN"},
		{"bench", "groups", "--scenarios", "2node-tcp", "--seeds", "1", "--trials", "10", "--noise", "-0.1"},
	} {
		code, out, errOut := nccltune(t, dir, args...)
		if code != 2 || strings.Contains(errOut, "done") || strings.Contains(errOut, ".toml") {
			t.Errorf("nccltune %v: exit %d, want 2 before any campaign\n%s%s", args[len(args)-2:], code, out, errOut)
		}
	}
}

// TestBenchNamesTwiceAreUsageErrors: a strategy or scenario named twice is
// refused before any campaign: the second's campaigns repeated the first's
// (the same seeds), and a family's row then held every landscape twice (its
// count doubled, its 90th percentile over the copies), the plot's median
// over scenarios weighed the one named twice double.
func TestBenchNamesTwiceAreUsageErrors(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"bench", "search", "--scenarios", "", "--landscapes", "2", "--smooth", "0", "--seeds", "1", "--trials", "10", "--samplers", "random,random"},
		{"bench", "search", "--scenarios", "2node-tcp,landscape-1,landscape-01", "--landscapes", "0", "--smooth", "0", "--seeds", "1", "--trials", "10", "--samplers", "random"},
		{"bench", "job", "--scenarios", "2node-tcp,2node-tcp", "--seeds", "1", "--trials", "10", "--rounds", "2"},
		{"bench", "groups", "--scenarios", "2node-tcp,2node-tcp", "--seeds", "1", "--trials", "10"},
		// A group count twice ran its campaigns twice, a table row each.
		{"bench", "groups", "--scenarios", "2node-tcp", "--groups", "1,2,02", "--seeds", "1", "--trials", "10"},
	} {
		code, out, errOut := nccltune(t, dir, args...)
		if code != 2 || strings.Contains(errOut, "done") || !strings.Contains(errOut, "twice") {
			t.Errorf("nccltune %v: exit %d, want 2 before any campaign\n%s%s", args, code, out, errOut)
		}
	}
}

// TestBenchSearchTimeAt50OnlyWith50Trials: with fewer than 50 trials the
// time at 50 trials is not known; --json gave the whole campaign's under
// seconds_at_50 and the table under "bench s @50", as if 50 had run.
func TestBenchSearchTimeAt50OnlyWith50Trials(t *testing.T) {
	args := []string{"bench", "search", "--scenarios", "2node-ib-gdr", "--landscapes", "0", "--smooth", "0", "--seeds", "1", "--trials", "10", "--samplers", "random"}
	code, out, errOut := nccltune(t, t.TempDir(), append(args, "--json")...)
	if code != 0 || strings.Contains(out, "seconds_at_50") || !strings.Contains(out, "seconds_total") {
		t.Errorf("--json with 10 trials: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = nccltune(t, t.TempDir(), args...)
	lines := strings.Split(out, "\n")
	if fields := strings.Fields(lines[1]); code != 0 || len(fields) < 2 || fields[len(fields)-2] != "-" {
		t.Errorf("table with 10 trials: exit %d\n%s%s", code, out, errOut)
	}
}

// TestBenchFlagErrorsNameTheirFlag: a bench count out of range was refused
// by one message naming every flag's bounds (`--rounds 1`: "--trials must be
// at least 3, --seeds at least 1, --rounds 2 to 1000"), leaving the user to
// find which of them was wrong; the message names the flag and its value.
func TestBenchFlagErrorsNameTheirFlag(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args       []string
		flag, text string
	}{
		{[]string{"search", "--trials", "9"}, "--trials", "9"},
		{[]string{"search", "--seeds", "0"}, "--seeds", "0"},
		{[]string{"search", "--landscapes", "-1"}, "--landscapes", "-1"},
		{[]string{"search", "--smooth", "-2"}, "--smooth", "-2"},
		{[]string{"job", "--rounds", "1"}, "--rounds", "1"},
		{[]string{"job", "--trials", "2"}, "--trials", "2"},
		{[]string{"job", "--seeds", "-1"}, "--seeds", "-1"},
		{[]string{"groups", "--trials", "5"}, "--trials", "5"},
		{[]string{"groups", "--seeds", "0"}, "--seeds", "0"},
		{[]string{"groups", "--pace", "0"}, "--pace", "0"},
	} {
		args := append([]string{"bench"}, c.args...)
		code, _, errOut := nccltune(t, dir, args...)
		others := 0
		for _, f := range []string{"--trials", "--seeds", "--rounds", "--pace", "--landscapes"} {
			if f != c.flag && strings.Contains(errOut, f) {
				others++
			}
		}
		if code != 2 || !strings.Contains(errOut, c.flag) || !strings.Contains(errOut, "not "+c.text) || others > 0 {
			t.Errorf("nccltune %v: exit %d, stderr %q; want exit 2 and %s's error alone, with its value", args, code, errOut, c.flag)
		}
	}
}

// TestBenchScenarioErrorsNameTheirFlag: an unknown scenario is --scenarios'
// error in every bench command; bench groups alone left the flag unnamed.
func TestBenchScenarioErrorsNameTheirFlag(t *testing.T) {
	dir := t.TempDir()
	for _, cmd := range []string{"search", "job", "groups"} {
		code, _, errOut := nccltune(t, dir, "bench", cmd, "--scenarios", "nope")
		if code != 2 || !strings.Contains(errOut, `--scenarios: unknown scenario "nope"`) {
			t.Errorf("nccltune bench %s --scenarios nope: exit %d, stderr %q; want exit 2 and --scenarios named", cmd, code, errOut)
		}
	}
}
