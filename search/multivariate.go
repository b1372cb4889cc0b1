package search

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/nccltune/nccltune/space"
)

// Multivariate TPE, as Optuna's TPESampler(multivariate=True), which
// goptuna lacks: the good and the bad trials of a range are each a mixture
// of product kernels, one per trial, over all of the range's parameters at
// once, so a combination of settings that only pays together is drawn again
// together; goptuna's TPE models each parameter on its own and cannot see it.

// mvCandidates is how many draws from the good trials' density are ranked
// by l(x)/g(x), Optuna's n_ei_candidates.
const mvCandidates = 24

// mvMaxGood caps the good trials: Optuna's default gamma, min(ceil(0.1 n), 25).
const mvMaxGood = 25

// point is an assignment encoded per parameter: a categorical's index, an
// integer (its log where the space says log); NaN where inactive.
type point []float64

func (t *tpeSampler) encodePoint(a space.Assignment) point {
	x := make(point, len(t.sp.Params))
	for i, p := range t.sp.Params {
		x[i] = math.NaN()
		v, ok := a[p.Name]
		if !ok {
			continue
		}
		if ir, err := encode(p, v); err == nil {
			x[i] = ir
			if !p.Categorical() {
				x[i] = scale(p, ir)
			}
		}
	}
	return x
}

// scale is where an integer value lies on the axis its kernel works on.
func scale(p space.Param, v float64) float64 {
	if p.Log {
		return math.Log(v)
	}
	return v
}

// parzen is a mixture of product kernels centred on some trials, plus a
// uniform prior component, as TPE's l(x) or g(x).
type parzen struct {
	t       *tpeSampler
	centres []point
	sigma   []float64 // per numeric parameter, the kernels' width on its axis
}

func (t *tpeSampler) parzen(centres []point) parzen {
	d := len(t.sp.Params)
	width := 0.2 * math.Pow(float64(max(len(centres), 1)), -1/float64(d+4)) // Scott's rule, as Optuna's multivariate TPE
	sigma := make([]float64, d)
	for i, p := range t.sp.Params {
		if !p.Categorical() {
			lo, hi := scale(p, float64(p.Min)), scale(p, float64(p.Max))
			sigma[i] = max(width*(hi-lo), scale(p, float64(p.Min)+1)-lo, 1e-9)
		}
	}
	return parzen{t: t, centres: centres, sigma: sigma}
}

// logDensity is log of the mixture's density at x.
func (m parzen) logDensity(x point) float64 {
	comps := make([]float64, 0, len(m.centres)+1)
	for _, c := range m.centres {
		comps = append(comps, m.logKernel(c, x))
	}
	comps = append(comps, m.logKernel(nil, x))
	top := slices.Max(comps)
	sum := 0.0
	for _, v := range comps {
		sum += math.Exp(v - top)
	}
	return top + math.Log(sum/float64(len(comps)))
}

// logKernel is the log density at x of the component centred on c (nil: the prior).
func (m parzen) logKernel(c point, x point) float64 {
	out := 0.0
	for i, p := range m.t.sp.Params {
		xi := x[i]
		if math.IsNaN(xi) {
			continue // inactive here: no dimension to weigh
		}
		k := float64(len(p.Values))
		if c == nil || math.IsNaN(c[i]) {
			out += math.Log(1 / m.uniformWidth(p, k))
			continue
		}
		if p.Categorical() {
			// Optuna's categorical kernel: the observed choice, plus a prior of weight one over all.
			if xi == c[i] {
				out += math.Log((k + 1) / (2 * k))
			} else {
				out += math.Log(1 / (2 * k))
			}
			continue
		}
		z := (xi - c[i]) / m.sigma[i]
		out += -0.5*z*z - math.Log(m.sigma[i]*math.Sqrt(2*math.Pi))
	}
	return out
}

// uniformWidth is the measure of p's axis that the uniform prior spreads
// over: its k choices, its integers, or its log range, so that the prior is a
// density per the same unit as the Gaussian kernels.
func (m parzen) uniformWidth(p space.Param, k float64) float64 {
	switch {
	case p.Categorical():
		return k
	case p.Log:
		return max(scale(p, float64(p.Max))-scale(p, float64(p.Min)), 1e-9)
	default:
		return float64(p.Max-p.Min) + 1 // Max-Min+1 overflows where Max is math.MaxInt64
	}
}

// draw samples an assignment from the mixture: a component at random, then
// each active parameter from that component's kernel.
func (m parzen) draw(rng *rand.Rand) space.Assignment {
	var c point
	if k := rng.IntN(len(m.centres) + 1); k < len(m.centres) {
		c = m.centres[k]
	}
	a := space.Assignment{}
	for i, p := range m.t.sp.Params {
		if !m.t.sp.Active(p, a) {
			continue
		}
		switch {
		case c == nil || math.IsNaN(c[i]):
			a[p.Name] = uniform(rng, p)
		case p.Categorical():
			// The kernel's odds: the centre's choice (k+1)/2k, each other 1/2k.
			k, centre := len(p.Values), int(c[i])
			if k == 1 || rng.Float64()*float64(2*k) < float64(k+1) {
				a[p.Name] = p.Values[centre]
			} else {
				a[p.Name] = p.Values[(centre+1+rng.IntN(k-1))%k]
			}
		default:
			v := c[i] + rng.NormFloat64()*m.sigma[i]
			if p.Log {
				v = math.Exp(v)
			}
			a[p.Name] = strconv.FormatInt(toInt(p, v), 10)
		}
	}
	return a
}

// propose is, for range r, the untried draw from the good trials' density
// that is most likely good rather than bad, l(x)/g(x); false when too few
// trials have been told or every draw was tried.
func (t *tpeSampler) propose(r int, rng *rand.Rand) (space.Assignment, bool) {
	var order []int
	for i, tt := range t.told {
		if tt.about(r) {
			order = append(order, i)
		}
	}
	if len(order) < startupTrials {
		return nil, false
	}
	score := func(i int) float64 { return t.told[i].score(r) }
	slices.SortStableFunc(order, func(i, j int) int { return -cmpFloat(score(i), score(j)) })
	finite := 0
	for _, i := range order {
		if !math.IsInf(score(i), -1) {
			finite++
		}
	}
	// A failed trial is never a good one, however few trials ran.
	nGood := min(int(math.Ceil(0.1*float64(len(order)))), mvMaxGood, finite)
	if nGood == 0 {
		return nil, false
	}
	var good, bad []point
	for k, i := range order {
		x := t.encodePoint(t.told[i].a)
		if k < nGood {
			good = append(good, x)
		} else {
			bad = append(bad, x)
		}
	}
	l, g := t.parzen(good), t.parzen(bad)
	var best space.Assignment
	bestRatio := math.Inf(-1)
	for range mvCandidates {
		a := l.draw(rng)
		if t.tried(a) {
			continue
		}
		x := t.encodePoint(a)
		if ratio := l.logDensity(x) - g.logDensity(x); ratio > bestRatio {
			best, bestRatio = a, ratio
		}
	}
	return best, best != nil
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
