package tuner

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nccltune/nccltune/export"
	"github.com/nccltune/nccltune/internal/simtest"
	"github.com/nccltune/nccltune/results"
	"github.com/nccltune/nccltune/runner"
	"github.com/nccltune/nccltune/runner/nccllog"
	"github.com/nccltune/nccltune/runner/sim"
	"github.com/nccltune/nccltune/space"
	"github.com/nccltune/nccltune/store"
)

// TestWorkloadCampaign tunes the example job's mix of collectives on the
// simulated cluster: each trial measures every collective, each collective is
// a range scored by its calls' predicted time, NCCL_ALGO is chosen per
// collective, and the job's one configuration is validated as a whole and
// exported, beside a plugin's rules for every collective.
func TestWorkloadCampaign(t *testing.T) {
	sp, err := space.Load("../examples/sim-2node-ib-workload.toml")
	if err != nil {
		t.Fatal(err)
	}
	sp.Campaign.Trials = 16
	st := openStore(t)
	if err := newTuner(t, sp, st).Run(context.Background(), Options{ValidateRounds: 2}); err != nil {
		t.Fatal(err)
	}
	trials := campaignTrials(t, st, sp.Campaign.Name)
	for _, tr := range trials {
		if tr.State != store.Complete {
			continue
		}
		var colls []string
		for _, r := range tr.Rows {
			if !slices.Contains(colls, r.Collective) {
				colls = append(colls, r.Collective)
			}
		}
		if !slices.Equal(colls, sp.Collectives()) || len(tr.Scores) != 3 {
			t.Fatalf("trial %d measured %v, scores %v", tr.Number, colls, tr.Scores)
		}
		if !strings.Contains(strings.Join(tr.Command, " "), "all_gather_perf") || !slices.Contains(tr.Command, "&&") {
			t.Errorf("trial %d ran %v", tr.Number, tr.Command)
		}
	}
	camp, _ := st.Campaign(sp.Campaign.Name)
	vals, _ := st.Validations(camp.ID)
	decisions, _ := st.Decisions(camp.ID)
	job := results.JobOf(sp, trials, vals)
	if job.Validation == nil || job.Validation.Range != results.JobRange {
		t.Fatalf("the job's configuration was not validated as a whole: %+v", vals)
	}
	def, tuned := job.Times()
	if tuned[0]+tuned[1]+tuned[2] >= def[0]+def[1]+def[2] {
		t.Errorf("the job's predicted time %v is not below the defaults' %v", tuned, def)
	}
	// As export reads the campaign: what its trials ran on (the rules of
	// NCCL's per-rank all_gather sizes need the rank count).
	ex := export.Export{Space: sp, Campaign: camp, Results: results.Of(sp, trials, vals), Job: job, Decisions: decisions, Fingerprint: trials[0].Fingerprint, Now: time.Now()}
	dir := t.TempDir()
	for _, format := range []string{"job", "plugin", "tuner-csv"} {
		if _, err := ex.Write(format, dir); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
	}
	envFile, _ := os.ReadFile(filepath.Join(dir, "nccl-job.env"))
	if !strings.Contains(string(envFile), "the job: ") {
		t.Errorf("nccl-job.env:\n%s", envFile)
	}
	rules, _ := os.ReadFile(filepath.Join(dir, "nccl_tuner.conf"))
	for _, coll := range []string{"allreduce,", "allgather,", "reducescatter,"} {
		if !strings.Contains(string(rules), "\n"+coll) {
			t.Errorf("tuner-csv has no rule for %s:\n%s", coll, rules)
		}
	}
}

// noRun is a Runner for tests that launch nothing.
type noRun struct{}

func (noRun) Run(context.Context, runner.Job) runner.Result { return runner.Result{} }

