package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nccltune/nccltune/quality"
	"github.com/nccltune/nccltune/space"
	"github.com/urfave/cli/v2"
)

// The test binary doubles as nccltune itself, so that `run` can start `nccltune
// sim` (os.Executable) and tests can run the CLI as a separate process.
func TestMain(m *testing.M) {
	if os.Getenv("NCCLTUNE_TEST_BE_MAIN") == "1" {
		if d, err := time.ParseDuration(os.Getenv("NCCLTUNE_TEST_STOP_WAIT")); err == nil {
			stopWait = d
		}
		os.Exit(run(append([]string{"nccltune"}, os.Args[1:]...)))
	}
	os.Setenv("NCCLTUNE_TEST_BE_MAIN", "1")
	var err error
	if sharedDir, err = os.MkdirTemp("", "nccltune-campaigns"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(sharedDir)
	os.Exit(code)
}

// Campaigns that several tests run alike are run once each, under
// sharedDir (see ranCampaign).
var (
	sharedDir  string
	sharedMu   sync.Mutex
	sharedRuns = map[string]*sharedRun{}
)

type sharedRun struct {
	once sync.Once
	dir  string // where it ran; "" if it failed
	fail string
}

// ranCampaign puts into dir the store (nccltune.db) of `nccltune run` with
// args, which the first test to ask runs, in a folder of its own, for
// every test to copy: a test reads or alters its copy as it would a store
// it ran itself, without a campaign's time. args name no file of dir.
func ranCampaign(t *testing.T, dir string, args ...string) {
	t.Helper()
	key := strings.Join(args, "\x00")
	sharedMu.Lock()
	r := sharedRuns[key]
	if r == nil {
		r = &sharedRun{fail: "the shared campaign's run stopped the test that ran it"}
		sharedRuns[key] = r
	}
	sharedMu.Unlock()
	r.once.Do(func() {
		runDir, err := os.MkdirTemp(sharedDir, "campaign")
		if err != nil {
			r.fail = err.Error()
			return
		}
		if code, out, errOut := nccltune(t, runDir, append([]string{"run"}, args...)...); code != 0 {
			r.fail = fmt.Sprintf("run %v: exit %d\n%s%s", args, code, out, errOut)
			return
		}
		r.dir, r.fail = runDir, ""
	})
	if r.dir == "" {
		t.Fatal(r.fail)
	}
	// A finished run leaves its log copied into the file (store.Close); a -wal left all the same goes with it.
	for _, suffix := range []string{"", "-wal"} {
		data, err := os.ReadFile(filepath.Join(r.dir, "nccltune.db"+suffix))
		if suffix != "" && errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, "nccltune.db"+suffix), data, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// nccltune runs the CLI in a child process and returns its exit code and output.
func nccltune(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, stdout.String(), stderr.String()
}

func TestRunStatusExport(t *testing.T) {
	dir := t.TempDir()
	// No --space: the built-in example on the simulated cluster.
	code, out, errOut := nccltune(t, dir, "run", "--trials", "6")
	if code != 0 {
		t.Fatalf("run exited %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "trial 5 (6/6)") || !strings.Contains(out, "6 of 6 trials finished") || !strings.Contains(out, "large") {
		t.Errorf("run output:\n%s\nprogress:\n%s", out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "nccltune.db")); err != nil {
		t.Errorf("default store not created: %v", err)
	}

	code, out, _ = nccltune(t, dir, "status", "--json")
	var st struct {
		Campaign  string
		Simulated bool
		Trials    struct{ Total int }
		Iters     struct {
			Count  int
			Reason string
		} `json:"iterations"`
		Ranges []struct {
			Name      string
			BestBusBW *float64 `json:"best"`
			Env       map[string]string
		}
	}
	if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil {
		t.Fatalf("status --json: exit %d, %v\n%s", code, err, out)
	}
	if st.Campaign != "sim-2node-ib" || !st.Simulated || st.Trials.Total < 6 || len(st.Ranges) != 3 || st.Ranges[0].BestBusBW == nil {
		t.Errorf("status --json = %+v", st)
	}
	// The two runs of NCCL's defaults set the iteration count, and say why.
	if st.Iters.Count < 1 || !strings.Contains(st.Iters.Reason, "NCCL's defaults measured twice") || !strings.Contains(errOut, st.Iters.Reason) {
		t.Errorf("iterations %+v; progress:\n%s", st.Iters, errOut)
	}

	code, out, errOut = nccltune(t, dir, "export", "--out", "env")
	if code != 0 || strings.Count(out, ".env") != 3 {
		t.Fatalf("export: exit %d\n%s%s", code, out, errOut)
	}
	for _, r := range st.Ranges {
		data, err := os.ReadFile(filepath.Join(dir, "env", "nccl-"+r.Name+".env"))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range r.Env {
			if k == "NCCL_ALGO" || k == "NCCL_PROTO" {
				v = "allreduce:" + v // for the collective measured alone
			}
			if !strings.Contains(string(data), "export "+k+"='"+v+"'\n") {
				t.Errorf("nccl-%s.env lacks %s=%s:\n%s", r.Name, k, v, data)
			}
		}
	}
}

func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.toml")
	os.WriteFile(bad, []byte("[campaign]\ntrials = 10\n[[param]]\nname = \"NCCL_IB_GID_INDX\"\nmin = 0\nmax = 3\n"), 0o644)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"bogus"}, 2, `no command "bogus"`},
		{[]string{"run", "--trials", "2"}, 2, "--trials: the trial budget must be at least 3"},
		{[]string{"run", "--trials", "2000000"}, 2, "--trials: the trial budget must be at most 65536, not 2000000"},
		{[]string{"run", "--space", bad, "--bogus"}, 2, "unknown flag --bogus (nccltune run --help lists them)"},
		{[]string{"run", "--space", bad}, 1, "bad.toml:4: param: unknown NCCL variable NCCL_IB_GID_INDX; did you mean NCCL_IB_GID_INDEX?"},
		{[]string{"status", "--store", "missing.db"}, 1, "no store missing.db: start a campaign with `nccltune run --store missing.db`"},
		{[]string{"export", "--format", "json"}, 1, "no store nccltune.db: start a campaign with `nccltune run`,"},
		{[]string{"resume"}, 1, "no store nccltune.db"},
		{[]string{"run", "--trails", "5"}, 2, "unknown flag --trails; did you mean --trials? (nccltune run --help lists them)"},
		{[]string{"export", "--fromat", "json"}, 2, "did you mean --format?"},
		// Read by the plugin formats alone: another's file would load no plugin.
		{[]string{"export", "--format", "env", "--plugin", "/opt/x.so"}, 2, "--plugin names the plugin of the plugin and tuner-csv formats' env files"},
		// A one-letter flag is named as the help names it, and nothing is as near to it as another letter.
		{[]string{"run", "-t", "5"}, 2, "unknown flag -t (nccltune run --help lists them)"},
		{[]string{"status", "-j"}, 2, "unknown flag -j (nccltune status --help lists them)"},
		{[]string{"--store", "x.db", "status"}, 2, "flags go after the command they belong to"},
		// One that no command takes belongs after none.
		{[]string{"--version"}, 2, "unknown flag --version: no command takes it (nccltune --help lists the commands)"},
		// A flag's bad or missing value names it as the help does, not as Go's flag package (-trials).
		{[]string{"run", "--trials", "abc"}, 2, `invalid value "abc" for --trials: not a decimal integer`},
		{[]string{"run", "--trials"}, 2, "flag needs an argument: --trials"},
		{[]string{"status", "--json=maybe"}, 2, `invalid boolean value "maybe" for --json: parse error`},
		{[]string{"run", "-q=x: for -y"}, 2, `invalid boolean value "x: for -y" for -q: parse error`},
		{[]string{"export", "--store", bad}, 1, "not an SQLite database"},
		{[]string{"sim", "-fabric=warp", "all_reduce_perf"}, 1, "fabric"},
		{[]string{"run", "--validate-rounds", "100000000"}, 2, "--validate-rounds: the rounds must be 2 to 1000, not 100000000"},
		{[]string{"validate", "--rounds", "1"}, 2, "--rounds: the rounds must be 2 to 1000, not 1"},
		{[]string{"compare", "--rounds", "1001", "a.env", "b.env"}, 2, "--rounds: the rounds must be 2 to 1000"},
		// An argument no command reads is refused, not dropped: the first would run the built-in example.
		{[]string{"run", "space.toml"}, 2, "did you mean --space space.toml?"},
		{[]string{"status", "--store", "missing.db", "extra"}, 2, `nccltune status takes no arguments, only flags, and "extra" is not a flag`},
		{[]string{"status", "x", "--json"}, 2, "takes no arguments"},
		{[]string{"plugin", "build", "x"}, 2, "takes no arguments"},
		{[]string{"bench", "serch"}, 2, `no command "serch" under nccltune bench`},
		{[]string{"plugin", "bild"}, 2, `no command "bild" under nccltune plugin`},
	} {
		code, _, errOut := nccltune(t, dir, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("nccltune %v: exit %d, stderr %q; want exit %d and %q", tc.args, code, errOut, tc.code, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "nccltune.db")); err == nil {
		t.Error("a failed run left a store behind")
	}
}

