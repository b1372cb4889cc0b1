package export

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nccltune/nccltune/results"
	"github.com/nccltune/nccltune/runner"
	"github.com/nccltune/nccltune/space"
	"github.com/nccltune/nccltune/store"
)

const jobSpace = `
[campaign]
name = "job"
[simulator]
nodes = 2
fabric = "ib"
[fixed]
NCCL_NVLS_ENABLE = 0
[[workload]]
collective = "all_reduce"
size = "25M"
count = 100
[[workload]]
collective = "all_gather"
size = "64M"
count = 100
[[param]]
name = "NCCL_ALGO"
values = ["default", "Ring", "Tree"]
[[param]]
name = "NCCL_BUFFSIZE"
values = ["default", "16M"]
`

// jobExport is an export of a workload's space: trial 1 sets NCCL_ALGO
// per collective as algo says, with a larger buffer, 10% faster on each
// collective than NCCL's defaults (trial 0) in the search; vals, if any,
// are the verdicts, given the job's configuration's key.
func jobExport(t *testing.T, text string, algo map[string]string, vals func(sp *space.Space, candidate string) []store.Validation) Export {
	t.Helper()
	sp, err := space.Parse("job.toml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	trial := func(n int, score float64, a space.Assignment) store.Trial {
		return store.Trial{Number: n, State: store.Complete, Params: a, Env: sp.Env(a),
			Scores: map[string]float64{"all_gather": score, "all_reduce": score}}
	}
	tuned := space.Assignment{"NCCL_BUFFSIZE": "16777216"}
	for coll, v := range algo {
		tuned["NCCL_ALGO["+coll+"]"] = v
	}
	trials := []store.Trial{trial(0, 1, Defaults(sp)), trial(1, 1.1, tuned)}
	candidate := sp.Key(results.JobOf(sp, trials, nil).Assignment(sp))
	var vs []store.Validation
	if vals != nil {
		vs = vals(sp, candidate)
	}
	return Export{Space: sp, Campaign: store.Campaign{Name: "job", SpaceHash: sp.Hash()}, Results: results.Of(sp, trials, vs),
		Job: results.JobOf(sp, trials, vs), Fingerprint: runner.Fingerprint{NCCL: "2.28.3"}, Now: time.Now()}
}

// Defaults is NCCL's defaults of every param.
func Defaults(sp *space.Space) space.Assignment {
	a, _, _ := sp.Complete(nil)
	return a
}

func writeJob(t *testing.T, ex Export) (string, error) {
	t.Helper()
	dir := t.TempDir()
	if _, err := ex.Write("job", dir); err != nil {
		return "", err
	}
	text, err := os.ReadFile(filepath.Join(dir, "nccl-job.env"))
	return string(text), err
}

// exports are the variables a job file sets.
func exports(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, "export "); ok {
			out = append(out, v)
		}
	}
	return out
}

// TestJobExportIsWhatValidationJudged: validation judges the job's composed
// configuration as a whole; whatever it said of each collective alone, the
// job file is that configuration when the job's verdict kept it, NCCL's
// defaults when it rejected it, and validating again would change nothing
// (the verdict matches the job's configuration, and the file says so).
func TestJobExportIsWhatValidationJudged(t *testing.T) {
	algo := map[string]string{"allgather": "Ring", "allreduce": "Tree"}
	for _, tc := range []struct {
		job  string
		want []string
		head string
	}{
		{"default", []string{"NCCL_NVLS_ENABLE='0'"}, "# validation kept NCCL's defaults (not significant): this file sets only what [fixed] pins"},
		{"tuned", []string{"NCCL_ALGO='allgather:Ring;allreduce:Tree'", "NCCL_BUFFSIZE='16777216'", "NCCL_NVLS_ENABLE='0'"}, "# validated: significant"},
	} {
		ex := jobExport(t, jobSpace, algo, func(sp *space.Space, candidate string) []store.Validation {
			// all_gather alone was not significant; the job as a whole is tc.job.
			return []store.Validation{
				{Range: "all_gather", Candidate: 1, Config: candidate, Verdict: "default", Reason: "not significant"},
				{Range: "all_reduce", Candidate: 1, Config: candidate, Verdict: "tuned", Reason: "significant"},
				{Range: results.JobRange, Candidate: -1, Config: candidate, Verdict: tc.job, Reason: map[string]string{"default": "not significant", "tuned": "significant"}[tc.job]},
			}
		})
		if ex.Job.Validation == nil {
			t.Fatalf("job %s: the job's verdict does not concern the job's configuration", tc.job)
		}
		text, err := writeJob(t, ex)
		if err != nil {
			t.Fatal(err)
		}
		if got := exports(text); !slices.Equal(got, tc.want) || !strings.Contains(text, tc.head) || strings.Contains(text, "not validated") {
			t.Errorf("job %s: exports %q, want %q\n%s", tc.job, got, tc.want, text)
		}
		// What report and the header print is what the file sets.
		def, exported := ex.Job.Times()
		if tc.job == "default" && !slices.Equal(def, exported) {
			t.Errorf("defaults kept, yet predicted %v against the defaults' %v", exported, def)
		}
	}
}

