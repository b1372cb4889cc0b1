package results

import (
	"math"
	"slices"
	"strings"

	"github.com/nccltune/nccltune/space"
	"github.com/nccltune/nccltune/store"
)

// PerSize are the variables a tuner plugin sets per message size inside one
// job; every other variable holds one value for the whole job.
var PerSize = []string{"NCCL_ALGO", "NCCL_PROTO"}

// Job is a campaign's choice for one job that sends every message size: one
// environment, and per range the configuration that a tuner plugin applies
// on top of it (its algorithm and protocol per size). A range's choice alone
// may need a variable set one way and another range's the other way; a job
// sets it once. So of the environments the campaign measured (each trial's,
// less PerSize), the job takes the one under which the ranges together gained
// most over NCCL's defaults, each range with its best trial there.
type Job struct {
	Env    []string      // NAME=value, for the whole job
	Ranges []RangeResult // indexed like sp.Ranges: the best under Env, held against NCCL's defaults
}

// JobOf chooses the job's environment and per-range configurations from the
// trials, with the validations (by range name) that concern them.
func JobOf(sp *space.Space, trials []store.Trial, vals []store.Validation) Job {
	defaults := Of(sp, trials, vals)
	groups := map[string][]store.Trial{}
	var keys []string
	for _, t := range trials {
		k := strings.Join(append(JobEnv(sp, t.Params), sp.Args(t.Params)...), " ")
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], t)
	}
	var best Job
	bestGain, bestSettings := math.Inf(-1), 0
	for _, k := range keys {
		rs := Of(sp, groups[k], vals)
		gain := 0.0
		for i := range rs {
			rs[i].Default, rs[i].DefaultScore = defaults[i].Default, defaults[i].DefaultScore
			gain += math.Log(rs[i].BestScore / rs[i].DefaultScore)
		}
		if math.IsNaN(gain) {
			continue // a range none of its trials measured, or no defaults to compare with
		}
		env := JobEnv(sp, groups[k][0].Params)
		// Within Parsimony per range, the fewer job-wide settings the better.
		if tie := math.Abs(gain-bestGain) <= float64(len(rs))*math.Log1p(Parsimony); gain > bestGain && !tie || tie && len(env) < bestSettings {
			best, bestGain, bestSettings = Job{Env: env, Ranges: rs}, gain, len(env)
		}
	}
	if best.Ranges == nil {
		best.Ranges = defaults
	}
	return best
}

// JobEnv is the environment an assignment gives less the per-size variables.
func JobEnv(sp *space.Space, a space.Assignment) []string {
	return slices.DeleteFunc(sp.Env(a), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.Contains(PerSize, name)
	})
}
