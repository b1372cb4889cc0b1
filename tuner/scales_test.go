package tuner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/nccltune/nccltune/internal/slurmtest"
	"github.com/nccltune/nccltune/results"
	"github.com/nccltune/nccltune/runner"
	"github.com/nccltune/nccltune/space"
	"github.com/nccltune/nccltune/store"
)

// TestScales tunes at 2, 4 and 8 simulated nodes: one campaign each,
// smallest first, each measured on its node count, each trying the one
// before's choices right after NCCL's defaults; run again, the finished
// scales are not measured again.
func TestScales(t *testing.T) {
	sp, err := space.Load("../examples/sim-scales-ib.toml")
	if err != nil {
		t.Fatal(err)
	}
	st := openStore(t)
	var started []string
	tu := newTuner(t, sp, st)
	tu.OnScale = func(at *space.Space) { started = append(started, at.Campaign.Name) }
	if err := tu.Run(context.Background(), Options{ValidateRounds: 2}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"sim-scales-ib@2n", "sim-scales-ib@4n", "sim-scales-ib@8n"}; !reflect.DeepEqual(started, want) {
		t.Errorf("scales started %v, want %v", started, want)
	}
	var before []store.Trial
	for i, nodes := range []int{2, 4, 8} {
		at := sp.AtScale(nodes)
		camp, err := st.Campaign(at.Campaign.Name)
		if err != nil || camp.Scale != nodes {
			t.Fatalf("campaign of %d nodes: %+v, %v", nodes, camp, err)
		}
		trials := campaignTrials(t, st, at.Campaign.Name)
		for _, tr := range trials {
			if tr.State == store.Complete && (tr.Fingerprint.Nodes != nodes || tr.Fingerprint.Ranks != 4*nodes) {
				t.Errorf("%d nodes, trial %d ran on %d nodes, %d ranks", nodes, tr.Number, tr.Fingerprint.Nodes, tr.Fingerprint.Ranks)
			}
		}
		if i > 0 {
			vals, _ := st.Validations(camp.ID - 1)
			var want []map[string]string
			queued := map[string]bool{}
			for _, r := range results.Of(sp.AtScale([]int{2, 4, 8}[i-1]), before, vals) {
				// Ranges that chose alike share one trial.
				if c := r.Chosen().Params; r.Tuned() && !queued[sp.Key(c)] {
					queued[sp.Key(c)] = true
					want = append(want, c)
				}
			}
			if len(want) == 0 {
				t.Fatalf("nothing tuned at %d nodes; the warm start from it shows nothing", []int{2, 4, 8}[i-1])
			}
			for k, a := range want {
				if got := trials[2+k].Params; !reflect.DeepEqual(got, a) {
					t.Errorf("%d nodes: trial %d ran %v, want the smaller scale's choice %v", nodes, 2+k, got, a)
				}
			}
		}
		before = trials
	}
	counted := &labels{Runner: &runner.Runner{Launcher: runner.Local{}, BaseEnv: runner.BaseEnv()}}
	tu = newTuner(t, sp, st)
	tu.Runner = counted
	if err := tu.Run(context.Background(), Options{ValidateRounds: 2}); err != nil {
		t.Fatal(err)
	}
	if len(counted.seen) != 0 {
		t.Errorf("running the finished scales again launched %q", counted.seen)
	}
}

// TestScalesGroupsNeedTheLargestScale: on srun, each scale's groups take
// groups x its node count of the allocation; one too small for the largest
// scale is refused before the smallest scale runs.
func TestScalesGroupsNeedTheLargestScale(t *testing.T) {
	slurmtest.FakeAllocation(t, "n1", "n2", "n3", "n4", "n5", "n6")
	refusedBeforeAnyScaleRuns(t, "[1, 4]", 2, "s@4n: launcher.groups: 2 groups of 4 nodes need 8 nodes; the allocation has 6")
}

// TestScalesNeedTheLargestScale: without groups too, a scale of more nodes
// than the allocation holds is refused before the smallest scale runs; it
// ran the scales before it, for hours, and then failed its every trial.
func TestScalesNeedTheLargestScale(t *testing.T) {
	slurmtest.FakeAllocation(t, "n1", "n2", "n3", "n4", "n5", "n6")
	refusedBeforeAnyScaleRuns(t, "[1, 8]", 1, "s@8n: launcher srun: 8 nodes asked for; the allocation has 6")
}

