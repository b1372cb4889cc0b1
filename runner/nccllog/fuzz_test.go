package nccllog

import (
	"maps"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

var varName = regexp.MustCompile(`^NCCL_[A-Z0-9_]+$`)

// FuzzParse: whatever a benchmark prints, Parse keeps a bounded number of
// decisions and notes, names only NCCL's variables, and a log merged with
// itself says what it said alone.
func FuzzParse(f *testing.F) {
	f.Add(sample)
	f.Add("h:1:1 [0] NCCL INFO AllReduce: 1024 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..3}\n")
	f.Add("h:1:1 [0] NCCL WARN Invalid value x for NCCL_PROTO, using default\nh:1:1 [0] NCCL INFO minCTAs 32 is larger than maxCTAs 16, set both to 16\n")
	f.Add("h:1:1 [0] NCCL INFO NCCL_ALGO set by environment to Ring.\nh:1:1 [1] NCCL INFO NCCL_ALGO set by environment to Tree | ring.\n")
	f.Fuzz(func(t *testing.T, out string) {
		l := Parse([]byte(out))
		if len(l.Decisions) > maxDecisions || len(l.Notes) > maxNotes {
			t.Fatalf("%d decisions and %d notes kept", len(l.Decisions), len(l.Notes))
		}
		for _, m := range []map[string]string{l.Read, l.Rejected} {
			for name := range m {
				if !varName.MatchString(name) {
					t.Fatalf("variable %q", name)
				}
			}
		}
		self := l.Merge(l)
		if !maps.Equal(self.Read, l.Read) || !maps.Equal(self.Rejected, l.Rejected) {
			t.Fatalf("merged with itself:\n read %q, rejected %q\nalone:\n read %q, rejected %q", self.Read, self.Rejected, l.Read, l.Rejected)
		}
	})
}

// TestParseScales: the largest output a trial keeps parses in about a
// second however it is made: a variable read with a different value on
// every line, decisions of every size, one line of megabytes.
func TestParseScales(t *testing.T) {
	if testing.Short() {
		t.Skip("parses large logs")
	}
	const size = 8 << 20 // runner's maxOutput
	lines := func(f func(i int) string) []byte {
		var b strings.Builder
		for i := 0; b.Len() < size; i++ {
			b.WriteString(f(i))
		}
		return []byte(b.String())
	}
	for name, out := range map[string][]byte{
		"values": lines(func(i int) string {
			return "h:1:1 [0] NCCL INFO NCCL_ALGO set by environment to " + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + strconv.Itoa(i) + ".\n"
		}),
		"decisions": lines(func(i int) string {
			return "h:1:1 [0] NCCL INFO AllReduce: " + strconv.Itoa(i%maxDecisions) + " Bytes -> Algo RING proto LL channel{Lo..Hi}={0..3}\n"
		}),
		"one line": []byte(strings.Repeat("NCCL INFO NCCL_ALGO ", size/20)),
		"rejected": lines(func(i int) string { return "h:1:1 [0] NCCL WARN invalid NCCL_A" + strconv.Itoa(i) + "\n" }),
	} {
		start := time.Now()
		Parse(out)
		// 10x what it takes on a slow machine: a blow-up takes minutes.
		if d := time.Since(start); d > 20*time.Second {
			t.Errorf("%s: %d bytes parsed in %v", name, len(out), d)
		}
	}
}
