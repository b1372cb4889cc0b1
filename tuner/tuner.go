// Package tuner runs a tuning campaign: it asks the sampler for a
// configuration, runs the benchmark with it, records the trial in the store
// and tells the sampler the result; then it picks, per size range, the best
// configuration measured and exports it.
package tuner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nccltune/nccltune/runner"
	"github.com/nccltune/nccltune/runner/ddp"
	"github.com/nccltune/nccltune/runner/nccllog"
	"github.com/nccltune/nccltune/runner/nccltests"
	"github.com/nccltune/nccltune/runner/sim"
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
	SaveValidation(campaignID int64, runs []store.ValidationRun, vs []store.Validation) error
	MarkInterrupted(campaignID int64) (int, error)
	CreateCampaign(c store.Campaign) (store.Campaign, error)
	UpdateSettings(c store.Campaign) error
	Campaign(name string) (store.Campaign, error)
	StartTrial(t *store.Trial) error
	FinishTrial(ctx context.Context, t *store.Trial) error
	Trials(campaignID int64) ([]store.Trial, error)
}

// Campaign configures one run of the tuning loop.
type Campaign struct {
	Space  *space.Space
	Store  Store
	Runner Runner // nil: the local launcher with this process's environment minus NCCL_*
	// SimCommand starts the simulated cluster when the space has a [simulator]
	// table; nil means this executable's "sim" command.
	SimCommand []string
	// Progress, if set, is called after every finished trial.
	Progress func(Progress)
	// Overrides of the space file's search settings (zero: not overridden). A
	// resumed campaign keeps the settings it ran with unless overridden.
	Trials  int
	Seed    *int64
	Sampler string
	// Simplify, once the budget is spent, tries each range's choice without
	// each of its settings in turn (see simplify), so that only settings that
	// matter are exported.
	Simplify bool
	// AllowSpaceChange runs a changed space as a new campaign instead of refusing it.
	AllowSpaceChange bool
	// ValidateRounds, when at least 2, validates the result (see Validate)
	// once the budget is spent.
	ValidateRounds int
	// OnValidationRun, if set, is called after each validation launch.
	OnValidationRun func(run store.ValidationRun, done, total int)
	// KeepSettings resumes with the stored campaign's budget, seed and sampler
	// (`nccltune resume`) instead of the space file's (`nccltune run`).
	KeepSettings bool
}

// Progress reports one finished trial.
type Progress struct {
	Trial  store.Trial
	Done   int // finished trials, including this one
	Budget int
	Best   []float64 // best score so far per range
	// Simplifying marks the trials after the budget that try choices with fewer settings.
	Simplifying bool
	// Note, if not empty, tells of a change in how the following trials run
	// (the iteration count adapted to the measured noise).
	Note string
}

// debugEnv makes NCCL log the variables it read and the transport it chose, so
// that each trial's log can confirm its configuration took effect.
var debugEnv = []string{"NCCL_DEBUG=INFO", "NCCL_DEBUG_SUBSYS=INIT,ENV,NET"}