// TestFlagErrorsBeforeTheSpace: a flag value no space makes good is refused
// before the space is read, so that the refusal is not preceded by the
// built-in example's announcement, as if it had started.
func TestFlagErrorsBeforeTheSpace(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{{"run", "--sampler", "foo"}, {"run", "--validate-rounds", "1"}, {"resume", "--sampler", "foo"},
		// Rounds of a validation that --no-validate skips were dropped unread.
		{"run", "--no-validate", "--validate-rounds", "3"}, {"resume", "--validate-rounds", "3", "--no-validate"},
		// A budget no space takes: the built-in example was announced first.
		{"run", "--trials", "0"}, {"run", "--trials", "70000"}, {"resume", "--trials", "-1"}} {
		code, _, errOut := nccltune(t, dir, args...)
		if code != 2 || strings.Contains(errOut, "built-in example") || strings.Contains(errOut, "no store") {
			t.Errorf("nccltune %v: exit %d, stderr %q; want exit 2 and the flag's error alone", args, code, errOut)
		}
	}
}

// TestInterruptAndResume stops a campaign with SIGINT while a benchmark runs,
// then resumes it to completion.
func TestInterruptAndResume(t *testing.T) {
	t.Parallel() // waits on its benchmark's sleeps and signals, not a CPU
	dir := t.TempDir()
	spaceFile := slowSpace(t, dir, 6)
	// A launch hangs (slowSpace's hold), so the signal finds a trial running,
	// not the moment between two, as a second's sleep could on a loaded machine.
	cmd := exec.Command(os.Args[0], "run", "--space", spaceFile)
	done, stderr := startHeld(t, dir, cmd)
	cmd.Process.Signal(syscall.SIGINT)
	err := <-done
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Fatalf("interrupted run: %v\n%s", err, stderr.String())
	}
	_, out, _ := nccltune(t, dir, "status", "--json")
	if !strings.Contains(out, `"interrupted": 1`) {
		t.Errorf("no interrupted trial recorded:\n%s", out)
	}
	code, out, errOut := nccltune(t, dir, "run", "--space", spaceFile)
	if code != 0 || !strings.Contains(out, "6 of 6 trials finished (6 complete, 0 failed)") {
		t.Fatalf("resume: exit %d\n%s\n%s", code, out, errOut)
	}
}

