package search

import (
	"cmp"
	"maps"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"sync/atomic"

	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"

	"github.com/nccltune/nccltune/internal/safego"
	"github.com/nccltune/nccltune/space"
)

// gpSampler is Bayesian optimisation with Gaussian processes. Per range, the
// log scores of the trials told (a failed one a little below the worst, one
// that left the range out left out of its model) are
// modelled with an additive kernel of first and second order over the
// parameters (Duvenaud et al.), so that a pair of settings that only pays
// together gets a term of its own; each setting's weight in each order,
// and the noise, are those of highest posterior density (gpModel), so
// that settings which do nothing fade out of the model. One launch measures
// every range, so a proposal is the candidate whose expected improvements,
// summed over the ranges still searched, are the highest: a configuration
// that may pay in two ranges beats one that pays in one, and a range whose
// model expects nothing more takes no turns from the others. The candidates
// are each range's best configurations with one or two settings changed,
// or an integer moved next to its value on a finer grid, and random
// draws. Until startupTrials trials were told it proposes covering draws,
// which hold pairs of values no trial held, so that the first models see
// as many pairs as they can; the models use at most
// gpMaxObservations trials, and their weights are fitted on at most
// gpFitObservations, which bounds a proposal's cost whatever the
// campaign's length.
type gpSampler struct {
	seed int64
	history
	rotation
}

func newGP(sp *space.Space, seed int64) *gpSampler {
	return &gpSampler{history: history{sp: sp}, seed: seed, rotation: rotation{ranges: len(sp.Ranges)}}
}

func (g *gpSampler) Tell(a space.Assignment, scores []float64) error {
	g.remember(a, scores)
	return nil
}

const (
	// gpWidth is an integer's Gaussian width, as a share of its axis.
	gpWidth = 0.2
	// gpMaxObservations bounds the trials a model uses, gpFitObservations
	// those its weights are fitted on.
	gpMaxObservations = 150
	gpFitObservations = 60
	// gpBases is how many of each range's best configurations the candidates are neighbours of.
	gpBases = 3
	// gpGridPoints is how many values of an integer the candidates take,
	// and gpFinePoints the finer grid whose values next to a base's are
	// tried around it: where an integer pays as a few levels, values in
	// between cost trials and tell nothing new; where it pays through a
	// smooth curve, its peak mostly lies between the coarse grid's values
	// (measured on the two generated families, README).
	gpGridPoints = 5
	gpFinePoints = 17
	// gpPairCandidates caps the two-setting neighbours, drawn at random
	// among them where there are more, so that a proposal's cost stays
	// bounded in a space of many parameters.
	gpPairCandidates   = 2000
	gpRandomCandidates = 200
	// gpSingleCandidates caps the one-setting neighbours, and
	// gpListedPairs the two-setting ones listed to draw from: beyond
	// either (categoricals of hundreds of values), both are drawn without
	// listing, so that memory and time stay bounded. Spaces of a few
	// values a setting stay far below them.
	gpSingleCandidates = 1 << 13
	gpListedPairs      = 1 << 20
	// gpExploration is the improvement, in standard deviations of a range's
	// log scores, that expected improvement counts from: without it the
	// search polishes what it has found and seldom tries the untried pairs
	// of settings where the larger gains hide (measured on the generated
	// landscapes: 0.3 to 0.6 alike, 0 clearly worse).
	gpExploration = 0.4
)

// gpPoint is an assignment as the kernel reads it: per parameter, as NCCL
// reads it (reading), NaN where NCCL chooses, a categorical's value index,
// or an integer's value (its log where the space says log) in units of its
// Gaussian width. Encoding once
// keeps string parsing out of the kernel, which a proposal evaluates
// hundreds of thousands of times.
type gpPoint []float64

func (g *gpSampler) point(a space.Assignment) gpPoint {
	out := make(gpPoint, len(g.sp.Params))
	for i, p := range g.sp.Params {
		v, ok := reading(p, a)
		switch {
		case !ok:
			out[i] = math.NaN()
		case p.Categorical():
			out[i] = float64(slices.Index(p.Values, v))
		default:
			x, _ := strconv.ParseFloat(v, 64)
			lo, hi := float64(p.Min), float64(p.Max)
			if p.Log {
				x, lo, hi = math.Log(x), math.Log(lo), math.Log(hi)
			}
			out[i] = x / (gpWidth * math.Max(hi-lo, 1e-9))
		}
	}
	return out
}

