package search

import (
	"fmt"
	"math/rand/v2"

	"github.com/nccltune/nccltune/space"
)

// invalidDraws is how many uniform draws tell whether a space's rules
// refuse most of its configurations (mostlyInvalid).
const invalidDraws = 200

// mostlyInvalid reports whether the space's rules (space.Check: NCCL_MIN_CTAS
// above NCCL_MAX_CTAS, a chunk above an eighth of the buffer) refuse more
// than half of its configurations that none of their settings is refused
// in on its own, as drawn uniformly with a fixed seed. A setting
// refused on its own (Tree for all-gather, in a workload's NCCL_ALGO per
// collective: 56% of the example's space) fails as any other setting
// does, and the models learn it as they learn those; the rules over a
// pair of settings are what they learn too slowly.
func mostlyInvalid(sp *space.Space) bool {
	rng := rand.New(rand.NewPCG(1, 2))
	alone := map[[2]string]bool{} // per setting drawn: refused on its own
	refusedAlone := func(a space.Assignment) bool {
		for name, v := range a {
			k := [2]string{name, v}
			if _, ok := alone[k]; !ok {
				alone[k] = sp.Check(space.Assignment{name: v}) != nil
			}
			if alone[k] {
				return true
			}
		}
		return false
	}
	// Among the draws no setting refuses alone, which the models come to
	// once they learned those settings: counted over every draw, a pair
	// rule refusing most of them read as a few beside such a setting.
	refused, clean := 0, 0
	for range invalidDraws {
		a := draw(sp, rng)
		if refusedAlone(a) {
			continue
		}
		clean++
		if sp.Check(a) != nil {
			refused++
		}
	}
	return refused > clean/2
}

// repaired is a model sampler in a space whose rules refuse most
// configurations. A configuration refused is recorded invalid without a
// launch, but as a trial of the budget, so that the model learns from it;
// where most are refused the models learn too slowly (TPE, one setting at
// a time, never learns a pair: 27 of a campaign's 28 proposals refused),
// and a campaign measures almost nothing. A proposal refused is repaired:
// one of its settings changed, else an untried draw the rules take; none
// left, the sampler is exhausted. Where
// the rules refuse a few configurations (TCP's sockets) the samplers are
// not wrapped, and learn from them as before.
type repaired struct {
	Sampler
	sp   *space.Space
	seed int64
	history
}

func (r *repaired) Tell(a space.Assignment, scores []float64) error {
	r.remember(a, scores)
	return r.Sampler.Tell(a, scores)
}

// Focus passes the ranges to propose for on to the sampler, if it takes them.
func (r *repaired) Focus(ranges []bool) {
	if f, ok := r.Sampler.(interface{ Focus([]bool) }); ok {
		f.Focus(ranges)
	}
}

func (r *repaired) Ask(n int) (space.Assignment, error) {
	a, err := r.Sampler.Ask(n)
	if err != nil || r.sp.Check(a) == nil {
		return a, err
	}
	rng := rand.New(rand.NewPCG(uint64(r.seed), trialSeed(r.seed, n, "repair")))
	runs := func(b space.Assignment) bool { return r.sp.Check(b) == nil && !r.tried(b) }
	for _, i := range rng.Perm(len(r.sp.Params)) {
		p := r.sp.Params[i]
		if !r.sp.Active(p, a) {
			continue
		}
		for _, v := range values(p, gpGridPoints) {
			if b := withValue(r.sp, a, p.Name, v); runs(b) {
				return b, nil
			}
		}
	}
	for range invalidDraws {
		if b := draw(r.sp, rng); runs(b) {
			return b, nil
		}
	}
	b, listed := untried(r.sp, func(b space.Assignment) bool { return !runs(b) }, rng)
	switch {
	case b != nil:
		return b, nil
	case listed:
		return nil, fmt.Errorf("%w: every configuration NCCL runs as written was tried (it overrides the others' settings)", ErrExhausted)
	}
	return a, nil // too many to list: recorded invalid, it costs no launch
}
