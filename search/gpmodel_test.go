package search

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"gonum.org/v1/gonum/diff/fd"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/nccltune/nccltune/space"
)

// TestGPFitGradientIsTheLikelihoods: the gradient L-BFGS climbs is the log
// posterior's, by finite differences, at weights away from the prior's mean.
func TestGPFitGradientIsTheLikelihoods(t *testing.T) {
	sp := wideSpace(t)
	g := newGP(sp, 1)
	rng := rand.New(rand.NewPCG(1, 2))
	m, d := 12, len(sp.Params)
	points := make([]gpPoint, m)
	for i := range points {
		points[i] = g.point(draw(sp, rng))
	}
	sims := g.pairSimilarities(points)
	ys := make([]float64, m)
	for i := range ys {
		ys[i] = rng.NormFloat64()
	}
	f := newGPFit(sims, d, ys)
	theta := make([]float64, 2*d+1)
	for i := range theta {
		theta[i] = f.prior[i] + rng.NormFloat64()*0.5
	}
	if v := f.value(theta); math.IsInf(v, 0) || math.IsNaN(v) {
		t.Fatalf("log posterior %g", v)
	}
	want := fd.Gradient(nil, f.value, theta, &fd.Settings{Formula: fd.Central})
	got := make([]float64, len(theta))
	f.grad(got, theta)
	for i := range got {
		if !(math.Abs(got[i]-want[i]) <= 1e-4*math.Max(1, math.Abs(want[i]))) {
			t.Errorf("d/dθ%d = %g, finite differences say %g", i, got[i], want[i])
		}
	}
}

// widePairObjective hides two pairs of settings that only pay together,
// each past a decoy that pays alone, among wideSpace's twenty settings, of
// which the other fourteen do nothing.
func widePairObjective(a space.Assignment) []float64 {
	pair := func(x, y bool, decoy bool) float64 {
		s := 1.0
		switch {
		case x && y:
			s *= 1.3
		case x || y:
			s *= 0.96
		}
		if decoy {
			s *= 1.2
		}
		return s
	}
	small := pair(a["NCCL_PROTO"] == "LL128", a["NCCL_NTHREADS"] == "512", a["NCCL_ALGO"] == "Tree")
	large := pair(a["NCCL_BUFFSIZE"] == "16777216", a["NCCL_CROSS_NIC"] == "2", a["NCCL_CUMEM_ENABLE"] == "1")
	return []float64{small, large, large}
}

// TestGPFindsPairsAmongManySettings: where most settings do nothing, a
// kernel that weighs every setting alike sees two configurations as
// unlike for differences that do not matter; with a weight per setting
// learnt from the trials, the process finds the two pairs that pay (in 8
// of these 10 campaigns; 3 with one weight for all).
func TestGPFindsPairsAmongManySettings(t *testing.T) {
	var found atomic.Int32
	t.Run("seeds", func(t *testing.T) {
		for seed := range int64(10) {
			t.Run(strconv.FormatInt(seed, 10), func(t *testing.T) {
				t.Parallel()
				best := runSearchIn(t, wideSpace(t), "gp", seed, 40, widePairObjective)
				if best[0] >= 1.3*0.999 && best[1] >= 1.3*0.999 {
					found.Add(1)
				}
			})
		}
	})
	if found.Load() < 6 {
		t.Errorf("both pairs found in %d of 10 campaigns of 40 trials", found.Load())
	}
}

// fitPoints are m random configurations of sp, their similarities as
// fitGP reads them, and random scores.
func fitPoints(t *testing.T, m int) (g *gpSampler, points []gpPoint, sims, ys []float64) {
	sp := wideSpace(t)
	g = newGP(sp, 1)
	rng := rand.New(rand.NewPCG(3, 4))
	for range m {
		points = append(points, g.point(draw(sp, rng)))
		ys = append(ys, rng.NormFloat64())
	}
	return g, points, g.pairSimilarities(points), ys
}

// every is 0, 1, ..., m-1: a fit on all m observations.
func every(m int) []int {
	out := make([]int, m)
	for i := range out {
		out[i] = i
	}
	return out
}

