package search

import (
	"fmt"
	mathrand "math/rand"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/c-bata/goptuna"
	"github.com/c-bata/goptuna/tpe"
	"github.com/nccltune/nccltune/space"
)

// tpeSampler is Tree-structured Parzen Estimators. Independent (goptuna's
// TPE), it models each parameter on its own and keeps one goptuna study per
// size range; multivariate, every second of its model's proposals is drawn
// from the joint density of the range's good trials instead (see
// multivariate.go), which finds settings that only pay together. Trial n is proposed by
// the study of range n mod R, and every finished trial is told to all studies
// with that range's score: one launch measures every range, so every range's
// model learns from it (all but that of a range it left out, which it tells
// nothing).
type tpeSampler struct {
	seed     int64
	studies  []*goptuna.Study
	observed map[string]int // told trials that set each parameter
	history                 // for local moves around the best
	rotation
	multivariate bool
}

// localEvery makes every localEvery-th proposal after the start-up a local
// move: the range's best configuration so far with one parameter changed.
// TPE models each parameter on its own, so it is slow to find optima that
// need two or three settings changed together (the right RoCE GID index and
// a non-default algorithm and more QPs); a move from the best supplies the
// combination, and TPE still steers the other proposals.
const localEvery = 2

// startupTrials is how many observations of a parameter are drawn at random
// before TPE models it (goptuna's own start-up draw is not seeded for
// categorical parameters, and never draws an integer's upper bound, so it
// is ours), and how many trials are told before the Gaussian process and
// the sparse regression model them (the process's draws covering pairs of
// values, cover.go).
const startupTrials = 10

var globalRandMu sync.Mutex

func newTPE(sp *space.Space, seed int64, multivariate bool) (*tpeSampler, error) {
	t := &tpeSampler{history: history{sp: sp}, seed: seed, observed: map[string]int{}, rotation: rotation{ranges: len(sp.Ranges)}, multivariate: multivariate}
	for _, r := range sp.Ranges {
		st, err := goptuna.CreateStudy(r.Name,
			goptuna.StudyOptionDirection(goptuna.StudyDirectionMaximize),
			goptuna.StudyOptionLogger(nil))
		if err != nil {
			return nil, fmt.Errorf("tpe: %w", err)
		}
		t.studies = append(t.studies, st)
	}
	return t, nil
}

func (t *tpeSampler) Ask(n int) (space.Assignment, error) {
	a, err := t.ask(n)
	if err != nil || !t.tried(a) {
		return a, err
	}
	// Settled on a range's best, TPE's densities draw it again and again, and
	// a configuration told already measures nothing new: a local move from the
	// best instead, or where its neighbours were all tried, a draw untried
	// (untried: one listed where the draws find none).
	r, _ := t.rangeFor(n)
	rng := rand.New(rand.NewPCG(uint64(t.seed), trialSeed(t.seed, n, "untried")))
	if b, ok := t.localMove(t.sp, r, rng); ok {
		return b, nil
	}
	for range 20 {
		if b := draw(t.sp, rng); !t.tried(b) {
			return b, nil
		}
	}
	if b, _ := untried(t.sp, t.tried, rng); b != nil {
		return b, nil
	}
	return a, nil
}

// ask is TPE's proposal for trial n, tried or not.
func (t *tpeSampler) ask(n int) (space.Assignment, error) {
	r, turn := t.rangeFor(n)
	st := t.studies[r]
	if len(t.told) >= startupTrials && turn%localEvery == 0 {
		rng := rand.New(rand.NewPCG(uint64(t.seed), trialSeed(t.seed, n, "local")))
		if a, ok := t.localMove(t.sp, r, rng); ok {
			return a, nil
		}
	}
	if t.multivariate && turn%(2*localEvery) == 1 {
		rng := rand.New(rand.NewPCG(uint64(t.seed), trialSeed(t.seed, n, "multivariate")))
		if a, ok := t.propose(r, rng); ok {
			return a, nil
		}
	}
	// A fresh sampler seeded for this trial: TPE's only state is its random source.
	seed := trialSeed(t.seed, n, "tpe")
	sampler := tpe.NewSampler(tpe.SamplerOptionSeed(int64(seed>>1)), tpe.SamplerOptionNumberOfStartupTrials(0))
	rng := rand.New(rand.NewPCG(uint64(t.seed), seed))
	// goptuna's TPE also draws from math/rand's global source (its Parzen mixture
	// and categorical draws); seed that too, or no proposal could be repeated.
	// go.mod's "godebug randseednop=0" keeps rand.Seed working on Go >= 1.24.
	globalRandMu.Lock()
	defer globalRandMu.Unlock()
	//lint:ignore SA1019 goptuna's TPE draws from the global source, so it must be seeded (see above)
	mathrand.Seed(int64(seed >> 2))
	a := space.Assignment{}
	for _, p := range t.sp.Params {
		if !t.sp.Active(p, a) {
			continue
		}
		if t.observed[p.Name] < startupTrials {
			a[p.Name] = uniform(rng, p)
			continue
		}
		dist := distribution(p)
		ir, err := sampler.Sample(st, goptuna.FrozenTrial{}, p.Name, dist)
		if err != nil {
			return nil, fmt.Errorf("tpe: sample %s: %w", p.Name, err)
		}
		a[p.Name] = decode(p, ir)
	}
	return a, nil
}

