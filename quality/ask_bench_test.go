package quality

import (
	"math/rand/v2"
	"testing"

	"github.com/nccltune/nccltune/search"
	"github.com/nccltune/nccltune/space"
)

// BenchmarkAskOnLandscapeAt500 is one proposal of each model after 500
// trials told, in the generated landscapes' space (seven settings, three
// ranges): the tuner's overhead per trial where the models are largest.
func BenchmarkAskOnLandscapeAt500(b *testing.B) {
	p, err := prepare(Landscape(1))
	if err != nil {
		b.Fatal(err)
	}
	for _, name := range []string{"tpe", "gp", "sparse"} {
		b.Run(name, func(b *testing.B) {
			s, err := search.New(name, p.sp, 1)
			if err != nil {
				b.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			for n := range 500 {
				a, err := s.Ask(n)
				if err != nil {
					b.Fatal(err)
				}
				if err := s.Tell(a, []float64{1 + rng.Float64(), 1 + rng.Float64(), 1 + rng.Float64()}); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for n := range b.N {
				if _, err := s.Ask(500 + n); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEstimateOnLandscapeAt500 is the model results.Of chooses by,
// fitted on 500 trials and estimating each, in the same space: what a
// status, report or export adds to reading the store.
func BenchmarkEstimateOnLandscapeAt500(b *testing.B) {
	p, err := prepare(Landscape(1))
	if err != nil {
		b.Fatal(err)
	}
	s, err := search.New("random", p.sp, 1)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var as []space.Assignment
	var scores [][]float64
	for n := range 500 {
		a, err := s.Ask(n)
		if err != nil {
			b.Fatal(err)
		}
		as, scores = append(as, a), append(scores, []float64{1 + rng.Float64(), 1 + rng.Float64(), 1 + rng.Float64()})
	}
	b.ResetTimer()
	for range b.N {
		search.Estimate(p.sp, as, scores)
	}
}
