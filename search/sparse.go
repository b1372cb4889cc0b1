package search

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/nccltune/nccltune/space"
)

// sparseSampler is Bayesian optimisation of combinatorial structures (BOCS,
// Baptista & Poloczek 2018). Per range, the log scores of the trials that
// ran are a linear regression over features of each setting and of each
// pair of settings, under a horseshoe prior: most coefficients shrink to
// nothing, and the few the data back, a pair that only pays together among
// them, keep their size, where a Gaussian prior shrinks them all alike. A
// proposal is the best untried configuration under one draw from each
// searched range's posterior (Thompson sampling): the sum over the ranges
// of what the draw says it gains over the range's best configuration told,
// times the chance that it runs at all (see culprits). Failures are kept
// out of the regression: a failure says that some pair of settings is
// invalid, not that each of its settings is slow.
type sparseSampler struct {
	seed int64
	history
	rotation
	enc *encoding
}

// maxSparseUnits bounds the unit features: the model weighs every pair of
// them, so their square is the proposal's cost. Ordinary spaces have a few
// dozen.
const maxSparseUnits = 256

// maxSparseClimb bounds the work of a climb's step (climbWork): it weighs
// every neighbour of one and two settings changed, each over every pair of
// the settings it holds, so the work grows with the fourth power of the
// settings (a legal space of 50 took 15 s a proposal, one of 60 a minute).
// The examples' spaces need under 80,000, twenty settings 1.3 million
// (half a second a proposal).
const maxSparseClimb = 1 << 24

func newSparse(sp *space.Space, seed int64) (*sparseSampler, error) {
	enc, err := newEncoding(sp)
	if err != nil {
		return nil, fmt.Errorf("sampler sparse: %w", err)
	}
	return &sparseSampler{history: history{sp: sp}, seed: seed, rotation: rotation{ranges: len(sp.Ranges)}, enc: enc}, nil
}

func (s *sparseSampler) Tell(a space.Assignment, scores []float64) error {
	s.remember(a, scores)
	return nil
}

const (
	// sparseObservations bounds the trials a model uses, and so a proposal's cost.
	sparseObservations = 100
	// sparseSweeps are the Gibbs sampler's sweeps before its draw is used.
	sparseSweeps = 60
	// sparseStarts are the starts, per range, of the search for a draw's
	// best configuration: the range's best configurations told, and as
	// many random draws.
	sparseStarts = 4
	// sparseMaxStarts bounds the starts of a proposal, of four ranges or
	// more: each climb weighs every range's draw, so starts per range made
	// a proposal's cost grow with the square of the ranges.
	sparseMaxStarts = 2 * 4 * sparseStarts
)

// encoding maps an assignment to its unit features, indicators per
// parameter: one for each of a categorical's values but its first, and one
// for each cell of an integer's grid (the values nearest each grid point,
// on the log axis where the space says log), since NCCL's integers matter
// by the range they fall in (a threshold of channels, of queue pairs). An
// inactive parameter has none. Pair features are products of two
// parameters' unit features.
type encoding struct {
	sp     *space.Space
	grids  [][]string  // per parameter, the values a proposal takes
	cuts   [][]float64 // per integer parameter, the bounds between its grid's cells
	offset []int       // per parameter, the index of its first unit feature
	units  int
	gates  []bool   // per parameter: some condition reads it, so setting it may switch others on or off
	pairs  [][2]int // unit features of each pair feature
}

