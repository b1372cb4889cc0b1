// Package search proposes configurations to try and learns from their scores.
// Samplers follow Optuna's ask/tell model: Ask proposes, the tuner runs the
// benchmark, Tell reports; resuming a campaign is telling a fresh sampler every
// stored trial again.
package search

import (
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/nccltune/nccltune/space"
)

// Sampler proposes assignments for a space with one objective per size range
// (higher is better).
type Sampler interface {
	// Ask proposes the assignment for trial number n. The same history, seed
	// and n give the same proposal, so a resumed campaign continues as an
	// uninterrupted one would. ErrExhausted says that every configuration
	// the sampler proposes was told.
	Ask(n int) (space.Assignment, error)
	// Tell reports a finished trial's scores, one per range; nil scores mean it failed.
	Tell(a space.Assignment, scores []float64) error
}

// ErrExhausted is Ask's answer where every configuration the sampler
// proposes was told (the grid's points, a few values of each integer, in a
// space of more): one proposed again would measure nothing new. Its text
// is stored in a campaign's stop reason, by which a resume tells this stop
// from convergence (tuner's TestExhaustedStopsAsStored): keep it.
var ErrExhausted = errors.New("nothing left to propose")

// New returns the named sampler (one of space.Samplers) for sp; a model
// sampler's proposals are repaired where sp's rules refuse most
// configurations (repaired).
func New(name string, sp *space.Space, seed int64) (Sampler, error) {
	s, err := newSampler(name, sp, seed)
	if err != nil || name == "random" || name == "grid" || name == "coordinate" || !mostlyInvalid(sp) {
		// The baselines propose as they are defined to; coordinate
		// descent walks its steps through what it proposed.
		return s, err
	}
	return &repaired{Sampler: s, sp: sp, seed: seed, history: history{sp: sp}}, nil
}

