package search

import (
	"maps"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/nccltune/nccltune/space"
)

// coordinatePoints is how many values of an integer range one coordinate step tries.
const coordinatePoints = 5

// coordinateSampler is coordinate descent per range, as AutoCCL tunes NCCL:
// from NCCL's defaults, one parameter at a time (in the space's order), try
// each of its values with the others held, keep the best, go on to the next;
// a whole pass that changes nothing has converged, and the rest of the
// budget is drawn at random. It keeps no state of its own: each proposal
// replays the descent over what it was told, so a resumed campaign, or one
// told pending trials as failed, proposes as an uninterrupted one would.
type coordinateSampler struct {
	sp   *space.Space
	seed int64
	rotation
	scores map[string][]float64 // per configuration (readingKey: as NCCL reads it), the scores told, summed in logs per range
	// runs counts, per configuration and range, the trials that told the
	// range something (told.about): a failure does, a trial that left the
	// range out (NaN: it had settled) or scored it infinite does not.
	runs  map[string][]int
	start space.Assignment // NCCL's defaults
}

func newCoordinate(sp *space.Space, seed int64) *coordinateSampler {
	start, _, _ := sp.Complete(nil)
	return &coordinateSampler{sp: sp, seed: seed, rotation: rotation{ranges: len(sp.Ranges)},
		scores: map[string][]float64{}, runs: map[string][]int{}, start: start}
}

func (c *coordinateSampler) Tell(a space.Assignment, scores []float64) error {
	key := readingKey(c.sp, a)
	sum, runs := c.scores[key], c.runs[key]
	if sum == nil {
		sum, runs = make([]float64, len(c.sp.Ranges)), make([]int, len(c.sp.Ranges))
	}
	t := toldOf(a, scores)
	for r := range sum {
		switch {
		case t.ran(r):
			sum[r], runs[r] = sum[r]+math.Log(t.scores[r]), runs[r]+1
		case t.about(r): // a failure
			sum[r], runs[r] = math.Inf(-1), runs[r]+1
		}
	}
	c.scores[key], c.runs[key] = sum, runs
	return nil
}

// score is range r's mean log score of a, and whether a was told at all.
// One told but measured nothing of r scores -Inf: proposing it again would
// measure nothing again, so the descent passes it over.
func (c *coordinateSampler) score(a space.Assignment, r int) (float64, bool) {
	key := readingKey(c.sp, a)
	switch runs := c.runs[key]; {
	case runs == nil:
		return 0, false
	case runs[r] == 0:
		return math.Inf(-1), true
	}
	return c.scores[key][r] / float64(c.runs[key][r]), true
}

func (c *coordinateSampler) Ask(n int) (space.Assignment, error) {
	r, _ := c.rangeFor(n)
	base := c.start
	if _, told := c.score(base, r); !told {
		return base, nil
	}
	for unchanged := 0; unchanged < len(c.sp.Params); {
		for _, p := range c.sp.Params {
			if !c.sp.Active(p, base) {
				unchanged++
				continue
			}
			best := base
			bestScore, _ := c.score(base, r)
			for _, v := range values(p, coordinatePoints) {
				a := withValue(c.sp, base, p.Name, v)
				s, told := c.score(a, r)
				if !told {
					return a, nil
				}
				if s > bestScore {
					best, bestScore = a, s
				}
			}
			if readingKey(c.sp, best) == readingKey(c.sp, base) {
				unchanged++
			} else {
				base, unchanged = best, 0
			}
			if unchanged >= len(c.sp.Params) {
				break
			}
		}
	}
	// Converged: a local optimum of every coordinate. The budget left goes to random draws, untried ones.
	told := func(a space.Assignment) bool { _, ok := c.runs[readingKey(c.sp, a)]; return ok }
	var a space.Assignment
	for attempt := range 20 {
		if a, _ = (&randomSampler{sp: c.sp, seed: c.seed + int64(attempt)}).Ask(n); !told(a) {
			return a, nil
		}
	}
	if b, _ := untried(c.sp, told, rand.New(rand.NewPCG(uint64(c.seed), trialSeed(c.seed, n, "untried")))); b != nil {
		return b, nil
	}
	return a, nil
}

// withValue is a with parameter name set to v, and the parameters a condition
// switches on by that given NCCL's default where they offer it, else their
// first value.
func withValue(sp *space.Space, a space.Assignment, name, v string) space.Assignment {
	values := maps.Clone(map[string]string(a))
	values[name] = v
	for {
		out, unset, _ := sp.Complete(values)
		if len(unset) == 0 {
			return out
		}
		for _, p := range sp.Params {
			if slices.Contains(unset, p.Name) {
				values[p.Name] = p.Values[0]
			}
		}
	}
}