// similarities sets out[i] to how alike a and b are in parameter i: 1 for
// the same choice (or both inactive), 0 for another, and a Gaussian in the
// value for integers.
func (g *gpSampler) similarities(a, b gpPoint, out []float64) {
	for i, x := range a {
		out[i] = g.similarity(i, x, b[i])
	}
}

// similarity is how alike values x and y of parameter i are (similarities).
func (g *gpSampler) similarity(i int, x, y float64) float64 {
	switch nx, ny := math.IsNaN(x), math.IsNaN(y); {
	case nx || ny:
		if nx == ny {
			return 1
		}
	case x == y:
		return 1
	case !g.sp.Params[i].Categorical():
		d := x - y
		return math.Exp(-0.5 * d * d)
	}
	return 0
}

// pairSimilarities are the similarities of every two of points, as fitGP
// reads them: those of a and b (a <= b) at [(a*m+b)*d, (a*m+b+1)*d).
func (g *gpSampler) pairSimilarities(points []gpPoint) []float64 {
	m, d := len(points), len(g.sp.Params)
	sims := make([]float64, m*m*d)
	for a := range m {
		for b := a; b < m; b++ {
			g.similarities(points[a], points[b], sims[(a*m+b)*d:(a*m+b+1)*d])
		}
	}
	return sims
}

// Ask proposes the untried candidate of highest expected improvement,
// summed over the ranges searched.
func (g *gpSampler) Ask(n int) (space.Assignment, error) {
	rng := rand.New(rand.NewPCG(uint64(g.seed), trialSeed(g.seed, n, "gp")))
	if len(g.told) < startupTrials {
		return coveringDraw(g.sp, &g.history, rng), nil
	}
	ranges := g.focused()
	obs, points, fits := g.fit(ranges)
	var models []*gpModel
	var bases []space.Assignment
	for _, f := range fits {
		if f.md != nil {
			models = append(models, f.md)
		}
		var order []int // the trials that measured the range: a failure is no base
		for i, t := range obs {
			if t.ran(f.r) {
				order = append(order, i)
			}
		}
		slices.SortStableFunc(order, func(a, b int) int { return cmpFloat(f.ys[b], f.ys[a]) })
		for _, i := range order[:min(gpBases, len(order))] {
			if !slices.ContainsFunc(bases, func(b space.Assignment) bool { return maps.Equal(b, obs[i].a) }) {
				bases = append(bases, obs[i].a)
			}
		}
	}
	// With no range measured, or every candidate tried, a uniform draw
	// would propose a configuration told (and failed) again.
	if len(models) == 0 {
		return coveringDraw(g.sp, &g.history, rng), nil
	}
	seen := map[string]bool{}
	var cands []space.Assignment
	for _, c := range g.candidates(bases, rng) {
		if key := g.sp.Key(c); !seen[key] && !g.tried(c) {
			seen[key] = true
			cands = append(cands, c)
		}
	}
	if len(cands) == 0 {
		return coveringDraw(g.sp, &g.history, rng), nil
	}
	return cands[g.bestCandidate(models, points, bases, cands)], nil
}

// gpChunk is how many candidates a worker takes at a time for their
// kernels with every model and their posterior means, so that a model's
// matrix of the chunk (150 × 256, 300 kB) stays in the cache, where that
// of every candidate (150 × several thousand, a model each) did not, and
// the workers share no writes.
const gpChunk = 256

// gpSolveChunk is how many candidates a worker solves at a time, in the
// order of their bounds: few, since the first are mostly enough.
const gpSolveChunk = 32