// refusedBeforeAnyScaleRuns runs a campaign of srun groups at scales
// (a TOML list), which must be refused with want before its smallest runs.
func refusedBeforeAnyScaleRuns(t *testing.T, scales string, groups int, want string) {
	t.Helper()
	sp := mustParse(t, "scales.toml", `
[campaign]
name = "s"
scales = `+scales+`
[benchmark]
binary = "all_reduce_perf"
[launcher]
kind = "srun"
ntasks_per_node = 2
groups = `+strconv.Itoa(groups)+`
[[param]]
name = "NCCL_MIN_CTAS"
values = ["default", "4"]
`)
	st := openStore(t)
	err := (&Tuner{Space: sp, Store: st}).Run(context.Background(), Options{})
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("%v; want %s", err, want)
	}
	if _, err := st.Campaign("s@1n"); err == nil {
		t.Error("the smallest scale ran")
	}
}

// TestResumedScalesEndAsTheRunAsked: a campaign of scales run with 4
// trials and without simplification or validation, stopped in its first
// scale and resumed, runs and ends every scale so, those its run never
// reached included: they take the settings of the scale before them, not
// the space file's or the resume's defaults.
func TestResumedScalesEndAsTheRunAsked(t *testing.T) {
	sp, err := space.Load("../examples/sim-scales-ib.toml")
	if err != nil {
		t.Fatal(err)
	}
	st := openStore(t)
	interruptScales(t, sp, st, 4)
	resumed := Options{KeepSettings: true, Simplify: true, ValidateRounds: DefaultRounds}
	if err := newTuner(t, sp, st).Run(context.Background(), resumed); err != nil {
		t.Fatal(err)
	}
	for _, nodes := range sp.Campaign.Scales {
		camp, err := st.Campaign(sp.AtScale(nodes).Campaign.Name)
		if err != nil {
			t.Fatal(err)
		}
		vals, err := st.Validations(camp.ID)
		if camp.Simplify || camp.ValidateRounds != 0 || len(vals) != 0 || err != nil {
			t.Errorf("%d nodes: simplify %v, %d rounds, %d validations (%v); want neither", nodes, camp.Simplify, camp.ValidateRounds, len(vals), err)
		}
		if trials, err := st.Trials(camp.ID); camp.Budget != 4 || len(trials) != 4 || err != nil {
			t.Errorf("%d nodes: a budget of %d, %d trials (%v); want the run's 4", nodes, camp.Budget, len(trials), err)
		}
	}
	// A budget the resume gives is every scale's, the scale before's not.
	resumed.Trials = 5
	if err := newTuner(t, sp, st).Run(context.Background(), resumed); err != nil {
		t.Fatal(err)
	}
	for _, nodes := range sp.Campaign.Scales {
		camp, err := st.Campaign(sp.AtScale(nodes).Campaign.Name)
		if trials, _ := st.Trials(camp.ID); err != nil || camp.Budget != 5 || len(trials) != 5 {
			t.Errorf("%d nodes, resumed with 5 trials: a budget of %d, %d trials (%v)", nodes, camp.Budget, len(trials), err)
		}
	}
}

// interruptScales runs sp's scales with a budget of trials and stops them
// after their third trial.
func interruptScales(t *testing.T, sp *space.Space, st *store.Store, trials int) {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	tu := newTuner(t, sp, st)
	tu.Progress = func(p Progress) {
		if p.Done >= 3 {
			stop()
		}
	}
	if err := tu.Run(ctx, Options{Trials: trials}); err == nil {
		t.Fatal("the stopped campaign ran to its end")
	}
}

// TestResumedScalesKeepASettledScale: a scale whose search stopped early,
// every range settled (patience), is finished: a plain resume of the
// campaign of scales goes on with the scales after it and does not run
// that scale's search on to its budget, as only a budget given to the
// resume (--trials) does.
func TestResumedScalesKeepASettledScale(t *testing.T) {
	sp, err := space.Load("../examples/sim-scales-ib.toml")
	if err != nil {
		t.Fatal(err)
	}
	sp.Campaign.Patience = 50
	st := openStore(t)
	interruptScales(t, sp, st, 6)
	first := sp.AtScale(sp.Campaign.Scales[0]).Campaign.Name
	camp, err := st.Campaign(first)
	if err != nil {
		t.Fatal(err)
	}
	settled, err := st.Trials(camp.ID)
	if err != nil || len(settled) >= camp.Budget {
		t.Fatalf("%s: %d trials of %d (%v); the test needs it stopped short of its budget", first, len(settled), camp.Budget, err)
	}
	// As the search records a scale whose ranges all settled.
	camp.Stopped = fmt.Sprintf("stopped after trial %d: every range settled (patience)", len(settled)-1)
	if err := st.UpdateSettings(camp); err != nil {
		t.Fatal(err)
	}
	if err := newTuner(t, sp, st).Run(context.Background(), Options{KeepSettings: true}); err != nil {
		t.Fatal(err)
	}
	if trials, err := st.Trials(camp.ID); err != nil || len(trials) != len(settled) {
		t.Errorf("%s, settled after %d trials: %d after the resume (%v); want none run", first, len(settled), len(trials), err)
	}
	if camp, err := st.Campaign(first); err != nil || camp.Stopped == "" {
		t.Errorf("%s: no longer settled after the resume (%q, %v)", first, camp.Stopped, err)
	}
	for _, nodes := range sp.Campaign.Scales[1:] {
		camp, err := st.Campaign(sp.AtScale(nodes).Campaign.Name)
		if trials, _ := st.Trials(camp.ID); err != nil || camp.Budget != 6 || len(trials) != 6 {
			t.Errorf("%d nodes: a budget of %d, %d trials (%v); want the run's 6", nodes, camp.Budget, len(trials), err)
		}
	}
}