func TestReportValidateCompare(t *testing.T) {
	dir := t.TempDir()
	if code, out, errOut := nccltune(t, dir, "run", "-q", "--trials", "16", "--no-validate"); code != 0 {
		t.Fatalf("run: %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := nccltune(t, dir, "validate", "-q", "--rounds", "3")
	if code != 0 || !strings.Contains(out, "validated gain") || strings.Contains(out, "not validated") {
		t.Fatalf("validate: %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = nccltune(t, dir, "report", "--out", "plots")
	if code != 0 || !strings.Contains(out, "what matters most") {
		t.Fatalf("report: %d\n%s%s", code, out, errOut)
	}
	for _, name := range []string{"busbw.png", "convergence.png"} {
		f, err := os.Open(filepath.Join(dir, "plots", name))
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := png.DecodeConfig(f)
		f.Close()
		if err != nil || cfg.Width < 600 || cfg.Height < 300 {
			t.Errorf("%s: %+v, %v", name, cfg, err)
		}
	}
	code, out, _ = nccltune(t, dir, "report", "--out", "plots", "--json")
	var rep struct {
		Importance map[string]struct {
			Params []struct{ Param, Status string }
			Reason string
		}
		Plots map[string]string
	}
	if err := json.Unmarshal([]byte(out), &rep); code != 0 || err != nil || len(rep.Importance["large"].Params) == 0 ||
		rep.Importance["large"].Reason != "" || rep.Importance["large"].Params[0].Status != "analysed" || rep.Plots["busbw"] == "" {
		t.Errorf("report --json: %d, %v\n%s", code, err, out)
	}

	os.WriteFile(filepath.Join(dir, "a.env"), []byte("# NCCL's defaults\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "b.env"), []byte("export NCCL_NET_GDR_LEVEL='PHB'\n"), 0o644)
	code, out, errOut = nccltune(t, dir, "compare", "--rounds", "3", "a.env", "b.env")
	if code != 0 || !strings.Contains(out, "B faster") {
		t.Errorf("compare: %d\n%s%s", code, out, errOut)
	}
	os.WriteFile(filepath.Join(dir, "bad.env"), []byte("export NCCL_PROTO='LL9'\n"), 0o644)
	code, _, errOut = nccltune(t, dir, "compare", "a.env", "bad.env")
	if code != 1 || !strings.Contains(errOut, "bad.env:1:") {
		t.Errorf("compare with a bad file: %d %s", code, errOut)
	}
	// A DDP knob nccl-tests never gets is refused, not left out in silence.
	os.WriteFile(filepath.Join(dir, "ddp.env"), []byte("bucket_cap_mb=25\n"), 0o644)
	code, _, errOut = nccltune(t, dir, "compare", "a.env", "ddp.env")
	if code != 1 || !strings.Contains(errOut, "bucket_cap_mb is a DDP setting") {
		t.Errorf("compare with a DDP knob on nccl-tests: %d %s", code, errOut)
	}
}

// TestCompareAPluginEnv: compare measures a plugin format's env file
// (nccl-plugin.env: the job's environment, the plugin and its rules) as the
// job would run it, where it refused the file for NCCLTUNE_RULES, a
// variable NCCL's catalogue does not hold.
func TestCompareAPluginEnv(t *testing.T) {
	dir := t.TempDir()
	example, _ := filepath.Abs("../../examples/sim-2node-ib.toml")
	os.WriteFile(filepath.Join(dir, "a.env"), []byte("# NCCL's defaults\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "nccl-plugin.env"), []byte("export NCCL_NET_GDR_LEVEL='PHB'\n"+
		"export NCCL_TUNER_PLUGIN='"+filepath.Join(dir, "libnccl-tuner-nccltune.so")+"'\n"+
		"export NCCLTUNE_RULES='"+filepath.Join(dir, "nccltune.rules")+"'\n"), 0o644)
	code, out, errOut := nccltune(t, dir, "compare", "--space", example, "--rounds", "2", "a.env", "nccl-plugin.env")
	if code != 0 || !strings.Contains(out, "B vs A") {
		t.Errorf("compare a.env nccl-plugin.env: %d\n%s%s", code, out, errOut)
	}
}

func TestDoctor(t *testing.T) {
	dir := t.TempDir()
	example, _ := filepath.Abs("../../examples/sim-2node-ib.toml")
	code, out, errOut := nccltune(t, dir, "doctor", "--space", example, "--json", "--python", "")
	var rep struct {
		Nodes []struct {
			Host    string
			Results []struct{ Check, Status, Detail string }
		}
		Cluster []struct{ Layer, Check, Status, Detail string }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Nodes) != 1 || len(rep.Cluster) != 2 {
		t.Fatalf("doctor --json: exit %d, %v\n%s%s", code, err, out, errOut)
	}
	if nccl := rep.Cluster[0]; nccl.Layer != "nccl" || nccl.Status != "ok" || !strings.Contains(nccl.Detail, "network IB") {
		t.Errorf("NCCL check on the simulated IB cluster: %+v", nccl)
	}
	for _, r := range rep.Nodes[0].Results {
		if r.Status == "fail" && code != 1 {
			t.Errorf("a failed check (%s) must exit 1, got %d", r.Check, code)
		}
	}
	code, out, _ = nccltune(t, dir, "doctor", "--python", "")
	if !strings.Contains(out, "GPUs (nvidia-smi)") || !strings.Contains(out, "SKIP") {
		t.Errorf("doctor without a space: exit %d\n%s", code, out)
	}

	if _, err := exec.LookPath("mpirun"); err != nil {
		return
	}
	// One process per node through mpirun: here, one node, whose two ranks
	// (one would be warned of: it chooses no algorithm) the probe runs.
	hosts := filepath.Join(dir, "hosts")
	os.WriteFile(hosts, []byte("localhost slots=2\n"), 0o644)
	src, _ := os.ReadFile(example)
	mpi := strings.Replace(string(src), "[benchmark]", "[launcher]\nkind = \"mpirun\"\nnp = 2\nhostfile = \""+hosts+"\"\nargs = [\"--oversubscribe\"]\n\n[benchmark]", 1)
	mpi = strings.Replace(mpi, "gpus = 16 ", "gpus = 1 ", 1)
	if os.Geteuid() == 0 {
		t.Setenv("OMPI_ALLOW_RUN_AS_ROOT", "1")
		t.Setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
	}
	os.WriteFile(filepath.Join(dir, "mpi.toml"), []byte(mpi), 0o644)
	code, out, errOut = nccltune(t, dir, "doctor", "--space", "mpi.toml", "--json", "--python", "")
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Nodes) != 1 || rep.Cluster[0].Status != "ok" {
		t.Errorf("doctor through mpirun: exit %d, %v\n%s%s", code, err, out, errOut)
	}
}

// TestBenchSearch runs a small search-quality benchmark through the CLI.
func TestBenchSearch(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := nccltune(t, dir, "bench", "search", "--scenarios", "2node-ib-gdr,2node-tcp", "--seeds", "1", "--trials", "40",
		"--samplers", "tpe,random", "--landscapes", "2", "--smooth", "0", "--json", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	var res struct {
		Results []struct {
			Scenario, Sampler string
			RegretByRange     map[string]map[string]float64 `json:"regret_by_range"`
			Regret            map[string]float64            `json:"worst_range_regret"`
			Tried             map[string]float64            `json:"worst_range_best_tried_regret"`
			TrialsTo3         float64                       `json:"trials_to_3pct"`
			Seconds           float64                       `json:"seconds_total"`
		}
		Plot       string
		Landscapes struct {
			Count   int
			Summary []struct {
				Sampler      string
				Regret       map[string]quality.Spread   `json:"worst_range_regret"`
				Tried        map[string]quality.Spread   `json:"worst_range_best_tried_regret"`
				Misses       map[string]map[string]int   `json:"misses"`
				TrialsTo3    quality.Spread              `json:"trials_to_3pct"`
				PerLandscape []struct{ Scenario string } `json:"per_landscape"`
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if l := res.Landscapes; l.Count != 2 || len(l.Summary) != 2 || l.Summary[1].Sampler != "random" || len(l.Summary[0].PerLandscape) != 2 ||
		l.Summary[0].PerLandscape[1].Scenario != "landscape-2" || l.Summary[0].TrialsTo3.P90 < l.Summary[0].TrialsTo3.Median ||
		len(l.Summary[0].Regret) != 1 || l.Summary[0].Tried["40"].Median > l.Summary[0].Regret["40"].Median || l.Summary[0].Misses["40"] == nil {
		t.Errorf("landscapes: %+v", l)
	}
	if len(res.Results) != 4 || res.Results[2].Scenario != "2node-tcp" {
		t.Fatalf("%d results, want 2 scenarios x 2 strategies", len(res.Results))
	}
	for _, r := range res.Results {
		if len(r.RegretByRange) != 3 || r.Seconds <= 40*5 || r.TrialsTo3 < 1 || len(r.Tried) != 3 || r.Tried["40"] > r.Regret["40"] {
			t.Errorf("%s/%s: %+v", r.Scenario, r.Sampler, r)
		}
	}
	f, err := os.Open(res.Plot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := png.Decode(f); err != nil {
		t.Errorf("plot: %v", err)
	}
	code, out, errOut = nccltune(t, dir, "bench", "search", "--scenarios", "", "--landscapes", "1", "--smooth", "0", "--trials", "40", "--samplers", "random", "--out", dir)
	if code != 0 || !strings.Contains(out, "best tried@40") || !regexp.MustCompile(`(?m)^ +random( +\d+){4}( +-){4}$`).MatchString(out) {
		t.Errorf("landscape tables: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, _, errOut := nccltune(t, dir, "bench", "search", "--samplers", "tpe,bayes"); code != 2 || !strings.Contains(errOut, "tpe-cold") {
		t.Errorf("unknown strategy: exit %d, %s", code, errOut)
	}
	if code, _, errOut := nccltune(t, dir, "bench", "search", "--scenarios", "infiniband"); code != 2 || !strings.Contains(errOut, `unknown scenario "infiniband"`) {
		t.Errorf("unknown scenario: exit %d, %s", code, errOut)
	}
}

// patientSpace writes into dir the built-in example with patience = 6,
// under which its ranges settle within its budget, and returns its path.
func patientSpace(t *testing.T, dir string) string {
	t.Helper()
	src, err := os.ReadFile("../../examples/sim-2node-ib.toml")
	if err != nil {
		t.Fatal(err)
	}
	space := filepath.Join(dir, "space.toml")
	if err := os.WriteFile(space, []byte(strings.Replace(string(src), "trials = 60", "trials = 60\npatience = 6", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	return space
}

// TestSettledRanges: with patience, ranges settle and leave the sweep; the
// progress shows them unmeasured, and status says why the campaign stopped.
func TestSettledRanges(t *testing.T) {
	dir := t.TempDir()
	space := patientSpace(t, dir)
	code, out, errOut := nccltune(t, dir, "run", "--space", space, "--no-simplify", "--no-validate")
	if code != 0 {
		t.Fatalf("run exited %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, " - (best ") {
		t.Errorf("no progress line shows a range left out of the sweep:\n%s", errOut)
	}
	if !strings.Contains(out, "every range settled (patience): small after trial") {
		t.Errorf("status does not say why the campaign stopped:\n%s", out)
	}
}

// TestCommandCampaignReports: a campaign of the user's command (a time,
// lower is better, printed without NCCL's log) reads in the user's unit and
// direction everywhere, reports nothing that does not apply to it (sizes,
// an iteration count), plots without message sizes, and is not called
// validated, since NCCL confirmed none of its settings.
func TestCommandCampaignReports(t *testing.T) {
	dir := t.TempDir()
	spaceFile, _ := filepath.Abs("../../tuner/testdata/silent-command.toml")
	if code, out, errOut := nccltune(t, dir, "run", "-q", "--space", spaceFile, "--validate-rounds", "2"); code != 0 {
		t.Fatalf("run: %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := nccltune(t, dir, "status")
	if code != 0 || !strings.Contains(out, "default ms (lower is better)") || !strings.Contains(out, "no NCCL INFO lines") || strings.Contains(out, "1/ms") {
		t.Errorf("status: %d\n%s%s", code, out, errOut)
	}
	code, out, _ = nccltune(t, dir, "status", "--json")
	var st map[string]any
	if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil {
		t.Fatalf("status --json: %d %v\n%s", code, err, out)
	}
	rng := st["ranges"].([]any)[0].(map[string]any)
	_, iters := st["iterations"]
	_, sizes := rng["max_bytes_exclusive"]
	if iters || sizes || rng["unit"] != "ms" || rng["lower_is_better"] != true || math.Abs(rng["default"].(float64)-10) > 1e-9 || math.Abs(rng["best"].(float64)-5) > 1e-9 {
		t.Errorf("status --json of a command campaign: %s", out)
	}
	if v := rng["validation"].(map[string]any); v["verdict"] != "default" || !strings.Contains(v["reason"].(string), "not confirmed") {
		t.Errorf("validation of settings NCCL never confirmed: %v", v)
	}
	code, out, errOut = nccltune(t, dir, "show", "2")
	if code != 0 || !strings.Contains(out, "measured per range, ms (lower is better): step 5") {
		t.Errorf("show: %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = nccltune(t, dir, "report", "--out", "plots")
	if code != 0 || !strings.Contains(out, "measured.png") {
		t.Errorf("report: %d\n%s%s", code, out, errOut)
	}
}

// TestFigureOfNoScore: no score yet (a progress line's best before any
// trial measured the range, a range left out) prints "-", lower-is-better
// metrics included, never +Inf or NaN.
func TestFigureOfNoScore(t *testing.T) {
	for _, tc := range []struct {
		m     space.Measure
		score float64
		want  string
	}{
		{space.Measure{Unit: "GB/s"}, 0, "-"},
		{space.Measure{Unit: "ms", Inverse: true}, 0, "-"},
		{space.Measure{Unit: "ms", Inverse: true}, math.NaN(), "-"},
		{space.Measure{Unit: "GB/s"}, math.Inf(1), "-"},
		{space.Measure{Unit: "ms", Inverse: true}, 0.5, "2"},
		{space.Measure{Unit: "GB/s"}, 123.4, "123"},
		{space.Measure{Unit: "GB/s"}, 0.01234, "0.0123"},
	} {
		if got := figureOf(tc.m, tc.score); got != tc.want {
			t.Errorf("figureOf(%v, %g) = %q, want %q", tc.m, tc.score, got, tc.want)
		}
	}
}

// TestFigureOfALargeScore: a score of a metric in large units (FLOP/s,
// 3e16) filled its table cell with all 17 digits, where the summary and
// the exported file's header give three significant ones (3e+16); from a
// million on, the cell gives three too.
func TestFigureOfALargeScore(t *testing.T) {
	for score, want := range map[float64]string{3e16: "3e+16", 1234567: "1.23e+06", 999999.4: "999999", 150: "150"} {
		if got := figureOf(space.Measure{Unit: "FLOP/s"}, score); got != want {
			t.Errorf("figureOf(%g) = %q, want %q", score, got, want)
		}
	}
}

// TestBenchSearchSmooth: the smooth family alone runs and reports under
// "smooth", without a misses field (its misses are not diagnosed: an empty
// count would say there were none); with no family and no scenario there
// is nothing to run.
func TestBenchSearchSmooth(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := nccltune(t, dir, "bench", "search", "--scenarios", "", "--landscapes", "0", "--smooth", "1",
		"--samplers", "random", "--trials", "40", "--json", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	var got map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if _, ok := got["landscapes"]; ok || got["smooth"] == nil {
		t.Errorf("families reported: %s", out)
	}
	if strings.Contains(string(got["smooth"]), `"misses"`) {
		t.Errorf("the smooth family reports misses it never diagnosed: %s", got["smooth"])
	}
	code, _, errOut = nccltune(t, dir, "bench", "search", "--scenarios", "", "--landscapes", "0", "--smooth", "0")
	if code != 2 || !strings.Contains(errOut, "nothing to run") {
		t.Errorf("nothing to run: exit %d %s", code, errOut)
	}
}

// TestInheritedSettingsAreReported: a value NCCL takes from a config file
// (NCCL_CONF_FILE here; ~/.nccl.conf and /etc/nccl.conf alike) applies to
// the trials that leave its variable to NCCL, the defaults' included, which
// status and show say, naming a searched variable's "default" for what it was.
func TestInheritedSettingsAreReported(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile("../../examples/sim-2node-ib.toml")
	if err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "nccl.conf")
	if err := os.WriteFile(conf, []byte("NCCL_BUFFSIZE=8388608\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	space := filepath.Join(dir, "space.toml")
	if err := os.WriteFile(space, []byte(strings.Replace(string(src), "[fixed]\n", "[fixed]\nNCCL_CONF_FILE = "+strconv.Quote(conf)+"\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := nccltune(t, dir, "run", "--space", space, "--trials", "12", "--no-simplify", "--no-validate")
	if code != 0 {
		t.Fatalf("run exited %d\n%s\n%s", code, out, errOut)
	}
	if !regexp.MustCompile(`warning: NCCL read NCCL_BUFFSIZE=8388608 in \d+ of \d+ completed trials, which the campaign does not set .*NCCL_BUFFSIZE is searched, so its "default" here was 8388608`).MatchString(out) {
		t.Errorf("status does not report the inherited value:\n%s", out)
	}
	if _, out, _ = nccltune(t, dir, "show", "0"); !strings.Contains(out, "NCCL also read, not set by the trial (a config file's or the ranks' own environment): NCCL_BUFFSIZE=8388608") {
		t.Errorf("show 0 does not report the inherited value:\n%s", out)
	}
}

// TestDoctorNodeMissing: a node whose per-node checks print nothing (the
// binary not on it, a crash) was left out, and doctor judged the nodes that
// answered as if they were all: here an mpirun that starts the checks on one
// node of the hostfile's two.
func TestDoctorNodeMissing(t *testing.T) {
	dir := t.TempDir()
	mpirun := filepath.Join(dir, "mpirun")
	os.WriteFile(mpirun, []byte("#!/bin/sh\n# the first node alone\nwhile true; do case $1 in -np|--hostfile|--map-by|-x) shift 2;; --oversubscribe|--tag-output) shift;; *) break;; esac; done\nexec \"$@\"\n"), 0o755)
	hosts := filepath.Join(dir, "hosts")
	os.WriteFile(hosts, []byte("node-a\nnode-b\nnode-b\n"), 0o644) // node-b's two slots, as MPICH writes them
	example, _ := filepath.Abs("../../examples/sim-2node-ib.toml")
	src, _ := os.ReadFile(example)
	mpi := strings.Replace(string(src), "[benchmark]", "[launcher]\nkind = \"mpirun\"\ncommand = \""+mpirun+"\"\nnp = 1\nhostfile = \""+hosts+"\"\nargs = [\"--oversubscribe\"]\n\n[benchmark]", 1)
	mpi = strings.Replace(mpi, "gpus = 16 ", "gpus = 1 ", 1)
	os.WriteFile(filepath.Join(dir, "mpi.toml"), []byte(mpi), 0o644)
	code, out, errOut := nccltune(t, dir, "doctor", "--space", "mpi.toml", "--json", "--python", "")
	var rep struct {
		Nodes   []struct{ Host string }
		Cluster []struct{ Check, Status, Detail string }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Nodes) != 1 {
		t.Fatalf("doctor: exit %d, %v\n%s%s", code, err, out, errOut)
	}
	said := false
	for _, r := range rep.Cluster {
		said = said || r.Check == "per-node checks" && r.Status == "fail" && strings.Contains(r.Detail, "1 of 2 nodes reported")
	}
	if code != 1 || !said {
		t.Errorf("doctor with a node missing: exit %d, cluster %+v", code, rep.Cluster)
	}
}

// TestExitCodesOfAProgramsFailure: a program nccltune starts (the plugin's
// C compiler) that exits with a code of its own, or dies of a signal other
// than one that stops nccltune (the OOM killer's SIGKILL), fails the
// command with exit 1; nccltune exited with the program's code (4), or 255
// for a signal, codes the README does not document, since urfave/cli took
// the exec.ExitError it wrapped for one of its own exit codes. A stop
// signal is an interruption (TestPluginBuildCompilerStoppedFirst).
func TestExitCodesOfAProgramsFailure(t *testing.T) {
	dir := t.TempDir()
	for _, script := range []string{"exit 4", "kill -KILL $$"} {
		cc := filepath.Join(dir, "cc")
		os.WriteFile(cc, []byte("#!/bin/sh\n"+script+"\n"), 0o755)
		code, out, errOut := nccltune(t, dir, "plugin", "build", "--cc", cc, "--out", filepath.Join(dir, "out"))
		if code != 1 || !strings.Contains(errOut, "building") {
			t.Errorf("plugin build with a compiler that runs %q: exit %d\n%s%s", script, code, out, errOut)
		}
	}
}

// TestAPanicIsAnInternalError: a panic of nccltune's own exited 2 (Go's
// runtime), which scripts read as their usage error; it exits 70 with its
// trace, after the command's deferred clean-ups ran.
func TestAPanicIsAnInternalError(t *testing.T) {
	cleaned := false
	app := newApp()
	app.Commands = append(app.Commands, &cli.Command{Name: "crash", Action: func(*cli.Context) error {
		defer func() { cleaned = true }()
		var m map[string]int
		m["x"]++ // a bug's panic
		return nil
	}})
	errFile, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	stderr := os.Stderr
	os.Stderr = errFile
	code := runApp(app, []string{"nccltune", "crash"})
	os.Stderr = stderr
	out, _ := os.ReadFile(errFile.Name())
	if code != exitInternal || !cleaned || !strings.Contains(string(out), "internal error (a bug") || !strings.Contains(string(out), "main_test.go") {
		t.Errorf("exit %d, clean-up ran %v, stderr %q; want exit %d, the clean-up run and a trace", code, cleaned, out, exitInternal)
	}
}

// TestRunAppReturnsAndNothingExitsLater: runApp's watch for a stop signal
// read its own return (which cancels the signal's context) as one, and
// stopWait later exited the process, the test binary that called it.
func TestRunAppReturnsAndNothingExitsLater(t *testing.T) {
	old := stopWait
	stopWait = time.Millisecond
	defer func() { stopWait = old }()
	app := newApp()
	app.Commands = append(app.Commands, &cli.Command{Name: "noop", Action: func(*cli.Context) error { return nil }})
	if code := runApp(app, []string{"nccltune", "noop"}); code != exitOK {
		t.Fatalf("exit %d", code)
	}
	time.Sleep(100 * time.Millisecond) // the process exited here, failing the package with no test named
	if signal.Ignored(syscall.SIGHUP) {
		t.Error("SIGHUP is ignored since; nothing sent it")
	}
}
