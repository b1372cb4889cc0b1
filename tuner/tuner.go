// Package tuner runs a tuning campaign: it asks the sampler for a
// configuration, launches the benchmark with it, records the trial in the
// store and tells the sampler the result, until the budget is spent; then it
// simplifies each range's choice and validates it against NCCL's defaults.
// What the measurements mean is package results'; how they are written out,
// package export's.
package tuner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nccltune/nccltune/internal/safego"
	"github.com/nccltune/nccltune/internal/text"
	"github.com/nccltune/nccltune/results"
	"github.com/nccltune/nccltune/runner"
	"github.com/nccltune/nccltune/runner/nccllog"
	"github.com/nccltune/nccltune/search"
	"github.com/nccltune/nccltune/space"
	"github.com/nccltune/nccltune/store"
)

// Runner runs one benchmark launch.
type Runner interface {
	Run(ctx context.Context, job runner.Job) runner.Result
}

// Store remembers campaigns and trials.
type Store interface {
	LockWriter() error
	SaveValidation(campaignID, batch int64, runs []store.ValidationRun, vs []store.Validation) error
	SaveDecisions(campaignID int64, config string, ds []nccllog.Decision) error
	MarkInterrupted(campaignID int64) (int, error)
	CreateCampaign(c store.Campaign) (store.Campaign, error)
	UpdateSettings(c store.Campaign) error
	Campaign(name string) (store.Campaign, error)
	Campaigns() ([]store.Campaign, error)
	StartTrial(t *store.Trial) error
	FinishTrial(ctx context.Context, t *store.Trial) error
	Trials(campaignID int64) ([]store.Trial, error)
	Validations(campaignID int64) ([]store.Validation, error)
	ValidationBatches(campaignID int64) ([]int64, error)
	ValidationRuns(campaignID, batch int64) ([]store.ValidationRun, error)
	AllValidationRuns(campaignID int64) ([]store.ValidationRun, error)
}

// Tuner runs the campaign of one space on one store.
type Tuner struct {
	Space *space.Space
	Store Store
	// Benchmark, if set, is what each trial runs; nil: the space's own
	// (runner.NewBenchmark), each of campaign.scales' its own.
	Benchmark runner.Benchmark
	// Simulator is the command that runs the simulated cluster, for a space
	// with a [simulator] table; nil: this executable's `nccltune sim`.
	Simulator []string
	// Runner launches it; nil: the space's launcher, with this process's
	// environment minus NCCL_*.
	Runner Runner
	// Progress, if set, is called after every finished trial.
	Progress func(Progress)
	// OnValidationRun, if set, is called after each validation launch.
	OnValidationRun func(run store.ValidationRun, done, total int)
	// OnScale, if set, is called as the campaign of each of campaign.scales starts.
	OnScale func(sp *space.Space)
}

// Options are a run's overrides of the space file's settings (zero: not
// overridden) and what follows the search.
type Options struct {
	Trials  int
	Seed    *int64
	Sampler string
	// KeepSettings resumes with the stored campaign's budget, seed and sampler
	// (`nccltune resume`) instead of the space file's (`nccltune run`).
	KeepSettings bool
	// AllowSpaceChange runs a changed space as a new campaign instead of refusing it.
	AllowSpaceChange bool
	// Simplify, once the budget is spent, tries each range's choice without
	// each of its settings in turn (see simplify), so that only settings that
	// matter are exported.
	Simplify bool
	// ValidateRounds, when at least 2, validates the result (see Validate)
	// once the budget is spent.
	ValidateRounds int
	// Simplify and ValidateRounds are stored with the campaign. With
	// KeepSettings, the stored ones apply instead (what the run that
	// started the campaign asked for), as its budget does, unless these
	// override them (`nccltune resume --no-simplify`, `--no-validate`,
	// `--validate-rounds`); nil keeps the stored one.
	SimplifyOverride       *bool
	ValidateRoundsOverride *int
}

// ending sets how camp ends once its budget is spent, as o asks: a new
// campaign, or one run again without KeepSettings, as Simplify and
// ValidateRounds say; a resumed one as it was stored; either as the
// overrides say where they are set.
func (o Options) ending(camp *store.Campaign, fresh bool) {
	if fresh || !o.KeepSettings {
		camp.Simplify, camp.ValidateRounds = o.Simplify, o.ValidateRounds
	}
	if o.SimplifyOverride != nil {
		camp.Simplify = *o.SimplifyOverride
	}
	if o.ValidateRoundsOverride != nil {
		camp.ValidateRounds = *o.ValidateRoundsOverride
	}
}

// Progress reports one finished trial.
type Progress struct {
	Trial  store.Trial
	Done   int // the search's finished trials, including this one
	Budget int
	Best   []float64 // best score so far per range
	// Simplifying marks the trials after the search that try choices with fewer settings.
	Simplifying bool
	// Note, if not empty, tells of a change in how the following trials run
	// (the iteration count adapted to the measured noise), or of a failed
	// warm-up launch before this trial's.
	Note string
}

// debugEnv makes NCCL log the variables it read and the transport it chose, so
// that each trial's log can confirm its configuration took effect.
var debugEnv = []string{"NCCL_DEBUG=INFO", "NCCL_DEBUG_SUBSYS=INIT,ENV,NET"}

// session is one process's run of a campaign: what it launches, and what
// the campaign has learnt so far.
type session struct {
	*Tuner
	camp    store.Campaign
	benches []runner.Benchmark // per collective the trials measure (sp.Collectives())
	groups  []*group           // launcher.groups; validation and simplification run on the first
	sampler search.Sampler
	// trials are the finished trials told to the sampler, numbers 0 to
	// told-1 in order: what the next proposal is made from (see need).
	trials   []store.Trial
	told     int
	untold   map[int]store.Trial // launched, numbered told or later: finished, or still running
	best     []float64           // per range, of the told trials
	settled  []int               // per range, see Settled
	plan     runner.Plan         // of the next launches
	measured []bool              // per range: the plan's sweep measures it
	note     string              // how the next launches changed, for the next Progress
	itersWhy string              // the iteration count's reason last said (Iterations)
	counted  *space.Space        // the space Iterations reads, if not Space: see CountedSpace
	stopped  bool                // every range settled, or every configuration was tried: no more trials are proposed
	// configs are the space's configurations (Space.Key), listed once where
	// they are few enough to be tried (see exhausted); nil before, or empty.
	configs map[string]bool
	// searchEnd is the first number past every search trial stored or
	// started: the simplification's are numbered from there, past any the
	// search left interrupted when its ranges settled.
	searchEnd int
	// versionUnknown: a trial's NCCL log gave no version, and the progress said so.
	versionUnknown bool
	// ranksSaid: the progress said that this scale runs another rank count than the workload's.
	ranksSaid bool
}

// group is one of launcher.groups as a session runs trials on it, one at a time.
type group struct {
	index int
	nodes []string
	run   Runner
	warm  bool // its warm-up launch has run
	// warmFailed says how its warm-up launch failed, until a progress line
	// has said it: the launch after it may have found the GPUs cold.
	warmFailed string
}

// warmNote returns, once, what a progress line says of g's warm-up launch.
func (g *group) warmNote() string {
	note := g.warmFailed
	g.warmFailed = ""
	return note
}

// Run runs the campaign until its trial budget is spent, resuming it if the
// store already holds it. It returns ctx's error if stopped early; every
// trial finished until then is stored.
func (t *Tuner) Run(ctx context.Context, o Options) error {
	if len(t.Space.Campaign.Scales) > 0 {
		return t.runScales(ctx, o)
	}
	if t.Finished(o) {
		return nil // nothing to run: see Finished
	}
	s, err := t.open(o)
	ctx = t.held(ctx)
	if err != nil {
		return err
	}
	todo, err := s.resume(o)
	if err != nil {
		return err
	}
	if err := s.search(ctx, todo); err != nil {
		return err
	}
	if err := s.tell(math.MaxInt); err != nil {
		return err
	}
	if !slices.ContainsFunc(s.trials, func(t store.Trial) bool { return t.State == store.Complete }) {
		return fmt.Errorf("%w: all %d of them; see `nccltune status` and `nccltune show 0`", ErrAllFailed, len(s.trials))
	}
	// As the campaign records it (Options.ending): a resume ends as the
	// run that started the campaign asked.
	if s.camp.Simplify {
		s.prepare(fullSweep(t.Space))
		if err := s.simplify(ctx); err != nil {
			return err
		}
	}
	if s.camp.ValidateRounds < 2 {
		return nil
	}
	// Choices with verdicts in the rounds asked (a raised budget whose
	// search kept them) are not measured again: stopped here, the resume
	// finds them validated (see finished) and runs nothing, and a campaign
	// run through must end as it does.
	vals, err := s.Store.Validations(s.camp.ID)
	if err != nil || validatedAs(t.Space, s.trials, vals, s.camp.ValidateRounds) {
		return err
	}
	if _, err := s.validate(ctx, s.camp.ValidateRounds, false); err != nil && !errors.Is(err, ErrNothingToValidate) {
		return fmt.Errorf("validation: %w", err)
	}
	return nil
}

