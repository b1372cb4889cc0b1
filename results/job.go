package results

import (
	"maps"
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
	// Validation is the latest verdict on a workload's whole job (see
	// JudgeJob) that concerns its Assignment, if any.
	Validation *store.Validation
	// whole: a workload's job, judged as a whole (Validation). Its
	// configuration is composed from what the search found, whatever the
	// ranges' own verdicts, so that it is the one validation judged.
	whole bool
}

// JobOf chooses the job's environment and per-range configurations from the
// trials, with the validations (by range name) that concern them.
func JobOf(sp *space.Space, trials []store.Trial, vals []store.Validation) Job {
	rt := read(sp, trials)
	defaults := rt.of(sp, vals, nil)
	if len(sp.Ranges) == 1 && len(sp.Workload) == 0 {
		// One range: the job sends what the range measured, and its choice is the range's.
		job := Job{Ranges: defaults}
		if best := defaults[0].Best; best != nil {
			job.Env = JobEnv(sp, best.Params)
		}
		return job
	}
	groups := map[string][]int{} // indices in rt.trials
	var keys []string
	for j, t := range rt.trials {
		k := jobKey(sp, t.Params)
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], j)
	}
	var (
		jobs     []Job
		gains    []float64
		settings []int
	)
	for _, k := range keys {
		group := rt.subset(groups[k])
		rs := group.of(sp, vals, defaults)
		if len(sp.Workload) > 0 {
			leaveToNCCL(sp, group.trials, vals, rs)
		}
		gain := jobGain(sp, rs)
		if math.IsNaN(gain) {
			continue // a range none of its trials measured, or no defaults to compare with
		}
		first := &group.trials[0]
		jobs, gains = append(jobs, Job{Env: JobEnv(sp, first.Params), Ranges: rs}), append(gains, gain)
		settings = append(settings, Settings(sp, first)-perSizeSettings(sp, first.Params))
	}
	// Within Parsimony (per range where the ranges are weighed alike), the fewer job-wide settings the better.
	tolerance := -math.Log1p(-Parsimony)
	if len(sp.Workload) == 0 {
		tolerance *= float64(len(sp.Ranges))
	}
	var best Job
	if len(jobs) > 0 {
		best = jobs[parsimonious(gains, settings, tolerance)]
	}
	if best.Ranges == nil {
		best.Ranges = defaults
	}
	best.whole = len(sp.Workload) > 0
	reading := space.KeyReading(sp.Key(best.Assignment(sp)))
	for _, v := range vals {
		if v.Range == JobRange && space.KeyReading(v.Config) == reading {
			best.Validation = &v
		}
	}
	return best
}

// leaveToNCCL holds each range of rs, a workload's collectives' choices
// among trials of one environment, to the 1% a range's choice needs over
// NCCL's defaults (MinGain): a choice that sets the collective's algorithm
// or protocol must gain it over the collective left to NCCL under the
// environment, scored over every trial of it that left it so (as NCCL's
// defaults are over all their runs), or the range takes that. The trials
// that set another collective's measure this one's alone alike; as
// configurations they set as much as the choice, and parsimony did not
// prefer them. Where one of them failed by its settings, which may have
// been this collective's, the choice stands.
func leaveToNCCL(sp *space.Space, trials []store.Trial, vals []store.Validation, rs []RangeResult) {
	for i, r := range rs {
		if r.Best == nil || !setsCollective(sp, r, r.Best.Params) {
			continue
		}
		alone := slices.DeleteFunc(slices.Clone(trials), func(t store.Trial) bool { return setsCollective(sp, r, t.Params) })
		// One key: the trials are one configuration of this collective.
		cs := configsOf(r.Range.Name, alone, make([]string, len(alone)), slices.Repeat([]float64{math.NaN()}, len(alone)))
		if len(cs) == 0 || cs[0].failed || Gains(r.BestScore, cs[0].score()) {
			continue
		}
		best := cs[0].first
		rs[i].Best, rs[i].BestScore, rs[i].BestRuns = best, cs[0].score(), len(cs[0].runs)
		rs[i].Unconfirmed, rs[i].UnconfirmedIn = unconfirmedBy(sp, cs[0].runs)
		rs[i].Validation = latestOn(vals, r.Range.Name, sp.Key(best.Params), best.Number)
	}
}