// Run runs the campaign until its trial budget is spent, resuming it if the
// store already holds it. It returns ctx's error if stopped early; every
// trial finished until then is stored.
func (c *Campaign) Run(ctx context.Context) error {
	sp := c.Space
	ses, err := c.open()
	if err != nil {
		return err
	}
	camp := ses.camp
	sampler, err := search.New(camp.Sampler, sp, camp.Seed)
	if err != nil {
		return err
	}
	trials, err := c.Store.Trials(camp.ID)
	if err != nil {
		return err
	}
	// Interrupted trials are history only: each runs again under its number.
	trials = slices.DeleteFunc(trials, func(t store.Trial) bool { return !t.State.Finished() })
	done, best := 0, make([]float64, len(sp.Ranges))
	for _, t := range trials {
		if err := sampler.Tell(space.Assignment(t.Params), scoreList(sp, t)); err != nil {
			return fmt.Errorf("resume: trial %d: %w", t.Number, err)
		}
		if t.State == store.Complete {
			raiseBest(best, scoreList(sp, t))
		}
		done = max(done, t.Number+1)
	}
	if camp.Stopped != "" {
		if c.Trials == 0 && sp.Campaign.Patience > 0 {
			done = camp.Budget // it converged: run no more unless told a new budget
		} else {
			camp.Stopped = ""
			if err := c.Store.UpdateSettings(camp); err != nil {
				return err
			}
		}
	}
	settled := Settled(sp, trials)
	if _, err := c.prepare(ses, trials, searchSweep(sp, settled)); err != nil {
		return err
	}
	for n := done; n < camp.Budget; n++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		a, err := c.next(n, sampler, trials, settled)
		if err != nil {
			return fmt.Errorf("trial %d: %w", n, err)
		}
		t, err := c.trial(ctx, ses, sampler, &trials, best, n, a)
		if err != nil {
			return err
		}
		if t.State == store.Complete {
			raiseBest(best, scoreList(sp, *t))
		}
		settled = Settled(sp, trials)
		note, err := c.prepare(ses, trials, searchSweep(sp, settled))
		if err != nil {
			return err
		}
		if c.Progress != nil {
			c.Progress(Progress{Trial: *t, Done: n + 1, Budget: camp.Budget, Best: slices.Clone(best), Note: note})
		}
		if !slices.Contains(settled, -1) && n+1 < camp.Budget {
			camp.Stopped = fmt.Sprintf("stopped after trial %d: every range settled (patience): %s", n, describeSettled(sp, settled))
			if err := c.Store.UpdateSettings(camp); err != nil {
				return err
			}
			break
		}
	}
	if !slices.ContainsFunc(trials, func(t store.Trial) bool { return t.State == store.Complete }) {
		return fmt.Errorf("%w: all %d of them; see `nccltune status` and `nccltune show 0`", ErrAllFailed, len(trials))
	}
	if c.Simplify {
		if _, err := c.prepare(ses, trials, fullSweep(sp)); err != nil {
			return err
		}
		if err := c.simplify(ctx, ses, sampler, &trials, best); err != nil {
			return err
		}
	}
	if c.ValidateRounds >= 2 {
		if _, err := c.Validate(ctx, c.ValidateRounds); err != nil && !errors.Is(err, ErrNothingToValidate) {
			return fmt.Errorf("validation: %w", err)
		}
	}
	return nil
}

// trial runs trial n with assignment a: it is stored as running, checked,
// perhaps pruned, launched, stored with its outcome, and told to the sampler.
// trials gets it appended.
func (c *Campaign) trial(ctx context.Context, ses *session, sampler search.Sampler, trials *[]store.Trial, best []float64, n int, a space.Assignment) (*store.Trial, error) {
	sp := c.Space
	t := &store.Trial{CampaignID: ses.camp.ID, Number: n, Params: a, Env: sp.Env(a)}
	if err := c.Store.StartTrial(t); err != nil {
		return nil, err
	}
	if err := sp.Check(a); err != nil {
		// Not launched: NCCL would refuse it. It costs nothing and teaches the sampler.
		t.State, t.FailureKind, t.FailureReason, t.Finished = store.Failed, string(runner.FailInvalid), err.Error(), time.Now()
	} else if !c.prune(ctx, ses.run, ses.quick, a, t, best) {
		c.record(t, ses.run.Run(ctx, c.job(ses.cmd, a, t.Env, strconv.Itoa(n))), ses.sweep)
	}
	// Record even when stopped, so the interrupted trial is visible and re-run later.
	if err := c.Store.FinishTrial(context.WithoutCancel(ctx), t); err != nil {
		return nil, err
	}
	if t.State == store.Interrupted {
		return nil, ctx.Err()
	}
	if err := failingThroughout(*trials, *t); err != nil {
		return nil, err
	}
	*trials = append(*trials, *t)
	if err := sampler.Tell(a, scoreList(sp, *t)); err != nil {
		return nil, fmt.Errorf("trial %d: %w", n, err)
	}
	return t, nil
}