func newSampler(name string, sp *space.Space, seed int64) (Sampler, error) {
	switch name {
	case "tpe-gp":
		t, err := newTPE(sp, seed, true)
		if err != nil {
			return nil, err
		}
		return portfolio{[]Sampler{t, newGP(sp, seed)}, tpeGPTurn}, nil
	case "tpe":
		return newTPE(sp, seed, true)
	case "tpe-independent":
		return newTPE(sp, seed, false)
	case "random":
		return &randomSampler{sp: sp, seed: seed}, nil
	case "grid":
		return newGrid(sp, seed)
	case "gp":
		return newGP(sp, seed), nil
	case "sparse":
		return newSparse(sp, seed)
	case "coordinate":
		return newCoordinate(sp, seed), nil
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
	return draw(r.sp, rng), nil
}

// draw is an assignment of every active parameter drawn by uniform.
func draw(sp *space.Space, rng *rand.Rand) space.Assignment {
	a := space.Assignment{}
	for _, p := range sp.Params {
		if sp.Active(p, a) {
			a[p.Name] = uniform(rng, p)
		}
	}
	return a
}

// uniform draws one value of p, log-uniformly where the space says log.
func uniform(rng *rand.Rand, p space.Param) string {
	switch {
	case p.Categorical():
		return p.Values[rng.IntN(len(p.Values))]
	case p.Log:
		lo, hi := math.Log(float64(p.Min)), math.Log(float64(p.Max)+1)
		return strconv.FormatInt(toInt(p, math.Floor(math.Exp(lo+rng.Float64()*(hi-lo)))), 10)
	default:
		return strconv.FormatInt(p.Min+randInt(rng, p.Max-p.Min), 10)
	}
}

// toInt is v rounded to the nearest integer of p's range (NaN: p.Min).
// Converting a float64 at or past 2^63 to int64 gives no such integer (on
// amd64, the least int64), so the bounds are held in floats before it.
func toInt(p space.Param, v float64) int64 {
	switch v = math.Round(v); {
	case math.IsNaN(v) || v <= float64(p.Min):
		return p.Min
	case v >= float64(p.Max):
		return p.Max
	}
	return int64(v)
}

// randInt draws an integer of [0, n] uniformly, n up to math.MaxInt64,
// where n+1 overflows (rand.Int64N panics on it).
func randInt(rng *rand.Rand, n int64) int64 {
	if n == math.MaxInt64 {
		return int64(rng.Uint64() >> 1)
	}
	return rng.Int64N(n + 1)
}

func (r *randomSampler) Tell(space.Assignment, []float64) error { return nil }

// maxListed bounds the configurations listed to find one untried (untried).
const maxListed = 1 << 14

// untried is a configuration of sp drawn uniformly among those not tried,
// nil where each was; listed is false where they are more than maxListed
// (and a is nil). Samplers take it where their draws found none untried:
// near the end of a small space, twenty draws, or a covering draw's 64,
// mostly find only configurations tried, and one proposed again measures
// nothing new while untried ones remain. In a larger space a draw finds one.
func untried(sp *space.Space, tried func(space.Assignment) bool, rng *rand.Rand) (a space.Assignment, listed bool) {
	all, ok := Enumerate(sp, 0, maxListed)
	if !ok {
		return nil, false
	}
	if all = slices.DeleteFunc(all, tried); len(all) == 0 {
		return nil, true
	}
	return all[rng.IntN(len(all))], true
}

// rotation takes the ranges in turn, one per trial: a sampler that searches
// per range proposes trial n for range rangeFor(n).
type rotation struct {
	ranges int
	focus  []bool // ranges to propose for; nil: all
}

// Focus restricts the proposals to the ranges marked true, in turn; with none
// marked (or never called) every range takes its turn. The tuner leaves out
// the ranges that have settled.
func (r *rotation) Focus(ranges []bool) { r.focus = slices.Clone(ranges) }

// rangeFor is the range trial n proposes for, the focused ones in turn, and
// which of that range's turns it is (0, 1, ...): what kind of proposal a
// sampler makes follows the turn, so that every range gets every kind
// whatever the number of ranges.
func (r *rotation) rangeFor(n int) (rangeIdx, turn int) {
	focused := r.focused()
	return focused[n%len(focused)], n / len(focused)
}

// focused lists the ranges to propose for: those marked, or all if none is.
func (r *rotation) focused() []int {
	var out []int
	for i, on := range r.focus {
		if on {
			out = append(out, i)
		}
	}
	if len(out) == 0 {
		for i := range r.ranges {
			out = append(out, i)
		}
	}
	return out
}

// told is one trial a sampler was told of.
type told struct {
	a      space.Assignment
	scores []float64 // nil for a failed trial
}

// ran reports whether the trial measured range r.
func (t told) ran(r int) bool { return t.scores != nil && t.scores[r] > 0 }

// score is range r's score, -Inf where t did not measure r: the order in
// which a model ranks trials for r, a measured one above any other.
func (t told) score(r int) float64 {
	if t.ran(r) {
		return t.scores[r]
	}
	return math.Inf(-1)
}

// about reports whether t tells range r anything: it ran there, or it
// failed (which says its configuration is to be avoided). A trial that
// ran but left r out (a settled range, out of its sweep) tells r nothing.
func (t told) about(r int) bool { return t.scores == nil || t.ran(r) }

// history is what a sampler was told, in order, in the space searched.
type history struct {
	sp   *space.Space
	told []told
	seen map[string]bool // readingKey of each told assignment
}

// toldOf is a and its scores as every sampler takes them in: an infinite
// score as NaN, a range not measured, so that no model takes it for the
// best, or its log for a number.
func toldOf(a space.Assignment, scores []float64) told {
	scores = slices.Clone(scores)
	for r, s := range scores {
		if math.IsInf(s, 0) {
			scores[r] = math.NaN()
		}
	}
	return told{a: maps.Clone(a), scores: scores}
}

// remember keeps a and its scores (toldOf).
func (h *history) remember(a space.Assignment, scores []float64) {
	h.told = append(h.told, toldOf(a, scores))
	if h.seen == nil {
		h.seen = map[string]bool{}
	}
	h.seen[readingKey(h.sp, a)] = true
}

// tried reports whether a, or one NCCL reads alike (reading), was told
// already; samplers ask it of thousands of candidates a proposal, so it
// looks a up instead of scanning the history.
func (h *history) tried(a space.Assignment) bool { return h.seen[readingKey(h.sp, a)] }

// readingKey identifies an assignment as NCCL reads it: two are equal
// exactly when every parameter's reading is.
func readingKey(sp *space.Space, a space.Assignment) string {
	var b strings.Builder
	for _, p := range sp.Params {
		if v, ok := reading(p, a); ok {
			b.WriteString(p.Name)
			b.WriteByte(0)
			b.WriteString(v)
			b.WriteByte(0)
		}
	}
	return b.String()
}

// reading is the value NCCL reads p's variable as under a, false where NCCL
// chooses: a's value as NCCL reads it (space.Param.NCCLReads: 3 channels as
// 4), or, where NCCL takes one value when the variable is unset
// (space.Param.NCCLDefault), that value for a's "default" and where a
// leaves p out (unset, or switched off by a condition). A configuration that
// differs from another only so runs as it: samplers try it once, and their
// models take it for one point, not two that tell each other nothing.
func reading(p space.Param, a space.Assignment) (string, bool) {
	v, ok := a[p.Name]
	if !ok || v == space.Unset {
		if d, known := p.NCCLDefault(); known {
			return d, true
		}
	}
	if !ok {
		return "", false
	}
	return p.NCCLReads(v), true
}

// localMove changes one parameter of range r's best measured configuration
// to another value, skipping configurations already tried.
func (h *history) localMove(sp *space.Space, r int, rng *rand.Rand) (space.Assignment, bool) {
	best := -1
	for i, t := range h.told {
		if t.ran(r) && (best < 0 || t.score(r) > h.told[best].score(r)) {
			best = i
		}
	}
	if best < 0 {
		return nil, false
	}
	for range 20 {
		a := maps.Clone(h.told[best].a)
		p := sp.Params[rng.IntN(len(sp.Params))]
		if !sp.Active(p, a) {
			continue
		}
		v := neighbour(p, a[p.Name], rng)
		if v == a[p.Name] {
			continue
		}
		a[p.Name] = v
		// Conditions may switch parameters on or off: keep what stays active, draw the rest.
		b := space.Assignment{}
		for _, q := range sp.Params {
			if !sp.Active(q, b) {
				continue
			}
			if val, ok := a[q.Name]; ok {
				b[q.Name] = val
			} else {
				b[q.Name] = uniform(rng, q)
			}
		}
		if !h.tried(b) {
			return b, true
		}
	}
	return nil, false
}