// TestJobExportPerCollective: NCCL's per-collective syntax, which NCCL
// reads from 2.24, is written as the trials and validation ran it, where
// the collectives agree too: the plain value set NCCL's other collectives,
// which the workload never measured (NCCL_ALGO=NVLS, every all-reduce,
// all-gather and reduce-scatter's choice, left a job's broadcast no
// algorithm: "no algorithm/protocol available for function Broadcast").
// A ':' elsewhere in the environment (an HCA list) is no per-collective
// value. A campaign on an older NCCL cannot export a per-collective
// setting: its trials ran one that NCCL did not read.
func TestJobExportPerCollective(t *testing.T) {
	hca := "NCCL_IB_HCA = \"mlx5_0:1,mlx5_1:1\"\n"
	hcaLine := "NCCL_IB_HCA='mlx5_0:1,mlx5_1:1'"
	for _, tc := range []struct {
		name, nccl string
		algo       map[string]string
		want       []string // exports; nil: refused
		comment    string   // in the header
	}{
		{"HCA list on 2.18, no algo", "2.18.3", nil, []string{"NCCL_BUFFSIZE='16777216'", hcaLine, "NCCL_NVLS_ENABLE='0'"}, ""},
		{"agreeing", "2.28.3", map[string]string{"allgather": "Ring", "allreduce": "Ring"},
			[]string{"NCCL_ALGO='allgather:Ring;allreduce:Ring'", "NCCL_BUFFSIZE='16777216'", hcaLine, "NCCL_NVLS_ENABLE='0'"}, "NCCL_ALGO per collective: needs NCCL 2.24 or later"},
		{"differing", "2.28.3", map[string]string{"allgather": "Ring", "allreduce": "Tree"},
			[]string{"NCCL_ALGO='allgather:Ring;allreduce:Tree'", "NCCL_BUFFSIZE='16777216'", hcaLine, "NCCL_NVLS_ENABLE='0'"}, "NCCL_ALGO per collective: needs NCCL 2.24 or later"},
		{"one collective", "2.28.3", map[string]string{"allreduce": "Tree"},
			[]string{"NCCL_ALGO='allreduce:Tree'", "NCCL_BUFFSIZE='16777216'", hcaLine, "NCCL_NVLS_ENABLE='0'"}, "NCCL_ALGO per collective: needs NCCL 2.24 or later"},
		{"differing on 2.18", "2.18.3", map[string]string{"allgather": "Ring", "allreduce": "Tree"}, nil, ""},
		{"agreeing on 2.18", "2.18.3", map[string]string{"allgather": "Ring", "allreduce": "Ring"}, nil, ""},
	} {
		ex := jobExport(t, strings.Replace(jobSpace, "[fixed]\n", "[fixed]\n"+hca, 1), tc.algo, nil)
		ex.Fingerprint.NCCL = tc.nccl
		text, err := writeJob(t, ex)
		switch {
		case tc.want == nil && (err == nil || !strings.Contains(err.Error(), "does not read it")):
			t.Errorf("%s: %v\n%s", tc.name, err, text)
		case tc.want == nil:
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case !slices.Equal(exports(text), tc.want) || tc.comment != "" && !strings.Contains(text, tc.comment) || tc.comment == "" && strings.Contains(text, "2.24"):
			t.Errorf("%s: exports %q, want %q\n%s", tc.name, exports(text), tc.want, text)
		}
	}
}

