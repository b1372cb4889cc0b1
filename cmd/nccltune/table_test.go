package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rivo/uniseg"

	"github.com/nccltune/nccltune/results"
	"github.com/nccltune/nccltune/store"
)

// TestTableOfWideCharacters: status's table lines up on a terminal where a
// cell holds characters two columns wide (a metric's unit in Chinese, a
// value) or a combining accent. text/tabwriter counts runes, so the header
// over such a unit, and the settings of such a value, stood out of line.
func TestTableOfWideCharacters(t *testing.T) {
	dir := t.TempDir()
	bench := filepath.Join(dir, "step.sh")
	spaceFile := filepath.Join(dir, "space.toml")
	script := "#!/bin/sh\n[ -n \"$NCCL_SOCKET_IFNAME\" ] && echo 'step: 20' || echo 'step: 10'\n"
	if err := os.WriteFile(bench, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(spaceFile, []byte(`[campaign]
name = "wide"
trials = 4
[benchmark]
kind = "command"
command = ["`+bench+`"]
metric = { regex = 'step: ([0-9]+)', goal = "max", unit = "毫秒" }
timeout = "10s"
[[param]]
name = "NCCL_SOCKET_IFNAME"
values = ["网卡0", "eth`+"e\u0301"+`"]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := nccltune(t, dir, "run", "-q", "--space", spaceFile, "--no-validate", "--no-simplify"); code != 0 {
		t.Fatalf("run exited %d\n%s%s", code, out, errOut)
	}
	_, out, _ := nccltune(t, dir, "status")
	var widths []int
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "  range") || strings.HasPrefix(line, "   step") {
			widths = append(widths, uniseg.StringWidth(line))
		}
	}
	if len(widths) != 2 || widths[0] != widths[1] {
		t.Errorf("the table's lines are %v columns wide:\n%s", widths, out)
	}
}

// TestTableOfEscapedCharacters: a cell that quotes a benchmark's output
// (compare's verdict of a failed run) may hold a control character, which
// the terminal's writer shows escaped (\u001b): its column lines up as
// shown, not as the character it was.
func TestTableOfEscapedCharacters(t *testing.T) {
	var b strings.Builder
	tw := newTable(terminal{&b})
	for _, cell := range []string{"verdict", "failed: \x1b[31mcuda\r", "bad \xff byte"} {
		fmt.Fprintf(tw, "range\t%s\t1\t\n", cell)
	}
	if err := tw.Flush(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	for _, l := range lines {
		if uniseg.StringWidth(l) != uniseg.StringWidth(lines[0]) || !utf8.ValidString(l) {
			t.Errorf("the table's lines are not alike in width:\n%s", b.String())
			break
		}
	}
}

// TestValidatedCellWhereTheDefaultsFailed: a range that validation kept
// tuned because NCCL's defaults failed there has no gain to show; its
// cell said "defaults kept", the opposite of what is exported.
func TestValidatedCellWhereTheDefaultsFailed(t *testing.T) {
	v := store.Validation{Verdict: "tuned", Gain: math.NaN(), CILow: math.NaN(), CIHigh: math.NaN()}
	if got := validated(results.RangeResult{Validation: &v}); strings.Contains(got, "defaults kept") || !strings.Contains(got, "defaults failed") {
		t.Errorf("tuned where the defaults failed: %q", got)
	}
	v.Verdict = "default"
	if got := validated(results.RangeResult{Validation: &v}); got != "defaults kept" {
		t.Errorf("defaults kept without a gain: %q", got)
	}
}
