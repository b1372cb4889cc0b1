package search

import (
	"math/rand/v2"
	"testing"

	"github.com/nccltune/nccltune/space"
)

// pairsOf is how many pairs of values the configurations hold, integers
// at coverPoints points and a parameter left out as unset.
func pairsOf(sp *space.Space, as []space.Assignment) int {
	h := history{sp: sp}
	for _, a := range as {
		h.remember(a, nil)
	}
	return len(newCoverage(sp, &h).held)
}

// TestCoveringDrawsHoldUntriedPairs: drawing to hold the most pairs of
// values no trial held, a start-up holds every pair of the test space in
// a few more trials than the fewest that can (20: the 12 pairs of a
// protocol and a QP count need 12 trials with Ring, and default and Tree
// need 4 protocols each), and in far fewer than uniform draws; a covering draw
// holds no fewer untried pairs than the draws it was chosen among.
func TestCoveringDrawsHoldUntriedPairs(t *testing.T) {
	sp := loadSpace(t)
	every, _ := Enumerate(sp, coverPoints, 1<<20)
	all := pairsOf(sp, every)
	trialsToCover := func(seed uint64, next func(h *history, rng *rand.Rand) space.Assignment) int {
		h := history{sp: sp}
		rng := rand.New(rand.NewPCG(seed, 1))
		for n := 1; n <= 300; n++ {
			h.remember(next(&h, rng), nil)
			if held := len(newCoverage(sp, &h).held); held == all {
				return n
			} else if held > all {
				t.Fatalf("%d pairs held, the space has %d", held, all)
			}
		}
		return 300
	}
	covering := func(h *history, rng *rand.Rand) space.Assignment { return coveringDraw(sp, h, rng) }
	uniform := func(_ *history, rng *rand.Rand) space.Assignment { return draw(sp, rng) }
	for seed := range uint64(5) {
		c, u := trialsToCover(seed, covering), trialsToCover(seed, uniform)
		if c > 24 || 2*c > u {
			t.Errorf("seed %d: every pair held after %d covering draws and %d uniform ones", seed, c, u)
		}
	}

	h := history{sp: sp}
	h.remember(space.Assignment{"NCCL_ALGO": "Tree", "NCCL_PROTO": "LL", "NCCL_MIN_CTAS": "6"}, []float64{1, 1})
	c := newCoverage(sp, &h)
	for _, tc := range []struct {
		a    space.Assignment
		want int
	}{
		{space.Assignment{"NCCL_ALGO": "Tree", "NCCL_PROTO": "LL", "NCCL_MIN_CTAS": "5"}, 0}, // 5 is nearest the grid's 6
		{space.Assignment{"NCCL_ALGO": "Tree", "NCCL_PROTO": "LL", "NCCL_MIN_CTAS": "32"}, 3},
		{space.Assignment{"NCCL_ALGO": "default", "NCCL_PROTO": "LL", "NCCL_MIN_CTAS": "6"}, 3}, // with LL, 6 and QPs unset
		{space.Assignment{"NCCL_ALGO": "Ring", "NCCL_PROTO": "LL", "NCCL_MIN_CTAS": "6", "NCCL_IB_QPS_PER_CONNECTION": "8"}, 5},
		// NCCL takes 1 queue pair per connection unset: 1 is the pairs of the trial that left it out.
		{space.Assignment{"NCCL_ALGO": "Ring", "NCCL_PROTO": "LL", "NCCL_MIN_CTAS": "6", "NCCL_IB_QPS_PER_CONNECTION": "1"}, 3},
	} {
		if got := c.fresh(tc.a); got != tc.want {
			t.Errorf("%v holds %d untried pairs, want %d", tc.a, got, tc.want)
		}
	}
	rng := rand.New(rand.NewPCG(7, 7))
	a := coveringDraw(sp, &h, rand.New(rand.NewPCG(7, 7)))
	for range coverDraws {
		if b := draw(sp, rng); c.fresh(b) > c.fresh(a) {
			t.Fatalf("covering draw %v holds %d untried pairs, a draw it was chosen among %v %d", a, c.fresh(a), b, c.fresh(b))
		}
	}
}

// TestCoveringDrawsKeepValuesThatSwitchParametersOff: a value that
// switches a parameter off (any algorithm but Ring switches off the QP
// count) is not passed over for the pairs the parameter would add (it
// was: 1 of 800 start-up draws was not Ring). It is drawn less often than
// uniformly (two in three), as a design holding every pair needs: 8 of
// its 20 trials.
func TestCoveringDrawsKeepValuesThatSwitchParametersOff(t *testing.T) {
	sp := loadSpace(t)
	notRing, draws := 0, 0
	for seed := range uint64(200) {
		h := history{sp: sp}
		h.remember(space.Assignment{"NCCL_ALGO": "default", "NCCL_PROTO": "default"}, []float64{1, 1}) // NCCL's defaults
		rng := rand.New(rand.NewPCG(seed, 3))
		for range 4 {
			a := coveringDraw(sp, &h, rng)
			if a["NCCL_ALGO"] != "Ring" {
				notRing++
			}
			draws++
			h.remember(a, []float64{1, 1})
		}
	}
	if 4*notRing < draws {
		t.Errorf("%d of %d covering draws switch the QP count off", notRing, draws)
	}
}

// TestGPStartsWithCoveringDraws: the Gaussian process's start-up
// proposals hold more pairs of values than as many uniform draws.
func TestGPStartsWithCoveringDraws(t *testing.T) {
	sp := loadSpace(t)
	gpPairs, uniformPairs := 0, 0
	for seed := range int64(20) {
		g := newGP(sp, seed)
		var proposed, drawn []space.Assignment
		rng := rand.New(rand.NewPCG(uint64(seed), 5))
		for n := range startupTrials {
			a, err := g.Ask(n)
			if err != nil {
				t.Fatal(err)
			}
			g.Tell(a, objective(a))
			proposed, drawn = append(proposed, a), append(drawn, draw(sp, rng))
		}
		gpPairs += pairsOf(sp, proposed)
		uniformPairs += pairsOf(sp, drawn)
	}
	if 10*gpPairs < 12*uniformPairs {
		t.Errorf("the Gaussian process's start-ups hold %d pairs, uniform draws %d", gpPairs, uniformPairs)
	}
}
