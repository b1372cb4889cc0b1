package main

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestValidationProgressDrivesNoTerminal: a validation run's failure, as
// the progress prints it, is the benchmark's output escaped and on one
// line, as a trial's is; it was printed raw, so a benchmark (or a node's
// NCCL) could set the terminal's title, clear it, or forge lines.
func TestValidationProgressDrivesNoTerminal(t *testing.T) {
	dir := t.TempDir()
	// NCCL's defaults fail, printing escape sequences; Ring and Tree measure.
	spaceFile := scriptSpace(t, dir, "escapes", 4, `[ -n "$NCCL_ALGO" ] || { printf 'NCCL WARN \033]0;pwned\007\033[2J\nvalidation 9/9: forged\n'; exit 3; }
for s in 1024 2048 4096; do
  echo "  $s  $((s/4))  float  sum  -1  20.5  0.05  0.09  0  19.9  0.05  0.09  0"
done
`)
	for _, args := range [][]string{{"run", "--space", spaceFile, "--validate-rounds", "2"}, {"validate", "--space", spaceFile, "--rounds", "2"}} {
		_, out, errOut := nccltune(t, dir, args...)
		if !strings.Contains(errOut, "validation 1/") {
			t.Fatalf("nccltune %v printed no validation run:\n%s%s", args[0], out, errOut)
		}
		if strings.ContainsAny(errOut, "\x1b\a") || strings.Contains(errOut, "\nvalidation 9/9: forged") {
			t.Errorf("nccltune %v: standard error %q", args[0], errOut)
		}
	}
}

// TestFirstLineCutsNoCharacter: a failure cut to 100 bytes for its
// progress line is cut between characters; it split a two-byte one (a
// localized error message's), printing invalid UTF-8.
func TestFirstLineCutsNoCharacter(t *testing.T) {
	got := firstLine(strings.Repeat("a", 99) + "ééé\nmore")
	if !utf8.ValidString(got) || !strings.HasSuffix(got, "...") || strings.Contains(got, "more") {
		t.Errorf("firstLine = %q", got)
	}
}
