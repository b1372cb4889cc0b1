package tuner

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nccltune/nccltune/internal/slurmtest"
	"github.com/nccltune/nccltune/results"
	"github.com/nccltune/nccltune/runner"
	"github.com/nccltune/nccltune/runner/sim"
	"github.com/nccltune/nccltune/search"
	"github.com/nccltune/nccltune/space"
	"github.com/nccltune/nccltune/store"
)

// jitter launches through the local launcher after a delay drawn from its
// seed and the launch's label, so that trials on different groups finish in
// an order of its own; it counts how many launches ran at once.
type jitter struct {
	seed uint64
	// stop, if set, is called as the launch labelled stopAt starts.
	stop   func()
	stopAt string
	mu     sync.Mutex
	now    int
	most   int
}

func (j *jitter) Run(ctx context.Context, job runner.Job) runner.Result {
	if j.stop != nil && job.Plan.Label == j.stopAt {
		j.stop()
	}
	j.mu.Lock()
	j.now++
	j.most = max(j.most, j.now)
	j.mu.Unlock()
	defer func() { j.mu.Lock(); j.now--; j.mu.Unlock() }()
	h := fnv.New64a()
	h.Write([]byte(job.Plan.Label))
	time.Sleep(time.Duration((h.Sum64()^j.seed)%40) * time.Millisecond)
	return (&runner.Runner{Launcher: runner.Local{}, BaseEnv: runner.BaseEnv()}).Run(ctx, job)
}

// TestGroupsRunConcurrently runs a campaign on 4 groups twice, with trials
// finishing in different orders: 4 trials run at a time, NCCL's defaults
// once on every group first, and every trial is proposed alike both times,
// for proposals depend on the trials' numbers, not on which finished first.
func TestGroupsRunConcurrently(t *testing.T) {
	var runs [][]store.Trial
	for _, seed := range []uint64{1, 0xdeadbeef} {
		sp := loadExample(t, 28)
		sp.Launcher.Groups = 4
		st := openStore(t)
		tu := newTuner(t, sp, st)
		j := &jitter{seed: seed}
		tu.Runner = j
		if err := tu.Run(context.Background(), Options{}); err != nil {
			t.Fatal(err)
		}
		if j.most != 4 {
			t.Errorf("seed %d: at most %d launches ran at once, want 4", seed, j.most)
		}
		trials := campaignTrials(t, st, sp.Campaign.Name)
		if len(trials) != 28 {
			t.Fatalf("%d trials stored, want 28", len(trials))
		}
		groups := map[int]bool{}
		for _, tr := range trials[:4] {
			if len(tr.Params) != len(Defaults(sp)) || !reflect.DeepEqual(tr.Params, map[string]string(Defaults(sp))) {
				t.Errorf("trial %d ran %v, want NCCL's defaults", tr.Number, tr.Params)
			}
			groups[tr.Group] = true
		}
		if len(groups) != 4 {
			t.Errorf("the defaults' trials ran on groups %v, want one on each", groups)
		}
		runs = append(runs, trials)
	}
	order := func(trials []store.Trial) (out []int) {
		for _, tr := range trials {
			out = append(out, tr.Group)
		}
		return out
	}
	if reflect.DeepEqual(order(runs[0]), order(runs[1])) {
		t.Errorf("both runs put every trial on the same group: the jitter changed nothing, so the test shows nothing")
	}
	for n := range runs[0] {
		a, b := runs[0][n], runs[1][n]
		if !reflect.DeepEqual(a.Params, b.Params) || !reflect.DeepEqual(a.Scores, b.Scores) {
			t.Errorf("trial %d: %v %v in one run, %v %v in the other", n, a.Params, a.Scores, b.Params, b.Scores)
		}
	}
}

