package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/nccltune/nccltune/results"
	"github.com/nccltune/nccltune/runner/nccllog"
	"github.com/nccltune/nccltune/space"
	"github.com/nccltune/nccltune/store"
)

const reportSpace = "[campaign]\nsizes = { min = \"1K\", max = \"1M\", factor = 4 }\n[benchmark]\nbinary = \"x\"\n" +
	"[[param]]\nname = \"NCCL_ALGO\"\nvalues = [\"Ring\", \"Tree\"]\n[[param]]\nname = \"NCCL_PROTO\"\nvalues = [\"LL\", \"Simple\"]\n"

// reportTrials are n completed trials in which NCCL_PROTO=LL halves every
// range's score, their output with NCCL's INFO lines confirming every variable set
// where logged, without any where not (NCCL_DEBUG_FILE, gloo).
func reportTrials(sp *space.Space, n int, logged bool) []store.Trial {
	var trials []store.Trial
	for i := range n {
		a := space.Assignment{"NCCL_ALGO": []string{"Ring", "Tree"}[i%2], "NCCL_PROTO": []string{"LL", "Simple"}[i/2%2]}
		score := 100.0 + float64(i%3)
		if a["NCCL_PROTO"] == "LL" {
			score /= 2
		}
		t := store.Trial{Number: i, State: store.Complete, Params: a, Env: sp.Env(a), Scores: map[string]float64{}}
		for _, r := range sp.Ranges {
			t.Scores[r.Name] = score
		}
		if logged {
			t.NCCLLog = nccllog.Log{Debug: true, Read: map[string]string{"NCCL_ALGO": a["NCCL_ALGO"], "NCCL_PROTO": a["NCCL_PROTO"]}}
		}
		trials = append(trials, t)
	}
	return trials
}

// TestReportImportanceText: report credits no share where the F-test has
// too few residual degrees of freedom (3 trials: F(1,1)) or where no NCCL
// log confirms the variables (it showed the protocol's share, confirmed, and
// only status warned); it says which.
func TestReportImportanceText(t *testing.T) {
	sp, err := space.Parse("p.toml", []byte(reportSpace))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		trials []store.Trial
		want   string
		shares bool
	}{
		{"logged", reportTrials(sp, 16, true), "PROTO 100%; not significant: ALGO", true},
		{"three trials", reportTrials(sp, 3, true), "too few trials to test: ALGO PROTO", false},
		{"no NCCL log", reportTrials(sp, 16, false), "not confirmed by NCCL's log, left out: ALGO PROTO", false},
	} {
		var out bytes.Buffer
		printImportance(&out, &loaded{space: sp}, results.Importances(sp, tc.trials))
		line := strings.Split(out.String(), "\n")[1]
		if !strings.Contains(line, tc.want) || strings.Contains(line, "%") != tc.shares {
			t.Errorf("%s: %q, want %q and no share", tc.name, line, tc.want)
		}
	}
}