// runScales tunes at each of campaign.scales in turn, smallest first, each
// a campaign of its own (see space.AtScale); each tries the choices of the
// scale before it right after NCCL's defaults: NCCL's best choice moves
// with the node count, but seldom far.
func (t *Tuner) runScales(ctx context.Context, o Options) error {
	if t.Benchmark != nil {
		return errors.New("campaign.scales: each node count needs a benchmark of its own, built from its space; Tuner.Benchmark cannot serve them all")
	}
	// Each scale's groups (one, or launcher.groups) take groups x its node
	// count of the allocation, and in a job that asked for its GPUs
	// job-wide must hold as many of them each: every scale's groups, the
	// largest's first, must be good before the smallest runs, not only once
	// the scales before them have run.
	if l := t.Space.Launcher; l.Kind == "srun" && t.Runner == nil {
		scales := slices.Clone(t.Space.Campaign.Scales)
		slices.Sort(scales)
		for _, nodes := range slices.Backward(scales) {
			at := t.Space.AtScale(nodes)
			if _, err := runner.Groups(at.Launcher); err != nil {
				return fmt.Errorf("%s: %w", at.Campaign.Name, err)
			}
		}
	}
	var before []space.Assignment
	// Resumed (KeepSettings), a stored scale runs and ends as stored, save
	// what the resume is given; a scale not yet started runs and ends as
	// the one before it was asked to by the run that started them (run
	// --trials, --seed, --sampler, --no-validate, ...), not as the space
	// file says. Only that scale takes the one before's as given: a stored
	// one given its own budget would be told a new one, and one whose
	// ranges all settled (patience) would search on to it. A stored scale
	// of a smaller budget than the one before it is the exception: a run
	// or resume given --trials stopped before it reached that scale, and
	// its resume gives it the budget the scales before it ran to.
	unreached := o
	changed := false // resumed, the scales are NAME@2n-2 ...
	for _, nodes := range t.Space.Campaign.Scales {
		at := *t
		at.Space = t.Space.AtScale(nodes)
		if o.KeepSettings {
			// A changed space that run --allow-space-change ran as NAME@4n-2
			// resumes its own scales (NAME@2n ran the space before the
			// change), and starts those it had not reached as that run would.
			if name := CampaignName(t.Store, at.Space); name != "" {
				changed = changed || name != at.Space.Campaign.Name
				at.Space.Campaign.Name = name
			}
		}
		for _, a := range before {
			if !slices.ContainsFunc(at.Space.TryFirst, func(b space.Assignment) bool { return at.Space.Key(a) == at.Space.Key(b) }) {
				at.Space.TryFirst = append(at.Space.TryFirst, a)
			}
		}
		if t.OnScale != nil {
			t.OnScale(at.Space)
		}
		so := o
		if o.KeepSettings {
			if camp, err := t.Store.Campaign(at.Space.Campaign.Name); err == nil {
				o.ending(&camp, false)
				unreached.Simplify, unreached.ValidateRounds = camp.Simplify, camp.ValidateRounds
				if o.Trials == 0 {
					if camp.Budget < unreached.Trials {
						so.Trials = unreached.Trials
					}
					unreached.Trials = max(camp.Budget, unreached.Trials)
				}
				if o.Seed == nil {
					seed := camp.Seed
					unreached.Seed = &seed
				}
				if o.Sampler == "" {
					unreached.Sampler = camp.Sampler
				}
			} else {
				so = unreached
			}
		}
		so.AllowSpaceChange = so.AllowSpaceChange || changed
		if !at.finished(so) {
			if err := at.Run(ctx, so); err != nil {
				return fmt.Errorf("%s: %w", at.Space.Campaign.Name, err)
			}
		}
		var err error
		if before, err = at.choices(); err != nil {
			return err
		}
	}
	return nil
}

// finished reports whether the space's stored campaign has run its budget
// (or stopped, settled) and been simplified and validated as o asks:
// resuming the scales goes on where they stopped, and does not measure the
// finished ones again.
func (t *Tuner) finished(o Options) bool {
	camp, err := t.Store.Campaign(t.Space.Campaign.Name)
	if err != nil || !ranWith(camp, t.Space) {
		return false
	}
	budget := t.Space.Campaign.Trials
	if o.KeepSettings {
		budget = camp.Budget
	}
	if o.Trials != 0 {
		budget = o.Trials
	}
	trials, err := t.Store.Trials(camp.ID)
	if err != nil {
		return false
	}
	done := searchDone(trials)
	o.ending(&camp, false)
	vals, err := t.Store.Validations(camp.ID)
	// Settled (patience), it runs no more unless told a new budget (see
	// resume); run again without patience, its ranges are searched again.
	// Search trials interrupted after it settled (on groups, those running
	// as the last range settled) run again first. Stopped with every
	// configuration tried, it has nothing left to search, under a new
	// budget too: that would only validate its choices again.
	tried := map[string]bool{}
	for _, tr := range trials {
		tried[t.Space.Reading(tr.Params)] = true
	}
	stopped := camp.Stopped != "" && len(unfinishedSearch(trials)) == 0 &&
		(o.Trials == 0 && t.Space.Campaign.Patience > 0 && !samplerExhausted(camp) || allTried(configurations(t.Space, len(trials)), tried))
	// A budget below what the search ran is not met but overrun: the run
	// goes on to campaign's refusal of it, as for a campaign not validated.
	return err == nil && done <= budget && (done == budget || stopped) && (!camp.Simplify || Simplified(t.Space, trials)) &&
		(camp.ValidateRounds < 2 || validatedAs(t.Space, trials, vals, camp.ValidateRounds))
}

// Finished reports whether the space's stored campaign has run its budget
// (or settled, or tried every configuration) and its choices have been validated: running
// it again, or resuming it, would only validate its choices once more,
// which is what `nccltune validate` is for. A campaign that is not
// validated (--no-validate) is never finished by this measure: simplifying
// it again measures nothing it has measured.
func (t *Tuner) Finished(o Options) bool {
	if len(t.Space.Campaign.Scales) > 0 {
		return false // each scale is its own campaign; runScales skips the finished ones
	}
	camp, err := t.Store.Campaign(t.Space.Campaign.Name)
	if err != nil {
		return false
	}
	o.ending(&camp, false)
	return camp.ValidateRounds >= 2 && t.finished(o)
}

// validatedAs reports whether every choice the trials make, each range's
// and the job's, has a verdict in at least the rounds asked for: a resume
// that extended the budget may have chosen anew, and one asking more rounds
// (`resume --validate-rounds N`) validates again, while a verdict in more
// rounds (`nccltune validate --rounds N`) stands, not to be replaced by a
// weaker one. Verdicts are matched to choices by configuration, as results
// does, not by time: the trials of a resume on a host whose clock is behind
// finish "before" a validation they follow.
func validatedAs(sp *space.Space, trials []store.Trial, vals []store.Validation, rounds int) bool {
	if len(vals) == 0 {
		return false
	}
	as := func(v *store.Validation) bool { return v != nil && v.Rounds >= rounds }
	job := results.JobOf(sp, trials, vals)
	if len(sp.Workload) > 0 && !as(job.Validation) {
		return false
	}
	return !slices.ContainsFunc(slices.Concat(results.Of(sp, trials, vals), job.Ranges), func(r results.RangeResult) bool {
		return r.Best != nil && !as(r.Validation)
	})
}

// storedTrials returns a campaign's trials, refusing any whose settings
// the space does not offer: what resume and validate run again (a
// choice, its simplification, a scale's warm start) comes from them, and
// a store edited to set NCCL_NET_PLUGIN must not get a library loaded.
func (t *Tuner) storedTrials(campaignID int64) ([]store.Trial, error) {
	trials, err := t.Store.Trials(campaignID)
	if err != nil {
		return nil, err
	}
	for _, tr := range trials {
		if err := t.Space.CheckOffered(space.Assignment(tr.Params)); space.Stale(err) {
			return nil, fmt.Errorf("trial %d %w", tr.Number, err)
		} else if err != nil {
			return nil, fmt.Errorf("trial %d %w: the store was altered", tr.Number, err)
		}
	}
	return trials, nil
}

// choices are the stored campaign's tuned choices, one per range that has
// one, as exports read them: a configuration that failed by its settings in
// a validation run is held to NCCL's defaults (results.WithHeld), and no
// scale tries it first.
func (t *Tuner) choices() ([]space.Assignment, error) {
	camp, err := t.Store.Campaign(t.Space.Campaign.Name)
	if err != nil {
		return nil, err
	}
	trials, err := t.storedTrials(camp.ID)
	if err != nil {
		return nil, err
	}
	vals, err := t.Store.Validations(camp.ID)
	if err != nil {
		return nil, err
	}
	runs, err := t.Store.AllValidationRuns(camp.ID)
	if err != nil {
		return nil, err
	}
	var out []space.Assignment
	for _, r := range results.Of(t.Space, trials, results.WithHeld(t.Space, trials, vals, runs)) {
		if ch := r.Chosen(); ch != nil && r.Tuned() && !slices.ContainsFunc(out, func(a space.Assignment) bool { return t.Space.Key(a) == t.Space.Key(ch.Params) }) {
			out = append(out, space.Assignment(ch.Params))
		}
	}
	return out, nil
}

