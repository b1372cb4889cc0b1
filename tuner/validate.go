package tuner

import (
	"context"
	"errors"
	"fmt"
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

// MaxRounds bounds validation's and comparison's rounds: each launches
// every configuration compared, so a mistyped count would run for weeks.
const MaxRounds = 1000

// CheckRounds checks a count of interleaved rounds: two at least, for a
// confidence interval.
func CheckRounds(n int) error {
	if n < 2 || n > MaxRounds {
		return fmt.Errorf("the rounds must be 2 to %d, not %d", MaxRounds, n)
	}
	return nil
}

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
	if err := CheckRounds(rounds); err != nil {
		return nil, err
	}
	s, err := t.open(Options{KeepSettings: true})
	ctx = t.held(ctx)
	if err != nil {
		return nil, err
	}
	if s.trials, err = t.storedTrials(s.camp.ID); err != nil {
		return nil, err
	}
	return s.validate(ctx, rounds, true)
}

// validate measures, against NCCL's defaults and interleaved round by round
// (A B, B A, A B, ...) so that drift hits both alike, every configuration a
// range's choice or the job's (see results.JobOf) needs, and records what
// NCCL decided per size under each (see probe). Unless remeasure, a choice
// with a verdict in at least rounds rounds keeps it, unmeasured: a
// campaign validates the choices a resume changed (see validatedAs), and
// measuring the others again would spend launches on what was judged, and
// give a gain judged not significant another chance to pass by luck.
func (s *session) validate(ctx context.Context, rounds int, remeasure bool) ([]store.Validation, error) {
	if rounds < 2 {
		return nil, fmt.Errorf("validation needs at least 2 rounds for a confidence interval, got %d", rounds)
	}
	sp := s.Space
	var vals []store.Validation
	if !remeasure {
		var err error
		if vals, err = s.Store.Validations(s.camp.ID); err != nil {
			return nil, err
		}
	}
	choices := results.Of(sp, s.trials, vals)
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
	job := results.JobOf(sp, s.trials, vals)
	for _, rs := range [][]results.RangeResult{choices, job.Ranges} {
		for _, r := range rs {
			if r.Best == nil || slices.ContainsFunc(candidates, func(c candidate) bool {
				return c.result.Range.Name == r.Range.Name && c.result.Best.Number == r.Best.Number
			}) {
				continue
			}
			// NCCL's defaults are arm 0 by their configuration, whatever the
			// trial's number: the groups, which set how many trials ran
			// them, are no part of the space's hash and may have changed.
			k := armOf(sp, &arms, fmt.Sprintf("trial %d", r.Best.Number), r.Best.Number, space.Assignment(r.Best.Params))
			candidates = append(candidates, candidate{r, k})
		}
	}
	// A workload's job runs one configuration, composed of each collective's choice: it is judged as a whole.
	jobArm := -1
	if len(sp.Workload) > 0 {
		jobArm = armOf(sp, &arms, "job", -1, job.Assignment(sp))
	}

	failed, err := s.failedBefore()
	if err != nil {
		return nil, err
	}
	// stands reports whether verdict v, on arm k's configuration, stands,
	// unmeasured and not judged again: one in the rounds asked, which no
	// failure since holds to NCCL's defaults (heldTo, which a verdict says).
	stands := func(v *store.Validation, k int) bool {
		return v != nil && v.Rounds >= rounds && heldBy(arms[k], failed) == nil
	}
	// A configuration an earlier failure holds has its verdict (heldTo), as
	// does one whose every verdict stands: it is not measured.
	judged := make([]bool, len(arms))
	for k := 1; k < len(arms); k++ {
		judged[k] = heldBy(arms[k], failed) != nil || (k != jobArm || stands(job.Validation, k)) &&
			!slices.ContainsFunc(candidates, func(c candidate) bool { return c.arm == k && !stands(c.result.Validation, k) })
	}
	batch, done, err := s.measuredBefore(arms, rounds, judged)
	if err != nil {
		return nil, err
	}
	// A stopped validation is gone on in, and ended, though none of its
	// rounds is whole, or it measured none of these arms: a later one would
	// otherwise go on from its runs.
	if batch == 0 {
		batch = time.Now().UnixNano()
	}
	// judge draws the verdicts on the configurations of the arms that in
	// says, from runs.
	judge := func(runs []store.ValidationRun, in func(arm int) bool) []store.Validation {
		defaults := runsOf(runs, arms[0].name)
		// tuned are an arm's runs, not nil where there are none (an
		// earlier failure held it unmeasured); nil for NCCL's defaults,
		// judged as themselves.
		tuned := func(arm int) []store.ValidationRun {
			if arm == 0 {
				return nil
			}
			return append([]store.ValidationRun{}, runsOf(runs, arms[arm].name)...)
		}
		var vs []store.Validation
		for _, c := range candidates {
			if !in(c.arm) || stands(c.result.Validation, c.arm) {
				continue
			}
			v := results.Judge(c.result, tuned(c.arm), defaults, rounds)
			v.Config = sp.Key(arms[c.arm].assignment)
			vs = append(vs, heldTo(v, arms[c.arm], failed))
		}
		if jobArm >= 0 && in(jobArm) && !stands(job.Validation, jobArm) {
			v := results.JudgeJob(sp, tuned(jobArm), defaults, rounds)
			v.Config = sp.Key(arms[jobArm].assignment)
			vs = append(vs, heldTo(v, arms[jobArm], failed))
		}
		for i := range vs {
			vs[i].Batch, vs[i].Created, vs[i].Rounds = batch, time.Now(), rounds
		}
		return vs
	}
	// Each run is stored as it ends, so that a failure in a validation that
	// is stopped, or killed, holds its configuration to NCCL's defaults in
	// every later one (see failedBefore); and a configuration that fails by
	// its settings, or whose settings NCCL's log did not confirm, is judged
	// at once, with the run (results.Disqualifies): an older verdict on it
	// would otherwise stand until a validation ends. Judged once, as it is
	// measured no more, and in the one round it is drawn from, short of
	// those asked: the validation has not ended (see validatedAs), and a
	// resume runs it again if it does not end; if it does, its verdicts
	// follow.
	runs, err := s.measure(ctx, arms, rounds, done, func(r store.ValidationRun) error {
		var vs []store.Validation
		if k := slices.IndexFunc(arms, func(a arm) bool { return a.name == r.Arm }); k > 0 && results.Disqualifies(r) {
			vs = judge([]store.ValidationRun{r}, func(arm int) bool { return arm == k })
			for i := range vs {
				vs[i].Rounds = 1
			}
		}
		return s.Store.SaveValidation(s.camp.ID, batch, []store.ValidationRun{r}, vs)
	})
	if err != nil {
		return nil, err
	}
	verdicts := judge(runs, func(int) bool { return true })
	// Where the job leaves a range to NCCL, a plugin that must name every
	// choice needs NCCL's own under the job's environment.
	probes := slices.Clone(arms)
	if alone := job.Alone(sp); !slices.ContainsFunc(probes, func(a arm) bool { return sp.Key(a.assignment) == sp.Key(alone) }) {
		probes = append(probes, arm{name: "job environment", trial: -1, assignment: alone, env: sp.Env(alone)})
	}
	for _, a := range probes {
		if err := s.probe(ctx, a); err != nil {
			return nil, err
		}
	}
	// Stored once probed: a campaign whose choices have verdicts runs
	// nothing on resume (see Finished), and one stopped while probing
	// would have left a plugin's rules without NCCL's decisions.
	if err := s.Store.SaveValidation(s.camp.ID, batch, nil, verdicts); err != nil {
		return nil, err
	}
	return verdicts, nil
}