// setsCollective reports whether a sets the per-size variables of range
// r's collective (NCCL_ALGO[allreduce], ...).
func setsCollective(sp *space.Space, r RangeResult, a space.Assignment) bool {
	return slices.ContainsFunc(sp.Params, func(p space.Param) bool {
		v, ok := a[p.Name]
		return ok && v != space.Unset && slices.Contains(PerSize, p.Variable()) && p.Collective == strings.ReplaceAll(r.Range.Collective, "_", "")
	})
}

// jobGain is the log of how much faster the job runs with each range's best
// than with NCCL's defaults: with a workload, of its predicted communication
// time (each range's score is the inverse of its collective's time); else
// with every range weighed alike.
func jobGain(sp *space.Space, rs []RangeResult) float64 {
	if len(sp.Workload) > 0 {
		def, best := 0.0, 0.0
		for _, r := range rs {
			def, best = def+1/r.DefaultScore, best+1/r.BestScore
		}
		return math.Log(def / best)
	}
	gain := 0.0
	for _, r := range rs {
		gain += math.Log(r.BestScore / r.DefaultScore)
	}
	return gain
}

// Assignment is the job's one configuration: its environment, and the
// per-size variables from the choice of the range they serve (a
// collective's part, NCCL_ALGO[allreduce], or wholeServes' range's); where
// NCCL's own choice stands, none. Per-size variables that serve several
// ranges of sizes are left to a tuner plugin's rules.
func (j Job) Assignment(sp *space.Space) space.Assignment {
	a := space.Assignment{}
	served := wholeServes(sp, j.Ranges)
	for i, r := range j.Ranges {
		if r.Best == nil {
			continue
		}
		for _, p := range sp.Params {
			v, ok := r.Best.Params[p.Name]
			perSize := slices.Contains(PerSize, p.Variable())
			switch {
			case !ok:
			case !perSize:
				a[p.Name] = v // the same in every range: the job's environment
			case p.Collective == strings.ReplaceAll(r.Range.Collective, "_", "") || p.Collective == "" && i == served:
				a[p.Name] = space.Unset
				if j.Uses(r) {
					a[p.Name] = v
				}
			}
		}
	}
	return a
}

// wholeServes is the index of the range of rs whose choice a per-size
// variable searched whole (NCCL_ALGO) serves in the job: the one range, or
// a workload's one range of a collective that NCCL runs with an algorithm
// and protocol (all_reduce beside alltoall, which it runs with neither,
// and for which NCCL_ALGO was searched whole); -1 where several are, whose
// choices a tuner plugin's rules make per size.
func wholeServes(sp *space.Space, rs []RangeResult) int {
	if len(rs) == 1 {
		return 0
	}
	served := -1
	for i, r := range rs {
		switch {
		case len(sp.Workload) == 0 || !space.TakesAlgorithm(r.Range.Collective):
		case served >= 0:
			return -1
		default:
			served = i
		}
	}
	return served
}

// Alone is the job's environment without a per-size setting: what its
// EnvTrial set, less what a tuner plugin sets per size. Where the job leaves
// sizes to NCCL, NCCL's decisions under it are what a plugin must name.
func (j Job) Alone(sp *space.Space) space.Assignment {
	if t := j.EnvTrial(); t != nil {
		return WithoutPerSize(sp, space.Assignment(t.Params))
	}
	return space.Assignment{}
}

