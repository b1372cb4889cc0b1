package search

import (
	"math"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"testing"

	"gonum.org/v1/gonum/diff/fd"

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
	sims := make([]float64, m*m*d)
	for a := range m {
		for b := a; b < m; b++ {
			g.similarities(points[a], points[b], sims[(a*m+b)*d:(a*m+b+1)*d])
		}
	}
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