func newEncoding(sp *space.Space) (*encoding, error) {
	e := &encoding{sp: sp, gates: make([]bool, len(sp.Params))}
	for _, p := range sp.Params {
		for _, c := range p.When {
			if i := slices.IndexFunc(sp.Params, func(q space.Param) bool { return q.Name == c.Var }); i >= 0 {
				e.gates[i] = true
			}
		}
	}
	for _, p := range sp.Params {
		grid := values(p, gpGridPoints)
		e.grids = append(e.grids, grid)
		e.offset = append(e.offset, e.units)
		if p.Categorical() {
			e.cuts = append(e.cuts, nil)
			e.units += len(p.Values) - 1
			continue
		}
		var cuts []float64
		for i := 1; i < len(grid); i++ {
			cuts = append(cuts, (e.axis(p, grid[i-1])+e.axis(p, grid[i]))/2)
		}
		e.cuts = append(e.cuts, cuts)
		e.units += len(grid)
	}
	if e.units > maxSparseUnits {
		return nil, fmt.Errorf("the space has %d unit features (a categorical's values, an integer's cells), more than %d, and the model weighs every pair of them; use tpe-gp, or search fewer values", e.units, maxSparseUnits)
	}
	if w := e.climbWork(); w > maxSparseClimb {
		return nil, fmt.Errorf("the space's %d settings are too many for its model: each step of a proposal's climb weighs %d neighbours of one or two settings changed, each over every pair of the settings it holds (many seconds a proposal); use tpe-gp, or search fewer settings", len(sp.Params), w/(e.units+len(sp.Params)*len(sp.Params)))
	}
	for pi := range sp.Params {
		for qi := pi + 1; qi < len(sp.Params); qi++ {
			for i := e.offset[pi]; i < e.end(pi); i++ {
				for j := e.offset[qi]; j < e.end(qi); j++ {
					e.pairs = append(e.pairs, [2]int{i, j})
				}
			}
		}
	}
	return e, nil
}

// climbWork is the work of a step of maximise's climb per range drawn:
// the neighbours of one and two settings changed, each weighed over its
// unit features and the pairs of the settings it holds (linear.value).
func (e *encoding) climbWork() int {
	values := 0
	for _, g := range e.grids {
		values += len(g)
	}
	d := len(e.sp.Params)
	return values * values / 2 * (e.units + d*d)
}

// end is one past the index of parameter pi's last unit feature.
func (e *encoding) end(pi int) int {
	if pi+1 < len(e.offset) {
		return e.offset[pi+1]
	}
	return e.units
}

func (e *encoding) axis(p space.Param, v string) float64 {
	x, _ := strconv.ParseFloat(v, 64)
	if p.Log {
		return math.Log(math.Max(x, 1e-9))
	}
	return x
}

// features is the number of features: units and pairs.
func (e *encoding) features() int { return e.units + len(e.pairs) }

// unitsOf writes a's unit features to u.
func (e *encoding) unitsOf(a space.Assignment, u []float64) {
	clear(u)
	for pi, p := range e.sp.Params {
		if v, ok := a[p.Name]; ok {
			e.set(u, pi, v)
		}
	}
}

// set writes to u the unit features of parameter pi at value v, in place
// of those it had.
func (e *encoding) set(u []float64, pi int, v string) {
	clear(u[e.offset[pi]:e.end(pi)])
	p := e.sp.Params[pi]
	if !p.Categorical() {
		u[e.offset[pi]+e.cell(pi, v)] = 1
	} else if k := slices.Index(p.Values, v); k > 0 {
		u[e.offset[pi]+k-1] = 1
	}
}

// cell is the cell of integer parameter pi's grid that value v falls in.
func (e *encoding) cell(pi int, v string) int {
	x, k := e.axis(e.sp.Params[pi], v), 0
	for _, c := range e.cuts[pi] {
		if x >= c {
			k++
		}
	}
	return k
}

// row lists the features a holds (units, then pairs), writing its unit
// features to u; every feature is an indicator.
func (e *encoding) row(a space.Assignment, u []float64) []int {
	e.unitsOf(a, u)
	var out []int
	for i, ui := range u {
		if ui != 0 {
			out = append(out, i)
		}
	}
	for k, pr := range e.pairs {
		if u[pr[0]] != 0 && u[pr[1]] != 0 {
			out = append(out, e.units+k)
		}
	}
	return out
}

// linear is a draw of the regression: the value of an assignment is
// u·main + uᵀ pair u over its unit features u.
type linear struct {
	main  []float64
	pair  []float64 // units × units, the upper triangle: unit i with unit j at i*units+j
	units int
}

func (e *encoding) linear(beta []float64) *linear {
	l := &linear{main: beta[:e.units], pair: make([]float64, e.units*e.units), units: e.units}
	for k, pr := range e.pairs {
		l.pair[pr[0]*e.units+pr[1]] = beta[e.units+k]
	}
	return l
}

func (l *linear) value(u []float64) float64 {
	var buf [32]int
	return l.valueHeld(held(u, buf[:0]), u)
}