// candidateKernel is md's kernel between each candidate (a column) and each
// point (a row), and between a point and itself.
func candidateKernel(g *gpSampler, md *gpModel, cands, points []gpPoint) (ks *mat.Dense, prior float64) {
	ks = mat.NewDense(len(points), len(cands), nil)
	s := make([]float64, len(g.sp.Params))
	for j, c := range cands {
		for i, p := range points {
			g.similarities(c, p, s)
			k, _ := md.kernel(s)
			ks.Set(i, j, k)
		}
	}
	prior, _ = md.kernel(slices.Repeat([]float64{1}, len(s)))
	return ks, prior
}

// TestGPFitsItsWeightsOnTheTrialsPicked: a model whose weights are fitted
// on some of its trials has the weights of a model of those trials alone.
func TestGPFitsItsWeightsOnTheTrialsPicked(t *testing.T) {
	g, points, sims, ys := fitPoints(t, 30)
	d := len(points[0])
	picked := []int{2, 3, 5, 8, 13, 21, 29}
	var subPoints []gpPoint
	var subYs []float64
	for _, i := range picked {
		subPoints, subYs = append(subPoints, points[i]), append(subYs, ys[i])
	}
	got, want := fitGP(sims, d, ys, picked), fitGP(g.pairSimilarities(subPoints), d, subYs, every(len(picked)))
	if got == nil || want == nil {
		t.Fatal("no model")
	}
	for i := range d {
		if math.Abs(got.u[i]-want.u[i]) > 1e-9 || math.Abs(got.v[i]-want.v[i]) > 1e-9 {
			t.Errorf("parameter %d: weights %g, %g, fitted on the picked trials alone %g, %g", i, got.u[i], got.v[i], want.u[i], want.v[i])
		}
	}
	if got.noise != want.noise || got.alpha.Len() != len(ys) {
		t.Errorf("noise %g (on the picked trials alone %g), a posterior over %d trials", got.noise, want.noise, got.alpha.Len())
	}
}

// TestExpectedImprovementIsThePosteriors: a candidate's expected
// improvement is that of its posterior mean and variance, solved directly.
func TestExpectedImprovementIsThePosteriors(t *testing.T) {
	g, points, sims, ys := fitPoints(t, 20)
	m, d := len(points), len(points[0])
	md := fitGP(sims, d, ys, every(m))
	if md == nil {
		t.Fatal("no model")
	}
	K := mat.NewSymDense(m, nil)
	for a := range m {
		for b := a; b < m; b++ {
			k, _ := md.kernel(sims[(a*m+b)*d : (a*m+b+1)*d])
			if a == b {
				k += md.noise
			}
			K.SetSym(a, b, k)
		}
	}
	cands := []gpPoint{points[0], g.point(draw(g.sp, rand.New(rand.NewPCG(5, 6)))), g.point(draw(g.sp, rand.New(rand.NewPCG(7, 8))))}
	ks, prior := candidateKernel(g, md, cands, points)
	var kinvK mat.Dense
	if err := kinvK.Solve(K, ks); err != nil {
		t.Fatal(err)
	}
	_, sd := meanSD(ys)
	var y mat.VecDense
	y.MulVec(K, md.alpha) // the standardised scores
	want := make([]float64, len(cands))
	for j := range cands {
		mu := mat.Dot(kinvK.ColView(j), &y)
		v := prior + md.noise - mat.Dot(ks.ColView(j), kinvK.ColView(j))
		s := math.Sqrt(v)
		gain := mu - md.best - gpExploration
		z := gain / s
		want[j] = sd * (gain*distuv.UnitNormal.CDF(z) + s*distuv.UnitNormal.Prob(z))
	}
	got := improvementsOf(md, mat.DenseCopyOf(ks), prior)
	for j := range got {
		if math.Abs(got[j]-want[j]) > 1e-9*math.Max(1, math.Abs(want[j])) {
			t.Errorf("candidate %d: expected improvement %g, from its posterior %g", j, got[j], want[j])
		}
	}
}