// TestJobExportScales: a workload tuned at several node counts gets a job
// file per node count, each named for it and holding its own campaign's
// configuration.
func TestJobExportScales(t *testing.T) {
	two := jobExport(t, jobSpace, map[string]string{"allgather": "Ring", "allreduce": "Ring"}, nil)
	four := jobExport(t, jobSpace, map[string]string{"allgather": "Tree", "allreduce": "Tree"}, nil)
	two.Campaign.Name, two.Campaign.Scale = "job@2n", 2
	four.Campaign.Name, four.Campaign.Scale = "job@4n", 4
	four.Scales = []Export{two}
	dir := t.TempDir()
	paths, err := four.Write("job", dir)
	if err != nil || len(paths) != 2 {
		t.Fatalf("%v, %v", paths, err)
	}
	for name, want := range map[string]string{"nccl-job-2n.env": "NCCL_ALGO='allgather:Ring;allreduce:Ring'", "nccl-job-4n.env": "NCCL_ALGO='allgather:Tree;allreduce:Tree'"} {
		text, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !slices.Contains(exports(string(text)), want) || !strings.Contains(string(text), "use: . ./"+name) {
			t.Errorf("%s: %v\n%s", name, err, text)
		}
	}
}

// TestJobExportOfNoMeasuredEnvironment: NCCL's defaults failed in the
// search, so each collective's best brings its own environment (a larger
// buffer for all_gather's, none for all_reduce's). One job holds one: the
// job's configuration, composed of both, ran in no trial, and its file is
// refused, as the plugin formats refuse it, until validation has measured
// it as a whole.
func TestJobExportOfNoMeasuredEnvironment(t *testing.T) {
	sp, err := space.Parse("job.toml", []byte(jobSpace))
	if err != nil {
		t.Fatal(err)
	}
	trial := func(n int, ag, ar float64, a space.Assignment) store.Trial {
		return store.Trial{Number: n, State: store.Complete, Params: a, Env: sp.Env(a), Scores: map[string]float64{"all_gather": ag, "all_reduce": ar}}
	}
	defaults := Defaults(sp)
	trials := []store.Trial{{Number: 0, State: store.Failed, FailureKind: "wrong", Params: defaults, Env: sp.Env(defaults)},
		trial(1, 2, 0.5, space.Assignment{"NCCL_ALGO[allgather]": "Ring", "NCCL_ALGO[allreduce]": space.Unset, "NCCL_BUFFSIZE": "16777216"}),
		trial(2, 0.5, 2, space.Assignment{"NCCL_ALGO[allgather]": space.Unset, "NCCL_ALGO[allreduce]": "Tree", "NCCL_BUFFSIZE": space.Unset})}
	job := results.JobOf(sp, trials, nil)
	ex := Export{Space: sp, Campaign: store.Campaign{Name: "job", SpaceHash: sp.Hash()}, Results: results.Of(sp, trials, nil),
		Job: job, Fingerprint: runner.Fingerprint{NCCL: "2.28.3"}, Now: time.Now()}
	if text, err := writeJob(t, ex); err == nil {
		t.Errorf("the job's configuration, %s, ran in no trial; written:\n%s", sp.Key(job.Assignment(sp)), text)
	}
	// Validated as a whole, it was measured: its file is what validation judged.
	vals := []store.Validation{{Range: results.JobRange, Candidate: -1, Config: sp.Key(job.Assignment(sp)), Verdict: "tuned", Reason: "significant"}}
	ex.Results, ex.Job = results.Of(sp, trials, vals), results.JobOf(sp, trials, vals)
	if _, err := writeJob(t, ex); err != nil {
		t.Errorf("validated: %v", err)
	}
}