// TestLaunchableRunsEachCollectivesBinary: a workload's trials run each
// collective's own *_perf binary, beside the user's benchmark.binary,
// whichever collective is first (all_gather here, the user's binary being
// all_reduce_perf).
func TestLaunchableRunsEachCollectivesBinary(t *testing.T) {
	dir := simtest.PerfBinaries(t, "", "all_reduce", "all_gather", "reduce_scatter")
	sp := mustParse(t, "w.toml", `
[benchmark]
binary = "`+filepath.Join(dir, "all_reduce_perf")+`"
[[workload]]
collective = "reduce_scatter"
size = "1M"
count = 1
[[workload]]
collective = "all_reduce"
size = "1M"
count = 1
[[workload]]
collective = "all_gather"
size = "1M"
count = 1
[[param]]
name = "NCCL_MIN_CTAS"
values = ["default", "4"]
`)
	benches, _, err := (&Tuner{Space: sp, Runner: noRun{}}).launchable()
	if err != nil {
		t.Fatal(err)
	}
	for i, coll := range sp.Collectives() {
		if argv := benches[i].Command(runner.Plan{Sizes: sp.Sweep(coll)}); argv[0] != filepath.Join(dir, coll+"_perf") {
			t.Errorf("%s runs %v", coll, argv)
		}
	}
}

// oldNCCL runs the simulated cluster as an NCCL 2.18 would log.
type oldNCCL struct{}

func (oldNCCL) Run(_ context.Context, job runner.Job) runner.Result {
	cmd := job.Benchmark.Command(job.Plan)
	out := bytes.NewBufferString("node1:1:1 [0] NCCL INFO NCCL version 2.18.3+cuda12.2\n")
	code, _ := sim.Simulate(cmd[1:], job.Env, out, out)
	res := runner.Result{Command: cmd, Output: out.Bytes(), Exit: runner.Exit{Code: code}, Started: time.Now()}
	res.Log = nccllog.Parse(res.Output)
	res.Measurement, res.Failure = job.Benchmark.Read(job.Plan, runner.Output{Text: res.Output, Exit: res.Exit, Log: res.Log})
	return res
}

// TestWorkloadOnOldNCCLStops: a workload's space searches NCCL_ALGO per
// collective, which NCCL reads from 2.24; on NCCL 2.18 the campaign stops
// once NCCL's defaults have told the version, before any trial sets one,
// and a resume stops at once.
func TestWorkloadOnOldNCCLStops(t *testing.T) {
	sp, err := space.Load("../examples/sim-2node-ib-workload.toml")
	if err != nil {
		t.Fatal(err)
	}
	st := openStore(t)
	tu := &Tuner{Space: sp, Store: st, Simulator: []string{"sim"}, Runner: oldNCCL{}}
	for range 2 {
		if err := tu.Run(context.Background(), Options{}); !errors.Is(err, ErrPerCollective) || !strings.Contains(err.Error(), "ran NCCL 2.18.3") {
			t.Fatalf("%v", err)
		}
	}
	trials := campaignTrials(t, st, sp.Campaign.Name)
	if len(trials) > sp.DefaultsTrials() {
		t.Errorf("%d trials ran", len(trials))
	}
	for _, tr := range trials {
		if strings.Contains(strings.Join(tr.Env, " "), "NCCL_ALGO") {
			t.Errorf("trial %d ran %v", tr.Number, tr.Env)
		}
	}
}

// TestWorkloadOfOtherRanksStops: the workload's calls were made on 8
// ranks, and the trials run 16 (a launcher whose rank count the loader
// cannot know): the campaign stops after its first trial, and a resume at once.
func TestWorkloadOfOtherRanksStops(t *testing.T) {
	sp, err := space.Load("../examples/sim-2node-ib-workload.toml")
	if err != nil {
		t.Fatal(err)
	}
	for i := range sp.Workload {
		sp.Workload[i].Ranks = 8
	}
	st := openStore(t)
	for range 2 {
		if err := newTuner(t, sp, st).Run(context.Background(), Options{}); !errors.Is(err, ErrRanks) || !strings.Contains(err.Error(), "trial 0 ran 16 ranks, and workload.ranks is 8") {
			t.Fatalf("%v", err)
		}
	}
	if trials := campaignTrials(t, st, sp.Campaign.Name); len(trials) > sp.DefaultsTrials() {
		t.Errorf("%d trials ran", len(trials))
	}
}
