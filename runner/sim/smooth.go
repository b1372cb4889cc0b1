package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
)

// Smooth landscapes (flag -landscape_kind=smooth with -landscape=N): a
// second generated family, unlike the first in kind, so that a search
// tuned on one is checked on the other. Where the first reads every
// variable as a few levels, here the two integers, NCCL_MIN_CTAS (read on
// a log axis over 1-32) and NCCL_IB_QPS_PER_CONNECTION (log axis over
// 1-8), pay through smooth curves whose peaks lie anywhere in their range
// and drift with the size; the categoricals (algorithm, protocol, buffer
// size, GDR level, threads, as levels) have main effects as in the first.
// A landscape is drawn from a PCG generator seeded by its number:
//
//   - per integer, a bump over its axis u in [0, 1]: A(x) (exp(-((u-m(x))/s)^2/2) - c),
//     A(x) = max(0, A0 + A1(x-17)/14), A0 ~ U(0.05, 0.18), A1 ~ N(0, 0.04),
//     m(x) = m0 + m1(x-17)/14 clamped to [0, 1], m0 ~ U(0, 1), m1 ~ N(0, 0.2),
//     s ~ U(0.1, 0.3), c ~ U(0.3, 0.7); unset is 0;
//   - per integer with probability 0.7, a shift: under one categorical
//     level (which alone costs U(0.01, 0.04)) the integer's bump peaks at
//     m' ~ U(0, 1) instead, A0 U(0.08, 0.2) higher: the setting pays
//     only with the integer near m', which is mostly away from m0;
//   - with probability 0.5, a ridge between the integers within a window of
//     sizes: B weight(x) exp(-((u1-u2-d)/0.15)^2/2), B ~ U(0.06, 0.15),
//     d ~ U(-0.5, 0.5), both set;
//   - one failing rule: NCCL_MIN_CTAS at u >= U(0.6, 1) with one categorical
//     level fails as NCCL's invalid usage.
type smooth struct {
	n      int
	main   effects // of smoothCats
	bumps  [2]bump
	shifts [2]*shift
	ridge  *ridge
	fail   struct {
		u    float64
		cond cond
	}
}

// smoothInts are the knobs (indexes in landscapeKnobs) read as integers, and their axes' top.
var smoothInts = [2]struct {
	knob int
	max  float64
}{{2, 32}, {5, 8}}

type bump struct{ a0, a1, m0, m1, s, c float64 }

func (b bump) at(u, x float64) float64 {
	a := math.Max(0, b.a0+b.a1*(x-17)/14)
	m := min(1, max(0, b.m0+b.m1*(x-17)/14))
	d := (u - m) / b.s
	return a * (math.Exp(-d*d/2) - b.c)
}

type shift struct {
	when cond
	cost float64
	bump
}

type ridge struct {
	window
	b, d float64
}

var smooths sync.Map // number -> *smooth

func smoothOf(n int) *smooth { return memo(&smooths, n, generateSmooth) }

// smoothCats are the knobs read as levels.
var smoothCats = []int{0, 1, 3, 4, 6}

func generateSmooth(n int) *smooth {
	rng := rand.New(rand.NewPCG(uint64(n), 0x736d6f6f7468)) // "smooth"
	u := func(lo, hi float64) float64 { return lo + (hi-lo)*rng.Float64() }
	l := &smooth{n: n, main: drawEffects(rng, smoothCats)}
	catCond := func() cond {
		k := smoothCats[rng.IntN(len(smoothCats))]
		return cond{k, 1 + rng.IntN(len(landscapeKnobs[k].Levels))}
	}
	for i := range l.bumps {
		b := bump{u(0.05, 0.18), 0.04 * rng.NormFloat64(), u(0, 1), 0.2 * rng.NormFloat64(), u(0.1, 0.3), u(0.3, 0.7)}
		l.bumps[i] = b
		if rng.Float64() < 0.7 {
			s := &shift{when: catCond(), cost: u(0.01, 0.04), bump: b}
			s.m0, s.a0 = u(0, 1), b.a0+u(0.08, 0.2)
			l.shifts[i] = s
		}
	}
	if rng.Float64() < 0.5 {
		l.ridge = &ridge{window{u(3, 31), u(4, 10)}, u(0.06, 0.15), u(-0.5, 0.5)}
	}
	l.fail.u, l.fail.cond = u(0.6, 1), catCond()
	return l
}

// axes are env's integers on their axes (NaN: unset, or not a number NCCL reads).
func (l *smooth) axes(env map[string]string) [2]float64 {
	var out [2]float64
	for i, si := range smoothInts {
		out[i] = math.NaN()
		if v, err := strconv.ParseInt(env[landscapeKnobs[si.knob].Name], 10, 64); err == nil && v >= 1 {
			out[i] = min(1, math.Log(float64(v))/math.Log(si.max))
		}
	}
	return out
}

func (l *smooth) logGain(lv *levels, us [2]float64, x float64) float64 {
	g := l.main.at(lv, x)
	for i, uv := range us {
		s := l.shifts[i]
		if s != nil && lv[s.when.knob] == s.when.level {
			g -= s.cost
			if !math.IsNaN(uv) {
				g += s.at(uv, x)
			}
			continue
		}
		if !math.IsNaN(uv) {
			g += l.bumps[i].at(uv, x)
		}
	}
	if r := l.ridge; r != nil && !math.IsNaN(us[0]) && !math.IsNaN(us[1]) {
		d := (us[0] - us[1] - r.d) / 0.15
		g += r.b * r.window.at(x) * math.Exp(-d*d/2)
	}
	return g
}

func (l *smooth) check(lv *levels, us [2]float64, env map[string]string) error {
	if us[0] >= l.fail.u && lv[l.fail.cond.knob] == l.fail.cond.level {
		a, b := landscapeKnobs[smoothInts[0].knob].Name, landscapeKnobs[l.fail.cond.knob].Name
		return fmt.Errorf("%s=%s cannot be used with %s=%s (simulated smooth landscape %d)", a, env[a], b, env[b], l.n)
	}
	return nil
}

func (l *smooth) under(env map[string]string) (func(float64) float64, error) {
	lv, us := levelsOf(env), l.axes(env)
	return func(x float64) float64 { return l.logGain(&lv, us, x) }, l.check(&lv, us, env)
}

// key is the levels and the integers' places on their axes, what under
// reads: values NCCL reads alike ("7", "007", "+7"; every value from the
// axis' top up) share a key, and no value's text can run into another's.
func (l *smooth) key(env map[string]string) string {
	us := l.axes(env)
	return fmt.Sprintf("%s,%s,%s", levelsOf(env), strconv.FormatFloat(us[0], 'g', -1, 64), strconv.FormatFloat(us[1], 'g', -1, 64))
}
