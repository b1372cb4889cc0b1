package tuner

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/nccltune/nccltune/space"
	"github.com/nccltune/nccltune/store"
)

// DefaultRounds is how many times validation measures each configuration.
const DefaultRounds = 5

// ErrNothingToValidate means no trial completed, so there is no choice to check.
var ErrNothingToValidate = errors.New("no completed trial to validate")

// arm is one configuration measured during validation.
type arm struct {
	name       string // "default" or "trial N"
	trial      int    // -1 for NCCL's defaults
	assignment space.Assignment
	env        []string
}

// Validate re-measures each range's chosen configuration against NCCL's
// defaults, interleaved round by round (A B, B A, A B, ...) so that drift
// hits both alike. A range keeps its tuned settings only if every run of them
// was correct, NCCL's log confirmed every variable, and the 95% confidence
// interval of the paired gain lies above zero. The verdicts are stored and
// returned in range order.
func (c *Campaign) Validate(ctx context.Context, rounds int) ([]store.Validation, error) {
	if rounds < 2 {
		return nil, fmt.Errorf("validation needs at least 2 rounds for a confidence interval, got %d", rounds)
	}
	sp := c.Space
	ses, err := c.open()
	if err != nil {
		return nil, err
	}
	trials, err := c.Store.Trials(ses.camp.ID)
	if err != nil {
		return nil, err
	}
	results := Results(sp, trials, nil)
	if !slices.ContainsFunc(results, func(r RangeResult) bool { return r.Best != nil }) {
		return nil, ErrNothingToValidate
	}
	if _, err := c.prepare(ses, trials, fullSweep(sp)); err != nil {
		return nil, err
	}
	arms := []arm{{name: "default", trial: -1, env: sp.Env(space.Assignment{})}}
	armOf := make([]int, len(results)) // range -> arm index; 0 where the default is the choice
	for i, r := range results {
		if r.Best == nil || r.Best.Number == 0 {
			continue
		}
		key := configKey(sp, r.Best.Params)
		k := slices.IndexFunc(arms, func(a arm) bool { return configKey(sp, a.assignment) == key })
		if k < 0 {
			k = len(arms)
			arms = append(arms, arm{name: fmt.Sprintf("trial %d", r.Best.Number), trial: r.Best.Number,
				assignment: space.Assignment(r.Best.Params), env: r.Best.Env})
		}
		armOf[i] = k
	}

	runs, err := c.measure(ctx, ses, arms, rounds)
	if err != nil {
		return nil, err
	}

	batch := time.Now().UnixNano()
	verdicts := make([]store.Validation, len(results))
	for i, r := range results {
		v := judge(r, arms, armOf[i], runs, rounds)
		v.Batch, v.Created, v.Rounds, v.Range = batch, time.Now(), rounds, r.Range.Name
		verdicts[i] = v
	}
	if err := c.Store.SaveValidation(ses.camp.ID, runs, verdicts); err != nil {
		return nil, err
	}
	return verdicts, nil
}

// measure runs every arm once per round, alternating the order (A B, B A, ...)
// so that drift and warm-up hit all arms alike.
func (c *Campaign) measure(ctx context.Context, ses *session, arms []arm, rounds int) ([]store.ValidationRun, error) {
	sp := c.Space
	var runs []store.ValidationRun
	for round := range rounds {
		order := make([]int, len(arms))
		for i := range order {
			order[i] = i
		}
		if round%2 == 1 {
			slices.Reverse(order)
		}
		for _, k := range order {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			a := arms[k]
			job := c.job(ses.cmd, a.assignment, a.env, fmt.Sprintf("validate-%d-%d", round, k))
			t := &store.Trial{Env: a.env}
			c.record(t, ses.run.Run(ctx, job), ses.sweep)
			if t.State == store.Interrupted {
				return nil, ctx.Err()
			}
			// Only the searched variables are the arm's to confirm; a pinned one is in every arm.
			unconfirmed := slices.DeleteFunc(t.NCCLLog.Unread(a.env), func(name string) bool { _, fixed := sp.Fixed[name]; return fixed })
			run := store.ValidationRun{Round: round, Arm: a.name, Env: a.env, State: t.State, Scores: t.Scores,
				Failure: strings.TrimPrefix(t.FailureKind+": "+t.FailureReason, ": "), Unconfirmed: unconfirmed}
			runs = append(runs, run)
			if c.OnValidationRun != nil {
				c.OnValidationRun(run, len(runs), rounds*len(arms))
			}
		}
	}
	return runs, nil
}

// judge draws one range's verdict from the validation runs.
func judge(r RangeResult, arms []arm, k int, runs []store.ValidationRun, rounds int) store.Validation {
	v := store.Validation{Candidate: 0, Verdict: "default", DefaultMean: math.NaN(), TunedMean: math.NaN(),
		Gain: math.NaN(), CILow: math.NaN(), CIHigh: math.NaN()}
	if r.Best == nil {
		v.Reason = "no completed trial measured this range"
		return v
	}
	if k == 0 {
		v.Reason = "NCCL's defaults measured best during the search"
		return v
	}
	v.Candidate = arms[k].trial
	var a, b []float64
	for _, run := range runs {
		if run.Arm != arms[0].name && run.Arm != arms[k].name {
			continue
		}
		switch {
		case run.State != store.Complete && run.Arm == arms[k].name:
			v.Reason = fmt.Sprintf("the tuned configuration failed in round %d (%s)", run.Round, run.Failure)
			return v
		case run.State != store.Complete:
			v.Reason = fmt.Sprintf("NCCL's defaults failed in round %d (%s); nothing to compare with", run.Round, run.Failure)
			return v
		case run.Arm == arms[k].name && len(run.Unconfirmed) > 0:
			v.Reason = "NCCL's log did not confirm reading " + strings.Join(run.Unconfirmed, ", ")
			return v
		case run.Arm == arms[0].name:
			a = append(a, run.Scores[r.Range.Name])
		default:
			b = append(b, run.Scores[r.Range.Name])
		}
	}
	if len(a) != rounds || len(b) != rounds {
		v.Reason = "incomplete validation"
		return v
	}
	v.DefaultMean, v.TunedMean = stat.Mean(a, nil), stat.Mean(b, nil)
	v.Gain, v.CILow, v.CIHigh = pairedGain(a, b)
	ci := fmt.Sprintf("%+.1f%% (95%% CI %+.1f%% to %+.1f%%) over %d rounds", 100*v.Gain, 100*v.CILow, 100*v.CIHigh, rounds)
	if v.CILow > 0 {
		v.Verdict, v.Reason = "tuned", "gain "+ci
	} else {
		v.Reason = "gain not significant: " + ci
	}
	return v
}

// pairedGain returns the relative gain of b over a and its 95% confidence
// interval, from the log-ratios of paired rounds (Student's t).
func pairedGain(a, b []float64) (gain, low, high float64) {
	d := make([]float64, len(a))
	for i := range a {
		d[i] = math.Log(b[i] / a[i])
	}
	mean, sd := stat.MeanStdDev(d, nil)
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(len(d) - 1)}.Quantile(0.975)
	half := t * sd / math.Sqrt(float64(len(d)))
	return math.Exp(mean) - 1, math.Exp(mean-half) - 1, math.Exp(mean+half) - 1
}
