package results

import (
	"encoding/json"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/nccltune/nccltune/space"
	"github.com/nccltune/nccltune/store"
)

// Importance is how much of a range's score variation one parameter explains.
type Importance struct {
	Param string
	// Status says whether the parameter was analysed, or why not; Share and
	// P are measured only where it was (0 and 1 otherwise, and null in JSON).
	Status Status
	Share  float64 // between-group share of the variance of log(score): 0 (none) to 1 (all)
	// P is the F-test's p-value of the parameter's groups at its step, times
	// the candidates of the step (Bonferroni), and no less than the step's
	// before: the chance that groups of no effect would explain as much.
	P float64
	// With is, of an Aliased parameter, the analysed one it was set with.
	With string
}

// Status is what the analysis could say of a parameter, or of a range.
type Status string

const (
	// Analysed: the parameter's share and p-value are measured.
	Analysed Status = "analysed"
	// Unread: some trial's NCCL log shows NCCL did not read the variable as
	// set (NCCL_ALGO on one rank): what it seems to explain is another's doing.
	Unread Status = "unread"
	// Unconfirmed: no NCCL log of a trial that set the variable shows NCCL
	// read it (the output had no NCCL INFO lines: NCCL_DEBUG_FILE, gloo),
	// so no effect can be traced to it.
	Unconfirmed Status = "unconfirmed"
	// TooFewTrials: the F-test would have fewer than MinResidualDF residual
	// degrees of freedom.
	TooFewTrials Status = "too few trials"
	// Aliased: every trial's value of the parameter went with one of an
	// analysed parameter's (With) group: the trials set them together (a
	// warm start's ring with 16 MiB buffers, trees tried too or not), so
	// what that one explains may be this one's doing. Tested after it, this
	// one would read as a measured no-effect.
	Aliased Status = "aliased"
	// NotVaried: every completed trial of the range held the parameter at
	// one value (NCCL's default, where none set it), so the trials cannot
	// tell what it does: not the measured "no effect" of an analysed share of 0.
	NotVaried Status = "not varied"
)

// MinResidualDF is the fewest residual degrees of freedom an F-test is run
// with. The within-group variance it divides by, estimated on d of them, has
// a relative standard error of sqrt(2/d): 141% at d = 1, 100% at 2, below its
// own size only from 3 on. With fewer, the p-value rests on one or two
// residuals (F(1,1) at 3 trials), so the parameter is reported untested.
const MinResidualDF = 3

// minTrials is the fewest trials of a range any parameter is tested on: two
// groups take one degree of freedom and the mean another.
const minTrials = MinResidualDF + 2

// MarshalJSON writes share and p as null for a parameter not analysed: a
// script must not read its placeholders as a measured 0 share at p = 1.
func (i Importance) MarshalJSON() ([]byte, error) {
	out := struct {
		Param  string   `json:"param"`
		Status Status   `json:"status"`
		Share  *float64 `json:"share"`
		P      *float64 `json:"p"`
		With   string   `json:"with"` // "" unless aliased: a key scripts may read on every parameter
	}{Param: i.Param, Status: i.Status, With: i.With}
	if i.Status == Analysed {
		out.Share, out.P = &i.Share, &i.P
	}
	return json.Marshal(out)
}

// RangeImportance is which parameters matter for one range.
type RangeImportance struct {
	// Params are the range's parameters: the analysed by share, then those
	// left out, each with its Status. Never nil, so JSON has a list.
	Params []Importance `json:"params"`
	// Reason is why no parameter was analysed, "" where one was:
	// TooFewTrials, else Unconfirmed where NCCL's log did not confirm
	// some parameter the trials set, else NotVaried (the trials held
	// every parameter at one value, or left it to NCCL).
	Reason Status `json:"reason"`
}

// Significance is the p-value below which an importance is significant.
const Significance = 0.05

// Significant reports whether the parameter's effect is more than chance.
func (i Importance) Significant() bool { return i.Status == Analysed && i.P < Significance }