// TestScalesGroupsUnevenGPUsAtAnyScale: in a job that asked for its GPUs
// job-wide, groups that would hold different numbers of them are refused
// before the smallest scale runs, whichever scale's groups they are: here
// the largest scale's hold 10 each, a middle one's 8 and 6.
func TestScalesGroupsUnevenGPUsAtAnyScale(t *testing.T) {
	dir := t.TempDir()
	scontrol := `#!/bin/sh
case "$2" in
job) echo "JobId=7 JobName=wrap"; for n in n1:4 n2:4 n3:2 n4:4 n5:4 n6:2; do echo "   Nodes=${n%:*} CPU_IDs=0 Mem=0 GRES=gpu:${n#*:}(CNT:${n#*:})"; done ;;
*) echo "$3" | tr , ' ' ;;
esac
`
	if err := os.WriteFile(filepath.Join(dir, "scontrol"), []byte(scontrol), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("SLURM_JOB_NODELIST", "n1,n2,n3,n4,n5,n6")
	t.Setenv("SLURM_JOB_ID", "7")
	t.Setenv("SLURM_GPUS", "20")
	refusedBeforeAnyScaleRuns(t, "[1, 2, 3]", 2, "s@2n: launcher.groups: the job's GPUs are spread unevenly over its nodes: group 1 (n3,n4) holds 2+4, group 0 (n1,n2) 4+4")
}

// TestResumedScalesKeepARaisedBudget: a finished campaign of scales
// resumed with --trials 6, stopped during its first scale and resumed
// again without, runs every scale to 6, as the uninterrupted resume does.
// The scales after the first kept the 4 they were stored with.
func TestResumedScalesKeepARaisedBudget(t *testing.T) {
	sp, err := space.Load("../examples/sim-scales-ib.toml")
	if err != nil {
		t.Fatal(err)
	}
	st := openStore(t)
	if err := newTuner(t, sp, st).Run(context.Background(), Options{Trials: 4, Simplify: true}); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	tu := newTuner(t, sp, st)
	tu.Progress = func(p Progress) {
		if p.Done >= 5 { // the first search trial the raise adds
			stop()
		}
	}
	if err := tu.Run(ctx, Options{Trials: 6, KeepSettings: true}); !errors.Is(err, context.Canceled) {
		t.Fatalf("stopped resume returned %v", err)
	}
	if err := newTuner(t, sp, st).Run(context.Background(), Options{KeepSettings: true}); err != nil {
		t.Fatal(err)
	}
	for _, nodes := range sp.Campaign.Scales {
		name := sp.AtScale(nodes).Campaign.Name
		camp, err := st.Campaign(name)
		if done := searchDone(campaignTrials(t, st, name)); err != nil || camp.Budget != 6 || done != 6 {
			t.Errorf("%s: a budget of %d, %d search trials (%v); want 6", name, camp.Budget, done, err)
		}
	}
}

// TestResumedScalesFinishTheirSimplification: a campaign of scales run
// without validation, stopped in its first scale's simplification and
// resumed, simplifies that scale to its end, as an uninterrupted run does,
// before the scales after it: having run its budget is not having been
// simplified.
func TestResumedScalesFinishTheirSimplification(t *testing.T) {
	sp, err := space.Load("../examples/sim-scales-ib.toml")
	if err != nil {
		t.Fatal(err)
	}
	asked := Options{Trials: 6, Simplify: true}
	whole := openStore(t)
	if err := newTuner(t, sp, whole).Run(context.Background(), asked); err != nil {
		t.Fatal(err)
	}
	st := openStore(t)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	tu := newTuner(t, sp, st)
	tu.Progress = func(p Progress) {
		if p.Simplifying {
			stop()
		}
	}
	if err := tu.Run(ctx, asked); !errors.Is(err, context.Canceled) {
		t.Fatalf("the campaign stopped in its simplification returned %v", err)
	}
	if err := newTuner(t, sp, st).Run(context.Background(), Options{KeepSettings: true}); err != nil {
		t.Fatal(err)
	}
	for _, nodes := range sp.Campaign.Scales {
		name := sp.AtScale(nodes).Campaign.Name
		want, got := finished(campaignTrials(t, whole, name)), finished(campaignTrials(t, st, name))
		if len(got) != len(want) {
			t.Errorf("%s: %d finished trials resumed, %d uninterrupted", name, len(got), len(want))
		}
		for n, w := range want {
			if !reflect.DeepEqual(got[n].Params, w.Params) {
				t.Errorf("%s, trial %d: resumed %v, uninterrupted %v", name, n, got[n].Params, w.Params)
			}
		}
	}
}

// TestRanAs: a campaign called NAME or NAME-N (N >= 2, as
// --allow-space-change names it) is NAME's; one that merely starts with it
// is another.
func TestRanAs(t *testing.T) {
	for _, tc := range []struct {
		name, base string
		want       bool
	}{{"ib", "ib", true}, {"ib-2", "ib", true}, {"ib-12", "ib", true}, {"ib-large", "ib", false}, {"ib-1", "ib", false},
		{"ib-02", "ib", false}, {"ib-2x", "ib", false}, {"ib2", "ib", false}, {"i", "ib", false}, {"ib@2n-2", "ib@2n", true}} {
		if got := ranAs(tc.name, tc.base); got != tc.want {
			t.Errorf("ranAs(%q, %q) = %v", tc.name, tc.base, got)
		}
	}
}

// TestResumedChangedScalesStartAsTheRunDid: a changed space of scales that
// run --allow-space-change ran as NAME@2n-2 and NAME@4n-2, stopped before
// its 8-node scale, resumes that scale as the run would have: a new
// NAME@8n-2 beside NAME@8n, the scale of the space before the change, not
// refused as NAME@8n changed.
func TestResumedChangedScalesStartAsTheRunDid(t *testing.T) {
	before, err := space.Load("../examples/sim-scales-ib.toml")
	if err != nil {
		t.Fatal(err)
	}
	changed, err := space.Load("../examples/sim-scales-ib.toml")
	if err != nil {
		t.Fatal(err)
	}
	changed.Sizes.Max /= 4
	st := openStore(t)
	if err := newTuner(t, before, st).Run(context.Background(), Options{Trials: 3}); err != nil {
		t.Fatal(err)
	}
	// Stopped before it reached 8 nodes: the same space, but for its scales.
	stopped := *changed
	stopped.Campaign.Scales = []int{2, 4}
	if err := newTuner(t, &stopped, st).Run(context.Background(), Options{Trials: 3, AllowSpaceChange: true}); err != nil {
		t.Fatal(err)
	}
	if err := newTuner(t, changed, st).Run(context.Background(), Options{KeepSettings: true}); err != nil {
		t.Fatalf("resumed: %v", err)
	}
	for _, name := range []string{"sim-scales-ib@2n-2", "sim-scales-ib@4n-2", "sim-scales-ib@8n-2", "sim-scales-ib@8n"} {
		if n := len(campaignTrials(t, st, name)); n < 3 {
			t.Errorf("%s: %d trials, want 3", name, n)
		}
	}
}

// TestScalesTryNoChoiceThatFailedInValidation: a range's choice, validated
// as tuned, gave wrong data in a later validation run, stored with no
// verdict in that range (validation judged the ranges it was then the
// choice of). Exports hold it to NCCL's defaults (results.WithHeld); the
// next scale tried it first all the same, as a choice of this one.
func TestScalesTryNoChoiceThatFailedInValidation(t *testing.T) {
	sp := loadExample(t, 6)
	st := openStore(t)
	tu := newTuner(t, sp, st)
	if err := tu.Run(context.Background(), Options{ValidateRounds: 2}); err != nil {
		t.Fatal(err)
	}
	before, err := tu.choices()
	if err != nil || len(before) == 0 {
		t.Fatalf("choices %v, %v; the test needs a tuned one", before, err)
	}
	camp, _ := st.Campaign(sp.Campaign.Name)
	trials := campaignTrials(t, st, sp.Campaign.Name)
	failed := before[0]
	n := slices.IndexFunc(trials, func(tr store.Trial) bool { return sp.Key(tr.Params) == sp.Key(failed) })
	run := store.ValidationRun{Arm: fmt.Sprint("trial ", trials[n].Number), Env: sp.Env(failed), State: store.Failed, Failure: "wrong: made to fail"}
	if err := st.SaveValidation(camp.ID, 1, []store.ValidationRun{run}, nil); err != nil {
		t.Fatal(err)
	}
	after, err := tu.choices()
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(after, func(a space.Assignment) bool { return sp.Key(a) == sp.Key(failed) }) {
		t.Errorf("the next scale tries %v first, which gave wrong data in validation", failed)
	}
}