// simplify tries, for each range's chosen configuration, leaving out each of
// its settings in turn, as extra trials after the budget. A setting whose
// removal keeps the range within Parsimony of the choice is left out for
// good; Results then prefers the simpler trial. The choice's search score is
// the best of many noisy runs, so biased upwards (the winner's curse): the
// variants are held against a fresh run of it instead. Configurations already
// run are not run again, so a resumed campaign simplifies where it stopped.
func (c *Campaign) simplify(ctx context.Context, ses *session, sampler search.Sampler, trials *[]store.Trial, best []float64) error {
	sp := c.Space
	n := ses.camp.Budget
	measured := map[string]store.Trial{} // every finished trial, by configuration
	fresh := map[string]store.Trial{}    // those run after the budget: not picked as a maximum
	for _, t := range *trials {
		measured[configKey(sp, t.Params)] = t
		if t.Number >= ses.camp.Budget {
			fresh[configKey(sp, t.Params)] = t
		}
		n = max(n, t.Number+1)
	}
	run := func(a space.Assignment) (store.Trial, error) {
		if err := ctx.Err(); err != nil {
			return store.Trial{}, err
		}
		t, err := c.trial(ctx, ses, sampler, trials, best, n, a)
		if err != nil {
			return store.Trial{}, err
		}
		measured[configKey(sp, a)], fresh[configKey(sp, a)] = *t, *t
		if c.Progress != nil {
			c.Progress(Progress{Trial: *t, Done: n + 1, Budget: n + 1, Best: slices.Clone(best), Simplifying: true})
		}
		n++
		return *t, nil
	}
	// Start from the choices of the search alone, so that a resumed campaign,
	// which already holds some variants, retraces the same path.
	var searched []store.Trial
	for _, t := range *trials {
		if t.Number < ses.camp.Budget {
			searched = append(searched, t)
		}
	}
	for _, r := range Results(sp, searched, nil) {
		if r.Best == nil || r.Best.Number == 0 {
			continue
		}
		cur := space.Assignment(maps.Clone(r.Best.Params))
		ref, ok := fresh[configKey(sp, cur)]
		if !ok {
			var err error
			if ref, err = run(cur); err != nil {
				return err
			}
		}
		if ref.State != store.Complete {
			continue // the choice failed when run again; validation will say so
		}
		target := ref.Scores[r.Range.Name] * (1 - Parsimony)
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
			t, tried := measured[configKey(sp, variant)]
			if !tried {
				var err error
				if t, err = run(variant); err != nil {
					return err
				}
			}
			if t.State == store.Complete && t.Scores[r.Range.Name] >= target {
				cur = variant
			}
		}
	}
	return nil
}

// session is what a run or a validation works with.
type session struct {
	cmd   []string // the benchmark command, before the launcher
	iters int      // its iteration count, once adapted (see Iterations)
	sweep sweep    // what it measures
	quick []string // the full sweep with few iterations, for pruning; nil if not pruning
	run   Runner
	camp  store.Campaign
}

// prepare sets the session's command for the next launches: the iteration
// count Iterations gives for the trials, over the sweep sw. It says why when
// the iteration count changed.
func (c *Campaign) prepare(ses *session, trials []store.Trial, sw sweep) (string, error) {
	iters, why := Iterations(c.Space, trials)
	if iters == ses.iters && sw.sizes == ses.sweep.sizes && slices.Equal(sw.ranges, ses.sweep.ranges) {
		return "", nil
	}
	cmd, err := c.commandWith(func(sp *space.Space) { sp.Benchmark.Iters, sp.Sizes = iters, sw.sizes })
	if err != nil {
		return "", err
	}
	if iters == ses.iters {
		why = ""
	}
	ses.cmd, ses.iters, ses.sweep = cmd, iters, sw
	return why, nil
}