// TestGroupsResumeMatchesUninterrupted stops a campaign on 3 groups as
// trial 12 starts, others running, and resumes it: the interrupted trials run
// again under their numbers, and every trial is what it is in an
// uninterrupted campaign.
func TestGroupsResumeMatchesUninterrupted(t *testing.T) {
	const budget = 20
	whole := openStore(t)
	sp := loadExample(t, budget)
	sp.Launcher.Groups = 3
	tu := newTuner(t, sp, whole)
	tu.Runner = &jitter{seed: 7}
	if err := tu.Run(context.Background(), Options{}); err != nil {
		t.Fatal(err)
	}

	st := openStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	tu = newTuner(t, sp, st)
	tu.Runner = &jitter{seed: 8, stop: cancel, stopAt: "12"} // trials 10 and 11 may be running too
	if err := tu.Run(ctx, Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("stopped run returned %v", err)
	}
	interrupted := 0
	for _, tr := range campaignTrials(t, st, sp.Campaign.Name) {
		if tr.State == store.Interrupted {
			interrupted++
		}
	}
	if interrupted == 0 {
		t.Fatal("no trial was interrupted; the test shows nothing")
	}
	tu = newTuner(t, sp, st)
	tu.Runner = &jitter{seed: 9}
	if err := tu.Run(context.Background(), Options{}); err != nil {
		t.Fatal(err)
	}
	want := finished(campaignTrials(t, whole, sp.Campaign.Name))
	got := finished(campaignTrials(t, st, sp.Campaign.Name))
	if len(got) != len(want) {
		t.Fatalf("%d finished trials after resume, %d uninterrupted", len(got), len(want))
	}
	for n := range len(want) {
		if !reflect.DeepEqual(got[n].Params, want[n].Params) || !reflect.DeepEqual(got[n].Scores, want[n].Scores) {
			t.Errorf("trial %d: resumed %v %v (%s %s: %s), uninterrupted %v %v", n, got[n].Params, got[n].Scores, got[n].State, got[n].FailureKind, got[n].FailureReason, want[n].Params, want[n].Scores)
		}
	}
}

// TestGroupsOnSlurm runs a campaign on a real Slurm cluster of 4 nodes in
// 4 groups, the simulator as each step's ranks: every trial runs on its
// group's node, and trials overlap in time.
func TestGroupsOnSlurm(t *testing.T) {
	c := slurmtest.Start(t, 4)
	c.Alloc(t, 8)
	sp := mustParse(t, "slurm.toml", `
[campaign]
name = "slurm-groups"
trials = 12
sizes = { min = "1K", max = "1M", factor = 4 }
[launcher]
kind = "srun"
nodes = 1
ntasks_per_node = 2
groups = 4
[benchmark]
gpus = 1
timeout = "1m"
[simulator]
nodes = 1
[fixed]
NCCL_NVLS_ENABLE = 0
[[param]]
name = "NCCL_PROTO"
values = ["default", "LL", "LL128", "Simple"]
[[param]]
name = "NCCL_MIN_CTAS"
min = 1
max = 32
`)
	st := openStore(t)
	if err := newTuner(t, sp, st).Run(context.Background(), Options{}); err != nil {
		t.Fatal(err)
	}
	trials := campaignTrials(t, st, "slurm-groups")
	overlaps := 0
	for i, tr := range trials {
		if tr.State != store.Complete || len(tr.Nodes) != 1 || !slices.Contains(tr.Command, "--nodelist="+tr.Nodes[0]) || tr.Nodes[0] != c.Nodes[tr.Group] {
			t.Errorf("trial %d: %s %s on group %d, nodes %v: %q", tr.Number, tr.State, tr.FailureReason, tr.Group, tr.Nodes, tr.Command)
		}
		for _, other := range trials[i+1:] {
			if other.Started.Before(tr.Finished) && tr.Started.Before(other.Finished) {
				overlaps++
			}
		}
	}
	if overlaps == 0 {
		t.Error("no two trials ran at once")
	}
}

