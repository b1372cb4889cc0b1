package results

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/nccltune/nccltune/internal/text"
	"github.com/nccltune/nccltune/runner"
	"github.com/nccltune/nccltune/search"
	"github.com/nccltune/nccltune/space"
	"github.com/nccltune/nccltune/store"
)

// MinGain is the smallest measured gain over NCCL's defaults that counts as
// tuned. A single sweep's run-to-run noise is about 1-2%; below this the
// defaults are kept.
const MinGain = 0.01

// RangeResult is the outcome of a campaign for one size range. Scores are
// per configuration: a configuration measured more than once (NCCL's defaults,
// a re-measured leader) scores the geometric mean of its runs.
type RangeResult struct {
	Range        space.Range
	Default      *store.Trial // trial 0, when it completed
	Best         *store.Trial // the first trial of the chosen configuration (simplest)
	DefaultScore float64      // NaN without a default measurement
	BestScore    float64
	BestRuns     int           // how many trials measured Best's configuration
	Completed    int           // trials that measured this range
	Measure      space.Measure // how the scores read as measured
	// DefaultFailed is NCCL's defaults' first trial that failed by its
	// settings (wrong data, a hang, a crash), nil if none did.
	DefaultFailed *store.Trial
	// Validation is the latest verdict on Best, if Best was validated (a
	// verdict on an earlier best is stale and left out).
	Validation *store.Validation
	// Unconfirmed are the searched variables Best sets that its NCCL log
	// did not show NCCL reading as set (nccllog.Log.Unconfirmed): what
	// validation would keep NCCL's defaults for, said where there is none.
	Unconfirmed []string
	// UnconfirmedIn is the trial whose log shows it, where Unconfirmed is not empty.
	UnconfirmedIn int
}

// Gain is the best score's relative improvement over the default (NaN if unknown).
func (r RangeResult) Gain() float64 { return r.BestScore/r.DefaultScore - 1 }

// Tuned reports whether the range should use its best configuration: its
// validation said so, or, unvalidated, it beat NCCL's defaults by MinGain.
func (r RangeResult) Tuned() bool {
	if r.Validation != nil && r.Best != nil && !r.bestIsDefault() {
		return r.Validation.Verdict == "tuned"
	}
	return r.searchTuned()
}

// bestIsDefault reports whether the range's best is NCCL's defaults.
func (r RangeResult) bestIsDefault() bool {
	return r.Default != nil && r.Best.Number == r.Default.Number
}

// searchTuned reports whether the search alone, unvalidated, would use the
// range's best configuration: it beat NCCL's defaults by MinGain.
func (r RangeResult) searchTuned() bool {
	return r.Best != nil && !r.bestIsDefault() && (math.IsNaN(r.DefaultScore) || Gains(r.BestScore, r.DefaultScore))
}

// Gains reports whether score gained MinGain over defaults, NCCL's
// defaults' score, as Gain reckons it: the one comparison that holds a
// choice, its stand-in (simplest) and a simplification's variant to NCCL's
// defaults. Any other arithmetic (a floor of summed logarithms, defaults
// times 1+MinGain) differs from it in the last bit at a gain of exactly
// MinGain, and a stand-in it passed was then not tuned.
func Gains(score, defaults float64) bool { return score/defaults-1 >= MinGain }

// Chosen is the trial whose configuration the range should use: its best
// where that is tuned, else NCCL's defaults' trial. nil where no trial
// measured the range (Best is nil), or where validation rejected the best
// and no trial of NCCL's defaults completed in the search (the first
// failed): NCCL's defaults stand there, which no trial holds.
func (r RangeResult) Chosen() *store.Trial {
	if r.Tuned() {
		return r.Best
	}
	return r.Default
}

// Parsimony is how close to the best score a configuration with fewer
// settings must come to be chosen instead: within one measurement's noise,
// the simpler configuration is as good, and every setting exported is one
// more to trust.
const Parsimony = 0.01

// config is one configuration's measurements of a range.
type config struct {
	first  *store.Trial
	logSum float64
	runs   []*store.Trial // every trial that measured it, first among them
	// estimate is the log score a model of every complete trial expects of
	// it (search.Estimate), NaN without one.
	estimate float64
	// failed: some trial of it failed by its settings (wrong data, a hang,
	// a crash), as it may in a training job however fast its other runs were.
	failed bool
}

func (c *config) score() float64 { return math.Exp(c.logSum / float64(len(c.runs))) }