// PruneMargin: a trial whose quick pass is more than this much below the best
// in every range is pruned. A quick pass is noisier than a full run; a
// configuration 30% behind everywhere is not going to win.
const PruneMargin = 0.3

// prune runs the quick pass when the campaign prunes; it reports whether that
// settled the trial (failed, or pruned), so that the full run is not needed.
func (c *Campaign) prune(ctx context.Context, run Runner, quick []string, a space.Assignment, t *store.Trial, best []float64) bool {
	if quick == nil || t.Number == 0 || !slices.ContainsFunc(best, func(b float64) bool { return b > 0 }) {
		return false
	}
	c.record(t, run.Run(ctx, c.job(quick, a, t.Env, strconv.Itoa(t.Number)+"-quick")), fullSweep(c.Space))
	if t.State != store.Complete {
		return true // a failure (or an interrupt) is as telling in a quick pass
	}
	for i, r := range c.Space.Ranges {
		if t.Scores[r.Name] >= best[i]*(1-PruneMargin) {
			return false // it may compete somewhere: run it in full
		}
	}
	t.State, t.FailureReason = store.Pruned, fmt.Sprintf("quick pass (%d iterations) more than %.0f%% below the best in every range", quickIters, 100*PruneMargin)
	return true
}

// quickIters is how many timed iterations the quick pass runs (one warm-up).
const quickIters = 2

// open checks that the benchmark and launcher can work, takes the store's
// writer lock, and finds or creates the campaign. Nothing is stored before the
// checks pass.
func (c *Campaign) open() (*session, error) {
	ses, err := c.launchable()
	if err != nil {
		return nil, err
	}
	if err := c.Store.LockWriter(); err != nil {
		return nil, err
	}
	camp, err := c.campaign()
	if err != nil {
		return nil, err
	}
	if _, err := c.Store.MarkInterrupted(camp.ID); err != nil {
		return nil, err
	}
	ses.camp = camp
	if c.Space.Campaign.Prune {
		if ses.quick, err = c.shortCommand(func(*space.Space) {}); err != nil {
			return nil, err
		}
	}
	return ses, nil
}

// launchable checks that the benchmark and launcher can work and returns a
// session without a campaign: enough to launch, nothing stored.
func (c *Campaign) launchable() (*session, error) {
	cmd, err := c.benchmarkCommand()
	if err != nil {
		return nil, err
	}
	run := c.Runner
	if run == nil {
		launcher := Launcher(c.Space.Launcher)
		if ch, ok := launcher.(runner.Checker); ok {
			if err := ch.Check(); err != nil {
				return nil, err
			}
		}
		run = &runner.Runner{Launcher: launcher, BaseEnv: runner.BaseEnv()}
	}
	return &session{cmd: cmd, iters: c.Space.Benchmark.Iters, sweep: fullSweep(c.Space), run: run}, nil
}

// Launcher builds the runner's launcher from the space's [launcher] table.
func Launcher(l space.Launcher) runner.Launcher {
	switch l.Kind {
	case "mpirun":
		return runner.MPIRun{Flavor: l.Flavor, Command: l.Command, NP: l.NP, Hostfile: l.Hostfile, MapBy: l.MapBy, BindTo: l.BindTo, Args: l.Args}
	case "srun":
		return runner.Srun{Command: l.Command, Nodes: l.Nodes, TasksPerNode: l.TasksPerNode, Args: l.Args}
	case "torchrun":
		return runner.Torchrun{Command: l.Command, NProcPerNode: l.NProcPerNode, NNodes: l.Nodes, RdzvEndpoint: l.RdzvEndpoint, Args: l.Args}
	}
	return runner.Local{}
}

// ErrAllFailing stops a campaign whose first trials, NCCL's defaults among
// them, all failed the same way: the benchmark or the machine is broken, and
// the rest of the budget would be burnt for nothing.
var ErrAllFailing = errors.New("stopping early: every trial so far failed the same way")