// TestModelsKeepTheLatestTrials: past their bound, the trials a model uses
// and the fewer its weights are fitted on each hold the latest half of
// theirs, in the order told.
func TestModelsKeepTheLatestTrials(t *testing.T) {
	h := history{sp: &space.Space{}}
	rng := rand.New(rand.NewPCG(9, 10))
	for n := range 300 {
		h.remember(space.Assignment{"n": strconv.Itoa(n)}, []float64{rng.Float64()})
	}
	obs := h.observed([]int{0}, gpMaxObservations)
	fitted := keep(obs, []int{0}, gpFitObservations)
	number := func(t told) int { n, _ := strconv.Atoi(t.a["n"]); return n }
	if !slices.IsSortedFunc(obs, func(a, b told) int { return number(a) - number(b) }) {
		t.Error("the trials a model uses are out of the order told")
	}
	for k, i := range fitted[len(fitted)-gpFitObservations/2:] {
		if want := 300 - gpFitObservations/2 + k; number(obs[i]) != want {
			t.Errorf("the weights' latest trial %d is trial %d, want %d", k, number(obs[i]), want)
		}
	}
}

// improvementsOf are the expected improvements of candidates whose kernel
// values against md's observations are ks's columns (consumed).
func improvementsOf(md *gpModel, ks *mat.Dense, prior float64) []float64 {
	_, n := ks.Dims()
	means, js, acq := make([]float64, n), make([]int, n), make([]float64, n)
	md.means(ks, means)
	for j := range js {
		js[j] = j
	}
	md.addImprovements(ks, prior, means, js, acq)
	return acq
}

// TestGPLeavesOutTrialsThatDidNotMeasureTheRange: a trial that ran but
// left the range out (NaN) changes neither the fitted weights nor any
// candidate's expected improvement: the model is that of the other trials.
func TestGPLeavesOutTrialsThatDidNotMeasureTheRange(t *testing.T) {
	g, points, sims, ys := fitPoints(t, 30)
	m, d := len(points), len(points[0])
	left := []int{4, 11, 12, 25}
	var subPoints []gpPoint
	var subYs []float64
	for i := range m {
		if slices.Contains(left, i) {
			ys[i] = math.NaN()
			continue
		}
		subPoints, subYs = append(subPoints, points[i]), append(subYs, ys[i])
	}
	got, want := fitGP(sims, d, ys, every(m)), fitGP(g.pairSimilarities(subPoints), d, subYs, every(len(subPoints)))
	cands := make([]gpPoint, 5)
	rng := rand.New(rand.NewPCG(9, 10))
	for j := range cands {
		cands[j] = g.point(draw(g.sp, rng))
	}
	improvements := func(md *gpModel, points []gpPoint) []float64 {
		ks, prior := candidateKernel(g, md, cands, points)
		return improvementsOf(md, ks, prior)
	}
	for i := range d {
		if math.Abs(got.u[i]-want.u[i]) > 1e-3*want.u[i] || math.Abs(got.v[i]-want.v[i]) > 1e-3*want.v[i] {
			t.Errorf("setting %d: weights %g, %g; without the trials left out %g, %g", i, got.u[i], got.v[i], want.u[i], want.v[i])
		}
	}
	a, b := improvements(got, points), improvements(want, subPoints)
	for j := range a {
		if math.Abs(a[j]-b[j]) > 1e-4*math.Max(1e-3, math.Abs(b[j])) {
			t.Errorf("candidate %d: expected improvement %g; without the trials left out %g", j, a[j], b[j])
		}
	}
}

// TestKernelsOfNeighboursAreTheDirectOnes: the kernel that kernels corrects
// from a base's sums is the one computed over every parameter, for the
// candidates a proposal makes (neighbours of the bases, and draws that are
// no base's neighbour), in a space of twenty settings.
func TestKernelsOfNeighboursAreTheDirectOnes(t *testing.T) {
	g, points, _, ys := fitPoints(t, 40)
	if err := kernelsAreDirect(g, points, ys, rand.New(rand.NewPCG(5, 6))); err != "" {
		t.Error(err)
	}
}

