package tuner

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/nccltune/nccltune/results"
	"github.com/nccltune/nccltune/search"
	"github.com/nccltune/nccltune/space"
	"github.com/nccltune/nccltune/store"
)

// wideCampaign is a finished campaign of the built-in example's
// parameters over 30 ranges: searched search trials of random scores, then
// the simplification run to its end, where each choice's fresh run failed
// by its settings if failChoices (each range's three choices, then none).
func wideCampaign(tb testing.TB, searched int, failChoices bool) (*space.Space, []store.Trial) {
	src, err := os.ReadFile("../examples/sim-2node-ib.toml")
	if err != nil {
		tb.Fatal(err)
	}
	head, params, _ := strings.Cut(string(src), "[benchmark]")
	head, _, _ = strings.Cut(head, "[[range]]")
	head = strings.Replace(head, `sizes = { min = "8", max = "1G", factor = 2 }`, `sizes = { min = "4", max = "4G", factor = 2 }`, 1)
	var ranges strings.Builder
	for i := range 30 {
		fmt.Fprintf(&ranges, "[[range]]\nname = \"r%d\"\nmin = \"%d\"\nmax = \"%d\"\n", i, 4<<i, 8<<i)
	}
	sp := mustParse(tb, "wide.toml", head+ranges.String()+"[benchmark]"+params)
	rng := rand.New(rand.NewPCG(1, 2))
	score := func() map[string]float64 {
		s := map[string]float64{}
		for _, rg := range sp.Ranges {
			s[rg.Name] = 1 + rng.Float64()
		}
		return s
	}
	draws, err := search.New("random", sp, 1)
	if err != nil {
		tb.Fatal(err)
	}
	var trials []store.Trial
	for n := range searched {
		a := space.Assignment{}
		if n >= 2 {
			if a, err = draws.Ask(n); err != nil {
				tb.Fatal(err)
			}
		}
		trials = append(trials, store.Trial{Number: n, State: store.Complete, Phase: store.Search, Params: a, Scores: score()})
	}
	inSearch := map[string]bool{}
	for _, t := range trials {
		inSearch[sp.Reading(t.Params)] = true
	}
	if err := simplification(sp, trials, func(a space.Assignment) (store.Trial, error) {
		t := store.Trial{Number: len(trials), State: store.Complete, Phase: store.Simplification, Params: a, Scores: score()}
		if failChoices && inSearch[sp.Reading(a)] {
			t.State, t.FailureKind, t.Scores = store.Failed, "crash", nil
		}
		trials = append(trials, t)
		return t, nil
	}); err != nil {
		tb.Fatal(err)
	}
	return sp, trials
}

// TestSimplifiedChoosesAsResultsOf: the replay of a simplification whose
// choices' fresh runs failed chose again after each failure with
// results.Of, which fits the model of every complete trial again: 48 s for
// status (simplification_unfinished) on 2,000 trials over 30 ranges
// (BenchmarkSimplifiedWide). A failure changes no estimate, so the model is
// fitted once (results.Rejecting), and the ranges choose as results.Of does.
func TestSimplifiedChoosesAsResultsOf(t *testing.T) {
	sp, trials := wideCampaign(t, 300, true)
	if !Simplified(sp, trials) {
		t.Fatal("not simplified")
	}
	// Chosen again without refitting, as results.Of chooses.
	searched, rejected := trials[:300], slices.DeleteFunc(slices.Clone(trials[300:]), func(t store.Trial) bool { return t.State != store.Failed })
	want, rechoose := results.Of(sp, slices.Concat(searched, rejected), nil), results.Rejecting(sp, searched)
	for i := range want {
		if got := rechoose(i, rejected); got.Best.Number != want[i].Best.Number {
			t.Errorf("range %s: chose trial %d, results.Of %d", want[i].Range.Name, got.Best.Number, want[i].Best.Number)
		}
	}
}

// BenchmarkSimplifiedWide is what status adds to reading such a store of
// 2,000 search trials (simplification_unfinished), beside BenchmarkOfWide,
// what it reads anyway: about 0.8 s and 1 s where the choices failed
// (48 s before the model was fitted once), and 0.5 s.
func BenchmarkSimplifiedWide(b *testing.B) {
	for _, fail := range []bool{false, true} {
		b.Run(fmt.Sprintf("choices-fail=%v", fail), func(b *testing.B) { benchSimplified(b, fail) })
	}
}

func benchSimplified(b *testing.B, failChoices bool) {
	sp, trials := wideCampaign(b, 2000, failChoices)
	b.Logf("%d trials", len(trials))
	for b.Loop() {
		if !Simplified(sp, trials) {
			b.Fatal("not simplified")
		}
	}
}

// BenchmarkOfWide is results.Of on the store BenchmarkSimplifiedWide replays.
func BenchmarkOfWide(b *testing.B) {
	sp, trials := wideCampaign(b, 2000, false)
	for b.Loop() {
		results.Of(sp, trials, nil)
	}
}