// isScore reports whether s is a score as Score gives them, finite and
// positive: another (NaN, an infinity, 0) measured nothing.
func isScore(s float64) bool { return s > 0 && !math.IsInf(s, 1) }

// RunsScore scores the runs of one configuration (its trials, as Reading
// groups them) in range rangeName as Of does: the geometric mean of those
// that measured it, NaN where none did; failed where one of them failed by
// its settings, which Of never chooses however well another ran.
func RunsScore(rangeName string, runs []store.Trial) (score float64, failed bool) {
	runs = inOrder(runs)
	failed = slices.ContainsFunc(runs, FailedByItsSettings)
	if cs := configsOf(rangeName, runs, make([]string, len(runs)), slices.Repeat([]float64{math.NaN()}, len(runs))); len(cs) > 0 {
		return cs[0].score(), failed
	}
	return math.NaN(), failed
}

// FailedByItsSettings reports whether trial t failed as its settings may
// make a job fail (not a launch that started no rank, an interrupt or a
// lost node): a configuration that did so once is never chosen, as
// FailedBySettings says of a validation run.
func FailedByItsSettings(t store.Trial) bool {
	return t.State == store.Failed && runner.FailureKind(t.FailureKind).Settings()
}

// configsOf groups the completed trials that measured the range by
// configuration (keys[j] is trials[j]'s key, estimates[j] its estimate of
// the range), in the order of their first trial, each marked failed where
// any trial of it failed.
func configsOf(rangeName string, trials []store.Trial, keys []string, estimates []float64) []*config {
	var out []*config
	byKey, failed := map[string]*config{}, map[string]bool{}
	for j, t := range trials {
		if FailedByItsSettings(t) {
			failed[keys[j]] = true
		}
	}
	for j := range trials {
		t := &trials[j]
		s, ok := t.Scores[rangeName]
		if t.State != store.Complete || !ok || !isScore(s) {
			continue
		}
		c := byKey[keys[j]]
		if c == nil {
			c = &config{first: t, estimate: estimates[j], failed: failed[keys[j]]}
			byKey[keys[j]] = c
			out = append(out, c)
		}
		c.logSum += math.Log(s)
		c.runs = append(c.runs, t)
	}
	return out
}

// unconfirmedBy are the searched variables that the runs of a
// configuration set and NCCL's log did not confirm, and the first run
// whose log shows so: those some run's log shows NCCL not reading as set
// (nccllog.Log.Unread), however another run read them; where no run logged
// NCCL's INFO lines, which confirm nothing either way, every one. A pinned
// variable is in every configuration, NCCL's defaults' too: not the
// choice's to confirm.
func unconfirmedBy(sp *space.Space, runs []*store.Trial) (names []string, in int) {
	logged := slices.ContainsFunc(runs, func(t *store.Trial) bool { return t.NCCLLog.Debug })
	for _, t := range runs {
		// Silent, a run's log names every variable; logged, only those it shows unread.
		these := slices.DeleteFunc(t.NCCLLog.Unconfirmed(t.Env), func(name string) bool { _, fixed := sp.Fixed[name]; return fixed })
		if logged && !t.NCCLLog.Debug || len(these) == 0 {
			continue
		}
		if len(names) == 0 {
			in = t.Number
		}
		names = append(names, these...)
	}
	slices.Sort(names)
	return slices.Compact(names), in
}

