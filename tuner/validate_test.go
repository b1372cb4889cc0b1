package tuner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nccltune/nccltune/results"
	"github.com/nccltune/nccltune/runner"
	"github.com/nccltune/nccltune/runner/nccllog"
	"github.com/nccltune/nccltune/space"
	"github.com/nccltune/nccltune/store"
)

func TestValidateOnSimulator(t *testing.T) {
	sp := loadExample(t, 24)
	st := openStore(t)
	if err := newTuner(t, sp, st).Run(context.Background(), Options{ValidateRounds: 4}); err != nil {
		t.Fatal(err)
	}
	camp, _ := st.Campaign(sp.Campaign.Name)
	vals, err := st.Validations(camp.ID)
	if err != nil || len(vals) < 3 {
		t.Fatalf("validations: %v, %v", vals, err)
	}
	trials, _ := st.Trials(camp.ID)
	large := *results.Of(sp, trials, vals)[2].Validation
	if large.Verdict != "tuned" || !(large.CILow > 0.2) || large.CILow > large.Gain || large.Gain > large.CIHigh {
		t.Errorf("large range: %+v; the GDR gain is large and certain", large)
	}
	for _, r := range results.Of(sp, trials, vals) {
		if r.Validation == nil {
			t.Errorf("range %s: validation not attached", r.Range.Name)
		}
		if r.Tuned() != (r.Validation.Verdict == "tuned") {
			t.Errorf("range %s: Tuned() disagrees with the verdict %q", r.Range.Name, r.Validation.Verdict)
		}
	}
	runs, err := st.ValidationRuns(camp.ID, large.Batch)
	if err != nil || len(runs) < 8 || runs[0].Arm != "default" || runs[len(runs)-1].Arm != "default" {
		t.Errorf("runs are not interleaved A B, B A: %d runs, %v", len(runs), runs)
	}
}

// TestValidatedInMoreRoundsIsFinished: a campaign that `nccltune validate
// --rounds 3` measured after its run's 2 rounds is finished as that run
// asked: running it again validated it in 2 rounds once more, and the
// weaker verdicts replaced the stronger.
func TestValidatedInMoreRoundsIsFinished(t *testing.T) {
	sp := loadExample(t, 6)
	st := openStore(t)
	asked := Options{ValidateRounds: 2}
	if err := newTuner(t, sp, st).Run(context.Background(), asked); err != nil {
		t.Fatal(err)
	}
	if _, err := newTuner(t, sp, st).Validate(context.Background(), 3); err != nil {
		t.Fatal(err)
	}
	if !newTuner(t, sp, st).Finished(asked) {
		t.Error("validated in 3 rounds, the campaign is not finished for a run that asks 2")
	}
	if newTuner(t, sp, st).Finished(Options{ValidateRounds: 4}) {
		t.Error("validated in 3 rounds, the campaign is finished for a run that asks 4")
	}
}

// TestValidationStoppedWhileProbing: a campaign stopped while validation
// probes NCCL's decisions under its configurations is not finished: its
// resume validates again, and records the decisions an uninterrupted run
// does. Its verdicts were stored before the probes, so the resume ran
// nothing, "validated", and a plugin's rules had no decisions.
func TestValidationStoppedWhileProbing(t *testing.T) {
	sp := loadExample(t, 6)
	validated := Options{ValidateRounds: 2}
	decisions := func(st *store.Store) int {
		t.Helper()
		c, err := st.Campaign(sp.Campaign.Name)
		if err != nil {
			t.Fatal(err)
		}
		d, err := st.Decisions(c.ID)
		if err != nil {
			t.Fatal(err)
		}
		return len(d)
	}
	whole := openStore(t)
	if err := newTuner(t, sp, whole).Run(context.Background(), validated); err != nil {
		t.Fatal(err)
	}
	st := openStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	tu := newTuner(t, sp, st)
	tu.Runner = &jitter{stop: cancel, stopAt: "probe-default"}
	if err := tu.Run(ctx, validated); !errors.Is(err, context.Canceled) {
		t.Fatalf("stopped run returned %v", err)
	}
	if newTuner(t, sp, st).Finished(Options{KeepSettings: true}) {
		t.Error("stopped while probing, the campaign reads as finished")
	}
	if err := newTuner(t, sp, st).Run(context.Background(), Options{KeepSettings: true}); err != nil {
		t.Fatal(err)
	}
	if got, want := decisions(st), decisions(whole); got != want || want == 0 {
		t.Errorf("stopped while probing and resumed: decisions under %d configurations, uninterrupted %d", got, want)
	}
}

// failIn fails, as kind says (wrong data where it says none), every launch
// of a tuned configuration (arm 1 on) in one validation round, and runs the rest.
type failIn struct {
	round int
	kind  runner.FailureKind
}

