package results

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/nccltune/nccltune/space"
	"github.com/nccltune/nccltune/store"
)

func TestJudge(t *testing.T) {
	rg := space.Range{Name: "r"}
	best := &store.Trial{Number: 7}
	ok := func(round int, name string, score float64) store.ValidationRun {
		return store.ValidationRun{Round: round, Arm: name, State: store.Complete, Scores: map[string]float64{"r": score}}
	}
	pairs := func(def, tuned []float64) []store.ValidationRun {
		var runs []store.ValidationRun
		for i := range def {
			runs = append(runs, ok(i, "default", def[i]), ok(i, "trial 7", tuned[i]))
		}
		return runs
	}
	clear := pairs([]float64{100, 101, 99, 100}, []float64{130, 131, 128, 129})
	noisy := pairs([]float64{100, 110, 95, 105}, []float64{104, 101, 99, 107})
	failed := append(pairs([]float64{100, 100}, []float64{120, 120}), store.ValidationRun{Round: 2, Arm: "trial 7", State: store.Failed, Failure: "wrong: 3 wrong elements"})
	unconfirmed := pairs([]float64{100, 100}, []float64{120, 121})
	unconfirmed[1].Unconfirmed = []string{"NCCL_PROTO"}
	for _, tc := range []struct {
		name    string
		runs    []store.ValidationRun
		rounds  int
		verdict string
		reason  string
	}{
		{"clear gain", clear, 4, "tuned", "gain +29.5%"},
		{"noise", noisy, 4, "default", "not significant"},
		{"failed run", failed, 3, "default", "failed in round 2 (wrong: 3 wrong elements)"},
		{"unconfirmed", unconfirmed, 2, "default", "did not show it reading NCCL_PROTO"},
	} {
		var def, tuned []store.ValidationRun
		for _, run := range tc.runs {
			if run.Arm == "default" {
				def = append(def, run)
			} else {
				tuned = append(tuned, run)
			}
		}
		v := Judge(RangeResult{Range: rg, Best: best}, tuned, def, tc.rounds)
		if v.Verdict != tc.verdict || !strings.Contains(v.Reason, tc.reason) {
			t.Errorf("%s: %s (%s); want %s containing %q", tc.name, v.Verdict, v.Reason, tc.verdict, tc.reason)
		}
	}
	// The means beside the gain are of its kind: runs of 50 and 200 against 100 and 100 gain nothing and average 100.
	if v := Judge(RangeResult{Range: rg, Best: best}, []store.ValidationRun{ok(0, "trial 7", 50), ok(1, "trial 7", 200)},
		[]store.ValidationRun{ok(0, "default", 100), ok(1, "default", 100)}, 2); math.Abs(v.TunedMean-100) > 1e-9 || math.Abs(v.Gain) > 1e-9 {
		t.Errorf("tuned mean %g beside a gain of %g", v.TunedMean, v.Gain)
	}
	if v := Judge(RangeResult{Range: rg, Best: &store.Trial{Number: 0}}, nil, clear, 4); v.Verdict != "default" || !math.IsNaN(v.Gain) {
		t.Errorf("best is the default: %+v", v)
	}
}

// TestPairedGainNullRate: a configuration no better than NCCL's defaults,
// both with 2% noise, passes a range's validation (the 95% interval above
// zero) 2.5% of the time, whatever the rounds: the rate the README states.
func TestPairedGainNullRate(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, rounds := range []int{2, 5, 10} {
		const validations = 40000
		passed := 0
		for range validations {
			a, b := make([]float64, rounds), make([]float64, rounds)
			for i := range a {
				a[i], b[i] = 100*math.Exp(0.02*rng.NormFloat64()), 100*math.Exp(0.02*rng.NormFloat64())
			}
			if _, low, _ := PairedGain(a, b); low > 0 {
				passed++
			}
		}
		if rate := float64(passed) / validations; math.Abs(rate-0.025) > 0.003 {
			t.Errorf("%d rounds: no gain validated in %.2f%% of validations, want 2.5%%", rounds, 100*rate)
		}
	}
}