// simplest returns the configuration of the highest credit or, among
// those that both their credit and their own measurements put within
// Parsimony of it, the one that sets the fewest variables (the higher
// credit between equals); by their measured scores alone where some has
// no estimate. A configuration's credit is the lower of its estimate and
// its measured score: the estimate discounts a lucky measurement, but
// never raises a configuration above what it measured, for where its own
// runs fall short of what its neighbours predict (a pair of settings that
// does not pay together, a model that left its runs out), the runs are
// what it does. The estimates pool similar configurations, so they lie
// closer together than the measurements: within Parsimony by the estimate
// alone, a simpler neighbour would be chosen where it is measurably slower.
// Nor does one that does not gain MinGain over NCCL's defaults (their
// score defaults, NaN where unmeasured) stand in for the highest where that
// gains it: no better than NCCL's defaults, which set nothing, it would not
// be tuned, and the defaults, outside Parsimony of the highest, would be
// exported in its place. Where none gains it, none is tuned, and the
// simplest is chosen.
func simplest(sp *space.Space, configs []*config, defaults float64) *config {
	gains := func(c *config) bool { return math.IsNaN(defaults) || Gains(c.score(), defaults) }
	tolerance := -math.Log1p(-Parsimony)
	measured, settings := make([]float64, len(configs)), make([]int, len(configs))
	for i, c := range configs {
		measured[i], settings[i] = math.Log(c.score()), Settings(sp, c.first)
	}
	ranks := slices.Clone(measured)
	if !slices.ContainsFunc(configs, func(c *config) bool { return math.IsNaN(c.estimate) }) {
		for i, c := range configs {
			ranks[i] = min(c.estimate, measured[i])
		}
	}
	top := 0
	for i := range ranks {
		if ranks[i] > ranks[top] {
			top = i
		}
	}
	for i, c := range configs {
		if i != top && (measured[i] < measured[top]-tolerance || !gains(c) && gains(configs[top]) && !sp.IsDefaults(c.first.Params)) {
			ranks[i] = math.Inf(-1)
		}
	}
	return configs[parsimonious(ranks, settings, tolerance)]
}

// parsimonious is the index of the candidate with the fewest settings among
// those whose log score is within tolerance of the highest, the higher score
// between equals: the one rule by which ranges and jobs are chosen.
func parsimonious(logScores []float64, settings []int, tolerance float64) int {
	top := slices.Max(logScores)
	chosen := -1
	for i, s := range logScores {
		if s < top-tolerance {
			continue
		}
		if chosen < 0 || settings[i] < settings[chosen] || settings[i] == settings[chosen] && s > logScores[chosen] {
			chosen = i
		}
	}
	return chosen
}

// Settings counts the searched variables a trial sets, as NCCL reads them:
// "default", or the value NCCL takes unset (space.Param.NCCLDefault), is
// none, as Reading leaves it out of the configuration.
func Settings(sp *space.Space, t *store.Trial) int {
	n := 0
	for name, v := range t.Params {
		if v == space.Unset {
			continue
		}
		if k := slices.IndexFunc(sp.Params, func(p space.Param) bool { return p.Name == name }); k >= 0 {
			if d, known := sp.Params[k].NCCLDefault(); known && v == d {
				continue
			}
		}
		n++
	}
	return n
}

// Of picks the best configuration per range from a campaign's trials
// (simplest: the highest credit, the lower of estimate and measured score,
// or a simpler one within Parsimony of it), with the latest of the
// validations (oldest first) that concerns it.
func Of(sp *space.Space, trials []store.Trial, vals []store.Validation) []RangeResult {
	return read(sp, trials).of(sp, vals, nil)
}

// readTrials are a campaign's trials in order (inOrder), with their
// readings (keys) and the model's estimates of them, per range, fitted on
// every complete trial: each trial's, in every view of it (a range's
// choice, an environment's in JobOf), so that none is chosen by a fit on
// a few trials, where a lucky measurement is its own estimate.
type readTrials struct {
	trials    []store.Trial
	keys      []string
	estimates [][]float64
}

func read(sp *space.Space, trials []store.Trial) readTrials {
	trials = inOrder(trials)
	return readTrials{trials, readings(sp, trials), estimate(sp, trials)}
}

// subset is the trials at indices in, in order.
func (rt readTrials) subset(in []int) readTrials {
	out := readTrials{estimates: make([][]float64, len(rt.estimates))}
	for _, j := range in {
		out.trials, out.keys = append(out.trials, rt.trials[j]), append(out.keys, rt.keys[j])
		for r := range rt.estimates {
			out.estimates[r] = append(out.estimates[r], rt.estimates[r][j])
		}
	}
	return out
}

// of is Of over rt, with each range's NCCL's defaults those of baseline
// (indexed like sp.Ranges) where it is given: JobOf chooses among the
// trials of one environment, held against the defaults of all.
func (rt readTrials) of(sp *space.Space, vals []store.Validation, baseline []RangeResult) []RangeResult {
	out := make([]RangeResult, len(sp.Ranges))
	for i := range out {
		out[i] = rangeOf(sp, i, rt.trials, rt.keys, rt.estimates[i], vals, baseline)
	}
	return out
}