// hold is a run of an earlier validation of the campaign, one that was
// stopped included, and the configurations it holds to NCCL's defaults
// (results.HeldBy): it failed by its settings.
type hold struct {
	run   store.ValidationRun
	holds func(space.Assignment) bool
}

// failedBefore are the holds of the campaign's earlier validations, in the
// order they ran.
func (s *session) failedBefore() ([]hold, error) {
	runs, err := s.Store.AllValidationRuns(s.camp.ID)
	if err != nil {
		return nil, err
	}
	var holds []hold
	for _, r := range runs {
		if results.FailedBySettings(r) {
			holds = append(holds, hold{r, results.HeldBy(s.Space, s.trials, r)})
		}
	}
	return holds, nil
}

// measuredBefore is the batch of the campaign's last validation, where it was
// stopped before its verdicts (0 where none was), and its progress (judged, by arm, the verdicts
// drawn before it): the runs of the rounds from the first that measured each
// of arms still measured, up to rounds. A validation goes on after them, as
// the search goes on after its finished trials, or one stopped again and
// again (a campaign resumed in allocations each shorter than its
// validation) would never end. Each round pairs its arms' runs; a round the
// stop cut short is measured again whole.
func (s *session) measuredBefore(arms []arm, rounds int, judged []bool) (int64, progress, error) {
	done := progress{judged: judged}
	batches, err := s.Store.ValidationBatches(s.camp.ID)
	if err != nil || len(batches) == 0 {
		return 0, done, err
	}
	batch := batches[len(batches)-1]
	vals, err := s.Store.Validations(s.camp.ID)
	if err != nil {
		return 0, done, err
	}
	// A verdict in fewer than 2 rounds is one drawn at once on a run that disqualified its configuration (see validate).
	if slices.ContainsFunc(vals, func(v store.Validation) bool { return v.Batch == batch && v.Rounds >= 2 }) {
		return 0, done, nil
	}
	stored, err := s.Store.ValidationRuns(s.camp.ID, batch)
	if err != nil {
		return 0, done, err
	}
	// Each arm's last run of a round: a round measured again whole after
	// a stop cut it short holds the earlier runs too.
	type of struct {
		round    int
		arm, env string
	}
	last := map[of]store.ValidationRun{}
	for _, r := range stored {
		last[of{r.Round, r.Arm, envKey(r.Env)}] = r
	}
	for round := range rounds {
		whole := done.clone()
		for _, k := range roundOrder(len(arms), round) {
			r, ok := last[of{round, arms[k].name, envKey(arms[k].env)}]
			switch {
			case ok:
				whole.add(k, r)
			case whole.measures(k):
				return batch, done, nil
			}
		}
		whole.rounds++
		done = whole
	}
	return batch, done, nil
}