// bestCandidate is the index of the candidate whose expected improvements
// summed over models in their order are the highest (the first of equals).
// A candidate's posterior variance takes a triangular solve with each model
// (most of a proposal's cost at many ranges); its mean does not, and the
// improvement grows with the standard deviation, which the observation
// explaining most of the candidate's variance alone bounds
// (leastExplained): candidates are solved in the order of their bounds,
// by chunks, until no bound left reaches the best sum (at 30 ranges, 32 of
// some 6,000 are solved). A candidate's kernels, solves and sum are its
// own, so they are the same whichever worker takes it, in which chunk, or
// how many workers there are.
func (g *gpSampler) bestCandidate(models []*gpModel, points []gpPoint, bases, cands []space.Assignment) int {
	ks := g.kernels(models, points, bases, cands)
	ones := slices.Repeat([]float64{1}, len(g.sp.Params)) // every point is itself in every parameter
	priors := make([]float64, len(models))
	for r, md := range models {
		priors[r], _ = md.kernel(ones)
	}
	m, n := len(points), len(cands)
	order := make([]int, n)
	for j := range order {
		order[j] = j
	}
	buffers := make([][]float64, workers(g.sp, (n+gpChunk-1)/gpChunk)) // per worker, its matrices of a chunk, one after another
	// chunks calls work with each chunk of js's candidates and their
	// kernels with every model, concurrently.
	chunks := func(js []int, size int, work func(js []int, kernels []*mat.Dense)) {
		concurrently((len(js)+size-1)/size, len(buffers), func(w, c int) {
			if buffers[w] == nil {
				buffers[w] = make([]float64, len(models)*m*gpChunk)
			}
			chunk := js[c*size : min((c+1)*size, len(js))]
			kernels := make([]*mat.Dense, len(models))
			for r := range models {
				kernels[r] = mat.NewDense(m, len(chunk), buffers[w][r*m*gpChunk:r*m*gpChunk+m*len(chunk)])
			}
			ks.fill(chunk, kernels)
			work(chunk, kernels)
		})
	}
	means := make([]float64, len(models)*n) // [r*n+j]
	bound := make([]float64, n)
	chunks(order, gpChunk, func(js []int, kernels []*mat.Dense) {
		least := make([]float64, len(js))
		for r, md := range models {
			mu := means[r*n+js[0] : r*n+js[0]+len(js)] // order's chunks are contiguous
			md.means(kernels[r], mu)
			md.leastExplained(kernels[r], priors[r], least)
			for k, x := range mu {
				bound[js[k]] += md.improvement(x, md.stddev(priors[r], least[k]))
			}
		}
	})
	for j, b := range bound {
		if math.IsNaN(b) { // no bound: solved first
			bound[j] = math.Inf(1)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmpFloat(bound[b], bound[a]) })
	acq := make([]float64, n)
	best := -1
	for start := 0; start < n; {
		// Rounding may put a sum a hair above its bound.
		if b := bound[order[start]]; best >= 0 && b+1e-9*(math.Abs(b)+math.Abs(acq[best])) < acq[best] {
			break
		}
		round := order[start:min(n, start+len(buffers)*gpSolveChunk)]
		chunks(round, gpSolveChunk, func(js []int, kernels []*mat.Dense) {
			for r, md := range models {
				md.addImprovements(kernels[r], priors[r], means[r*n:(r+1)*n], js, acq)
			}
		})
		for _, j := range round {
			if best < 0 || acq[j] > acq[best] || acq[j] == acq[best] && j < best {
				best = j
			}
		}
		start += len(round)
	}
	return best
}

// workers is how many goroutines n pieces of work of a proposal in sp take:
// one a processor, but one alone where the campaign's groups measure while
// it proposes (launcher.groups), on nodes nccltune may run on (a batch
// script's, the allocation's first): a proposal on every core there beside
// a trial's NCCL proxy threads would be noise in that trial's measurement.
func workers(sp *space.Space, n int) int {
	if sp.Launcher.Groups > 1 {
		return min(n, 1)
	}
	return min(n, runtime.GOMAXPROCS(0))
}

// concurrently calls work(w, i) for every i of [0, n), on workers
// goroutines that each take the next i (w is the goroutine's number).
func concurrently(n, workers int, work func(w, i int)) {
	var next atomic.Int64
	var group safego.Group
	for w := range workers {
		group.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				work(w, i)
			}
		})
	}
	group.Wait()
}

// gpKernels are the kernels of models between the observations at points
// and candidates, as fill computes them. Most candidates are a base with
// one or two settings changed, so their similarities to an observation are
// the base's but in those, and the kernel's sums (kernelSums) are the
// base's corrected there: a candidate costs what it changes, not every
// parameter (the kernel was most of a proposal in a space of twenty
// settings).
type gpKernels struct {
	g        *gpSampler
	models   []*gpModel
	points   []gpPoint
	baseSims [][]float64    // [b][i*d+p]
	baseSums [][]kernelSums // [b][i*len(models)+r]
	cands    []gpCandidate
}