// TestJudgeSlowerThanDefaults: a configuration whose whole 95% interval lies
// below zero is significantly slower than NCCL's defaults; its verdict keeps
// the defaults, and says so, where it said "gain not significant".
func TestJudgeSlowerThanDefaults(t *testing.T) {
	rg := space.Range{Name: "r"}
	var def, tuned []store.ValidationRun
	for i, s := range [][2]float64{{100, 80}, {101, 82}, {99, 79}, {100, 81}} {
		def = append(def, store.ValidationRun{Round: i, Arm: "default", State: store.Complete, Scores: map[string]float64{"r": s[0]}})
		tuned = append(tuned, store.ValidationRun{Round: i, Arm: "trial 7", State: store.Complete, Scores: map[string]float64{"r": s[1]}})
	}
	v := Judge(RangeResult{Range: rg, Best: &store.Trial{Number: 7}}, tuned, def, 4)
	if v.Verdict != "default" || !(v.CIHigh < 0) || strings.Contains(v.Reason, "not significant") || !strings.Contains(v.Reason, "slower than NCCL's defaults") {
		t.Errorf("a configuration 20%% slower: %s (%s), want the defaults kept as significantly slower", v.Verdict, v.Reason)
	}
}

// TestJudgeOneRound: one round has a gain but no variance, so no interval:
// the verdict keeps NCCL's defaults as not significant, where Student's t
// of no degree of freedom panicked.
func TestJudgeOneRound(t *testing.T) {
	rg := space.Range{Name: "r"}
	def := []store.ValidationRun{{Arm: "default", State: store.Complete, Scores: map[string]float64{"r": 100}}}
	tuned := []store.ValidationRun{{Arm: "trial 7", State: store.Complete, Scores: map[string]float64{"r": 150}}}
	v := Judge(RangeResult{Range: rg, Best: &store.Trial{Number: 7}}, tuned, def, 1)
	if v.Verdict != "default" || math.Abs(v.Gain-0.5) > 1e-12 || !math.IsNaN(v.CILow) || !math.IsNaN(v.CIHigh) {
		t.Errorf("one round: %s, gain %v (%v to %v): %s; want the defaults kept, +50%% with no interval", v.Verdict, v.Gain, v.CILow, v.CIHigh, v.Reason)
	}
	if g, low, high := PairedGain(nil, nil); !math.IsNaN(g) || !math.IsNaN(low) || !math.IsNaN(high) {
		t.Errorf("no round: gain %v (%v to %v), want NaN", g, low, high)
	}
}

// TestJudgeWhereTheDefaultsFail: where NCCL's defaults fail by their
// settings in validation (LL128 corrupting data over sockets, NCCL's own
// choice) and the tuned configuration ran correctly in every round, the
// range keeps it: keeping the defaults exported what validation saw give
// wrong data. A launch of the defaults that started no rank says nothing
// of them, and nothing is compared.
func TestJudgeWhereTheDefaultsFail(t *testing.T) {
	rg := space.Range{Name: "r"}
	best := &store.Trial{Number: 7}
	tuned := []store.ValidationRun{
		{Round: 0, Arm: "trial 7", State: store.Complete, Scores: map[string]float64{"r": 120}},
		{Round: 1, Arm: "trial 7", State: store.Complete, Scores: map[string]float64{"r": 121}},
	}
	for _, tc := range []struct {
		failure, verdict, reason string
	}{
		{"wrong: 3 wrong elements at 65536 bytes", "tuned", "NCCL's defaults failed in round 1 (wrong: 3 wrong elements at 65536 bytes)"},
		{"launch: srun: step creation temporarily disabled", "default", "nothing to compare with"},
		{"timeout: ran past 10m0s", "tuned", "NCCL's defaults failed in round 1 (timeout"},
		// One round's garbled output or a crash says too little of the defaults.
		{"unparsable: no result rows in the benchmark output", "default", "nothing to compare with"},
		{"implausible: 9000 GB/s", "default", "nothing to compare with"},
		{"exit: exit status 1", "default", "nothing to compare with"},
	} {
		defaults := []store.ValidationRun{
			{Round: 0, Arm: "default", State: store.Complete, Scores: map[string]float64{"r": 100}},
			{Round: 1, Arm: "default", State: store.Failed, Failure: tc.failure},
		}
		v := Judge(RangeResult{Range: rg, Best: best}, tuned, defaults, 2)
		if v.Verdict != tc.verdict || !strings.Contains(v.Reason, tc.reason) || !math.IsNaN(v.Gain) {
			t.Errorf("defaults failing as %q: %s (%s), gain %g; want %s containing %q", tc.failure, v.Verdict, v.Reason, v.Gain, tc.verdict, tc.reason)
		}
	}
	// A tuned run that failed still keeps the defaults, failing or not.
	failed := append(tuned[:1:1], store.ValidationRun{Round: 1, Arm: "trial 7", State: store.Failed, Failure: "hang: timeout"})
	defaults := []store.ValidationRun{{Round: 0, Arm: "default", State: store.Failed, Failure: "wrong: 1 wrong element"}, {Round: 1, Arm: "default", State: store.Complete, Scores: map[string]float64{"r": 100}}}
	if v := Judge(RangeResult{Range: rg, Best: best}, failed, defaults, 2); v.Verdict != "default" {
		t.Errorf("both failing: %s (%s)", v.Verdict, v.Reason)
	}
}