// held appends the unit features u holds to out. A configuration holds
// one per setting at most, so the pairs are summed over those held alone
// (a climb's inner loop).
func held(u []float64, out []int) []int {
	for i, ui := range u {
		if ui != 0 {
			out = append(out, i)
		}
	}
	return out
}

// valueHeld is value(u), given the unit features u holds (held): a
// proposal weighs each configuration under every range's draw, and lists
// what it holds once.
func (l *linear) valueHeld(held []int, u []float64) float64 {
	v := 0.0
	for k, i := range held {
		v += l.main[i]
		row := l.pair[i*l.units : (i+1)*l.units]
		for _, j := range held[k+1:] {
			v += row[j] * u[j]
		}
	}
	return v
}

// horseshoe draws the coefficients of y over the binary design whose rows
// hold the features listed in rows (p features in all) from their
// posterior under a horseshoe prior, by Gibbs sampling with Makalic &
// Schmidt (2016)'s auxiliary variables, each sweep's coefficients by
// Bhattacharya et al. (2016)'s sampler, whose cost grows with the square of
// the observations and only linearly with the features. A row holds a few
// dozen of the features, so products with the design go over its lists.
func horseshoe(rows [][]int, p int, y []float64, rng *rand.Rand) []float64 {
	n := len(rows)
	beta := make([]float64, p)
	lambda2, nu := make([]float64, p), make([]float64, p)
	for j := range p {
		lambda2[j], nu[j] = 1, 1
	}
	sigma2, tau2, xi := 1.0, 1.0, 1.0
	d, u, dw, scatter := make([]float64, p), make([]float64, p), make([]float64, p), make([]float64, p)
	M := mat.NewSymDense(n, nil)
	var ch mat.Cholesky
	v, w := mat.NewVecDense(n, nil), mat.NewVecDense(n, nil)
	// times is the design times x, at row i.
	times := func(i int, x []float64) float64 {
		sum := 0.0
		for _, k := range rows[i] {
			sum += x[k]
		}
		return sum
	}
	invGamma := func(shape, scale float64) float64 {
		return distuv.InverseGamma{Alpha: shape, Beta: scale, Src: rng}.Rand()
	}
	for range sparseSweeps {
		// β ~ N(A⁻¹Xᵀy, σ²A⁻¹), A = XᵀX + diag(1/(τ²λ²)): a prior draw u of β/σ
		// corrected by the data, (XDXᵀ + I) w = y/σ - Xu - δ, β/σ = u + DXᵀw.
		for j := range p {
			d[j] = tau2 * lambda2[j]
			u[j] = math.Sqrt(d[j]) * rng.NormFloat64()
		}
		for i := range n {
			for _, k := range rows[i] {
				scatter[k] = d[k]
			}
			for j := i; j < n; j++ {
				M.SetSym(i, j, times(j, scatter))
			}
			M.SetSym(i, i, M.At(i, i)+1)
			for _, k := range rows[i] {
				scatter[k] = 0
			}
		}
		if !ch.Factorize(M) {
			break
		}
		sigma := math.Sqrt(sigma2)
		for i := range n {
			v.SetVec(i, y[i]/sigma-times(i, u)-rng.NormFloat64())
		}
		if ch.SolveVecTo(w, v) != nil {
			break
		}
		clear(dw)
		for i := range n {
			for _, k := range rows[i] {
				dw[k] += w.AtVec(i)
			}
		}
		for j := range p {
			beta[j] = sigma * (u[j] + d[j]*dw[j])
		}
		// σ², then the local and global scales and their auxiliaries.
		rss, shrink := 0.0, 0.0
		for i := range n {
			r := y[i] - times(i, beta)
			rss += r * r
		}
		for j := range p {
			shrink += beta[j] * beta[j] / (tau2 * lambda2[j])
		}
		sigma2 = invGamma(float64(n+p)/2, (rss+shrink)/2)
		sum := 0.0
		for j := range p {
			b2 := beta[j] * beta[j] / (2 * sigma2)
			lambda2[j] = invGamma(1, 1/nu[j]+b2/tau2)
			nu[j] = invGamma(1, 1+1/lambda2[j])
			sum += b2 / lambda2[j]
		}
		tau2 = invGamma(float64(p+1)/2, 1/xi+sum)
		xi = invGamma(1, 1+1/tau2)
	}
	return beta
}

