package search

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/nccltune/nccltune/space"
)

// wideParams are twenty settings, as a space that searches most of what
// NCCL offers for a multi-node IB job would.
var wideParams = []string{
	`name = "NCCL_ALGO"` + "\n" + `values = ["default", "Ring", "Tree"]`,
	`name = "NCCL_PROTO"` + "\n" + `values = ["default", "LL", "LL128", "Simple"]`,
	`name = "NCCL_MIN_CTAS"` + "\nmin = 1\nmax = 32\nlog = true",
	`name = "NCCL_NCHANNELS_PER_NET_PEER"` + "\nmin = 1\nmax = 16\nlog = true",
	`name = "NCCL_MIN_P2P_NCHANNELS"` + "\nmin = 1\nmax = 32\nlog = true",
	`name = "NCCL_BUFFSIZE"` + "\n" + `values = ["default", "1M", "4M", "16M"]`,
	`name = "NCCL_NTHREADS"` + "\n" + `values = ["default", "256", "512"]`,
	`name = "NCCL_CUMEM_ENABLE"` + "\n" + `values = ["default", "0", "1"]`,
	`name = "NCCL_P2P_NET_CHUNKSIZE"` + "\n" + `values = ["default", "128K", "512K"]`,
	`name = "NCCL_PXN_DISABLE"` + "\n" + `values = ["default", "1"]`,
	`name = "NCCL_NET_GDR_LEVEL"` + "\n" + `values = ["default", "PIX", "PXB", "PHB", "SYS"]`,
	`name = "NCCL_NET_GDR_READ"` + "\n" + `values = ["default", "0", "1"]`,
	`name = "NCCL_NET_SHARED_BUFFERS"` + "\n" + `values = ["default", "0"]`,
	`name = "NCCL_IB_QPS_PER_CONNECTION"` + "\nmin = 1\nmax = 8",
	`name = "NCCL_IB_SPLIT_DATA_ON_QPS"` + "\n" + `values = ["default", "0", "1"]`,
	`name = "NCCL_IB_TIMEOUT"` + "\nmin = 14\nmax = 22",
	`name = "NCCL_IB_ADAPTIVE_ROUTING"` + "\n" + `values = ["default", "0", "1"]`,
	`name = "NCCL_CROSS_NIC"` + "\n" + `values = ["default", "0", "1", "2"]`,
	`name = "NCCL_IB_PCI_RELAXED_ORDERING"` + "\n" + `values = ["default", "0", "1"]`,
	`name = "NCCL_SOCKET_NTHREADS"` + "\nmin = 1\nmax = 4",
}