// TestReportImportanceAligned: a range name longer than 8 characters
// pushed its line's importances right of the others'.
func TestReportImportanceAligned(t *testing.T) {
	sp, err := space.Parse("p.toml", []byte(reportSpace+"[[range]]\nname = \"s\"\nmin = \"1K\"\nmax = \"4K\"\n[[range]]\nname = \"large_messages\"\nmin = \"4K\"\nmax = \"2M\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	printImportance(&out, &loaded{space: sp}, results.Importances(sp, reportTrials(sp, 16, true)))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")[1:]
	if len(lines) != 2 || strings.Index(lines[0], "PROTO") != strings.Index(lines[1], "PROTO") {
		t.Errorf("columns not aligned:\n%s", out.String())
	}
}

// TestReportImportanceCountsWhatItLeavesOut: the text names the four
// parameters that explain most; a fifth significant one appeared nowhere
// in it. It is now counted, for --json to list.
func TestReportImportanceCountsWhatItLeavesOut(t *testing.T) {
	text := "[campaign]\nsizes = { min = \"1K\", max = \"1M\", factor = 4 }\n[benchmark]\nbinary = \"x\"\n"
	for _, p := range []string{`"NCCL_ALGO"` + "\nvalues = [\"Ring\", \"Tree\"]", `"NCCL_PROTO"` + "\nvalues = [\"LL\", \"Simple\"]",
		`"NCCL_NET_GDR_LEVEL"` + "\nvalues = [\"PHB\", \"SYS\"]", `"NCCL_CUMEM_ENABLE"` + "\nvalues = [\"0\", \"1\"]", `"NCCL_BUFFSIZE"` + "\nvalues = [\"1M\", \"16M\"]"} {
		text += "[[param]]\nname = " + p + "\n"
	}
	sp, err := space.Parse("p.toml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	var trials []store.Trial
	for i := range 64 { // the full factorial, twice; each setting's second value pays, by a factor of its own
		a, read, score := space.Assignment{}, map[string]string{}, 100.0+float64(i%3)
		for k, p := range sp.Params {
			bit := i >> k & 1
			a[p.Name], read[p.Name] = p.Values[bit], p.Values[bit]
			score *= 1 + float64(bit)*float64(5-k)/5
		}
		trials = append(trials, store.Trial{Number: i, State: store.Complete, Params: a, Env: sp.Env(a),
			Scores: map[string]float64{"all": score}, NCCLLog: nccllog.Log{Debug: true, Read: read}})
	}
	var out bytes.Buffer
	printImportance(&out, &loaded{space: sp}, results.Importances(sp, trials))
	if line := strings.Split(out.String(), "\n")[1]; strings.Count(line, "%") != 4 || !strings.Contains(line, "1 more significant (report --json)") {
		t.Errorf("%q: want four shares and one more counted", line)
	}
}

// TestReportPlotsWholeOrNotAtAll: a report that cannot write its plots (a
// full disk, here a file-size limit) fails and leaves the plots of the
// report before it as they were; it truncated them and left them torn.
func TestReportPlotsWholeOrNotAtAll(t *testing.T) {
	dir := t.TempDir()
	ranCampaign(t, dir, "-q", "--trials", "4", "--no-simplify", "--no-validate")
	if code, out, errOut := nccltune(t, dir, "report", "--out", dir); code != 0 {
		t.Fatalf("report: %d\n%s%s", code, out, errOut)
	}
	plots, _ := filepath.Glob(filepath.Join(dir, "*.png"))
	before := map[string][]byte{}
	for _, p := range plots {
		before[p], _ = os.ReadFile(p)
	}
	if len(before) == 0 {
		t.Fatal("report wrote no plot")
	}
	cmd := exec.Command("bash", "-c", `trap '' XFSZ; ulimit -f 2; exec "$0" report --out "$1"`, os.Args[0], dir)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Fatalf("report wrote its plots in 2 KiB; the test proves nothing\n%s", out)
	}
	for p, b := range before {
		if now, err := os.ReadFile(p); !bytes.Equal(now, b) {
			t.Errorf("%s: %d bytes before the failed report, %d after (%v)", filepath.Base(p), len(b), len(now), err)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".nccltune-*")); len(left) > 0 {
		t.Errorf("the failed report left %v", left)
	}
}

// TestReportImportanceNamesAliases: a parameter the trials always set with
// an analysed one is named beside it, never left out of the text.
func TestReportImportanceNamesAliases(t *testing.T) {
	sp, err := space.Parse("p.toml", []byte(reportSpace))
	if err != nil {
		t.Fatal(err)
	}
	trials := reportTrials(sp, 16, true)
	for i := range trials {
		a := trials[i].Params
		a["NCCL_ALGO"] = map[string]string{"LL": "Ring", "Simple": "Tree"}[a["NCCL_PROTO"]]
		trials[i].Env, trials[i].NCCLLog.Read["NCCL_ALGO"] = sp.Env(a), a["NCCL_ALGO"]
	}
	var out bytes.Buffer
	printImportance(&out, &loaded{space: sp}, results.Importances(sp, trials))
	if line := strings.Split(out.String(), "\n")[1]; !strings.Contains(line, "ALGO 100% (or PROTO, which the trials varied only with it)") {
		t.Errorf("%q: want PROTO named beside ALGO", line)
	}
}

// TestReportImportanceAliasOfFewerValues: a parameter aliased with an
// analysed one that has more values (each protocol went with one algorithm
// or more) was said to be "set with it by every trial", which the trials
// did not do: Simple went with both trees and PAT. It is said to have
// varied only with it, which both kinds of alias did.
func TestReportImportanceAliasOfFewerValues(t *testing.T) {
	sp, err := space.Parse("p.toml", []byte(strings.Replace(reportSpace, `["Ring", "Tree"]`, `["Ring", "Tree", "PAT"]`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	trials := reportTrials(sp, 18, true)
	for i := range trials {
		algo := []string{"Ring", "Tree", "PAT"}[i%3]
		a := space.Assignment{"NCCL_ALGO": algo, "NCCL_PROTO": map[string]string{"Ring": "LL", "Tree": "Simple", "PAT": "Simple"}[algo]}
		trials[i].Params, trials[i].Env = a, sp.Env(a)
		trials[i].NCCLLog.Read = map[string]string{"NCCL_ALGO": a["NCCL_ALGO"], "NCCL_PROTO": a["NCCL_PROTO"]}
		for r := range trials[i].Scores {
			trials[i].Scores[r] = float64(1+i%3) * (1 + float64(i%2)/100)
		}
	}
	var out bytes.Buffer
	printImportance(&out, &loaded{space: sp}, results.Importances(sp, trials))
	line := strings.Split(out.String(), "\n")[1]
	if !strings.Contains(line, "ALGO ") || !strings.Contains(line, "(or PROTO, which the trials varied only with it)") {
		t.Errorf("%q: want PROTO named beside ALGO as varied only with it", line)
	}
}

// TestReportJSONOfAWorkload: report's table of a workload's job (each
// collective's predicted time with NCCL's defaults and as exported, the
// job's verdict) was left out of --json, which a script reads instead.
func TestReportJSONOfAWorkload(t *testing.T) {
	dir := t.TempDir()
	spaceFile, _ := filepath.Abs("../../examples/sim-2node-ib-workload.toml")
	if code, out, errOut := nccltune(t, dir, "run", "-q", "--space", spaceFile, "--trials", "3", "--no-simplify", "--no-validate"); code != 0 {
		t.Fatalf("run: %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := nccltune(t, dir, "report", "--json")
	var got struct {
		Job *struct {
			Collectives []struct {
				Collective string
				DefaultS   *float64 `json:"default_s"`
				ExportedS  *float64 `json:"exported_s"`
			}
			DefaultS   *float64 `json:"default_s"`
			ExportedS  *float64 `json:"exported_s"`
			Validation *struct{ Verdict, Reason string }
		}
	}
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil {
		t.Fatalf("report --json: exit %d, %v\n%s%s", code, err, out, errOut)
	}
	if got.Job == nil || len(got.Job.Collectives) != 3 || got.Job.DefaultS == nil || got.Job.ExportedS == nil || got.Job.Validation != nil {
		t.Fatalf("report --json has no unvalidated job of 3 collectives:\n%s", out)
	}
	for _, c := range got.Job.Collectives {
		if c.Collective == "" || c.DefaultS == nil || c.ExportedS == nil {
			t.Errorf("collective %+v lacks its times:\n%s", c, out)
		}
	}
}

// TestReportOfWeights: a workload of weights (relative shares of the calls)
// predicts relative times, not seconds: report headed them "s" in its
// table, and --json gave them as default_s and exported_s without a word.
func TestReportOfWeights(t *testing.T) {
	data, err := os.ReadFile("../../examples/sim-2node-ib-workload.toml")
	if err != nil {
		t.Fatal(err)
	}
	for _, weighted := range []bool{false, true} {
		text := string(data)
		if weighted {
			text = regexp.MustCompile(`count = (\d+)`).ReplaceAllString(text, "weight = $1.0")
		}
		sp, err := space.Parse("w.toml", []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		l := &loaded{space: sp, family: sp}
		var out bytes.Buffer
		printShares(&out, l)
		header := map[bool]string{false: "NCCL defaults s", true: "NCCL defaults (relative)"}[weighted]
		if !strings.Contains(out.String(), header) {
			t.Errorf("weighted %t: want %q in\n%s", weighted, header, out.String())
		}
		if got := jobJSON(jobTimesOf(l))["relative"]; got != weighted {
			t.Errorf("weighted %t: --json's relative is %v", weighted, got)
		}
	}
}
