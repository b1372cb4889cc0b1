package tuner

import (
	"context"
	"testing"

	"github.com/nccltune/nccltune/results"
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