// resume finds the stored trials and returns the numbers of the search
// trials still to run (see searchTodo). The finished ones, the
// simplification's too, are told to a fresh sampler as the trials to come
// need them (see need).
func (s *session) resume(o Options) ([]int, error) {
	sp := s.Space
	var err error
	if s.sampler, err = search.New(s.camp.Sampler, sp, s.camp.Seed); err != nil {
		return nil, err
	}
	trials, err := s.storedTrials(s.camp.ID)
	if err != nil {
		return nil, err
	}
	s.untold, s.best = map[int]store.Trial{}, make([]float64, len(sp.Ranges))
	for _, t := range trials {
		if !t.State.Finished() {
			continue // it runs again: an interrupted one, on other hardware too, is no measurement to fit
		}
		s.untold[t.Number] = t
		if err := s.fits(t); err != nil {
			return nil, err
		}
	}
	if err := baselined(sp, trials, len(s.groups)); err != nil {
		return nil, err
	}
	for _, t := range trials {
		if t.Searched() {
			s.searchEnd = max(s.searchEnd, t.Number+1)
		}
	}
	todo := searchTodo(trials, s.camp.Budget)
	if s.camp.Stopped != "" {
		if o.Trials == 0 && sp.Campaign.Patience > 0 && !samplerExhausted(s.camp) {
			// It converged: run no more unless told a new budget, save the
			// trials it started before (on groups, those running as the
			// last range settled) that were interrupted, first in todo.
			todo = todo[:min(len(todo), len(unfinishedSearch(trials)))]
		} else {
			s.camp.Stopped = ""
			if err := s.Store.UpdateSettings(s.camp); err != nil {
				return nil, err
			}
		}
	}
	return todo, nil
}

// samplerExhausted reports whether camp stopped because its sampler had
// nothing left to propose (search.ErrExhausted, as begin records it: the
// grid's points all tried). That is no convergence, whatever the
// patience: resumed with another sampler, the campaign searches on.
func samplerExhausted(camp store.Campaign) bool {
	return strings.Contains(camp.Stopped, search.ErrExhausted.Error())
}

// searchTodo returns the numbers of the search trials still to run under
// budget, in order: those the search started and never finished, which run
// again under their numbers, then new numbers past every trial stored. A
// budget raised after the simplification ran so searches on past its
// trials, and a campaign killed and resumed goes on with the same numbers,
// neither losing nor repeating one.
func searchTodo(trials []store.Trial, budget int) []int {
	next := 0
	for _, t := range trials {
		next = max(next, t.Number+1)
	}
	left := budget - searchDone(trials)
	todo := unfinishedSearch(trials)
	todo = todo[:min(len(todo), max(left, 0))]
	for ; len(todo) < left; next++ {
		todo = append(todo, next)
	}
	return todo
}

// unfinishedSearch returns, in order, the numbers of the search trials
// started and never finished.
func unfinishedSearch(trials []store.Trial) []int {
	finished := map[int]bool{} // per number the search started: whether it finished
	for _, t := range trials {
		if t.Searched() {
			finished[t.Number] = finished[t.Number] || t.State.Finished()
		}
	}
	var out []int
	for _, n := range slices.Sorted(maps.Keys(finished)) {
		if !finished[n] {
			out = append(out, n)
		}
	}
	return out
}

// searchDone counts the search's finished trials, which its budget counts
// (a number holds at most one finished trial).
func searchDone(trials []store.Trial) int {
	n := 0
	for _, t := range trials {
		if t.Searched() && t.State.Finished() {
			n++
		}
	}
	return n
}

// baselined refuses to resume a campaign on more groups than NCCL's
// defaults ran on once its trials are past the defaults': a new group's own
// baseline would never be measured, and what it measures apart from the
// others would go unnoticed.
func baselined(sp *space.Space, trials []store.Trial, groups int) error {
	d := sp.DefaultsTrials()
	// Past them: a trial after them, or one numbered among them that ran
	// another configuration (the search's first, on fewer groups than now),
	// which would otherwise be read as a run of NCCL's defaults.
	if !slices.ContainsFunc(trials, func(t store.Trial) bool {
		return t.State.Finished() && (t.Number >= d || !sp.IsDefaults(t.Params))
	}) {
		return nil // the defaults' trials still to run are those of every group
	}
	ran := map[int]bool{}
	for _, t := range trials {
		if t.State.Finished() && t.Number < d {
			ran[t.Group] = true
		}
	}
	for g := range groups {
		if !ran[g] {
			return fmt.Errorf("launcher.groups = %d, but the campaign ran NCCL's defaults on %d group(s) and is past them: group %d would have no baseline; resume with launcher.groups = %d, or start a new campaign (another campaign.name) on %d groups",
				groups, len(ran), g, len(ran), groups)
		}
	}
	return nil
}

// need is how many trials, numbers 0 to need(n)-1, trial n is proposed
// from. The trials launched after them are pending when it is proposed,
// even one that has finished since: so a proposal never depends on which
// group finished first, and a resumed campaign proposes what an
// uninterrupted one would. With one group it is every trial before n. The
// defaults' trials are proposed from nothing, and every later trial waits
// for all of them: their log says which remedies the warm start tries, and
// their noise what the iteration count is. A simplification's trials ran
// one at a time, each after every trial before it was told: none of them
// is pending for the search trials a raised budget runs past them.
func (s *session) need(n int) int {
	d := s.Space.DefaultsTrials()
	if n < d {
		return 0
	}
	from := max(n-len(s.groups)+1, d)
	for m := n - 1; m >= from; m-- {
		if t, ok := s.untold[m]; ok && !t.Searched() {
			return m + 1
		}
	}
	return from
}

// search runs the trials numbered todo, in order, one on each group at a
// time, until they are done, every range has settled, or something stops
// the campaign (an interrupt, a store error, every trial failing alike);
// then the trials still running are stopped and recorded as interrupted,
// to run again on resume.
func (s *session) search(parent context.Context, todo []int) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	type back struct {
		trial *store.Trial
		group *group
	}
	finished := make(chan back)
	panics := make(chan safego.Panic)
	idle := slices.Clone(s.groups)
	var failure error
	fail := func(err error) {
		if failure == nil {
			failure = err
			cancel()
		}
	}
	end := func(t *store.Trial) {
		if err := s.end(ctx, t); err != nil {
			fail(err)
		} else if s.Progress != nil {
			s.Progress(Progress{Trial: *t, Done: s.searchedTrials(), Budget: s.camp.Budget, Best: s.bestSoFar(), Note: s.note})
			s.note = ""
		}
	}
	for running := 0; ; {
		for failure == nil && ctx.Err() == nil && !s.stopped && len(todo) > 0 && len(idle) > 0 && s.ready(todo[0]) {
			i := s.groupFor(todo[0], idle)
			if i < 0 {
				break // its group is busy
			}
			g := idle[i]
			t, err := s.begin(todo[0], g)
			if err != nil {
				fail(err)
			}
			if t == nil {
				break // failed, or every range has settled
			}
			todo = todo[1:]
			if t.State.Finished() { // not launched: an invalid configuration
				end(t)
				continue
			}
			idle = slices.Delete(idle, i, i+1)
			running++
			w := s.work()
			safego.Go(panics, func() {
				s.execute(ctx, g, t, w)
				finished <- back{t, g}
			})
		}
		if running == 0 {
			break
		}
		var b back
		select {
		case b = <-finished:
		case p := <-panics:
			panic(p) // the caller's to report: the trials still running are cancelled on the way
		}
		running--
		idle = append(idle, b.group)
		s.say(b.group.warmNote())
		end(b.trial)
	}
	if failure != nil {
		return failure
	}
	return parent.Err()
}

// say adds a note to those the next progress line gives, each on a line
// of its own: one does not replace another.
func (s *session) say(note string) {
	if note != "" && s.note != "" {
		s.note += "\n"
	}
	s.note += note
}

// groupFor returns the index in idle of the group trial n runs on, -1
// while that group is busy: NCCL's defaults' trial n runs on group n (mod
// the groups), so that each group measures its own baseline, also where a
// resume runs one of them again; any other trial runs on the first idle.
func (s *session) groupFor(n int, idle []*group) int {
	if n >= s.Space.DefaultsTrials() {
		return 0
	}
	return slices.IndexFunc(idle, func(g *group) bool { return g.index == n%len(s.groups) })
}

// ready reports whether trial n can be proposed: every trial it is
// proposed from has finished.
func (s *session) ready(n int) bool {
	for m := s.told; m < s.need(n); m++ {
		if t, ok := s.untold[m]; ok && !t.State.Finished() {
			return false
		}
	}
	return true
}