// gpCandidate is a candidate as the kernels read it: the base it is nearest
// (nearestBase), the parameters it changes there and those values'
// similarities to the observations, or where it has no base, its point.
type gpCandidate struct {
	base    int
	changed []int
	cols    [][]float64
	point   gpPoint
}

// kernels prepares the kernels of models between the observations at
// points and each candidate (gpKernels).
func (g *gpSampler) kernels(models []*gpModel, points []gpPoint, bases, cands []space.Assignment) *gpKernels {
	m, d := len(points), len(g.sp.Params)
	ks := &gpKernels{g: g, models: models, points: points, baseSims: make([][]float64, len(bases)),
		baseSums: make([][]kernelSums, len(bases)), cands: make([]gpCandidate, len(cands))}
	basePoints := make([]gpPoint, len(bases))
	for b, a := range bases {
		basePoints[b] = g.point(a)
		ks.baseSims[b] = make([]float64, m*d)
		ks.baseSums[b] = make([]kernelSums, m*len(models))
		for i := range m {
			s := ks.baseSims[b][i*d : (i+1)*d]
			g.similarities(basePoints[b], points[i], s)
			for r, md := range models {
				t := &ks.baseSums[b][i*len(models)+r]
				for p, x := range s {
					t.add(md, p, x)
				}
			}
		}
	}
	// A changed setting's similarities to the observations, by its value:
	// candidates share few values, and an integer's costs an exponential.
	type value struct {
		p    int
		bits uint64
	}
	columns := map[value][]float64{}
	column := func(p int, x float64) []float64 {
		key := value{p, math.Float64bits(x)}
		col, ok := columns[key]
		if !ok {
			col = make([]float64, m)
			for i := range m {
				col[i] = g.similarity(p, x, points[i][p])
			}
			columns[key] = col
		}
		return col
	}
	for j, c := range cands {
		pc := g.point(c)
		b, changed := nearestBase(pc, basePoints, nil)
		if b < 0 {
			ks.cands[j] = gpCandidate{base: b, point: pc}
			continue
		}
		cols := make([][]float64, len(changed))
		for k, p := range changed {
			cols[k] = column(p, pc[p])
		}
		ks.cands[j] = gpCandidate{base: b, changed: changed, cols: cols}
	}
	return ks
}

// fill sets out[r] (observations × len(js)) to the kernel of models[r]
// between the observations and candidates js.
func (ks *gpKernels) fill(js []int, out []*mat.Dense) {
	m, d := len(ks.points), len(ks.g.sp.Params)
	raws := make([]blas64.General, len(out))
	for r, k := range out {
		raws[r] = k.RawMatrix()
	}
	s := make([]float64, d)
	for col, j := range js {
		c := ks.cands[j]
		if c.base < 0 {
			for i := range m {
				ks.g.similarities(c.point, ks.points[i], s)
				for r, md := range ks.models {
					raws[r].Data[i*raws[r].Stride+col], _ = md.kernel(s)
				}
			}
			continue
		}
		for i := range m {
			bs := ks.baseSims[c.base][i*d : (i+1)*d]
			for r, md := range ks.models {
				t := ks.baseSums[c.base][i*len(ks.models)+r]
				for k, p := range c.changed {
					t.swap(md, p, bs[p], c.cols[k][i])
				}
				raws[r].Data[i*raws[r].Stride+col] = t.value()
			}
		}
	}
}

// nearestBase is the index of the base that differs from point p in the
// fewest parameters, and those parameters (appended to changed); -1 where
// every base differs in more than half of them, which the kernel's sums then
// take in full.
func nearestBase(p gpPoint, bases []gpPoint, changed []int) (int, []int) {
	best, fewest := -1, len(p)/2+1
	for b, q := range bases {
		n := 0
		for i, x := range p {
			if !same(x, q[i]) {
				if n++; n >= fewest {
					break
				}
			}
		}
		if n < fewest {
			best, fewest = b, n
		}
	}
	if best >= 0 {
		for i, x := range p {
			if !same(x, bases[best][i]) {
				changed = append(changed, i)
			}
		}
	}
	return best, changed
}

// same reports whether two coordinates of points are one value (NaN: inactive).
func same(x, y float64) bool { return x == y || math.IsNaN(x) && math.IsNaN(y) }

// rangeFit is a range's log scores over the observations a model uses
// (logScores) and its model, nil where the kernel is singular.
type rangeFit struct {
	r  int
	ys []float64
	md *gpModel
}