func (w failIn) Run(ctx context.Context, job runner.Job) runner.Result {
	var round, arm int
	if n, _ := fmt.Sscanf(job.Plan.Label, "validate-%d-%d", &round, &arm); n == 2 && round == w.round && arm > 0 {
		return runner.Result{Started: time.Now(), Failure: &runner.Failure{Kind: cmp.Or(w.kind, runner.FailWrong), Reason: "made to fail in this round"}}
	}
	return (&runner.Runner{Launcher: runner.Local{}, BaseEnv: runner.BaseEnv()}).Run(ctx, job)
}

// TestFailedInAnEarlierValidation: a configuration whose data was wrong in
// one validation round is not tuned by another validation in which every
// round went well (it fails so in a training job too, and validating until
// a lucky batch would export it); one whose launch started no rank in a
// round (srun's step never created) did not run its settings there, and the
// next validation judges it on its own rounds.
func TestFailedInAnEarlierValidation(t *testing.T) {
	for _, tc := range []struct {
		kind runner.FailureKind
		held bool // to NCCL's defaults for the earlier failure
	}{{runner.FailWrong, true}, {runner.FailLaunch, false}} {
		// The search, run before, is the example's; the validation runs as
		// the campaign is run again.
		sp, st := ranExample(t, 0)
		tu := newTuner(t, sp, st)
		tu.Runner = failIn{round: 1, kind: tc.kind}
		if err := tu.Run(context.Background(), Options{ValidateRounds: 3}); err != nil {
			t.Fatal(err)
		}
		if _, err := newTuner(t, sp, st).Validate(context.Background(), 3); err != nil {
			t.Fatal(err)
		}
		camp, _ := st.Campaign(sp.Campaign.Name)
		trials, _ := st.Trials(camp.ID)
		vals, _ := st.Validations(camp.ID)
		judged := 0
		for _, r := range results.Of(sp, trials, vals) {
			if r.Validation == nil || r.Validation.Config == sp.Key(Defaults(sp)) {
				continue
			}
			judged++
			if held := strings.Contains(r.Validation.Reason, "earlier validation"); held != tc.held || held && r.Tuned() {
				t.Errorf("%s in an earlier validation: range %s, trial %d, is %s: %s", tc.kind, r.Range.Name, r.Best.Number, r.Validation.Verdict, r.Validation.Reason)
			}
		}
		if judged == 0 {
			t.Fatalf("%s: no range validated a tuned configuration", tc.kind)
		}
	}
}

// failThenStop fails, with wrong data, every launch of a tuned configuration
// (arm 1 on) in validation round 0, and stops the campaign (stop) as the
// launch labelled stopAt starts.
type failThenStop struct {
	stop   func()
	stopAt string
}

func (w failThenStop) Run(ctx context.Context, job runner.Job) runner.Result {
	var round, arm int
	if n, _ := fmt.Sscanf(job.Plan.Label, "validate-%d-%d", &round, &arm); n == 2 && round == 0 && arm > 0 {
		return runner.Result{Started: time.Now(), Failure: &runner.Failure{Kind: runner.FailWrong, Reason: "made to fail in this round"}}
	}
	if job.Plan.Label == w.stopAt {
		w.stop()
	}
	return (&runner.Runner{Launcher: runner.Local{}, BaseEnv: runner.BaseEnv()}).Run(ctx, job)
}

// TestFailedInAStoppedValidation: a configuration whose data was wrong in a
// validation that was then stopped (Ctrl-C, a node lost), while probing
// (every tuned configuration failed in round 0, so no later round runs), is
// not tuned by the next validation, in which every round went well: the
// stopped validation's runs were dropped, its failure with them.
func TestFailedInAStoppedValidation(t *testing.T) {
	sp, st := ranExample(t, 0)
	ctx, cancel := context.WithCancel(context.Background())
	tu := newTuner(t, sp, st)
	tu.Runner = failThenStop{stop: cancel, stopAt: "probe-default"}
	if _, err := tu.Validate(ctx, 3); !errors.Is(err, context.Canceled) {
		t.Fatalf("stopped while probing: validation returned %v", err)
	}
	vals, err := newTuner(t, sp, st).Validate(context.Background(), 3)
	if err != nil {
		t.Fatal(err)
	}
	heldByEarlierFailure(t, sp, vals, "stopped while probing")
}

// heldByEarlierFailure checks that vals, a validation's verdicts after one
// in which the tuned configurations gave wrong data (what ended it says
// how), hold every one of them to NCCL's defaults for that failure.
func heldByEarlierFailure(t *testing.T, sp *space.Space, vals []store.Validation, ended string) {
	t.Helper()
	judged := 0
	for _, v := range vals {
		if v.Config == sp.Key(Defaults(sp)) {
			continue
		}
		judged++
		if v.Verdict == "tuned" || !strings.Contains(v.Reason, "earlier validation") {
			t.Errorf("%s after wrong data: range %s, trial %d, is %s: %s", ended, v.Range, v.Candidate, v.Verdict, v.Reason)
		}
	}
	if judged == 0 {
		t.Fatalf("%s: no range validated a tuned configuration", ended)
	}
}

