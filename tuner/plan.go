package tuner

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/gonum/stat"

	"github.com/nccltune/nccltune/results"
	"github.com/nccltune/nccltune/search"
	"github.com/nccltune/nccltune/space"
	"github.com/nccltune/nccltune/store"
)

// next returns the configuration trial n runs: NCCL's defaults for the
// first trials (two runs of one configuration measure the run-to-run noise,
// see Iterations; and each group of nodes measures them once), then the
// space's [[try_first]] configurations and the warm start's known-good ones
// not yet tried, then the sampler's proposals for the ranges not settled.
func (s *session) next(n int) (space.Assignment, error) {
	sp := s.Space
	if n < sp.DefaultsTrials() {
		return Defaults(sp), nil
	}
	queued := sp.TryFirst
	if sp.Campaign.WarmStart {
		queued = append(slices.Clone(queued), sp.WarmStart(fabric(sp, s.trials))...)
	}
	pending, tried := s.pending(n)
	for _, a := range queued {
		if !tried[sp.Reading(a)] {
			return a, nil
		}
	}
	sampler, err := s.liar(pending)
	if err != nil {
		return nil, err
	}
	if f, ok := sampler.(focuser); ok {
		f.Focus(searched(s.settled))
	}
	return sampler.Ask(n)
}

// pending lists the configurations launched before trial n and not yet
// told, and tried holds (by Space.Reading: spellings NCCL reads alike are
// one configuration, as the samplers read them) those and every one told.
func (s *session) pending(n int) (pending []space.Assignment, tried map[string]bool) {
	for m := s.told; m < n; m++ {
		if t, ok := s.untold[m]; ok {
			pending = append(pending, t.Params)
		}
	}
	tried = map[string]bool{}
	for _, t := range s.trials {
		tried[s.Space.Reading(t.Params)] = true
	}
	for _, a := range pending {
		tried[s.Space.Reading(a)] = true
	}
	return pending, tried
}

// exhausted reports whether trial n would find every configuration of the
// space tried or running, and how many there are: a sampler could only
// propose one again.
func (s *session) exhausted(n int) (bool, int) {
	if s.configs == nil {
		// The session runs at most the budget's trials past those it holds.
		s.configs = configurations(s.Space, s.camp.Budget+len(s.trials)+len(s.untold))
	}
	_, tried := s.pending(n)
	return allTried(s.configs, tried), len(s.configs)
}

// configurations holds (by Space.Reading) every configuration of sp, NCCL's
// defaults among them, where there are at most limit, the trials that
// could have tried them, and none where there are more: listing those
// would cost what no campaign of them can use.
func configurations(sp *space.Space, limit int) map[string]bool {
	keys := map[string]bool{}
	if all, ok := search.Enumerate(sp, 0, limit); ok {
		keys[sp.Reading(Defaults(sp))] = true
		for _, a := range all {
			keys[sp.Reading(a)] = true
		}
	}
	return keys
}

// allTried reports whether configs has a configuration and tried holds each.
func allTried(configs, tried map[string]bool) bool {
	for k := range configs {
		if !tried[k] {
			return false
		}
	}
	return len(configs) > 0
}

// liar returns the sampler to propose from while the pending configurations
// run: the session's own if none is pending, else a fresh one told the same
// trials and each pending configuration as failed (a constant liar, the
// worst score), so that it proposes none of them again and looks elsewhere
// for the time being.
func (s *session) liar(pending []space.Assignment) (search.Sampler, error) {
	if len(pending) == 0 {
		return s.sampler, nil
	}
	sp := s.Space
	sm, err := search.New(s.camp.Sampler, sp, s.camp.Seed)
	if err != nil {
		return nil, err
	}
	for _, t := range s.trials {
		if err := sm.Tell(space.Assignment(t.Params), scoreList(sp, t)); err != nil {
			return nil, err
		}
	}
	for _, a := range pending {
		if err := sm.Tell(a, nil); err != nil {
			return nil, err
		}
	}
	return sm, nil
}

// focuser is a sampler that can leave settled ranges out of its proposals.
type focuser interface {
	Focus(ranges []bool)
}

// Settled returns, per range, the trial after which the range settled: with
// campaign.patience P, P finished search trials in a row that did not raise
// its best score by MinGain. A settled range is not searched any more, and
// its sizes leave the sweep where they lie at its ends. -1 marks a range
// still searched; without patience every range is. The search's trials are
// counted, not numbered: a budget raised after the simplification numbers
// them on past its trials, which re-measure choices and search nothing.
func Settled(sp *space.Space, trials []store.Trial) []int {
	out := slices.Repeat([]int{-1}, len(sp.Ranges))
	p := sp.Campaign.Patience
	if p == 0 {
		return out
	}
	best, lastGain := make([]float64, len(sp.Ranges)), make([]int, len(sp.Ranges))
	i := -1 // the search's finished trials so far, from 0
	for _, t := range trials {
		if !t.Searched() || !t.State.Finished() {
			continue
		}
		i++
		for r, rg := range sp.Ranges {
			if out[r] >= 0 {
				continue
			}
			if s, ok := t.Scores[rg.Name]; ok && t.State == store.Complete && s > best[r] {
				if s >= best[r]*(1+results.MinGain) {
					lastGain[r] = i
				}
				best[r] = s
			}
			if i-lastGain[r] >= p {
				out[r] = t.Number
			}
		}
	}
	return out
}

