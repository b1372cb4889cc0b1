package tuner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/nccltune/nccltune/results"
	"github.com/nccltune/nccltune/runner"
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

// Validate re-measures each range's chosen configuration of the stored
// campaign against NCCL's defaults (see results.Judge) and stores the
// verdicts, returned in range order.
func (t *Tuner) Validate(ctx context.Context, rounds int) ([]store.Validation, error) {
	s, err := t.open(Options{KeepSettings: true})
	if err != nil {
		return nil, err
	}
	if s.trials, err = t.Store.Trials(s.camp.ID); err != nil {
		return nil, err
	}
	return s.validate(ctx, rounds)
}

// validate measures, against NCCL's defaults and interleaved round by round
// (A B, B A, A B, ...) so that drift hits both alike, every configuration a
// range's choice or the job's (see results.JobOf) needs, and records what
// NCCL decided per size under each (see probe).
func (s *session) validate(ctx context.Context, rounds int) ([]store.Validation, error) {
	if rounds < 2 {
		return nil, fmt.Errorf("validation needs at least 2 rounds for a confidence interval, got %d", rounds)
	}
	sp := s.Space
	choices := results.Of(sp, s.trials, nil)
	if !slices.ContainsFunc(choices, func(r results.RangeResult) bool { return r.Best != nil }) {
		return nil, ErrNothingToValidate
	}
	s.prepare(fullSweep(sp))
	// A candidate is a range's configuration to judge; arm 0, NCCL's defaults, is every candidate's reference.
	type candidate struct {
		result results.RangeResult
		arm    int
	}
	arms := []arm{{name: "default", trial: -1, env: sp.Env(space.Assignment{})}}
	var candidates []candidate
	job := results.JobOf(sp, s.trials, nil)
	for _, rs := range [][]results.RangeResult{choices, job.Ranges} {
		for _, r := range rs {
			if r.Best == nil || slices.ContainsFunc(candidates, func(c candidate) bool {
				return c.result.Range == r.Range && c.result.Best.Number == r.Best.Number
			}) {
				continue
			}
			k := 0
			if r.Best.Number != 0 {
				key := sp.Key(r.Best.Params)
				if k = slices.IndexFunc(arms, func(a arm) bool { return sp.Key(a.assignment) == key }); k < 0 {
					k = len(arms)
					arms = append(arms, arm{name: fmt.Sprintf("trial %d", r.Best.Number), trial: r.Best.Number,
						assignment: space.Assignment(r.Best.Params), env: r.Best.Env})
				}
			}
			candidates = append(candidates, candidate{r, k})
		}
	}

	runs, err := s.measure(ctx, arms, rounds)
	if err != nil {
		return nil, err
	}
	batch := time.Now().UnixNano()
	var verdicts []store.Validation
	for _, c := range candidates {
		var def, tuned []store.ValidationRun
		for _, run := range runs {
			switch run.Arm {
			case arms[0].name:
				def = append(def, run)
			case arms[c.arm].name:
				tuned = append(tuned, run)
			}
		}
		if c.arm == 0 {
			tuned = nil
		}
		v := results.Judge(c.result, tuned, def, rounds)
		v.Batch, v.Created, v.Rounds, v.Range = batch, time.Now(), rounds, c.result.Range.Name
		verdicts = append(verdicts, v)
	}
	if err := s.Store.SaveValidation(s.camp.ID, runs, verdicts); err != nil {
		return nil, err
	}
	// Where the job leaves a range to NCCL, a plugin that must name every
	// choice needs NCCL's own under the job's environment.
	probes := slices.Clone(arms)
	if alone := jobAlone(sp, job); !slices.ContainsFunc(probes, func(a arm) bool { return sp.Key(a.assignment) == sp.Key(alone) }) {
		probes = append(probes, arm{name: "job environment", trial: -1, assignment: alone, env: sp.Env(alone)})
	}
	for _, a := range probes {
		if err := s.probe(ctx, a); err != nil {
			return nil, err
		}
	}
	return verdicts, nil
}

// jobAlone is the job's environment without a per-size setting: what its
// trials set, less what a plugin sets per size.
func jobAlone(sp *space.Space, job results.Job) space.Assignment {
	for _, r := range job.Ranges {
		if r.Best != nil {
			a := maps.Clone(space.Assignment(r.Best.Params))
			for _, name := range results.PerSize {
				delete(a, name)
			}
			return a
		}
	}
	return space.Assignment{}
}

// probe launches a configuration once, briefly, with NCCL's TUNING log, and
// records the algorithm, protocol and channels NCCL chose per size: what a
// tuner plugin must reproduce where the configuration left them to NCCL. A
// probe that fails records nothing; the exports that need it say so.
func (s *session) probe(ctx context.Context, a arm) error {
	sp := s.Space
	env := slices.Clone(a.env)
	if _, pinned := sp.Fixed["NCCL_DEBUG_SUBSYS"]; !pinned {
		env = append(env, "NCCL_DEBUG_SUBSYS=INIT,ENV,NET,TUNING")
	}
	quick := runner.Plan{Sizes: sp.Sizes, Iters: 1, Warmup: 0}
	res := s.launch(ctx, quick, a.assignment, env, "probe-"+strings.ReplaceAll(a.name, " ", "-"))
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if res.Failure != nil || len(res.Log.Decisions) == 0 {
		return nil
	}
	return s.Store.SaveDecisions(s.camp.ID, sp.Key(a.assignment), res.Log.Decisions)
}

// measure runs every arm once per round, alternating the order (A B, B A, ...)
// so that drift and warm-up hit all arms alike.
func (s *session) measure(ctx context.Context, arms []arm, rounds int) ([]store.ValidationRun, error) {
	sp := s.Space
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
			t := &store.Trial{Env: a.env}
			s.record(t, s.launch(ctx, s.plan, a.assignment, a.env, fmt.Sprintf("validate-%d-%d", round, k)), s.measured)
			if t.State == store.Interrupted {
				return nil, ctx.Err()
			}
			// Only the searched variables are the arm's to confirm; a pinned one is in every arm.
			unconfirmed := slices.DeleteFunc(t.NCCLLog.Unread(a.env), func(name string) bool { _, fixed := sp.Fixed[name]; return fixed })
			run := store.ValidationRun{Round: round, Arm: a.name, Env: a.env, State: t.State, Scores: t.Scores,
				Failure: strings.TrimPrefix(t.FailureKind+": "+t.FailureReason, ": "), Unconfirmed: unconfirmed}
			runs = append(runs, run)
			if s.OnValidationRun != nil {
				s.OnValidationRun(run, len(runs), rounds*len(arms))
			}
		}
	}
	return runs, nil
}
