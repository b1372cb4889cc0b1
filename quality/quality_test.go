package quality

import (
	"context"
	"errors"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nccltune/nccltune/internal/safego"
	"github.com/nccltune/nccltune/space"
)

// TestSearchQuality runs a small version of `nccltune bench search`. Runs are
// seeded, so the assertions are deterministic; they would fail if the
// default search stopped learning from its trials or the regret bookkeeping
// broke.
func TestSearchQuality(t *testing.T) {
	scen := []Scenario{Scenarios[1], Scenarios[2]} // 2 and 8 nodes over IB
	res, truths, err := Measure(context.Background(), scen, Options{Samplers: []string{"tpe-gp", "random"}, Seeds: 5, Trials: 60, Noise: 0.02, NoiseTarget: space.DefaultNoiseTarget, Dir: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range scen {
		tr := truths[s.Name]
		if tr.Points < 1000 || tr.Optimum[2] <= 0 {
			t.Errorf("%s: truth %+v", s.Name, tr)
		}
	}
	for _, r := range res {
		for i := range r.Ranges {
			for n := 2; n <= 60; n++ {
				if r.MedianRegret(i, n) > r.MedianRegret(i, n-1)+0.05 {
					t.Errorf("%s/%s: regret of range %s jumped at trial %d", r.Scenario, r.Sampler, r.Ranges[i], n)
				}
			}
		}
		if r.MedianSeconds(50) <= r.MedianSeconds(10) {
			t.Errorf("%s/%s: benchmark time does not add up", r.Scenario, r.Sampler)
		}
	}
	for i := 0; i < len(res); i += 2 {
		def, random := res[i], res[i+1]
		if def.WorstMedianRegret(50) > 0.03 || def.WorstMedianRegret(50) > random.WorstMedianRegret(50) {
			t.Errorf("%s: the default's regret at 50 trials %.3f, random %.3f", def.Scenario, def.WorstMedianRegret(50), random.WorstMedianRegret(50))
		}
		// The targets of issue 7: within 3% in at most a third of random search's trials.
		if def.TrialsToWithin(0.03)*3 > random.TrialsToWithin(0.03) {
			t.Errorf("%s: the default within 3%% after %.0f trials, random search after %.0f", def.Scenario, def.TrialsToWithin(0.03), random.TrialsToWithin(0.03))
		}
	}
	path := filepath.Join(t.TempDir(), "quality.png")
	if err := Plot(res, []FamilyResults{{"generated landscapes", res[2:]}}, 60, path); err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(path)
	defer f.Close()
	if _, err := png.Decode(f); err != nil {
		t.Error(err)
	}
}

// TestScenarioNamedTwiceRunsTwice: a scenario and a strategy named twice (or
// a scenario named and in a family, measured into the same folder) run
// their campaigns in full each time, instead of the second resuming the
// first's finished campaign and recording no trial.
func TestScenarioNamedTwiceRunsTwice(t *testing.T) {
	dir := t.TempDir()
	o := Options{Samplers: []string{"random", "random"}, Seeds: 1, Trials: 5, Noise: 0.02, Dir: dir}
	twice := []Scenario{Landscape(1), Landscape(1)}
	first, _, err := Measure(context.Background(), twice, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	again, _, err := Measure(context.Background(), twice[:1], o, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range append(first, again...) {
		for _, run := range r.Runs {
			for i, series := range run.Regret {
				if len(series) != o.Trials {
					t.Fatalf("%s/%s range %d: %d trials scored, want %d", r.Scenario, r.Sampler, i, len(series), o.Trials)
				}
			}
		}
	}
}

// TestTrialsToWithinOfAStoppedCampaign: a campaign that stopped before its
// budget (patience, or five failures alike) and never came within 3% counts
// as never, past the budget, not as the trial after its last.
func TestTrialsToWithinOfAStoppedCampaign(t *testing.T) {
	r := Result{Ranges: []string{"a"}, Trials: 10, Runs: []Run{{Regret: [][]float64{{0.5, 0.2, 0.1}}, Seconds: []float64{1, 2, 3}}}}
	if got := r.TrialsToWithin(Tolerance); got != 11 {
		t.Errorf("a 10-trial campaign that stopped after 3, 10%% off: within 3%% after %g trials, want 11 (never)", got)
	}
}

// TestTrialsToWithinNeverIsNoCount: never (the budget + 1) marks a campaign
// that did not come within 3%, not a count, so a median or 90th percentile
// that would lie between it and a count is never too, not a count made up
// between the two (one seed within after 4 of 10 trials, the other never:
// not 7.5).
func TestTrialsToWithinNeverIsNoCount(t *testing.T) {
	within := func(n int) Run {
		run := Run{Regret: [][]float64{make([]float64, 10)}, Seconds: make([]float64, 10)}
		for i := range run.Regret[0] {
			run.Regret[0][i] = 0.1
			if i >= n-1 {
				run.Regret[0][i] = 0
			}
		}
		return run
	}
	never := within(11)
	r := Result{Ranges: []string{"a"}, Trials: 10, Runs: []Run{within(4), never}}
	if got := r.TrialsToWithin(Tolerance); got != 11 {
		t.Errorf("median of 4 and never: %g, want 11 (never)", got)
	}
	r.Runs = append(r.Runs, within(6))
	if got := r.TrialsToWithin(Tolerance); got != 6 {
		t.Errorf("median of 4, 6 and never: %g, want 6", got)
	}
	// Over a family: within after 2, 3 and never; the 90th percentile lies
	// past the last count.
	var res []Result
	for i, n := range []int{2, 3, 11} {
		res = append(res, Result{Scenario: fmt.Sprint("landscape-", i+1), Sampler: "tpe", Ranges: []string{"a"}, Trials: 10, Runs: []Run{within(n)}})
	}
	if got := Family(res, nil)[0].TrialsTo3; got != (Spread{3, 11}) {
		t.Errorf("spread of 2, 3 and never: %+v, want {3 11}", got)
	}
}

// TestTrialsToWithinStaysWithin: the count is the trials after which the
// choice stays within 3% for the rest of the campaign, not the first that
// touched it: a choice within after 2 trials that a noisy measurement then
// moves 10% off until trial 5 is within after 5.
func TestTrialsToWithinStaysWithin(t *testing.T) {
	r := Result{Ranges: []string{"a", "b"}, Trials: 6, Runs: []Run{{
		Regret:  [][]float64{{0.2, 0, 0.1, 0.1, 0, 0}, {0.2, 0.01, 0.01, 0.01, 0.01, 0.02}},
		Seconds: make([]float64, 6),
	}}}
	if got := r.TrialsToWithin(Tolerance); got != 5 {
		t.Errorf("within after 2 trials, off after 3 and 4, within from 5: %g, want 5", got)
	}
	r.Runs[0].Regret[1][5] = 0.04
	if got := r.TrialsToWithin(Tolerance); got != 7 {
		t.Errorf("off after the last trial: %g, want 7 (never)", got)
	}
}

// TestScenarioNamedTwiceIsRefused: a scenario named twice, if in two
// spellings (landscape-01 is landscape-1), is refused: its campaigns
// would repeat the first's and weigh twice in the medians over scenarios.
func TestScenarioNamedTwiceIsRefused(t *testing.T) {
	for _, names := range [][]string{{"2node-tcp", "2node-tcp"}, {"landscape-1", "landscape-01"}, {"smooth-2", "smooth-+2"}} {
		if _, err := ScenariosNamed(names); err == nil || !strings.Contains(err.Error(), "twice") {
			t.Errorf("%v: %v", names, err)
		}
	}
	if s, err := ScenariosNamed([]string{"landscape-1", "smooth-1"}); err != nil || len(s) != 2 {
		t.Errorf("landscape-1 and smooth-1: %v, %v", s, err)
	}
}

// TestParallelRaisesAPanicInTheCaller: a panic of one of parallel's calls
// (a bug of the tuner's, under bench) is raised in parallel's caller, where
// runApp recovers it (exit 70), not in its goroutine, where Go's runtime
// ended the process with exit status 2.
func TestParallelRaisesAPanicInTheCaller(t *testing.T) {
	defer func() {
		if p, ok := recover().(safego.Panic); !ok || p.Value != "boom" {
			t.Errorf("recovered %v, want the call's panic", p)
		}
	}()
	parallel(4, 2, func(i int) {
		if i == 2 {
			panic("boom")
		}
	})
	t.Error("parallel returned")
}

// TestStoppedBeforeEnumerating: a benchmark stopped (a signal) while its
// scenarios are prepared enumerates none more, each seconds of CPU, but
// returns at once: bench search took 39 s to stop on a signal 1 s into
// the preparation of 20 landscapes.
func TestStoppedBeforeEnumerating(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	scenarios := []Scenario{Landscape(9001), Smooth(9002)}
	o := Options{Samplers: []string{"random"}, Seeds: 1, Trials: 3, Noise: 0.02, Dir: t.TempDir()}
	if _, _, err := Measure(ctx, scenarios, o, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Measure stopped before it began: %v", err)
	}
	if _, err := MeasureGroups(ctx, scenarios, []int{2}, o, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("MeasureGroups stopped before it began: %v", err)
	}
	prepares.Lock()
	defer prepares.Unlock()
	for key := range prepares.m {
		for _, s := range scenarios {
			if strings.HasPrefix(key, s.Name+"\x00") {
				t.Errorf("%s was enumerated after the benchmark stopped", s.Name)
			}
		}
	}
}