// Rejecting returns Of(sp, trials, nil)'s choice of range i as it reads
// with rejected added, trials after them that failed by their settings,
// whose configurations it chooses no more. A failure changes no estimate
// (the model is fitted on complete trials alone), so the model is fitted
// once, here, however often a range is chosen again: each fit of 2,000
// trials over 30 ranges takes half a second, and a simplification whose
// choices' fresh runs fail chooses again up to three times a range.
func Rejecting(sp *space.Space, trials []store.Trial) func(i int, rejected []store.Trial) RangeResult {
	rt := read(sp, trials)
	return func(i int, rejected []store.Trial) RangeResult {
		est := slices.Concat(rt.estimates[i], slices.Repeat([]float64{math.NaN()}, len(rejected)))
		return rangeOf(sp, i, slices.Concat(rt.trials, rejected), slices.Concat(rt.keys, readings(sp, rejected)), est, nil, nil)
	}
}

// readings are trials' configurations as NCCL reads them (sp.Reading).
func readings(sp *space.Space, trials []store.Trial) []string {
	keys := make([]string, len(trials))
	for j, t := range trials {
		keys[j] = sp.Reading(t.Params)
	}
	return keys
}

// rangeOf is of's choice of range i over trials in order, keys their
// readings, estimates the model's of them in the range. Given baseline, the
// choice of a job of one collective's ranges among one environment's
// trials: where the range's own choice (baseline's, Chosen: its best where
// tuned, else NCCL's defaults) runs under that environment, it is the
// job's too, as the range's exports give it; chosen anew among these
// trials alone, a simpler one that another environment's configurations
// let stand in would be missing, and the choice not the range's.
func rangeOf(sp *space.Space, i int, trials []store.Trial, keys []string, estimates []float64, vals []store.Validation, baseline []RangeResult) RangeResult {
	var defaultFailed *store.Trial
	if k := slices.IndexFunc(trials, func(t store.Trial) bool {
		return FailedByItsSettings(t) && sp.IsDefaults(t.Params)
	}); k >= 0 {
		defaultFailed = &trials[k]
	}
	rg := sp.Ranges[i]
	res := RangeResult{Range: rg, DefaultScore: math.NaN(), BestScore: math.NaN(), Measure: sp.Measure(rg), DefaultFailed: defaultFailed}
	configs := configsOf(rg.Name, trials, keys, estimates)
	for _, c := range configs {
		res.Completed += len(c.runs)
		// The first trials run NCCL's defaults (one per group): any that
		// completed measured them, trial 0 or not.
		if res.Default == nil && sp.IsDefaults(c.first.Params) {
			res.Default, res.DefaultScore = c.first, c.score()
		}
	}
	if baseline != nil {
		res.Default, res.DefaultScore = baseline[i].Default, baseline[i].DefaultScore
	}
	// A configuration that failed in some trial is never chosen; NCCL's
	// defaults, which a job gets by setting nothing, stay choosable.
	choosable := slices.DeleteFunc(slices.Clone(configs), func(c *config) bool { return c.failed && !sp.IsDefaults(c.first.Params) })
	if len(choosable) > 0 {
		best := simplest(sp, choosable, res.DefaultScore)
		if baseline != nil && len(sp.Workload) == 0 && baseline[i].Chosen() != nil {
			own := sp.Reading(baseline[i].Chosen().Params)
			if k := slices.IndexFunc(choosable, func(c *config) bool { return sp.Reading(c.first.Params) == own }); k >= 0 {
				best = choosable[k]
			}
		}
		res.Best, res.BestScore, res.BestRuns = best.first, best.score(), len(best.runs)
		res.Unconfirmed, res.UnconfirmedIn = unconfirmedBy(sp, best.runs)
	}
	if res.Best != nil {
		res.Validation = latestOn(vals, rg.Name, sp.Key(res.Best.Params), res.Best.Number)
	}
	return res
}

// inOrder is trials in number order (a trial run again after an interrupt
// after its first row), as a store reads them, so that the choice is the
// trials' and not their order's: a tie goes to the lower number, the
// model is fitted on the latest trials, and a mean sums alike.
func inOrder(trials []store.Trial) []store.Trial {
	byNumber := func(a, b store.Trial) int { return cmp.Or(cmp.Compare(a.Number, b.Number), cmp.Compare(a.ID, b.ID)) }
	if slices.IsSortedFunc(trials, byNumber) {
		return trials
	}
	return slices.SortedStableFunc(slices.Values(trials), byNumber)
}