// Ask proposes the untried configuration of highest gain under a draw from
// each searched range's posterior, weighed by its chance to run.
func (s *sparseSampler) Ask(n int) (space.Assignment, error) {
	rng := rand.New(rand.NewPCG(uint64(s.seed), trialSeed(s.seed, n, "sparse")))
	// A space of one configuration has no feature to model (and, its
	// scores alike, the noise's posterior would have scale 0).
	if len(s.told) < startupTrials || s.enc.units == 0 {
		a := draw(s.sp, rng)
		if s.tried(a) {
			if b, _ := untried(s.sp, s.tried, rng); b != nil {
				return b, nil
			}
		}
		return a, nil
	}
	ranges := s.focused()
	var draws []rangeDraw
	var tops [][]space.Assignment // per range modelled, its best configurations told, best first
	u := make([]float64, s.enc.units)
	for _, r := range ranges {
		obs := slices.DeleteFunc(slices.Clone(s.observed([]int{r}, sparseObservations)),
			func(t told) bool { return !t.ran(r) })
		if len(obs) < 2 {
			continue
		}
		ys, _ := logScores(obs, r)
		mean, sd := meanSD(ys)
		rows := make([][]int, len(obs))
		for i, t := range obs {
			rows[i] = s.enc.row(t.a, u)
			ys[i] = (ys[i] - mean) / sd
		}
		order := make([]int, len(obs))
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(a, b int) int { return cmpFloat(ys[b], ys[a]) })
		var top []space.Assignment
		for _, i := range order[:min(sparseStarts, len(order))] {
			top = append(top, obs[i].a)
		}
		tops = append(tops, top)
		d := rangeDraw{model: s.enc.linear(horseshoe(rows, s.enc.features(), ys, rng)), scale: sd}
		s.enc.unitsOf(obs[order[0]].a, u)
		d.incumbent = d.model.value(u)
		draws = append(draws, d)
	}
	// With no range measured, or no untried configuration climbed to, a
	// uniform draw would propose one told (and failed) again.
	if len(draws) == 0 {
		return coveringDraw(s.sp, &s.history, rng), nil
	}
	starts := climbStarts(tops)
	for range min(sparseStarts*len(draws), sparseMaxStarts/2) {
		starts = append(starts, draw(s.sp, rng))
	}
	fails := s.culprits()
	gain := func(u []float64) float64 {
		var buf [32]int
		held := held(u, buf[:0])
		g := 0.0
		for _, d := range draws {
			v := d.scale * (d.model.valueHeld(held, u) - d.incumbent)
			g += math.Max(0, v) + 1e-3*v // the second term ranks configurations where no range gains
		}
		ok := fails.success(u)
		if g > 0 {
			return g * ok
		}
		return g - (1 - ok) // a likely failure below the rest
	}
	if a, ok := s.maximise(gain, starts); ok {
		return s.withinCells(a, rng), nil
	}
	return coveringDraw(s.sp, &s.history, rng), nil
}

// climbStarts is the configurations told that a proposal climbs from, of
// tops, each modelled range's best, best first: all of them, range by
// range, where they are at most sparseMaxStarts/2; else that many, each
// range's best before any range's second.
func climbStarts(tops [][]space.Assignment) []space.Assignment {
	var out []space.Assignment
	for _, top := range tops {
		out = append(out, top...)
	}
	if len(out) <= sparseMaxStarts/2 {
		return out
	}
	out = out[:0]
	for i := 0; len(out) < sparseMaxStarts/2; i++ {
		for _, top := range tops {
			if i < len(top) && len(out) < sparseMaxStarts/2 {
				out = append(out, top[i])
			}
		}
	}
	return out
}