// BenchmarkGroupsOnSlurm runs one campaign of 32 trials on a real Slurm
// cluster of 4 nodes in 1, 2 and 4 groups, the simulator as each step's
// rank, each run sleeping a tenth of its modelled time: it reports the
// campaign's wall time (srun's own cost included) and the worst range's
// true regret of the choices, against the space's optimum by enumeration.
//
//	go test -bench GroupsOnSlurm -run '^$' -benchtime 1x ./tuner
func BenchmarkGroupsOnSlurm(b *testing.B) {
	c := slurmtest.Start(b, 4)
	c.Alloc(b, 4)
	const src = `
[campaign]
name = "slurm-bench"
trials = 32
seed = 5
sizes = { min = "1K", max = "256M", factor = 4 }
[[range]]
name = "small"
min = "1K"
max = "1M"
[[range]]
name = "large"
min = "1M"
max = "512M"
[launcher]
kind = "srun"
nodes = 1
ntasks_per_node = 1
groups = %d
[benchmark]
gpus = 16
timeout = "2m"
[simulator]
nodes = 2
fabric = "ib"
gpu_nic = "PHB"
pace = 0.1
[fixed]
NCCL_NVLS_ENABLE = 0
[[param]]
name = "NCCL_ALGO"
values = ["default", "Ring", "Tree"]
[[param]]
name = "NCCL_PROTO"
values = ["default", "LL", "LL128", "Simple"]
[[param]]
name = "NCCL_NET_GDR_LEVEL"
values = ["default", "PHB", "SYS"]
[[param]]
name = "NCCL_MIN_CTAS"
min = 1
max = 32
log = true
`
	truth := func(sp *space.Space, env []string) []float64 {
		sc, err := sim.ParseScenario([]string{"-nodes=2", "-fabric=ib", "-gpu_nic=PHB", "-noise=0"})
		if err != nil {
			b.Fatal(err)
		}
		bw, err := sim.Evaluate(sc, "all_reduce", space.EnvMap(env), sp.Sizes.List())
		if err != nil {
			return nil
		}
		return results.RangeScores(sp, sp.Sizes.List(), bw)
	}
	for _, groups := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("groups=%d", groups), func(b *testing.B) {
			sp := mustParse(b, "slurm.toml", fmt.Sprintf(src, groups))
			optimum := make([]float64, len(sp.Ranges))
			all, _ := search.Enumerate(sp, 0, 1<<20)
			for _, a := range all {
				for r, v := range truth(sp, sp.Env(a)) {
					optimum[r] = max(optimum[r], v)
				}
			}
			var wall, regret float64
			for range b.N {
				st := openStore(b)
				start := time.Now()
				if err := newTuner(b, sp, st).Run(context.Background(), Options{}); err != nil {
					b.Fatal(err)
				}
				wall = time.Since(start).Seconds()
				regret = 0
				for r, res := range results.Of(sp, campaignTrials(b, st, sp.Campaign.Name), nil) {
					regret = max(regret, 1-truth(sp, res.Chosen().Env)[r]/optimum[r])
				}
			}
			b.ReportMetric(wall, "wall-s")
			b.ReportMetric(100*regret, "regret-%")
		})
	}
}

// TestGroupsWorkloadWithPatience: on groups, a workload whose collectives
// settle one by one measures in each trial the collectives that were not
// settled when it started, whatever the others do meanwhile.
func TestGroupsWorkloadWithPatience(t *testing.T) {
	var runs [][]store.Trial
	for _, seed := range []uint64{1, 0xdeadbeef} {
		sp, err := space.Load("../examples/sim-2node-ib-workload.toml")
		if err != nil {
			t.Fatal(err)
		}
		sp.Campaign.Trials, sp.Campaign.Patience, sp.Launcher.Groups = 16, 5, 3
		st := openStore(t)
		tu := newTuner(t, sp, st)
		tu.Runner = &jitter{seed: seed}
		if err := tu.Run(context.Background(), Options{}); err != nil {
			t.Fatal(err)
		}
		runs = append(runs, campaignTrials(t, st, sp.Campaign.Name))
	}
	if len(runs[0]) != len(runs[1]) {
		t.Fatalf("%d trials in one run, %d in the other", len(runs[0]), len(runs[1]))
	}
	for n := range runs[0] {
		a, b := runs[0][n], runs[1][n]
		if !reflect.DeepEqual(a.Params, b.Params) || !reflect.DeepEqual(a.Scores, b.Scores) {
			t.Errorf("trial %d: %v %v in one run, %v %v in the other", n, a.Params, a.Scores, b.Params, b.Scores)
		}
	}
}