// Importances ranks the parameters per range by the share of the variance of
// log(score) over completed trials that each explains, stepwise: the parameter
// whose groups explain most is taken first, then the one whose groups add
// most to its, fitted together by least squares, and so on. The search samples good values of
// several parameters together, so a one-pass analysis would credit a
// bystander with the effect of the parameter it travels with. Each step's
// share is epsilon-squared (what k groups would explain by chance is taken
// off, so many-valued parameters are not favoured on few trials). Integer
// parameters are grouped into quarters of their values (groupsOf); the trials
// that leave a parameter to NCCL (inactive, or at the value NCCL takes
// unset) form a group of their own. A parameter whose groups those of one a step took
// decide is Aliased with it, not tested after it. Only variables NCCL's log confirmed are analysed (see
// Unread and Unconfirmed), and of a workload's per-collective NCCL_ALGO and
// NCCL_PROTO only the range's own collective's part; each step has an
// F-test, run only with MinResidualDF. The result is indexed like sp.Ranges.
func Importances(sp *space.Space, trials []store.Trial) []RangeImportance {
	out := make([]RangeImportance, len(sp.Ranges))
	leftOut := unconfirmed(sp, trials)
	for i, r := range sp.Ranges {
		var ps []space.Param
		for _, p := range sp.Params {
			// Another collective's part of NCCL_ALGO or NCCL_PROTO: NCCL
			// never applies it to this range's collective, so whatever it
			// seems to explain here (a lone trial that its group isolates)
			// is another parameter's doing.
			if p.Collective == "" || p.Collective == strings.ReplaceAll(r.Collective, "_", "") {
				ps = append(ps, p)
			}
		}
		out[i] = rangeImportance(r.Name, ps, trials, leftOut)
	}
	return out
}