// estimate is, per range and trial, search.Estimate's log score for the
// complete trials, fitted on those alone: a failure or a quick pass says
// little of how fast a configuration runs. NaN for the other trials.
func estimate(sp *space.Space, trials []store.Trial) [][]float64 {
	var complete []int
	var as []space.Assignment
	var scores [][]float64
	for j, t := range trials {
		if t.State != store.Complete {
			continue
		}
		complete, as, scores = append(complete, j), append(as, space.Assignment(t.Params)), append(scores, TrialScores(sp, t))
	}
	est := search.Estimate(sp, as, scores)
	out := make([][]float64, len(sp.Ranges))
	for r := range out {
		out[r] = make([]float64, len(trials))
		for j := range out[r] {
			out[r][j] = math.NaN()
		}
		for k, j := range complete {
			out[r][j] = est[k][r]
		}
	}
	return out
}

// TrialScores are t's scores in the order of sp's ranges, NaN for a range
// it did not measure: what a sampler is told, and the estimate fitted.
func TrialScores(sp *space.Space, t store.Trial) []float64 {
	out := make([]float64, len(sp.Ranges))
	for i, r := range sp.Ranges {
		s, ok := t.Scores[r.Name]
		if !ok {
			s = math.NaN()
		}
		out[i] = s
	}
	return out
}

// Summary counts a campaign's trials.
type Summary struct {
	Total    int
	ByState  map[store.State]int
	Failures map[string]int // by failure kind
	// Unconfirmed counts, per variable, the completed trials that set it but
	// whose NCCL log does not show NCCL reading it with that value.
	Unconfirmed map[string]int
	// Silent counts the completed trials that set NCCL variables but whose
	// output has no NCCL INFO lines: none of their settings is confirmed.
	Silent int
	// OneRank counts the completed trials whose NCCL log shows a
	// communicator of one rank (nRanks 1), which sends nothing and chooses
	// no algorithm or protocol: NCCL does not read NCCL_ALGO or NCCL_PROTO.
	OneRank int
	// Inherited counts, per NAME=value, the completed trials whose NCCL read
	// a variable they do not set (nccllog.Log.Inherited).
	Inherited map[string]int
}

// Finished counts the trials that finished (complete, failed or pruned):
// those a budget counts, each number once, where Total counts every record,
// two for a trial interrupted and run again.
func (s Summary) Finished() int {
	return s.ByState[store.Complete] + s.ByState[store.Failed] + s.ByState[store.Pruned]
}

// Summarize counts trials by state and by failure kind.
func Summarize(trials []store.Trial) Summary {
	s := Summary{ByState: map[store.State]int{}, Failures: map[string]int{}, Unconfirmed: map[string]int{}, Inherited: map[string]int{}}
	for _, t := range trials {
		s.Total++
		s.ByState[t.State]++
		switch t.State {
		case store.Failed:
			s.Failures[t.FailureKind]++
		case store.Complete:
			if !t.NCCLLog.Debug && len(t.NCCLLog.Unconfirmed(t.Env)) > 0 {
				s.Silent++
			}
			if t.NCCLLog.Ranks == 1 {
				s.OneRank++
			}
			for _, name := range t.NCCLLog.Unread(t.Env) {
				s.Unconfirmed[name]++
			}
			for _, kv := range t.NCCLLog.Inherited(t.Env) {
				s.Inherited[kv]++
			}
		}
	}
	return s
}

// FailureKinds lists the failure kinds seen, most frequent first.
func (s Summary) FailureKinds() []string {
	kinds := make([]string, 0, len(s.Failures))
	for k := range s.Failures {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool {
		if s.Failures[kinds[i]] != s.Failures[kinds[j]] {
			return s.Failures[kinds[i]] > s.Failures[kinds[j]]
		}
		return kinds[i] < kinds[j]
	})
	return kinds
}

// Describe explains a range's outcome in one line. An unvalidated choice
// whose settings NCCL's log did not confirm says so, however it is
// described: validation would keep NCCL's defaults for it.
func (r RangeResult) Describe() string {
	d := r.describe()
	if r.Validation == nil && r.Tuned() && len(r.Unconfirmed) > 0 {
		d += fmt.Sprintf("; settings not confirmed: NCCL's log did not show it reading %s as set (`nccltune show %d` says why), and validation would keep NCCL's defaults",
			strings.Join(r.Unconfirmed, ", "), r.UnconfirmedIn)
	}
	return d
}

