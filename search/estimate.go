package search

import (
	"math"

	"github.com/nccltune/nccltune/space"
)

// Estimate is, for each trial (trials[i] measured scores[i], per range of
// sp as Tell takes them), per range, the log score that the Gaussian
// process the search proposes with expects of its configuration, fitted as
// Ask fits it: on at most gpMaxObservations of the trials (the latest half
// and the best of the others), so that a trial left out is estimated from
// its neighbours alone. A trial's own measurements are pooled with those of
// configurations like it, so that a lucky measurement counts for less and
// an unlucky one for more. Choosing the best measured configuration picks
// the luckiest of those near the top (the winner's curse); choosing by the
// estimate does so less. NaN where the trial did not measure the range or
// the range has no model (its kernel is singular).
func Estimate(sp *space.Space, trials []space.Assignment, scores [][]float64) [][]float64 {
	g := newGP(sp, 0)
	for i, a := range trials {
		g.remember(a, scores[i])
	}
	obs, points, fits := g.fit(g.focused()) // focused on none: every range
	out := make([][]float64, len(trials))
	s, mu := make([]float64, len(sp.Params)), make([]float64, len(fits))
	for i, t := range g.told {
		clear(mu) // the posterior mean per fit, standardised: Σⱼ k(t, obs j) αⱼ
		p := g.point(t.a)
		for j := range obs {
			g.similarities(p, points[j], s)
			for k, f := range fits {
				if f.md != nil {
					kv, _ := f.md.kernel(s)
					mu[k] += kv * f.md.alpha.AtVec(j)
				}
			}
		}
		out[i] = make([]float64, len(sp.Ranges))
		for r := range out[i] {
			out[i][r] = math.NaN()
		}
		for k, f := range fits {
			if f.md != nil && t.ran(f.r) {
				out[i][f.r] = f.md.mean + f.md.sd*mu[k]
			}
		}
	}
	return out
}