// begin proposes trial n from the trials before need(n) and starts it on
// group g (see start). It returns nil, and records that the campaign
// stopped, once every range has settled or every configuration was tried,
// or every one the sampler proposes (search.ErrExhausted: the grid's).
func (s *session) begin(n int, g *group) (*store.Trial, error) {
	if err := s.tell(s.need(n)); err != nil {
		return nil, err
	}
	s.settled = Settled(s.Space, s.trials)
	s.say(s.prepare(searchSweep(s.Space, s.settled)))
	if !slices.Contains(s.settled, -1) {
		s.stopped = true
		// After the search trial that settled the last range: the last
		// told may be the simplification's, of a budget raised after it.
		s.camp.Stopped = fmt.Sprintf("stopped after trial %d: every range settled (patience): %s",
			slices.Max(s.settled), describeSettled(s.Space, s.settled))
		return nil, s.Store.UpdateSettings(s.camp)
	}
	if done, configs := s.exhausted(n); done {
		// Running one again measures nothing new: the rest of the budget would only repeat them.
		s.stopped = true
		s.camp.Stopped = fmt.Sprintf("stopped after trial %d: every one of the space's %d configurations was tried", n-1, configs)
		return nil, s.Store.UpdateSettings(s.camp)
	}
	a, err := s.next(n)
	if errors.Is(err, search.ErrExhausted) {
		s.stopped = true
		s.camp.Stopped = fmt.Sprintf("stopped after trial %d: %v", n-1, err)
		return nil, s.Store.UpdateSettings(s.camp)
	}
	if err != nil {
		return nil, fmt.Errorf("trial %d: %w", n, err)
	}
	return s.start(n, a, g, store.Search)
}

// start stores trial n of phase ph with assignment a as running on group
// g, and fails it at once, not launched, if the space's checks refuse it.
func (s *session) start(n int, a space.Assignment, g *group, ph store.Phase) (*store.Trial, error) {
	sp := s.Space
	t := &store.Trial{CampaignID: s.camp.ID, Number: n, Phase: ph, Params: a, Env: sp.Env(a), Group: g.index, Nodes: g.nodes}
	if err := s.Store.StartTrial(t); err != nil {
		return nil, err
	}
	if t.Searched() {
		s.searchEnd = max(s.searchEnd, n+1)
	}
	s.untold[n] = *t
	if err := sp.Check(a); err != nil {
		// NCCL would run it as another configuration. It costs nothing and teaches the sampler.
		t.State, t.FailureKind, t.FailureReason, t.Finished = store.Failed, string(runner.FailInvalid), err.Error(), time.Now()
	}
	return t, nil
}

// work is what a launch needs of the session, taken when its trial starts:
// the trials that finish meanwhile change the session, not the trial.
type work struct {
	plan     runner.Plan
	measured []bool
	best     []float64
}

func (s *session) work() work {
	return work{plan: s.plan, measured: slices.Clone(s.measured), best: slices.Clone(s.best)}
}

// execute runs trial t on group g: its quick pass if the campaign prunes,
// then, unless that settled it, its full run.
func (s *session) execute(ctx context.Context, g *group, t *store.Trial, w work) {
	if !s.prune(ctx, g, t, w) {
		s.record(t, s.launch(ctx, g, w, t.Params, t.Env, strconv.Itoa(t.Number)), w.measured)
	}
}

// end stores a finished trial, or an interrupted one, which runs again later.
func (s *session) end(ctx context.Context, t *store.Trial) error {
	other, acrossGroups := s.otherHardware(*t)
	if other != "" {
		// Not the settings' doing, nor comparable with the campaign's other
		// measurements: it runs again on resume, where it belongs.
		t.State, t.FailureKind, t.FailureReason = store.Interrupted, string(runner.FailInterrupted), other
	}
	if broken := s.groupLaunchFailure(*t); broken != "" {
		t.State, t.FailureKind, t.FailureReason = store.Interrupted, string(runner.FailNode), broken
	}
	if err := s.Store.FinishTrial(context.WithoutCancel(ctx), t); err != nil {
		return err
	}
	s.untold[t.Number] = *t
	if timeout := s.Space.Benchmark.Timeout; t.State == store.Complete && timeout < s.camp.Latest.ShortestTimeout {
		// A trial measured its scores at the count this run's shorter
		// timeout capped (CountedSpace). One that failed, was pruned by
		// its quick pass or refused unlaunched measured nothing at it.
		s.camp.Latest.ShortestTimeout = timeout
		if err := s.Store.UpdateSettings(s.camp); err != nil {
			return err
		}
	}
	if err := s.brokenGroup(ctx); err != nil {
		return err
	}
	if other != "" {
		advice := "resume where the campaign ran, or tune this cluster as a new campaign (another campaign.name)"
		if acrossGroups {
			// Resumed there, the trial runs on its group again, and stops again.
			advice = "launcher.groups compares trials across groups, whose nodes must be alike (`nccltune doctor --space FILE` compares them): give the campaign nodes of one kind; where the cluster changed since the campaign ran, " + advice
		}
		return fmt.Errorf("%w: trial %d %s; %s", ErrOtherHardware, t.Number, other, advice)
	}
	if t.State == store.Interrupted {
		err := interruption(ctx, fmt.Sprintf("trial %d", t.Number), t.FailureKind, t.FailureReason)
		if errors.Is(err, ErrNodeFailed) || errors.Is(err, ErrAllocationEnded) {
			err = fmt.Errorf("%w; it runs again on resume", err)
		}
		return err
	}
	if err := s.fits(*t); err != nil {
		return err
	}
	var others []store.Trial
	for _, u := range s.untold {
		if u.State.Finished() && u.Number != t.Number {
			others = append(others, u)
		}
	}
	return failingThroughout(append(others, s.trials...), *t)
}

// brokenGroup stops the campaign (ErrNodeFailed) where NCCL's defaults
// failed on one group and completed on another: the group is broken (a
// node's GPU or link), and whatever it runs fails. The failure is recorded
// as the node's, not held against NCCL's defaults, and runs again on resume.
func (s *session) brokenGroup(ctx context.Context) error {
	sp := s.Space
	var done []int // groups NCCL's defaults completed on
	var failed []store.Trial
	for _, u := range s.untold {
		if u.Number >= sp.DefaultsTrials() || !sp.IsDefaults(u.Params) {
			continue
		}
		switch u.State {
		case store.Complete:
			done = append(done, u.Group)
		case store.Failed:
			failed = append(failed, u)
		}
	}
	for _, f := range failed {
		if len(done) == 0 || slices.Contains(done, f.Group) {
			continue // failing everywhere, or now and then: not the group's doing
		}
		f.State, f.FailureKind = store.Interrupted, string(runner.FailNode)
		f.FailureReason = fmt.Sprintf("%s failed NCCL's defaults, which completed on group %d: a node of it is broken (%s)",
			groupName(f), slices.Min(done), f.FailureReason)
		if err := s.Store.FinishTrial(context.WithoutCancel(ctx), &f); err != nil {
			return err
		}
		s.untold[f.Number] = f
		return fmt.Errorf("%w: trial %d: %s; it runs again on resume", ErrNodeFailed, f.Number, f.FailureReason)
	}
	return nil
}

// groupLaunchFailure says how trial t, which could not launch (it started
// no rank, which says nothing of its settings), failed by its group's
// doing: a trial ran on another group ("" where none did, or t launched).
// Past NCCL's defaults every group has run one, so a group whose node can
// no longer start a task is told apart at its first such failure. Left to
// the search, that group's failures, which come back at once, took trial
// after trial, each told to the sampler as its configuration's, while the
// other groups' trials completed. A step a hand cancelled (scancel) is
// none of the group's doing: its ranks had started.
func (s *session) groupLaunchFailure(t store.Trial) string {
	if t.State != store.Failed || t.FailureKind != string(runner.FailLaunch) || strings.HasPrefix(t.FailureReason, runner.CancelledByHand) {
		return ""
	}
	var ran *store.Trial // the first trial that ran on another group
	for _, u := range slices.Concat(s.trials, slices.Collect(maps.Values(s.untold))) {
		if u.Group != t.Group && (u.State == store.Complete || u.State == store.Pruned) && (ran == nil || u.Number < ran.Number) {
			ran = &u
		}
	}
	if ran == nil {
		return ""
	}
	return fmt.Sprintf("%s could not launch it, where trial %d ran on group %d: a node of it is broken (%s)",
		groupName(t), ran.Number, ran.Group, t.FailureReason)
}

// groupName names the group trial t ran on, and its nodes where it recorded them.
func groupName(t store.Trial) string {
	if len(t.Nodes) == 0 {
		return fmt.Sprintf("group %d", t.Group)
	}
	return fmt.Sprintf("group %d (%s)", t.Group, strings.Join(t.Nodes, ","))
}

// ErrOtherHardware stops a campaign whose trial ran on another NCCL, GPU
// or layout of ranks than its earlier trials: resumed after an upgrade, or
// on other nodes, it would choose among measurements that do not compare.
var ErrOtherHardware = errors.New("the campaign's trials ran on other hardware")