// wideSpace searches wideParams over three ranges.
func wideSpace(t testing.TB) *space.Space {
	src := "[campaign]\nsizes = { min = \"8\", max = \"64M\", factor = 2 }\n" +
		"[[range]]\nname = \"small\"\nmin = \"8\"\nmax = \"64K\"\n" +
		"[[range]]\nname = \"medium\"\nmin = \"64K\"\nmax = \"4M\"\n" +
		"[[range]]\nname = \"large\"\nmin = \"4M\"\nmax = \"64M\"\n" +
		"[benchmark]\nbinary = \"all_reduce_perf\"\n[[param]]\n" + strings.Join(wideParams, "\n[[param]]\n")
	sp, err := space.Parse("wide.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// rangesSpace searches wideParams over ranges of one size each, from 8
// bytes up, as a sweep whose every size is a range.
func rangesSpace(t testing.TB, ranges int) *space.Space {
	var src strings.Builder
	src.WriteString("[campaign]\nsizes = { min = \"8\", max = \"16G\", factor = 2 }\n")
	for r, lo := 0, 8; r < ranges; r, lo = r+1, lo*2 {
		fmt.Fprintf(&src, "[[range]]\nname = \"r%d\"\nmin = \"%d\"\nmax = \"%d\"\n", r, lo, 2*lo)
	}
	src.WriteString("[benchmark]\nbinary = \"all_reduce_perf\"\n[[param]]\n" + strings.Join(wideParams, "\n[[param]]\n"))
	sp, err := space.Parse("wide.toml", []byte(src.String()))
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// BenchmarkAskWideAt500 is one proposal of each sampler after 500 trials
// told (random configurations with random scores), in a space of twenty
// settings and three ranges: the tuner's overhead per trial where its
// search space is wide. gp's candidates grow with the square of the
// settings.
func BenchmarkAskWideAt500(b *testing.B) {
	askAt500(b, wideSpace(b), []string{"tpe", "gp", "sparse", "tpe-gp"}, func(n int) int { return 500 + n })
}

// BenchmarkAskRangesAt500 is one proposal of each model sampler after 500
// trials told in the wide space searched over 30 ranges, a range per size
// of a sweep: the Gaussian process fits and weighs a model per range, so
// this is where its proposal costs most (tpe-gp: its turn).
func BenchmarkAskRangesAt500(b *testing.B) {
	askAt500(b, rangesSpace(b, 30), []string{"tpe-gp", "gp", "sparse"}, func(n int) int { return 501 + 2*n })
}

// askAt500 benchmarks each sampler's proposal of trial(n) after 500 random
// trials told in sp, each range scored at random.
func askAt500(b *testing.B, sp *space.Space, samplers []string, trial func(n int) int) {
	for _, name := range samplers {
		b.Run(name, func(b *testing.B) {
			s, err := New(name, sp, 1)
			if err != nil {
				b.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			for range 500 {
				scores := make([]float64, len(sp.Ranges))
				for r := range scores {
					scores[r] = 1 + rng.Float64()
				}
				if err := s.Tell(draw(sp, rng), scores); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for n := range b.N {
				if _, err := s.Ask(trial(n)); err != nil {
					b.Fatal(fmt.Errorf("trial %d: %w", trial(n), err))
				}
			}
		})
	}
}

// BenchmarkSparseAskHalfFailing is one proposal of the sparse regression
// after 100 trials told in the wide space, every second one failed: each
// failure's chance is weighed for every neighbour a climb weighs (23 s a
// proposal before the failures kept their suspects among their own units).
func BenchmarkSparseAskHalfFailing(b *testing.B) {
	sp := wideSpace(b)
	s, err := New("sparse", sp, 1)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 100 {
		var scores []float64
		if i%2 == 0 {
			scores = []float64{1 + rng.Float64(), 1 + rng.Float64(), 1 + rng.Float64()}
		}
		if err := s.Tell(draw(sp, rng), scores); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for n := range b.N {
		if _, err := s.Ask(100 + n); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAskHostile is one proposal of each model sampler told a
// history a user could give that the scenarios never do: a resumed
// campaign of 2000 trials, fifty settings, 27 ranges (one per size of a
// sweep), every trial failed, scores alike. A proposal's cost is bounded
// by the trials a model keeps, so it does not grow with the history; it
// grows linearly with the ranges searched (a model each).
func BenchmarkAskHostile(b *testing.B) {
	for _, tc := range []struct {
		name   string
		sp     func(testing.TB) *space.Space
		trials int
		score  func(rng *rand.Rand, ranges int) []float64
	}{
		{"2000 trials", wideSpace, 2000, nil},
		{"50 settings", manySettings, 300, nil},
		{"27 ranges", func(t testing.TB) *space.Space { return rangesSpace(t, 27) }, 300, nil},
		{"2000 failed", wideSpace, 2000, func(*rand.Rand, int) []float64 { return nil }},
		{"2000 alike", wideSpace, 2000, func(_ *rand.Rand, ranges int) []float64 { return slices.Repeat([]float64{1}, ranges) }},
	} {
		sp := tc.sp(b)
		for _, name := range []string{"tpe-gp", "tpe", "gp", "sparse"} {
			b.Run(tc.name+"/"+name, func(b *testing.B) {
				s, err := New(name, sp, 1)
				if err != nil {
					b.Skip(err)
				}
				rng := rand.New(rand.NewPCG(1, 2))
				for range tc.trials {
					scores := make([]float64, len(sp.Ranges))
					for r := range scores {
						scores[r] = 1 + rng.Float64()
					}
					if tc.score != nil {
						scores = tc.score(rng, len(sp.Ranges))
					}
					if err := s.Tell(draw(sp, rng), scores); err != nil {
						b.Fatal(err)
					}
				}
				b.ResetTimer()
				for n := range b.N {
					if _, err := s.Ask(tc.trials + 1 + n); err != nil { // tpe-gp: the Gaussian process's turn
						b.Fatal(err)
					}
				}
			})
		}
	}
}
