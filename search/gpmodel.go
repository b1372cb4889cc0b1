package search

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize"
)

// gpModel is one range's posterior under an additive kernel of first and
// second order (Duvenaud et al.) with a weight per parameter in each order
// (automatic relevance determination): between points whose parameters'
// similarities are s,
//
//	k(s) = Σᵢ uᵢsᵢ + Σᵢ<ⱼ vᵢvⱼsᵢsⱼ
//
// so that a parameter that moves the score gets a large u, one that pays
// only with another a large v, and one that does nothing fades out of the
// model instead of diluting every similarity.
type gpModel struct {
	u, v  []float64 // per parameter, the first and second order's weights
	noise float64
	ch    mat.Cholesky
	upper blas64.Triangular // ch's U, K = UᵀU, which every chunk of candidates solves with
	diag  []float64         // K's diagonal: each observation's variance
	alpha *mat.VecDense     // K⁻¹ y
	// the log scores' mean and standard deviation, which y standardises
	mean, sd float64
	best     float64 // the highest y
}

// kernel is k(s), and with it Σᵢ vᵢsᵢ, which its gradient needs.
func (md *gpModel) kernel(s []float64) (k, vs float64) {
	var t kernelSums
	for i, x := range s {
		t.add(md, i, x)
	}
	return t.value(), t.v
}

// kernelSums are the sums k(s) is made of, Σᵢ uᵢsᵢ, Σᵢ vᵢsᵢ and Σᵢ (vᵢsᵢ)²:
// k(s) = Σᵢ uᵢsᵢ + ((Σᵢ vᵢsᵢ)² - Σᵢ (vᵢsᵢ)²) / 2.
type kernelSums struct{ u, v, vv float64 }

// add adds parameter i's similarity x under md's weights.
func (t *kernelSums) add(md *gpModel, i int, x float64) {
	t.u += md.u[i] * x
	w := md.v[i] * x
	t.v += w
	t.vv += w * w
}

// swap replaces parameter i's similarity from by to.
func (t *kernelSums) swap(md *gpModel, i int, from, to float64) {
	t.u += md.u[i] * (to - from)
	w, w0 := md.v[i]*to, md.v[i]*from
	t.v += w - w0
	t.vv += w*w - w0*w0
}

func (t kernelSums) value() float64 { return t.u + 0.5*(t.v*t.v-t.vv) }

// The log weights' and log noise's normal priors: a model that knows
// nothing yet splits a standardised score's variance evenly between the
// orders and among the parameters, and its fit may move each weight by a
// factor of e^gpPriorSD for every standard deviation. A wide prior lets
// the trials decide (measured: 2.5 beat 1.5 by half a point after 40 and
// 80 trials on generated landscapes 1-200, where it was chosen, and by
// 0.3 points after 40 on 8x400G TCP; held out, on 201-400, the two were
// alike); it only keeps a weight from running off where the trials say
// nothing of it.
const (
	gpPriorSD    = 2.5
	gpPriorNoise = 0.05
	// gpFitEvaluations bounds the fit's evaluations of the likelihood and
	// its gradient; each costs a factorisation.
	gpFitEvaluations = 40
	gpJitter         = 1e-6
	// gpUnobserved is the noise variance, against a standardised score's 1,
	// of an observation that tells nothing (a trial that left the range
	// out): a GP's missing observation, it weighs nothing in the posterior
	// or the fit, and the matrices keep one shape for every range.
	gpUnobserved = 1e6
)

// gpPrior is the log weights' and log noise's prior mean for d parameters.
func gpPrior(d int) []float64 {
	theta := make([]float64, 2*d+1)
	for i := range d {
		theta[i] = math.Log(0.5 / float64(d))
		theta[d+i] = math.Log(math.Sqrt(1 / float64(max(d*(d-1), 1))))
	}
	theta[2*d] = math.Log(gpPriorNoise)
	return theta
}

