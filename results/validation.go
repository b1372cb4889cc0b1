package results

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/nccltune/nccltune/internal/text"
	"github.com/nccltune/nccltune/runner"
	"github.com/nccltune/nccltune/space"
	"github.com/nccltune/nccltune/store"
)

// Judge draws one range's verdict from a validation: the runs of its chosen
// configuration (nil where NCCL's defaults are the choice) and of NCCL's
// defaults, rounds each. The range keeps its tuned settings only if every
// run of them was correct, NCCL's log confirmed every variable (a run whose
// output has no NCCL INFO lines confirms none, and is not validated), and the 95%
// confidence interval of the paired gain lies above zero, or, with no gain
// to compute, NCCL's defaults failed as they would in a job (failedInAJob).
func Judge(r RangeResult, tuned, defaults []store.ValidationRun, rounds int) store.Validation {
	v := store.Validation{Range: r.Range.Name, Verdict: "default", DefaultMean: math.NaN(), TunedMean: math.NaN(),
		Gain: math.NaN(), CILow: math.NaN(), CIHigh: math.NaN()}
	switch {
	case r.Best == nil:
		v.Reason = "no completed trial measured this range"
		return v
	case tuned == nil:
		v.Reason = "NCCL's defaults measured best during the search"
		return v
	}
	v.Candidate = r.Best.Number
	return verdict(v, tuned, defaults, rounds, func(run store.ValidationRun) (float64, bool) {
		s, ok := run.Scores[r.Range.Name]
		return s, ok
	})
}

// JobRange names the verdict on a workload's whole job.
const JobRange = "job"

// JudgeJob draws the verdict on the job's one configuration (Job.Assignment)
// of a workload: the rounds' predicted communication times of the whole job,
// the sum over the workload's collectives, each a range (tuned nil: the
// job's configuration is NCCL's defaults).
func JudgeJob(sp *space.Space, tuned, defaults []store.ValidationRun, rounds int) store.Validation {
	v := store.Validation{Range: JobRange, Candidate: -1, Verdict: "default", DefaultMean: math.NaN(), TunedMean: math.NaN(),
		Gain: math.NaN(), CILow: math.NaN(), CIHigh: math.NaN()}
	if tuned == nil {
		v.Reason = "NCCL's defaults measured best during the search"
		return v
	}
	return verdict(v, tuned, defaults, rounds, func(run store.ValidationRun) (float64, bool) {
		seconds := 0.0
		for _, r := range sp.Ranges {
			s, ok := run.Scores[r.Name]
			if !ok {
				return 0, false
			}
			seconds += 1 / s
		}
		return 1 / seconds, true
	})
}