// otherHardware says how the run of trial t, measured, differs from the
// campaign's earlier measured trials' ("" where it does not, or no earlier
// one says): NCCL's version, the GPU, the nodes, the GPUs a node and the
// ranks, each as the first trial that gives it saw it, and the groups of
// both where they differ (acrossGroups: the earlier trial ran on another
// group). The network and GDR are left out: settings change them.
func (s *session) otherHardware(t store.Trial) (reason string, acrossGroups bool) {
	if t.State != store.Complete && t.State != store.Pruned {
		return "", false
	}
	var earlier []store.Trial
	for _, u := range slices.Concat(s.trials, slices.Collect(maps.Values(s.untold))) {
		if (u.State == store.Complete || u.State == store.Pruned) && u.Number != t.Number {
			earlier = append(earlier, u)
		}
	}
	slices.SortFunc(earlier, func(a, b store.Trial) int { return cmp.Compare(a.Number, b.Number) })
	// differs is the first earlier trial that gives what, where it gave
	// another value than t; nil where none did.
	differs := func(got func(runner.Fingerprint) string) *store.Trial {
		mine := got(t.Fingerprint)
		for _, u := range earlier {
			if theirs := got(u.Fingerprint); theirs != "" && mine != "" {
				if theirs == mine {
					return nil
				}
				return &u
			}
		}
		return nil
	}
	count := func(n int) string {
		if n <= 0 {
			return ""
		}
		return strconv.Itoa(n)
	}
	for _, d := range []struct {
		what string
		got  func(runner.Fingerprint) string
	}{
		{"NCCL", func(f runner.Fingerprint) string { return f.NCCL }},
		{"on GPU", func(f runner.Fingerprint) string { return f.GPU }},
		{"on nodes:", func(f runner.Fingerprint) string { return count(f.Nodes) }},
		{"GPUs a node:", func(f runner.Fingerprint) string { return count(f.GPUsPerNode) }},
		{"ranks:", func(f runner.Fingerprint) string { return count(f.Ranks) }},
	} {
		u := differs(d.got)
		switch {
		case u == nil:
		case u.Group != t.Group:
			// Two kinds of node in one allocation, or the cluster changed since.
			return fmt.Sprintf("ran %s %s on %s, where trial %d ran %s on %s", d.what, d.got(t.Fingerprint), groupName(t), u.Number, d.got(u.Fingerprint), groupName(*u)), true
		default:
			return fmt.Sprintf("ran %s %s, where trial %d ran %s", d.what, d.got(t.Fingerprint), u.Number, d.got(u.Fingerprint)), false
		}
	}
	return "", false
}

// ErrRanks stops a workload's campaign whose trials run a communicator of
// another size than the workload's calls were made on.
var ErrRanks = errors.New("the trials run another rank count than the workload's")

// fits checks, from a finished trial's run, that the campaign measures
// what its space describes: the workload's communicator size, and an NCCL
// that reads the per-collective values it searches. Each of campaign.scales
// runs its own rank count: there a difference is said, once.
func (s *session) fits(t store.Trial) error {
	want, got := s.Space.WorkloadRanks(), t.Fingerprint.Ranks
	switch {
	case want == 0 || got == 0 || want == got:
	case s.Space.Campaign.Scale == 0:
		return fmt.Errorf("%w: trial %d ran %s, and workload.ranks is %d: the calls' sizes and costs are those of %s; launch as many, or leave workload.ranks out to tune the calls on %d",
			ErrRanks, t.Number, text.Count(got, "rank", "ranks"), want, text.Count(want, "rank", "ranks"), got)
	case !s.ranksSaid:
		s.ranksSaid = true
		s.say(fmt.Sprintf("this scale runs %s; the workload's calls were made on %d", text.Count(got, "rank", "ranks"), want))
	}
	return s.readsPerCollective(t)
}

// ErrPerCollective stops a campaign that searches NCCL_ALGO or NCCL_PROTO
// per collective (a workload of several) on an NCCL that does not read
// that syntax: every trial that sets one would measure something else.
var ErrPerCollective = errors.New("this NCCL does not read NCCL_ALGO/NCCL_PROTO per collective")

// readsPerCollective checks, from a completed trial's NCCL log, that the
// campaign's NCCL reads the per-collective values its space searches; NCCL's
// defaults run first and set none, so a campaign on an older NCCL stops
// before any trial sets one. Where NCCL's log gives no version, it is said
// once, in the next progress line.
func (s *session) readsPerCollective(t store.Trial) error {
	if t.State != store.Complete || !slices.ContainsFunc(s.Space.Params, func(p space.Param) bool { return p.Collective != "" }) {
		return nil
	}
	yes, known := nccllog.AtLeast(t.NCCLLog.Version, 2, 24)
	switch {
	case !known && !s.versionUnknown && len(s.Space.Simulator) == 0: // the simulated cluster is no NCCL
		s.versionUnknown = true
		s.say("NCCL's log gives no version: the space sets NCCL_ALGO/NCCL_PROTO per collective, which NCCL reads from " + nccllog.PerCollectiveSince)
	case known && !yes:
		return fmt.Errorf("%w: trial %d ran NCCL %s, and NCCL reads NCCL_ALGO and NCCL_PROTO per collective (as a workload of several collectives searches them) from %s; "+
			"use a newer NCCL, or search NCCL_ALGO/NCCL_PROTO in a campaign of one collective each", ErrPerCollective, t.Number, t.NCCLLog.Version, nccllog.PerCollectiveSince)
	}
	return nil
}

// searchedTrials counts the search's finished trials, told or not.
func (s *session) searchedTrials() int {
	return searchDone(s.trials) + searchDone(slices.Collect(maps.Values(s.untold)))
}

// bestSoFar is the best score per range of every trial finished so far:
// the told trials' (best), and those finished since, on any group.
func (s *session) bestSoFar() []float64 {
	best := slices.Clone(s.best)
	for _, t := range s.untold {
		if t.State == store.Complete {
			raise(best, scoreList(s.Space, t))
		}
	}
	return best
}

// raise raises each range's best to a completed trial's score there; a
// range the trial did not measure (NaN: settled, out of its sweep) keeps its best.
func raise(best, scores []float64) {
	for i, v := range scores {
		if v > best[i] {
			best[i] = v
		}
	}
}

// tell tells the sampler, in order, every trial numbered below n that is
// not yet told (all of them finished), and raises the best scores.
func (s *session) tell(n int) error {
	for ; s.told < n && len(s.untold) > 0; s.told++ {
		t, ok := s.untold[s.told]
		if !ok {
			continue // no trial was stored under this number
		}
		delete(s.untold, s.told)
		s.trials = append(s.trials, t)
		if err := s.learn(t); err != nil {
			return fmt.Errorf("trial %d: %w", t.Number, err)
		}
	}
	return nil
}

// learn tells the sampler a finished trial and raises the ranges' best
// scores (raise).
func (s *session) learn(t store.Trial) error {
	scores := scoreList(s.Space, t)
	if t.State == store.Complete {
		raise(s.best, scores)
	}
	return s.sampler.Tell(space.Assignment(t.Params), scores)
}

// trial runs simplification trial n with assignment a on the first group,
// and tells it: after the search, trials run one at a time.
func (s *session) trial(ctx context.Context, n int, a space.Assignment) (*store.Trial, error) {
	g := s.groups[0]
	t, err := s.start(n, a, g, store.Simplification)
	if err != nil {
		return nil, err
	}
	if !t.State.Finished() {
		s.execute(ctx, g, t, s.work())
	}
	if err := s.end(ctx, t); err != nil {
		return nil, err
	}
	return t, s.tell(n + 1)
}

// simplifyChoices bounds the choices a range's simplification runs fresh:
// each whose fresh run fails by its settings gives way to the next, but a
// space where everything fails must not run them all.
const simplifyChoices = 3

// simplify tries, for each range's chosen configuration, leaving out each of
// its settings in turn, as extra trials after the search's. A setting whose
// removal keeps the range within results.Parsimony of the choice, and
// results.MinGain above NCCL's defaults, is left out for good; results.Of
// then prefers the simpler trial. The choice's search
// score is the best of many noisy runs, so biased upwards (the winner's
// curse): the variants are held against a fresh run of it instead. A
// choice whose fresh run fails by its settings is chosen no more, and the
// range's next choice is run and simplified in its place.
// Configurations already run are not run again, so a resumed campaign
// simplifies where it stopped.
func (s *session) simplify(ctx context.Context) error {
	// Past the search's, and past its own finished ones: one interrupted
	// runs again under its number.
	n, simplifiedLast := s.searchEnd, false
	for _, t := range s.trials {
		if t.Number+1 > n {
			n, simplifiedLast = t.Number+1, true
		}
	}
	// A stored simplification that left configurations to run is said to
	// go on, once: a campaign an older nccltune simplified to its end by
	// other rules runs more trials, and validates again, on its resume. One
	// a search trial follows was of a budget since raised: the new
	// choices are simplified as any campaign's, nothing to explain.
	var resumed string
	if simplifiedLast {
		resumed = "the simplification goes on: the stored one left configurations to run (it was stopped, or an older nccltune simplified by other rules)"
	}
	return simplification(s.Space, s.trials, func(a space.Assignment) (store.Trial, error) {
		if err := ctx.Err(); err != nil {
			return store.Trial{}, err
		}
		t, err := s.trial(ctx, n, a)
		if err != nil {
			return store.Trial{}, err
		}
		if s.Progress != nil {
			note := s.groups[0].warmNote()
			if resumed != "" {
				note, resumed = strings.TrimSuffix(resumed+"\n"+note, "\n"), ""
			}
			s.Progress(Progress{Trial: *t, Done: n + 1, Budget: n + 1, Best: slices.Clone(s.best), Simplifying: true, Note: note})
		}
		n++
		return *t, nil
	})
}

