package tuner

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nccltune/nccltune/export"
	"github.com/nccltune/nccltune/internal/simtest"
	"github.com/nccltune/nccltune/results"
	"github.com/nccltune/nccltune/runner"
	"github.com/nccltune/nccltune/space"
	"github.com/nccltune/nccltune/store"
)

// The tuner starts the simulator (newTuner's, simtest.Simulator) as a real
// process, through the same launcher and parser as real nccl-tests; the
// test binary stands in for it where a test launches this executable.
func TestMain(m *testing.M) { simtest.Main(m) }

func loadExample(t testing.TB, trials int) *space.Space {
	t.Helper()
	sp, err := space.Load("../examples/sim-2node-ib.toml")
	if err != nil {
		t.Fatal(err)
	}
	sp.Campaign.Trials = trials
	return sp
}

func openStore(t testing.TB) *store.Store {
	t.Helper()
	return openStoreAt(t, filepath.Join(t.TempDir(), "trials.db"))
}

func openStoreAt(t testing.TB, path string) *store.Store {
	t.Helper()
	st, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// copyStore opens a copy of st as it is now: a test that needs one campaign
// twice, to go on differently from the same point, runs it once.
func copyStore(t testing.TB, st *store.Store) *store.Store {
	t.Helper()
	db, err := sql.Open("sqlite", st.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	path := filepath.Join(t.TempDir(), "copy.db")
	if _, err := db.Exec(`VACUUM INTO ?`, path); err != nil {
		t.Fatalf("copying the store: %v", err)
	}
	return openStoreAt(t, path)
}

// ranExamples holds, by validation rounds, the store file of the example's
// campaign of 12 trials run to its end: many tests start from it, and it
// ends the same in each (the simulator's noise is seeded by the launch), so
// it is run once per test binary and each test goes on in a copy.
var ranExamples = struct {
	sync.Mutex
	files map[int][]byte
}{files: map[int][]byte{}}

// ranExample opens a copy of the example's campaign of 12 trials, run
// through the simulator with ValidateRounds rounds (0: not validated).
func ranExample(t *testing.T, rounds int) (*space.Space, *store.Store) {
	t.Helper()
	sp := loadExample(t, 12)
	ranExamples.Lock()
	defer ranExamples.Unlock()
	file, ok := ranExamples.files[rounds]
	if !ok {
		st := openStore(t)
		if err := newTuner(t, sp, st).Run(context.Background(), Options{ValidateRounds: rounds}); err != nil {
			t.Fatal(err)
		}
		var err error
		if file, err = os.ReadFile(copyStore(t, st).Path()); err != nil {
			t.Fatal(err)
		}
		ranExamples.files[rounds] = file
	}
	path := filepath.Join(t.TempDir(), "trials.db")
	if err := os.WriteFile(path, file, 0o644); err != nil {
		t.Fatal(err)
	}
	// Writable, as the store a campaign ran on is.
	st := openStoreAt(t, path)
	if err := st.LockWriter(); err != nil {
		t.Fatal(err)
	}
	return sp, st
}

func campaignTrials(t testing.TB, st *store.Store, name string) []store.Trial {
	t.Helper()
	c, err := st.Campaign(name)
	if err != nil {
		t.Fatal(err)
	}
	trials, err := st.Trials(c.ID)
	if err != nil {
		t.Fatal(err)
	}
	return trials
}

// mustParse parses a space written in a test, failing the test on an error.
func mustParse(t testing.TB, name, src string) *space.Space {
	t.Helper()
	sp, err := space.Parse(name, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// runSpace runs a campaign of the space written in a test to its end.
func runSpace(t testing.TB, src string) (*space.Space, *store.Store) {
	t.Helper()
	sp := mustParse(t, "test.toml", src)
	st := openStore(t)
	if err := newTuner(t, sp, st).Run(context.Background(), Options{}); err != nil {
		t.Fatal(err)
	}
	return sp, st
}

// newTuner tunes sp on st with the simulated cluster of simtest.Simulator.
func newTuner(t testing.TB, sp *space.Space, st *store.Store) *Tuner {
	t.Helper()
	return &Tuner{Space: sp, Store: st, Simulator: []string{simtest.Simulator(t)}}
}

func TestCampaignOnSimulator(t *testing.T) {
	sp := loadExample(t, 24)
	st := openStore(t)
	if err := newTuner(t, sp, st).Run(context.Background(), Options{}); err != nil {
		t.Fatal(err)
	}
	trials := campaignTrials(t, st, sp.Campaign.Name)
	if len(trials) != 24 {
		t.Fatalf("%d trials stored, want 24", len(trials))
	}
	sweep := len(sp.Sizes.List())
	for _, tr := range trials {
		if tr.State != store.Complete || len(tr.Rows) != sweep || len(tr.Scores) != len(sp.Ranges) || len(tr.Command) == 0 {
			t.Fatalf("trial %d: state %s (%s), %d rows, scores %v", tr.Number, tr.State, tr.FailureReason, len(tr.Rows), tr.Scores)
		}
	}
	if want := []string{"NCCL_NVLS_ENABLE=0"}; !slices.Equal(trials[0].Env, want) {
		t.Errorf("trial 0 (defaults) ran with %v, want only the fixed %v", trials[0].Env, want)
	}
	choices := results.Of(sp, trials, nil)
	tuned := 0
	for _, r := range choices {
		if r.Default == nil || r.BestScore < r.DefaultScore {
			t.Errorf("range %s: best %v below default %v", r.Range.Name, r.BestScore, r.DefaultScore)
		}
		if r.Tuned() {
			tuned++
		}
	}
	// The large range hides GPUDirect RDMA left off by NCCL_NET_GDR_LEVEL's default.
	if large := choices[2]; !large.Tuned() || large.Gain() < 0.3 || !strings.Contains(strings.Join(large.Best.Env, " "), "NCCL_NET_GDR_LEVEL=") {
		t.Errorf("large range: gain %.2f with %v; the GDR trap was not found", large.Gain(), large.Best.Env)
	}

	camp, _ := st.Campaign(sp.Campaign.Name)
	dir := t.TempDir()
	paths, err := export.Export{Space: sp, Campaign: camp, Results: choices, Now: time.Now()}.Write("env", dir)
	if err != nil || len(paths) != 3 {
		t.Fatalf("export: %v, %v", paths, err)
	}
	for i, r := range choices {
		out, err := exec.Command("bash", "-c", "set -eu; source \"$1\"; env | grep ^NCCL_ | sort", "bash", paths[i]).Output()
		if err != nil {
			t.Fatalf("sourcing %s: %v", paths[i], err)
		}
		got := strings.Fields(string(out))
		// The searched algorithm and protocol are set for the collective
		// measured alone, as NCCL applies them (export's scope).
		var want []string
		for _, kv := range r.Chosen().Env {
			if name, v, _ := strings.Cut(kv, "="); name == "NCCL_ALGO" || name == "NCCL_PROTO" {
				kv = name + "=allreduce:" + v
			}
			want = append(want, kv)
		}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s sets %v, want %v", paths[i], got, want)
		}
	}
}

// TestResumeMatchesUninterrupted stops a campaign, leaves a trial marked
// running as a crash would, resumes, and compares with an uninterrupted run;
// with patience, after some range has settled and the sweep narrowed.
func TestResumeMatchesUninterrupted(t *testing.T) {
	for _, tc := range []struct{ budget, patience, stopAt int }{{16, 0, 6}, {60, 8, 12}} {
		load := func() *space.Space {
			sp := loadExample(t, tc.budget)
			sp.Campaign.Patience = tc.patience
			return sp
		}
		whole := openStore(t)
		if err := newTuner(t, load(), whole).Run(context.Background(), Options{}); err != nil {
			t.Fatal(err)
		}

		st := openStore(t)
		sp := load()
		ctx, cancel := context.WithCancel(context.Background())
		c := newTuner(t, sp, st)
		c.Progress = func(p Progress) {
			if p.Done == tc.stopAt {
				cancel()
			}
		}
		if err := c.Run(ctx, Options{}); !errors.Is(err, context.Canceled) {
			t.Fatalf("stopped run returned %v", err)
		}
		camp, _ := st.Campaign(sp.Campaign.Name)
		crashed := &store.Trial{CampaignID: camp.ID, Number: tc.stopAt, Params: map[string]string{"NCCL_ALGO": "Tree"}, Env: []string{}}
		if err := st.StartTrial(crashed); err != nil {
			t.Fatal(err)
		}
		if err := newTuner(t, load(), st).Run(context.Background(), Options{}); err != nil {
			t.Fatal(err)
		}

		want := finished(campaignTrials(t, whole, sp.Campaign.Name))
		got := finished(campaignTrials(t, st, sp.Campaign.Name))
		if len(got) != len(want) || len(got) <= tc.stopAt {
			t.Fatalf("patience %d: %d finished trials after resume, %d uninterrupted", tc.patience, len(got), len(want))
		}
		if tc.patience > 0 && searchSweep(sp, Settled(sp, campaignTrials(t, st, sp.Campaign.Name)[:tc.stopAt])).sizes == sp.Sizes {
			t.Errorf("patience %d: no range had settled by trial %d; the case tests nothing new", tc.patience, tc.stopAt)
		}
		for n := range len(want) {
			if !reflect.DeepEqual(got[n].Params, want[n].Params) || !reflect.DeepEqual(got[n].Scores, want[n].Scores) ||
				!reflect.DeepEqual(got[n].Command, want[n].Command) {
				t.Errorf("patience %d, trial %d: resumed %v %v, uninterrupted %v %v", tc.patience, n, got[n].Params, got[n].Scores, want[n].Params, want[n].Scores)
			}
		}
	}
}

// finished maps trial numbers to their one finished trial, failing on duplicates.
func finished(trials []store.Trial) map[int]store.Trial {
	out := map[int]store.Trial{}
	for _, tr := range trials {
		if tr.State == store.Complete || tr.State == store.Failed {
			if _, dup := out[tr.Number]; dup {
				panic("trial number finished twice")
			}
			out[tr.Number] = tr
		}
	}
	return out
}

const roceSpace = `
[campaign]
name = "roce-gid"
trials = 16
seed = 3
sizes = { min = "1M", max = "64M", factor = 4 }
[benchmark]
gpus = 16
[simulator]
nodes = 2
fabric = "roce"
roce_gid = 3
gids = 4
[fixed]
NCCL_NVLS_ENABLE = 0
[[param]]
name = "NCCL_IB_GID_INDEX"
min = 0
max = 7
[[param]]
name = "NCCL_PROTO"
values = ["default", "LL128", "Simple"]
`

func TestFailedTrialsAreRecordedAndNeverChosen(t *testing.T) {
	sp, st := runSpace(t, roceSpace)
	trials := campaignTrials(t, st, "roce-gid")
	if len(trials) != 16 {
		t.Fatalf("%d trials, want 16: failures must not stop the campaign", len(trials))
	}
	failed := 0
	for _, tr := range trials {
		if tr.State == store.Failed {
			failed++
			if tr.FailureKind != string(runner.FailNCCL) || !strings.Contains(tr.FailureReason, "GID index") || tr.Params["NCCL_IB_GID_INDEX"] <= "3" { // single digits 0-7
				t.Errorf("trial %d failed as %s: %s (params %v)", tr.Number, tr.FailureKind, tr.FailureReason, tr.Params)
			}
		}
	}
	if failed == 0 {
		t.Fatal("no trial hit an invalid GID index; the test proves nothing")
	}
	r := results.Of(sp, trials, nil)[0]
	if r.Chosen().State != store.Complete || r.Chosen().Params["NCCL_IB_GID_INDEX"] != "3" {
		t.Errorf("chose trial %d %v; want the RoCE v2 GID 3", r.Chosen().Number, r.Chosen().Params)
	}
}

func TestRefusesBeforeRunning(t *testing.T) {
	sp := loadExample(t, 4)
	st := openStore(t)
	if err := newTuner(t, sp, st).Run(context.Background(), Options{}); err != nil {
		t.Fatal(err)
	}
	// A new comment and a larger budget change nothing that is measured: it resumes.
	edited := strings.Replace(string(sp.Source), "trials = 60", "trials = 6 # more", 1) + "\n# a comment\n"
	same := mustParse(t, "same.toml", edited)
	if err := newTuner(t, same, st).Run(context.Background(), Options{}); err != nil {
		t.Errorf("a comment-only change was refused: %v", err)
	}
	// A widened range is a different space: refused with the difference...
	widened := strings.Replace(string(sp.Source), "max = 32", "max = 64", 1)
	changed := mustParse(t, "changed.toml", widened)
	changed.Campaign.Trials = 4
	err := newTuner(t, changed, st).Run(context.Background(), Options{})
	if !errors.Is(err, ErrSpaceChanged) || !strings.Contains(err.Error(), "- param NCCL_MIN_CTAS [1, 32] log") ||
		!strings.Contains(err.Error(), "+ param NCCL_MIN_CTAS [1, 64] log") {
		t.Errorf("a changed space was not refused with its diff: %v", err)
	}
	// ...unless allowed: then it runs as a new campaign beside the old one.
	if err := newTuner(t, changed, st).Run(context.Background(), Options{AllowSpaceChange: true}); err != nil {
		t.Fatal(err)
	}
	if got := campaignTrials(t, st, "sim-2node-ib-2"); len(got) != 4 {
		t.Errorf("new campaign has %d trials", len(got))
	}
	if got := campaignTrials(t, st, "sim-2node-ib"); len(got) != 6 {
		t.Errorf("old campaign has %d trials, want its 6", len(got))
	}

	// The same space on real hardware, with a benchmark binary that is not installed.
	realSpace := strings.Replace(string(sp.Source), `name = "sim-2node-ib"`, `name = "real"`, 1)
	realSpace = strings.Replace(realSpace, "[benchmark]", "[benchmark]\nbinary = \"no_such_perf\"", 1)
	realSpace = realSpace[:strings.Index(realSpace, "[simulator]")] + realSpace[strings.Index(realSpace, "[fixed]"):]
	rs := mustParse(t, "real.toml", realSpace)
	if err := (&Tuner{Space: rs, Store: st}).Run(context.Background(), Options{}); err == nil || !strings.Contains(err.Error(), "no_such_perf") {
		t.Errorf("a missing benchmark binary was not reported: %v", err)
	}
	if _, err := st.Campaign("real"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a campaign that could not start was stored: %v", err)
	}

	// A launcher that cannot work is refused before anything is stored.
	mpi := strings.Replace(string(sp.Source), `name = "sim-2node-ib"`, `name = "mpi"`, 1)
	mpi = strings.Replace(mpi, "[benchmark]", "[launcher]\nkind = \"mpirun\"\nnp = 16\nhostfile = \"/nonexistent/hosts\"\ncommand = \"sh\"\n\n[benchmark]", 1)
	ms := mustParse(t, "mpi.toml", mpi)
	if err := newTuner(t, ms, st).Run(context.Background(), Options{}); err == nil || !strings.Contains(err.Error(), "/nonexistent/hosts") {
		t.Errorf("a missing hostfile was not reported: %v", err)
	}
	if _, err := st.Campaign("mpi"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a campaign whose launcher failed its check was stored: %v", err)
	}
}

// TestCampaignThroughMPIRun runs every trial as four simulator ranks under
// Open MPI's mpirun, and checks from each trial's NCCL log that the settings
// reached NCCL, and that a variable NCCL does not read is reported.
func TestCampaignThroughMPIRun(t *testing.T) {
	simtest.RequireMPI(t)
	sp := mustParse(t, "mpi.toml", `
[campaign]
name = "mpi"
trials = 5
sizes = { min = "1K", max = "1M", factor = 4 }
[launcher]
kind = "mpirun"
np = 4
args = ["--oversubscribe"]
[benchmark]
gpus = 1
[simulator]
nodes = 1
[fixed]
NCCL_NVLS_ENABLE = 0
NCCL_IB_TIMEOUT = 20
[[param]]
name = "NCCL_PROTO"
values = ["LL", "LL128", "Simple"]
[[param]]
name = "NCCL_MIN_CTAS"
min = 1
max = 32
`)
	st := openStore(t)
	if err := newTuner(t, sp, st).Run(context.Background(), Options{}); err != nil {
		t.Fatal(err)
	}
	trials := campaignTrials(t, st, "mpi")
	for _, tr := range trials {
		if tr.State != store.Complete || tr.Command[0] != "mpirun" {
			t.Fatalf("trial %d: %s %s: %v", tr.Number, tr.State, tr.FailureReason, tr.Command)
		}
		if got := tr.NCCLLog.Unread(tr.Env); !slices.Equal(got, []string{"NCCL_IB_TIMEOUT"}) {
			t.Errorf("trial %d: unconfirmed %v, want only NCCL_IB_TIMEOUT (the simulator does not read it)", tr.Number, got)
		}
	}
	if s := results.Summarize(trials); s.Unconfirmed["NCCL_IB_TIMEOUT"] != 5 {
		t.Errorf("summary unconfirmed = %v", s.Unconfirmed)
	}
}

func TestStopsEarlyWhenEverythingFails(t *testing.T) {
	src := strings.Replace(roceSpace, "trials = 16", "trials = 20", 1)
	src = strings.Replace(src, "[benchmark]\n", "[benchmark]\nbinary = \"/bin/false\"\n", 1)
	src = src[:strings.Index(src, "[simulator]")] + src[strings.Index(src, "[fixed]"):]
	sp := mustParse(t, "broken.toml", src)
	st := openStore(t)
	err := newTuner(t, sp, st).Run(context.Background(), Options{})
	if !errors.Is(err, ErrAllFailing) || !strings.Contains(err.Error(), "exit status 1") {
		t.Fatalf("err = %v", err)
	}
	if got := campaignTrials(t, st, "roce-gid"); len(got) != earlyStopAfter {
		t.Errorf("%d trials ran; the campaign should stop after %d identical failures", len(got), earlyStopAfter)
	}
}

func TestPatienceStopsAConvergedCampaign(t *testing.T) {
	sp := loadExample(t, 200)
	sp.Campaign.Patience = 15
	st := openStore(t)
	if err := newTuner(t, sp, st).Run(context.Background(), Options{}); err != nil {
		t.Fatal(err)
	}
	camp, _ := st.Campaign(sp.Campaign.Name)
	n := len(campaignTrials(t, st, sp.Campaign.Name))
	if n >= 200 || n < 16 || !strings.Contains(camp.Stopped, "every range settled") || !strings.Contains(camp.Stopped, "none gained 1% in its last 15 trials") {
		t.Errorf("%d trials, stopped %q", n, camp.Stopped)
	}
	// Each trial measured the ranges not settled before it, and only their sizes.
	trials := campaignTrials(t, st, sp.Campaign.Name)
	narrowed := 0
	for i, tr := range trials {
		sw := searchSweep(sp, Settled(sp, trials[:i]))
		cmd := strings.Join(tr.Command, " ")
		if !strings.Contains(cmd, fmt.Sprintf(" -b %d -e %d ", sw.sizes.Min, sw.sizes.Max)) || len(tr.Rows) != len(sw.sizes.List()) {
			t.Fatalf("trial %d ran %s (%d rows), want the sweep %+v", tr.Number, cmd, len(tr.Rows), sw.sizes)
		}
		for r, rg := range sp.Ranges {
			if _, ok := tr.Scores[rg.Name]; ok != sw.ranges[r] {
				t.Errorf("trial %d: range %s scored %v, measured %v", tr.Number, rg.Name, ok, sw.ranges[r])
			}
		}
		if sw.sizes != sp.Sizes {
			narrowed++
		}
	}
	if narrowed == 0 {
		t.Error("no range settled before the others, so no sweep was narrowed; the test needs another patience")
	}
	// Resuming with a larger budget runs on, and clears the reason.
	sp.Campaign.Patience = 0
	if err := newTuner(t, sp, st).Run(context.Background(), Options{Trials: n + 3}); err != nil {
		t.Fatal(err)
	}
	camp, _ = st.Campaign(sp.Campaign.Name)
	if got := len(campaignTrials(t, st, sp.Campaign.Name)); got != n+3 || camp.Stopped != "" {
		t.Errorf("after resume: %d trials, stopped %q", got, camp.Stopped)
	}
}

// TestSettledRangesKeepTheirBest: once a range settles, trials no longer
// measure it (NaN), and its best score must stay what it was, so that the
// progress shows it and a quick pass within PruneMargin of it is run in
// full: in the campaign, and when it is run again without patience, which
// searches the settled ranges again.
func TestSettledRangesKeepTheirBest(t *testing.T) {
	sp := loadExample(t, 200)
	sp.Campaign.Patience, sp.Campaign.Prune = 15, true
	st := openStore(t)
	for run, o := range []Options{{}, {Trials: 60}} {
		tu := newTuner(t, sp, st)
		var last Progress
		tu.Progress = func(p Progress) {
			for i, b := range p.Best {
				if math.IsNaN(b) {
					t.Fatalf("run %d, trial %d: range %s's best is NaN", run, p.Trial.Number, sp.Ranges[i].Name)
				}
			}
			last = p
		}
		if err := tu.Run(context.Background(), o); err != nil {
			t.Fatal(err)
		}
		best := make([]float64, len(sp.Ranges))
		settledAt, pruned := 0, 0
		for _, tr := range campaignTrials(t, st, sp.Campaign.Name) {
			if tr.State == store.Pruned {
				pruned++
			}
			for i, r := range sp.Ranges {
				v, ok := tr.Scores[r.Name]
				if tr.State == store.Pruned && ok && best[i] > 0 && v >= best[i]*(1-PruneMargin) {
					t.Errorf("run %d: trial %d pruned, though its quick pass in range %s, %.4g, is within %.0f%% of the best, %.4g", run, tr.Number, r.Name, v, 100*PruneMargin, best[i])
				}
				if tr.State == store.Complete && ok {
					best[i] = max(best[i], v)
				}
			}
			if len(tr.Scores) < len(sp.Ranges) && settledAt == 0 {
				settledAt = tr.Number
			}
		}
		if settledAt == 0 || pruned == 0 {
			t.Fatalf("run %d: no trial left a settled range out (%d), or none was pruned (%d); the test needs another patience", run, settledAt, pruned)
		}
		if !slices.Equal(last.Best, best) {
			t.Errorf("run %d: the last progress's best scores are %v, the trials' %v", run, last.Best, best)
		}
		sp.Campaign.Patience = 0 // run again: the settled ranges are searched again
	}
}

func TestPruning(t *testing.T) {
	whole, pruned := loadExample(t, 30), loadExample(t, 30)
	pruned.Campaign.Prune = true
	// Random proposals, many of them far behind: what is pruned must not depend on how good the sampler is.
	whole.Campaign.Sampler, pruned.Campaign.Sampler = "random", "random"
	stWhole, stPruned := openStore(t), openStore(t)
	for _, run := range []struct {
		sp *space.Space
		st *store.Store
	}{{whole, stWhole}, {pruned, stPruned}} {
		if err := newTuner(t, run.sp, run.st).Run(context.Background(), Options{}); err != nil {
			t.Fatal(err)
		}
	}
	var nPruned int
	for _, tr := range campaignTrials(t, stPruned, pruned.Campaign.Name) {
		if tr.State == store.Pruned {
			nPruned++
			if !strings.Contains(tr.FailureReason, "quick pass") || len(tr.Scores) != 3 || !strings.Contains(strings.Join(tr.Command, " "), "-n 2 -w 1") {
				t.Errorf("pruned trial %d: %s %v %v", tr.Number, tr.FailureReason, tr.Scores, tr.Command)
			}
		}
	}
	if nPruned < 3 {
		t.Errorf("%d of 30 trials pruned; many configurations in this space are far behind", nPruned)
	}
	// Pruning must not cost the result: every range within 3% of the unpruned campaign's.
	rw := results.Of(whole, campaignTrials(t, stWhole, whole.Campaign.Name), nil)
	rp := results.Of(pruned, campaignTrials(t, stPruned, pruned.Campaign.Name), nil)
	for i := range rw {
		if rp[i].BestScore < rw[i].BestScore*0.97 {
			t.Errorf("range %s: pruned campaign best %.3g, unpruned %.3g", rw[i].Range.Name, rp[i].BestScore, rw[i].BestScore)
		}
	}
}

// TestRunAgainKeepsItsSampler: run again, a campaign takes the sampler its
// space file names, and keeps the one it started with where the file names
// none, so that a new default does not change a campaign under way.
func TestRunAgainKeepsItsSampler(t *testing.T) {
	sp := loadExample(t, 3)
	if sp.Campaign.SamplerNamed {
		t.Fatal("the example names a sampler; the test needs one that does not")
	}
	st := openStore(t)
	run := func(sp *space.Space, o Options) string {
		t.Helper()
		if err := newTuner(t, sp, st).Run(context.Background(), o); err != nil {
			t.Fatal(err)
		}
		c, err := st.Campaign(sp.Campaign.Name)
		if err != nil {
			t.Fatal(err)
		}
		return c.Sampler
	}
	if got := run(sp, Options{Sampler: "random"}); got != "random" {
		t.Fatalf("started with sampler %q, want random", got)
	}
	sp.Campaign.Trials = 4
	if got := run(sp, Options{}); got != "random" {
		t.Errorf("run again without a sampler named: %q, want the campaign's random", got)
	}
	named := mustParse(t, "named.toml", strings.Replace(string(sp.Source), "[campaign]", "[campaign]\nsampler = \"grid\"", 1))
	named.Campaign.Trials = 5
	if got := run(named, Options{}); got != "grid" {
		t.Errorf("run again with the file naming grid: %q", got)
	}
}

// TestLoweredBudgetBelowTheSearchIsRefused: a campaign run again with a
// budget below the trials its search ran is refused with the least it
// takes (a budget it has overrun: status would count 8 of 3); a budget of
// its search's trials, or above, runs.
func TestLoweredBudgetBelowTheSearchIsRefused(t *testing.T) {
	sp := loadExample(t, 8)
	st := openStore(t)
	var o Options
	if err := newTuner(t, sp, st).Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		trials  int
		refused bool
	}{{3, true}, {7, true}, {8, false}, {9, false}} {
		o.Trials = c.trials
		err := newTuner(t, sp, st).Run(context.Background(), o)
		if refused := err != nil && strings.Contains(err.Error(), "give at least 8 trials"); refused != c.refused || !refused && err != nil {
			t.Errorf("run again with %d trials: %v", c.trials, err)
		}
	}
}

// TestRaisedBudgetSearchesOn: a finished campaign of 4 trials run again
// with 6 runs 2 more search trials, numbered past its simplification's,
// then simplifies again; its simplification trials, numbered from 4, once
// counted as the search's under the new budget, and it ran none. Stopped
// after the first new one and resumed, it runs what the uninterrupted run
// did under the same numbers; resumed once done, it runs nothing.
func TestRaisedBudgetSearchesOn(t *testing.T) {
	sp := loadExample(t, 4)
	simplify := Options{Simplify: true}
	raised := Options{Simplify: true, Trials: 6}
	finishedCampaign := func() *store.Store {
		st := openStore(t)
		if err := newTuner(t, sp, st).Run(context.Background(), simplify); err != nil {
			t.Fatal(err)
		}
		return st
	}
	whole := finishedCampaign()
	before := campaignTrials(t, whole, sp.Campaign.Name)
	last := before[len(before)-1].Number
	if searchDone(before) != 4 || len(before) == 4 {
		t.Fatalf("the 4-trial campaign ran %d search trials of %d; the test needs 4 and a simplification", searchDone(before), len(before))
	}
	if err := newTuner(t, sp, whole).Run(context.Background(), raised); err != nil {
		t.Fatal(err)
	}
	after := campaignTrials(t, whole, sp.Campaign.Name)
	var added []int
	for _, tr := range after[len(before):] {
		if tr.Searched() {
			added = append(added, tr.Number)
		}
	}
	if want := []int{last + 1, last + 2}; !slices.Equal(added, want) || searchDone(after) != 6 {
		t.Errorf("raised to 6: new search trials %v, want %v; %d search trials in all", added, want, searchDone(after))
	}
	if len(after) <= len(before)+2 {
		t.Errorf("raised to 6: %d trials after %d; the new choices were not simplified", len(after), len(before))
	}
	if !reflect.DeepEqual(after[:len(before)], before) {
		t.Error("raised to 6: the trials before it changed")
	}

	st := finishedCampaign()
	ctx, cancel := context.WithCancel(context.Background())
	c := newTuner(t, sp, st)
	c.Progress = func(p Progress) {
		if p.Done == 5 {
			cancel()
		}
	}
	if err := c.Run(ctx, raised); !errors.Is(err, context.Canceled) {
		t.Fatalf("stopped run returned %v", err)
	}
	for _, o := range []Options{raised, {Simplify: true, KeepSettings: true}} {
		if err := newTuner(t, sp, st).Run(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
	want, got := finished(after), finished(campaignTrials(t, st, sp.Campaign.Name))
	if len(got) != len(want) {
		t.Fatalf("stopped and resumed: %d finished trials, %d uninterrupted", len(got), len(want))
	}
	for n, w := range want {
		if g := got[n]; !reflect.DeepEqual(g.Params, w.Params) || g.Phase != w.Phase {
			t.Errorf("stopped and resumed, trial %d: %s %v, uninterrupted %s %v", n, g.Phase, g.Params, w.Phase, w.Params)
		}
	}
}

// TestResumesACampaignHashedByAnOlderNccltune: a space's hash is of its
// Identity, whose lines have gained fields since early versions, so the
// hash an older nccltune stored differs from this one's for the very same
// space: such a campaign is resumed and found, not refused as changed with
// an empty difference.
func TestResumesACampaignHashedByAnOlderNccltune(t *testing.T) {
	sp := loadExample(t, 4)
	st := openStore(t)
	if err := newTuner(t, sp, st).Run(context.Background(), Options{}); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", st.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE campaigns SET space_hash = '0123456789abcdef'`); err != nil {
		t.Fatal(err)
	}
	if name := CampaignName(st, sp); name != sp.Campaign.Name {
		t.Errorf("the campaign found for its space: %q, want %q", name, sp.Campaign.Name)
	}
	if err := newTuner(t, sp, st).Run(context.Background(), Options{Trials: 6}); err != nil {
		t.Fatalf("resume refused: %v", err)
	}
	if got := campaignTrials(t, st, sp.Campaign.Name); len(got) != 6 {
		t.Errorf("resumed campaign has %d trials, want 6", len(got))
	}
}

// TestRaisedBudgetResumedOnAClockBehind: a validated campaign raised from
// 4 trials to 10 and stopped before it simplified again is resumed, its new
// trials having finished on a host whose clock is behind the one that
// validated it: the resume still simplifies and validates the new choices.
// It ran nothing, "validated": the new trials seemed to finish before the
// old validation.
func TestRaisedBudgetResumedOnAClockBehind(t *testing.T) {
	sp := loadExample(t, 4)
	st := openStore(t)
	validated := Options{Simplify: true, ValidateRounds: 2}
	if err := newTuner(t, sp, st).Run(context.Background(), validated); err != nil {
		t.Fatal(err)
	}
	before := len(campaignTrials(t, st, sp.Campaign.Name))
	ctx, cancel := context.WithCancel(context.Background())
	c := newTuner(t, sp, st)
	c.Progress = func(p Progress) {
		if p.Done == 10 {
			cancel()
		}
	}
	raised := validated
	raised.Trials = 10
	if err := c.Run(ctx, raised); !errors.Is(err, context.Canceled) {
		t.Fatalf("stopped run returned %v", err)
	}
	db, err := sql.Open("sqlite", st.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE trials SET finished_at = '2000-01-01T00:00:00Z' WHERE number >= ?`, before); err != nil {
		t.Fatal(err)
	}
	if err := newTuner(t, sp, st).Run(context.Background(), Options{KeepSettings: true}); err != nil {
		t.Fatal(err)
	}
	camp, err := st.Campaign(sp.Campaign.Name)
	if err != nil {
		t.Fatal(err)
	}
	vals, err := st.Validations(camp.ID)
	if err != nil {
		t.Fatal(err)
	}
	trials := campaignTrials(t, st, sp.Campaign.Name)
	for _, r := range results.Of(sp, trials, vals) {
		if r.Best != nil && r.Validation == nil {
			t.Errorf("range %s: its choice, trial %d of %d, was never validated", r.Range.Name, r.Best.Number, len(trials))
		}
	}
}

// TestLoweredBudgetAfterACrash: a campaign killed mid-trial (kill -9, a
// lost node) leaves that trial "running"; run again with a budget of the
// trials that finished, it is not refused as one whose search ran past
// that budget: the crashed trial never finished, as a trial stopped by
// Ctrl-C (interrupted) never did.
func TestLoweredBudgetAfterACrash(t *testing.T) {
	sp := loadExample(t, 12)
	st := openStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	c := newTuner(t, sp, st)
	c.Progress = func(p Progress) {
		if p.Done == 6 {
			cancel()
		}
	}
	if err := c.Run(ctx, Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("stopped run returned %v", err)
	}
	camp, _ := st.Campaign(sp.Campaign.Name)
	last := -1
	for _, tr := range campaignTrials(t, st, sp.Campaign.Name) {
		if tr.State.Finished() {
			last = max(last, tr.Number)
		}
	}
	crashed := &store.Trial{CampaignID: camp.ID, Number: last + 1, Params: map[string]string{"NCCL_ALGO": "Tree"}, Env: []string{}}
	if err := st.StartTrial(crashed); err != nil {
		t.Fatal(err)
	}
	if err := newTuner(t, sp, st).Run(context.Background(), Options{Trials: last + 1, ValidateRounds: 0}); err != nil {
		t.Errorf("run again with a budget of the %d trials that finished: %v", last+1, err)
	}
}

// TestResumeEndsAsTheRunAsked: a campaign run without simplification or
// validation and resumed (KeepSettings) with the flags' defaults neither
// simplifies nor validates, as its run asked; an override does.
func TestResumeEndsAsTheRunAsked(t *testing.T) {
	sp := loadExample(t, 6)
	st := openStore(t)
	if err := newTuner(t, sp, st).Run(context.Background(), Options{}); err != nil {
		t.Fatal(err)
	}
	resumed := Options{KeepSettings: true, Simplify: true, ValidateRounds: DefaultRounds}
	if err := newTuner(t, sp, st).Run(context.Background(), resumed); err != nil {
		t.Fatal(err)
	}
	c, err := st.Campaign(sp.Campaign.Name)
	if err != nil {
		t.Fatal(err)
	}
	vals, err := st.Validations(c.ID)
	if n := len(campaignTrials(t, st, sp.Campaign.Name)); n != 6 || len(vals) != 0 || err != nil {
		t.Fatalf("resumed, a campaign run to end without either ran %d trials of 6 and %d validations (%v)", n, len(vals), err)
	}
	simplify, rounds := true, 2
	resumed.SimplifyOverride, resumed.ValidateRoundsOverride = &simplify, &rounds
	if err := newTuner(t, sp, st).Run(context.Background(), resumed); err != nil {
		t.Fatal(err)
	}
	vals, err = st.Validations(c.ID)
	if n := len(campaignTrials(t, st, sp.Campaign.Name)); n <= 6 || len(vals) == 0 || vals[0].Rounds != 2 || err != nil {
		t.Errorf("resumed with overrides: %d trials, validations %+v (%v); want simplified and validated in 2 rounds", n, vals, err)
	}
}

// nodeLoss runs launches with run, but for those labelled lost, whose node
// fails (or, with failure set, which fail so).
type nodeLoss struct {
	lost    string
	run     Runner
	failure *runner.Failure
}

func (n nodeLoss) Run(ctx context.Context, job runner.Job) runner.Result {
	if job.Plan.Label == n.lost {
		f := cmp.Or(n.failure, &runner.Failure{Kind: runner.FailNode, Reason: "srun: error: Node failure on n2"})
		return runner.Result{Started: time.Now(), Exit: runner.Exit{Code: 143}, Failure: f}
	}
	return n.run.Run(ctx, job)
}

// lostAllocations are the failures that are a lost node's or allocation's,
// not the settings': each stops the campaign with its error.
var lostAllocations = []struct {
	failure runner.Failure
	err     error
}{
	{runner.Failure{Kind: runner.FailNode, Reason: "srun: error: Node failure on n2"}, ErrNodeFailed},
	{runner.Failure{Kind: runner.FailAllocation, Reason: "Slurm job 7 no longer runs (JobState=TIMEOUT)"}, ErrAllocationEnded},
}

// TestNodeFailureStopsWithoutBlame: a trial whose node failed, or whose
// job's allocation ended (its time limit), stops the campaign (the
// allocation is gone) and is kept as interrupted, not failed: the sampler
// never learns it as a bad configuration, and a resume runs it again.
func TestNodeFailureStopsWithoutBlame(t *testing.T) {
	for _, tc := range lostAllocations {
		t.Run(string(tc.failure.Kind), func(t *testing.T) {
			sp := loadExample(t, 8)
			st := openStore(t)
			tu := newTuner(t, sp, st)
			tu.Runner = nodeLoss{lost: "3", run: &runner.Runner{Launcher: runner.Local{}, BaseEnv: runner.BaseEnv()}, failure: &tc.failure}
			if err := tu.Run(context.Background(), Options{}); !errors.Is(err, tc.err) || !strings.Contains(err.Error(), "trial 3: "+tc.failure.Reason) {
				t.Fatalf("err = %v, want %v of trial 3", err, tc.err)
			}
			trials := campaignTrials(t, st, sp.Campaign.Name)
			if len(trials) != 4 || trials[3].State != store.Interrupted || trials[3].FailureKind != string(tc.failure.Kind) {
				t.Fatalf("trials %+v; want 4, the last interrupted (%s)", trials, tc.failure.Kind)
			}
			if err := newTuner(t, sp, st).Run(context.Background(), Options{}); err != nil {
				t.Fatal(err)
			}
			// The interrupted run stays in the store beside its rerun.
			complete := map[int]bool{}
			for _, tr := range campaignTrials(t, st, sp.Campaign.Name) {
				complete[tr.Number] = complete[tr.Number] || tr.State == store.Complete
			}
			for n := range 8 {
				if !complete[n] {
					t.Errorf("trial %d did not complete on resume", n)
				}
			}
		})
	}
}

// TestProbeStoppedWithoutBlame: a node lost, or the job's allocation ended,
// under validation's probe of NCCL's decisions stops the campaign as under
// its measured runs, with no verdict stored, so that a resume (in a new
// allocation) validates again: stored, the verdicts counted the campaign
// validated, and a plugin's rules would lack the decisions the probes
// found none of.
func TestProbeStoppedWithoutBlame(t *testing.T) {
	for _, tc := range lostAllocations {
		t.Run(string(tc.failure.Kind), func(t *testing.T) {
			sp := loadExample(t, 8)
			st := openStore(t)
			tu := newTuner(t, sp, st)
			tu.Runner = nodeLoss{lost: "probe-default", run: &runner.Runner{Launcher: runner.Local{}, BaseEnv: runner.BaseEnv()}, failure: &tc.failure}
			if err := tu.Run(context.Background(), Options{ValidateRounds: 2}); !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.failure.Reason) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			camp, err := st.Campaign(sp.Campaign.Name)
			if err != nil {
				t.Fatal(err)
			}
			if vals, err := st.Validations(camp.ID); err != nil || len(vals) > 0 {
				t.Errorf("verdicts %+v (%v) stored by a validation whose probes did not run", vals, err)
			}
		})
	}
}

// TestNodeFailureDuringValidation: a node that fails under a validation's
// run stops the campaign as one under a trial does, and no validation is
// stored: the verdicts had no runs to judge (all of them "no significant
// difference" on nothing), and a resume validates again.
func TestNodeFailureDuringValidation(t *testing.T) {
	sp := loadExample(t, 8)
	st := openStore(t)
	tu := newTuner(t, sp, st)
	tu.Runner = nodeLoss{lost: "validate-0-1", run: &runner.Runner{Launcher: runner.Local{}, BaseEnv: runner.BaseEnv()}}
	if err := tu.Run(context.Background(), Options{ValidateRounds: 2}); !errors.Is(err, ErrNodeFailed) || !strings.Contains(err.Error(), "Node failure on n2") {
		t.Fatalf("err = %v, want %v", err, ErrNodeFailed)
	}
	camp, _ := st.Campaign(sp.Campaign.Name)
	if vals, err := st.Validations(camp.ID); err != nil || len(vals) != 0 {
		t.Fatalf("validations %+v, %v; want none", vals, err)
	}
	if newTuner(t, sp, st).Finished(Options{ValidateRounds: 2}) {
		t.Error("the campaign counts as finished, its validation lost to the node")
	}
}

// TestValidatedCampaignSimplifiesWhenAsked: a campaign run to its end and
// validated without the simplification, run again asking for it (the
// default), simplifies its choices and validates them again. It ran
// nothing: its choices were validated.
func TestValidatedCampaignSimplifiesWhenAsked(t *testing.T) {
	sp := loadExample(t, 6)
	st := openStore(t)
	if err := newTuner(t, sp, st).Run(context.Background(), Options{ValidateRounds: 2}); err != nil {
		t.Fatal(err)
	}
	if err := newTuner(t, sp, st).Run(context.Background(), Options{Simplify: true, ValidateRounds: 2}); err != nil {
		t.Fatal(err)
	}
	trials := campaignTrials(t, st, sp.Campaign.Name)
	if !slices.ContainsFunc(trials, func(tr store.Trial) bool { return !tr.Searched() }) {
		t.Errorf("run again asking for the simplification: %d trials, none the simplification's", len(trials))
	}
	if !newTuner(t, sp, st).Finished(Options{KeepSettings: true}) {
		t.Error("simplified and validated, the campaign is not finished")
	}
}

// TestStoppedFailingWhileResumed: a campaign stopped by five failures of
// one kind and resumed is not said to have stopped while the resume's
// trial runs; it is again once that trial fails the same way.
func TestStoppedFailingWhileResumed(t *testing.T) {
	var trials []store.Trial
	for n := range 5 {
		trials = append(trials, store.Trial{Number: n, State: store.Failed, FailureKind: "exit"})
	}
	if StoppedFailing(trials, 40) == nil {
		t.Fatal("five failures of one kind: not stopped")
	}
	running := append(slices.Clone(trials), store.Trial{Number: 5, State: store.Running})
	if err := StoppedFailing(running, 40); err != nil {
		t.Errorf("a resume's trial running: %v", err)
	}
	running[5].State, running[5].FailureKind = store.Failed, "exit"
	if StoppedFailing(running, 40) == nil {
		t.Error("the resume's trial failed the same way: not stopped")
	}
}

// fingerprinted runs trials as the default runner does, and set says what they ran on.
type fingerprinted struct {
	runner.Runner
	set func(*runner.Result)
}

func (f fingerprinted) Run(ctx context.Context, job runner.Job) runner.Result {
	res := f.Runner.Run(ctx, job)
	f.set(&res)
	return res
}

// onHardware is a tuner of sp on st whose trials ran on what set says.
func onHardware(t *testing.T, sp *space.Space, st *store.Store, set func(*runner.Result)) *Tuner {
	t.Helper()
	groups, err := runner.Groups(sp.Launcher)
	if err != nil {
		t.Fatal(err)
	}
	tu := newTuner(t, sp, st)
	tu.Runner = fingerprinted{runner.Runner{Launcher: groups[0].Launcher, BaseEnv: runner.BaseEnv()}, set}
	return tu
}

// stopAfter runs tu's campaign and stops it once its search has done trials.
func stopAfter(t *testing.T, tu *Tuner, done int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	tu.Progress = func(p Progress) {
		if p.Done == done {
			cancel()
		}
	}
	if err := tu.Run(ctx, Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("stopped run: %v", err)
	}
}

// TestResumedOnOtherHardwareStops: a campaign resumed where its trials run
// another NCCL (an upgrade between days) stops at the first such trial,
// which is kept out of the choice and runs again on resume where the
// campaign ran; its trials on both would have mixed measurements that do
// not compare.
func TestResumedOnOtherHardwareStops(t *testing.T) {
	sp := loadExample(t, 8)
	st := openStore(t)
	on := func(version string) *Tuner {
		return onHardware(t, sp, st, func(r *runner.Result) { r.Log.Version = version })
	}
	stopAfter(t, on("2.27.5"), 4)
	if err := on("2.28.3").Run(context.Background(), Options{KeepSettings: true}); !errors.Is(err, ErrOtherHardware) || !strings.Contains(err.Error(), "ran NCCL 2.28.3, where trial 0 ran 2.27.5") {
		t.Fatalf("resumed on another NCCL: %v", err)
	}
	for _, tr := range campaignTrials(t, st, sp.Campaign.Name) {
		if tr.State == store.Complete && tr.Fingerprint.NCCL != "2.27.5" {
			t.Errorf("trial %d on NCCL %q completed beside the campaign's", tr.Number, tr.Fingerprint.NCCL)
		}
	}
	if err := on("2.27.5").Run(context.Background(), Options{KeepSettings: true}); err != nil {
		t.Fatalf("resumed where it ran: %v", err)
	}
	if done := searchDone(campaignTrials(t, st, sp.Campaign.Name)); done != 8 {
		t.Errorf("resumed where it ran: %d search trials done, want 8", done)
	}
}

// TestResumedOnOtherRanksRunsAgainWhereItRan: a workload's campaign
// resumed on an allocation of twice the ranks stops at its first trial
// there, recorded as interrupted; resumed where it ran, that trial runs
// again, rather than its stored rank count refusing the resume as a
// finished trial's would (ErrRanks).
func TestResumedOnOtherRanksRunsAgainWhereItRan(t *testing.T) {
	sp, err := space.Load("../examples/sim-2node-ib-workload.toml")
	if err != nil {
		t.Fatal(err)
	}
	sp.Campaign.Trials = 6
	for i := range sp.Workload {
		sp.Workload[i].Ranks = 16
	}
	st := openStore(t)
	on := func(ranks int) *Tuner {
		return onHardware(t, sp, st, func(r *runner.Result) {
			if r.Measurement != nil {
				r.Measurement.Ranks = ranks
			}
		})
	}
	stopAfter(t, on(16), 3)
	if err := on(32).Run(context.Background(), Options{KeepSettings: true}); !errors.Is(err, ErrOtherHardware) {
		t.Fatalf("resumed on twice the ranks: %v", err)
	}
	if err := on(16).Run(context.Background(), Options{KeepSettings: true}); err != nil {
		t.Fatalf("resumed where it ran: %v", err)
	}
	if done := searchDone(campaignTrials(t, st, sp.Campaign.Name)); done != 6 {
		t.Errorf("resumed where it ran: %d search trials done, want 6", done)
	}
}

// TestSamplerRefusedBeforeTheCampaignIsStored: a sampler that cannot search
// the space (a grid of more than its points) is an error before the store
// holds the campaign, which then kept the sampler for every run again.
func TestSamplerRefusedBeforeTheCampaignIsStored(t *testing.T) {
	var values []string
	for i := range 70000 {
		values = append(values, fmt.Sprintf(`"eth%d"`, i))
	}
	sp := mustParse(t, "grid.toml", "[campaign]\nname = \"grid\"\ntrials = 4\nsampler = \"grid\"\n[simulator]\nnodes = 1\n[[param]]\nname = \"NCCL_SOCKET_IFNAME\"\nvalues = ["+strings.Join(values, ", ")+"]\n")
	st := openStore(t)
	if err := newTuner(t, sp, st).Run(context.Background(), Options{}); err == nil || !strings.Contains(err.Error(), "grid has more than") {
		t.Fatalf("a grid of 70,000 points: %v", err)
	}
	if _, err := st.Campaign("grid"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the campaign was stored: %v", err)
	}
}

// TestExhaustedSpaceStops: a space of three configurations (NCCL's
// defaults, Ring, Tree) under a budget of twelve ran each again and again
// to the end of the budget, measuring nothing new; the campaign stops
// once every configuration was tried, saying so, and running it again
// runs nothing, its validation included, under a budget raised too
// (--trials): it has nothing left to try. A setting NCCL takes unset
// (NCCL_IB_QPS_PER_CONNECTION=1) makes no other configuration: with it
// the space still has three, which the samplers run (they read it so),
// where it ran the budget out.
func TestExhaustedSpaceStops(t *testing.T) {
	src := `
[campaign]
name = "three"
trials = 12
seed = 1
sizes = { min = "1M", max = "64M", factor = 4 }
[benchmark]
gpus = 16
[simulator]
nodes = 2
fabric = "ib"
[fixed]
NCCL_NVLS_ENABLE = 0
[[param]]
name = "NCCL_ALGO"
values = ["Ring", "Tree"]
`
	for _, extra := range []string{"", "[[param]]\nname = \"NCCL_IB_QPS_PER_CONNECTION\"\nvalues = [\"default\", \"1\"]\n"} {
		sp, st := mustParse(t, "three.toml", src+extra), openStore(t)
		o := Options{ValidateRounds: 2}
		if err := newTuner(t, sp, st).Run(context.Background(), o); err != nil {
			t.Fatal(err)
		}
		trials := campaignTrials(t, st, "three")
		searched := 0
		for _, tr := range trials {
			if tr.Searched() {
				searched++
			}
		}
		camp, _ := st.Campaign("three")
		if searched != 4 || !strings.Contains(camp.Stopped, "every one of the space's 3 configurations was tried") {
			t.Errorf("%q: %d search trials, stopped %q; want NCCL's defaults twice, Ring and Tree, and a stop", extra, searched, camp.Stopped)
		}
		runsNothingAgain(t, sp, st, o, 20)
	}
}

// runsNothingAgain fails t unless the finished campaign of sp in st, run
// again with o and then with a budget raised to trials, runs no trial and
// no validation.
func runsNothingAgain(t *testing.T, sp *space.Space, st *store.Store, o Options, trials int) {
	t.Helper()
	name := sp.Campaign.Name
	before := campaignTrials(t, st, name)
	camp, _ := st.Campaign(name)
	vals, _ := st.Validations(camp.ID)
	raised := o
	raised.Trials = trials
	for _, again := range []Options{o, raised} {
		if err := newTuner(t, sp, st).Run(context.Background(), again); err != nil {
			t.Fatal(err)
		}
		valsAgain, _ := st.Validations(camp.ID)
		if trialsAgain := campaignTrials(t, st, name); len(trialsAgain) != len(before) || len(valsAgain) != len(vals) {
			t.Errorf("%s run again with --trials %d: %d trials and %d validations, before %d and %d", name, again.Trials, len(trialsAgain), len(valsAgain), len(before), len(vals))
		}
	}
}

// TestExhaustedGridStops: the grid visits four values of an integer range,
// so a space of more configurations than its points is never exhausted,
// and a budget past the grid's points ran them again and again to its end
// (here 40 trials, each of the grid's eight points run four or five
// times), measuring nothing new. The campaign stops once every point was
// tried, saying so, and running it again, under a budget raised too, runs
// nothing.
func TestExhaustedGridStops(t *testing.T) {
	sp, st := mustParse(t, "grid.toml", gridSpace(40, "")), openStore(t)
	o := Options{ValidateRounds: 2}
	if err := newTuner(t, sp, st).Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	runsNothingAgain(t, sp, st, o, 60)
	runs := map[string]int{}
	for _, tr := range campaignTrials(t, st, "grid") {
		if tr.Searched() && tr.Number >= sp.DefaultsTrials() {
			runs[sp.Reading(tr.Params)]++
		}
	}
	for config, n := range runs {
		if n > 1 {
			t.Errorf("%s ran %d times", config, n)
		}
	}
	if camp, _ := st.Campaign("grid"); !strings.Contains(camp.Stopped, "grid's 8 points") {
		t.Errorf("stopped %q, want the grid's points all tried", camp.Stopped)
	}
}

// gridSpace is a grid campaign of trials trials, campaign settings more
// added, over the algorithm and NCCL_MIN_CTAS 1-8 (eight grid points) on a
// simulated two-node IB cluster.
func gridSpace(trials int, more string) string {
	return fmt.Sprintf(`
[campaign]
name = "grid"
trials = %d
seed = 1
sampler = "grid"
%ssizes = { min = "1M", max = "64M", factor = 4 }
[benchmark]
gpus = 16
[simulator]
nodes = 2
fabric = "ib"
[fixed]
NCCL_NVLS_ENABLE = 0
[[param]]
name = "NCCL_ALGO"
values = ["Ring", "Tree"]
[[param]]
name = "NCCL_MIN_CTAS"
min = 1
max = 8
`, trials, more)
}

// TestExhaustedSamplerResumesWithAnother: a campaign stopped because its
// sampler had nothing left to propose (the grid's points all tried) has
// not converged, whatever its patience: resumed with another sampler, which
// its stop names, it searches the configurations off the grid. It was kept
// as one whose ranges had settled, and ran nothing, and the stop named no
// way on.
func TestExhaustedSamplerResumesWithAnother(t *testing.T) {
	sp, st := mustParse(t, "grid.toml", gridSpace(30, "patience = 25\n")), openStore(t)
	if err := newTuner(t, sp, st).Run(context.Background(), Options{}); err != nil {
		t.Fatal(err)
	}
	before := len(campaignTrials(t, st, "grid"))
	if camp, _ := st.Campaign("grid"); !strings.Contains(camp.Stopped, "grid's 8 points") || !strings.Contains(camp.Stopped, "tpe-gp") {
		t.Fatalf("stopped %q, want the grid's points all tried, and the sampler that searches on", camp.Stopped)
	}
	if err := newTuner(t, sp, st).Run(context.Background(), Options{KeepSettings: true, Sampler: "tpe-gp"}); err != nil {
		t.Fatal(err)
	}
	if after := len(campaignTrials(t, st, "grid")); after <= before {
		t.Errorf("resumed with tpe-gp: %d trials, as before; want the search to go on off the grid", after)
	}
}

// sweeps records the message sizes of each launch, by its label.
type sweeps struct {
	Runner
	sizes map[string]space.Sizes
}

func (s *sweeps) Run(ctx context.Context, job runner.Job) runner.Result {
	s.sizes[job.Plan.Label] = job.Plan.Sizes
	return s.Runner.Run(ctx, job)
}

// TestQuickPassLeavesSettledRangesOut: once a range has settled, a quick
// pass measures the sweep the full run would, not the settled range's
// sizes: those cost what settling saves, and a quick score there kept a
// trial alive for a full run that does not measure the range at all.
func TestQuickPassLeavesSettledRangesOut(t *testing.T) {
	sp := loadExample(t, 40)
	sp.Campaign.Patience, sp.Campaign.Prune = 5, true
	st := openStore(t)
	tu := newTuner(t, sp, st)
	rec := &sweeps{Runner: &runner.Runner{Launcher: runner.Local{}, BaseEnv: runner.BaseEnv()}, sizes: map[string]space.Sizes{}}
	tu.Runner = rec
	if err := tu.Run(context.Background(), Options{}); err != nil {
		t.Fatal(err)
	}
	narrowed := false
	for _, tr := range campaignTrials(t, st, sp.Campaign.Name) {
		n := strconv.Itoa(tr.Number)
		quick, ok := rec.sizes[n+"-quick"]
		if !ok {
			continue
		}
		narrowed = narrowed || quick != sp.Sizes
		if full, ok := rec.sizes[n]; ok && full != quick {
			t.Errorf("trial %d: quick pass over %v, full run over %v", tr.Number, quick, full)
		}
		for _, r := range sp.Ranges {
			if _, ok := tr.Scores[r.Name]; ok && tr.State == store.Pruned && !slices.ContainsFunc(quick.List(), r.Contains) {
				t.Errorf("pruned trial %d scores range %s, which its quick pass left out", tr.Number, r.Name)
			}
		}
	}
	if !narrowed {
		t.Fatal("no quick pass ran after a range settled; the test needs another patience")
	}
}

// TestRaisedBudgetStoppedBeforeValidationEndsAsUninterrupted: a validated
// campaign raised to a budget whose search keeps its choices, stopped
// as its validation begins and resumed, ends as the uninterrupted one.
// The resume found the choices validated and measured nothing, while the
// uninterrupted run validated them all again: its verdicts were another
// batch's, and a stop decided which.
func TestRaisedBudgetStoppedBeforeValidationEndsAsUninterrupted(t *testing.T) {
	sp := loadExample(t, 12)
	validated := Options{Simplify: true, ValidateRounds: 2}
	raised := validated
	raised.Trials = 22
	verdicts := func(st *store.Store) []string {
		t.Helper()
		var out []string
		for _, v := range campaignValidations(t, st, sp.Campaign.Name) {
			out = append(out, fmt.Sprintf("%s %s %d %s", v.Range, v.Config, v.Rounds, v.Verdict))
		}
		return out
	}
	whole := openStore(t)
	if err := newTuner(t, sp, whole).Run(context.Background(), validated); err != nil {
		t.Fatal(err)
	}
	st := copyStore(t, whole)
	before := verdicts(whole)
	if err := newTuner(t, sp, whole).Run(context.Background(), raised); err != nil {
		t.Fatal(err)
	}
	if !validatedAs(sp, campaignTrials(t, whole, sp.Campaign.Name), campaignValidations(t, whole, sp.Campaign.Name)[:len(before)], 2) {
		t.Fatal("the raised search chose anew; the test needs a search that keeps its choices")
	}

	ctx, cancel := context.WithCancel(context.Background())
	c := newTuner(t, sp, st)
	c.OnValidationRun = func(store.ValidationRun, int, int) { cancel() }
	if err := c.Run(ctx, raised); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	if err := newTuner(t, sp, st).Run(context.Background(), Options{KeepSettings: true}); err != nil {
		t.Fatal(err)
	}
	if got, want := verdicts(st), verdicts(whole); !slices.Equal(got, want) {
		t.Errorf("stopped as its validation began and resumed, verdicts\n%s\nuninterrupted\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// campaignValidations are the verdicts of campaign name, as stored.
func campaignValidations(t *testing.T, st *store.Store, name string) []store.Validation {
	t.Helper()
	c, err := st.Campaign(name)
	if err != nil {
		t.Fatal(err)
	}
	vals, err := st.Validations(c.ID)
	if err != nil {
		t.Fatal(err)
	}
	return vals
}

// TestExhaustedStopsAsStored: a stop is told a sampler's exhaustion by the
// text of search.ErrExhausted in the stored reason (the store holds no
// other mark of it), so that text is the stores' as much as the
// sampler's: reworded, a grid campaign stored before would read as
// converged again, and its resume with another sampler run nothing. The
// reasons as nccltune stored them since a1d5a45, and a patience stop,
// whose range names cannot hold the text.
func TestExhaustedStopsAsStored(t *testing.T) {
	for stopped, want := range map[string]bool{
		"stopped after trial 7: nothing left to propose: each of the grid's 8 points (4 values of each integer range) was tried":                                                            true,
		"stopped after trial 7: nothing left to propose: each of the grid's 8 points (4 values of each integer range) was tried; another sampler (tpe-gp) searches the values between them": true,
		"stopped after trial 3: nothing left to propose: every configuration NCCL runs as written was tried (it overrides the others' settings)":                                            true,
		"stopped after trial 30: every range settled (patience): small after trial 12, medium after trial 20, large after trial 30; none gained 1% in its last 10 trials":                   false,
		"stopped after trial 3: every one of the space's 3 configurations was tried":                                                                                                        false,
	} {
		if got := samplerExhausted(store.Campaign{Stopped: stopped}); got != want {
			t.Errorf("%q: exhausted %v, want %v", stopped, got, want)
		}
	}
}
