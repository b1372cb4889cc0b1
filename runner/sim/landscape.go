package sim

// Generated landscapes (scenario flag -landscape=N): search problems that
// owe nothing to the physics above, nor to what nccltune's warm start knows
// about it. With a landscape on, one operation of a size under an
// environment takes
//
//	base(size) / exp(L(env, x)),  x = log2(size) clamped to [3, 31]
//
// where base(size) is the physics' time under NCCL's defaults (no NCCL_*
// set: NCCL's own choice of algorithm and protocol), whatever the
// environment, so that no setting pays through the physics; and L is the
// landscape's log-gain. Settings NCCL would reject are still rejected as
// without a landscape (and forced LL128 over sockets still corrupts data).
//
// L is laid over a small catalogue of variables (landscapeKnobs), each read
// as a level: 0 is unset, NCCL's default, and so is the value NCCL takes
// when it is unset (NCCL_MIN_CTAS and NCCL_IB_QPS_PER_CONNECTION 1, 4 MiB
// buffers, GDR up to PXB), which NCCL runs alike, and any value in no level.
// A landscape is drawn from a PCG generator seeded by its number:
//
//   - a main effect for every (variable, level >= 1): a + b(x-17)/14,
//     a ~ N(-0.02, 0.02), b ~ N(0, 0.02): a setting alone mostly costs a
//     little, sometimes gains a few percent, and differently by size;
//   - 2 or 3 interactions of 2 variables (70%) or 3 (30%) at random levels
//     >= 1, over a window of sizes weight(x) = exp(-((x-c)/w)^2),
//     c ~ U(3, 31), w ~ U(4, 10): with every condition met they gain
//     A weight(x), A ~ U(0.08, 0.30); each member met carries a penalty
//     p weight(x), p ~ U(0.02, 0.06) (the term of all conditions makes up
//     the penalties), so that each member alone, or any part of the
//     interaction, is worse than leaving it out;
//   - per interaction a decoy in the same window: one of the interaction's
//     variables at another level, with half the time a second condition,
//     gaining (A-d) weight(x), d ~ U(0.02, 0.06): a few percent short of
//     the interaction, which it excludes, and easier to find (no penalty;
//     a one-condition decoy never shares its condition with an
//     interaction's member);
//   - 1 or 2 failing pairs of (variable, level >= 1), never both within one
//     interaction or decoy: a configuration holding both fails as NCCL's
//     invalid usage.
//
// So calibrated, the best configuration of a landscape's most tunable range
// gains 8% to 70% over NCCL's defaults (median 29%, 90th percentile 46%,
// over the first 50), as the 10-40% that defaults are found to leave on
// real fabrics.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
)

// LandscapeKnob is a variable generated landscapes are laid over.
type LandscapeKnob struct {
	Name string
	// Levels names levels 1..n; level 0 is unset, NCCL's default, and so
	// are the value NCCL takes unset and any value that falls in no level.
	Levels []string
	level  func(value string) int
}

var landscapeKnobs = []LandscapeKnob{
	{"NCCL_ALGO", []string{"Ring", "Tree"}, tokenLevel("Ring", "Tree")},
	{"NCCL_PROTO", []string{"LL", "LL128", "Simple"}, tokenLevel("LL", "LL128", "Simple")},
	{"NCCL_MIN_CTAS", []string{"2-3", "4-11", "12-64"}, func(v string) int {
		return intLevel(v, func(n int64) int { return bin(n, 2, 4, 12, 65) })
	}},
	{"NCCL_BUFFSIZE", []string{"below 4 MiB", "above 4 MiB"}, func(v string) int {
		return intLevel(v, func(n int64) int {
			switch {
			case n > 0 && n < 4<<20:
				return 1
			case n > 4<<20:
				return 2
			}
			return 0
		})
	}},
	{"NCCL_NET_GDR_LEVEL", []string{"PHB", "SYS"}, func(v string) int {
		return max(0, pciRank(v)-2) // PHB is rank 3, SYS (or any larger integer) 4
	}},
	{"NCCL_IB_QPS_PER_CONNECTION", []string{"2", "3", "4+"}, func(v string) int {
		return intLevel(v, func(n int64) int { return bin(n, 2, 3, 4, 129) })
	}},
	{"NCCL_NTHREADS", []string{"64-128", "256", "512"}, func(v string) int {
		return intLevel(v, func(n int64) int {
			switch n {
			case 64, 128:
				return 1
			case 256:
				return 2
			case 512:
				return 3
			}
			return 0
		})
	}},
}