// ErrAllFailed means a campaign ended without a single completed trial.
var ErrAllFailed = errors.New("every trial failed")

// earlyStopAfter is how many failed trials, all of one kind, stop a campaign.
const earlyStopAfter = 5

// failingThroughout reports whether the finished trials and last, which just
// finished, all failed the same way (ErrAllFailing), once there are enough of them.
func failingThroughout(finished []store.Trial, last store.Trial) error {
	finished = append(slices.Clone(finished), last)
	if len(finished) < earlyStopAfter {
		return nil
	}
	for _, t := range finished {
		if t.State != store.Failed || t.FailureKind != last.FailureKind {
			return nil
		}
	}
	return fmt.Errorf("%w (%d trials, each %s; the last: %s); see `nccltune show %d`", ErrAllFailing, len(finished),
		last.FailureKind, last.FailureReason, last.Number)
}

// Defaults is trial 0: nothing searched is set, so NCCL applies its own
// choices. Categorical parameters that offer "default" are told so.
func Defaults(sp *space.Space) space.Assignment {
	a, _, _ := sp.Complete(nil)
	return a
}

// job is one launch of the benchmark with an assignment: its environment, and
// for the DDP step its knobs as script options.
func (c *Campaign) job(cmd []string, a space.Assignment, env []string, label string) runner.Job {
	format := runner.NCCLTests
	if c.Space.Benchmark.Kind == space.DDP {
		format = runner.DDPStep
	}
	return runner.Job{Command: append(slices.Clone(cmd), c.Space.Args(a)...), Env: append(slices.Clone(env), c.jobEnv(label)...),
		Timeout: c.Space.Benchmark.Timeout, Format: format}
}

