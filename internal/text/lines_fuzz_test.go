package text

import (
	"bufio"
	"bytes"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

func TestLinesAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := 0; iter < 3000; iter++ {
		max := 1 + rng.IntN(20)
		var b strings.Builder
		n := rng.IntN(8)
		for i := 0; i < n; i++ {
			b.WriteString(strings.Repeat("x", rng.IntN(2*max+3)))
			if i < n-1 || rng.IntN(2) == 0 {
				b.WriteByte('\n')
			}
		}
		in := b.String()
		var want []string
		parts := strings.Split(in, "\n")
		if in == "" || strings.HasSuffix(in, "\n") {
			parts = parts[:len(parts)-1]
		}
		for _, p := range parts {
			if len(p) <= max {
				want = append(want, p)
			}
		}
		sc := bufio.NewScanner(iotest.OneByteReader(bytes.NewReader([]byte(in))))
		sc.Buffer(make([]byte, max+1), max+1)
		sc.Split(Lines(max))
		var got []string
		for sc.Scan() {
			got = append(got, sc.Text())
		}
		if sc.Err() != nil || !slices.Equal(got, want) {
			t.Fatalf("max %d %q: got %q (%v), want %q", max, in, got, sc.Err(), want)
		}
	}
}