// errUnsimplified stops simplified's replay of the simplification at the
// first configuration it would run.
var errUnsimplified = errors.New("the simplification has a configuration left to run")

// Simplified reports whether the simplification of the campaign's trials
// has run to its end: replayed on its finished trials, it runs nothing. A
// campaign stopped in its simplification has run its budget, but not been
// simplified; so has one that an nccltune of other rules simplified, whose
// resume runs what these rules leave to run, and validates again.
func Simplified(sp *space.Space, trials []store.Trial) bool {
	done := slices.DeleteFunc(slices.Clone(trials), func(t store.Trial) bool { return !t.State.Finished() })
	return simplification(sp, done, func(space.Assignment) (store.Trial, error) {
		return store.Trial{}, errUnsimplified
	}) == nil
}

// simplification walks simplify's path over the finished trials (in
// number order), calling run for each configuration it needs measured that
// none of them measured.
func simplification(sp *space.Space, trials []store.Trial, run func(space.Assignment) (store.Trial, error)) error {
	// By configuration as NCCL reads it (Reading), as results group the
	// trials: a run of one spelling is a run of every other, which a choice
	// may since be represented by (a store written before NCCL's defaults
	// read as unset).
	measured := map[string][]store.Trial{} // every finished trial, by configuration
	fresh := map[string]store.Trial{}      // the simplification's: not picked as a maximum
	var searched []store.Trial             // the search's alone, so that a resumed campaign retraces the same path
	for _, t := range trials {
		measured[sp.Reading(t.Params)] = append(measured[sp.Reading(t.Params)], t)
		if t.Searched() {
			searched = append(searched, t)
		} else {
			fresh[sp.Reading(t.Params)] = t
		}
	}
	measure := func(a space.Assignment) (store.Trial, error) {
		t, err := run(a)
		if err != nil {
			return store.Trial{}, err
		}
		measured[sp.Reading(a)], fresh[sp.Reading(a)] = append(measured[sp.Reading(a)], t), t
		return t, nil
	}
	// The choices' fresh runs that failed by their settings, in the order
	// run: results never choose those configurations (see results.Of), so
	// the ranges choose again without them. The search's trials and these
	// alone make the choices, so that a resumed campaign, which finds each
	// of them as it goes, retraces the same path.
	var rejected []store.Trial
	rechoose := results.Rejecting(sp, searched)
	// choose returns range i's choice (results.Rejecting's) and its fresh
	// run, running it if none has; no Best where NCCL's defaults are
	// chosen, or simplifyChoices choices failed.
	choose := func(i int) (results.RangeResult, store.Trial, error) {
		for range simplifyChoices {
			choice := rechoose(i, rejected)
			if choice.Best == nil || sp.IsDefaults(choice.Best.Params) {
				break // NCCL's defaults: nothing to simplify
			}
			ref, ok := fresh[sp.Reading(choice.Best.Params)]
			if !ok {
				var err error
				if ref, err = measure(maps.Clone(choice.Best.Params)); err != nil {
					return choice, ref, err
				}
			}
			// A launch that started no rank says nothing of the settings:
			// results keep the choice, and it stands, unsimplified.
			if !results.FailedByItsSettings(ref) {
				return choice, ref, nil
			}
			rejected = append(rejected, ref)
		}
		return results.RangeResult{}, store.Trial{}, nil
	}
	for i, rg := range sp.Ranges {
		choice, ref, err := choose(i)
		if err != nil {
			return err
		}
		if choice.Best == nil || ref.State != store.Complete {
			continue // NCCL's defaults, or no choice ran fresh; validation will say so
		}
		// Within Parsimony of the fresh run, and still the gain over NCCL's
		// defaults a choice needs: a variant below it is no choice of results'
		// (results.Of), and simplifying on from it would leave the choice whole.
		cur := space.Assignment(maps.Clone(choice.Best.Params))
		target, defaults := ref.Scores[rg.Name]*(1-results.Parsimony), choice.DefaultScore
		for _, p := range sp.Params {
			if v, ok := cur[p.Name]; !ok || v == space.Unset {
				continue
			}
			variant := maps.Clone(cur)
			if slices.Contains(p.Values, space.Unset) {
				variant[p.Name] = space.Unset
			} else {
				delete(variant, p.Name)
			}
			// What p's value switched on goes with it, as in any trial of the
			// space; a variant that would switch on a setting offering no
			// "default" (a choice without it, or an integer range) is no
			// simpler, and is not run. One the choice already leaves to NCCL
			// while searched (a warm start's value the space does not offer)
			// stays so, and is switched on by nothing.
			variant, _, _ = sp.Complete(variant)
			if slices.ContainsFunc(sp.Params, func(q space.Param) bool {
				_, set := variant[q.Name]
				return q.Name != p.Name && !set && sp.Active(q, variant) && !sp.Active(q, cur)
			}) {
				continue
			}
			// A setting NCCL takes unset anyway goes without a run.
			reading := sp.Reading(variant)
			if reading == sp.Reading(cur) {
				cur = variant
				continue
			}
			if _, tried := measured[reading]; !tried {
				if _, err := measure(variant); err != nil {
					return err
				}
			}
			if holds(measured[reading], rg.Name, target, defaults) {
				cur = variant
			}
		}
	}
	return nil
}

// holds reports whether runs, the finished trials of a configuration, keep
// range rg at target and MinGain over NCCL's defaults (their score, NaN
// where unmeasured), scored as results score them (results.RunsScore: a
// run that measured nothing, an infinite or zero score, counts for
// nothing) and compared as results compare (results.Gains): none of them
// failed by its settings (results never choose such a configuration,
// however well another run went).
func holds(runs []store.Trial, rg string, target, defaults float64) bool {
	score, failed := results.RunsScore(rg, runs)
	return !failed && score >= target && (math.IsNaN(defaults) || results.Gains(score, defaults))
}

// prepare sets the plan of the next launches: the iteration count
// Iterations gives for the trials so far, over the sweep sw. It says why
// when the reason changed: the count was adapted, or could not be.
func (s *session) prepare(sw sweep) string {
	iters, why := Iterations(cmp.Or(s.counted, s.Space), s.trials)
	if why == s.itersWhy {
		why = ""
	} else {
		s.itersWhy = why
	}
	s.plan = runner.Plan{Sizes: sw.sizes, Iters: iters, Warmup: s.Space.Benchmark.Warmup}
	s.measured = sw.ranges
	return why
}

// PruneMargin: a trial whose quick pass is more than this much below the best
// in every range is pruned. A quick pass is noisier than a full run; a
// configuration 30% behind everywhere is not going to win.
const PruneMargin = 0.3

// quickIters is how many timed iterations the quick pass runs (one warm-up).
const quickIters = 2

// prune runs the quick pass of trial t on group g when the campaign prunes;
// it reports whether that settled the trial (failed, or pruned, against the
// best scores w.best), so that the full run is not needed. The quick pass
// measures the full run's sweep (w's): a settled range's sizes would cost
// what settling saves, and a quick score there would keep a trial for a
// full run that does not measure the range.
func (s *session) prune(ctx context.Context, g *group, t *store.Trial, w work) bool {
	sp := s.Space
	if !sp.Campaign.Prune || t.Number == 0 || !slices.ContainsFunc(w.best, func(b float64) bool { return b > 0 }) {
		return false
	}
	quick := w
	quick.plan = runner.Plan{Sizes: w.plan.Sizes, Iters: quickIters, Warmup: 1}
	s.record(t, s.launch(ctx, g, quick, t.Params, t.Env, strconv.Itoa(t.Number)+"-quick"), w.measured)
	if t.State != store.Complete {
		return true // a failure (or an interrupt) is as telling in a quick pass
	}
	for i, r := range sp.Ranges {
		// A range the quick pass measured no size of is no reason to run in
		// full (with no trial measuring it either, its best stays 0, and
		// "0 >= 0" would keep every trial); a range's first measurement is.
		if v, ok := t.Scores[r.Name]; ok && v >= w.best[i]*(1-PruneMargin) {
			return false // it may compete somewhere: run it in full
		}
	}
	t.State, t.FailureReason = store.Pruned, fmt.Sprintf("quick pass (%d iterations) more than %.0f%% below the best in every range", quickIters, 100*PruneMargin)
	return true
}

// held is ctx under which every trial's supervisor holds the store's writer
// lock until the trial's processes are gone (runner.WithHeld), so that a
// resume after nccltune was killed waits for the old trial to end.
func (t *Tuner) held(ctx context.Context) context.Context {
	if st, ok := t.Store.(interface{ LockFile() *os.File }); ok && st.LockFile() != nil {
		return runner.WithHeld(ctx, st.LockFile())
	}
	return ctx
}

