package tuner

import (
	"context"
	"testing"

	"github.com/nccltune/nccltune/store"
)

func TestImportances(t *testing.T) {
	sp := loadExample(t, 30)
	st := openStore(t)
	if err := newCampaign(sp, st).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	camp, _ := st.Campaign(sp.Campaign.Name)
	trials, _ := st.Trials(camp.ID)
	imp := Importances(sp, trials)
	large := imp[2]
	if len(large) != len(sp.Params) {
		t.Fatalf("large range: %v", large)
	}
	// Forcing LL caps large messages at a tenth of the bandwidth: the protocol
	// decides them; CUMEM barely matters.
	if large[0].Param != "NCCL_PROTO" {
		t.Errorf("large range importances: %v", large)
	}
	for _, i := range large {
		if i.Share < 0 || i.Share > 1 {
			t.Errorf("share out of [0, 1]: %v", i)
		}
		if i.Param == "NCCL_CUMEM_ENABLE" && i.Share > large[0].Share/2 {
			t.Errorf("CUMEM ranked too high: %v", large)
		}
	}
}

func TestResultsPreferTheSimplest(t *testing.T) {
	sp := loadExample(t, 4)
	trial := func(n int, score float64, params map[string]string) store.Trial {
		return store.Trial{Number: n, State: store.Complete, Params: params,
			Scores: map[string]float64{"small": score, "medium": score, "large": score}}
	}
	trials := []store.Trial{
		trial(0, 100, map[string]string{"NCCL_ALGO": "default"}),
		trial(1, 150, map[string]string{"NCCL_ALGO": "Ring", "NCCL_MIN_CTAS": "8", "NCCL_CUMEM_ENABLE": "0"}),
		trial(2, 149, map[string]string{"NCCL_ALGO": "Ring", "NCCL_MIN_CTAS": "8", "NCCL_CUMEM_ENABLE": "default"}),
		trial(3, 140, map[string]string{"NCCL_ALGO": "Ring"}),
	}
	r := Results(sp, trials, nil)[0]
	if r.Best.Number != 2 || r.BestScore != 149 {
		t.Errorf("chose trial %d (%.0f); want 2: within 1%% of the best with one setting fewer", r.Best.Number, r.BestScore)
	}
}
