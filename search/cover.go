package search

import (
	"math/rand/v2"
	"slices"

	"github.com/nccltune/nccltune/space"
)

// coverPoints is how many values of an integer the pairs to cover take.
const coverPoints = 3

// coverDraws is how many random draws a covering draw picks among.
const coverDraws = 64

// coverage is which pairs of values, of two parameters, the trials told so
// far held together. A setting that only pays with another must be tried
// with it before any model can see it; random draws leave many pairs
// untried for long, a draw chosen to hold the most untried pairs leaves
// few: a greedy pairwise design, as Cohen et al.'s AETG builds one, though
// chosen among random draws rather than value by value.
// A parameter is read as NCCL reads it (reading): left out, or "default",
// it holds the value NCCL takes unset where that is one value, else a value
// of its own, "unset": every configuration then holds a pair of every two
// parameters, and a draw that switches parameters off is not passed over
// for holding fewer pairs.
type coverage struct {
	sp    *space.Space
	grids [][]string
	held  map[[4]int]bool // parameter, value index, parameter, value index
}

func newCoverage(sp *space.Space, h *history) *coverage {
	c := &coverage{sp: sp, held: map[[4]int]bool{}}
	for _, p := range sp.Params {
		c.grids = append(c.grids, values(p, coverPoints))
	}
	for _, t := range h.told {
		c.each(t.a, func(k [4]int) { c.held[k] = true })
	}
	return c
}

// each calls f with every pair a holds as NCCL reads it (reading), its
// integers at their nearest grid value; len(grid) stands for NCCL's choice.
func (c *coverage) each(a space.Assignment, f func([4]int)) {
	idx := make([]int, len(c.sp.Params))
	for i, p := range c.sp.Params {
		idx[i] = len(c.grids[i])
		if v, ok := reading(p, a); ok {
			if !p.Categorical() {
				v = nearest(p, c.grids[i], v)
			}
			idx[i] = slices.Index(c.grids[i], v)
		}
	}
	for i := range idx {
		for j := i + 1; j < len(idx); j++ {
			f([4]int{i, idx[i], j, idx[j]})
		}
	}
}

// fresh is how many pairs a holds that no trial held.
func (c *coverage) fresh(a space.Assignment) int {
	n := 0
	c.each(a, func(k [4]int) {
		if !c.held[k] {
			n++
		}
	})
	return n
}

// coveringDraw is the untried draw, of coverDraws, that holds the most
// pairs of values no trial held; where every draw was tried, an untried
// configuration listed (untried).
func coveringDraw(sp *space.Space, h *history, rng *rand.Rand) space.Assignment {
	c := newCoverage(sp, h)
	var best space.Assignment
	most := -1
	for range coverDraws {
		a := draw(sp, rng)
		if h.tried(a) {
			continue
		}
		if n := c.fresh(a); n > most {
			best, most = a, n
		}
	}
	if best == nil {
		if a, _ := untried(sp, h.tried, rng); a != nil {
			return a
		}
		return draw(sp, rng)
	}
	return best
}