// open checks that the benchmark and launcher can work, takes the store's
// writer lock, and finds or creates the campaign. Nothing is stored before the
// checks pass.
func (t *Tuner) open(o Options) (*session, error) {
	benches, groups, err := t.launchable()
	if err != nil {
		return nil, err
	}
	if err := t.Store.LockWriter(); err != nil {
		return nil, err
	}
	camp, err := t.campaign(o)
	if err != nil {
		return nil, err
	}
	if _, err := t.Store.MarkInterrupted(camp.ID); err != nil {
		return nil, err
	}
	s := &session{Tuner: t, camp: camp, benches: benches, groups: groups, counted: CountedSpace(camp, t.Space)}
	s.prepare(fullSweep(t.Space))
	return s, nil
}

// CountedSpace is sp with the shortest benchmark.timeout of sp's and of
// those camp's trials ran under, for Iterations. The timeout is no part of
// a space's identity, so a resume may change it; a longer one must not
// raise the count a shorter one capped, the first run's or a later
// resume's: trials before and after would be measured at different counts.
// A shorter one caps it, or a sweep could outlast it and trials fail as
// hangs their settings did not cause. Status reads the count of the latest
// run's space so.
func CountedSpace(camp store.Campaign, sp *space.Space) *space.Space {
	shortest := min(sp.Benchmark.Timeout, shortestRun(camp, sp))
	if shortest == sp.Benchmark.Timeout {
		return sp
	}
	c := *sp
	c.Benchmark.Timeout = shortest
	return &c
}

// shortestRun is the shortest benchmark.timeout camp's trials ran under
// that the store knows of: the stored space's (the first run's), where its
// copy still loads, and the shortest of the later runs that completed a
// trial (session.end); sp's where it knows none. A run that completed none
// (its budget spent, stopped at once, its trials failed, pruned or
// invalid) measured nothing at the count its timeout capped.
func shortestRun(camp store.Campaign, sp *space.Space) time.Duration {
	var known []time.Duration
	if old, err := storedSpace(camp, sp.Dir); err == nil {
		known = append(known, old.Benchmark.Timeout)
	}
	if camp.Latest != nil {
		known = append(known, camp.Latest.ShortestTimeout)
	}
	if len(known) == 0 {
		return sp.Benchmark.Timeout
	}
	return slices.Min(known)
}

// launchable checks that the benchmark of every collective the trials
// measure and the launcher can work, and splits the nodes into
// launcher.groups: enough to launch, nothing stored.
func (t *Tuner) launchable() ([]runner.Benchmark, []*group, error) {
	bench := t.Benchmark
	if bench == nil {
		var err error
		if bench, err = runner.NewBenchmark(t.Space, t.Simulator); err != nil {
			return nil, nil, err
		}
	}
	// A workload's every collective runs its own benchmark, the first one
	// too: benchmark.binary only says where nccl-tests is.
	var benches []runner.Benchmark
	for _, coll := range t.Space.Collectives() {
		b := bench
		if other, ok := bench.(runner.Collectives); ok && (len(t.Space.Workload) > 0 || coll != t.Space.Campaign.Collective) {
			var err error
			if b, err = other.For(coll); err != nil {
				return nil, nil, err
			}
		} else if coll != t.Space.Campaign.Collective {
			return nil, nil, fmt.Errorf("the benchmark measures %s only; the workload names %s too", t.Space.Campaign.Collective, coll)
		}
		benches = append(benches, b)
	}
	if t.Runner != nil {
		groups := make([]*group, max(t.Space.Launcher.Groups, 1))
		for i := range groups {
			groups[i] = &group{index: i, run: t.Runner}
		}
		return benches, groups, nil
	}
	split, err := runner.Groups(t.Space.Launcher)
	if err != nil {
		return nil, nil, err
	}
	var groups []*group
	for i, g := range split {
		if ch, ok := g.Launcher.(runner.Checker); ok {
			if err := ch.Check(); err != nil {
				return nil, nil, err
			}
		}
		groups = append(groups, &group{index: i, nodes: g.Nodes, run: &runner.Runner{Launcher: g.Launcher, BaseEnv: runner.BaseEnv()}})
	}
	return benches, groups, nil
}

// ErrAllFailing stops a campaign whose first trials, NCCL's defaults among
// them, all failed the same way: the benchmark or the machine is broken, and
// the rest of the budget would be burnt for nothing.
var ErrAllFailing = errors.New("stopping early: every trial so far failed the same way")

// ErrNodeFailed stops a campaign whose trial lost a node: Slurm revokes the
// job's allocation with it, and every later trial would fail to launch.
var ErrNodeFailed = errors.New("a node of the allocation failed")

// ErrAllocationEnded stops a campaign whose trial outlived the Slurm job's
// allocation (its time limit, scancel of the job, preemption): every later
// trial would fail to launch.
var ErrAllocationEnded = errors.New("the Slurm job's allocation ended")

// interruption is why launch what, which failed as kind for reason, stops
// the campaign: its node's failure (ErrNodeFailed), the end of the job's
// allocation (ErrAllocationEnded), or else ctx's cancel (nil if none).
func interruption(ctx context.Context, what, kind, reason string) error {
	switch kind {
	case string(runner.FailNode):
		return fmt.Errorf("%w: %s: %s", ErrNodeFailed, what, reason)
	case string(runner.FailAllocation):
		return fmt.Errorf("%w: %s: %s", ErrAllocationEnded, what, reason)
	}
	return ctx.Err()
}

// ErrAllFailed means a campaign ended without a single completed trial.
var ErrAllFailed = errors.New("every trial failed")

// earlyStopAfter is how many failed trials, all of one kind, stop a campaign.
const earlyStopAfter = 5

// failingThroughout reports whether the finished trials and last, which just
// finished, all failed the same way (ErrAllFailing), once there are enough of them.
func failingThroughout(finished []store.Trial, last store.Trial) error {
	if len(finished)+1 < earlyStopAfter {
		return nil
	}
	for _, t := range append(slices.Clone(finished), last) {
		if t.State != store.Failed || t.FailureKind != last.FailureKind {
			return nil
		}
	}
	return fmt.Errorf("%w (%d trials, each %s; the last: %s); see `nccltune show %d`", ErrAllFailing, len(finished)+1,
		last.FailureKind, last.FailureReason, last.Number)
}

// StoppedFailing is ErrAllFailing, with what it said, where the search
// trials of a campaign of budget trials stopped it short of its budget;
// nil where they did not (status says so after the campaign ended), or
// where a search trial runs: a resume is under way, the cause maybe fixed.
func StoppedFailing(trials []store.Trial, budget int) error {
	var finished []store.Trial
	for _, t := range trials {
		if t.Searched() && t.State == store.Running {
			return nil
		}
		if t.Searched() && t.State.Finished() {
			finished = append(finished, t)
		}
	}
	if len(finished) == 0 || len(finished) >= budget {
		return nil
	}
	slices.SortStableFunc(finished, func(a, b store.Trial) int { return cmp.Compare(a.Number, b.Number) })
	return failingThroughout(finished[:len(finished)-1], finished[len(finished)-1])
}

// Defaults is trial 0: nothing searched is set, so NCCL applies its own
// choices. Categorical parameters that offer "default" are told so.
func Defaults(sp *space.Space) space.Assignment {
	a, _, _ := sp.Complete(nil)
	return a
}

// launch runs the benchmark once on group g under w's plan, over the ranges
// w measures, with an assignment's environment (env) and options, and
// NCCL's debug log unless env or the user has set its variables. It reads
// nothing of the session that changes while trials run on other groups.
func (s *session) launch(ctx context.Context, g *group, w work, a space.Assignment, env []string, label string) runner.Result {
	if !g.warm && s.Space.Benchmark.WarmLaunch {
		g.warm = true
		defaults := Defaults(s.Space)
		// Not recorded: a cold GPU's first launch runs slow. Its failure is
		// said, not held against anything: the launch after it tells.
		res := s.launch(ctx, g, w, defaults, s.Space.Env(defaults), "warm-up")
		if f := res.Failure; f != nil && f.Kind != runner.FailInterrupted {
			g.warmFailed = fmt.Sprintf("the warm-up launch of NCCL's defaults on group %d (not recorded) failed after %s (%s: %s), so the launch after it may have found the GPUs cold",
				g.index, res.Duration.Round(time.Millisecond), f.Kind, strings.SplitN(f.Reason, "\n", 2)[0])
		}
	}
	p := w.plan
	p.Args, p.Label = s.Space.Args(a), label
	set := space.EnvMap(env)
	env = slices.Clone(env)
	for _, kv := range debugEnv {
		if name, _, _ := strings.Cut(kv, "="); s.Space.Fixed[name] == "" && set[name] == "" {
			env = append(env, kv)
		}
	}
	// One launch per collective the trial measures, each over its sweep.
	var parts []runner.Result
	for i, b := range s.benches {
		plan := p
		if len(s.Space.Workload) > 0 {
			if !w.measured[i] {
				continue // a settled collective of the workload
			}
			plan.Sizes = s.Space.Sweep(s.Space.Ranges[i].Collective)
		}
		res := g.run.Run(ctx, runner.Job{Benchmark: b, Plan: plan, Env: env, Timeout: s.Space.Benchmark.Timeout})
		if res.Failure != nil && len(s.benches) > 1 {
			res.Failure = &runner.Failure{Kind: res.Failure.Kind, Reason: s.Space.Ranges[i].Collective + ": " + res.Failure.Reason}
		}
		if parts = append(parts, res); res.Failure != nil {
			break
		}
	}
	return merged(parts)
}