// TestGroupsResumeOnMoreGroups: NCCL's defaults run once on every group; a
// campaign past them cannot resume on more groups, whose baseline would
// never be measured. Fewer groups resume.
func TestGroupsResumeOnMoreGroups(t *testing.T) {
	sp := loadExample(t, 8)
	sp.Launcher.Groups = 2
	st := openStore(t)
	if err := newTuner(t, sp, st).Run(context.Background(), Options{}); err != nil {
		t.Fatal(err)
	}
	more := *sp
	more.Launcher.Groups = 3
	err := newTuner(t, &more, st).Run(context.Background(), Options{Trials: 10})
	if err == nil || !strings.Contains(err.Error(), "launcher.groups = 3, but the campaign ran NCCL's defaults on 2 group(s) and is past them: group 2 would have no baseline") {
		t.Fatalf("%v", err)
	}
	fewer := *sp
	fewer.Launcher.Groups = 1
	if err := newTuner(t, &fewer, st).Run(context.Background(), Options{Trials: 10}); err != nil {
		t.Fatal(err)
	}
}

// TestGroupsResumeOnMoreGroupsPastTheFirstSearch: a campaign on 2 groups ran
// NCCL's defaults as trials 0 and 1 and its first search as trial 2. On 3
// groups trials 0 to 2 would be the defaults' runs: trial 2, a searched
// configuration, would be read as NCCL's defaults, and group 2 has no
// baseline. It is past the defaults and must be refused as such.
func TestGroupsResumeOnMoreGroupsPastTheFirstSearch(t *testing.T) {
	sp := loadExample(t, 3)
	sp.Launcher.Groups = 2
	st := openStore(t)
	if err := newTuner(t, sp, st).Run(context.Background(), Options{}); err != nil {
		t.Fatal(err)
	}
	trials := campaignTrials(t, st, sp.Campaign.Name)
	if len(trials) != 3 || sp.Key(trials[2].Params) == sp.Key(Defaults(sp)) {
		t.Fatalf("want trial 2 a searched configuration: %v", trials)
	}
	more := *sp
	more.Launcher.Groups = 3
	err := newTuner(t, &more, st).Run(context.Background(), Options{Trials: 10})
	if err == nil || !strings.Contains(err.Error(), "group 2 would have no baseline") {
		t.Fatalf("resumed on 3 groups past the first search: %v", err)
	}
}

