package tuner

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/nccltune/nccltune/space"
	"github.com/nccltune/nccltune/store"
)

func TestValidateOnSimulator(t *testing.T) {
	sp := loadExample(t, 24)
	st := openStore(t)
	c := newCampaign(sp, st)
	c.ValidateRounds = 4
	if err := c.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	camp, _ := st.Campaign(sp.Campaign.Name)
	vals, err := st.Validations(camp.ID)
	if err != nil || len(vals) != 3 {
		t.Fatalf("validations: %v, %v", vals, err)
	}
	large := vals["large"]
	if large.Verdict != "tuned" || !(large.CILow > 0.2) || large.CILow > large.Gain || large.Gain > large.CIHigh {
		t.Errorf("large range: %+v; the GDR gain is large and certain", large)
	}
	trials, _ := st.Trials(camp.ID)
	for _, r := range Results(sp, trials, vals) {
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

func TestJudge(t *testing.T) {
	rg := space.Range{Name: "r"}
	best := &store.Trial{Number: 7}
	arms := []arm{{name: "default", trial: -1}, {name: "trial 7", trial: 7}}
	ok := func(round int, name string, score float64) store.ValidationRun {
		return store.ValidationRun{Round: round, Arm: name, State: store.Complete, Scores: map[string]float64{"r": score}}
	}
	pairs := func(def, tuned []float64) []store.ValidationRun {
		var runs []store.ValidationRun
		for i := range def {
			runs = append(runs, ok(i, "default", def[i]), ok(i, "trial 7", tuned[i]))
		}
		return runs
	}
	clear := pairs([]float64{100, 101, 99, 100}, []float64{130, 131, 128, 129})
	noisy := pairs([]float64{100, 110, 95, 105}, []float64{104, 101, 99, 107})
	failed := append(pairs([]float64{100, 100}, []float64{120, 120}), store.ValidationRun{Round: 2, Arm: "trial 7", State: store.Failed, Failure: "wrong: 3 wrong elements"})
	unconfirmed := pairs([]float64{100, 100}, []float64{120, 121})
	unconfirmed[1].Unconfirmed = []string{"NCCL_PROTO"}
	for _, tc := range []struct {
		name    string
		runs    []store.ValidationRun
		rounds  int
		verdict string
		reason  string
	}{
		{"clear gain", clear, 4, "tuned", "gain +29.5%"},
		{"noise", noisy, 4, "default", "not significant"},
		{"failed run", failed, 3, "default", "failed in round 2 (wrong: 3 wrong elements)"},
		{"unconfirmed", unconfirmed, 2, "default", "did not confirm reading NCCL_PROTO"},
	} {
		v := judge(RangeResult{Range: rg, Best: best}, arms, 1, tc.runs, tc.rounds)
		if v.Verdict != tc.verdict || !strings.Contains(v.Reason, tc.reason) {
			t.Errorf("%s: %s (%s); want %s containing %q", tc.name, v.Verdict, v.Reason, tc.verdict, tc.reason)
		}
	}
	if v := judge(RangeResult{Range: rg, Best: &store.Trial{Number: 0}}, arms, 0, clear, 4); v.Verdict != "default" || !math.IsNaN(v.Gain) {
		t.Errorf("best is the default: %+v", v)
	}
}
