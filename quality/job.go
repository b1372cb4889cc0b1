package quality

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/nccltune/nccltune/examples"
	"github.com/nccltune/nccltune/results"
	"github.com/nccltune/nccltune/runner/sim"
	"github.com/nccltune/nccltune/search"
	"github.com/nccltune/nccltune/space"
	"github.com/nccltune/nccltune/tuner"
)

// JobScenarios are the clusters on which the job benchmark tunes the example
// workload (examples/sim-2node-ib-workload.toml).
var JobScenarios = []string{"2node-ib-gdr-off", "8node-ib-gdr", "2node-tcp"}

// JobRun is one campaign of the job benchmark: the true predicted
// communication time of the example workload's job, in seconds, with NCCL's
// defaults, with the configuration nccl-job.env would hold, and with the best
// single configuration of the space (by exhaustive search).
type JobRun struct {
	Default, Exported, Best float64
}

// Regret is how much longer the exported job's communication takes than the best's.
func (r JobRun) Regret() float64 { return r.Exported/r.Best - 1 }

// MeasureJob runs, per scenario and seed, a campaign of the example workload
// (with validation of o's rounds, so that the export's choice is what
// `nccltune run` would export) and scores its job configuration by the
// simulator's truth.
func MeasureJob(ctx context.Context, scenarios []string, o Options, rounds int) (map[string][]JobRun, error) {
	data, err := examples.Files.ReadFile("sim-2node-ib-workload.toml")
	if err != nil {
		return nil, err
	}
	out := map[string][]JobRun{}
	for _, name := range scenarios {
		named, err := ScenariosNamed([]string{name})
		if err != nil {
			return nil, err
		}
		sc, err := sim.ParseScenario(append(slices.Clone(named[0].Flags), "-noise=0"))
		if err != nil {
			return nil, err
		}
		for seed := range o.Seeds {
			sp, err := jobSpace(data, named[0], sc, o, int64(seed+1))
			if err != nil {
				return nil, err
			}
			run, err := jobCampaign(ctx, sp, sc, o, rounds, fmt.Sprintf("job-%s-%d", name, seed))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			out[name] = append(out[name], run)
		}
	}
	return out, nil
}

// jobSpace is the example workload's space on scenario s, with the options' noise, seed and budget.
func jobSpace(example []byte, s Scenario, sc sim.Scenario, o Options, seed int64) (*space.Space, error) {
	src := string(example)
	start, end := strings.Index(src, "[simulator]"), strings.Index(src, "[fixed]")
	var simulator strings.Builder
	simulator.WriteString("[simulator]\n")
	for _, f := range append(slices.Clone(s.Flags), fmt.Sprintf("-noise=%g", o.Noise), fmt.Sprintf("-seed=%d", seed)) {
		k, v, _ := strings.Cut(strings.TrimPrefix(f, "-"), "=")
		fmt.Fprintf(&simulator, "%s = %q\n", k, v)
	}
	src = src[:start] + simulator.String() + "\n" + src[end:]
	// The job's calls, made on as many ranks as the cluster has.
	src = strings.Replace(src, "gpus = 16", fmt.Sprintf("gpus = %d", sc.Nodes*sc.GPUsPerNode), 1)
	src = strings.ReplaceAll(src, "ranks = 16", fmt.Sprintf("ranks = %d", sc.Nodes*sc.GPUsPerNode))
	src = strings.Replace(src, "trials = 60", fmt.Sprintf("trials = %d", o.Trials), 1)
	src = strings.Replace(src, "seed = 1", fmt.Sprintf("seed = %d", seed), 1)
	return space.Parse(s.Name+"-workload.toml", []byte(src))
}

func jobCampaign(ctx context.Context, sp *space.Space, sc sim.Scenario, o Options, rounds int, name string) (JobRun, error) {
	st, err := freshStore(o.Dir, name)
	if err != nil {
		return JobRun{}, err
	}
	defer st.Close()
	tu := tuner.Tuner{Space: sp, Store: st, Simulator: []string{"sim"}, Runner: &clock{}}
	if err := tu.Run(ctx, tuner.Options{Simplify: true, ValidateRounds: rounds}); err != nil {
		return JobRun{}, err
	}
	camp, err := st.Campaign(sp.Campaign.Name)
	if err != nil {
		return JobRun{}, err
	}
	trials, err := st.Trials(camp.ID)
	if err != nil {
		return JobRun{}, err
	}
	vals, err := st.Validations(camp.ID)
	if err != nil {
		return JobRun{}, err
	}
	job := results.JobOf(sp, trials, vals)
	run := JobRun{Default: jobTime(sp, sc, nil), Exported: jobTime(sp, sc, job.Exported(sp)), Best: bestJobTime(sp, sc)}
	if math.IsInf(run.Exported, 0) || math.IsInf(run.Best, 0) {
		return run, fmt.Errorf("the exported or the best configuration cannot run")
	}
	return run, nil
}

// jobTime is the workload's true communication time (seconds) under assignment a, +Inf where it fails.
func jobTime(sp *space.Space, sc sim.Scenario, a space.Assignment) float64 {
	env := space.EnvMap(sp.Env(a))
	total := 0.0
	for _, r := range sp.Ranges {
		t, err := callsTime(sc, r, env)
		if err != nil {
			return math.Inf(1)
		}
		total += t
	}
	return total
}

// callsTime is the true time (seconds) of a range's calls under env.
func callsTime(sc sim.Scenario, r space.Range, env map[string]string) (float64, error) {
	sizes := make([]int64, len(r.Calls))
	for i, c := range r.Calls {
		sizes[i] = c.Bytes
	}
	us, err := sim.Times(sc, r.Collective, env, sizes)
	if err != nil {
		return 0, err
	}
	total := 0.0
	for i, c := range r.Calls {
		total += c.Count * us[i] / 1e6
	}
	return total, nil
}

// bestJobTime is the least true communication time of the workload over
// every configuration of the space, found by enumeration: over the shared
// settings, each collective takes its own parameters' best, as each
// collective is measured alone.
func bestJobTime(sp *space.Space, sc sim.Scenario) float64 {
	shared := *sp
	shared.Params = slices.DeleteFunc(slices.Clone(sp.Params), func(p space.Param) bool { return p.Collective != "" })
	own := map[string][]space.Assignment{} // per collective, the combinations of its own parameters
	for _, r := range sp.Ranges {
		mine := *sp
		coll := strings.ReplaceAll(r.Collective, "_", "")
		mine.Params = slices.DeleteFunc(slices.Clone(sp.Params), func(p space.Param) bool { return p.Collective != coll })
		own[r.Name], _ = search.Enumerate(&mine, 0, 1<<16)
	}
	configs, _ := search.Enumerate(&shared, 0, 1<<22)
	best := math.Inf(1)
	for _, a := range configs {
		total := 0.0
		for _, r := range sp.Ranges {
			least := math.Inf(1)
			for _, b := range own[r.Name] {
				c := maps.Clone(a)
				maps.Copy(c, b)
				if t, err := callsTime(sc, r, space.EnvMap(sp.Env(c))); err == nil {
					least = math.Min(least, t)
				}
			}
			total += least
		}
		best = math.Min(best, total)
	}
	return best
}
