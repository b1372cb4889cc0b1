package report

import (
	"math/rand/v2"
	"testing"

	"github.com/nccltune/nccltune/results"
	"github.com/nccltune/nccltune/runner/nccltests"
	"github.com/nccltune/nccltune/search"
	"github.com/nccltune/nccltune/space"
	"github.com/nccltune/nccltune/store"
)

// BenchmarkWriteOf10kTrials: the plots of a campaign of 10,000 trials of
// the built-in example, each a sweep of 28 sizes.
func BenchmarkWriteOf10kTrials(b *testing.B) {
	sp, err := space.Load("../examples/sim-2node-ib.toml")
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	draws, err := search.New("random", sp, 1)
	if err != nil {
		b.Fatal(err)
	}
	trials := make([]store.Trial, 10000)
	for n := range trials {
		a := space.Assignment{}
		if n >= 2 {
			if a, err = draws.Ask(n); err != nil {
				b.Fatal(err)
			}
		}
		t := store.Trial{Number: n, State: store.Complete, Phase: store.Search, Params: a, Env: sp.Env(a)}
		slow := 1 + rng.Float64()
		for _, size := range sp.Sizes.List() {
			m := nccltests.Measure{TimeUs: 5 + slow*float64(size)/1e5, AlgBW: 2, BusBW: 3}
			t.Rows = append(t.Rows, nccltests.Row{Size: size, OutOfPlace: m, InPlace: m})
		}
		t.Scores = map[string]float64{}
		for i, s := range results.Scores(sp, t.Rows, sp.LaunchRanks()) {
			t.Scores[sp.Ranges[i].Name] = s
		}
		trials[n] = t
	}
	choices := results.Of(sp, trials, nil)
	dir := b.TempDir()
	for b.Loop() {
		if _, err := Write(sp, choices, trials, dir, ""); err != nil {
			b.Fatal(err)
		}
	}
}
