package tuner

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nccltune/nccltune/results"
	"github.com/nccltune/nccltune/space"
	"github.com/nccltune/nccltune/store"
)

const commandSpace = `
[campaign]
name = "train"
trials = 3
seed = 1
[launcher]
%s
[benchmark]
kind = "command"
command = [%q, %q, "12"%s]
metric = { regex = 'elapsed time per iteration \(ms\): ([0-9.]+)', goal = "min", skip = 2, unit = "ms" }
timeout = "2m"
warm_launch = false
[fixed]
NCCL_NVLS_ENABLE = 0
[[param]]
name = "NCCL_ALGO"
values = ["default", "Ring", "Tree"]
[[param]]
name = "NCCL_MIN_CTAS"
min = 1
max = 16
`

// TestUserCommandCampaign tunes a small real PyTorch training script, the
// user's own program, through the command benchmark (DDP over gloo on CPU,
// one rank: the DDP step's tests cover ranks under launchers), its metric
// read from the lines it prints, then validated.
func TestUserCommandCampaign(t *testing.T) {
	py := torchPython(t)
	script, _ := filepath.Abs("testdata/tiny_train.py")
	t.Setenv("MASTER_PORT", freePort(t))
	sp := mustParse(t, "train.toml", fmt.Sprintf(commandSpace, `kind = "local"`, py, script, ""))
	st := openStore(t)
	if err := newTuner(t, sp, st).Run(context.Background(), Options{ValidateRounds: 2}); err != nil {
		t.Fatal(err)
	}
	trials := campaignTrials(t, st, "train")
	for _, tr := range trials {
		if tr.State != store.Complete || !(tr.Scores["step"] > 0) {
			out, _ := st.Output(tr.ID)
			t.Fatalf("trial %d: %s %s: %v\n%s", tr.Number, tr.State, tr.FailureReason, tr.Scores, out)
		}
		// The score is the inverse of the median step time after the two warm-up steps.
		if ms := 1 / tr.Scores["step"]; ms < 0.001 || ms > 10000 {
			t.Errorf("trial %d: a step of %g ms", tr.Number, ms)
		}
		if tr.Command[0] != py || tr.Command[1] != script {
			t.Errorf("trial %d ran %v, not the user's command", tr.Number, tr.Command)
		}
	}
	camp, _ := st.Campaign("train")
	vals, err := st.Validations(camp.ID)
	if err != nil || len(ended(vals)) != 1 {
		t.Errorf("validation: %v %v", vals, err)
	}
	if r := results.Of(sp, trials, vals)[0]; r.Measure.String() != "ms (lower is better)" || r.Best == nil {
		t.Errorf("result: %+v", r)
	}

	// A program that dies with an NCCL error fails the trial as such.
	failing := mustParse(t, "fail.toml", fmt.Sprintf(commandSpace, `kind = "local"`, py, script, `, "--fail"`))
	fst := openStore(t)
	if err := newTuner(t, failing, fst).Run(context.Background(), Options{}); err == nil {
		t.Fatal("a campaign of failing trials succeeded")
	}
	for _, tr := range campaignTrials(t, fst, "train") {
		if tr.State != store.Failed || tr.FailureKind != "nccl" || !strings.Contains(tr.FailureReason, "unhandled system error") {
			t.Errorf("trial %d: %s %s: %s", tr.Number, tr.State, tr.FailureKind, tr.FailureReason)
		}
	}
}

// TestSilentNCCLNotValidated: a command whose output has no NCCL INFO lines
// (it logs to a file, uses gloo, or a wrapper dropped NCCL_DEBUG) confirms
// none of its settings, so however fast the tuned configuration measures,
// validation does not call it validated, and says why.
func TestSilentNCCLNotValidated(t *testing.T) {
	sp, err := space.Load("testdata/silent-command.toml")
	if err != nil {
		t.Fatal(err)
	}
	st := openStore(t)
	if err := newTuner(t, sp, st).Run(context.Background(), Options{ValidateRounds: 2}); err != nil {
		t.Fatal(err)
	}
	camp, _ := st.Campaign("silent")
	vals, err := st.Validations(camp.ID)
	if err != nil || len(ended(vals)) != 1 {
		t.Fatalf("validation: %v %v", vals, err)
	}
	for _, v := range vals {
		if v.Verdict != "default" || !strings.Contains(v.Reason, "not confirmed") || !strings.Contains(v.Reason, "no NCCL INFO lines") {
			t.Errorf("a configuration NCCL never confirmed was judged %s: %s", v.Verdict, v.Reason)
		}
	}
}

// ended are the verdicts of vals drawn as a validation ended, not those
// drawn at once from a run that disqualified its configuration (in one round).
func ended(vals []store.Validation) []store.Validation {
	return slices.DeleteFunc(slices.Clone(vals), func(v store.Validation) bool { return v.Rounds < 2 })
}