// verdict completes v from the paired runs, each scored by score.
func verdict(v store.Validation, tuned, defaults []store.ValidationRun, rounds int, score func(store.ValidationRun) (float64, bool)) store.Validation {
	for _, run := range tuned {
		switch {
		case !KeepsDefaults(run):
		case run.State != store.Complete:
			v.Reason = fmt.Sprintf("the tuned configuration failed in round %d (%s)", run.Round, run.Failure)
			return v
		case len(run.Unconfirmed) > 0:
			// No validation run's output is kept: the choice's search trial
			// shows what NCCL logged under the same settings.
			show := ""
			if v.Candidate >= 0 {
				show = fmt.Sprintf("; `nccltune show %d` shows what NCCL logged in the search", v.Candidate)
			}
			names := strings.Join(run.Unconfirmed, ", ")
			const silent = "does the program log NCCL to a file, use gloo, or drop NCCL_DEBUG?"
			switch run.Info {
			case store.InfoNone:
				v.Reason = fmt.Sprintf("the settings' effect was not confirmed: the output of round %d had no NCCL INFO lines, so nothing showed NCCL reading %s (%s%s)",
					run.Round, names, silent, show)
			case store.InfoLines:
				v.Reason = fmt.Sprintf("the settings' effect was not confirmed: NCCL's log did not show it reading %s in round %d "+
					"(it read another value, rejected it, or did not read it on the path it took%s)", names, run.Round, show)
			default: // stored before runs recorded which
				v.Reason = fmt.Sprintf("the settings' effect was not confirmed: NCCL's log did not show it reading %s in round %d "+
					"(it read another value, or the output had no NCCL INFO lines: %s%s)", names, run.Round, silent, show)
			}
			return v
		}
	}
	var a, b []float64
	for _, runs := range []struct {
		runs []store.ValidationRun
		dst  *[]float64
	}{{defaults, &a}, {tuned, &b}} {
		for _, run := range runs.runs {
			if s, ok := score(run); ok {
				*runs.dst = append(*runs.dst, s)
			}
		}
	}
	for _, run := range defaults {
		if failedInAJob(run) && len(b) == rounds {
			// The tuned configuration ran correctly in every round where
			// NCCL's defaults failed as they may in a job: keeping them
			// would export what validation saw fail. No gain to compute.
			v.Verdict, v.TunedMean = "tuned", stat.GeometricMean(b, nil)
			v.Reason = fmt.Sprintf("NCCL's defaults failed in round %d (%s); the tuned configuration ran correctly in all %d rounds", run.Round, run.Failure, rounds)
			return v
		}
	}
	for _, run := range defaults {
		if run.State != store.Complete {
			v.Reason = fmt.Sprintf("NCCL's defaults failed in round %d (%s); nothing to compare with", run.Round, run.Failure)
			return v
		}
	}
	if len(a) != rounds || len(b) != rounds {
		v.Reason = "incomplete validation"
		return v
	}
	// Geometric, as the gain beside them is a mean of ratios: "+0.0%" beside
	// arithmetic means of 100 and 125 (runs of 50 and 200) would read as a lie.
	v.DefaultMean, v.TunedMean = stat.GeometricMean(a, nil), stat.GeometricMean(b, nil)
	v.Gain, v.CILow, v.CIHigh = PairedGain(a, b)
	ci := fmt.Sprintf("%+.1f%% (95%% CI %+.1f%% to %+.1f%%) over %d rounds", text.Bounded(100*v.Gain), text.Bounded(100*v.CILow), text.Bounded(100*v.CIHigh), rounds)
	switch {
	case v.CILow > 0:
		v.Verdict, v.Reason = "tuned", "gain "+ci
	case v.CIHigh < 0:
		v.Reason = "slower than NCCL's defaults: " + ci
	default:
		v.Reason = "gain not significant: " + ci
	}
	return v
}

// failedInAJob reports whether a validation run of NCCL's defaults failed
// as a job under them would: wrong data, an NCCL error, a hang. Not every
// failure FailedBySettings counts: one round's garbled or implausible
// output, a crash with no NCCL error, says too little of NCCL's defaults
// to export tuned settings with no gain measured.
func failedInAJob(r store.ValidationRun) bool {
	return r.State != store.Complete && slices.Contains([]runner.FailureKind{runner.FailWrong, runner.FailNCCL, runner.FailTimeout}, failureKind(r))
}

// FailedBySettings reports whether a validation run failed as its
// settings may make a job fail: stored as "kind: reason", a launch that
// started no rank, an interrupt or a node's failure did not run them.
func FailedBySettings(r store.ValidationRun) bool {
	return r.State != store.Complete && failureKind(r).Settings()
}

// KeepsDefaults reports whether a validation run of a tuned configuration
// keeps NCCL's defaults for it in its validation, whatever its other rounds
// measure (see Judge): it failed, or NCCL's log did not confirm its settings.
func KeepsDefaults(r store.ValidationRun) bool {
	return r.State != store.Complete || len(r.Unconfirmed) > 0
}

// Disqualifies reports whether a validation run of a tuned configuration
// keeps NCCL's defaults for it whatever the other rounds measure (see
// Judge): it failed by its settings, or NCCL's log did not confirm them.
func Disqualifies(r store.ValidationRun) bool {
	return FailedBySettings(r) || r.State == store.Complete && len(r.Unconfirmed) > 0
}

// failureKind is the kind of a failed run's failure, stored as "kind: reason".
func failureKind(r store.ValidationRun) runner.FailureKind {
	kind, _, _ := strings.Cut(r.Failure, ":")
	return runner.FailureKind(kind)
}

// FailedEarlier is the reason of a verdict that holds a configuration to
// NCCL's defaults for its run that failed by its settings in an earlier
// validation: one that once gave wrong data or hung may do so in a
// training job, however well it ran since.
func FailedEarlier(run store.ValidationRun) string {
	return fmt.Sprintf("the tuned configuration failed in an earlier validation, in its round %d (%s)", run.Round, run.Failure)
}