// TestWithHeldKeepsAFailedConfigurationOut: a configuration that hung in a
// validation run is held to NCCL's defaults in a range whose latest verdict
// on it kept it (one from before it hung) or where none judged it; where
// the latest already keeps NCCL's defaults, its reason stands. A run that
// failed not by its settings (a node's failure) holds nothing.
func TestWithHeldKeepsAFailedConfigurationOut(t *testing.T) {
	sp, err := space.Parse("s.toml", []byte("[benchmark]\nbinary = \"x\"\n[[range]]\nname = \"a\"\nmin = \"8\"\nmax = \"1M\"\n[[range]]\nname = \"b\"\nmin = \"1M\"\nmax = \"1G\"\n[[param]]\nname = \"NCCL_ALGO\"\nvalues = [\"default\", \"Ring\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	def, ring := space.Assignment{"NCCL_ALGO": space.Unset}, space.Assignment{"NCCL_ALGO": "Ring"}
	trials := []store.Trial{
		{Number: 0, State: store.Complete, Params: def, Env: sp.Env(def), Scores: map[string]float64{"a": 1, "b": 1}},
		{Number: 1, State: store.Complete, Params: ring, Env: sp.Env(ring), Scores: map[string]float64{"a": 2, "b": 2}},
	}
	key := sp.Key(ring)
	tuned := store.Validation{Range: "b", Candidate: 1, Config: key, Rounds: 5, Verdict: "tuned", Reason: "gain +100%"}
	failedA := store.Validation{Range: "a", Candidate: 1, Config: key, Rounds: 1, Verdict: "default", Reason: "the tuned configuration failed in round 2 (timeout: hung)"}
	hung := store.ValidationRun{Round: 2, Arm: "trial 1", Env: sp.Env(ring), State: store.Failed, Failure: "timeout: hung"}
	node := hung
	node.Failure = "node: node-b went down"
	// A failed run of NCCL's defaults, of an environment of their own (as a
	// DDP knob's configuration has), and of another trial's arm.
	defaults, other := hung, hung
	defaults.Arm, other.Arm = "default", "trial 5"
	for _, tc := range []struct {
		name   string
		vals   []store.Validation
		run    store.ValidationRun
		reason map[string]string // per range, "" where tuned
	}{
		{"kept before it hung", []store.Validation{tuned, failedA}, hung, map[string]string{"a": "failed in round 2", "b": "failed in an earlier validation, in its round 2 (timeout: hung)"}},
		{"never judged", []store.Validation{failedA}, hung, map[string]string{"a": "failed in round 2", "b": "failed in an earlier validation"}},
		{"a node's failure", []store.Validation{tuned}, node, map[string]string{"a": "", "b": ""}},
		{"NCCL's defaults' failure", []store.Validation{tuned}, defaults, map[string]string{"a": "", "b": ""}},
		{"another trial's failure", []store.Validation{tuned}, other, map[string]string{"a": "", "b": ""}},
	} {
		for _, r := range Of(sp, trials, WithHeld(sp, trials, tc.vals, []store.ValidationRun{tc.run})) {
			want := tc.reason[r.Range.Name]
			switch {
			case want == "" && !r.Tuned():
				t.Errorf("%s: range %s keeps NCCL's defaults: %s", tc.name, r.Range.Name, r.Describe())
			case want != "" && (r.Tuned() || r.Validation == nil || !strings.Contains(r.Validation.Reason, want)):
				t.Errorf("%s: range %s: %s, want NCCL's defaults for %q", tc.name, r.Range.Name, r.Describe(), want)
			}
		}
	}
}

// TestVerdictsHoldForSpellingsNCCLReadsAlike: a campaign run before
// results read NCCL_IB_QPS_PER_CONNECTION=1 as unset holds trial 1 of it
// and trial 2 without it, two configurations then: validation rejected
// trial 2's, the choice, and a validation run of trial 1 failed by its
// settings. Read as one configuration now, represented by trial 1, both
// verdicts concern it: neither was found (they name the other spelling),
// and the rejected configuration was exported as tuned.
func TestVerdictsHoldForSpellingsNCCLReadsAlike(t *testing.T) {
	sp, err := space.Parse("s.toml", []byte("[benchmark]\nbinary = \"x\"\n[[range]]\nname = \"a\"\nmin = \"8\"\nmax = \"1M\"\n[[param]]\nname = \"NCCL_ALGO\"\nvalues = [\"default\", \"Ring\"]\n[[param]]\nname = \"NCCL_IB_QPS_PER_CONNECTION\"\nmin = 1\nmax = 8\n"))
	if err != nil {
		t.Fatal(err)
	}
	def, ring := space.Assignment{"NCCL_ALGO": space.Unset}, space.Assignment{"NCCL_ALGO": "Ring"}
	spelled := space.Assignment{"NCCL_ALGO": "Ring", "NCCL_IB_QPS_PER_CONNECTION": "1"}
	trials := []store.Trial{
		{Number: 0, State: store.Complete, Params: def, Env: sp.Env(def), Scores: map[string]float64{"a": 1}},
		{Number: 1, State: store.Complete, Params: spelled, Env: sp.Env(spelled), Scores: map[string]float64{"a": 2}},
		{Number: 2, State: store.Complete, Params: ring, Env: sp.Env(ring), Scores: map[string]float64{"a": 2}},
	}
	rejected := store.Validation{Range: "a", Candidate: 2, Config: sp.Key(ring), Rounds: 5, Verdict: "default", Reason: "loses 3%"}
	r := Of(sp, trials, []store.Validation{rejected})[0]
	if r.Validation == nil || r.Tuned() {
		t.Errorf("rejected by validation as trial 2: %s", r.Describe())
	}
	failed := store.ValidationRun{Round: 1, Arm: "trial 2", Env: sp.Env(ring), State: store.Failed, Failure: "timeout: hung"}
	for _, run := range []store.ValidationRun{failed, {Round: 1, Arm: "job", Env: sp.Env(ring), State: store.Failed, Failure: "timeout: hung"}} {
		if !HeldBy(sp, trials, run)(spelled) {
			t.Errorf("%s failed by its settings, but %v, which NCCL reads alike, is not held", run.Arm, spelled)
		}
	}
}

// TestUnconfirmedVerdictSaysWhatToDo: a validation run whose NCCL log did
// not confirm the settings keeps NCCL's defaults, at once, in every
// validation of a program that sends NCCL's log elsewhere. The reason sent
// the user to `nccltune show`, which needs a trial and shows no validation
// run: it names the choice's trial, whose search run's log shows what
// NCCL logged, and what makes a program's output hold no INFO lines.
func TestUnconfirmedVerdictSaysWhatToDo(t *testing.T) {
	run := func(arm string) store.ValidationRun {
		return store.ValidationRun{Arm: arm, State: store.Complete, Scores: map[string]float64{"r": 100}}
	}
	silent := run("trial 7")
	silent.Unconfirmed = []string{"NCCL_ALGO"}
	v := Judge(RangeResult{Range: space.Range{Name: "r"}, Best: &store.Trial{Number: 7}}, []store.ValidationRun{silent}, []store.ValidationRun{run("default")}, 2)
	for _, want := range []string{"nccltune show 7", "NCCL_DEBUG", "no NCCL INFO lines"} {
		if v.Verdict != "default" || !strings.Contains(v.Reason, want) {
			t.Errorf("%s: %s; want it to name %q", v.Verdict, v.Reason, want)
		}
	}
}

// TestSilentRunToldApart: a validation run whose output had no NCCL INFO
// lines is told apart from one whose log showed NCCL reading another value
// (or not reading the setting), as a trial is: each verdict says which,
// and what to do about it. Both read "it read another value, or the output
// had no NCCL INFO lines".
func TestSilentRunToldApart(t *testing.T) {
	run := func(arm string, silent bool) store.ValidationRun {
		info := store.InfoLines
		if silent {
			info = store.InfoNone
		}
		return store.ValidationRun{Arm: arm, State: store.Complete, Scores: map[string]float64{"r": 100}, Unconfirmed: []string{"NCCL_ALGO"}, Info: info}
	}
	for _, tc := range []struct {
		silent      bool
		want, wrong string
	}{{true, "no NCCL INFO lines", "another value"}, {false, "another value", "no NCCL INFO lines"}} {
		v := Judge(RangeResult{Range: space.Range{Name: "r"}, Best: &store.Trial{Number: 7}}, []store.ValidationRun{run("trial 7", tc.silent)}, []store.ValidationRun{run("default", false)}, 2)
		if v.Verdict != "default" || !strings.Contains(v.Reason, tc.want) || strings.Contains(v.Reason, tc.wrong) || !strings.Contains(v.Reason, "NCCL_ALGO") {
			t.Errorf("silent %v: %s: %s; want it to say %q, not %q", tc.silent, v.Verdict, v.Reason, tc.want, tc.wrong)
		}
	}
}