// progress is a validation's: the runs of its whole rounds, and the arms
// it measures no more.
type progress struct {
	runs   []store.ValidationRun
	rounds int // whole rounds measured
	// judged, by arm: its verdict is drawn, as NCCL's defaults, whatever
	// its later rounds measure (an earlier validation's failure holds it,
	// or a run of it kept them: results.KeepsDefaults). nil (a
	// comparison): none is.
	judged []bool
}

// measures reports whether arm k is measured: a tuned configuration until
// judged, NCCL's defaults while some other arm is, for they are measured
// only to compare.
func (p progress) measures(k int) bool {
	if p.judged == nil {
		return true
	}
	if k > 0 {
		return !p.judged[k]
	}
	return slices.Contains(p.judged[1:], false)
}

// add records run r, of arm k.
func (p *progress) add(k int, r store.ValidationRun) {
	p.runs = append(p.runs, r)
	if p.judged != nil && k > 0 && results.KeepsDefaults(r) {
		p.judged[k] = true
	}
}

func (p progress) clone() progress {
	p.runs, p.judged = slices.Clone(p.runs), slices.Clone(p.judged)
	return p
}

func envKey(env []string) string { return strings.Join(env, "\n") }

// heldTo is verdict v on arm a, kept to NCCL's defaults where the first of
// failed that holds a's configuration says why: a configuration that once
// gave wrong data or crashed may do so in a training job, and validating
// it again until every round went well would export it.
func heldTo(v store.Validation, a arm, failed []hold) store.Validation {
	if h := heldBy(a, failed); h != nil {
		v.Verdict, v.Reason = "default", results.FailedEarlier(h.run)
	}
	return v
}

// heldBy is the first of failed that holds arm a's configuration, nil if none does.
func heldBy(a arm, failed []hold) *hold {
	if i := slices.IndexFunc(failed, func(h hold) bool { return h.holds(a.assignment) }); i >= 0 {
		return &failed[i]
	}
	return nil
}