const nKnobs = 7

// allKnobs are the indexes of landscapeKnobs.
var allKnobs = []int{0, 1, 2, 3, 4, 5, 6}

// LandscapeKnobs lists the variables generated landscapes are laid over.
func LandscapeKnobs() []LandscapeKnob { return landscapeKnobs }

// LandscapeLevel is the level a value of a landscape variable falls in
// (0: none, or not a landscape variable).
func LandscapeLevel(name, value string) int {
	for _, k := range landscapeKnobs {
		if k.Name == name {
			return k.level(value)
		}
	}
	return 0
}

func tokenLevel(tokens ...string) func(string) int {
	return func(v string) int {
		for i, t := range tokens {
			if strings.EqualFold(strings.TrimSpace(v), t) {
				return i + 1
			}
		}
		return 0
	}
}

func intLevel(v string, f func(int64) int) int {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0
	}
	return f(n)
}

// bin is the level of n among bounds: level i for bounds[i-1] <= n < bounds[i].
func bin(n int64, bounds ...int64) int {
	for i := 1; i < len(bounds); i++ {
		if n >= bounds[i-1] && n < bounds[i] {
			return i
		}
	}
	return 0
}

// levels are an environment's level of each landscape variable.
type levels [nKnobs]int

func levelsOf(env map[string]string) levels {
	var lv levels
	for i, k := range landscapeKnobs {
		if v, ok := env[k.Name]; ok {
			lv[i] = k.level(v)
		}
	}
	return lv
}

// cond is one condition: a variable at a level.
type cond struct{ knob, level int }

func (c cond) String() string {
	return landscapeKnobs[c.knob].Name + " " + landscapeKnobs[c.knob].Levels[c.level-1]
}

func holds(lv *levels, conds []cond) bool {
	for _, c := range conds {
		if lv[c.knob] != c.level {
			return false
		}
	}
	return true
}

// window is a bump over sizes: exp(-((x-c)/w)^2).
type window struct{ c, w float64 }

func (wd window) at(x float64) float64 { d := (x - wd.c) / wd.w; return math.Exp(-d * d) }

type interaction struct {
	window
	conds   []cond
	gain    float64   // A: net log-gain at the window's centre with every condition met
	penalty []float64 // per member, met: -penalty*weight
	decoy   []cond
	decoyG  float64 // the decoy's log-gain at the centre
}

// landscape is one generated landscape.
type landscape struct {
	n            int
	main         effects
	interactions []interaction
	fails        [][2]cond
}

var landscapes sync.Map // number -> *landscape

func landscapeOf(n int) *landscape { return memo(&landscapes, n, generate) }

// memo is generate(n), made once per n and kept in made.
func memo[T any](made *sync.Map, n int, generate func(int) T) T {
	if l, ok := made.Load(n); ok {
		return l.(T)
	}
	l, _ := made.LoadOrStore(n, generate(n))
	return l.(T)
}

// effects are main effects, per knob and level >= 1 ([knob][level-1]):
// a + b(x-17)/14. A knob without any has none.
type effects [nKnobs][]struct{ a, b float64 }

// drawEffects draws every level's main effect of knobs, in their order:
// a ~ N(-0.02, 0.02), b ~ N(0, 0.02).
func drawEffects(rng *rand.Rand, knobs []int) effects {
	var e effects
	for _, k := range knobs {
		for range landscapeKnobs[k].Levels {
			e[k] = append(e[k], struct{ a, b float64 }{-0.02 + 0.02*rng.NormFloat64(), 0.02 * rng.NormFloat64()})
		}
	}
	return e
}