// TestKernelsWithInactiveParametersAreTheDirectOnes: so too in a space with
// conditions, where an inactive parameter is NaN in a point.
func TestKernelsWithInactiveParametersAreTheDirectOnes(t *testing.T) {
	src := strings.Replace(testSpace, `when = { NCCL_ALGO = "Ring" }`, `when = { NCCL_ALGO = "Ring" }
[[param]]
name = "NCCL_BUFFSIZE"
values = ["default", "1M", "4M"]
when = { NCCL_PROTO = ["LL", "Simple"] }
[[param]]
name = "NCCL_MAX_P2P_NCHANNELS"
min = 1
max = 64
when = { NCCL_MIN_CTAS = ["1", "2", "3", "4"] }`, 1)
	sp, err := space.Parse("cond.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	g := newGP(sp, 1)
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 4))
		var points []gpPoint
		var ys []float64
		for range 30 {
			points = append(points, g.point(draw(sp, rng)))
			ys = append(ys, rng.NormFloat64())
		}
		if err := kernelsAreDirect(g, points, ys, rng); err != "" {
			t.Errorf("seed %d: %s", seed, err)
		}
	}
}

// kernelsAreDirect fits two models on points, and compares kernels' values
// for the candidates around random bases, and two draws, with the direct
// sums: "" where they agree.
func kernelsAreDirect(g *gpSampler, points []gpPoint, ys []float64, rng *rand.Rand) string {
	sims := g.pairSimilarities(points)
	var models []*gpModel
	for r := range 2 {
		y := slices.Clone(ys)
		y[r] += 1
		md := fitGP(sims, len(g.sp.Params), y, every(len(y)))
		if md == nil {
			return "singular kernel"
		}
		models = append(models, md)
	}
	bases := []space.Assignment{draw(g.sp, rng), draw(g.sp, rng), draw(g.sp, rng)}
	cands := append(g.candidates(bases, rng), draw(g.sp, rng), draw(g.sp, rng))
	candPoints := make([]gpPoint, len(cands))
	for j, c := range cands {
		candPoints[j] = g.point(c)
	}
	ks := []*mat.Dense{mat.NewDense(len(points), len(cands), nil), mat.NewDense(len(points), len(cands), nil)}
	js := rng.Perm(len(cands)) // a chunk of candidates is any of them, in any order
	g.kernels(models, points, bases, cands).fill(js, ks)
	for r, md := range models {
		direct, _ := candidateKernel(g, md, candPoints, points)
		want := mat.NewDense(len(points), len(cands), nil)
		for k, j := range js {
			want.SetCol(k, mat.Col(nil, j, direct))
		}
		if !mat.EqualApprox(ks[r], want, 1e-9) {
			return fmt.Sprintf("model %d: the kernels corrected from the bases' are not the direct ones", r)
		}
	}
	return ""
}

// TestBestCandidateIsTheHighestSum: the candidate bestCandidate picks,
// solving only those whose bounds reach the best sum found, is the one
// whose expected improvements summed over every model's solve are the
// highest, with models of trials that pay in a few settings and of noise
// alone.
func TestBestCandidateIsTheHighestSum(t *testing.T) {
	g, points, sims, ys := fitPoints(t, 60)
	rng := rand.New(rand.NewPCG(7, 8))
	for trial := range 6 {
		var models []*gpModel
		for r := range 3 {
			y := make([]float64, len(ys))
			for i := range y {
				y[i] = rng.NormFloat64()
				if trial%2 == 0 { // scores that a few parameters explain
					y[i] = 3*points[i][r] + points[i][r+1]*points[i][r+2] + 0.1*y[i]
				}
			}
			if md := fitGP(sims, len(points[0]), y, every(len(y))); md != nil {
				models = append(models, md)
			}
		}
		bases := []space.Assignment{draw(g.sp, rng), draw(g.sp, rng), draw(g.sp, rng)}
		cands := g.candidates(bases, rng)
		candPoints := make([]gpPoint, len(cands))
		for j, c := range cands {
			candPoints[j] = g.point(c)
		}
		sums := make([]float64, len(cands))
		for _, md := range models {
			ks, prior := candidateKernel(g, md, candPoints, points)
			for j, v := range improvementsOf(md, ks, prior) {
				sums[j] += v
			}
		}
		want := 0
		for j, v := range sums {
			if v > sums[want] {
				want = j
			}
		}
		if got := g.bestCandidate(models, points, bases, cands); got != want {
			t.Errorf("trial %d: candidate %d of %d, summing %g; the highest sum is candidate %d's, %g", trial, got, len(cands), sums[got], want, sums[want])
		}
	}
}
