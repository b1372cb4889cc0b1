package results

import (
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/nccltune/nccltune/space"
	"github.com/nccltune/nccltune/store"
)

// Importance is how much of a range's score variation one parameter explains.
type Importance struct {
	Param string  `json:"param"`
	Share float64 `json:"share"` // between-group share of the variance of log(score): 0 (none) to 1 (all)
	// P is the F-test's p-value of the parameter's groups at its step, times
	// the candidates of the step (Bonferroni): the chance that groups of no
	// effect would explain as much.
	P float64 `json:"p"`
	// Confirmed is false for a variable NCCL's log did not show it read in
	// some trial that set it (NCCL_ALGO on one rank, say): what it "explains"
	// is another's doing or noise, so it is not analysed (Share 0, P 1).
	Confirmed bool `json:"confirmed"`
}

// Significance is the p-value below which an importance is significant.
const Significance = 0.05

// Significant reports whether the parameter's effect is more than chance.
func (i Importance) Significant() bool { return i.Confirmed && i.P < Significance }

// Importances ranks the parameters per range by the share of the variance of
// log(score) over completed trials that each explains, stepwise: the parameter
// whose groups explain most is taken first and its group means removed, then
// the next is measured on what is left. The search samples good values of
// several parameters together, so a one-pass analysis would credit a
// bystander with the effect of the parameter it travels with. Each step's
// share is epsilon-squared (what k groups would explain by chance is taken
// off, so many-valued parameters are not favoured on few trials). Integer
// parameters are grouped into quartiles; a parameter inactive in a trial forms
// a group of its own. Only variables NCCL's log confirmed are analysed (see
// Importance.Confirmed), and of a workload's per-collective NCCL_ALGO and
// NCCL_PROTO only the range's own collective's part; each step has an
// F-test. The result is indexed like sp.Ranges.
func Importances(sp *space.Space, trials []store.Trial) [][]Importance {
	out := make([][]Importance, len(sp.Ranges))
	confirmed := confirmedParams(sp, trials)
	for i, r := range sp.Ranges {
		var scores []float64
		var done []store.Trial
		for _, t := range trials {
			if s, ok := t.Scores[r.Name]; ok && t.State == store.Complete && s > 0 {
				scores = append(scores, math.Log(s))
				done = append(done, t)
			}
		}
		// Measured from the first: equal scores are then exactly 0, where
		// log(7) n times over has a mean that is not log(7), and the
		// rounding left a total variation for rounding to "explain".
		for j := len(scores) - 1; j >= 0; j-- {
			scores[j] -= scores[0]
		}
		if len(scores) < 3 {
			continue
		}
		groups := make([][]string, len(sp.Params))
		for j, p := range sp.Params {
			groups[j] = groupsOf(p, done)
		}
		total := sumSquares(scores)
		residual := slices.Clone(scores)
		var left []int
		fitted := 0.0 // degrees of freedom the earlier steps' group means took
		for j, p := range sp.Params {
			if p.Collective != "" && p.Collective != strings.ReplaceAll(r.Collective, "_", "") {
				// Another collective's part of NCCL_ALGO or NCCL_PROTO: NCCL
				// never applies it to this range's collective, so whatever it
				// seems to explain here (a lone trial that its group isolates)
				// is another parameter's doing.
				continue
			}
			if confirmed[p.Name] {
				left = append(left, j)
			} else {
				out[i] = append(out[i], Importance{Param: p.Name, P: 1})
			}
		}
		for len(left) > 0 {
			best, bestShare, bestP := 0, -1.0, 1.0
			for k, j := range left {
				if share, p := explained(residual, groups[j], total, fitted); share > bestShare {
					best, bestShare, bestP = k, share, p
				}
			}
			// The best of len(left) candidates: Bonferroni's correction for having picked it.
			j := left[best]
			out[i] = append(out[i], Importance{Param: sp.Params[j].Name, Share: bestShare, P: min(1, bestP*float64(len(left))), Confirmed: true})
			fitted += removeGroupMeans(residual, groups[j])
			left = slices.Delete(left, best, best+1)
		}
		sort.SliceStable(out[i], func(a, b int) bool { return out[i][a].Share > out[i][b].Share })
	}
	return out
}