// armOf is the index of the arm that measures assignment a, added as a new
// arm (name, from trial) if none does yet.
func armOf(sp *space.Space, arms *[]arm, name string, trial int, a space.Assignment) int {
	key := sp.Key(a)
	if k := slices.IndexFunc(*arms, func(x arm) bool { return sp.Key(x.assignment) == key }); k >= 0 {
		return k
	}
	*arms = append(*arms, arm{name: name, trial: trial, assignment: a, env: sp.Env(a)})
	return len(*arms) - 1
}

// runsOf are the runs of one arm.
func runsOf(runs []store.ValidationRun, arm string) []store.ValidationRun {
	var out []store.ValidationRun
	for _, r := range runs {
		if r.Arm == arm {
			out = append(out, r)
		}
	}
	return out
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
	res := s.launch(ctx, s.groups[0], work{plan: quick, measured: fullSweep(sp).ranges}, a.assignment, env, "probe-"+strings.ReplaceAll(a.name, " ", "-"))
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if f := res.Failure; f != nil {
		// A node lost, or the allocation's end, stops validation as under
		// its runs: its verdicts, stored, would count it done, and a resume
		// would never probe again.
		if err := interruption(ctx, "probe of "+a.name, string(f.Kind), f.Reason); err != nil {
			return err
		}
	}
	if res.Failure != nil || len(res.Log.Decisions) == 0 {
		return nil
	}
	return s.Store.SaveDecisions(s.camp.ID, sp.Key(a.assignment), res.Log.Decisions)
}

// roundOrder is the order in which a round measures n arms: A B, B A, ...,
// so that drift and warm-up hit all arms alike.
func roundOrder(n, round int) []int {
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	if round%2 == 1 {
		slices.Reverse(order)
	}
	return order
}

// measure runs every arm once per round, in roundOrder, after the rounds
// that done holds (whole rounds, measured before), save those done says it
// measures no more, and hands each run to keep, if set, as it ends.
// Stopped, it returns the runs made so far with the error.
func (s *session) measure(ctx context.Context, arms []arm, rounds int, done progress, keep func(store.ValidationRun) error) ([]store.ValidationRun, error) {
	sp := s.Space
	done = done.clone()
	for round := done.rounds; round < rounds; round++ {
		for i, k := range roundOrder(len(arms), round) {
			if !done.measures(k) {
				continue
			}
			if err := ctx.Err(); err != nil {
				return done.runs, err
			}
			a := arms[k]
			t := &store.Trial{Env: a.env}
			s.record(t, s.launch(ctx, s.groups[0], s.work(), a.assignment, a.env, fmt.Sprintf("validate-%d-%d", round, k)), s.measured)
			if t.State == store.Interrupted {
				// A node's failure too: its runs would judge nothing.
				return done.runs, interruption(ctx, fmt.Sprintf("round %d, %s", round, a.name), t.FailureKind, t.FailureReason)
			}
			// Only the searched variables are the arm's to confirm; a pinned one is in every arm.
			// A run whose output has no NCCL INFO lines confirms none of them.
			unconfirmed := slices.DeleteFunc(t.NCCLLog.Unconfirmed(a.env), func(name string) bool { _, fixed := sp.Fixed[name]; return fixed })
			run := store.ValidationRun{Round: round, Arm: a.name, Env: a.env, State: t.State, Scores: t.Scores,
				Failure: strings.TrimPrefix(t.FailureKind+": "+t.FailureReason, ": "), Unconfirmed: unconfirmed}
			switch {
			case t.State != store.Complete:
			case t.NCCLLog.Debug:
				run.Info = store.InfoLines
			default:
				run.Info = store.InfoNone
			}
			if keep != nil {
				if err := keep(run); err != nil {
					return done.runs, err
				}
			}
			done.add(k, run)
			if s.OnValidationRun != nil {
				s.OnValidationRun(run, len(done.runs), len(done.runs)+done.left(arms, rounds, round, i))
			}
		}
	}
	return done.runs, nil
}

// left counts the runs a validation has left to make after the i-th of round's.
func (p progress) left(arms []arm, rounds, round, i int) int {
	n := 0
	for j, k := range roundOrder(len(arms), round) {
		if p.measures(k) {
			n += rounds - round - 1
			if j > i {
				n++
			}
		}
	}
	return n
}
