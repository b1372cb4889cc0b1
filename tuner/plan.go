package tuner

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat"

	"github.com/nccltune/nccltune/space"
	"github.com/nccltune/nccltune/store"
)

// next returns the configuration trial n runs: NCCL's defaults for trials 0
// and 1 (two runs of one configuration measure the run-to-run noise, see
// Iterations), then the warm start's known-good configurations not yet tried,
// then the sampler's proposals.
func (c *Campaign) next(n int, sampler Sampler, trials []store.Trial) (space.Assignment, error) {
	sp := c.Space
	if n < 2 {
		return Defaults(sp), nil
	}
	if sp.Campaign.WarmStart {
		for _, a := range sp.WarmStart(fabric(trials)) {
			key := configKey(sp, a)
			if !slices.ContainsFunc(trials, func(t store.Trial) bool { return configKey(sp, t.Params) == key }) {
				return a, nil
			}
		}
	}
	return sampler.Ask(n)
}

// fabric is what NCCL reported about the network in trial 0, its defaults.
func fabric(trials []store.Trial) space.Fabric {
	for _, t := range trials {
		if l := t.NCCLLog; t.Number == 0 && t.State == store.Complete && l.Debug {
			return space.Fabric{Known: true, Network: l.Network, RoCE: l.RoCE, GDR: l.GDR}
		}
	}
	return space.Fabric{}
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
// only by noise; from them each range's score has a standard deviation, and
// since timing jitter averages out over iterations, the count is scaled so
// that the noisiest range's comes to benchmark.noise_target. It is
// benchmark.iters, with an empty reason, until both runs completed, with a
// noise target of 0, and for the DDP step.
func Iterations(sp *space.Space, trials []store.Trial) (iters int, why string) {
	b := sp.Benchmark
	if b.NoiseTarget == 0 || b.Kind == space.DDP {
		return b.Iters, ""
	}
	var runs [2]*store.Trial
	for i := range trials {
		if t := &trials[i]; t.Number < 2 && t.State == store.Complete {
			runs[t.Number] = t
		}
	}
	if runs[0] == nil || runs[1] == nil || len(runs[0].Rows) != len(runs[1].Rows) {
		return b.Iters, ""
	}
	// Each size's log ratio between the runs has twice one measurement's variance.
	sq := make([][]float64, len(sp.Ranges))
	bw0, bw1 := BusBW(runs[0].Rows), BusBW(runs[1].Rows)
	for i, row := range runs[0].Rows {
		if r := sp.RangeOf(row.Size); r >= 0 && bw0[i] > 0 && bw1[i] > 0 {
			d := math.Log(bw0[i] / bw1[i])
			sq[r] = append(sq[r], d*d/2)
		}
	}
	worst, worstRange := -1.0, ""
	for r, v := range sq {
		if len(v) == 0 {
			continue
		}
		// A range's score averages its sizes: its variance is a size's over their count.
		if sd := math.Sqrt(stat.Mean(v, nil) / float64(len(v))); sd > worst {
			worst, worstRange = sd, sp.Ranges[r].Name
		}
	}
	if worstRange == "" {
		return b.Iters, ""
	}
	factor := math.Pow(worst/b.NoiseTarget, 2)
	iters = int(math.Round(float64(b.Iters) * min(max(factor, minItersFactor), maxItersFactor)))
	iters = max(iters, 1)
	return iters, fmt.Sprintf("%d iterations (from %d): NCCL's defaults measured twice put range %s's score at ±%.2f%%, noise_target is ±%.2f%%",
		iters, b.Iters, worstRange, 100*worst, 100*b.NoiseTarget)
}