// TestFailedInAKilledValidation: a configuration whose data was wrong in a
// validation that was then killed (kill -9, a node's power) is not tuned by
// the next validation: the failed run was stored as it ended, not kept in
// memory for the end, which a killed validation never reaches.
func TestFailedInAKilledValidation(t *testing.T) {
	sp, st := ranExample(t, 0)
	// What the disk holds as the probes start, after round 0 judged every
	// tuned configuration, is what a kill there leaves.
	killed := filepath.Join(t.TempDir(), "killed.db")
	kill := func() {
		for _, suffix := range []string{"", "-wal"} {
			data, err := os.ReadFile(st.Path() + suffix)
			if err == nil {
				err = os.WriteFile(killed+suffix, data, 0o666)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	tu := newTuner(t, sp, st)
	tu.Runner = failThenStop{stop: kill, stopAt: "probe-default"}
	if _, err := tu.Validate(context.Background(), 3); err != nil {
		t.Fatal(err)
	}
	after, err := store.Open(killed)
	if err != nil {
		t.Fatal(err)
	}
	defer after.Close()
	vals, err := newTuner(t, sp, after).Validate(context.Background(), 3)
	if err != nil {
		t.Fatal(err)
	}
	heldByEarlierFailure(t, sp, vals, "killed")
}

// TestFailedAfterAVerdict: a configuration validated as tuned whose data
// was then wrong in a later validation, stopped before its verdicts (Ctrl-C,
// kill -9 or a lost node in `validate` or in a resume's), is no longer
// exported: the older verdict stood, and a resume, finding every choice
// judged, validated nothing again.
func TestFailedAfterAVerdict(t *testing.T) {
	sp, st := validatedThenStopped(t, func(stop func()) Runner { return failThenStop{stop: stop, stopAt: "probe-default"} })
	noneTuned(t, sp, st, "after its verdict")
}

// validatedThenStopped runs a validated campaign of the example, then a
// second validation through runner(stop), which calls stop, the
// validation's cancel, before its verdicts; it returns the space and store.
func validatedThenStopped(t *testing.T, runner func(stop func()) Runner) (*space.Space, *store.Store) {
	t.Helper()
	sp, st := ranExample(t, 3)
	ctx, cancel := context.WithCancel(context.Background())
	tu := newTuner(t, sp, st)
	tu.Runner = runner(cancel)
	if _, err := tu.Validate(ctx, 3); !errors.Is(err, context.Canceled) {
		t.Fatalf("stopped validation returned %v", err)
	}
	return sp, st
}

// noneTuned checks that no range of sp's campaign in st keeps a tuned
// choice, each having given wrong data (when says when).
func noneTuned(t *testing.T, sp *space.Space, st *store.Store, when string) {
	t.Helper()
	camp, _ := st.Campaign(sp.Campaign.Name)
	trials, _ := st.Trials(camp.ID)
	vals, _ := st.Validations(camp.ID)
	for _, r := range results.Of(sp, trials, vals) {
		if r.Tuned() {
			t.Errorf("range %s keeps trial %d, which gave wrong data %s: %s", r.Range.Name, r.Best.Number, when, r.Validation.Reason)
		}
	}
}

// wrongAlways fails, with wrong data, every validation launch of a tuned
// configuration (arm 1 on).
type wrongAlways struct{}

func (wrongAlways) Run(ctx context.Context, job runner.Job) runner.Result {
	var round, arm int
	if n, _ := fmt.Sscanf(job.Plan.Label, "validate-%d-%d", &round, &arm); n == 2 && arm > 0 {
		return runner.Result{Started: time.Now(), Failure: &runner.Failure{Kind: runner.FailWrong, Reason: "made to fail"}}
	}
	return (&runner.Runner{Launcher: runner.Local{}, BaseEnv: runner.BaseEnv()}).Run(ctx, job)
}

// TestFailedEveryRoundJudgedOnce: a configuration that fails in every
// round is judged once at its first failure, and once as the validation
// ends, each range's verdict returned: each failed run stored its
// verdicts again, and the verdicts returned lacked those judged at once.
func TestFailedEveryRoundJudgedOnce(t *testing.T) {
	sp, st := ranExample(t, 3)
	tu := newTuner(t, sp, st)
	tu.Runner = wrongAlways{}
	vals, err := tu.Validate(context.Background(), 3)
	if err != nil {
		t.Fatal(err)
	}
	camp, _ := st.Campaign(sp.Campaign.Name)
	stored, err := st.Validations(camp.ID)
	if err != nil {
		t.Fatal(err)
	}
	// The campaign's own validation, where every run went well, judged
	// each candidate once.
	want, ended, atOnce := map[string]int{}, map[string]int{}, map[string]int{}
	for _, v := range stored {
		switch {
		case v.Batch == stored[0].Batch:
			want[v.Range]++
		case v.Rounds == 3:
			ended[v.Range]++
		default:
			atOnce[fmt.Sprintf("range %s, trial %d", v.Range, v.Candidate)]++
		}
	}
	if !maps.Equal(ended, want) {
		t.Errorf("verdicts stored as the validation ended, by range: %v, want %v", ended, want)
	}
	for c, n := range atOnce {
		if n != 1 {
			t.Errorf("%s: judged at once %d times", c, n)
		}
	}
	returned := map[string]int{}
	for _, v := range vals {
		returned[v.Range]++
		if v.Config != sp.Key(Defaults(sp)) && v.Verdict == "tuned" {
			t.Errorf("range %s, trial %d, wrong in every round, is tuned", v.Range, v.Candidate)
		}
	}
	if !maps.Equal(returned, want) {
		t.Errorf("verdicts returned by range: %v, want %v", returned, want)
	}
	if len(atOnce) == 0 {
		t.Fatal("no range validated a tuned configuration")
	}
}

// TestFailedThenStoppedWhileProbing: a validation stopped while it probed,
// after every tuned configuration failed, has not ended: a resume runs it
// again, so that NCCL's decisions, which a plugin's rules need, are
// recorded. The verdicts drawn at once from the failed runs made the
// campaign finished, and a resume ran nothing.
func TestFailedThenStoppedWhileProbing(t *testing.T) {
	sp := loadExample(t, 12)
	st := openStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	tu := newTuner(t, sp, st)
	tu.Runner = failThenStop{stop: cancel, stopAt: "probe-default"}
	if err := tu.Run(ctx, Options{ValidateRounds: 3}); !errors.Is(err, context.Canceled) {
		t.Fatalf("stopped validation returned %v", err)
	}
	noneTuned(t, sp, st, "in the validation")
	if newTuner(t, sp, st).Finished(Options{KeepSettings: true}) {
		t.Error("a resume would run nothing: the validation stopped while probing is taken as ended")
	}
}

// labelled runs every launch, calling stop, if set, as the one labelled
// stopAt starts, and records the labels launched.
type labelled struct {
	stop   func()
	stopAt string
	mu     sync.Mutex
	ran    []string
}

func (l *labelled) Run(ctx context.Context, job runner.Job) runner.Result {
	if l.stop != nil && job.Plan.Label == l.stopAt {
		l.stop()
	}
	l.mu.Lock()
	l.ran = append(l.ran, job.Plan.Label)
	l.mu.Unlock()
	return (&runner.Runner{Launcher: runner.Local{}, BaseEnv: runner.BaseEnv()}).Run(ctx, job)
}

// TestStoppedValidationGoesOn: a validation stopped in its third round
// (Ctrl-C, kill -9, an allocation's time limit) measures, resumed, its
// third round alone, and judges on all three: it measured every round
// again, so a campaign resumed in allocations each shorter than its
// validation never ended.
func TestStoppedValidationGoesOn(t *testing.T) {
	sp := loadExample(t, 6)
	st := openStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	tu := newTuner(t, sp, st)
	tu.Runner = &labelled{stop: cancel, stopAt: "validate-2-0"}
	if err := tu.Run(ctx, Options{ValidateRounds: 3}); !errors.Is(err, context.Canceled) {
		t.Fatalf("stopped run returned %v", err)
	}
	resumed := &labelled{}
	tu = newTuner(t, sp, st)
	tu.Runner = resumed
	if err := tu.Run(context.Background(), Options{KeepSettings: true}); err != nil {
		t.Fatal(err)
	}
	rounds := map[string]bool{}
	for _, label := range resumed.ran {
		if round, _, ok := strings.Cut(strings.TrimPrefix(label, "validate-"), "-"); ok && strings.HasPrefix(label, "validate-") {
			rounds[round] = true
		}
	}
	if len(rounds) != 1 || !rounds["2"] {
		t.Errorf("resumed, the validation measured rounds %v; it had measured 0 and 1", slices.Sorted(maps.Keys(rounds)))
	}
	camp, _ := st.Campaign(sp.Campaign.Name)
	vals, err := st.Validations(camp.ID)
	if err != nil || len(vals) == 0 {
		t.Fatalf("verdicts %v, %v", vals, err)
	}
	last := vals[len(vals)-1]
	runs, err := st.ValidationRuns(camp.ID, last.Batch)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vals {
		if v.Rounds != 3 || v.Batch != last.Batch {
			t.Errorf("range %s: verdict of batch %d in %d rounds, want batch %d in 3", v.Range, v.Batch, v.Rounds, last.Batch)
		}
	}
	if arms := len(runs) / 3; len(runs)%3 != 0 || runs[0].Arm != "default" || runs[2*arms-1].Arm != "default" || runs[2*arms].Arm != "default" {
		t.Errorf("the batch's %d runs are not 3 rounds interleaved A B, B A, A B", len(runs))
	}
}

// TestStoppedTwiceInOneRound: a round cut short, then measured again whole
// by the next resume, which was stopped in a later round, is taken from
// that whole measurement, not from the runs of the first: a round's runs
// are paired, made together.
func TestStoppedTwiceInOneRound(t *testing.T) {
	sp := loadExample(t, 3)
	st := openStore(t)
	s, err := newTuner(t, sp, st).open(Options{})
	if err != nil {
		t.Fatal(err)
	}
	arms := []arm{{name: "default", env: []string{"NCCL_NVLS_ENABLE=0"}}, {name: "trial 1", env: []string{"NCCL_ALGO=Ring"}}}
	run := func(round, a int, score float64) store.ValidationRun {
		return store.ValidationRun{Round: round, Arm: arms[a].name, Env: arms[a].env, State: store.Complete, Scores: map[string]float64{"small": score}}
	}
	// The first stop cut round 0 after its first arm; the resume measured
	// round 0 whole and was stopped in round 1.
	stored := []store.ValidationRun{run(0, 0, 1), run(0, 0, 2), run(0, 1, 2), run(1, 1, 2)}
	if err := st.SaveValidation(s.camp.ID, 7, stored, nil); err != nil {
		t.Fatal(err)
	}
	batch, done, err := s.measuredBefore(arms, 3, make([]bool, len(arms)))
	if err != nil || batch != 7 || len(done.runs) != 2 || done.rounds != 1 {
		t.Fatalf("batch %d, %d runs in %d rounds (%v), want batch 7's round 0", batch, len(done.runs), done.rounds, err)
	}
	for _, r := range done.runs {
		if r.Scores["small"] != 2 {
			t.Errorf("round 0 reads %s's run of the stopped measurement", r.Arm)
		}
	}
}

// ddpSteps runs no DDP step: each trial measures 100 steps a second, and
// one more per character of its DDP options, so that a configuration of
// DDP knobs alone, whose environment is NCCL's defaults', is a choice.
type ddpSteps struct{}

func (ddpSteps) Run(_ context.Context, job runner.Job) runner.Result {
	return runner.Result{Started: time.Now(), Duration: time.Millisecond, Log: nccllog.Log{Debug: true},
		Measurement: &runner.Measurement{Value: 100 + float64(len(strings.Join(job.Plan.Args, ""))), Ranks: 2}}
}

// TestValidationHoldsOnlyWhatFailed: a configuration is held to NCCL's
// defaults for an earlier validation run that failed by its settings: the
// run of its own arm. Validation held every configuration of the failed
// run's environment: a DDP knob's choice, whose environment is NCCL's
// defaults', for their failure ("the tuned configuration failed"), and
// another trial's for that trial's, as results.WithHeld no longer does.
func TestValidationHoldsOnlyWhatFailed(t *testing.T) {
	sp := mustParse(t, "ddp.toml", fmt.Sprintf(ddpSpace, "kind = \"torchrun\"\nnproc_per_node = 2", "/usr/bin/python3"))
	for _, tc := range []struct {
		arm  string // of the earlier run that hung; "choice": the choice's trial
		held bool
	}{{"default", false}, {"trial 99", false}, {"choice", true}} {
		t.Run(tc.arm, func(t *testing.T) {
			st := openStore(t)
			tu := newTuner(t, sp, st)
			tu.Runner, tu.Benchmark = ddpSteps{}, runner.DDPStep{}
			if err := tu.Run(context.Background(), Options{}); err != nil {
				t.Fatal(err)
			}
			camp, err := st.Campaign("ddp")
			if err != nil {
				t.Fatal(err)
			}
			choice := results.Of(sp, campaignTrials(t, st, "ddp"), nil)[0].Best
			if choice == nil || sp.IsDefaults(choice.Params) || !slices.Equal(choice.Env, sp.Env(space.Assignment{})) {
				t.Fatalf("choice %+v, want DDP knobs alone", choice)
			}
			arm := cmp.Or(map[string]string{"choice": fmt.Sprintf("trial %d", choice.Number)}[tc.arm], tc.arm)
			hung := store.ValidationRun{Round: 1, Arm: arm, Env: choice.Env, State: store.Failed, Failure: "timeout: hung"}
			if err := st.SaveValidation(camp.ID, 1, []store.ValidationRun{hung}, nil); err != nil {
				t.Fatal(err)
			}
			vals, err := tu.Validate(context.Background(), 2)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range vals {
				if got := strings.Contains(v.Reason, "failed in an earlier validation"); got != tc.held || v.Verdict == "tuned" == tc.held {
					t.Errorf("earlier run of %s hung: range %s: %s (%s), want held %v", arm, v.Range, v.Verdict, v.Reason, tc.held)
				}
			}
		})
	}
}

// silentThenStop runs every launch, drops NCCL's log of the tuned
// configurations' (arm 1 on) in validation round 0, as a run whose output
// had no NCCL INFO lines, and stops the campaign (stop) as the launch
// labelled stopAt starts.
type silentThenStop struct {
	stop   func()
	stopAt string
}

func (w silentThenStop) Run(ctx context.Context, job runner.Job) runner.Result {
	if job.Plan.Label == w.stopAt {
		w.stop()
	}
	res := (&runner.Runner{Launcher: runner.Local{}, BaseEnv: runner.BaseEnv()}).Run(ctx, job)
	var round, arm int
	if n, _ := fmt.Sscanf(job.Plan.Label, "validate-%d-%d", &round, &arm); n == 2 && round == 0 && arm > 0 {
		res.Log = nccllog.Log{}
	}
	return res
}

// TestUnconfirmedAfterAVerdict: a configuration validated as tuned whose
// settings NCCL's log then did not confirm in a later validation, stopped
// before its verdicts, is no longer exported as validated: the older
// verdict stood until a validation ended, where one that ended would have
// kept NCCL's defaults. The run is judged at once, as a failed one is.
func TestUnconfirmedAfterAVerdict(t *testing.T) {
	sp, st := validatedThenStopped(t, func(stop func()) Runner { return silentThenStop{stop: stop, stopAt: "probe-default"} })
	camp, _ := st.Campaign(sp.Campaign.Name)
	trials, _ := st.Trials(camp.ID)
	vals, _ := st.Validations(camp.ID)
	judged := 0
	for _, r := range results.Of(sp, trials, vals) {
		if r.Best == nil || sp.IsDefaults(r.Best.Params) {
			continue
		}
		judged++
		if r.Tuned() || !strings.Contains(r.Validation.Reason, "not confirmed") {
			t.Errorf("range %s keeps trial %d, whose settings NCCL's log did not confirm in the later validation: %s", r.Range.Name, r.Best.Number, r.Validation.Reason)
		}
	}
	if judged == 0 {
		t.Fatal("no range chose a tuned configuration")
	}
}

// failArm fails, with wrong data (or kind), arm's launch in validation
// round 0, and records the labels launched.
type failArm struct {
	arm  int
	kind runner.FailureKind
	labelled
}

func (f *failArm) Run(ctx context.Context, job runner.Job) runner.Result {
	if job.Plan.Label == fmt.Sprintf("validate-0-%d", f.arm) {
		f.mu.Lock()
		f.ran = append(f.ran, job.Plan.Label)
		f.mu.Unlock()
		return runner.Result{Started: time.Now(), Failure: &runner.Failure{Kind: cmp.Or(f.kind, runner.FailWrong), Reason: "made to fail in this round"}}
	}
	return f.labelled.Run(ctx, job)
}

// TestJudgedArmsMeasuredNoMore: a configuration whose verdict is drawn
// (it failed by its settings in this validation, or in an earlier one) is
// launched no more: whatever its later rounds measure, NCCL's defaults
// stand for it. Validation measured it in every round, and in every later
// validation, and NCCL's defaults beside it where nothing else was left to
// compare.
func TestJudgedArmsMeasuredNoMore(t *testing.T) {
	sp, st := ranExample(t, 3)
	launched := func(r *failArm) map[int]int { // launches by arm
		by := map[int]int{}
		for _, label := range r.ran {
			var round, arm int
			if n, _ := fmt.Sscanf(label, "validate-%d-%d", &round, &arm); n == 2 {
				by[arm]++
			}
		}
		return by
	}
	validate := func(r *failArm) []store.Validation {
		tu := newTuner(t, sp, st)
		tu.Runner = r
		vals, err := tu.Validate(context.Background(), 3)
		if err != nil {
			t.Fatal(err)
		}
		return vals
	}
	failing := &failArm{arm: 1}
	vals := validate(failing)
	first := launched(failing)
	if len(first) < 3 {
		t.Fatalf("launches by arm %v: the test needs two tuned configurations", first)
	}
	if first[1] != 1 || first[0] != 3 || first[2] != 3 {
		t.Errorf("launches by arm %v; arm 1 failed in round 0, want it once and the others in all 3 rounds", first)
	}
	for _, v := range vals {
		if v.Config == sp.Key(Defaults(sp)) || v.Verdict == "tuned" {
			continue
		}
		if v.Range != results.JobRange && v.Candidate <= 0 {
			t.Errorf("range %s: a verdict of %s on candidate %d", v.Range, v.Verdict, v.Candidate)
		}
	}
	again := &failArm{arm: -1}
	vals = validate(again)
	if n := launched(again); n[1] != 0 {
		t.Errorf("launches by arm %v; arm 1 failed in the earlier validation, want none of it", n)
	}
	held := 0
	for _, v := range vals {
		if strings.Contains(v.Reason, "earlier validation") {
			held++
			if v.Verdict == "tuned" || v.Rounds != 3 || v.Range != results.JobRange && v.Candidate <= 0 {
				t.Errorf("range %s, held, is %s in %d rounds, candidate %d", v.Range, v.Verdict, v.Rounds, v.Candidate)
			}
		}
	}
	if held == 0 {
		t.Error("no verdict held the configuration that failed to NCCL's defaults")
	}
}

// TestStoppedAfterAJudgedArm: a validation stopped after a configuration
// was judged at once (it failed by its settings) goes on after its rounds
// that lack it, whole without it.
func TestStoppedAfterAJudgedArm(t *testing.T) {
	sp := loadExample(t, 3)
	st := openStore(t)
	s, err := newTuner(t, sp, st).open(Options{})
	if err != nil {
		t.Fatal(err)
	}
	arms := []arm{{name: "default", env: []string{"NCCL_NVLS_ENABLE=0"}}, {name: "trial 1", env: []string{"NCCL_ALGO=Ring"}}, {name: "trial 2", env: []string{"NCCL_ALGO=Tree"}}}
	run := func(round, a int) store.ValidationRun {
		return store.ValidationRun{Round: round, Arm: arms[a].name, Env: arms[a].env, State: store.Complete, Scores: map[string]float64{"small": 1}}
	}
	wrong := run(0, 1)
	wrong.State, wrong.Failure, wrong.Scores = store.Failed, "wrong: made to fail", nil
	// Round 1 measured B A (arm 1 judged), round 2 was cut short.
	stored := []store.ValidationRun{run(0, 0), wrong, run(0, 2), run(1, 2), run(1, 0), run(2, 0)}
	if err := st.SaveValidation(s.camp.ID, 7, stored, nil); err != nil {
		t.Fatal(err)
	}
	_, done, err := s.measuredBefore(arms, 3, make([]bool, len(arms)))
	if err != nil || len(done.runs) != 5 || done.rounds != 2 || !done.judged[1] || done.measures(1) || !done.measures(0) {
		t.Fatalf("%d runs in %d rounds, judged %v (%v); want rounds 0 and 1, arm 1 judged", len(done.runs), done.rounds, done.judged, err)
	}
	if n := done.left(arms, 3, 2, -1); n != 2 {
		t.Errorf("%d runs left in round 2, want 2", n)
	}
}

// TestSilentValidationRunRecorded: a validation run whose output had no
// NCCL INFO lines is stored so, and its verdict says so, as a trial's log
// says it: runs recorded only the settings left unconfirmed, the same for
// a run of NCCL reading another value, and nothing for NCCL's defaults.
func TestSilentValidationRunRecorded(t *testing.T) {
	sp, st := ranExample(t, 2)
	tu := newTuner(t, sp, st)
	tu.Runner = silentThenStop{}
	vals, err := tu.Validate(context.Background(), 2)
	if err != nil {
		t.Fatal(err)
	}
	camp, _ := st.Campaign(sp.Campaign.Name)
	runs, err := st.ValidationRuns(camp.ID, vals[0].Batch)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		want := store.InfoLines
		if r.Round == 0 && r.Arm != "default" {
			want = store.InfoNone
		}
		if r.Info != want {
			t.Errorf("round %d, %s: info %d, want %d", r.Round, r.Arm, r.Info, want)
		}
	}
	for _, v := range vals {
		if v.Config != sp.Key(Defaults(sp)) && !strings.Contains(v.Reason, "had no NCCL INFO lines") {
			t.Errorf("range %s: %s", v.Range, v.Reason)
		}
	}
}

// TestLaunchFailedArmMeasuredNoMore: a configuration whose launch started
// no rank in a round keeps NCCL's defaults in that validation (its verdict
// needs every round), so it is launched no more there; the next validation,
// which such a failure does not hold it from, measures it again.
func TestLaunchFailedArmMeasuredNoMore(t *testing.T) {
	sp, st := ranExample(t, 3)
	for _, r := range []*failArm{{arm: 1, kind: runner.FailLaunch}, {arm: -1}} {
		tu := newTuner(t, sp, st)
		tu.Runner = r
		vals, err := tu.Validate(context.Background(), 3)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, label := range r.ran {
			if strings.HasPrefix(label, "validate-") && strings.HasSuffix(label, "-1") {
				n++
			}
		}
		if want := map[bool]int{true: 1, false: 3}[r.arm == 1]; n != want {
			t.Errorf("arm 1 failing in round 0: %v; launched %d times, want %d", r.arm == 1, n, want)
		}
		if r.arm == 1 && !slices.ContainsFunc(vals, func(v store.Validation) bool { return strings.Contains(v.Reason, "failed in round 0 (launch") }) {
			t.Errorf("no verdict says arm 1's launch failed: %+v", vals)
		}
	}
}

// TestValidationOfNothingEndsTheStoppedOne: a validation that measures
// nothing (every tuned configuration held by an earlier failure) ends the
// one stopped before it, whose runs it goes on from: its verdicts, stored
// under a batch of no runs, left that one the last stopped, and the next
// validation took up its old runs as its own.
func TestValidationOfNothingEndsTheStoppedOne(t *testing.T) {
	sp, st := ranExample(t, 2)
	tu := newTuner(t, sp, st)
	tu.Runner = wrongAlways{}
	if _, err := tu.Validate(context.Background(), 2); err != nil {
		t.Fatal(err)
	}
	camp, _ := st.Campaign(sp.Campaign.Name)
	stopped := store.ValidationRun{Round: 0, Arm: "trial 999", Env: []string{"NCCL_ALGO=Tree"}, State: store.Complete, Scores: map[string]float64{"small": 1}}
	if err := st.SaveValidation(camp.ID, 7, []store.ValidationRun{stopped}, nil); err != nil {
		t.Fatal(err)
	}
	r := &labelled{}
	tu = newTuner(t, sp, st)
	tu.Runner = r
	if _, err := tu.Validate(context.Background(), 2); err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(r.ran, func(label string) bool { return strings.HasPrefix(label, "validate-") }) {
		t.Fatalf("launched %v; every tuned configuration failed in an earlier validation", r.ran)
	}
	s, err := newTuner(t, sp, st).open(Options{KeepSettings: true})
	if err != nil {
		t.Fatal(err)
	}
	if batch, _, err := s.measuredBefore(nil, 2, nil); batch != 0 || err != nil {
		t.Errorf("batch %d is still a stopped validation to go on from (%v)", batch, err)
	}
}

// TestValidatedChoicesMeasuredNoMore: validation after a resume measures
// only the choices that lack a verdict in the rounds asked (a raised
// budget's search changed them): one with its verdict, NCCL's defaults as
// good as it or not, was measured again, launches spent on what was
// judged, and a second chance for a gain that was not significant to pass
// by luck. `nccltune validate` re-measures every choice.
func TestValidatedChoicesMeasuredNoMore(t *testing.T) {
	sp, st := ranExample(t, 3)
	for _, remeasure := range []bool{false, true} {
		r := &labelled{}
		tu := newTuner(t, sp, st)
		tu.Runner = r
		s, err := tu.open(Options{KeepSettings: true})
		if err == nil {
			s.trials, err = tu.storedTrials(s.camp.ID)
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.validate(context.Background(), 3, remeasure); err != nil {
			t.Fatal(err)
		}
		measured := slices.ContainsFunc(r.ran, func(label string) bool { return strings.HasPrefix(label, "validate-") })
		if measured != remeasure {
			t.Errorf("every choice validated in 3 rounds, re-measuring %v: launched %v", remeasure, r.ran)
		}
		if !newTuner(t, sp, st).Finished(Options{KeepSettings: true}) {
			t.Errorf("re-measuring %v: the campaign is no longer finished", remeasure)
		}
	}
}

// TestKeptVerdictHeldByAFailure: a choice whose tuned verdict stands,
// unmeasured, is held to NCCL's defaults by a validation run of it that
// failed since, in a verdict stored as any held choice's.
func TestKeptVerdictHeldByAFailure(t *testing.T) {
	sp, st := ranExample(t, 3)
	camp, _ := st.Campaign(sp.Campaign.Name)
	trials, _ := st.Trials(camp.ID)
	vals, _ := st.Validations(camp.ID)
	i := slices.IndexFunc(results.Of(sp, trials, vals), func(r results.RangeResult) bool { return r.Tuned() })
	if i < 0 {
		t.Fatal("no range validated a tuned configuration")
	}
	best := results.Of(sp, trials, vals)[i].Best
	failed := store.ValidationRun{Arm: fmt.Sprintf("trial %d", best.Number), Env: best.Env, State: store.Failed, Failure: "wrong: made to fail"}
	other := store.Validation{Batch: 7, Range: "elsewhere", Candidate: -1, Rounds: 3, Verdict: "default", Reason: "ended"}
	if err := st.SaveValidation(camp.ID, 7, []store.ValidationRun{failed}, []store.Validation{other}); err != nil {
		t.Fatal(err)
	}
	tu := newTuner(t, sp, st)
	s, err := tu.open(Options{KeepSettings: true})
	if err == nil {
		s.trials, err = tu.storedTrials(s.camp.ID)
	}
	if err == nil {
		_, err = s.validate(context.Background(), 3, false)
	}
	if err != nil {
		t.Fatal(err)
	}
	vals, _ = st.Validations(camp.ID)
	if r := results.Of(sp, trials, vals)[i]; r.Tuned() || !strings.Contains(r.Validation.Reason, "earlier validation") {
		t.Errorf("range %s keeps trial %d, which failed since its verdict: %+v", r.Range.Name, best.Number, r.Validation)
	}
}