// jobEnv is what a launch adds to a configuration's variables: NCCL's debug
// log, and for the simulator a run label that seeds its noise.
func (c *Campaign) jobEnv(label string) []string {
	env := slices.Clone(debugEnv)
	if len(c.Space.Simulator) > 0 {
		env = append(env, "NCCLTUNE_SIM_RUN="+label)
	}
	for i := len(env) - 1; i >= 0; i-- {
		if name, _, _ := strings.Cut(env[i], "="); c.Space.Fixed[name] != "" {
			env = slices.Delete(env, i, i+1) // the user pinned it
		}
	}
	return env
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

// record fills the trial from the launch's result, a run of sweep sw.
func (c *Campaign) record(t *store.Trial, res runner.Result, sw sweep) {
	t.Scores, t.Rows, t.FailureKind, t.FailureReason = nil, nil, "", ""
	t.Command, t.Output, t.ExitCode, t.Finished = res.Command, res.Output, res.ExitCode, res.Started.Add(res.Duration)
	if res.Report != nil {
		t.Rows = res.Report.Rows
	}
	t.NCCLLog = nccllog.Parse(res.Output)
	failure := res.Failure
	if failure == nil && res.DDP == nil {
		failure = c.checkSweep(t, sw)
	}
	switch {
	case failure == nil && res.DDP != nil:
		// The DDP step's one objective: steps per second (higher is better, like busbw).
		t.State, t.Scores = store.Complete, map[string]float64{c.Space.Ranges[0].Name: 1e3 / res.DDP.StepMsMean}
	case failure == nil:
		t.State = store.Complete
		t.Scores = map[string]float64{}
		for i, s := range Scores(c.Space, t.Rows) {
			if sw.ranges[i] {
				t.Scores[c.Space.Ranges[i].Name] = s
			}
		}
	case failure.Kind == runner.FailInterrupted:
		t.State, t.FailureKind, t.FailureReason = store.Interrupted, string(failure.Kind), failure.Reason
	default:
		t.State, t.FailureKind, t.FailureReason = store.Failed, string(failure.Kind), failure.Reason
	}
}

// checkSweep fails a trial whose table is shorter than the sweep or misses a
// range: a truncated table must not be compared with complete ones. Rows are
// counted rather than matched by size, because some collectives (all_gather,
// alltoall) round each size to a multiple of ranks x element size.
func (c *Campaign) checkSweep(t *store.Trial, sw sweep) *runner.Failure {
	if want := len(sw.sizes.List()); len(t.Rows) < want {
		return &runner.Failure{Kind: runner.FailUnparsable, Reason: fmt.Sprintf("output has %d of the sweep's %d rows", len(t.Rows), want)}
	}
	for i, r := range c.Space.Ranges {
		if sw.ranges[i] && !slices.ContainsFunc(t.Rows, func(row nccltests.Row) bool { return r.Contains(row.Size) }) {
			return &runner.Failure{Kind: runner.FailUnparsable, Reason: "output has no row in range " + r.String()}
		}
	}
	return nil
}

// scoreList orders a trial's scores by range; nil for a failed trial.
func scoreList(sp *space.Space, t store.Trial) []float64 {
	if t.State != store.Complete && t.State != store.Pruned {
		return nil
	}
	out := make([]float64, len(sp.Ranges))
	for i, r := range sp.Ranges {
		s, ok := t.Scores[r.Name]
		if !ok {
			s = math.NaN()
		}
		out[i] = s
	}
	return out
}

// raiseBest raises each range's best score to scores' where higher.
func raiseBest(best, scores []float64) {
	for i, s := range scores {
		if s > best[i] {
			best[i] = s
		}
	}
}

// campaign finds the space's campaign in the store, or creates it, and
// records the search settings in force. A stored campaign whose space differs
// is refused with the difference, unless AllowSpaceChange: then the space
// runs as a new campaign, NAME-2 (or -3, ...), beside the old one.
func (c *Campaign) campaign() (store.Campaign, error) {
	sp := c.Space
	var camp store.Campaign
	fresh := false
	for i := 1; ; i++ {
		name := sp.Campaign.Name
		if i > 1 {
			name = fmt.Sprintf("%s-%d", sp.Campaign.Name, i)
		}
		var err error
		camp, err = c.Store.Campaign(name)
		if errors.Is(err, store.ErrNotFound) {
			fresh = true
			camp = store.Campaign{Name: name, SpaceHash: sp.Hash(), Space: sp.Source,
				Budget: sp.Campaign.Trials, Sampler: sp.Campaign.Sampler, Seed: sp.Campaign.Seed}
			break
		}
		if err != nil {
			return camp, err
		}
		if camp.SpaceHash == sp.Hash() {
			if !c.KeepSettings {
				camp.Budget, camp.Sampler, camp.Seed = sp.Campaign.Trials, sp.Campaign.Sampler, sp.Campaign.Seed
			}
			break
		}
		if !c.AllowSpaceChange {
			return camp, spaceChanged(camp, sp)
		}
	}
	if c.Trials != 0 {
		camp.Budget = c.Trials
	}
	if c.Seed != nil {
		camp.Seed = *c.Seed
	}
	if c.Sampler != "" {
		camp.Sampler = c.Sampler
	}
	if camp.Budget < 3 {
		return camp, fmt.Errorf("the trial budget must be at least 3 (trials 0 and 1 measure NCCL's defaults)")
	}
	if fresh {
		return c.Store.CreateCampaign(camp)
	}
	return camp, c.Store.UpdateSettings(camp)
}

// ErrSpaceChanged means the space differs from the one a stored campaign ran with.
var ErrSpaceChanged = errors.New("the space differs from the one the stored campaign ran with")

func spaceChanged(camp store.Campaign, sp *space.Space) error {
	old, err := space.Parse(camp.Name+" (as stored)", camp.Space)
	if err != nil {
		return fmt.Errorf("campaign %q: %w, and the stored copy no longer loads: %v", camp.Name, ErrSpaceChanged, err)
	}
	return fmt.Errorf("campaign %q: %w:\n  %s\nrun with --allow-space-change to continue as a new campaign in the same store, or rename the campaign",
		camp.Name, ErrSpaceChanged, strings.Join(space.Diff(old, sp), "\n  "))
}

// benchmarkCommand builds the nccl-tests command line, checking before any
// trial runs that the benchmark (or the simulator's scenario) is usable.
func (c *Campaign) benchmarkCommand() ([]string, error) {
	sp, b := c.Space, c.Space.Benchmark
	check := "1"
	if !b.Check {
		check = "0"
	}
	if b.Kind == space.DDP {
		return c.ddpCommand()
	}
	bench := sp.Campaign.Collective + "_perf"
	args := append([]string{
		"-b", strconv.FormatInt(sp.Sizes.Min, 10), "-e", strconv.FormatInt(sp.Sizes.Max, 10),
		"-f", strconv.Itoa(sp.Sizes.Factor), "-g", strconv.Itoa(b.GPUs),
		"-n", strconv.Itoa(b.Iters), "-w", strconv.Itoa(b.Warmup), "-c", check,
	}, b.Args...)
	if len(sp.Simulator) == 0 {
		path, err := exec.LookPath(b.Binary)
		if err != nil {
			return nil, fmt.Errorf("benchmark %s: %w", b.Binary, err)
		}
		return append([]string{path}, args...), nil
	}
	simCmd := c.SimCommand
	if simCmd == nil {
		self, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("simulator: cannot find this executable: %w", err)
		}
		simCmd = []string{self, "sim"}
	}
	var flags []string
	for _, k := range slices.Sorted(maps.Keys(sp.Simulator)) {
		flags = append(flags, "-"+k+"="+sp.Simulator[k])
	}
	if err := sim.CheckScenario(flags); err != nil {
		return nil, err
	}
	cmd := append(slices.Clone(simCmd), flags...)
	return append(append(cmd, bench), args...), nil
}