func (r RangeResult) describe() string {
	switch {
	case r.Validation != nil && r.Tuned():
		return fmt.Sprintf("validated: trial %d, %s", r.Best.Number, r.Validation.Reason)
	case r.Validation != nil:
		return "validation kept NCCL's defaults: " + r.Validation.Reason
	case r.Best == nil && r.Completed > 0:
		return "every configuration measured failed in some trial, and NCCL's defaults in every one"
	case r.Best == nil:
		return "no trial measured this range"
	case math.IsNaN(r.DefaultScore) && r.DefaultFailed != nil:
		return fmt.Sprintf("best %.3g %s (trial %d); NCCL's defaults failed (trial %d, %s: %s)", r.Measure.Value(r.BestScore), r.Measure.Unit, r.Best.Number,
			r.DefaultFailed.Number, r.DefaultFailed.FailureKind, r.DefaultFailed.FailureReason)
	case math.IsNaN(r.DefaultScore):
		return fmt.Sprintf("best %.3g %s (trial %d); NCCL's defaults were not measured", r.Measure.Value(r.BestScore), r.Measure.Unit, r.Best.Number)
	case r.Tuned():
		runs := "in one run"
		if r.BestRuns > 1 {
			runs = fmt.Sprintf("over %d runs", r.BestRuns)
		}
		return fmt.Sprintf("not validated: tuned %.3g %s vs default %.3g %s (%+.1f%%) %s, trial %d", r.Measure.Value(r.BestScore), r.Measure.Unit,
			r.Measure.Value(r.DefaultScore), r.Measure.Unit, text.Bounded(100*r.Gain()), runs, r.Best.Number)
	default:
		return fmt.Sprintf("NCCL's defaults are best: %.3g %s (no trial gained %.0f%% or more)", r.Measure.Value(r.DefaultScore), r.Measure.Unit, 100*MinGain)
	}
}

// RangeReport is a range's outcome for JSON output (status, report, export).
type RangeReport struct {
	Name         string            `json:"name"`
	MinBytes     *int64            `json:"min_bytes,omitempty"` // a range of message sizes only
	MaxBytes     *int64            `json:"max_bytes_exclusive,omitempty"`
	Unit         string            `json:"unit"` // of default and best, as measured
	LowerBetter  bool              `json:"lower_is_better,omitempty"`
	DefaultScore *float64          `json:"default"`
	BestScore    *float64          `json:"best"`
	SearchGain   *float64          `json:"search_gain"`
	Tuned        bool              `json:"tuned"`
	Summary      string            `json:"summary"`
	Validation   *ValidationReport `json:"validation"`
	Trial        *int              `json:"chosen_trial"`
	Env          map[string]string `json:"env"`
	DDP          []string          `json:"ddp,omitempty"`
}

// ValidationReport is a range's validation verdict for JSON output.
type ValidationReport struct {
	Verdict string   `json:"verdict"`
	Reason  string   `json:"reason"`
	Rounds  int      `json:"rounds"`
	Gain    *float64 `json:"gain"`
	CILow   *float64 `json:"ci_low"`
	CIHigh  *float64 `json:"ci_high"`
}

// Report renders the range's outcome; sp supplies the DDP knobs' options.
func (r RangeResult) Report(sp *space.Space) RangeReport {
	out := RangeReport{Name: r.Range.Name, Unit: r.Measure.Unit, LowerBetter: r.Measure.Inverse,
		DefaultScore: Finite(r.Measure.Value(r.DefaultScore)), BestScore: Finite(r.Measure.Value(r.BestScore)), SearchGain: Finite(r.Gain()),
		Tuned: r.Tuned(), Summary: r.Describe(), Env: map[string]string{}} // {}, never null, where no trial is chosen
	if sp.Sized(r.Range) {
		out.MinBytes, out.MaxBytes = &r.Range.Min, &r.Range.Max
	}
	if v := r.Validation; v != nil {
		out.Validation = &ValidationReport{Verdict: v.Verdict, Reason: v.Reason, Rounds: v.Rounds,
			Gain: Finite(v.Gain), CILow: Finite(v.CILow), CIHigh: Finite(v.CIHigh)}
	}
	if ch := r.Chosen(); ch != nil {
		n := ch.Number
		out.Trial, out.Env, out.DDP = &n, space.EnvMap(ch.Env), sp.Args(space.Assignment(ch.Params))
	}
	return out
}

// Finite is v, or nil (JSON null) for NaN and infinities.
func Finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}
