package tuner

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestExportLineRoundTrips is a property test: whatever characters a value
// holds, sourcing the exported line sets exactly that value and runs nothing.
func TestExportLineRoundTrips(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	const alphabet = "abcXYZ019 _-=,;:^$`\"'\\|&*?![](){}<>#~%\t"
	values := []string{"", "'", "''", `'\''`, "$(touch PWNED)", "`touch PWNED`", "a b", "*", "allreduce:tree,ring;allgather:ring", "é€"}
	for range 300 {
		var b strings.Builder
		for range 1 + rng.IntN(24) {
			b.WriteByte(alphabet[rng.IntN(len(alphabet))])
		}
		values = append(values, b.String())
	}
	dir := t.TempDir()
	var file, script bytes.Buffer
	for i, v := range values {
		line, err := ExportLine(fmt.Sprintf("NCCL_T%d", i), v)
		if err != nil {
			t.Fatalf("%q: %v", v, err)
		}
		file.WriteString(line + "\n")
		fmt.Fprintf(&script, "printf '%%s\\0' \"$NCCL_T%d\"\n", i)
	}
	env := filepath.Join(dir, "nccl.env")
	os.WriteFile(env, file.Bytes(), 0o644)
	cmd := exec.Command("bash", "-c", "set -eu; source \"$1\"\n"+script.String(), "bash", env)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if len(got) != len(values) {
		t.Fatalf("%d values back, want %d", len(got), len(values))
	}
	for i := range values {
		if got[i] != values[i] {
			t.Errorf("value %d: sourced %q, exported %q", i, got[i], values[i])
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "PWNED")); err == nil {
		t.Error("sourcing an env file executed a command")
	}
}

func TestExportLineRefuses(t *testing.T) {
	for _, tc := range []struct{ name, value string }{
		{"PATH", "/tmp"}, {"NCCL_X;rm", "1"}, {"nccl_algo", "Ring"}, {"NCCL_ALGO", "a\nb"}, {"NCCL_ALGO", "a\x00"},
	} {
		if line, err := ExportLine(tc.name, tc.value); err == nil {
			t.Errorf("ExportLine(%q, %q) = %q", tc.name, tc.value, line)
		}
	}
}
