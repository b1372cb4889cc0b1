package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nccltune/nccltune/runner"
	"github.com/nccltune/nccltune/runner/nccltests"
	"github.com/nccltune/nccltune/space"
	"github.com/nccltune/nccltune/store"
	"github.com/nccltune/nccltune/tuner"
)

// slowGroup launches as the space says, but trial 2's launch, NCCL's
// defaults on group 2, measures 15% slow, as on a group with a slow link.
type slowGroup struct{ runner.Runner }

func (s slowGroup) Run(ctx context.Context, job runner.Job) runner.Result {
	res := s.Runner.Run(ctx, job)
	if job.Plan.Label == "2" && res.Measurement != nil {
		for i := range res.Measurement.Rows {
			for _, m := range []*nccltests.Measure{&res.Measurement.Rows[i].OutOfPlace, &res.Measurement.Rows[i].InPlace} {
				m.TimeUs, m.AlgBW, m.BusBW = m.TimeUs/0.85, m.AlgBW*0.85, m.BusBW*0.85
			}
		}
	}
	return res
}

// TestGroupsMeasuringApart: a campaign on 3 groups whose group 2 measures
// NCCL's defaults slow; status and report warn, naming the group.
func TestGroupsMeasuringApart(t *testing.T) {
	dir := t.TempDir()
	sp, err := space.Load("../../examples/sim-2node-ib.toml")
	if err != nil {
		t.Fatal(err)
	}
	sp.Campaign.Trials, sp.Launcher.Groups = 6, 3
	st, err := store.Open(filepath.Join(dir, "nccltune.db"))
	if err != nil {
		t.Fatal(err)
	}
	tu := &tuner.Tuner{Space: sp, Store: st, Runner: slowGroup{runner.Runner{Launcher: runner.Local{}, BaseEnv: runner.BaseEnv()}}}
	err = tu.Run(context.Background(), tuner.Options{})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := nccltune(t, dir, "status")
	if code != 0 || !strings.Contains(out, "warning: group 2 measured NCCL's defaults 15% below group") {
		t.Errorf("status: %d\n%s%s", code, out, errOut)
	}
	code, out, _ = nccltune(t, dir, "report", "--json", "--out", dir)
	var rep struct {
		Spreads []struct {
			Group  int
			Config string
			Below  float64
		} `json:"group_spreads"`
	}
	if err := json.Unmarshal([]byte(out), &rep); code != 0 || err != nil || len(rep.Spreads) != 1 || rep.Spreads[0].Group != 2 || rep.Spreads[0].Below < 0.14 {
		t.Errorf("report --json: %d, %v: %+v\n%s", code, err, rep, out)
	}
}