// searched marks the ranges that have not settled.
func searched(settled []int) []bool {
	out := make([]bool, len(settled))
	for r, at := range settled {
		out[r] = at < 0
	}
	return out
}

// searchSweep is the sweep of the ranges still searched (not settled): from
// the smallest size of the first to the largest of the last (ranges between
// them are measured too). Once no range is left it is the full sweep again,
// for what follows.
func searchSweep(sp *space.Space, settled []int) sweep {
	ranges := searched(settled)
	if !slices.Contains(ranges, true) {
		return fullSweep(sp)
	}
	if len(sp.Workload) > 0 {
		return sweep{sizes: sp.Sizes, ranges: ranges} // a settled collective is not launched
	}
	sizes := sp.Sizes.List()
	lo := slices.IndexFunc(sizes, func(n int64) bool { r := sp.RangeOf("", n); return r >= 0 && ranges[r] })
	if lo < 0 {
		return fullSweep(sp)
	}
	hi := len(sizes) - 1
	for hi > lo && !(sp.RangeOf("", sizes[hi]) >= 0 && ranges[sp.RangeOf("", sizes[hi])]) {
		hi--
	}
	sw := sweep{sizes: space.Sizes{Min: sizes[lo], Max: sizes[hi], Factor: sp.Sizes.Factor}, ranges: make([]bool, len(ranges))}
	for r, rg := range sp.Ranges {
		sw.ranges[r] = slices.ContainsFunc(sizes[lo:hi+1], rg.Contains)
	}
	return sw
}

// describeSettled says when each range settled.
func describeSettled(sp *space.Space, settled []int) string {
	var parts []string
	for r, at := range settled {
		if at >= 0 {
			parts = append(parts, fmt.Sprintf("%s after trial %d", sp.Ranges[r].Name, at))
		}
	}
	return fmt.Sprintf("%s; none gained %.0f%% in its last %d trials", strings.Join(parts, ", "), 100*results.MinGain, sp.Campaign.Patience)
}

// fabric is what NCCL reported about the network in the first run of its
// defaults that completed (trial 0, or another of sp's defaults trials where
// it failed). On a single node NCCL still sets up a network (sockets,
// often), but no collective crosses it, so no network remedy applies.
func fabric(sp *space.Space, trials []store.Trial) space.Fabric {
	for _, t := range trials {
		if l := t.NCCLLog; sp.IsDefaults(t.Params) && t.State == store.Complete && l.Debug {
			if l.Nodes == 1 {
				return space.Fabric{Known: true}
			}
			return space.Fabric{Known: true, Network: l.Network, RoCE: l.RoCE, GDR: l.GDR}
		}
	}
	return space.Fabric{}
}

// minSizesForShift is how many sizes a range needs for its sizes' common
// shift between two launches to be told apart from their scatter.
const minSizesForShift = 3

// timingJitter is one measurement's variance in log scale, from the log
// ratios d of a range's sizes between two launches of one configuration (each
// has twice that variance), around shift, the ratio every size shares: a
// launch that runs slow as a whole (a cold GPU, clocks, another job) moves
// every size alike, and more iterations do not average it out; only the
// scatter around it is timing jitter. A range of sizes enough has its own
// shift (sizes bound by latency and by bandwidth can move apart); a smaller
// one takes the whole sweep's. free is how many of the values' degrees of
// freedom the shift leaves.
func timingJitter(d []float64, shift float64, free float64) float64 {
	sq := 0.0
	for _, v := range d {
		sq += (v - shift) * (v - shift)
	}
	return sq / free / 2
}

// Iteration counts are adapted within these multiples of benchmark.iters:
// two runs are little evidence for going lower, and beyond 8x a sweep of
// large messages starts to cost more than the launch.
const (
	minItersFactor = 0.5
	maxItersFactor = 8
)