// fitGP models ys over m observations whose parameters' similarities are
// sims[(a*m+b)*d+i] (a <= b), with the weights and noise of highest
// posterior density given the observations fit picks, in ascending order
// (fitting costs a factorisation per step, so it is bounded by what it
// reads), or the prior's mean where those leave the kernel singular; nil
// if that is singular too.
func fitGP(sims []float64, d int, ys []float64, fit []int) *gpModel {
	all := newGPFit(sims, d, ys)
	sub := all
	if len(fit) < len(ys) {
		m, k := len(ys), len(fit)
		subSims, subYs := make([]float64, k*k*d), make([]float64, k)
		for a, i := range fit {
			subYs[a] = ys[i]
			for b, j := range fit[a:] {
				copy(subSims[(a*k+a+b)*d:(a*k+a+b+1)*d], sims[(i*m+j)*d:(i*m+j+1)*d])
			}
		}
		sub = newGPFit(subSims, d, subYs)
	}
	for _, theta := range [][]float64{sub.maximise(), sub.prior} {
		md := all.model(theta)
		if md.ch.Factorize(all.k) && md.ch.SolveVecTo(md.alpha, all.y) == nil {
			var u mat.TriDense
			md.ch.UTo(&u)
			md.upper = u.RawTriangular()
			md.diag = make([]float64, len(ys))
			for i := range md.diag {
				md.diag[i] = all.k.At(i, i)
			}
			return md
		}
	}
	return nil
}

// maximise returns the log weights and noise of highest posterior density,
// climbed by L-BFGS from the prior's mean (its line search backs off where
// a kernel is singular, and the result is its last accepted step).
func (f *gpFit) maximise() []float64 {
	res, err := optimize.Minimize(optimize.Problem{Func: f.value, Grad: f.grad}, slices.Clone(f.prior),
		&optimize.Settings{FuncEvaluations: gpFitEvaluations, GradientThreshold: 1e-3}, &optimize.LBFGS{})
	if res == nil || (err != nil && (math.IsInf(res.F, 0) || math.IsNaN(res.F))) {
		return f.prior
	}
	return res.X
}

// newGPFit standardises ys for a fit over the similarities sims; a NaN is
// an observation that tells nothing (see gpUnobserved).
func newGPFit(sims []float64, d int, ys []float64) *gpFit {
	var observed []float64
	for _, v := range ys {
		if !math.IsNaN(v) {
			observed = append(observed, v)
		}
	}
	mean, sd := meanSD(observed)
	f := &gpFit{sims: sims, d: d, y: mat.NewVecDense(len(ys), nil), unobserved: make([]bool, len(ys)), prior: gpPrior(d), mean: mean, sd: sd, best: math.Inf(-1)}
	for i, v := range ys {
		if math.IsNaN(v) {
			f.unobserved[i] = true
			continue
		}
		f.y.SetVec(i, (v-mean)/sd)
		f.best = math.Max(f.best, f.y.AtVec(i))
	}
	return f
}

// gpFit is the negative log posterior density of a model's weights and
// noise, and its gradient.
type gpFit struct {
	sims []float64
	d    int
	y    *mat.VecDense // the standardised log scores
	// unobserved marks the observations that tell nothing (y 0, noise gpUnobserved)
	unobserved []bool
	mean, sd   float64 // of the log scores
	best       float64 // the highest y
	prior      []float64
	k          *mat.SymDense
	vs         []float64 // Σᵢ vᵢsᵢ per pair of observations
	// the last evaluation, which L-BFGS asks for value and gradient alike
	at       []float64
	val      float64
	gradient []float64
}

func (f *gpFit) model(theta []float64) *gpModel {
	d, m := f.d, f.y.Len()
	md := &gpModel{u: make([]float64, d), v: make([]float64, d), noise: math.Exp(theta[2*d]) + gpJitter, alpha: &mat.VecDense{}, mean: f.mean, sd: f.sd, best: f.best}
	for i := range d {
		md.u[i], md.v[i] = math.Exp(theta[i]), math.Exp(theta[d+i])
	}
	if f.k == nil {
		f.k, f.vs = mat.NewSymDense(m, nil), make([]float64, m*m)
	}
	for a := range m {
		for b := a; b < m; b++ {
			k, vs := md.kernel(f.sims[(a*m+b)*d : (a*m+b+1)*d])
			if a == b {
				k += md.noise
				if f.unobserved[a] {
					k += gpUnobserved
				}
			}
			f.k.SetSym(a, b, k)
			f.vs[a*m+b] = vs
		}
	}
	return md
}

func (f *gpFit) value(theta []float64) float64 {
	f.evaluate(theta)
	return f.val
}

func (f *gpFit) grad(out, theta []float64) {
	f.evaluate(theta)
	copy(out, f.gradient)
}

