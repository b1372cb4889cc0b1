package search

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/nccltune/nccltune/space"
	"gonum.org/v1/gonum/mat"
)

// TestKernelsWithInactiveParametersAreTheDirectOnes: in a space with
// conditions (inactive parameters are NaN in a point), the kernels
// corrected from the bases' sums are the direct ones.
func TestKernelsWithInactiveParametersAreTheDirectOnes(t *testing.T) {
	src := strings.Replace(testSpace, `when = { NCCL_ALGO = "Ring" }`, `when = { NCCL_ALGO = "Ring" }
[[param]]
name = "NCCL_BUFFSIZE"
values = ["default", "1M", "4M"]
when = { NCCL_PROTO = ["LL", "Simple"] }
[[param]]
name = "NCCL_NTHREADS"
min = 64
max = 512
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
		sims := g.pairSimilarities(points)
		var models []*gpModel
		for r := range 2 {
			y := slices.Clone(ys)
			y[r] += 1
			md := fitGP(sims, len(sp.Params), y, every(len(y)))
			if md == nil {
				t.Fatal("singular kernel")
			}
			models = append(models, md)
		}
		bases := []space.Assignment{draw(sp, rng), draw(sp, rng), draw(sp, rng)}
		cands := append(g.candidates(bases, rng), draw(sp, rng), draw(sp, rng))
		candPoints := make([]gpPoint, len(cands))
		for j, c := range cands {
			candPoints[j] = g.point(c)
		}
		ks := []*mat.Dense{mat.NewDense(len(points), len(cands), nil), mat.NewDense(len(points), len(cands), nil)}
		g.kernels(models, points, bases, cands, ks)
		for r, md := range models {
			want, _ := candidateKernel(g, md, candPoints, points)
			if !mat.EqualApprox(ks[r], want, 1e-9) {
				t.Errorf("seed %d model %d: the kernels corrected from the bases' are not the direct ones", seed, r)
			}
		}
	}
}