// at is the main effects of the levels set, at x.
func (e *effects) at(lv *levels, x float64) float64 {
	g := 0.0
	for k, lev := range lv {
		if lev > 0 && lev <= len(e[k]) {
			m := e[k][lev-1]
			g += m.a + m.b*(x-17)/14
		}
	}
	return g
}

func generate(n int) *landscape {
	rng := rand.New(rand.NewPCG(uint64(n), 0x6c616e6473636170)) // "landscap"
	u := func(lo, hi float64) float64 { return lo + (hi-lo)*rng.Float64() }
	level := func(k int) int { return 1 + rng.IntN(len(landscapeKnobs[k].Levels)) }
	l := &landscape{n: n, main: drawEffects(rng, allKnobs)}
	for range 2 + rng.IntN(2) {
		size := 2
		if rng.Float64() < 0.3 {
			size = 3
		}
		in := interaction{window: window{u(3, 31), u(4, 10)}, gain: u(0.08, 0.30)}
		for _, k := range rng.Perm(nKnobs)[:size] {
			in.conds = append(in.conds, cond{k, level(k)})
			in.penalty = append(in.penalty, u(0.02, 0.06))
		}
		l.interactions = append(l.interactions, in)
	}
	member := func(c cond) bool {
		for _, in := range l.interactions {
			for _, m := range in.conds {
				if m == c {
					return true
				}
			}
		}
		return false
	}
	for i := range l.interactions {
		in := &l.interactions[i]
		// One of the interaction's variables at another level: the decoy excludes it.
		m := in.conds[rng.IntN(len(in.conds))]
		other := 1 + rng.IntN(len(landscapeKnobs[m.knob].Levels)-1)
		if other >= m.level {
			other++
		}
		in.decoy = []cond{{m.knob, other}}
		if rng.Float64() < 0.5 || member(in.decoy[0]) {
			k := rng.IntN(nKnobs - 1)
			if k >= m.knob {
				k++
			}
			in.decoy = append(in.decoy, cond{k, level(k)})
		}
		in.decoyG = in.gain - u(0.02, 0.06)
	}
	within := func(a, b cond) bool {
		for _, in := range l.interactions {
			for _, set := range [][]cond{in.conds, in.decoy} {
				if contains(set, a) && contains(set, b) {
					return true
				}
			}
		}
		return false
	}
	for range 1 + rng.IntN(2) {
		for range 1000 { // a pair of two variables within no interaction or decoy
			ks := rng.Perm(nKnobs)[:2]
			a, b := cond{ks[0], level(ks[0])}, cond{ks[1], level(ks[1])}
			if !within(a, b) {
				l.fails = append(l.fails, [2]cond{a, b})
				break
			}
		}
	}
	return l
}

func contains(set []cond, c cond) bool {
	for _, s := range set {
		if s == c {
			return true
		}
	}
	return false
}

// sizeX is log2 of a size, clamped to the landscapes' domain.
func sizeX(size float64) float64 { return min(31, max(3, math.Log2(math.Max(size, 1)))) }

// logGain is L: the main effects of the levels set, and the interactions' and decoys' terms.
func (l *landscape) logGain(lv *levels, x float64) float64 {
	return l.main.at(lv, x) + l.terms(lv, x)
}

// terms is L less the main effects.
func (l *landscape) terms(lv *levels, x float64) float64 {
	g := 0.0
	for i := range l.interactions {
		in := &l.interactions[i]
		c := in.contribution(lv)
		if holds(lv, in.decoy) {
			c += in.decoyG
		}
		if c != 0 {
			g += c * in.at(x)
		}
	}
	return g
}

// contribution is the interaction's own log-gain at its window's centre
// (its decoy apart): its gain with every condition met, less the penalty of
// each member met otherwise.
func (in *interaction) contribution(lv *levels) float64 {
	c, all := 0.0, true
	for j, m := range in.conds {
		if lv[m.knob] == m.level {
			c -= in.penalty[j]
		} else {
			all = false
		}
	}
	if all {
		return in.gain
	}
	return c
}

