package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEmptySpaceIsRefused: --space "" (a script's unset "$SPACE") is a
// usage error, not the flag left out: run ran the built-in simulated
// example into the store, and exited 0; doctor checked without a space;
// compare and export took the stored campaign's. --campaign "" likewise
// read the most recent campaign. An empty --store, --out or --plugin is
// too: report and export failed with exit 1 ("mkdir : no such file or
// directory"), plugin build built into the working folder, profile wrote
// to standard output, and export --format plugin named the default plugin.
// So is any other text flag's but --python's and bench search --scenarios',
// whose "" says something.
func TestEmptySpaceIsRefused(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"run", "--space", "", "--trials", "4"},
		{"resume", "--space", ""},
		{"validate", "--space", ""},
		{"export", "--space", ""},
		{"compare", "--space", "", "a.env", "b.env"},
		{"doctor", "--space", "", "--python", ""},
		{"status", "--campaign", ""},
		{"show", "--campaign", "", "0"},
		{"status", "--store", ""},
		{"run", "--store", "", "--trials", "4"},
		{"report", "--out", ""},
		{"export", "--out", ""},
		{"export", "--format", "plugin", "--plugin", ""},
		{"plugin", "build", "--out", ""},
		{"profile", "--out", "", "job.log"},
		{"bench", "search", "--out", ""},
		// Any text flag whose empty value means nothing: run and resume ran
		// the space's sampler, plugin build compiled with cc, bench ran its
		// default samplers' names through as "" was none.
		{"run", "--sampler", "", "--trials", "4"},
		{"resume", "--sampler", ""},
		{"plugin", "build", "--cc", ""},
		{"export", "--format", ""},
		{"bench", "groups", "--groups", ""},
	} {
		code, out, errOut := nccltune(t, dir, args...)
		if code != 2 || !strings.Contains(errOut, "is empty") || strings.Contains(errOut, "built-in example") {
			t.Errorf("nccltune %v: exit %d\n%s%s", args, code, out, errOut)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "nccltune.db")); err == nil {
		t.Error("run --space \"\" made a store")
	}
}