// ProbeCommand is a short all-reduce with the space's benchmark (nccl-tests or
// the simulator): a few sizes, few iterations, for a pre-flight check. It is
// nil for the DDP step, which has no such probe.
func (c *Campaign) ProbeCommand() ([]string, error) {
	return c.shortCommand(func(sp *space.Space) { sp.Sizes = space.Sizes{Min: 8, Max: 1 << 20, Factor: 8} })
}

// shortCommand is the nccl-tests command with few iterations, and whatever
// else change makes to a copy of the space; nil for the DDP step.
func (c *Campaign) shortCommand(change func(*space.Space)) ([]string, error) {
	if c.Space.Benchmark.Kind == space.DDP {
		return nil, nil
	}
	return c.commandWith(func(sp *space.Space) {
		sp.Benchmark.Iters, sp.Benchmark.Warmup = quickIters, 1
		change(sp)
	})
}

// commandWith is the benchmark command for a copy of the space that change altered.
func (c *Campaign) commandWith(change func(*space.Space)) ([]string, error) {
	altered := *c
	sp := *c.Space
	change(&sp)
	altered.Space = &sp
	return altered.benchmarkCommand()
}

// ddpCommand writes the DDP step script and returns the command that runs it.
func (c *Campaign) ddpCommand() ([]string, error) {
	b := c.Space.Benchmark
	python, err := exec.LookPath(b.Python)
	if err != nil {
		return nil, fmt.Errorf("benchmark python %s: %w", b.Python, err)
	}
	dir := b.ScriptDir
	if dir == "" {
		dir = filepath.Join(os.TempDir(), fmt.Sprintf("nccltune-%d", os.Getuid()))
	}
	script, err := ddp.WriteScript(dir)
	if err != nil {
		return nil, err
	}
	return append([]string{python, script, "--params", b.Params, "--layers", strconv.Itoa(b.Layers),
		"--batch", strconv.Itoa(b.Batch), "--steps", strconv.Itoa(b.Iters), "--warmup", strconv.Itoa(b.Warmup),
		"--device", b.Device}, b.Args...), nil
}