// TestValidateOnMoreGroupsJudgesTheSearch: a campaign on one group ran NCCL's
// defaults as trials 0 and 1 and its search from trial 2; validated with a
// space file of 3 groups (the groups are no part of the space's hash), trial
// 2, a range's best, is the search's and must be measured against the
// defaults, not taken for them.
func TestValidateOnMoreGroupsJudgesTheSearch(t *testing.T) {
	for seed := range int64(20) {
		sp := loadExample(t, 4)
		sp.Campaign.Seed = seed
		st := openStore(t)
		if err := newTuner(t, sp, st).Run(context.Background(), Options{}); err != nil {
			t.Fatal(err)
		}
		var second []string // the ranges whose best is trial 2
		for _, r := range results.Of(sp, campaignTrials(t, st, sp.Campaign.Name), nil) {
			if r.Best != nil && r.Best.Number == 2 {
				second = append(second, r.Range.Name)
			}
		}
		if second == nil {
			continue
		}
		more := *sp
		more.Launcher.Groups = 3
		vals, err := newTuner(t, &more, st).Validate(context.Background(), 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vals {
			if slices.Contains(second, v.Range) && strings.Contains(v.Reason, "NCCL's defaults measured best") {
				t.Errorf("range %s: trial 2, the search's best, was taken for NCCL's defaults: %s %s", v.Range, v.Verdict, v.Reason)
			}
		}
		return
	}
	t.Skip("no seed made trial 2 a range's best")
}

// TestGroupsRaisedBudgetToldTheSimplification: a campaign on 3 groups ran
// its search and its simplification, one trial at a time after every trial
// before it was told; a raised budget searches on past the simplification's
// trials. Those finished before the new search began: its first trials are
// proposed from them as measured, never with them counted as pending (the
// constant liar would tell the sampler the simplified choices failed).
func TestGroupsRaisedBudgetToldTheSimplification(t *testing.T) {
	sp := loadExample(t, 10)
	sp.Launcher.Groups = 3
	st := openStore(t)
	if err := newTuner(t, sp, st).Run(context.Background(), Options{Simplify: true}); err != nil {
		t.Fatal(err)
	}
	simplified := 0
	for _, tr := range campaignTrials(t, st, sp.Campaign.Name) {
		if !tr.Searched() {
			simplified++
		}
	}
	if simplified < 2 {
		t.Skipf("the simplification ran %d trials; the test shows nothing", simplified)
	}
	o := Options{Trials: 14, Simplify: true}
	s, err := newTuner(t, sp, st).open(o)
	if err != nil {
		t.Fatal(err)
	}
	todo, err := s.resume(o)
	if err != nil {
		t.Fatal(err)
	}
	n := todo[0]
	if err := s.tell(s.need(n)); err != nil {
		t.Fatal(err)
	}
	for m := s.told; m < n; m++ {
		if tr, ok := s.untold[m]; ok && !tr.Searched() {
			t.Errorf("search trial %d is proposed with simplification trial %d, finished before it, counted as pending", n, m)
		}
	}
}

// holdDefaults runs trial 0 and then stops the campaign (stop), while
// every other trial waits for the stop: NCCL's defaults finish on group 0
// alone, and those of the other groups are interrupted.
type holdDefaults struct{ stop func() }

func (h holdDefaults) Run(ctx context.Context, job runner.Job) runner.Result {
	if job.Plan.Label == "1" || job.Plan.Label == "2" {
		<-ctx.Done()
	}
	res := (&runner.Runner{Launcher: runner.Local{}, BaseEnv: runner.BaseEnv()}).Run(ctx, job)
	if job.Plan.Label == "0" {
		h.stop()
	}
	return res
}

// TestGroupsResumedDefaultsRunOnEveryGroup: a campaign on 3 groups stopped
// once NCCL's defaults finished on group 0, their runs on groups 1 and 2
// interrupted. On resume each runs again on its own group, not on the first
// idle one: every group measures its own baseline, and the campaign resumes
// on its 3 groups once past them.
func TestGroupsResumedDefaultsRunOnEveryGroup(t *testing.T) {
	sp := loadExample(t, 8)
	sp.Launcher.Groups = 3
	st := openStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	tu := newTuner(t, sp, st)
	tu.Runner = holdDefaults{stop: cancel}
	if err := tu.Run(ctx, Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("stopped run returned %v", err)
	}
	tu = newTuner(t, sp, st)
	tu.Runner = &jitter{seed: 3}
	if err := tu.Run(context.Background(), Options{}); err != nil {
		t.Fatal(err)
	}
	ran := map[int]int{} // group: NCCL's defaults finished on it
	for _, tr := range campaignTrials(t, st, sp.Campaign.Name) {
		if tr.Number < sp.DefaultsTrials() && tr.State.Finished() {
			ran[tr.Group]++
		}
	}
	if !reflect.DeepEqual(ran, map[int]int{0: 1, 1: 1, 2: 1}) {
		t.Errorf("NCCL's defaults finished on groups %v, want once on each of 0, 1 and 2", ran)
	}
	tu = newTuner(t, sp, st)
	tu.Runner = &jitter{seed: 4}
	if err := tu.Run(context.Background(), Options{Trials: 10}); err != nil {
		t.Errorf("resumed on its 3 groups with a raised budget: %v", err)
	}
}

// failing runs every launch locally, but those fail answers for (true),
// which end as fail says: a broken group, a cancelled step.
type failing func(job runner.Job) (runner.Result, bool)

func (f failing) Run(ctx context.Context, job runner.Job) runner.Result {
	if res, failed := f(job); failed {
		return res
	}
	return (&runner.Runner{Launcher: runner.Local{}, BaseEnv: runner.BaseEnv()}).Run(ctx, job)
}

// deadGroup fails every launch labelled as one of trials, as a group with a
// broken node fails whatever it runs.
func deadGroup(trials ...string) failing {
	return func(job runner.Job) (runner.Result, bool) {
		return runner.Result{Started: time.Now(), Exit: runner.Exit{Code: 1}, Failure: &runner.Failure{Kind: runner.FailNCCL, Reason: "unhandled cuda error"}},
			slices.Contains(trials, job.Plan.Label)
	}
}

// TestGroupsDeadGroupIsNoSettingsFailure: NCCL's defaults fail on group 1
// and complete on groups 0 and 2. The failure is the group's, not the
// settings': it is not held against NCCL's defaults (nor is any later
// configuration's on that group), the campaign stops before its search
// burns trials there, and the trial runs again on resume.
func TestGroupsDeadGroupIsNoSettingsFailure(t *testing.T) {
	sp := loadExample(t, 8)
	sp.Launcher.Groups = 3
	st := openStore(t)
	tu := newTuner(t, sp, st)
	tu.Runner = deadGroup("1")
	err := tu.Run(context.Background(), Options{})
	if !errors.Is(err, ErrNodeFailed) || !strings.Contains(err.Error(), "group 1") {
		t.Errorf("run returned %v, want %v naming group 1", err, ErrNodeFailed)
	}
	for _, tr := range campaignTrials(t, st, sp.Campaign.Name) {
		switch {
		case tr.Number >= sp.DefaultsTrials():
			t.Errorf("search trial %d ran (%s) beside a group that fails NCCL's defaults", tr.Number, tr.State)
		case tr.Group == 1 && (tr.State != store.Interrupted || tr.FailureKind != string(runner.FailNode)):
			t.Errorf("trial %d on group 1: %s %s, want interrupted by a node failure", tr.Number, tr.State, tr.FailureKind)
		}
	}
}

// holdTrial launches every trial but the one labelled label, which waits
// for the campaign to stop.
type holdTrial struct{ label string }

func (h holdTrial) Run(ctx context.Context, job runner.Job) runner.Result {
	if job.Plan.Label == h.label {
		<-ctx.Done()
	}
	return (&runner.Runner{Launcher: runner.Local{}, BaseEnv: runner.BaseEnv()}).Run(ctx, job)
}

// TestGroupsSettledResumeRunsTheInterrupted: on 3 groups, every range
// settles (patience) while the last search trials run; stopped then, those
// are interrupted, and a resume runs them again, as it does any search
// trial the campaign started: it ends as the uninterrupted campaign did.
func TestGroupsSettledResumeRunsTheInterrupted(t *testing.T) {
	sp, err := space.Load("../examples/sim-2node-ib-workload.toml")
	if err != nil {
		t.Fatal(err)
	}
	sp.Campaign.Trials, sp.Campaign.Patience, sp.Launcher.Groups = 40, 4, 3
	whole := openStore(t)
	tu := newTuner(t, sp, whole)
	tu.Runner = &jitter{seed: 1}
	if err := tu.Run(context.Background(), Options{}); err != nil {
		t.Fatal(err)
	}
	if c, _ := whole.Campaign(sp.Campaign.Name); c.Stopped == "" {
		t.Fatal("the campaign ran its budget: the test shows nothing")
	}
	want := finished(campaignTrials(t, whole, sp.Campaign.Name))
	last := 0
	for n := range want {
		last = max(last, n)
	}

	st := openStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { // stop the campaign once it has settled, trial last still running
		for {
			if c, err := st.Campaign(sp.Campaign.Name); err == nil && c.Stopped != "" {
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	tu = newTuner(t, sp, st)
	tu.Runner = holdTrial{label: strconv.Itoa(last)}
	if err := tu.Run(ctx, Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("stopped run returned %v", err)
	}
	if newTuner(t, sp, st).finished(Options{}) {
		t.Error("the campaign, its trial interrupted after it settled, reads as finished: a scale would be skipped without it")
	}
	tu = newTuner(t, sp, st)
	tu.Runner = &jitter{seed: 2}
	if err := tu.Run(context.Background(), Options{}); err != nil {
		t.Fatal(err)
	}
	got := finished(campaignTrials(t, st, sp.Campaign.Name))
	for n, w := range want {
		if g, ok := got[n]; !ok || !reflect.DeepEqual(g.Params, w.Params) || !reflect.DeepEqual(g.Scores, w.Scores) {
			t.Errorf("trial %d: resumed %v %v (finished: %v), uninterrupted %v %v", n, g.Params, g.Scores, ok, w.Params, w.Scores)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d finished trials after resume, %d uninterrupted", len(got), len(want))
	}
}

// TestGroupsProgressBestCountsFinishedTrials: each progress line's best is
// the best of every trial finished so far, this one and those finished on
// other groups included, not only of those told to the sampler: "trial 9:
// 20 GB/s (best 18 GB/s)" contradicts itself.
func TestGroupsProgressBestCountsFinishedTrials(t *testing.T) {
	sp := loadExample(t, 16)
	sp.Launcher.Groups = 3
	tu := newTuner(t, sp, openStore(t))
	tu.Runner = &jitter{seed: 5}
	best := make([]float64, len(sp.Ranges))
	tu.Progress = func(p Progress) {
		for i, v := range scoreList(sp, p.Trial) {
			if p.Trial.State == store.Complete && v > best[i] {
				best[i] = v
			}
		}
		for i := range best {
			if p.Best[i] != best[i] {
				t.Errorf("trial %d: progress gives range %s's best as %g; the best finished so far is %g", p.Trial.Number, sp.Ranges[i].Name, p.Best[i], best[i])
			}
		}
	}
	if err := tu.Run(context.Background(), Options{}); err != nil {
		t.Fatal(err)
	}
}

// runningGroup is the group the store says trial label of campaign runs on.
func runningGroup(st *store.Store, campaign, label string) (int, bool) {
	camp, err := st.Campaign(campaign)
	if err != nil {
		panic(err)
	}
	trials, err := st.Trials(camp.ID)
	if err != nil {
		panic(err)
	}
	for _, tr := range trials {
		if strconv.Itoa(tr.Number) == label && tr.State == store.Running {
			return tr.Group, true
		}
	}
	return 0, false
}

// launchFails fails, as a launch that started no rank, every launch of a
// trial from trial from on that runs on group group, as a group whose node
// can no longer start a task does.
func launchFails(st *store.Store, campaign string, group, from int) failing {
	return func(job runner.Job) (runner.Result, bool) {
		if n, err := strconv.Atoi(job.Plan.Label); err != nil || n < from {
			return runner.Result{}, false
		}
		g, ok := runningGroup(st, campaign, job.Plan.Label)
		return runner.Result{Started: time.Now(), Exit: runner.Exit{Code: 1},
			Failure: &runner.Failure{Kind: runner.FailLaunch, Reason: "srun: error: Task launch for StepId=7.9 failed on node n3: Communication connection failure"}}, ok && g == group
	}
}

// TestGroupsLaunchFailingGroup: past NCCL's defaults, group 2's node can no
// longer start a task, while groups 0 and 1 launch on. A launch that
// started no rank is no measurement of its settings, yet the trial was told
// to the sampler as the configuration's failure and never ran again, and
// the group, whose failures come back at once, took trial after trial:
// most of the budget was burnt there, and failingThroughout, which wants
// every trial failing, never stopped it. The group is broken: the campaign
// stops (ErrNodeFailed) naming it, and the trial runs again on resume.
func TestGroupsLaunchFailingGroup(t *testing.T) {
	sp := loadExample(t, 24)
	sp.Launcher.Groups = 3
	st := openStore(t)
	tu := newTuner(t, sp, st)
	tu.Runner = launchFails(st, sp.Campaign.Name, 2, 6)
	err := tu.Run(context.Background(), Options{})
	if !errors.Is(err, ErrNodeFailed) || !strings.Contains(err.Error(), "group 2") {
		t.Errorf("run returned %v, want %v naming group 2", err, ErrNodeFailed)
	}
	for _, tr := range campaignTrials(t, st, sp.Campaign.Name) {
		if tr.Group == 2 && tr.Number >= 6 && (tr.State != store.Interrupted || tr.FailureKind != string(runner.FailNode)) {
			t.Errorf("trial %d on group 2: %s %s, want interrupted by a node failure, to run again", tr.Number, tr.State, tr.FailureKind)
		}
	}
	tu = newTuner(t, sp, st)
	tu.Runner = &jitter{seed: 6}
	if err := tu.Run(context.Background(), Options{}); err != nil {
		t.Fatal(err)
	}
	if got := finished(campaignTrials(t, st, sp.Campaign.Name)); len(got) != 24 {
		t.Errorf("%d trials finished after the resume, want 24", len(got))
	}
}

// otherGPU launches every trial, and says group 1's run on an A100 where
// the others' ran on an H100: an allocation of two kinds of node.
type otherGPU struct {
	st       *store.Store
	campaign string
}

func (o otherGPU) Run(ctx context.Context, job runner.Job) runner.Result {
	res := (&runner.Runner{Launcher: runner.Local{}, BaseEnv: runner.BaseEnv()}).Run(ctx, job)
	if res.Measurement != nil {
		res.Measurement.GPU = "NVIDIA H100 80GB HBM3"
		if g, _ := runningGroup(o.st, o.campaign, job.Plan.Label); g == 1 {
			res.Measurement.GPU = "NVIDIA A100-SXM4-80GB"
		}
	}
	return res
}

// TestGroupsOfOtherHardware: the allocation's nodes are of two kinds, and
// group 1's GPU is not group 0's. The campaign stops at group 1's first
// trial, whose measurement does not compare, but the error told the user
// only to resume where the campaign ran, which runs that trial on group 1
// again and stops again: it names both groups, and says their nodes must be
// alike.
func TestGroupsOfOtherHardware(t *testing.T) {
	sp := loadExample(t, 8)
	sp.Launcher.Groups = 2
	st := openStore(t)
	tu := newTuner(t, sp, st)
	tu.Runner = otherGPU{st: st, campaign: sp.Campaign.Name}
	err := tu.Run(context.Background(), Options{})
	if !errors.Is(err, ErrOtherHardware) || !strings.Contains(err.Error(), "group 1") || !strings.Contains(err.Error(), "group 0") || !strings.Contains(err.Error(), "nodes must be alike") {
		t.Errorf("run returned %v, want %v naming groups 0 and 1, whose nodes must be alike", err, ErrOtherHardware)
	}
}

// stepCancelled has trial n's step cancelled by hand (scancel of the step)
// on group 1, as the runner tells it.
func stepCancelled(st *store.Store, campaign string, n int) failing {
	return func(job runner.Job) (runner.Result, bool) {
		g, ok := runningGroup(st, campaign, job.Plan.Label)
		return runner.Result{Started: time.Now(), Exit: runner.Exit{Code: -1, Signal: 15},
			Failure: &runner.Failure{Kind: runner.FailLaunch, Reason: "the trial's step was cancelled from outside nccltune (scancel), the job running on: slurmstepd-n2: error: *** STEP 7.9 ON n2 CANCELLED AT 2026-12-07T18:00:00 ***"}}, ok && g == 1 && job.Plan.Label == strconv.Itoa(n)
	}
}

// TestGroupsStepCancelledByHand: a trial whose step a hand cancelled
// (scancel of the step) started its ranks on a group whose nodes are
// sound; it failed as a launch, not by its settings, but since the groups
// took a launch's failure for a broken node's, the whole campaign stopped
// naming that group's nodes broken. It fails as before, and the campaign
// goes on.
func TestGroupsStepCancelledByHand(t *testing.T) {
	sp := loadExample(t, 12)
	sp.Launcher.Groups = 2
	st := openStore(t)
	tu := newTuner(t, sp, st)
	tu.Runner = stepCancelled(st, sp.Campaign.Name, 5)
	if err := tu.Run(context.Background(), Options{}); err != nil {
		t.Fatalf("run with one step cancelled by hand: %v", err)
	}
	for _, tr := range campaignTrials(t, st, sp.Campaign.Name) {
		if tr.FailureKind == string(runner.FailNode) {
			t.Errorf("trial %d on group %d: %s %s: %s", tr.Number, tr.Group, tr.State, tr.FailureKind, tr.FailureReason)
		}
	}
}