// WithHeld is vals (oldest first) followed by the verdicts that hold to
// NCCL's defaults, in every range and a workload's job, each configuration
// that a validation run failed by its settings holds (runs, of every batch;
// see HeldBy), as validation holds it wherever it measures it again.
// Validation gave verdicts only in the ranges it was then the choice of: a
// range whose choice it became since (a search resumed without validating)
// had none, or an older one that kept it, and exported it. Where the latest
// verdict on it in a range already keeps NCCL's defaults, that one says why.
func WithHeld(sp *space.Space, trials []store.Trial, vals []store.Validation, runs []store.ValidationRun) []store.Validation {
	names := make([]string, 0, len(sp.Ranges)+1)
	for _, r := range sp.Ranges {
		names = append(names, r.Name)
	}
	if len(sp.Workload) > 0 {
		names = append(names, JobRange)
	}
	out := slices.Clip(vals)
	held := map[string]bool{}
	for _, run := range runs {
		holds := HeldBy(sp, trials, run)
		for _, t := range trials {
			if !holds(t.Params) {
				continue
			}
			key := sp.Key(t.Params)
			if held[key] {
				continue
			}
			held[key] = true
			for _, name := range names {
				if latest := latestOn(vals, name, key, t.Number); latest != nil && latest.Verdict != "tuned" {
					continue
				}
				out = append(out, store.Validation{Range: name, Candidate: t.Number, Config: key, Rounds: 1, Verdict: "default", Reason: FailedEarlier(run),
					DefaultMean: math.NaN(), TunedMean: math.NaN(), Gain: math.NaN(), CILow: math.NaN(), CIHigh: math.NaN()})
			}
		}
	}
	return out
}

// HeldBy reports which configurations validation run holds to NCCL's
// defaults: none where it did not fail by its settings; that of the trial
// its arm names ("trial N"); for another arm (a workload's job), every one
// of its environment. NCCL's defaults are what a verdict falls back on:
// their run holds nothing, not even a configuration of DDP knobs alone,
// whose environment is theirs.
func HeldBy(sp *space.Space, trials []store.Trial, run store.ValidationRun) func(space.Assignment) bool {
	none := func(space.Assignment) bool { return false }
	if !FailedBySettings(run) || run.Arm == "default" {
		return none
	}
	if number, err := strconv.Atoi(strings.TrimPrefix(run.Arm, "trial ")); err == nil {
		i := slices.IndexFunc(trials, func(t store.Trial) bool { return t.Number == number })
		if i < 0 {
			return none
		}
		reading := sp.Reading(trials[i].Params)
		return func(a space.Assignment) bool { return !sp.IsDefaults(a) && sp.Reading(a) == reading }
	}
	env := space.ReadingEnv(run.Env)
	return func(a space.Assignment) bool {
		return !sp.IsDefaults(a) && slices.Equal(space.ReadingEnv(sp.Env(a)), env)
	}
}

// latestOn is the latest of vals on configuration key (trial number's) in
// range name, nil if none: a verdict on a spelling NCCL reads alike
// (space.KeyReading) concerns it, as results group trials so, and a verdict
// stored before verdicts named their configuration names its trial. Of
// reads a range's verdict so too.
func latestOn(vals []store.Validation, name, key string, number int) *store.Validation {
	reading := space.KeyReading(key)
	for i := len(vals) - 1; i >= 0; i-- {
		if v := &vals[i]; v.Range == name && (space.KeyReading(v.Config) == reading || v.Config == "" && v.Candidate == number) {
			return v
		}
	}
	return nil
}

// PairedGain returns the relative gain of b over a and its 95% confidence
// interval, from the log-ratios of paired rounds (Student's t); NaN for an
// interval of fewer than 2 rounds, whose spread is unknown (and for a gain
// of none).
func PairedGain(a, b []float64) (gain, low, high float64) {
	d := make([]float64, len(a))
	for i := range a {
		d[i] = math.Log(b[i] / a[i])
	}
	if len(d) < 2 {
		// Student's t has no quantile for no degree of freedom.
		return math.Exp(stat.Mean(d, nil)) - 1, math.NaN(), math.NaN()
	}
	mean, sd := stat.MeanStdDev(d, nil)
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(len(d) - 1)}.Quantile(0.975)
	half := t * sd / math.Sqrt(float64(len(d)))
	return math.Exp(mean) - 1, math.Exp(mean-half) - 1, math.Exp(mean+half) - 1
}