// TestJobExportWhereTheDefaultsFailed: where NCCL's defaults failed in the
// search, the job file's header says so instead of a gain over them (NaN).
func TestJobExportWhereTheDefaultsFailed(t *testing.T) {
	sp, err := space.Parse("job.toml", []byte(jobSpace))
	if err != nil {
		t.Fatal(err)
	}
	tuned := space.Assignment{"NCCL_BUFFSIZE": "16777216", "NCCL_ALGO": "Ring"}
	trials := []store.Trial{
		{Number: 0, State: store.Failed, FailureKind: string(runner.FailWrong), Params: Defaults(sp), Env: sp.Env(Defaults(sp))},
		{Number: 1, State: store.Complete, Params: tuned, Env: sp.Env(tuned), Scores: map[string]float64{"all_gather": 1.1, "all_reduce": 1.1}},
	}
	ex := Export{Space: sp, Campaign: store.Campaign{Name: "job", SpaceHash: sp.Hash()}, Results: results.Of(sp, trials, nil),
		Job: results.JobOf(sp, trials, nil), Fingerprint: runner.Fingerprint{NCCL: "2.28.3"}, Now: time.Now()}
	text, err := writeJob(t, ex)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text, "NaN") || !strings.Contains(text, "all_gather: NCCL's defaults failed in the search, 0.9091 s as exported (trial 1's choice)") ||
		!strings.Contains(text, "the job: NCCL's defaults failed in the search, 1.818 s predicted") {
		t.Errorf("job file:\n%s", text)
	}
}

// TestMeasuresCountsOneLayer: a DDP step of one layer was described as "1 layers".
func TestMeasuresCountsOneLayer(t *testing.T) {
	ex := Export{Space: &space.Space{Benchmark: space.BenchmarkSettings{Kind: space.DDP, Params: "100M", Layers: 1}}}
	if got := ex.measures(space.Range{}); !strings.Contains(got, "(100M parameters, 1 layer)") {
		t.Errorf("measures %q, want (100M parameters, 1 layer)", got)
	}
}

// TestJobExportOfWeights: a workload of weights (relative shares of the
// calls) predicts relative times, not seconds: the job file said "1.2e-05 s
// of communication" of weights 0.5.
func TestJobExportOfWeights(t *testing.T) {
	text, err := writeJob(t, jobExport(t, strings.ReplaceAll(jobSpace, "count = 100", "weight = 0.5"), map[string]string{"allreduce": "Ring"}, nil))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text, " s ") || !strings.Contains(text, "# the job: 2 (relative) of communication with NCCL's defaults, 1.818 (relative) predicted as exported") {
		t.Errorf("job file:\n%s", text)
	}
}

// TestRangeFilesSetOnlyTheirCollectivesParts: a workload's range is one
// collective's calls, and NCCL applies a part of NCCL_ALGO or NCCL_PROTO
// (allreduce:Tree) to its collective alone, so the other collectives' parts
// of a range's chosen trial played no part in its score. A range's files
// set them all the same: sourcing all_gather's set all_reduce's algorithm
// too, a choice no verdict judged for it (the range's choice in a search
// of random parts), and its dotenv file was refused for the ';' that joined
// them. Each range's files set its own collective's part, sourced so in
// every shell, and the other collectives' go unset as NCCL's.
func TestRangeFilesSetOnlyTheirCollectivesParts(t *testing.T) {
	ex := jobExport(t, jobSpace, map[string]string{"allgather": "Ring", "allreduce": "Tree"}, nil)
	dir := t.TempDir()
	for _, format := range []string{"env", "dotenv", "json", "slurm", "torchrun"} {
		if _, err := ex.Write(format, dir); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
	}
	want := map[string]string{"all_gather": "allgather:Ring", "all_reduce": "allreduce:Tree"}
	for name, algo := range want {
		envFile := filepath.Join(dir, "nccl-"+name+".env")
		for shell, out := range algoSourced(t, envFile, []string{"NCCL_ALGO=Tree"}) {
			if out != algo {
				t.Errorf("%s sourcing %s: NCCL_ALGO %q, want %q", shell, filepath.Base(envFile), out, algo)
			}
		}
		dotenv, _ := os.ReadFile(filepath.Join(dir, "nccl-"+name+".dotenv"))
		slurm, _ := os.ReadFile(filepath.Join(dir, "nccl-"+name+".slurm"))
		torchrun, _ := os.ReadFile(filepath.Join(dir, "nccl-"+name+".torchrun.sh"))
		if !strings.Contains(string(dotenv), "\nNCCL_ALGO="+algo+"\n") || !strings.Contains(string(slurm), ",NCCL_ALGO="+algo+",") ||
			!strings.Contains(string(torchrun), " NCCL_ALGO='"+algo+"' ") {
			t.Errorf("range %s: want NCCL_ALGO %s in\n%s\n%s\n%s", name, algo, dotenv, slurm, torchrun)
		}
	}
	text, _ := os.ReadFile(filepath.Join(dir, "nccl-tuned.json"))
	var got struct {
		Ranges []struct {
			Name string            `json:"name"`
			Env  map[string]string `json:"env"`
		} `json:"ranges"`
	}
	if err := json.Unmarshal(text, &got); err != nil {
		t.Fatal(err)
	}
	for _, r := range got.Ranges {
		if r.Env["NCCL_ALGO"] != want[r.Name] {
			t.Errorf("nccl-tuned.json: range %s sets NCCL_ALGO %q, want %q", r.Name, r.Env["NCCL_ALGO"], want[r.Name])
		}
	}
}

