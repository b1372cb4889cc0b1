// Package search proposes configurations to try and learns from their scores.
// Samplers follow Optuna's ask/tell model: Ask proposes, the tuner runs the
// benchmark, Tell reports; resuming a campaign is telling a fresh sampler every
// stored trial again.
package search

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/nccltune/nccltune/space"
)

// Sampler proposes assignments for a space with one objective per size range
// (higher is better).
type Sampler interface {
	// Ask proposes the assignment for trial number n. The same history, seed
	// and n give the same proposal, so a resumed campaign continues as an
	// uninterrupted one would.
	Ask(n int) (space.Assignment, error)
	// Tell reports a finished trial's scores, one per range; nil scores mean it failed.
	Tell(a space.Assignment, scores []float64) error
}

// New returns the named sampler ("tpe", "random" or "grid") for sp.
func New(name string, sp *space.Space, seed int64) (Sampler, error) {
	switch name {
	case "tpe":
		return newTPE(sp, seed)
	case "random":
		return &randomSampler{sp: sp, seed: seed}, nil
	case "grid":
		return newGrid(sp, seed)
	}
	return nil, fmt.Errorf("unknown sampler %q (known: %s)", name, strings.Join(space.Samplers, ", "))
}

// trialSeed derives a per-trial seed, so that proposals do not depend on how
// many proposals were made before (which differs after a resume).
func trialSeed(seed int64, n int, salt string) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%d/%s", seed, n, salt)
	return h.Sum64()
}

// randomSampler draws every active parameter uniformly (log-uniformly where
// the space says log); it is the baseline the other samplers must beat.
type randomSampler struct {
	sp   *space.Space
	seed int64
}

func (r *randomSampler) Ask(n int) (space.Assignment, error) {
	rng := rand.New(rand.NewPCG(uint64(r.seed), trialSeed(r.seed, n, "random")))
	a := space.Assignment{}
	for _, p := range r.sp.Params {
		if r.sp.Active(p, a) {
			a[p.Name] = uniform(rng, p)
		}
	}
	return a, nil
}

// uniform draws one value of p, log-uniformly where the space says log.
func uniform(rng *rand.Rand, p space.Param) string {
	switch {
	case p.Categorical():
		return p.Values[rng.IntN(len(p.Values))]
	case p.Log:
		lo, hi := math.Log(float64(p.Min)), math.Log(float64(p.Max)+1)
		v := int64(math.Exp(lo + rng.Float64()*(hi-lo)))
		return strconv.FormatInt(min(max(v, p.Min), p.Max), 10)
	default:
		return strconv.FormatInt(p.Min+rng.Int64N(p.Max-p.Min+1), 10)
	}
}

func (r *randomSampler) Tell(space.Assignment, []float64) error { return nil }
