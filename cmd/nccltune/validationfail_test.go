package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/nccltune/nccltune/results"
	"github.com/nccltune/nccltune/space"
	"github.com/nccltune/nccltune/store"
)

// TestExportNeverAConfigurationThatFailedValidation: a configuration that
// hung in a validation run was held to NCCL's defaults only in the ranges
// it was then the choice of, each given a verdict. A range whose choice it
// became since (a search resumed without validating, or whose validation
// was stopped before it came to it) had no verdict, and every export wrote
// it, unvalidated. Validation holds it to NCCL's defaults wherever it
// measures it again (a configuration that once hung may hang a training
// job); so do status, report and export.
func TestExportNeverAConfigurationThatFailedValidation(t *testing.T) {
	dir := t.TempDir()
	st, camp := simCampaign(t, dir, 12)
	sp, _, err := space.ParseStored("stored", camp.Space)
	if err != nil {
		t.Fatal(err)
	}
	trials, err := st.Trials(camp.ID)
	if err != nil {
		t.Fatal(err)
	}
	// The range whose choice hung, as a validation that judged another range's choice ran it.
	rs := results.Of(sp, trials, nil)
	i := slices.IndexFunc(rs, func(r results.RangeResult) bool {
		return r.Tuned() && !slices.ContainsFunc(rs, func(o results.RangeResult) bool {
			return o.Range.Name != r.Range.Name && o.Best != nil && o.Best.Number == r.Best.Number
		})
	})
	if i < 0 {
		t.Fatalf("no range chose a tuned configuration of its own: %v", rs)
	}
	hung, other := rs[i].Best, rs[(i+1)%len(rs)]
	runs := []store.ValidationRun{
		{Round: 1, Arm: "default", Env: sp.Env(space.Assignment{}), State: store.Complete, Scores: map[string]float64{other.Range.Name: 1}},
		{Round: 1, Arm: fmt.Sprintf("trial %d", hung.Number), Env: hung.Env, State: store.Failed, Failure: "timeout: no output for 120s"},
	}
	verdict := store.Validation{Range: other.Range.Name, Candidate: hung.Number, Config: sp.Key(hung.Params), Rounds: 1, Verdict: "default",
		Reason: "the tuned configuration failed in round 1 (timeout: no output for 120s)"}
	if err = st.LockWriter(); err == nil {
		err = st.SaveValidation(camp.ID, 1, runs, []store.Validation{verdict})
	}
	st.Close()
	if err != nil {
		t.Fatal(err)
	}

	name := rs[i].Range.Name
	if code, out, errOut := nccltune(t, dir, "export", "--out", "out"); code != 0 {
		t.Fatalf("export: exit %d\n%s%s", code, out, errOut)
	}
	env, err := os.ReadFile(filepath.Join(dir, "out", "nccl-"+name+".env"))
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range hung.Env {
		if _, pinned := sp.Fixed[strings.SplitN(kv, "=", 2)[0]]; !pinned && strings.Contains(string(env), "export "+strings.Replace(kv, "=", "='", 1)+"'") {
			t.Errorf("range %s exports %s of trial %d, which hung in validation:\n%s", name, kv, hung.Number, env)
		}
	}
	if !strings.Contains(string(env), "failed in an earlier validation") {
		t.Errorf("range %s's file does not say why NCCL's defaults stand:\n%s", name, env)
	}
	if code, out, errOut := nccltune(t, dir, "status", "--json"); code != 0 || !strings.Contains(out, "failed in an earlier validation") {
		t.Errorf("status --json: exit %d, no word of the failure\n%s%s", code, out, errOut)
	}
	if code, out, errOut := nccltune(t, dir, "export", "--format", "json", "--out", "out"); code != 0 {
		t.Fatalf("export --format json: exit %d\n%s%s", code, out, errOut)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "out", "nccl-tuned.json"))
	var got struct {
		Ranges []struct {
			Name  string
			Tuned bool
		}
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	for _, r := range got.Ranges {
		if r.Name == name && r.Tuned {
			t.Errorf("nccl-tuned.json: range %s tuned with trial %d, which hung in validation\n%s", name, hung.Number, data)
		}
	}
}

// TestStatusCountsSilentValidationRuns: validation runs whose output had
// no NCCL INFO lines are counted and warned of, as trials are: a program
// that logs NCCL elsewhere confirms nothing in validation either, where
// status said nothing of it.
func TestStatusCountsSilentValidationRuns(t *testing.T) {
	dir := t.TempDir()
	st, camp := simCampaign(t, dir, 4)
	run := func(info store.NCCLInfo, env ...string) store.ValidationRun {
		return store.ValidationRun{Arm: "default", Env: env, State: store.Complete, Scores: map[string]float64{"small": 1}, Info: info}
	}
	// A run that sets no NCCL variable has none to confirm, as a trial.
	runs := []store.ValidationRun{run(store.InfoLines, "NCCL_NVLS_ENABLE=0"), run(store.InfoNone, "NCCL_NVLS_ENABLE=0"), run(store.InfoNone, "NCCL_ALGO=Ring"), run(store.InfoNone)}
	err := st.LockWriter()
	if err == nil {
		err = st.SaveValidation(camp.ID, 1, runs, nil)
	}
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := nccltune(t, dir, "status"); code != 0 || !strings.Contains(out, "2 of 4 completed validation runs printed no NCCL INFO lines") {
		t.Errorf("status: exit %d, no word of the silent validation runs\n%s%s", code, out, errOut)
	}
	code, out, errOut := nccltune(t, dir, "status", "--json")
	var got struct {
		Runs struct {
			Complete  int `json:"complete"`
			NoNCCLLog int `json:"no_nccl_log"`
		} `json:"validation_runs"`
	}
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || got.Runs.Complete != 4 || got.Runs.NoNCCLLog != 2 {
		t.Errorf("status --json: exit %d, validation_runs %+v (%v)\n%s%s", code, got.Runs, err, out, errOut)
	}
}

// simCampaign puts the built-in example's campaign of trials, unvalidated,
// in dir (ranCampaign) and returns its store, open, and its campaign.
func simCampaign(t *testing.T, dir string, trials int) (*store.Store, store.Campaign) {
	t.Helper()
	ranCampaign(t, dir, "-q", "--trials", strconv.Itoa(trials), "--no-validate")
	st, err := store.Open(filepath.Join(dir, "nccltune.db"))
	if err != nil {
		t.Fatal(err)
	}
	camps, err := st.Campaigns()
	if err != nil || len(camps) != 1 {
		t.Fatal(camps, err)
	}
	return st, camps[0]
}