func sumSquares(y []float64) float64 {
	mean := stat.Mean(y, nil)
	var ss float64
	for _, v := range y {
		ss += (v - mean) * (v - mean)
	}
	return ss
}

// removeGroupMeans subtracts from y its groups' means and returns the degrees
// of freedom they took: one fewer than the groups.
func removeGroupMeans(y []float64, groups []string) float64 {
	sums, counts := map[string]float64{}, map[string]float64{}
	for i, v := range y {
		sums[groups[i]] += v
		counts[groups[i]]++
	}
	for i := range y {
		y[i] -= sums[groups[i]] / counts[groups[i]]
	}
	return float64(len(counts) - 1)
}

// groupsOf labels each trial with its group for parameter p.
func groupsOf(p space.Param, trials []store.Trial) []string {
	labels := make([]string, len(trials))
	var values []float64
	for _, t := range trials {
		if v, err := strconv.ParseFloat(t.Params[p.Name], 64); err == nil && !p.Categorical() {
			values = append(values, v)
		}
	}
	slices.Sort(values)
	for i, t := range trials {
		v, ok := t.Params[p.Name]
		switch {
		case !ok:
			labels[i] = "(inactive)"
		case p.Categorical():
			labels[i] = v
		default:
			x, _ := strconv.ParseFloat(v, 64)
			q := 0
			for q < 3 && x > stat.Quantile(float64(q+1)/4, stat.Empirical, values, nil) {
				q++
			}
			labels[i] = "q" + strconv.Itoa(q)
		}
	}
	return labels
}

// confirmedParams marks the parameters whose variable NCCL's log showed it
// read in every completed trial that set it (a trial without NCCL's debug
// log says nothing either way); the DDP step's own knobs are not NCCL's.
func confirmedParams(sp *space.Space, trials []store.Trial) map[string]bool {
	out := map[string]bool{}
	for _, p := range sp.Params {
		ok := true
		if v, err := space.Lookup(p.Variable()); err == nil && !v.IsArg() {
			for _, t := range trials {
				if t.State == store.Complete && slices.Contains(t.NCCLLog.Unread(t.Env), p.Variable()) {
					ok = false
					break
				}
			}
		}
		out[p.Name] = ok
	}
	return out
}

// explained is epsilon-squared of y grouped by groups, as a share of total:
// (SS_between - (k-1) MS_within) / total, at least 0; and the F-test's
// p-value of the groups. y are residuals after earlier steps took fitted
// degrees of freedom, which the within-group variance no longer has: counted
// as n-k, it would come out too small and every later step too significant.
func explained(y []float64, groups []string, total, fitted float64) (share, p float64) {
	mean := stat.Mean(y, nil)
	sums, counts := map[string]float64{}, map[string]float64{}
	for i, v := range y {
		sums[groups[i]] += v
		counts[groups[i]]++
	}
	// What is left after earlier steps took out their group means is, where
	// they explained everything, rounding: nothing for a test to find.
	if total == 0 || sumSquares(y) <= roundoff*total {
		return 0, 1
	}
	var between float64
	for g, s := range sums {
		m := s / counts[g]
		between += counts[g] * (m - mean) * (m - mean)
	}
	k, free := float64(len(sums)), float64(len(y))-fitted
	if free <= k || k < 2 {
		return 0, 1
	}
	within := (sumSquares(y) - between) / (free - k)
	switch {
	case within > 0:
		p = distuv.F{D1: k - 1, D2: free - k}.Survival(between / (k - 1) / within)
	case between > 0:
		p = 0 // the groups explain everything
	default:
		p = 1
	}
	return min(1, max(0, (between-(k-1)*within)/total)), p
}

// roundoff is the share of the total variation below which what is left is
// taken for floating-point rounding: a residual spread a millionth of the
// scores' (1e-12 of their variance) is no measurement.
const roundoff = 1e-12
