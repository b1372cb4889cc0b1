package sim

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
)

func smoothScenario(t *testing.T, n int) (Scenario, []string) {
	t.Helper()
	flags := append(fourNodeIB[:len(fourNodeIB):len(fourNodeIB)], fmt.Sprintf("-landscape=%d", n), "-landscape_kind=smooth")
	sc, err := ParseScenario(flags)
	if err != nil {
		t.Fatal(err)
	}
	return sc, flags
}

// TestSmoothLandscapeReadsEveryInteger: on a smooth landscape each value of
// an integer has its own time (no levels), the curve peaks where the
// landscape says, unset is NCCL's default, and the run and the ground truth
// agree.
func TestSmoothLandscapeReadsEveryInteger(t *testing.T) {
	const n = 4
	sc, flags := smoothScenario(t, n)
	l := smoothOf(n)
	size := []int64{1 << 20}
	x := sizeX(float64(size[0]))
	base, err := Times(sc, "all_reduce", nil, size)
	if err != nil {
		t.Fatal(err)
	}
	distinct := map[float64]bool{}
	for v := 1; v <= 32; v++ {
		env := map[string]string{"NCCL_MIN_CTAS": strconv.Itoa(v)}
		got, err := Times(sc, "all_reduce", env, size)
		if err != nil {
			continue // the failing rule needs a categorical too; none is set
		}
		distinct[got[0]] = true
		u := math.Log(float64(v)) / math.Log(32)
		if want := base[0] / math.Exp(l.bumps[0].at(u, x)); math.Abs(got[0]-want) > 1e-9*want {
			t.Errorf("NCCL_MIN_CTAS=%d: %.6g us, want %.6g", v, got[0], want)
		}
	}
	if len(distinct) < 30 {
		t.Errorf("32 values of NCCL_MIN_CTAS took %d distinct times: read as levels", len(distinct))
	}
	env := map[string]string{"NCCL_MIN_CTAS": "7", "NCCL_NVLS_ENABLE": "0"}
	var list []string
	for k, v := range env {
		list = append(list, k+"="+v)
	}
	got, code, out := simulate(t, flags, list, "-b", "1M", "-e", "1M", "-g", "32")
	if code != 0 || len(got.Rows) != 1 || !strings.Contains(out, "generated smooth landscape 4") {
		t.Fatalf("exit %d\n%s", code, out)
	}
	truth, _ := Times(sc, "all_reduce", env, []int64{got.Rows[0].Size})
	if tab := got.Rows[0].OutOfPlace.TimeUs; math.Abs(tab-truth[0]) > 0.006+0.001*truth[0] {
		t.Errorf("table %.4g us, truth %.4g us", tab, truth[0])
	}
}

// TestSmoothShiftsAndFails: under its categorical level an integer's curve
// is the shift's; the failing rule fails as NCCL's invalid usage from its
// threshold up, and nowhere without the level.
func TestSmoothShiftsAndFails(t *testing.T) {
	shifted, failed := 0, 0
	for n := 1; n <= 20; n++ {
		sc, _ := smoothScenario(t, n)
		l := smoothOf(n)
		x := 20.0
		size := []int64{1 << 20}
		for i, s := range l.shifts {
			if s == nil {
				continue
			}
			shifted++
			knob := landscapeKnobs[smoothInts[i].knob]
			when := envOf(s.when)
			with := envOf(s.when)
			with[knob.Name] = "2"
			a, errA := Times(sc, "all_reduce", when, size)
			b, errB := Times(sc, "all_reduce", with, size)
			if errA != nil || errB != nil {
				continue // the failing rule
			}
			u := math.Log(2) / math.Log(smoothInts[i].max)
			if want := math.Exp(s.at(u, x)); math.Abs(a[0]/b[0]-want) > 1e-9 {
				t.Errorf("smooth %d: integer %d under %v gains %.4f, want %.4f", n, i, s.when, a[0]/b[0], want)
			}
		}
		ctas := landscapeKnobs[smoothInts[0].knob].Name
		for v := 1; v <= 32; v++ {
			u := math.Log(float64(v)) / math.Log(32)
			env := envOf(l.fail.cond)
			env[ctas] = strconv.Itoa(v)
			_, err := Times(sc, "all_reduce", env, []int64{1 << 20})
			if fails := u >= l.fail.u; fails != (err != nil) {
				t.Errorf("smooth %d: %s=%d with %v: error %v", n, ctas, v, l.fail.cond, err)
			} else if fails {
				failed++
			}
			delete(env, landscapeKnobs[l.fail.cond.knob].Name)
			if _, err := Times(sc, "all_reduce", env, []int64{1 << 20}); err != nil {
				t.Errorf("smooth %d: %s=%d alone fails: %v", n, ctas, v, err)
			}
		}
	}
	if shifted == 0 || failed == 0 {
		t.Errorf("20 landscapes: %d shifts, %d failing values", shifted, failed)
	}
	if _, err := ParseScenario(append(fourNodeIB[:len(fourNodeIB):len(fourNodeIB)], "-landscape=1", "-landscape_kind=wavy")); err == nil {
		t.Error("an unknown landscape kind was accepted")
	}
	if _, err := ParseScenario(append(fourNodeIB[:len(fourNodeIB):len(fourNodeIB)], "-landscape_kind=smooth")); err == nil {
		t.Error("a smooth landscape kind without a landscape was accepted (the physics would answer)")
	}
}

// TestSmoothKeyIsWhatItReads: two environments with the same key gain the
// same (no value's text runs into the next one's), and values read alike
// share a key, so that TruthKey's memo holds them once.
func TestSmoothKeyIsWhatItReads(t *testing.T) {
	l := smoothOf(4)
	a := map[string]string{"NCCL_MIN_CTAS": "100,x"}
	b := map[string]string{"NCCL_MIN_CTAS": "100", "NCCL_IB_QPS_PER_CONNECTION": "x,"}
	ga, _ := l.under(a)
	gb, _ := l.under(b)
	if l.key(a) == l.key(b) && ga(20) != gb(20) {
		t.Errorf("%v and %v share key %q but gain %.4f and %.4f", a, b, l.key(a), ga(20), gb(20))
	}
	sc, _ := smoothScenario(t, 4)
	alike := [][]string{{"7", "007", "+7"}, {"32", "40", "64"}}
	for _, vs := range alike {
		want := TruthKey(sc, "all_reduce", map[string]string{"NCCL_MIN_CTAS": vs[0]})
		for _, v := range vs[1:] {
			if got := TruthKey(sc, "all_reduce", map[string]string{"NCCL_MIN_CTAS": v}); got != want || want == "" {
				t.Errorf("NCCL_MIN_CTAS=%s: key %q, =%s: %q", v, got, vs[0], want)
			}
		}
	}
	for v := 1; v <= 32; v++ {
		one := TruthKey(sc, "all_reduce", map[string]string{"NCCL_MIN_CTAS": strconv.Itoa(v)})
		for w := v + 1; w <= 32; w++ {
			if TruthKey(sc, "all_reduce", map[string]string{"NCCL_MIN_CTAS": strconv.Itoa(w)}) == one {
				t.Errorf("NCCL_MIN_CTAS=%d and %d share a key", v, w)
			}
		}
	}
}