// fit models each of ranges that some trial measured on the observations
// a model uses (observed), which it returns with their points.
func (g *gpSampler) fit(ranges []int) ([]told, []gpPoint, []rangeFit) {
	obs := g.observed(ranges, gpMaxObservations)
	points := make([]gpPoint, len(obs))
	for i, t := range obs {
		points[i] = g.point(t.a)
	}
	sims := g.pairSimilarities(points)
	fitted := keep(obs, ranges, gpFitObservations)
	// The ranges' fits are their own: concurrent, in any order, they are
	// those of one after another.
	fits := make([]*rangeFit, len(ranges))
	concurrently(len(ranges), workers(g.sp, len(ranges)), func(_, k int) {
		if ys, ok := logScores(obs, ranges[k]); ok {
			fits[k] = &rangeFit{ranges[k], ys, fitGP(sims, len(g.sp.Params), ys, fitted)}
		}
	})
	var out []rangeFit
	for _, f := range fits {
		if f != nil {
			out = append(out, *f)
		}
	}
	return obs, points, out
}

// logScores are the observations' log scores of range r, a failure a
// little below the worst that ran, NaN for one that ran but left r out (it
// tells r nothing); false if none ran.
func logScores(obs []told, r int) ([]float64, bool) {
	minY := math.Inf(1)
	for _, t := range obs {
		if t.ran(r) {
			minY = math.Min(minY, math.Log(t.scores[r]))
		}
	}
	if math.IsInf(minY, 1) {
		return nil, false
	}
	ys := make([]float64, len(obs))
	for i, t := range obs {
		switch {
		case t.ran(r):
			ys[i] = math.Log(t.scores[r])
		case t.about(r):
			ys[i] = minY - 0.1
		default:
			ys[i] = math.NaN()
		}
	}
	return ys, true
}

// candidates are the bases with one setting changed, with two (at most
// gpPairCandidates of those, drawn at random), and random draws; integers
// take gpGridPoints values, and, one at a time around each base, the values
// next to its own on a grid of gpFinePoints.
func (g *gpSampler) candidates(bases []space.Assignment, rng *rand.Rand) []space.Assignment {
	grids := make([][]string, len(g.sp.Params))
	for i, p := range g.sp.Params {
		grids[i] = values(p, gpGridPoints)
	}
	var out []space.Assignment
	if singles, pairs := neighbourCounts(len(bases), grids); singles > gpSingleCandidates || pairs > gpListedPairs {
		out = g.drawnNeighbours(bases, grids, rng)
	} else {
		out = g.listedNeighbours(bases, grids, rng)
	}
	for _, p := range g.sp.Params {
		if p.Categorical() {
			continue
		}
		fine := values(p, gpFinePoints)
		for _, base := range bases {
			if v, ok := base[p.Name]; ok {
				for _, w := range beside(fine, v) {
					out = append(out, withValue(g.sp, base, p.Name, w))
				}
			}
		}
	}
	for range gpRandomCandidates {
		a := draw(g.sp, rng)
		for i, p := range g.sp.Params {
			// withValue: a condition on the integer's value may switch others on or off.
			if v, ok := a[p.Name]; ok && !p.Categorical() {
				a = withValue(g.sp, a, p.Name, nearest(p, grids[i], v))
			}
		}
		out = append(out, a)
	}
	return out
}

// listedNeighbours are every base with one setting changed, and with two,
// gpPairCandidates of those drawn at random where there are more.
func (g *gpSampler) listedNeighbours(bases []space.Assignment, grids [][]string, rng *rand.Rand) []space.Assignment {
	// A pair is a single with parameter q set to its grid's value w; the
	// pairs are drawn as indices and only those drawn are built, since
	// their number grows with the square of the space's parameters.
	type pair struct{ single, q, w int }
	var singles []space.Assignment
	var pairs []pair
	for _, base := range bases {
		for pi, p := range g.sp.Params {
			for _, v := range grids[pi] {
				singles = append(singles, withValue(g.sp, base, p.Name, v))
				for q := pi + 1; q < len(g.sp.Params); q++ {
					for w := range grids[q] {
						pairs = append(pairs, pair{len(singles) - 1, q, w})
					}
				}
			}
		}
	}
	if len(pairs) > gpPairCandidates {
		rng.Shuffle(len(pairs), func(i, j int) { pairs[i], pairs[j] = pairs[j], pairs[i] })
		pairs = pairs[:gpPairCandidates]
	}
	out := singles
	for _, pr := range pairs {
		out = append(out, withValue(g.sp, singles[pr.single], g.sp.Params[pr.q].Name, grids[pr.q][pr.w]))
	}
	return out
}