// merged is the launches of one trial as one result: their commands run one
// after the other, their outputs in turn, the first failure the trial's.
func merged(parts []runner.Result) runner.Result {
	if len(parts) == 1 {
		return parts[0]
	}
	res := runner.Result{Started: parts[0].Started, Measurement: &runner.Measurement{}}
	for i, p := range parts {
		if i > 0 {
			res.Command = append(res.Command, "&&")
		}
		res.Command = append(res.Command, p.Command...)
		res.Output = append(res.Output, p.Output...)
		res.Exit, res.Duration, res.Log = p.Exit, res.Duration+p.Duration, res.Log.Merge(p.Log)
		if p.Failure != nil {
			res.Failure, res.Measurement = p.Failure, nil
			return res
		}
		m := res.Measurement
		if m.Rows = append(m.Rows, p.Measurement.Rows...); i == 0 {
			m.Ranks, m.Hosts, m.GPU = p.Measurement.Ranks, p.Measurement.Hosts, p.Measurement.GPU
		}
	}
	return res
}

// sweep is the message sizes a launch measures and the ranges it covers.
type sweep struct {
	sizes  space.Sizes
	ranges []bool // per range: measured
}

// fullSweep is the space's whole sweep, every range measured.
func fullSweep(sp *space.Space) sweep {
	return sweep{sizes: sp.Sizes, ranges: slices.Repeat([]bool{true}, len(sp.Ranges))}
}

// record fills the trial from the launch's result, which measured the ranges marked.
func (s *session) record(t *store.Trial, res runner.Result, measured []bool) {
	t.Scores, t.Rows, t.FailureKind, t.FailureReason = nil, nil, "", ""
	t.Command, t.Output, t.ExitCode, t.Finished = res.Command, res.Output, res.Exit.Code, res.Started.Add(res.Duration)
	if !res.Started.IsZero() {
		t.Started = res.Started.UTC() // its launch's: not a warm-up launch's before it
	}
	t.NCCLLog = res.Log
	failure := res.Failure
	if m := res.Measurement; failure == nil {
		t.Rows, t.Fingerprint = m.Rows, runner.FingerprintOf(m, res.Log)
		scores, err := results.Score(s.Space, m, measured)
		if err != nil {
			failure = &runner.Failure{Kind: runner.FailUnparsable, Reason: err.Error()}
		}
		t.Scores = scores
	}
	switch {
	case failure == nil:
		t.State = store.Complete
	case failure.Kind == runner.FailInterrupted, failure.Kind == runner.FailNode, failure.Kind == runner.FailAllocation:
		// Not the settings' failure: the trial runs again on resume, and
		// the sampler is never told it.
		t.State, t.FailureKind, t.FailureReason = store.Interrupted, string(failure.Kind), failure.Reason
	default:
		t.State, t.FailureKind, t.FailureReason = store.Failed, string(failure.Kind), failure.Reason
	}
}

// scoreList orders a trial's scores by range, NaN where it did not measure
// one; nil for a failed trial.
func scoreList(sp *space.Space, t store.Trial) []float64 {
	if t.State != store.Complete && t.State != store.Pruned {
		return nil
	}
	return results.TrialScores(sp, t)
}

// campaign finds the space's campaign in the store, or creates it, and
// records the search settings in force. A stored campaign whose space differs
// is refused with the difference, unless AllowSpaceChange: then the space
// runs as a new campaign, NAME-2 (or -3, ...), beside the old one.
func (t *Tuner) campaign(o Options) (store.Campaign, error) {
	sp := t.Space
	var camp store.Campaign
	fresh, stored := false, 0
	for i := 1; ; i++ {
		name := sp.Campaign.Name
		if i > 1 {
			name = fmt.Sprintf("%s-%d", sp.Campaign.Name, i)
		}
		var err error
		camp, err = t.Store.Campaign(name)
		if errors.Is(err, store.ErrNotFound) {
			fresh = true
			camp = store.Campaign{Name: name, SpaceHash: sp.Hash(), Space: sp.Source,
				Budget: sp.Campaign.Trials, Sampler: sp.Campaign.Sampler, Seed: sp.Campaign.Seed, Scale: sp.Campaign.Scale}
			break
		}
		if err != nil {
			return camp, err
		}
		stored = camp.Budget
		if ranWith(camp, sp) {
			if !o.KeepSettings {
				camp.Budget, camp.Seed = sp.Campaign.Trials, sp.Campaign.Seed
				if sp.Campaign.SamplerNamed {
					camp.Sampler = sp.Campaign.Sampler
				}
			}
			break
		}
		if !o.AllowSpaceChange {
			return camp, spaceChanged(camp, sp)
		}
	}
	if o.Trials != 0 {
		camp.Budget = o.Trials
	}
	if o.Seed != nil {
		camp.Seed = *o.Seed
	}
	if o.Sampler != "" {
		camp.Sampler = o.Sampler
	}
	o.ending(&camp, fresh)
	camp.Latest = &store.RunSettings{Patience: sp.Campaign.Patience, Timeout: sp.Benchmark.Timeout, ShortestTimeout: shortestRun(camp, sp)}
	if err := sp.CheckTrials(camp.Budget); err != nil {
		return camp, err
	}
	// A sampler that cannot search the space (a grid past its points),
	// stored, would be the campaign's on every run again.
	if _, err := search.New(camp.Sampler, sp, camp.Seed); err != nil {
		return camp, err
	}
	// A budget below the trials the search ran is one it has overrun.
	if !fresh && camp.Budget < stored {
		ts, err := t.Store.Trials(camp.ID)
		if err != nil {
			return camp, err
		}
		if done := searchDone(ts); done > camp.Budget {
			return camp, fmt.Errorf("campaign %q: its search ran %d trials (of a budget of %d); a budget of %d is spent already: give at least %d trials (--trials; nccltune resume keeps the stored %d)", camp.Name, done, stored, camp.Budget, done, stored)
		}
	}
	if fresh {
		return t.Store.CreateCampaign(camp)
	}
	return camp, t.Store.UpdateSettings(camp)
}

// CampaignName is the campaign the space ran as: its own name, or the newest
// NAME-N that --allow-space-change created; "" if it never ran. A campaign's
// name is no part of its space's hash, so a campaign of the same space
// under a name that merely starts with NAME ("ib-large" beside "ib") is
// another campaign, not this one.
func CampaignName(st Store, sp *space.Space) string {
	all, _ := st.Campaigns()
	for i := len(all) - 1; i >= 0; i-- {
		if ranAs(all[i].Name, sp.Campaign.Name) && ranWith(all[i], sp) {
			return all[i].Name
		}
	}
	return ""
}

// ranAs reports whether a campaign called name is the campaign base: base
// itself, or base-N (N >= 2) as --allow-space-change names it.
func ranAs(name, base string) bool {
	if name == base {
		return true
	}
	suffix, ok := strings.CutPrefix(name, base+"-")
	n, err := strconv.Atoi(suffix)
	return ok && err == nil && n >= 2 && strconv.Itoa(n) == suffix
}

// ranWith reports whether campaign camp ran with space sp: by the hash
// stored with it or, where they differ, by its stored copy's hash as this
// nccltune reads it. A hash is of the space's Identity, whose lines have
// gained fields since early versions: the hash an older nccltune stored
// differs from this one's for the very same space.
func ranWith(camp store.Campaign, sp *space.Space) bool {
	if camp.SpaceHash == sp.Hash() {
		return true
	}
	old, err := storedSpace(camp, sp.Dir)
	return err == nil && old.Hash() == sp.Hash()
}

// storedSpace is the space campaign camp ran with, its stored copy read as
// this nccltune reads a space file in dir (the store does not record the
// file's directory, which its relative paths are relative to), at the
// campaign's scale.
func storedSpace(camp store.Campaign, dir string) (*space.Space, error) {
	old, err := space.ParseIn(dir, camp.Name+" (as stored)", camp.Space)
	if err == nil && camp.Scale > 0 {
		old = old.AtScale(camp.Scale)
	}
	return old, err
}

// ErrSpaceChanged means the space differs from the one a stored campaign ran with.
var ErrSpaceChanged = errors.New("the space differs from the one the stored campaign ran with")

func spaceChanged(camp store.Campaign, sp *space.Space) error {
	old, err := storedSpace(camp, sp.Dir)
	if err != nil {
		return fmt.Errorf("campaign %q: %w, and the stored copy no longer loads: %v", camp.Name, ErrSpaceChanged, err)
	}
	return fmt.Errorf("campaign %q: %w:\n  %s\nrun with --allow-space-change to continue as a new campaign in the same store, or rename the campaign",
		camp.Name, ErrSpaceChanged, strings.Join(space.Diff(old, sp), "\n  "))
}
