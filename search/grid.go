package search

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/nccltune/nccltune/space"
)

// gridPoints is how many values of an integer range the grid visits.
const gridPoints = 4

// maxGrid bounds the grid: beyond it, a budget visits a vanishing share of
// it, and listing it would cost more memory than the campaign.
const maxGrid = 1 << 16

// gridSampler visits the grid of every categorical value and gridPoints
// values of each integer range, in an order shuffled by the seed, so that a
// budget smaller than the grid still spreads over the whole space. A point
// already told (NCCL's defaults, the warm start's, a [[try_first]]) is
// passed over until every point was (as NCCL reads them: a point that only
// spells a told one otherwise is told): trial n takes the first untold point
// from the order's n-th on, and once none is left it is exhausted.
type gridSampler struct {
	sp     *space.Space
	points []space.Assignment
	order  []int
	told   map[string]bool // readingKey of each point told
}

func newGrid(sp *space.Space, seed int64) (*gridSampler, error) {
	points, ok := Enumerate(sp, gridPoints, maxGrid)
	if !ok {
		return nil, fmt.Errorf("sampler grid: the grid has more than %d points; use tpe or random, or search fewer parameters", maxGrid)
	}
	g := &gridSampler{sp: sp, points: points, told: map[string]bool{}}
	g.order = rand.New(rand.NewPCG(uint64(seed), 0x9e3779b9)).Perm(len(g.points))
	return g, nil
}

func (g *gridSampler) Ask(n int) (space.Assignment, error) {
	for i := range g.order {
		if a := g.points[g.order[(n+i)%len(g.order)]]; !g.told[readingKey(g.sp, a)] {
			return a, nil
		}
	}
	if !slices.ContainsFunc(g.sp.Params, func(p space.Param) bool { return !p.Categorical() && p.Max-p.Min >= gridPoints }) {
		return nil, fmt.Errorf("%w: each of the grid's %d points, every configuration of the space, was tried", ErrExhausted, len(g.points))
	}
	return nil, fmt.Errorf("%w: each of the grid's %d points (every value of a categorical or of an integer range of %d at most, %[3]d of a wider one) was tried; another sampler (tpe-gp) searches the values between them", ErrExhausted, len(g.points), gridPoints)
}

func (g *gridSampler) Tell(a space.Assignment, _ []float64) error {
	g.told[readingKey(g.sp, a)] = true
	return nil
}

// Enumerate lists every assignment of sp, honouring conditions, with up to
// intPoints values of each integer range (log- or evenly spaced, ends
// included); intPoints <= 0 takes every integer. It stops, false, once there
// are more than limit.
func Enumerate(sp *space.Space, intPoints, limit int) ([]space.Assignment, bool) {
	var out []space.Assignment
	over := false // an active integer range holds more than limit integers
	var walk func(i int, a space.Assignment)
	walk = func(i int, a space.Assignment) {
		if over || len(out) > limit {
			return
		}
		if i == len(sp.Params) {
			out = append(out, maps.Clone(a))
			return
		}
		p := sp.Params[i]
		if !sp.Active(p, a) {
			walk(i+1, a)
			return
		}
		if intPoints <= 0 && !p.Categorical() && p.Max-p.Min >= int64(limit) {
			over = true // listing its integers (a billion of NCCL_BUFFSIZE) would not fit
			return
		}
		for _, v := range values(p, intPoints) {
			a[p.Name] = v
			walk(i+1, a)
		}
		delete(a, p.Name)
	}
	walk(0, space.Assignment{})
	return out, !over && len(out) <= limit
}

func values(p space.Param, points int) []string {
	if p.Categorical() {
		return p.Values
	}
	var out []string
	add := func(v int64) {
		s := strconv.FormatInt(v, 10)
		if len(out) == 0 || out[len(out)-1] != s {
			out = append(out, s)
		}
	}
	// Max-Min+1 and v++ past Max overflow where Max is math.MaxInt64.
	if points <= 0 || p.Max-p.Min < int64(points) {
		for v := p.Min; ; v++ {
			add(v)
			if v == p.Max {
				return out
			}
		}
	}
	for i := range points {
		f := float64(i) / float64(points-1)
		if p.Log {
			add(toInt(p, math.Exp(math.Log(float64(p.Min))+f*(math.Log(float64(p.Max))-math.Log(float64(p.Min))))))
		} else {
			// The offset from Min in integers: Min+f*(Max-Min) in floats
			// loses the low bits of a bound past 2^53.
			span := p.Max - p.Min
			add(p.Min + toInt(space.Param{Max: span}, f*float64(span)))
		}
	}
	return out
}
