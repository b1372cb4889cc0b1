package search

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"

	"gonum.org/v1/gonum/mat"

	"github.com/nccltune/nccltune/space"
)

// gpSampler is Bayesian optimisation with a Gaussian process: per range, the
// log scores of the trials told (a failed one a little below the worst) are
// modelled with an additive kernel of first and second order over the
// parameters (Duvenaud et al.), so that a pair of settings that only pays
// together gets a term of its own, and the candidate of highest expected
// improvement is proposed: the best configurations' neighbours, one or two
// settings changed, and random draws. Trial n proposes for range n mod R,
// after startupTrials random draws. The model uses at most gpMaxObservations
// trials (the best half and the latest half), which bounds its cost per
// proposal whatever the campaign's length.
type gpSampler struct {
	sp   *space.Space
	seed int64
	history
	rotation
}

func newGP(sp *space.Space, seed int64) *gpSampler {
	return &gpSampler{sp: sp, seed: seed, rotation: rotation{ranges: len(sp.Ranges)}}
}

func (g *gpSampler) Tell(a space.Assignment, scores []float64) error {
	g.remember(a, scores)
	return nil
}

// sims are, per parameter, how alike two assignments' values are: 1 for
// the same choice (or both inactive), 0 for another, and a Gaussian in the
// value (its log where the space says log) for integers.
func (g *gpSampler) sims(a, b space.Assignment, out []float64) {
	for i, p := range g.sp.Params {
		va, oka := a[p.Name]
		vb, okb := b[p.Name]
		switch {
		case !oka || !okb:
			if oka == okb {
				out[i] = 1
			} else {
				out[i] = 0
			}
		case p.Categorical():
			if va == vb {
				out[i] = 1
			} else {
				out[i] = 0
			}
		default:
			x, _ := strconv.ParseFloat(va, 64)
			y, _ := strconv.ParseFloat(vb, 64)
			lo, hi := float64(p.Min), float64(p.Max)
			if p.Log {
				x, y, lo, hi = math.Log(x), math.Log(y), math.Log(lo), math.Log(hi)
			}
			l := gpWidth * math.Max(hi-lo, 1e-9)
			d := (x - y) / l
			out[i] = math.Exp(-0.5 * d * d)
		}
	}
}

// The kernel's weights of its first- and second-order terms, the noise
// variance of a standardised log score, the width of an integer's Gaussian
// as a share of its axis, and the model's bounds.
const (
	gpFirstOrder, gpSecondOrder = 0.5, 0.5
	gpNoise                     = 0.02
	gpWidth                     = 0.2
	gpMaxObservations           = 150
	gpNeighbourBases            = 3
	gpRandomCandidates          = 200
)

// kernel is the additive kernel of first and second order between a and b.
func (g *gpSampler) kernel(a, b space.Assignment, buf []float64) float64 {
	g.sims(a, b, buf)
	d := len(buf)
	first, second := 0.0, 0.0
	for i := range d {
		first += buf[i]
		for j := i + 1; j < d; j++ {
			second += buf[i] * buf[j]
		}
	}
	k := gpFirstOrder * first / float64(d)
	if d > 1 {
		k += gpSecondOrder * second / float64(d*(d-1)/2)
	}
	return k
}