// failedScore is what a failed trial tells TPE: worse than any that ran, so
// that configurations NCCL rejects are not proposed again and again.
const failedScore = 0

// neighbour is another value of p near v: any other choice of a categorical,
// half or double on a log scale, a step or a few on a linear one.
func neighbour(p space.Param, v string, rng *rand.Rand) string {
	if p.Categorical() {
		return p.Values[rng.IntN(len(p.Values))]
	}
	n, _ := strconv.ParseInt(v, 10, 64)
	var m int64
	switch {
	case p.Log && rng.IntN(2) == 0:
		m = n + min(n, p.Max-n) // n*2, held to Max before it overflows
	case p.Log:
		m = n / 2
	default:
		m = n + min(int64(rng.IntN(5)-2), p.Max-n)
	}
	return strconv.FormatInt(min(max(m, p.Min), p.Max), 10)
}

func (t *tpeSampler) Tell(a space.Assignment, scores []float64) error {
	t.remember(a, scores)
	internal, dists, params := map[string]float64{}, map[string]any{}, map[string]any{}
	for _, p := range t.sp.Params {
		v, ok := a[p.Name]
		if !ok {
			continue
		}
		ir, err := encode(p, v)
		if err != nil {
			return fmt.Errorf("tpe: %w", err)
		}
		internal[p.Name], dists[p.Name] = ir, distribution(p)
		t.observed[p.Name]++
		params[p.Name], _ = goptuna.ToExternalRepresentation(dists[p.Name], ir)
	}
	now := time.Now()
	last := t.told[len(t.told)-1]
	for i, st := range t.studies {
		if !last.about(i) {
			continue
		}
		score := float64(failedScore)
		if last.ran(i) {
			score = last.scores[i]
		}
		_, err := st.Storage.CloneTrial(st.ID, goptuna.FrozenTrial{
			State: goptuna.TrialStateComplete, Value: score, DatetimeStart: now, DatetimeComplete: now,
			InternalParams: internal, Params: params, Distributions: dists,
		})
		if err != nil {
			return fmt.Errorf("tpe: tell: %w", err)
		}
	}
	return nil
}

func distribution(p space.Param) any {
	switch {
	case p.Categorical():
		return goptuna.CategoricalDistribution{Choices: p.Values}
	case p.Log:
		return goptuna.LogUniformDistribution{Low: float64(p.Min), High: float64(p.Max)}
	default:
		return goptuna.IntUniformDistribution{Low: int(p.Min), High: int(p.Max)}
	}
}

// decode turns goptuna's internal representation into the variable's value.
func decode(p space.Param, ir float64) string {
	if p.Categorical() {
		return p.Values[min(max(int(ir), 0), len(p.Values)-1)]
	}
	return strconv.FormatInt(toInt(p, ir), 10)
}

// encode is decode's inverse, for telling a stored trial.
func encode(p space.Param, v string) (float64, error) {
	if p.Categorical() {
		i := slices.Index(p.Values, v)
		if i < 0 {
			return 0, fmt.Errorf("%s=%s is not among the space's values", p.Name, v)
		}
		return float64(i), nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < p.Min || n > p.Max {
		return 0, fmt.Errorf("%s=%s is outside the space's range [%d, %d]", p.Name, v, p.Min, p.Max)
	}
	return float64(n), nil
}
