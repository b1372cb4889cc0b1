package space

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestStoredSizeInAnOlderSpelling: a size that ParseSize read before
// 6b9e11d ("64Ki", "+8") and refuses now is, in a campaign's stored space,
// still the size its trials measured: Parse refuses it, but ParseStored
// keeps it, as it keeps the other checks added since. Read as no size, a
// [[workload]] entry was left out, with its collective's range; where every
// entry was, the space had no range at all.
func TestStoredSizeInAnOlderSpelling(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "examples", "sim-2node-ib-workload.toml"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := Parse("w.toml", data)
	if err != nil {
		t.Fatal(err)
	}
	old := regexp.MustCompile(`(?m)^size = "(\d+)([KMG])"`).ReplaceAllString(string(data), `size = "$1${2}i"`)
	old = strings.Replace(old, `size = "8"`, `size = "+8"`, 1)
	if old == string(data) {
		t.Fatal("no size rewritten")
	}
	if _, err := Parse("w.toml", []byte(old)); err == nil {
		t.Error("Parse accepted the older spellings")
	}
	s, checks, err := ParseStored("w.toml", []byte(old))
	if err != nil || checks == nil {
		t.Fatalf("ParseStored: checks %v, error %v", checks, err)
	}
	if !slices.Equal(s.Workload, want.Workload) || len(s.Ranges) != len(want.Ranges) {
		t.Errorf("stored workload %v, ranges %d; want %v, %d", s.Workload, len(s.Ranges), want.Workload, len(want.Ranges))
	}
}
