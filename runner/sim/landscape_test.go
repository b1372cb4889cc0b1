package sim

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
)

var fourNodeIB = []string{"-nodes=4", "-gpus_per_node=8", "-fabric=ib", "-noise=0"}

// value is a setting of a landscape variable that falls in the level.
var value = [nKnobs][]string{
	{"Ring", "Tree"}, {"LL", "LL128", "Simple"}, {"2", "8", "32"}, {"1048576", "16777216"},
	{"PHB", "SYS"}, {"2", "3", "8"}, {"128", "256", "512"},
}

func envOf(conds ...cond) map[string]string {
	env := map[string]string{}
	for _, c := range conds {
		env[landscapeKnobs[c.knob].Name] = value[c.knob][c.level-1]
	}
	return env
}

func envList(env map[string]string) []string {
	var out []string
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

func TestLandscapeLevels(t *testing.T) {
	for k, knob := range landscapeKnobs {
		if len(value[k]) != len(knob.Levels) {
			t.Fatalf("%s: %d levels", knob.Name, len(knob.Levels))
		}
		for lev, v := range value[k] {
			if got := LandscapeLevel(knob.Name, v); got != lev+1 {
				t.Errorf("%s=%s: level %d, want %d", knob.Name, v, got, lev+1)
			}
		}
	}
	for _, tc := range []struct {
		name, value string
		level       int
	}{
		{"NCCL_ALGO", "Ring,Tree", 0}, {"NCCL_ALGO", "tree", 2}, {"NCCL_MIN_CTAS", "3", 1}, {"NCCL_MIN_CTAS", "4", 2},
		{"NCCL_MIN_CTAS", "12", 3}, {"NCCL_BUFFSIZE", "2097152", 1},
		{"NCCL_NET_GDR_LEVEL", "4", 2}, {"NCCL_IB_QPS_PER_CONNECTION", "3", 2}, {"NCCL_IB_QPS_PER_CONNECTION", "4", 3},
		{"NCCL_IB_QPS_PER_CONNECTION", "128", 3},
		{"NCCL_NTHREADS", "64", 1}, {"NCCL_NTHREADS", "192", 0}, {"NCCL_CUMEM_ENABLE", "0", 0},
	} {
		if got := LandscapeLevel(tc.name, tc.value); got != tc.level {
			t.Errorf("%s=%s: level %d, want %d", tc.name, tc.value, got, tc.level)
		}
	}
}

// TestLandscapeReadsNCCLDefaultsAsUnset: a variable set to the value NCCL
// takes when it is unset is NCCL's default, level 0, as it is to NCCL: were
// it a level of its own, a landscape's optimum could lie where only leaving
// the variable out reaches it, a search problem NCCL does not pose.
func TestLandscapeReadsNCCLDefaultsAsUnset(t *testing.T) {
	for name, value := range map[string]string{
		"NCCL_MIN_CTAS":              "1",       // init.cc: minCTAs defaults to 1
		"NCCL_IB_QPS_PER_CONNECTION": "1",       // net_ib.cc: NCCL_PARAM(IbQpsPerConn, ..., 1)
		"NCCL_BUFFSIZE":              "4194304", // DEFAULT_BUFFSIZE
		"NCCL_NET_GDR_LEVEL":         "PXB",     // the GDR level NCCL takes without one
	} {
		if got := LandscapeLevel(name, value); got != 0 {
			t.Errorf("%s=%s, NCCL's default: level %d, want 0", name, value, got)
		}
	}
}

func TestLandscapeIsDeterministic(t *testing.T) {
	if a, b := generate(7), generate(7); !reflect.DeepEqual(a, b) {
		t.Error("landscape 7 drawn twice differs")
	}
	if reflect.DeepEqual(generate(7).interactions, generate(8).interactions) {
		t.Error("landscapes 7 and 8 are the same")
	}
	sc, _ := ParseScenario(append(fourNodeIB, "-landscape=7"))
	env := map[string]string{"NCCL_PROTO": "LL128", "NCCL_NTHREADS": "256"}
	sizes := []int64{8, 1 << 20, 1 << 30}
	a, errA := Times(sc, "all_reduce", env, sizes)
	b, errB := Times(sc, "all_reduce", env, sizes)
	if errA != nil || errB != nil || !reflect.DeepEqual(a, b) {
		t.Errorf("Times differs between calls: %v %v, %v %v", a, errA, b, errB)
	}
}

// TestLandscapeShape: every landscape is drawn as specified, and its
// interactions, decoys and failing pairs behave so.
func TestLandscapeShape(t *testing.T) {
	for n := 1; n <= 300; n++ {
		l := generate(n)
		if len(l.interactions) < 2 || len(l.interactions) > 3 || len(l.fails) < 1 || len(l.fails) > 2 {
			t.Fatalf("landscape %d: %d interactions, %d failing pairs", n, len(l.interactions), len(l.fails))
		}
		for i, in := range l.interactions {
			name := fmt.Sprintf("landscape %d, interaction %d %v", n, i, in.conds)
			if len(in.conds) < 2 || len(in.conds) > 3 || in.gain < 0.08 || in.gain > 0.30 || in.c < 3 || in.c > 31 || in.w < 4 || in.w > 10 {
				t.Fatalf("%s: %+v", name, in)
			}
			// The interaction pays only whole; any part of it costs.
			all := levelsOf(envOf(in.conds...))
			if got := in.contribution(&all); got != in.gain {
				t.Errorf("%s: all conditions give %.3f, want %.3f", name, got, in.gain)
			}
			for mask := 1; mask < 1<<len(in.conds)-1; mask++ {
				var part []cond
				for j, c := range in.conds {
					if mask&(1<<j) != 0 {
						part = append(part, c)
					}
				}
				lv := levelsOf(envOf(part...))
				if got := in.contribution(&lv); got > -0.02*float64(len(part)) || got < -0.06*float64(len(part)) {
					t.Errorf("%s: %v alone gives %.3f", name, part, got)
				}
			}
			// Each member alone, in the whole landscape less main effects, is
			// worse than unset in the interaction's window.
			for _, c := range in.conds {
				lv := levelsOf(envOf(c))
				if got := l.terms(&lv, in.c); got >= 0 {
					t.Errorf("%s: %v alone gains %.3f at the window's centre", name, c, got)
				}
			}
			// The decoy: a few percent short, and exclusive with the interaction.
			if d := in.gain - in.decoyG; d < 0.02 || d > 0.06 || len(in.decoy) < 1 || len(in.decoy) > 2 {
				t.Errorf("%s: decoy %v gains %.3f less than the interaction", name, in.decoy, d)
			}
			if d := in.decoy[0]; !contains(in.conds, cond{d.knob, all[d.knob]}) || all[d.knob] == d.level {
				t.Errorf("%s: decoy %v does not exclude the interaction", name, in.decoy)
			}
			if len(in.decoy) == 2 && in.decoy[0].knob == in.decoy[1].knob {
				t.Errorf("%s: decoy %v", name, in.decoy)
			}
			dv := levelsOf(envOf(in.decoy...))
			if got := l.terms(&dv, in.c) - l.terms(&all, in.c); math.Abs(got-(in.decoyG-in.gain)) > 1e-9 &&
				len(in.decoy) == 1 && onlyThis(l, i) {
				t.Errorf("%s: decoy %.3f short of the interaction, want %.3f", name, got, in.decoyG-in.gain)
			}
		}
		for _, f := range l.fails {
			if f[0].knob == f[1].knob {
				t.Errorf("landscape %d: failing pair %v on one variable", n, f)
			}
			lv := levelsOf(envOf(f[0], f[1]))
			if l.check(&lv, envOf(f[0], f[1])) == nil {
				t.Errorf("landscape %d: failing pair %v does not fail", n, f)
			}
			for _, c := range f {
				lv := levelsOf(envOf(c))
				if l.check(&lv, nil) != nil {
					t.Errorf("landscape %d: %v alone fails", n, c)
				}
			}
			for _, in := range l.interactions {
				for _, set := range [][]cond{in.conds, in.decoy} {
					lv := levelsOf(envOf(set...))
					if l.check(&lv, nil) != nil {
						t.Errorf("landscape %d: %v fails", n, set)
					}
				}
			}
		}
	}
}

// onlyThis reports whether interaction i shares no variable with the others,
// so that its terms alone decide the landscape less main effects where its
// conditions or its decoy's are set.
func onlyThis(l *landscape, i int) bool {
	used := map[int]bool{}
	for _, c := range append(append([]cond{}, l.interactions[i].conds...), l.interactions[i].decoy...) {
		used[c.knob] = true
	}
	for j, in := range l.interactions {
		for _, c := range append(append([]cond{}, in.conds...), in.decoy...) {
			if j != i && used[c.knob] {
				return false
			}
		}
	}
	return true
}

// TestLandscapeReplacesThePhysics: on a landscape a configuration's time is
// the defaults' time divided by exp(L), in the table and in the ground truth
// alike; the physics' own effects of settings are gone.
func TestLandscapeReplacesThePhysics(t *testing.T) {
	const n = 3
	l := generate(n)
	in := l.interactions[0]
	scen := append(fourNodeIB, fmt.Sprintf("-landscape=%d", n))
	sc, err := ParseScenario(scen)
	if err != nil {
		t.Fatal(err)
	}
	size := int64(1) << int(math.Round(in.c))
	env := envOf(in.conds...)
	env["NCCL_NVLS_ENABLE"] = "0"
	args := []string{"-b", "8", "-e", "1G", "-f", "4", "-g", "32"}
	def, code, out := simulate(t, scen, nil, args...)
	got, code2, out2 := simulate(t, scen, envList(env), args...)
	if code != 0 || code2 != 0 || len(def.Rows) != 14 || len(got.Rows) != 14 || len(got.Failures) != 0 {
		t.Fatalf("exit %d, %d\n%s\n%s", code, code2, out, out2)
	}
	if !strings.Contains(out, "generated landscape 3") {
		t.Error("the header does not name the landscape")
	}
	var sizes []int64
	for _, r := range got.Rows {
		sizes = append(sizes, r.Size)
	}
	truth, err := Times(sc, "all_reduce", env, sizes)
	if err != nil {
		t.Fatal(err)
	}
	base, _ := Times(sc, "all_reduce", nil, sizes)
	lv := levelsOf(env)
	for i, r := range got.Rows {
		x := sizeX(float64(r.Size))
		if want := base[i] / math.Exp(l.logGain(&lv, x)); math.Abs(truth[i]-want) > 1e-9*want {
			t.Errorf("size %d: Times %.4g, want %.4g", r.Size, truth[i], want)
		}
		if tab := r.OutOfPlace.TimeUs; math.Abs(tab-truth[i]) > 0.006+0.001*truth[i] {
			t.Errorf("size %d: table %.4g us, truth %.4g us", r.Size, tab, truth[i])
		}
		if tab := def.Rows[i].OutOfPlace.TimeUs; math.Abs(tab-base[i]) > 0.006+0.001*base[i] {
			t.Errorf("size %d: the defaults' table %.4g us, base %.4g us", r.Size, tab, base[i])
		}
		if r.OutOfPlace.BusBW < 0 || math.Abs(r.OutOfPlace.BusBW/r.OutOfPlace.AlgBW-2*31.0/32) > 0.02 && r.OutOfPlace.AlgBW > 1 {
			t.Errorf("size %d: busbw %.2f, algbw %.2f", r.Size, r.OutOfPlace.BusBW, r.OutOfPlace.AlgBW)
		}
	}
	// The interaction pays at its centre: L there is its gain, the members'
	// main effects and whatever else the landscape adds.
	x := sizeX(float64(size))
	if gain := l.logGain(&lv, x); gain < in.gain*in.at(x)-0.3 {
		t.Errorf("L at the centre %.3f, interaction %.3f", gain, in.gain)
	}
	// A setting the physics punishes hard (Simple for tiny messages) costs only its main effect.
	simple := map[string]string{"NCCL_PROTO": "Simple"}
	s, _ := Times(sc, "all_reduce", simple, []int64{4096})
	b, _ := Times(sc, "all_reduce", nil, []int64{4096})
	m := l.main[1][2]
	if want := math.Exp(-(m.a + m.b*(12-17)/14.0)); math.Abs(s[0]/b[0]-want) > 1e-9 {
		t.Errorf("Simple at 4K: %.4f of the defaults' time, want %.4f", s[0]/b[0], want)
	}
}

func TestLandscapeFailure(t *testing.T) {
	const n = 5
	f := generate(n).fails[0]
	scen := append(fourNodeIB, fmt.Sprintf("-landscape=%d", n))
	env := envOf(f[0], f[1])
	rep, code, out := simulate(t, scen, envList(env), "-b", "8", "-e", "1M", "-f", "4", "-g", "32")
	if code != 3 || len(rep.Failures) == 0 || !strings.Contains(rep.Failures[0], "Test NCCL failure") ||
		!strings.Contains(rep.Failures[0], "invalid usage") || len(rep.Rows) != 0 {
		t.Errorf("a failing pair: exit %d, failures %q\n%s", code, rep.Failures, out)
	}
	sc, _ := ParseScenario(scen)
	if _, err := Evaluate(sc, "all_reduce", env, []int64{1 << 20}); err == nil {
		t.Error("Evaluate measured a failing pair")
	}
	if _, code, out := simulate(t, scen, envList(envOf(f[0])), "-b", "8", "-e", "1M", "-f", "4", "-g", "32"); code != 0 {
		t.Errorf("%v alone: exit %d\n%s", f[0], code, out)
	}
	if _, code, _ := simulate(t, []string{"-landscape=-1"}, nil); code != 1 {
		t.Errorf("-landscape=-1: exit %d", code)
	}
}

// TestTruthKey: configurations with one key have one truth; without a
// landscape there is no key.
func TestTruthKey(t *testing.T) {
	sc, _ := ParseScenario(append(fourNodeIB, "-landscape=4"))
	sizes := []int64{1 << 10, 1 << 20, 1 << 28}
	a := map[string]string{"NCCL_MIN_CTAS": "4", "NCCL_IB_QPS_PER_CONNECTION": "4", "NCCL_NVLS_ENABLE": "0"}
	b := map[string]string{"NCCL_MIN_CTAS": "11", "NCCL_IB_QPS_PER_CONNECTION": "7"}
	c := map[string]string{"NCCL_MIN_CTAS": "12", "NCCL_IB_QPS_PER_CONNECTION": "7"}
	ka, kb, kc := TruthKey(sc, "all_reduce", a), TruthKey(sc, "all_reduce", b), TruthKey(sc, "all_reduce", c)
	ta, _ := Times(sc, "all_reduce", a, sizes)
	tb, _ := Times(sc, "all_reduce", b, sizes)
	if ka == "" || ka != kb || kb == kc || !reflect.DeepEqual(ta, tb) {
		t.Errorf("keys %q %q %q, times %v %v", ka, kb, kc, ta, tb)
	}
	if k := TruthKey(sc, "all_reduce", map[string]string{"NCCL_MIN_CTAS": "99"}); k != "" {
		t.Errorf("an invalid setting has key %q", k)
	}
	if k := TruthKey(sc, "all_reduce", map[string]string{"NCCL_ALGO": "Ring"}); k == TruthKey(sc, "all_reduce", map[string]string{"NCCL_ALGO": "Ring,Tree"}) {
		t.Errorf("NCCL_ALGO=Ring and Ring,Tree share key %q", k)
	}
	phys, _ := ParseScenario(fourNodeIB)
	if k := TruthKey(phys, "all_reduce", a); k != "" {
		t.Errorf("without a landscape: key %q", k)
	}
}

// TestHeldTerms: an interaction or a decoy is held exactly when all its
// conditions are, whatever else is set, and only on a landscape of terms.
func TestHeldTerms(t *testing.T) {
	for n := 1; n <= 20; n++ {
		sc, _ := ParseScenario(append(fourNodeIB, fmt.Sprintf("-landscape=%d", n)))
		if !sc.HasTerms() {
			t.Errorf("landscape %d has no terms", n)
		}
		l := landscapeOf(n)
		for i, in := range l.interactions {
			for term, conds := range map[int][]cond{i: in.conds, len(l.interactions) + i: in.decoy} {
				env := envOf(conds...)
				if got := sc.HeldTerms(env); !slices.Contains(got, term) {
					t.Errorf("landscape %d: all of term %d %v set, held %v", n, term, conds, got)
				}
				delete(env, landscapeKnobs[conds[0].knob].Name)
				if got := sc.HeldTerms(env); slices.Contains(got, term) {
					t.Errorf("landscape %d: term %d held without %v", n, term, conds[0])
				}
			}
		}
		if got := sc.HeldTerms(map[string]string{}); len(got) != 0 {
			t.Errorf("landscape %d: NCCL's defaults hold %v", n, got)
		}
	}
	plain, _ := ParseScenario(fourNodeIB)
	if got := plain.HeldTerms(envOf(landscapeOf(1).interactions[0].conds...)); got != nil || plain.HasTerms() {
		t.Errorf("no landscape, held %v (has terms: %t)", got, plain.HasTerms())
	}
	if smooth, _ := smoothScenario(t, 1); smooth.HasTerms() || smooth.HeldTerms(envOf(landscapeOf(1).interactions[0].conds...)) != nil {
		t.Error("a smooth landscape has terms")
	}
}
