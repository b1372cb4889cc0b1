package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/nccltune/nccltune/runner/nccllog"
	"github.com/nccltune/nccltune/space"
	"github.com/nccltune/nccltune/store"
)

// TestStatusReportExportAgree: over crafted stores at the edges of the one
// rule by which a range is tuned (a gain of exactly 1% over NCCL's
// defaults, a simpler stand-in, a configuration that failed in one trial, a
// verdict drawn at once from a validation run NCCL's log did not confirm,
// a validation run that failed with no verdict), status --json, report
// --json and export (json and env) choose the same trial per range, call
// it tuned alike, and write the same searched settings; and the tuner
// plugins' exports (plugin, tuner-csv), where their job's environment is
// the one the range's choice runs under, its algorithm in its sizes, or
// NCCL's own where NCCL's defaults stand.
func TestStatusReportExportAgree(t *testing.T) {
	dir, st, base, sp := craftedStore(t)
	defaults := space.Assignment{}
	three := space.Assignment{"NCCL_ALGO": "Ring", "NCCL_PROTO": "Simple", "NCCL_NET_GDR_LEVEL": "SYS"}
	one := space.Assignment{"NCCL_ALGO": "Ring"}
	cases := []struct {
		name  string
		runs  []crafted
		early bool // a validation run of the choice that NCCL's log did not confirm, judged at once
		hung  bool // a validation run of the choice that hung, with no verdict
		tuned bool
		want  int // the chosen trial, -1 for none
	}{
		{name: "a stand-in at exactly 1%", runs: []crafted{{defaults, 100, "", ""}, {defaults, 100, "", ""}, {three, 101.5, "", ""}, {three, 101.5, "", ""}, {one, 101, "", ""}, {one, 101, "", ""}}, tuned: true, want: 2},
		{name: "a stand-in at 1.5%", runs: []crafted{{defaults, 100, "", ""}, {defaults, 100, "", ""}, {three, 103, "", ""}, {three, 103, "", ""}, {one, 102.5, "", ""}, {one, 102.5, "", ""}}, tuned: true, want: 4},
		{name: "under 1%", runs: []crafted{{defaults, 100, "", ""}, {defaults, 100, "", ""}, {three, 100.9, "", ""}, {three, 100.9, "", ""}}, want: 0},
		{name: "the best failed once", runs: []crafted{{defaults, 100, "", ""}, {defaults, 100, "", ""}, {three, 120, "", ""}, {three, 0, "wrong", ""}, {one, 103, "", ""}, {one, 103, "", ""}}, tuned: true, want: 4},
		{name: "not confirmed in validation", runs: []crafted{{defaults, 100, "", ""}, {defaults, 100, "", ""}, {three, 120, "", ""}, {three, 120, "", ""}}, early: true, want: 0},
		{name: "hung in validation", runs: []crafted{{defaults, 100, "", ""}, {defaults, 100, "", ""}, {three, 120, "", ""}, {three, 120, "", ""}}, hung: true, want: 0},
		// NCCL's defaults stand, the estimates discounting the algorithm
		// alone's one run of +1.4%; among the trials of its environment
		// alone (NCCL's defaults'), it was the job's choice.
		{name: "a lucky run", runs: []crafted{{defaults, 100, "", ""}, {defaults, 100, "", ""}, {three, 99.9, "", ""}, {three, 101.8, "", ""}, {one, 101.4, "", ""}}, want: 0},
	}
	for i, tc := range cases {
		c := craft(t, st, base, sp, fmt.Sprintf("case-%d", i), false, tc.runs)
		// What NCCL decides in each range under each configuration, as
		// validation records it: the algorithm set, else Tree.
		for _, a := range []space.Assignment{defaults, three, one, {"NCCL_NET_GDR_LEVEL": "SYS"}} {
			var ds []nccllog.Decision
			for _, rg := range sp.Ranges {
				ds = append(ds, nccllog.Decision{Op: "AllReduce", Bytes: rg.Min, Algo: strings.ToUpper(cmp.Or(a["NCCL_ALGO"], "Tree")), Proto: "SIMPLE", Channels: 8})
			}
			if err := st.SaveDecisions(c.ID, sp.Key(a), ds); err != nil {
				t.Fatal(err)
			}
		}
		if tc.early || tc.hung {
			arm := "trial 2"
			vr := store.ValidationRun{Round: 0, Arm: arm, Env: sp.Env(three), State: store.Complete, Scores: map[string]float64{}, Unconfirmed: []string{"NCCL_ALGO"}}
			var vs []store.Validation
			if tc.hung {
				vr.State, vr.Unconfirmed, vr.Failure = store.Failed, nil, "timeout: no output for 120s"
			} else {
				for _, rg := range sp.Ranges {
					vr.Scores[rg.Name] = 120
					vs = append(vs, store.Validation{Range: rg.Name, Candidate: 2, Config: sp.Key(three), Rounds: 1, Verdict: "default",
						Reason: "the settings' effect was not confirmed"})
				}
			}
			if err := st.SaveValidation(c.ID, 1, []store.ValidationRun{vr}, vs); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i, tc := range cases {
		name := fmt.Sprintf("case-%d", i)
		out := filepath.Join(dir, name)
		for _, args := range [][]string{{"export", "--format", "json"}, {"export", "--format", "env"}, {"export", "--format", "plugin"}, {"export", "--format", "tuner-csv"}} {
			if code, stdout, errOut := nccltune(t, dir, append(args, "--campaign", name, "--out", out)...); code != 0 {
				t.Fatalf("%s: %v: exit %d\n%s%s", tc.name, args, code, stdout, errOut)
			}
		}
		var exported struct{ Ranges []rangeOut }
		data, _ := os.ReadFile(filepath.Join(out, "nccl-tuned.json"))
		if err := json.Unmarshal(data, &exported); err != nil {
			t.Fatalf("%s: nccl-tuned.json: %v", tc.name, err)
		}
		views := map[string][]rangeOut{"export --format json": exported.Ranges}
		for _, args := range [][]string{{"status", "--json"}, {"report", "--json", "--out", filepath.Join(out, "plots")}} {
			code, stdout, errOut := nccltune(t, dir, append(args, "--campaign", name)...)
			var got struct{ Ranges []rangeOut }
			if err := json.Unmarshal([]byte(stdout), &got); code != 0 || err != nil {
				t.Fatalf("%s: %v: exit %d, %v\n%s%s", tc.name, args, code, err, stdout, errOut)
			}
			views[strings.Join(args[:2], " ")] = got.Ranges
		}
		for view, ranges := range views {
			if len(ranges) != len(sp.Ranges) {
				t.Fatalf("%s: %s: %d ranges, want %d", tc.name, view, len(ranges), len(sp.Ranges))
			}
			for _, r := range ranges {
				trial := -1
				if r.Trial != nil {
					trial = *r.Trial
				}
				algo := tc.runs[max(trial, 0)].a["NCCL_ALGO"]
				if view == "export --format json" {
					algo = "allreduce:" + algo // the files set it for the collective measured alone
				}
				if r.Tuned != tc.tuned || trial != tc.want || r.Env["NCCL_ALGO"] != algo && tc.tuned {
					t.Errorf("%s: %s: range %s: tuned %v, trial %d, env %v (%s); want tuned %v, trial %d", tc.name, view, r.Name, r.Tuned, trial, r.Env, r.Summary, tc.tuned, tc.want)
				}
			}
		}
		for _, rg := range sp.Ranges {
			env, _ := os.ReadFile(filepath.Join(out, "nccl-"+rg.Name+".env"))
			if strings.Contains(string(env), "export NCCL_ALGO='allreduce:Ring'") != tc.tuned {
				t.Errorf("%s: nccl-%s.env sets NCCL_ALGO=Ring: %v, want %v\n%s", tc.name, rg.Name, !tc.tuned, tc.tuned, env)
			}
		}
		// The plugins' job sets one environment: where it is the chosen
		// trial's (its NCCL_NET_GDR_LEVEL alike), the rules are its choice.
		chosen := tc.runs[max(tc.want, 0)].a
		if !tc.tuned {
			chosen = defaults
		}
		for _, f := range []struct{ rules, env, sep, own string }{{"nccltune.rules", "nccl-plugin.env", " ", ""}, {"nccl_tuner.conf", "nccl-tuner.env", ",", "tree"}} {
			env, _ := os.ReadFile(filepath.Join(out, f.env))
			if gdr := chosen["NCCL_NET_GDR_LEVEL"]; strings.Contains(string(env), "export NCCL_NET_GDR_LEVEL=") != (gdr != "") ||
				gdr != "" && !strings.Contains(string(env), "export NCCL_NET_GDR_LEVEL='"+gdr+"'") {
				continue // another environment, which the job chose for every range together
			}
			rules, _ := os.ReadFile(filepath.Join(out, f.rules))
			want := f.own
			if tc.tuned {
				want = strings.ToLower(chosen["NCCL_ALGO"])
			}
			for _, rg := range sp.Ranges {
				if got := ruleAlgo(string(rules), f.sep, rg.Min); got != want {
					t.Errorf("%s: %s: range %s: algorithm %q, want %q (status: tuned %v, trial %d)\n%s", tc.name, f.rules, rg.Name, got, want, tc.tuned, tc.want, rules)
				}
			}
		}
	}
}

// ruleAlgo is the algorithm of the first rule of a plugin's rules (fields
// split by sep: collective, min and max bytes, then nccltune's nodes,
// ranks, algorithm, or NVIDIA's example's algorithm) over size, "" where none is.
func ruleAlgo(rules, sep string, size int64) string {
	for _, line := range strings.Split(rules, "\n") {
		f := strings.Split(strings.TrimSpace(strings.Split(line, "#")[0]), sep)
		if len(f) < 6 {
			continue
		}
		lo, err1 := strconv.ParseInt(f[1], 10, 64)
		hi, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 == nil && err2 == nil && lo <= size && (hi < 0 || size <= hi) {
			if sep == "," {
				return f[3]
			}
			return f[5]
		}
	}
	return ""
}

// craftedStore puts a campaign of the built-in example in a new folder,
// and returns the folder, its store (open to write) and the campaign and
// space that crafted campaigns copy (see craft).
func craftedStore(t *testing.T) (string, *store.Store, store.Campaign, *space.Space) {
	t.Helper()
	dir := t.TempDir()
	ranCampaign(t, dir, "-q", "--trials", "4", "--no-simplify", "--no-validate")
	st, err := store.Open(filepath.Join(dir, "nccltune.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	base, err := st.Campaign("sim-2node-ib")
	if err != nil {
		t.Fatal(err)
	}
	sp, _, err := space.ParseStored("stored", base.Space)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.LockWriter(); err != nil {
		t.Fatal(err)
	}
	return dir, st, base, sp
}

// crafted is a trial: its configuration, its score in every range, and
// its failure kind where it failed.
type crafted struct {
	a     space.Assignment
	score float64
	fail  string
	phase store.Phase // the search's where empty
}

// craft stores campaign name, a copy of base, with its budget the search's
// runs, each a trial numbered in order whose NCCL log confirmed it.
func craft(t *testing.T, st *store.Store, base store.Campaign, sp *space.Space, name string, simplify bool, runs []crafted) store.Campaign {
	t.Helper()
	c := base
	c.Name, c.Simplify, c.Budget = name, simplify, 0
	for _, r := range runs {
		if r.phase != store.Simplification {
			c.Budget++
		}
	}
	c, err := st.CreateCampaign(c)
	if err != nil {
		t.Fatal(err)
	}
	for n, r := range runs {
		tr := store.Trial{CampaignID: c.ID, Number: n, Params: r.a, Env: sp.Env(r.a), Phase: r.phase}
		if err := st.StartTrial(&tr); err != nil {
			t.Fatal(err)
		}
		tr.State, tr.FailureKind, tr.Scores = store.Complete, r.fail, map[string]float64{}
		if r.fail != "" {
			tr.State = store.Failed
		}
		var log strings.Builder
		for _, rg := range sp.Ranges {
			if r.fail == "" {
				tr.Scores[rg.Name] = r.score
			}
		}
		for name, v := range r.a {
			if v != space.Unset {
				fmt.Fprintf(&log, "NCCL INFO %s set by environment to %s\n", name, v)
			}
		}
		tr.NCCLLog = nccllog.Parse([]byte(log.String()))
		if err := st.FinishTrial(context.Background(), &tr); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// rangeOut is what status --json, report --json and nccl-tuned.json say of a range's choice.
type rangeOut struct {
	Name    string            `json:"name"`
	Tuned   bool              `json:"tuned"`
	Trial   *int              `json:"chosen_trial"`
	Env     map[string]string `json:"env"`
	Summary string            `json:"summary"`
}

// TestStatusSaysTheSimplificationHasMoreToRun: an older nccltune
// simplified this campaign to its end by the last run of each variant: the
// protocol alone, which gave wrong data once and then ran fast, stood in
// for the choice, and nothing was left to run. This one holds a variant to
// all its runs, so the algorithm alone, never run, is left, and a resume
// runs it (and validates again), where status said nothing of it, nor the
// resume why it simplified again: they say so, and status --json too.
func TestStatusSaysTheSimplificationHasMoreToRun(t *testing.T) {
	dir, st, base, sp := craftedStore(t)
	defaults := space.Assignment{}
	both := space.Assignment{"NCCL_ALGO": "Ring", "NCCL_PROTO": "Simple"}
	proto := space.Assignment{"NCCL_ALGO": space.Unset, "NCCL_PROTO": "Simple"}
	craft(t, st, base, sp, "older", true, []crafted{{defaults, 100, "", ""}, {defaults, 100, "", ""}, {both, 110, "", ""},
		{proto, 0, "wrong", ""}, {proto, 110, "", ""}, {both, 110, "", store.Simplification}})
	code, out, errOut := nccltune(t, dir, "status", "--campaign", "older")
	if code != 0 || !strings.Contains(out, "the simplification has configurations left to run") {
		t.Errorf("status: exit %d, no word of the simplification left to run\n%s%s", code, out, errOut)
	}
	code, out, errOut = nccltune(t, dir, "status", "--json", "--campaign", "older")
	var got struct {
		Unfinished bool `json:"simplification_unfinished"`
	}
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || !got.Unfinished {
		t.Errorf("status --json: exit %d, %v, simplification_unfinished %v\n%s%s", code, err, got.Unfinished, out, errOut)
	}
	// The resume says why it simplifies again, runs the algorithm alone, and is done.
	st.Close()
	code, out, errOut = nccltune(t, dir, "resume", "--campaign", "older")
	if code != 0 || !strings.Contains(errOut, "the simplification goes on") || strings.Count(errOut, "simplifying, trial") != 1 ||
		strings.Contains(out, "left to run") {
		t.Errorf("resume: exit %d; want one trial run, announced, and nothing left\n%s%s", code, out, errOut)
	}
}

// TestRaisedBudgetIsNoUnfinishedSimplification: a simplified campaign
// whose budget was raised searches on, then simplifies its new choices as
// any campaign does. Neither status, while that search runs, nor the
// resume, as the simplification follows it, is to blame the stored
// simplification (stopped, or an older nccltune's) for configurations
// left to run: the raised budget's new choices are.
func TestRaisedBudgetIsNoUnfinishedSimplification(t *testing.T) {
	dir := t.TempDir()
	ranCampaign(t, dir, "-q", "--trials", "4", "--no-validate")
	code, out, errOut := nccltune(t, dir, "resume", "--trials", "12", "--no-validate")
	if code != 0 || strings.Count(errOut, "simplifying, trial") == 0 {
		t.Fatalf("resume --trials 12: exit %d, or no new choice simplified\n%s%s", code, out, errOut)
	}
	if strings.Contains(errOut, "the simplification goes on") {
		t.Errorf("resume --trials 12: the simplification of its new choices said the stored one left configurations to run\n%s", errOut)
	}
}

// TestStatusWhileARaisedBudgetSearches: a simplified campaign whose budget
// was raised, stopped in the search that adds, has its simplification to
// run again after it as any campaign has, not configurations the stored
// one left: status, and status --json's simplification_unfinished, said it
// had, and that a resume runs them.
func TestStatusWhileARaisedBudgetSearches(t *testing.T) {
	dir := t.TempDir()
	st, c := simCampaign(t, dir, 4)
	defer st.Close()
	if err := st.LockWriter(); err != nil {
		t.Fatal(err)
	}
	trials, err := st.Trials(c.ID)
	if err != nil {
		t.Fatal(err)
	}
	sp, _, err := space.ParseStored("stored", c.Space)
	if err != nil {
		t.Fatal(err)
	}
	// The raised budget's first search trial, a new choice of every range.
	c.Budget = 12
	if err := st.UpdateSettings(c); err != nil {
		t.Fatal(err)
	}
	a := space.Assignment{"NCCL_ALGO": "Tree", "NCCL_PROTO": "LL128"}
	tr := store.Trial{CampaignID: c.ID, Number: len(trials), Params: a, Env: sp.Env(a), Phase: store.Search}
	if err := st.StartTrial(&tr); err != nil {
		t.Fatal(err)
	}
	tr.State, tr.Scores = store.Complete, map[string]float64{}
	for _, rg := range sp.Ranges {
		tr.Scores[rg.Name] = 1e6
	}
	if err := st.FinishTrial(context.Background(), &tr); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := nccltune(t, dir, "status")
	if code != 0 || strings.Contains(out, "left to run") {
		t.Errorf("status: exit %d; the raised budget's search is blamed on the stored simplification\n%s%s", code, out, errOut)
	}
	code, out, errOut = nccltune(t, dir, "status", "--json")
	var got struct {
		Unfinished *bool `json:"simplification_unfinished"`
	}
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || got.Unfinished == nil || *got.Unfinished {
		t.Errorf("status --json: exit %d, %v, simplification_unfinished %v; want false\n%s%s", code, err, got.Unfinished, out, errOut)
	}
}

// TestStatusWarningsCountAsJSONDoes: a simplification's trial that printed
// no NCCL INFO lines is a completed trial whose settings nothing confirmed,
// as a search trial is. status --json's trials.no_nccl_log counted it, the
// text's warning did not (it counted the search's trials only): both count
// every completed trial.
func TestStatusWarningsCountAsJSONDoes(t *testing.T) {
	dir, st, base, sp := craftedStore(t)
	one := space.Assignment{"NCCL_ALGO": "Ring"}
	c := craft(t, st, base, sp, "silent", true, []crafted{{space.Assignment{}, 100, "", ""}, {space.Assignment{}, 100, "", ""}, {one, 110, "", ""}})
	tr := store.Trial{CampaignID: c.ID, Number: 3, Params: one, Env: sp.Env(one), Phase: store.Simplification}
	if err := st.StartTrial(&tr); err != nil {
		t.Fatal(err)
	}
	tr.State, tr.Scores = store.Complete, map[string]float64{}
	for _, rg := range sp.Ranges {
		tr.Scores[rg.Name] = 110
	}
	if err := st.FinishTrial(context.Background(), &tr); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := nccltune(t, dir, "status", "--json", "--campaign", "silent")
	var got struct {
		Trials struct {
			ByState   map[string]int `json:"by_state"`
			NoNCCLLog int            `json:"no_nccl_log"`
		} `json:"trials"`
	}
	// NCCL's defaults' crafted trials logged nothing either (their pinned NCCL_NVLS_ENABLE unconfirmed).
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || got.Trials.NoNCCLLog != 3 {
		t.Fatalf("status --json: exit %d, %v, trials %+v; want no_nccl_log 3\n%s%s", code, err, got.Trials, out, errOut)
	}
	want := fmt.Sprintf("warning: 3 of %d completed trials printed no NCCL INFO lines", got.Trials.ByState[string(store.Complete)])
	if code, out, errOut := nccltune(t, dir, "status", "--campaign", "silent"); code != 0 || !strings.Contains(out, want) {
		t.Errorf("status: exit %d; want %q\n%s%s", code, want, out, errOut)
	}
}
