package space

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestWordsOfAreTheExpressions: wordsOf finds in a line what the regular
// expression of its words found, on random lines of the characters a
// space file's lines hold and a few others (multibyte, invalid UTF-8).
func TestWordsOfAreTheExpressions(t *testing.T) {
	re := regexp.MustCompile(`[A-Za-z0-9_-]+`)
	alphabet := []string{"a", "Z", "9", "_", "-", ".", "=", " ", "\t", "[", "]", `"`, "'", `\`, "#", "é", "\xff", "{", ","}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		var b strings.Builder
		for range rng.IntN(40) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		line := b.String()
		if got, want := slices.Collect(wordsOf(line)), re.FindAllString(line, -1); !slices.Equal(got, want) {
			t.Fatalf("words of %q: %q, the expression's %q", line, got, want)
		}
	}
}

// BenchmarkParseWorkload is loading a space of 100,000 [[workload]] tables,
// a long job's profile.
func BenchmarkParseWorkload(b *testing.B) {
	var src strings.Builder
	src.WriteString("[benchmark]\nbinary = \"all_reduce_perf\"\ngpus = 16\n[[param]]\nname = \"NCCL_ALGO\"\nvalues = [\"default\", \"Ring\"]\n")
	colls := []string{"all_reduce", "all_gather", "reduce_scatter"}
	for i := range 100000 {
		fmt.Fprintf(&src, "[[workload]]\ncollective = %q\nsize = \"%d\"\ncount = %d\nranks = 16\n", colls[i%3], 1024*(1+i%4096), 1+i%7)
	}
	data := []byte(src.String())
	b.ResetTimer()
	for range b.N {
		if _, err := Parse("w.toml", data); err != nil {
			b.Fatal(err)
		}
	}
}
