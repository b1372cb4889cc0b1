package quality

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/nccltune/nccltune/results"
	"github.com/nccltune/nccltune/runner"
	"github.com/nccltune/nccltune/space"
	"github.com/nccltune/nccltune/store"
	"github.com/nccltune/nccltune/tuner"
)

// GroupsRun is one campaign of the groups benchmark: after each finished
// trial, in the order they finished, the worst range's regret of the choice
// and the wall time, in seconds of the modelled hardware.
type GroupsRun struct {
	Regret, Wall []float64
}

// GroupsResult is every campaign of one group count on one scenario.
type GroupsResult struct {
	Scenario string
	Groups   int
	Runs     []GroupsRun
}

// paced runs the simulator in process (see clock) and sleeps each launch's
// modelled duration times pace: concurrent launches on groups overlap as on
// the hardware, and the campaign's wall time, divided by pace, is the
// hardware's. It may run launches at once.
type paced struct{ pace float64 }

func (p paced) Run(ctx context.Context, job runner.Job) runner.Result {
	res := (&clock{}).Run(ctx, job)
	select {
	case <-time.After(time.Duration(float64(res.Duration) * p.pace)):
	case <-ctx.Done():
	}
	return res
}

// MeasureGroups runs, for each scenario and group count, o.Seeds campaigns
// of the default search after the warm start, every trial taking its modelled time scaled
// by pace, campaigns in parallel (they mostly sleep), until ctx is done.
func MeasureGroups(ctx context.Context, scenarios []Scenario, groups []int, o Options, pace float64) ([]GroupsResult, error) {
	var out []GroupsResult
	var jobs []func() error
	for _, s := range scenarios {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		p, err := prepare(s)
		if err != nil {
			return nil, fmt.Errorf("scenario %s: %w", s.Name, err)
		}
		for _, g := range groups {
			out = append(out, GroupsResult{Scenario: s.Name, Groups: g, Runs: make([]GroupsRun, o.Seeds)})
			res := &out[len(out)-1].Runs
			for i := range o.Seeds {
				jobs = append(jobs, func() (err error) {
					(*res)[i], err = p.groupsCampaign(ctx, o, g, int64(i+1), pace)
					return err
				})
			}
		}
	}
	errs := make([]error, len(jobs))
	parallel(len(jobs), 8*runtime.GOMAXPROCS(0), func(i int) { errs[i] = jobs[i]() })
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// groupsCampaign runs one campaign on groups groups of the simulated cluster.
func (p *prepared) groupsCampaign(ctx context.Context, o Options, groups int, seed int64, pace float64) (GroupsRun, error) {
	if err := ctx.Err(); err != nil {
		return GroupsRun{}, err
	}
	var simulator strings.Builder
	for _, f := range append(slices.Clone(p.Flags), fmt.Sprintf("-noise=%g", o.Noise), fmt.Sprintf("-seed=%d", seed)) {
		k, v, _ := strings.Cut(strings.TrimPrefix(f, "-"), "=")
		fmt.Fprintf(&simulator, "%s = %q\n", k, v)
	}
	name := fmt.Sprintf("%s-groups%d-%d", p.Name, groups, seed)
	settings := fmt.Sprintf("name = %q\ntrials = %d\nseed = %d", name, o.Trials, seed)
	extra := fmt.Sprintf("noise_target = %g\n[launcher]\ngroups = %d\n[simulator]\n%s", o.NoiseTarget, groups, simulator.String())
	sp, err := space.Parse(name+".toml", []byte(fmt.Sprintf(layout, settings, p.sc.Nodes*p.sc.GPUsPerNode, extra)+p.Space))
	if err != nil {
		return GroupsRun{}, err
	}
	st, err := freshStore(o.Dir, name)
	if err != nil {
		return GroupsRun{}, err
	}
	defer st.Close()
	var run GroupsRun
	var trials []store.Trial
	truths := map[string][]float64{}
	start := time.Now()
	c := tuner.Tuner{Space: sp, Store: st, Simulator: []string{"sim"}, Runner: paced{pace}, Progress: func(pr tuner.Progress) {
		run.Wall = append(run.Wall, time.Since(start).Seconds()/pace)
		trials = append(trials, pr.Trial)
		worst := 0.0
		for r, res := range results.Of(sp, trials, nil) {
			regret := 1.0
			if ch := res.Chosen(); ch != nil {
				key := strings.Join(ch.Env, " ")
				if _, ok := truths[key]; !ok {
					truths[key], _ = p.trueScores(ch.Env)
				}
				if v := truths[key]; v != nil {
					regret = 1 - v[r]/p.truth.Optimum[r]
				}
			}
			worst = math.Max(worst, regret)
		}
		run.Regret = append(run.Regret, worst)
	}}
	return run, c.Run(ctx, tuner.Options{})
}

// MedianRegretAt is the median over the runs of the worst range's regret at
// wall time w (1 before a run's first trial).
func (r GroupsResult) MedianRegretAt(w float64) float64 {
	var v []float64
	for _, run := range r.Runs {
		regret := 1.0
		for i, at := range run.Wall {
			if at <= w {
				regret = run.Regret[i]
			}
		}
		v = append(v, regret)
	}
	return Median(v)
}

// MedianFinal is the median over the runs of the worst range's regret at
// the end of the campaign.
func (r GroupsResult) MedianFinal() float64 {
	var v []float64
	for _, run := range r.Runs {
		v = append(v, run.Regret[len(run.Regret)-1])
	}
	return Median(v)
}

// MedianWall is the median over the runs of the campaign's wall time.
func (r GroupsResult) MedianWall() float64 {
	var v []float64
	for _, run := range r.Runs {
		v = append(v, run.Wall[len(run.Wall)-1])
	}
	return Median(v)
}

// WallToReach is the first wall time at which the median worst-range
// regret is at most target, or NaN if it never is.
func (r GroupsResult) WallToReach(target float64) float64 {
	var times []float64
	for _, run := range r.Runs {
		times = append(times, run.Wall...)
	}
	slices.Sort(times)
	for _, w := range times {
		if r.MedianRegretAt(w) <= target {
			return w
		}
	}
	return math.NaN()
}