// EnvTrial is the trial whose environment the job takes: the best of the
// first range whose choice the job uses, else the first measured range's;
// nil where no range was measured. The ranges' bests share one environment
// wherever an environment could be compared with NCCL's defaults; where none
// could (NCCL's defaults failed in the search), each range's best is its own,
// and a range whose choice the job does not use, such as one that
// validation rejected, must not lend the job its settings.
func (j Job) EnvTrial() *store.Trial {
	i := slices.IndexFunc(j.Ranges, j.Uses)
	if i < 0 {
		i = slices.IndexFunc(j.Ranges, func(r RangeResult) bool { return r.Best != nil })
	}
	if i < 0 {
		return nil
	}
	return j.Ranges[i].Best
}

// Uses reports whether the job's configuration takes range r's choice (its
// per-size settings): a workload's job, judged as a whole, takes each
// range's best under its environment, as JobOf weighed them, whatever that
// gained over NCCL's defaults (the same settings left to NCCL under the
// environment may run slower still; JobOf holds them to MinGain over that,
// leaveToNCCL); a job of one collective's ranges, what each range's verdict
// kept.
func (j Job) Uses(r RangeResult) bool {
	if j.whole {
		return r.Best != nil && !r.bestIsDefault()
	}
	return r.Tuned()
}

// Composed reports whether the ranges whose choices the job uses set
// job-wide variables differently, so that no trial ran the job's
// configuration: only where NCCL's defaults failed in the search (see
// EnvTrial), each range's best bringing its own environment.
func (j Job) Composed(sp *space.Space) bool {
	envs := map[string]bool{}
	for _, r := range j.Ranges {
		if j.Uses(r) {
			envs[jobKey(sp, r.Best.Params)] = true
		}
	}
	return len(envs) > 1
}

// jobKey identifies the job-wide part of a configuration as NCCL reads it:
// its JobEnv and options.
func jobKey(sp *space.Space, a space.Assignment) string {
	return strings.Join(append(space.ReadingEnv(JobEnv(sp, a)), sp.ReadingArgs(a)...), " ")
}

// DefaultsKept reports whether validation rejected the job's configuration,
// so that NCCL's defaults stand.
func (j Job) DefaultsKept() bool { return j.Validation != nil && j.Validation.Verdict != "tuned" }

// Exported is the configuration a job is exported with: its Assignment, or
// none (NCCL's defaults) where validation rejected it.
func (j Job) Exported(sp *space.Space) space.Assignment {
	if j.DefaultsKept() {
		return space.Assignment{}
	}
	return j.Assignment(sp)
}

// Times are each range's predicted communication time, in seconds, with
// NCCL's defaults and with the configuration exported (see Exported), for a
// workload (whose ranges score the inverse of their times); NaN where
// unmeasured.
func (j Job) Times() (defaults, exported []float64) {
	for _, r := range j.Ranges {
		score := r.BestScore
		if j.DefaultsKept() || !j.Uses(r) {
			score = r.DefaultScore
		}
		defaults, exported = append(defaults, 1/r.DefaultScore), append(exported, 1/score)
	}
	return defaults, exported
}

// WithoutPerSize is a less its per-size variables (each collective's part
// of them too): what leaves the algorithm and protocol to NCCL.
func WithoutPerSize(sp *space.Space, a space.Assignment) space.Assignment {
	out := maps.Clone(a)
	for _, p := range sp.Params {
		if slices.Contains(PerSize, p.Variable()) {
			delete(out, p.Name)
		}
	}
	return out
}

// perSizeSettings counts the per-size variables an assignment sets.
func perSizeSettings(sp *space.Space, a space.Assignment) int {
	n := 0
	for _, p := range sp.Params {
		if v, ok := a[p.Name]; ok && v != space.Unset && slices.Contains(PerSize, p.Variable()) {
			n++
		}
	}
	return n
}

// JobEnv is the environment an assignment gives less the per-size variables.
func JobEnv(sp *space.Space, a space.Assignment) []string {
	return slices.DeleteFunc(sp.Env(a), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.Contains(PerSize, name)
	})
}