// evaluate sets val and gradient at theta: with G = ααᵀ − K⁻¹, the log
// likelihood's derivative in a kernel parameter p is ½ Σ G∘∂K/∂p, where
// ∂K/∂uᵢ = Sᵢ and ∂K/∂vᵢ = Sᵢ∘(Σⱼ vⱼSⱼ − vᵢSᵢ).
func (f *gpFit) evaluate(theta []float64) {
	if slices.Equal(theta, f.at) {
		return
	}
	f.at = slices.Clone(theta)
	d, m := f.d, f.y.Len()
	if f.gradient == nil {
		f.gradient = make([]float64, len(theta))
	}
	md := f.model(theta)
	var inv mat.SymDense
	if !md.ch.Factorize(f.k) || md.ch.SolveVecTo(md.alpha, f.y) != nil || md.ch.InverseTo(&inv) != nil {
		f.val = math.Inf(1)
		clear(f.gradient)
		return
	}
	logPost := -0.5*mat.Dot(f.y, md.alpha) - 0.5*md.ch.LogDet()
	gu, gv := make([]float64, d), make([]float64, d)
	trace := 0.0
	for a := range m {
		for b := a; b < m; b++ {
			g := md.alpha.AtVec(a)*md.alpha.AtVec(b) - inv.At(a, b)
			if a == b {
				trace += g
			} else {
				g *= 2 // G's lower triangle
			}
			vs, s := f.vs[a*m+b], f.sims[(a*m+b)*d:(a*m+b+1)*d]
			for i, x := range s {
				gs := g * x
				gu[i] += gs
				gv[i] += gs * (vs - md.v[i]*x)
			}
		}
	}
	for i := range d {
		f.gradient[i] = 0.5 * md.u[i] * gu[i]
		f.gradient[d+i] = 0.5 * md.v[i] * gv[i]
	}
	f.gradient[2*d] = 0.5 * (md.noise - gpJitter) * trace
	for i, t := range theta {
		z := (t - f.prior[i]) / gpPriorSD
		logPost -= 0.5 * z * z
		f.gradient[i] -= z / gpPriorSD
	}
	f.val = -logPost
	for i := range f.gradient {
		f.gradient[i] = -f.gradient[i]
	}
}

// addImprovements adds to acq[js[k]] candidate js[k]'s expected
// improvement, in log score, beyond gpExploration; kernels' columns are the
// candidates' kernel values against the observations (consumed), prior
// their kernel with themselves, means[j] candidate j's posterior mean. All
// candidates take one triangular solve.
func (md *gpModel) addImprovements(kernels *mat.Dense, prior float64, means []float64, js []int, acq []float64) {
	m, n := kernels.Dims()
	// With K = UᵀU, a candidate's posterior variance takes off its prior
	// the squared norm of v = U⁻ᵀk*, solved in place of kernels (a copy of
	// every candidate's column was a tenth of a proposal's cost).
	blas64.Trsm(blas.Left, blas.Trans, 1, md.upper, kernels.RawMatrix())
	explained := make([]float64, n)
	for i := range m {
		for k, x := range kernels.RawRowView(i) {
			explained[k] += x * x
		}
	}
	for k, j := range js {
		acq[j] += md.improvement(means[j], md.stddev(prior, explained[k]))
	}
}

// means sets out to the posterior means of candidates whose kernel values
// against the observations are kernels' columns.
func (md *gpModel) means(kernels *mat.Dense, out []float64) {
	mat.NewVecDense(len(out), out).MulVec(kernels.T(), md.alpha)
}

// leastExplained sets out to the part of each candidate's variance (its
// kernel values against the observations are kernels' columns) that the
// one observation explaining most of it would explain alone, k_i²/K_ii, a
// millionth of its prior less for rounding: all the observations together
// explain at least as much (conditioning on more never adds variance), so
// it bounds the improvement without a solve.
func (md *gpModel) leastExplained(kernels *mat.Dense, prior float64, out []float64) {
	clear(out)
	m, _ := kernels.Dims()
	for i := range m {
		inverse := 1 / md.diag[i]
		for k, x := range kernels.RawRowView(i) {
			if v := x * x * inverse; v > out[k] { // a NaN explains nothing
				out[k] = v
			}
		}
	}
	for k := range out {
		out[k] = math.Max(0, out[k]-1e-6*(prior+md.noise))
	}
}

// stddev is a posterior standard deviation: of a candidate whose kernel with
// itself is prior, the observations explaining explained of its variance.
func (md *gpModel) stddev(prior, explained float64) float64 {
	return math.Sqrt(math.Max(prior+md.noise-explained, 1e-12))
}

// improvement is the expected improvement, in log score, beyond
// gpExploration of a candidate of posterior mean mu and standard deviation
// s: it grows with s.
func (md *gpModel) improvement(mu, s float64) float64 {
	gain := mu - md.best - gpExploration
	z := gain / s
	return md.sd * (gain*normCDF(z) + s*normPDF(z))
}