// Iterations is the nccl-tests iteration count (-n) for the trials after the
// first two, and why. The two runs of NCCL's defaults (trials 0 and 1) differ
// only by noise; from the scatter of their sizes' ratios (see timingJitter) each
// range's score has a standard deviation, and since timing jitter averages
// out over iterations, the count is scaled so that the noisiest range's comes
// to benchmark.noise_target. It is
// benchmark.iters, with an empty reason, until both runs finished, with a
// noise target of 0, and for benchmarks that do not sweep message sizes;
// where a run failed, or the two do not compare, the reason says the
// count was not adapted.
func Iterations(sp *space.Space, trials []store.Trial) (iters int, why string) {
	b := sp.Benchmark
	if b.NoiseTarget == 0 || !b.Uses("benchmark.noise_target") {
		return b.Iters, ""
	}
	var runs [2]*store.Trial
	var failed []string
	for i := range trials {
		switch t := &trials[i]; {
		case t.Number >= 2:
		case t.State == store.Complete:
			runs[t.Number] = t
		case t.State == store.Failed:
			failed = append(failed, fmt.Sprintf("trial %d (%s)", t.Number, t.FailureKind))
		}
	}
	unadapted := func(cause string) (int, string) {
		return b.Iters, fmt.Sprintf("%d iterations (benchmark.iters, not adapted): %s, so the run-to-run noise is unknown", b.Iters, cause)
	}
	if len(failed) > 0 {
		return unadapted("NCCL's defaults failed in " + strings.Join(failed, " and "))
	}
	if runs[0] == nil || runs[1] == nil || len(runs[0].Rows) == 0 {
		return b.Iters, ""
	}
	if len(runs[0].Rows) != len(runs[1].Rows) {
		return unadapted(fmt.Sprintf("NCCL's defaults' two runs measured %d and %d sizes", len(runs[0].Rows), len(runs[1].Rows)))
	}
	logRatios := make([][]float64, len(sp.Ranges))
	bw0, bw1 := results.BusBW(runs[0].Rows, runs[0].Fingerprint.Ranks), results.BusBW(runs[1].Rows, runs[1].Fingerprint.Ranks)
	for i, row := range runs[0].Rows {
		if r := sp.RangeOf(row.Collective, row.Size); r >= 0 && bw0[i] > 0 && bw1[i] > 0 {
			logRatios[r] = append(logRatios[r], math.Log(bw0[i]/bw1[i]))
		}
	}
	var all []float64
	for _, d := range logRatios {
		all = append(all, d...)
	}
	worst, worstRange, shift := -1.0, "", 0.0
	for r, d := range logRatios {
		if len(d) == 0 {
			continue
		}
		own, free := 0.0, float64(len(d))
		switch {
		case len(d) >= minSizesForShift:
			own, free = stat.Mean(d, nil), free-1
		case len(all) >= minSizesForShift:
			own, free = stat.Mean(all, nil), free*float64(len(all)-1)/float64(len(all))
		}
		shift = max(shift, math.Abs(own)/math.Sqrt2)
		// A range's score averages its sizes: its variance is a size's over their count.
		if sd := math.Sqrt(timingJitter(d, own, free) / float64(len(d))); sd > worst {
			worst, worstRange = sd, sp.Ranges[r].Name
		}
	}
	if worstRange == "" {
		return unadapted("NCCL's defaults' two runs measured no size of a range at a bus bandwidth above 0")
	}
	factor := math.Pow(worst/b.NoiseTarget, 2)
	iters = int(math.Round(float64(b.Iters) * min(max(factor, minItersFactor), maxItersFactor)))
	// A sweep must stay well inside the trial timeout: a third of it, by the
	// defaults' own per-iteration times (a slower configuration has the rest).
	perIter := 0.0
	for _, row := range runs[0].Rows {
		perIter += (row.OutOfPlace.TimeUs + row.InPlace.TimeUs) / 1e6
	}
	// In floating point: a sweep timed at next to nothing (sizes that print
	// as 0 bytes) under a long timeout is a limit past any int.
	limit := b.Timeout.Seconds()/3/perIter - float64(b.Warmup)
	timed := b.Timeout > 0 && perIter > 0 && float64(iters) > limit
	held := factor > maxItersFactor // below the count noise_target asks
	if timed {
		iters = max(int(limit), 1) // below iters, so it fits
		held = float64(iters) < float64(b.Iters)*factor
		wants := "" // the floor of half benchmark.iters may be what the timeout cut
		if held {
			wants = "noise_target would want more, but "
		}
		why = fmt.Sprintf("%d iterations (from %d; %sa sweep must stay within a third of the %s timeout): NCCL's defaults measured twice put range %s's score at ±%.2f%%",
			iters, b.Iters, wants, b.Timeout, worstRange, 100*worst)
	} else {
		why = fmt.Sprintf("%d iterations (from %d): NCCL's defaults measured twice put range %s's score at ±%.2f%%, noise_target is ±%.2f%%",
			iters, b.Iters, worstRange, 100*worst, 100*b.NoiseTarget)
	}
	if held {
		// Timing jitter's variance falls as 1/iterations: a count held below
		// the target's, by the cap or the timeout, leaves more than it.
		stay := fmt.Sprintf("scores stay at about ±%.2f%%", 100*worst*math.Sqrt(float64(b.Iters)/float64(iters)))
		if !timed {
			stay = fmt.Sprintf("%d is the most (%dx benchmark.iters), so %s", iters, maxItersFactor, stay)
		}
		why += "; " + stay
	}
	if shift > b.NoiseTarget {
		why += fmt.Sprintf("; the two launches also differed as a whole by ±%.1f%%, which no iteration count reduces (validation's interleaved rounds allow for it)", 100*shift)
	}
	return max(iters, 1), why
}
