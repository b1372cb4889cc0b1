package tuner

import (
	"context"
	"testing"
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