// rangeImportance is Importances' analysis of one range over its parameters
// ps, leaving out those leftOut says why.
func rangeImportance(name string, ps []space.Param, trials []store.Trial, leftOut map[string]Status) RangeImportance {
	var scores []float64
	var done []store.Trial
	for _, t := range trials {
		if s, ok := t.Scores[name]; ok && t.State == store.Complete && isScore(s) {
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
	out := RangeImportance{Params: []Importance{}}
	if len(scores) < minTrials {
		// No test could run, whatever the logs confirmed: NCCL's defaults
		// set nothing to confirm, and a failed trial confirms nothing, so
		// every early or failed campaign read as unconfirmed.
		leftOut = nil
	}
	var left []space.Param
	for _, p := range ps {
		if why, ok := leftOut[p.Name]; ok {
			out.Params = append(out.Params, Importance{Param: p.Name, Status: why, P: 1})
		} else {
			left = append(left, p)
		}
	}
	out.Params = append(out.Params, stepwise(scores, left, done)...)
	sort.SliceStable(out.Params, func(a, b int) bool {
		pa, pb := out.Params[a], out.Params[b]
		if (pa.Status == Analysed) != (pb.Status == Analysed) {
			return pa.Status == Analysed
		}
		return pa.Share > pb.Share
	})
	out.Reason = reasonOf(out.Params)
	return out
}

// reasonOf is why none of ps was analysed: "" where one was, else the
// first of TooFewTrials, Unconfirmed (some parameter's log did not confirm
// it, or showed it unread) and NotVaried that some parameter has.
func reasonOf(ps []Importance) Status {
	reason := NotVaried
	for _, p := range ps {
		switch {
		case p.Status == Analysed:
			return ""
		case p.Status == TooFewTrials:
			reason = TooFewTrials
		case (p.Status == Unconfirmed || p.Status == Unread) && reason == NotVaried:
			reason = Unconfirmed
		}
	}
	return reason
}

// stepwise is the stepwise analysis of the log scores of trials over the
// parameters ps; a parameter that never has the degrees of freedom for its
// F-test is TooFewTrials, one the trials held in one group NotVaried, one
// whose groups a step's parameter's decide Aliased with it.
func stepwise(scores []float64, ps []space.Param, trials []store.Trial) []Importance {
	groups := make([][]string, len(ps))
	var out []Importance
	var left []int
	for j, p := range ps {
		groups[j] = groupsOf(p, trials)
		if len(scores) >= minTrials && !slices.ContainsFunc(groups[j], func(g string) bool { return g != groups[j][0] }) {
			out = append(out, Importance{Param: p.Name, Status: NotVaried, P: 1})
			continue
		}
		left = append(left, j)
	}
	total := sumSquares(scores)
	var model [][]string // the groups of the parameters the steps took
	stepP := 0.0         // the last step's p-value
	// On fewer trials, no parameter is tested, not even one that the
	// trials hold at one value.
	for len(left) > 0 && len(scores) >= minTrials {
		rss, rank := leastSquares(scores, model)
		best, bestShare, bestP := -1, -1.0, 1.0
		for k, j := range left {
			if share, p, tested := explained(scores, model, groups[j], total, rss, rank); tested && share > bestShare {
				best, bestShare, bestP = k, share, p
			}
		}
		if best < 0 {
			break // no candidate left has the residual degrees of freedom for its test
		}
		// The best of len(left) candidates: Bonferroni's correction for
		// having picked it. Nor is it significant after a step that was not:
		// that step's parameter, of no effect, took the largest of the
		// noise, and what is left reads as less noisy than it is (a
		// parameter of no effect was significant in 10% of campaigns).
		j := left[best]
		stepP = max(stepP, min(1, bestP*float64(len(left))))
		out = append(out, Importance{Param: ps[j].Name, Status: Analysed, Share: bestShare, P: stepP})
		model = append(model, groups[j])
		left = slices.Delete(left, best, best+1)
		// Those whose groups its groups decide (grouped as it is, or
		// more coarsely: 16 MiB buffers with every ring, and trees tried
		// too) have nothing left to explain: whether it or they do what
		// its share says, the trials cannot tell, and the steps chose.
		left = slices.DeleteFunc(left, func(k int) bool {
			if !decides(groups[j], groups[k]) {
				return false
			}
			out = append(out, Importance{Param: ps[k].Name, Status: Aliased, P: 1, With: ps[j].Name})
			return true
		})
	}
	for _, j := range left {
		out = append(out, Importance{Param: ps[j].Name, Status: TooFewTrials, P: 1})
	}
	return out
}

// decides reports whether labels a decide labels b: each label of a always
// goes with one label of b, so that b's groups are a's or unions of them.
func decides(a, b []string) bool {
	ab := map[string]string{}
	for i := range a {
		if x, ok := ab[a[i]]; ok && x != b[i] {
			return false
		}
		ab[a[i]] = b[i]
	}
	return true
}

func sumSquares(y []float64) float64 {
	mean := stat.Mean(y, nil)
	var ss float64
	for _, v := range y {
		ss += (v - mean) * (v - mean)
	}
	return ss
}

// groupsOf labels each trial with its group for parameter p, as NCCL reads
// its value: every trial that leaves p's variable to NCCL (p inactive,
// "default", or the value NCCL takes unset: NCCL_IB_QPS_PER_CONNECTION=1)
// is one group; of an integer parameter, the quarter of the distinct values
// the trials took that its value lies in (each value its own group where
// they took four or fewer). Quartiles of the trials' values merged every
// value into one group where most trials took one (a search that settled on
// 32 and tried 4 twice): the parameter read as held at one value.
func groupsOf(p space.Param, trials []store.Trial) []string {
	labels := make([]string, len(trials))
	read := func(t store.Trial) (string, bool) {
		v, ok := t.Params[p.Name]
		if d, known := p.NCCLDefault(); !ok || v == space.Unset || known && p.NCCLReads(v) == d {
			return "", false
		}
		return p.NCCLReads(v), true
	}
	var values []float64
	for _, t := range trials {
		if v, set := read(t); set && !p.Categorical() {
			if x, err := strconv.ParseFloat(v, 64); err == nil {
				values = append(values, x)
			}
		}
	}
	slices.Sort(values)
	values = slices.Compact(values)
	for i, t := range trials {
		v, set := read(t)
		switch {
		case !set:
			labels[i] = "(unset)"
		case p.Categorical():
			labels[i] = v
		default:
			x, _ := strconv.ParseFloat(v, 64)
			k, _ := slices.BinarySearch(values, x)
			labels[i] = "q" + strconv.Itoa(k*4/max(1, len(values)))
		}
	}
	return labels
}

// unconfirmed says, per parameter left out for what NCCL's log says of its
// variable, why: Unread where the log of some completed trial that set it
// shows NCCL did not read it as set, else Unconfirmed where no such log
// shows NCCL read it (a trial without NCCL's INFO lines says nothing either
// way, so a campaign of such trials confirms nothing), and NotVaried where
// no completed trial set it: every one left it to NCCL, which no log can
// confirm, and no fault of the logs is to be looked for. The DDP step's own
// knobs are not NCCL's to confirm.
func unconfirmed(sp *space.Space, trials []store.Trial) map[string]Status {
	out := map[string]Status{}
	for _, p := range sp.Params {
		name := p.Variable()
		if v, err := space.Lookup(name); err == nil && v.IsArg() {
			continue
		}
		why := NotVaried
		for _, t := range trials {
			if t.State != store.Complete || !slices.ContainsFunc(t.Env, func(kv string) bool { return strings.HasPrefix(kv, name+"=") }) {
				continue
			}
			if why == NotVaried {
				why = Unconfirmed
			}
			if !t.NCCLLog.Debug {
				continue
			}
			if slices.Contains(t.NCCLLog.Unconfirmed(t.Env), name) {
				why = Unread
				break
			}
			why = ""
		}
		if why != "" {
			out[p.Name] = why
		}
	}
	return out
}

// explained is epsilon-squared of the groups of a candidate parameter
// beside those of the model's, as a share of total: (SS_between - df
// MS_within) / total, at least 0, where SS_between is what adding its groups
// to the model's takes off the residual sum of squares (rss, of a fit of
// rank rank), fitted together by least squares; the F-test's p-value of
// that; and whether it had MinResidualDF (untested, it is 0 and 1). Each
// step took its parameter's group means off what the steps before left,
// which in trials not balanced over the parameters left part of their
// effects for a later one to explain: a parameter of no effect, tested
// after two that had one, read as significant in 18% of campaigns at 5%.
func explained(y []float64, model [][]string, groups []string, total, rss float64, rank int) (share, p float64, tested bool) {
	rssWith, rankWith := leastSquares(y, append(slices.Clip(model), groups))
	df, free := float64(rankWith-rank), float64(len(y)-rankWith)
	switch {
	case free < MinResidualDF:
		return 0, 1, false
	case total == 0 || rss <= roundoff*total || df == 0:
		// What is left after the model is, where it explained everything,
		// rounding: nothing for a test to find; nor is there where the
		// groups are the model's (df 0).
		return 0, 1, true
	}
	between, within := max(0, rss-rssWith), rssWith/free
	switch {
	case rssWith > roundoff*total:
		p = distuv.F{D1: df, D2: free}.Survival(between / df / within)
	case between > 0:
		p, within = 0, 0 // the groups explain everything
	default:
		p = 1
	}
	return min(1, max(0, (between-df*within)/total)), p, true
}

// leastSquares fits y by a mean per group of each of factors (each the
// trials' groups of one parameter) added together, and returns the residual
// sum of squares and the fit's rank (the degrees of freedom it took, the
// overall mean's included). The normal equations are built from the groups'
// counts, a column per group, and solved in the eigenvectors of their matrix
// that are not null: a group that others' decide adds no column's worth.
func leastSquares(y []float64, factors [][]string) (rss float64, rank int) {
	mean := stat.Mean(y, nil)
	cols := [][]int{} // per trial, its columns: 0 is the overall mean
	index := map[[2]string]int{}
	for i := range y {
		row := []int{0}
		for f, groups := range factors {
			key := [2]string{strconv.Itoa(f), groups[i]}
			c, ok := index[key]
			if !ok {
				c = len(index) + 1
				index[key] = c
			}
			row = append(row, c)
		}
		cols = append(cols, row)
	}
	n := len(index) + 1
	xtx, xty := mat.NewSymDense(n, nil), make([]float64, n)
	for i, row := range cols {
		for _, a := range row {
			xty[a] += y[i] - mean
			for _, b := range row {
				if a <= b {
					xtx.SetSym(a, b, xtx.At(a, b)+1)
				}
			}
		}
		rss += (y[i] - mean) * (y[i] - mean)
	}
	var eig mat.EigenSym
	if !eig.Factorize(xtx, true) {
		return rss, 1 // never for a matrix of counts; the mean alone then
	}
	values := eig.Values(nil)
	var vectors mat.Dense
	eig.VectorsTo(&vectors)
	// Counts are whole numbers: an eigenvalue this small of their largest is 0.
	tol := 1e-9 * slices.Max(values)
	for k, v := range values {
		if v <= tol {
			continue
		}
		rank++
		proj := 0.0
		for a := range n {
			proj += vectors.At(a, k) * xty[a]
		}
		rss -= proj * proj / v
	}
	return max(rss, 0), rank
}

// roundoff is the share of the total variation below which what is left is
// taken for floating-point rounding: a residual spread a millionth of the
// scores' (1e-12 of their variance) is no measurement.
const roundoff = 1e-12