// neighbourCounts are how many one-setting and two-setting neighbours n
// bases have on grids.
func neighbourCounts(n int, grids [][]string) (singles, pairs int) {
	for p, grid := range grids {
		singles += len(grid)
		for _, other := range grids[p+1:] {
			pairs += len(grid) * len(other)
		}
	}
	return n * singles, n * pairs
}

// drawnNeighbours are gpSingleCandidates neighbours of the bases with one
// setting changed and gpPairCandidates with two, each drawn at random
// without listing them all (a pair of draws of one setting is a single).
func (g *gpSampler) drawnNeighbours(bases []space.Assignment, grids [][]string, rng *rand.Rand) []space.Assignment {
	// Every value of every grid alike: drawn from one list of them.
	type setting struct{ name, value string }
	var settings []setting
	for p, grid := range grids {
		for _, v := range grid {
			settings = append(settings, setting{g.sp.Params[p].Name, v})
		}
	}
	with := func(a space.Assignment) space.Assignment {
		s := settings[rng.IntN(len(settings))]
		return withValue(g.sp, a, s.name, s.value)
	}
	var out []space.Assignment
	for range gpSingleCandidates {
		out = append(out, with(bases[rng.IntN(len(bases))]))
	}
	for range gpPairCandidates {
		out = append(out, with(with(bases[rng.IntN(len(bases))])))
	}
	return out
}

// beside are the values of grid (an integer's, ascending) nearest to v
// below and above it.
func beside(grid []string, v string) []string {
	x, _ := strconv.ParseInt(v, 10, 64)
	i, found := slices.BinarySearchFunc(grid, x, func(w string, x int64) int {
		y, _ := strconv.ParseInt(w, 10, 64)
		return cmp.Compare(y, x)
	})
	var out []string
	if i > 0 {
		out = append(out, grid[i-1])
	}
	if found {
		i++
	}
	if i < len(grid) {
		out = append(out, grid[i])
	}
	return out
}

// nearest is the value of an integer parameter's grid closest to v (on the
// log axis where the space says log).
func nearest(p space.Param, grid []string, v string) string {
	x, _ := strconv.ParseFloat(v, 64)
	axis := func(f float64) float64 {
		if p.Log {
			return math.Log(f)
		}
		return f
	}
	out, dist := v, math.Inf(1)
	for _, w := range grid {
		y, _ := strconv.ParseFloat(w, 64)
		if d := math.Abs(axis(x) - axis(y)); d < dist {
			out, dist = w, d
		}
	}
	return out
}

// observed are the trials a model of ranges uses: those keep picks of all told.
func (h *history) observed(ranges []int, limit int) []told {
	var out []told
	for _, i := range keep(h.told, ranges, limit) {
		out = append(out, h.told[i])
	}
	return out
}

// keep picks, of ts, all up to limit, else the latest half and, of the
// older ones, the best of each range in turn; in the order of ts.
func keep(ts []told, ranges []int, limit int) []int {
	all := make([]int, len(ts))
	for i := range all {
		all[i] = i
	}
	if len(ts) <= limit {
		return all
	}
	latest := len(ts) - limit/2
	var orders [][]int
	for _, r := range ranges {
		o := slices.Clone(all[:latest])
		slices.SortStableFunc(o, func(a, b int) int { return cmpFloat(ts[b].score(r), ts[a].score(r)) })
		orders = append(orders, o)
	}
	picked := map[int]bool{}
	out := slices.Clone(all[latest:])
	for k := 0; len(out) < limit; k++ {
		if i := orders[k%len(orders)][k/len(orders)]; !picked[i] {
			picked[i] = true
			out = append(out, i)
		}
	}
	slices.Sort(out) // in the order told, so that what is kept of them keeps the latest
	return out
}

// normCDF and normPDF are the standard normal's, for expected improvement.
func normCDF(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }
func normPDF(z float64) float64 { return math.Exp(-0.5*z*z) / math.Sqrt(2*math.Pi) }