// Ask proposes the untried candidate of highest expected improvement for
// trial n's range.
func (g *gpSampler) Ask(n int) (space.Assignment, error) {
	r, _ := g.rangeFor(n)
	rng := rand.New(rand.NewPCG(uint64(g.seed), trialSeed(g.seed, n, "gp")))
	random := func() space.Assignment { return draw(g.sp, rng) }
	if len(g.told) < startupTrials {
		return random(), nil
	}
	// The range's log scores, a failure a little below the worst that ran.
	var xs []space.Assignment
	var ys []float64
	minY := math.Inf(1)
	for _, t := range g.told {
		if t.scores != nil && t.scores[r] > 0 {
			minY = math.Min(minY, math.Log(t.scores[r]))
		}
	}
	if math.IsInf(minY, 1) {
		return random(), nil
	}
	for _, t := range g.observed(r) {
		y := minY - 0.1 // a failure: worse than any that ran
		if t.scores != nil && t.scores[r] > 0 {
			y = math.Log(t.scores[r])
		}
		xs, ys = append(xs, t.a), append(ys, y)
	}
	mean, sd := 0.0, 0.0
	for _, y := range ys {
		mean += y
	}
	mean /= float64(len(ys))
	for _, y := range ys {
		sd += (y - mean) * (y - mean)
	}
	sd = math.Sqrt(sd/float64(len(ys))) + 1e-9
	m := len(xs)
	buf := make([]float64, len(g.sp.Params))
	K := mat.NewSymDense(m, nil)
	for i := range m {
		for j := i; j < m; j++ {
			v := g.kernel(xs[i], xs[j], buf)
			if i == j {
				v += gpNoise
			}
			K.SetSym(i, j, v)
		}
	}
	var ch mat.Cholesky
	if !ch.Factorize(K) {
		return random(), nil
	}
	yv := mat.NewVecDense(m, nil)
	best := math.Inf(-1)
	for i, y := range ys {
		yv.SetVec(i, (y-mean)/sd)
		best = math.Max(best, y)
	}
	var alpha mat.VecDense
	ch.SolveVecTo(&alpha, yv)
	fbest := (best - mean) / sd
	// The candidates: the best configurations with one or two settings changed, and random draws.
	order := make([]int, m)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmpFloat(ys[b], ys[a]) })
	var cands []space.Assignment
	for _, i := range order[:min(gpNeighbourBases, m)] {
		base := xs[i]
		for pi, p := range g.sp.Params {
			for _, v := range values(p, 5) {
				a := withValue(g.sp, base, p.Name, v)
				cands = append(cands, a)
				for _, q := range g.sp.Params[pi+1:] {
					for _, w := range values(q, 5) {
						cands = append(cands, withValue(g.sp, a, q.Name, w))
					}
				}
			}
		}
	}
	for range gpRandomCandidates {
		cands = append(cands, random())
	}
	kstar := mat.NewVecDense(m, nil)
	var tmp mat.VecDense
	var pick space.Assignment
	bestEI := math.Inf(-1)
	for _, c := range cands {
		if g.tried(c) {
			continue
		}
		for i := range m {
			kstar.SetVec(i, g.kernel(c, xs[i], buf))
		}
		mu := mat.Dot(kstar, &alpha)
		ch.SolveVecTo(&tmp, kstar)
		v := g.kernel(c, c, buf) + gpNoise - mat.Dot(kstar, &tmp)
		s := math.Sqrt(math.Max(v, 1e-12))
		z := (mu - fbest) / s
		ei := (mu-fbest)*normCDF(z) + s*normPDF(z)
		if ei > bestEI {
			bestEI, pick = ei, c
		}
	}
	if pick == nil {
		return random(), nil
	}
	return pick, nil
}

// observed are the trials the model of range r uses: all of them up to
// gpMaxObservations, else the best half by r's score and the latest half.
func (g *gpSampler) observed(r int) []told {
	if len(g.told) <= gpMaxObservations {
		return g.told
	}
	score := func(t told) float64 {
		if t.scores != nil && t.scores[r] > 0 {
			return t.scores[r]
		}
		return math.Inf(-1)
	}
	latest := len(g.told) - gpMaxObservations/2
	older := slices.Clone(g.told[:latest])
	slices.SortStableFunc(older, func(a, b told) int { return cmpFloat(score(b), score(a)) })
	return append(older[:gpMaxObservations-gpMaxObservations/2], g.told[latest:]...)
}

// normCDF and normPDF are the standard normal's, for expected improvement.
func normCDF(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }
func normPDF(z float64) float64 { return math.Exp(-0.5*z*z) / math.Sqrt(2*math.Pi) }