// withinCells is a with each integer the maximiser put on a grid value
// drawn uniformly from the values of that value's cell, which the model
// cannot tell apart: without it the search would only ever try the grid's
// values. Integers off the grid came from a configuration told or drawn
// and stay. a itself if the draw was tried, breaks the space's rules, or
// switches a condition on or off.
func (s *sparseSampler) withinCells(a space.Assignment, rng *rand.Rand) space.Assignment {
	b := maps.Clone(a)
	for pi, p := range s.sp.Params {
		v, ok := a[p.Name]
		if !ok || p.Categorical() || !slices.Contains(s.enc.grids[pi], v) {
			continue
		}
		lo, hi := s.enc.cellBounds(pi, v)
		b[p.Name] = strconv.FormatInt(lo+randInt(rng, hi-lo), 10)
	}
	if c, unset, _ := s.sp.Complete(b); len(unset) > 0 || !maps.Equal(c, b) || s.tried(b) || s.sp.Check(b) != nil {
		return a
	}
	return b
}

// cellBounds are the least and greatest values of integer parameter pi in
// the cell of its grid that v falls in.
func (e *encoding) cellBounds(pi int, v string) (lo, hi int64) {
	p := e.sp.Params[pi]
	cellOf := func(n int64) int { return e.cell(pi, strconv.FormatInt(n, 10)) }
	n, _ := strconv.ParseInt(v, 10, 64)
	k := e.cell(pi, v)
	// The cells are intervals of the axis: search each end by bisection.
	lo, hi = p.Min, n
	for lo < hi {
		if mid := lo + (hi-lo)/2; cellOf(mid) == k {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	first := lo
	lo, hi = n, p.Max
	for lo < hi {
		if mid := hi - (hi-lo)/2; cellOf(mid) == k { // lo + (hi-lo+1)/2, which overflows
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return first, lo
}

// rangeDraw is one range's draw of its model, the draw's value of the
// range's best configuration told, and the spread of its log scores (the
// draw is of standardised ones).
type rangeDraw struct {
	model            *linear
	incumbent, scale float64
}

// meanSD are the mean and standard deviation of ys (the latter never 0).
func meanSD(ys []float64) (mean, sd float64) {
	for _, y := range ys {
		mean += y
	}
	mean /= float64(len(ys))
	for _, y := range ys {
		sd += (y - mean) * (y - mean)
	}
	return mean, math.Sqrt(sd/float64(len(ys))) + 1e-9
}

// maximise is the untried configuration of highest value (of its unit
// features) found by ascent in one and two settings at a time from starts.
// A climb weighs tens of thousands of neighbours; a neighbour whose changed
// settings switch no other on or off differs from its start only in their
// features, so it is weighed on those and built (withValue) only where it
// could be picked or climbed to: building each was nine tenths of a
// proposal's cost in a space of twenty settings.
func (s *sparseSampler) maximise(value func(u []float64) float64, starts []space.Assignment) (space.Assignment, bool) {
	// The climbs are their own, run concurrently: each keeps the first
	// configuration of its highest value, and the first start's of the
	// highest is the one climbs one after another would keep.
	picks, values := make([]space.Assignment, len(starts)), make([]float64, len(starts))
	concurrently(len(starts), workers(s.sp, len(starts)), func(_, k int) {
		picks[k], values[k] = s.climb(value, starts[k])
	})
	var pick space.Assignment
	bestPick := math.Inf(-1)
	for k, p := range picks {
		if p != nil && values[k] > bestPick {
			pick, bestPick = p, values[k]
		}
	}
	return pick, pick != nil
}

// climb is maximise's climb from start: the untried configuration of
// highest value it weighs (the first of those), and that value; nil if it
// weighs none untried.
func (s *sparseSampler) climb(value func(u []float64) float64, start space.Assignment) (space.Assignment, float64) {
	e, params := s.enc, s.sp.Params
	var pick space.Assignment
	bestPick := math.Inf(-1)
	cu, bu, nu := make([]float64, e.units), make([]float64, e.units), make([]float64, e.units)
	cur := maps.Clone(start)
	e.unitsOf(cur, cu)
	curV := value(cu)
	if curV > bestPick && !s.tried(cur) {
		pick, bestPick = cur, curV
	}
	for improved := true; improved; {
		improved = false
		next, nextV := cur, curV
		// weigh is the neighbour with params[pi] at v and, where qi >= 0,
		// params[qi] at w, whose features are u; built is it, or nil.
		weigh := func(u []float64, built space.Assignment, pi int, v string, qi int, w string) {
			val := value(u)
			if val <= bestPick && val <= nextV {
				return
			}
			if built == nil {
				built = withValue(s.sp, cur, params[pi].Name, v)
				if qi >= 0 {
					built = withValue(s.sp, built, params[qi].Name, w)
				}
			}
			if val > bestPick && !s.tried(built) {
				pick, bestPick = built, val
			}
			if val > nextV {
				next, nextV = built, val
			}
		}
		for pi, p := range params {
			for _, v := range e.grids[pi] {
				// b is cur with p at v, built where p switches others on or off
				// or is off itself (and stays so)
				var b space.Assignment
				if e.gates[pi] || !s.sp.Active(p, cur) {
					b = withValue(s.sp, cur, p.Name, v)
					e.unitsOf(b, bu)
				} else {
					copy(bu, cu)
					e.set(bu, pi, v)
				}
				weigh(bu, b, pi, v, -1, "")
				base := cur
				if b != nil {
					base = b
				}
				for qi := pi + 1; qi < len(params); qi++ {
					q := params[qi]
					for _, w := range e.grids[qi] {
						var c space.Assignment
						if e.gates[qi] || !s.sp.Active(q, base) {
							if b == nil {
								b = withValue(s.sp, cur, p.Name, v)
							}
							c = withValue(s.sp, b, q.Name, w)
							e.unitsOf(c, nu)
						} else {
							copy(nu, bu)
							e.set(nu, qi, w)
						}
						weigh(nu, c, pi, v, qi, w)
					}
				}
			}
		}
		if nextV > curV+1e-12 {
			cur, curV, improved = next, nextV, true
			e.unitsOf(cur, cu)
		}
	}
	return pick, bestPick
}

// culprits model why configurations fail: NCCL rejects a setting or a pair
// of settings, so each failure's culprit is one of its settings or pairs of
// settings (of unit features) that no configuration that ran also held.
// A proposal weighs every failure for each of the tens of thousands of
// neighbours its climbs weigh, so a failure keeps its suspects among the
// units it held, not a flag per pair of the space's units, and only the
// latest sparseObservations failures are weighed, as the regression weighs
// a bounded number of trials: a campaign whose draws mostly fail, or a long
// one resumed, took minutes a proposal.
type culprits struct {
	failures []failure
}

// failure is one failed configuration's suspects.
type failure struct {
	units   []int  // the unit features it held, ascending
	suspect []bool // per pair of those (a*len(units)+b, a <= b): no configuration that ran held it
	count   int    // its suspects
}

func (s *sparseSampler) culprits() *culprits {
	e := s.enc
	cleared := make([]bool, e.units*e.units)
	u := make([]float64, e.units)
	held := func(a space.Assignment) []int {
		e.unitsOf(a, u)
		var out []int
		for i, x := range u {
			if x != 0 {
				out = append(out, i)
			}
		}
		return out
	}
	for _, t := range s.told {
		if t.scores != nil {
			units := held(t.a)
			for a, i := range units {
				for _, j := range units[a:] {
					cleared[i*e.units+j] = true
				}
			}
		}
	}
	c := &culprits{}
	for _, t := range s.told {
		if t.scores != nil {
			continue
		}
		f := failure{units: held(t.a)}
		f.suspect = make([]bool, len(f.units)*len(f.units))
		for a, i := range f.units {
			for b := a; b < len(f.units); b++ {
				if !cleared[i*e.units+f.units[b]] {
					f.suspect[a*len(f.units)+b] = true
					f.count++
				}
			}
		}
		if f.count > 0 { // else it failed for another reason: a timeout, a fault
			c.failures = append(c.failures, f)
		}
	}
	c.failures = c.failures[max(0, len(c.failures)-sparseObservations):]
	return c
}

// success is the chance that a configuration of unit features u holds no
// failure's culprit, each of a failure's suspects as likely as the others.
func (c *culprits) success(u []float64) float64 {
	p := 1.0
	var buf [32]int
	for _, f := range c.failures {
		shared := buf[:0] // of f's units, the indices of those u holds
		for a, i := range f.units {
			if u[i] != 0 {
				shared = append(shared, a)
			}
		}
		held := 0
		for k, a := range shared {
			for _, b := range shared[k:] {
				if f.suspect[a*len(f.units)+b] {
					held++
				}
			}
		}
		p *= 1 - float64(held)/float64(f.count)
	}
	return p
}
