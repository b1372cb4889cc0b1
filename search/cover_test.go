package search

import (
	"math/rand/v2"
	"testing"

	"github.com/nccltune/nccltune/space"
)

// allPairs is how many pairs of values (integers at coverPoints points)
// the test space offers: NCCL_IB_QPS_PER_CONNECTION only with Ring.
const allPairs = 3*4 + 3*3 + 4*3 + 1*3 + 4*3 + 3*3

// TestCoveringDrawsHoldUntriedPairs: drawing to hold the most pairs of
// values no trial held, a start-up holds every pair of the test space in
// about the fewest trials that can (20: the 12 pairs of a protocol and a
// QP count need 12 trials with Ring, and default and Tree need 4
// protocols each), and in far fewer than uniform draws (64 to 197 here);
// a covering draw holds no fewer untried pairs than the draws it was
// chosen among.
func TestCoveringDrawsHoldUntriedPairs(t *testing.T) {
	sp := loadSpace(t)
	trialsToCover := func(seed uint64, next func(h *history, rng *rand.Rand) space.Assignment) int {
		var h history
		rng := rand.New(rand.NewPCG(seed, 1))
		for n := 1; n <= 200; n++ {
			h.remember(next(&h, rng), nil)
			if c := newCoverage(sp, &h); len(c.held) == allPairs {
				return n
			} else if len(c.held) > allPairs {
				t.Fatalf("%d pairs held, the space has %d", len(c.held), allPairs)
			}
		}
		return 200
	}
	covering := func(h *history, rng *rand.Rand) space.Assignment { return coveringDraw(sp, h, rng) }
	uniform := func(_ *history, rng *rand.Rand) space.Assignment { return draw(sp, rng) }
	for seed := range uint64(5) {
		c, u := trialsToCover(seed, covering), trialsToCover(seed, uniform)
		if c > 22 || 2*c > u {
			t.Errorf("seed %d: every pair held after %d covering draws and %d uniform ones", seed, c, u)
		}
	}

	var h history
	h.remember(space.Assignment{"NCCL_ALGO": "Tree", "NCCL_PROTO": "LL", "NCCL_MIN_CTAS": "6"}, []float64{1, 1})
	c := newCoverage(sp, &h)
	for _, tc := range []struct {
		a    space.Assignment
		want int
	}{
		{space.Assignment{"NCCL_ALGO": "Tree", "NCCL_PROTO": "LL", "NCCL_MIN_CTAS": "5"}, 0}, // 5 is nearest the grid's 6
		{space.Assignment{"NCCL_ALGO": "Tree", "NCCL_PROTO": "LL", "NCCL_MIN_CTAS": "32"}, 2},
		{space.Assignment{"NCCL_ALGO": "Ring", "NCCL_PROTO": "LL", "NCCL_MIN_CTAS": "6", "NCCL_IB_QPS_PER_CONNECTION": "1"}, 5},
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