// check is the error NCCL would report for a configuration holding a failing pair.
func (l *landscape) check(lv *levels, env map[string]string) error {
	for _, f := range l.fails {
		if lv[f[0].knob] == f[0].level && lv[f[1].knob] == f[1].level {
			a, b := landscapeKnobs[f[0].knob].Name, landscapeKnobs[f[1].knob].Name
			return fmt.Errorf("%s=%s cannot be used with %s=%s (simulated landscape %d)", a, env[a], b, env[b], l.n)
		}
	}
	return nil
}

// baseKey identifies a table of base times: the scenario's hardware and the collective.
type baseKey struct {
	sc   Scenario
	coll string
}

// baseTable holds the base time of each size met so far.
type baseTable struct {
	sync.RWMutex
	t map[float64]float64
}

var baseTables sync.Map // baseKey -> *baseTable

func (s Scenario) baseTable(coll string) *baseTable {
	k := s
	k.Noise, k.Seed, k.Pace, k.Landscape, k.LandscapeKind = 0, 0, 0, 0, ""
	if b, ok := baseTables.Load(baseKey{k, coll}); ok {
		return b.(*baseTable)
	}
	b, _ := baseTables.LoadOrStore(baseKey{k, coll}, &baseTable{t: map[float64]float64{}})
	return b.(*baseTable)
}

// base is the physics' time of one operation of size under NCCL's defaults.
func (s Scenario) base(b *baseTable, coll string, size float64) float64 {
	b.RLock()
	t, ok := b.t[size]
	b.RUnlock()
	if ok {
		return t
	}
	cfg, _ := s.parseConfig(map[string]string{}, coll) // no variable set: nothing to reject
	algo, proto, _ := s.choose(coll, size, cfg)
	t = s.predict(coll, size, algo, proto, cfg, s.truth())
	b.Lock()
	b.t[size] = t
	b.Unlock()
	return t
}

// generated is a generated landscape of either kind.
type generated interface {
	// under is env's log-gain by log2 size (sizeX), or the error NCCL
	// would report for env.
	under(env map[string]string) (func(x float64) float64, error)
	// key is what of env the landscape reads: two environments with the
	// same key gain the same.
	key(env map[string]string) string
}

// generated is the scenario's landscape; nil without one.
func (s Scenario) generated() generated {
	switch {
	case s.Landscape <= 0:
		return nil
	case s.LandscapeKind == "smooth":
		return smoothOf(s.Landscape)
	}
	return landscapeOf(s.Landscape)
}

func (l *landscape) under(env map[string]string) (func(float64) float64, error) {
	lv := levelsOf(env)
	return func(x float64) float64 { return l.logGain(&lv, x) }, l.check(&lv, env)
}

func (l *landscape) key(env map[string]string) string { return levelsOf(env).String() }

// String is the levels as digits.
func (lv levels) String() string {
	key := make([]byte, 0, nKnobs)
	for _, l := range lv {
		key = append(key, byte('0'+l))
	}
	return string(key)
}

// landscapeTime is the time of one operation of size on a landscape, gain its log-gain by sizeX.
func (s Scenario) landscapeTime(gain func(float64) float64, b *baseTable, coll string, size float64) float64 {
	return s.base(b, coll, size) / math.Exp(gain(sizeX(size)))
}

// HasTerms reports whether the scenario's landscape is made of terms that
// HeldTerms names (the levels family); a smooth landscape's gains are
// curves, not terms, and without a landscape there is nothing to name.
func (s Scenario) HasTerms() bool {
	_, ok := s.generated().(*landscape)
	return ok
}

// HeldTerms lists the terms of the scenario's landscape that env holds in
// full: interaction i as i, its decoy as the number of interactions plus
// i; none without a landscape. The search-quality benchmark asks it why a
// campaign missed an optimum.
func (s Scenario) HeldTerms(env map[string]string) []int {
	l, ok := s.generated().(*landscape)
	if !ok {
		return nil
	}
	lv := levelsOf(env)
	var out []int
	for i := range l.interactions {
		if holds(&lv, l.interactions[i].conds) {
			out = append(out, i)
		}
	}
	for i := range l.interactions {
		if holds(&lv, l.interactions[i].decoy) {
			out = append(out, len(l.interactions)+i)
		}
	}
	return out
}