// allReduceTree is jobSpace with other in place of all_gather (all_reduce:
// a workload of one collective), NCCL's defaults as trial 0 and trial 1's
// NCCL_ALGO=Tree 20% faster in every range.
func allReduceTree(t *testing.T, other string) (*space.Space, []store.Trial) {
	t.Helper()
	src := strings.Replace(jobSpace, `collective = "all_gather"`, `collective = "`+other+`"`, 1)
	sp, err := space.Parse("job.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	trial := func(n int, score float64, a space.Assignment) store.Trial {
		return store.Trial{Number: n, State: store.Complete, Params: a, Env: sp.Env(a), Scores: map[string]float64{"all_reduce": score, other: score}}
	}
	return sp, []store.Trial{trial(0, 1, Defaults(sp)), trial(1, 1.2, space.Assignment{"NCCL_ALGO": "Tree", "NCCL_BUFFSIZE": space.Unset})}
}

// TestJobOfOneCollectiveSetsItAlone: a workload of one collective searches
// NCCL_ALGO whole, and its job file and the range's file set it plainly: a
// job's broadcast, never measured, ran Tree too, and has none. From NCCL
// 2.24 both set it for all_reduce alone.
func TestJobOfOneCollectiveSetsItAlone(t *testing.T) {
	sp, trials := allReduceTree(t, "all_reduce")
	ex := Export{Space: sp, Campaign: store.Campaign{Name: "job", SpaceHash: sp.Hash()}, Results: results.Of(sp, trials, nil),
		Job: results.JobOf(sp, trials, nil), Fingerprint: runner.Fingerprint{NCCL: "2.28.3"}, Now: time.Now()}
	dir := t.TempDir()
	for _, format := range []string{"job", "env"} {
		if _, err := ex.Write(format, dir); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
	}
	for _, name := range []string{"nccl-job.env", "nccl-all_reduce.env"} {
		text, _ := os.ReadFile(filepath.Join(dir, name))
		if !slices.Contains(exports(string(text)), "NCCL_ALGO='allreduce:Tree'") {
			t.Errorf("%s: want NCCL_ALGO='allreduce:Tree':\n%s", name, text)
		}
	}
}

// TestJobOfOneCollectiveBesideAlltoall: a workload of all_reduce and
// alltoall searches NCCL_ALGO whole (NCCL runs alltoall without one), and
// the job's configuration, with two ranges, took no range's value of it:
// the job file left all_reduce's Tree out (unset it), though its header
// predicted the time of trial 1's choice, and validation judged a
// configuration without it. It is all_reduce's, set for all_reduce alone.
func TestJobOfOneCollectiveBesideAlltoall(t *testing.T) {
	sp, trials := allReduceTree(t, "alltoall")
	job := results.JobOf(sp, trials, nil)
	if a := job.Assignment(sp); a["NCCL_ALGO"] != "Tree" {
		t.Errorf("the job's configuration %v, want all_reduce's NCCL_ALGO=Tree", a)
	}
	ex := Export{Space: sp, Campaign: store.Campaign{Name: "job", SpaceHash: sp.Hash()}, Results: results.Of(sp, trials, nil),
		Job: job, Fingerprint: runner.Fingerprint{NCCL: "2.28.3"}, Now: time.Now()}
	text, err := writeJob(t, ex)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(exports(text), "NCCL_ALGO='allreduce:Tree'") {
		t.Errorf("want NCCL_ALGO='allreduce:Tree':\n%s", text)
	}
}
