// Package quality measures search quality and campaign cost on the simulated
// cluster: for each scenario it finds the true optimum of every size range by
// enumerating the space without noise, then runs real campaigns (tuner's loop,
// store, parser and sampler, with the simulator in process) for each sampler
// over many seeds, and reports the regret of the configuration each campaign
// would export, the trials needed to come within 3% of the optimum, and the
// benchmark time spent. Beside the named scenarios, whose physics the warm
// start was written to know, it grades campaigns on a family of generated
// landscapes (Landscapes), which owe it nothing, by the spread over them.
package quality

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nccltune/nccltune/internal/safego"
	"github.com/nccltune/nccltune/results"
	"github.com/nccltune/nccltune/runner"
	"github.com/nccltune/nccltune/runner/nccllog"
	"github.com/nccltune/nccltune/runner/sim"
	"github.com/nccltune/nccltune/search"
	"github.com/nccltune/nccltune/space"
	"github.com/nccltune/nccltune/store"
	"github.com/nccltune/nccltune/tuner"
)

// Scenario is a simulated cluster and the space tuned on it.
type Scenario struct {
	Name  string
	Flags []string // simulator flags, as in a space's [simulator] table
	Space string   // the [[param]] entries (and [fixed]) searched there
}

const common = `
[[param]]
name = "NCCL_ALGO"
values = ["default", "Ring", "Tree"]
[[param]]
name = "NCCL_PROTO"
values = ["default", "LL", "LL128", "Simple"]
[[param]]
name = "NCCL_MIN_CTAS"
min = 1
max = 32
log = true
[[param]]
name = "NCCL_BUFFSIZE"
values = ["default", "1M", "16M"]
`

const ib = common + `
[[param]]
name = "NCCL_NET_GDR_LEVEL"
values = ["default", "PHB", "SYS"]
[[param]]
name = "NCCL_IB_QPS_PER_CONNECTION"
min = 1
max = 8
`

const tcp = common + `
[[param]]
name = "NCCL_SOCKET_NTHREADS"
min = 1
max = 16
log = true
[[param]]
name = "NCCL_NSOCKS_PERTHREAD"
min = 1
max = 16
log = true
`

// Scenarios are the clusters of the search-quality benchmark: TCP both as
// 8 x 400G (cloud nodes that carry GPU traffic over TCP) and as commodity 2 x 100G Ethernet.
var Scenarios = []Scenario{
	{"1node-8gpu-nvlink", []string{"-nodes=1", "-gpus_per_node=8", "-fabric=nvlink"}, common},
	{"2node-ib-gdr", []string{"-nodes=2", "-fabric=ib"}, ib},
	{"8node-ib-gdr", []string{"-nodes=8", "-fabric=ib"}, ib},
	{"32node-ib-gdr", []string{"-nodes=32", "-fabric=ib"}, ib},
	{"2node-ib-gdr-off", []string{"-nodes=2", "-fabric=ib", "-gpu_nic=PHB"}, ib},
	{"2node-roce-gid-trap", []string{"-nodes=2", "-fabric=roce", "-roce_gid=3", "-gids=4"}, ib + `
[[param]]
name = "NCCL_IB_GID_INDEX"
min = 0
max = 3
`},
	{"2node-tcp", []string{"-nodes=2", "-fabric=tcp"}, tcp},
	{"2node-tcp-2x100g", []string{"-nodes=2", "-fabric=tcp", "-nics_per_node=2", "-nic_gbps=100"}, tcp},
}

// layout is what every scenario's space shares; the blanks are the
// campaign's settings, the ranks of the benchmark and the [simulator] table.
const layout = `
[campaign]
sizes = { min = "8", max = "1G", factor = 4 }
%s
[[range]]
name = "small"
min = "8"
max = "64K"
[[range]]
name = "medium"
min = "64K"
max = "16M"
[[range]]
name = "large"
min = "16M"
max = "2G"
[benchmark]
binary = "all_reduce_perf"
gpus = %d
%s
[fixed]
NCCL_NVLS_ENABLE = 0
`

// Strategies are what the benchmark can compare: nccltune's default campaign
// (after the warm start the Gaussian process, then it and TPE in turn), the same
// without the warm start, multivariate TPE alone after the warm start (the
// default before) and without it, goptuna's independent TPE after it, the
// textbook baselines, random and grid search from NCCL's defaults alone, and
// coordinate descent from them, as AutoCCL tunes; gp is the Gaussian
// process after the warm start (gp-cold without it), sparse the sparse
// regression after it; random-warm isolates what the warm start
// gives random search.
var Strategies = map[string]struct {
	Sampler   string
	WarmStart bool
}{
	"tpe-gp": {"tpe-gp", true}, "tpe-gp-cold": {"tpe-gp", false},
	"tpe": {"tpe", true}, "tpe-cold": {"tpe", false}, "tpe-independent": {"tpe-independent", true},
	"random": {"random", false}, "grid": {"grid", false}, "random-warm": {"random", true},
	"coordinate": {"coordinate", false}, "gp": {"gp", true}, "sparse": {"sparse", true}, "gp-cold": {"gp", false},
}

// CheckStrategies reports the first name that is not one of Strategies.
func CheckStrategies(names []string) error {
	for _, name := range names {
		if _, ok := Strategies[name]; !ok {
			return fmt.Errorf("unknown strategy %q (known: %s)", name, strings.Join(slices.Sorted(maps.Keys(Strategies)), ", "))
		}
	}
	return nil
}

// landscapeSpace is what campaigns search on generated landscapes: every
// level of every variable the landscapes are laid over is within reach
// (the IB scenarios' space and NCCL_NTHREADS).
const landscapeSpace = ib + `
[[param]]
name = "NCCL_NTHREADS"
values = ["default", "128", "256", "512"]
`

// landscapePrefix names the generated scenarios: landscape-1, landscape-2, ...
const landscapePrefix = "landscape-"

// Landscape is the simulator's generated landscape k (see runner/sim's
// landscape.go) on a cluster of 4 nodes of 8 GPUs over InfiniBand: the
// physics gives only the time under NCCL's defaults, and settings pay as
// the landscape, drawn from k, says.
func Landscape(k int) Scenario {
	return Scenario{fmt.Sprintf("%s%d", landscapePrefix, k),
		[]string{"-nodes=4", "-gpus_per_node=8", "-fabric=ib", fmt.Sprintf("-landscape=%d", k)}, landscapeSpace}
}

// smoothPrefix names the generated scenarios of the second family: smooth-1, smooth-2, ...
const smoothPrefix = "smooth-"

// Smooth is the simulator's generated smooth landscape k (runner/sim's
// smooth.go), on the cluster and space of Landscape.
func Smooth(k int) Scenario {
	return Scenario{fmt.Sprintf("%s%d", smoothPrefix, k),
		[]string{"-nodes=4", "-gpus_per_node=8", "-fabric=ib", fmt.Sprintf("-landscape=%d", k), "-landscape_kind=smooth"}, landscapeSpace}
}

// Landscapes are the generated scenarios landscape-1 .. landscape-n.
func Landscapes(n int) []Scenario { return numbered(Landscape, n) }

// Smooths are the generated scenarios smooth-1 .. smooth-n.
func Smooths(n int) []Scenario { return numbered(Smooth, n) }

func numbered(scenario func(k int) Scenario, n int) []Scenario {
	var out []Scenario
	for k := 1; k <= n; k++ {
		out = append(out, scenario(k))
	}
	return out
}

// ScenariosNamed returns the named scenarios, in the order given: those of
// Scenarios, or a generated landscape-K or smooth-K. A scenario named twice
// (landscape-01 is landscape-1) is refused: its campaigns would repeat the
// first's and weigh twice in every median over scenarios.
func ScenariosNamed(names []string) ([]Scenario, error) {
	var out []Scenario
	for _, name := range names {
		s, err := scenarioNamed(name)
		if err != nil {
			return nil, err
		}
		if slices.ContainsFunc(out, func(o Scenario) bool { return o.Name == s.Name }) {
			return nil, fmt.Errorf("scenario %s named twice", s.Name)
		}
		out = append(out, s)
	}
	return out, nil
}

func scenarioNamed(name string) (Scenario, error) {
	if k, ok := numberAfter(name, landscapePrefix); ok {
		return Landscape(k), nil
	}
	if k, ok := numberAfter(name, smoothPrefix); ok {
		return Smooth(k), nil
	}
	k := slices.IndexFunc(Scenarios, func(s Scenario) bool { return s.Name == name })
	if k < 0 {
		var known []string
		for _, s := range Scenarios {
			known = append(known, s.Name)
		}
		return Scenario{}, fmt.Errorf("unknown scenario %q (known: %s, %s1, %s2, ..., %s1, ...)", name, strings.Join(known, ", "), landscapePrefix, landscapePrefix, smoothPrefix)
	}
	return Scenarios[k], nil
}

// freshStore opens a new store for campaign name, in a folder of its own
// under dir: in a store that holds a campaign of the same name it would be
// resumed (done already), or opened by two campaigns at once, not run (a
// scenario, strategy or group count named twice, or a landscape named and
// in its family).
func freshStore(dir, name string) (*store.Store, error) {
	own, err := os.MkdirTemp(dir, "campaign-")
	if err != nil {
		return nil, err
	}
	return store.Open(filepath.Join(own, name+".db"))
}

// numberAfter is the positive number that follows prefix in name.
func numberAfter(name, prefix string) (int, bool) {
	k, err := strconv.Atoi(strings.TrimPrefix(name, prefix))
	return k, err == nil && k > 0 && strings.HasPrefix(name, prefix)
}

// Options says what to run.
type Options struct {
	Samplers []string // names of Strategies
	Seeds    int
	Trials   int
	Noise    float64 // relative standard deviation of a measurement at 20 iterations
	Prune    bool    // campaigns run with prune = true
	Patience int     // campaigns run with this patience (0: the whole budget)
	// NoiseTarget is benchmark.noise_target: what the iteration count is
	// adapted to (0: nccl-tests' default of 20 throughout).
	NoiseTarget float64
	Dir         string // where the campaigns' stores go (a temporary folder is best)
}

// Run is one sampler's campaign on one scenario with one seed.
type Run struct {
	Regret [][]float64 // [range][trial]: regret of the choice after trial n
	// Tried is [range][trial]: the regret of the best configuration tried
	// by trial n, by its true value: the search's part of Regret, the rest
	// being the choice's.
	Tried   [][]float64
	Miss    [][]Miss  // [range][trial], on a generated landscape: why the choice is more than 3% off
	Seconds []float64 // cumulative benchmark seconds after trial n
}

// Miss is why a range's choice on a generated landscape is more than
// Tolerance short of the optimum: the choice rules passed over a
// configuration tried within it; or none was tried within it, and every way
// to be within it (a set of interactions and decoys, prepared.ways) holds a
// term no trial measuring the range held, or some way's terms were all held
// but the best configuration tried holds no way; or the best tried holds a
// way and its shortfall is main effects and partial interactions.
type Miss string

const (
	MissNone   Miss = ""
	MissChoice Miss = "choice"
	MissUnseen Miss = "unseen"
	MissUnkept Miss = "unkept"
	MissPolish Miss = "polish"
)

// Misses are the kinds of Miss, in the order tables list them.
var Misses = []Miss{MissChoice, MissUnseen, MissUnkept, MissPolish}

// Tolerance is the regret the benchmark counts as close enough: the 3% of
// trials to 3%, and what a Miss is more than.
const Tolerance = 0.03

// Result is every run of one sampler on one scenario.
type Result struct {
	Scenario, Sampler string
	Ranges            []string
	Trials            int // the campaigns' budget: a run may stop before it (patience)
	Runs              []Run
}

// Truth is a scenario's noise-free optimum per range.
type Truth struct {
	Optimum []float64
	Best    []space.Assignment // nil where NCCL's defaults are the optimum
	Default []float64          // NCCL's defaults' score
	Points  int                // assignments enumerated
}

type prepared struct {
	Scenario
	sc    sim.Scenario
	sp    *space.Space
	sizes []int64
	truth Truth
	// ways are, per range of a generated landscape, the distinct sets of
	// terms (sim.Scenario.HeldTerms: interactions and decoys) held by the
	// configurations within Tolerance of its optimum: a search that tried
	// none of them in full has not seen what the range needs.
	ways [][][]int
}

// prepares holds each scenario prepared in this process, once: preparing
// enumerates the space (seconds of CPU), and one scenario may be measured
// more than once (named and in its family under bench, or by Measure and
// MeasureGroups). A prepared scenario is only read, by campaigns at once.
var prepares = struct {
	sync.Mutex
	m map[string]func() (*prepared, error)
}{m: map[string]func() (*prepared, error){}}

// prepare is the prepared scenario s, enumerated on its first call.
func prepare(s Scenario) (*prepared, error) {
	key := strings.Join(append([]string{s.Name, s.Space}, s.Flags...), "\x00")
	prepares.Lock()
	p, ok := prepares.m[key]
	if !ok {
		p = sync.OnceValues(func() (*prepared, error) { return enumerate(s) })
		prepares.m[key] = p
	}
	prepares.Unlock()
	return p()
}

// enumerate prepares s: its true optimum per range, by enumeration.
func enumerate(s Scenario) (*prepared, error) {
	sc, err := sim.ParseScenario(append(slices.Clone(s.Flags), "-noise=0"))
	if err != nil {
		return nil, err
	}
	sp, err := space.Parse(s.Name+".toml", []byte(fmt.Sprintf(layout, "", sc.Nodes*sc.GPUsPerNode, "")+s.Space))
	if err != nil {
		return nil, err
	}
	p := &prepared{Scenario: s, sc: sc, sp: sp, sizes: sp.Sizes.List()}
	p.truth = Truth{Optimum: make([]float64, len(sp.Ranges)), Best: make([]space.Assignment, len(sp.Ranges))}
	// NCCL's defaults are a choice too, though the space may not hold them
	// (an integer parameter offers no "default"; on a smooth landscape
	// NCCL_IB_QPS_PER_CONNECTION=1 is not the same as leaving it unset).
	var ok bool
	if p.truth.Default, ok = p.trueScores(sp.Env(tuner.Defaults(sp))); !ok {
		return nil, fmt.Errorf("scenario %s: NCCL's defaults fail", s.Name)
	}
	copy(p.truth.Optimum, p.truth.Default)
	all, ok := reachable(sp, 1<<22)
	if !ok {
		return nil, fmt.Errorf("scenario %s: too many configurations to find the optimum by enumeration", s.Name)
	}
	memo := map[string][]float64{}
	scores := make([][]float64, len(all))
	for i, a := range all {
		p.truth.Points++
		scores[i] = p.scoresOf(memo, sp.Env(a))
		// The space's own rules are checked only where they matter, on a
		// configuration that would lead a range: the enumeration is quicker so.
		for r, v := range scores[i] {
			if v > p.truth.Optimum[r] && sp.Check(a) == nil {
				p.truth.Optimum[r], p.truth.Best[r] = v, a
			}
		}
	}
	if sc.HasTerms() {
		p.ways = p.waysWithin(all, scores)
	}
	return p, nil
}

// reachable is every configuration a campaign may try and choose, if no
// more than limit: the space's assignments with each integer parameter also
// left out, at NCCL's default, as the warm start's ideas leave those they do
// not set, and coordinate descent those it has not moved (a smooth
// landscape treats an integer left out apart from each of its values, as
// the levels family did before 919d499).
func reachable(sp *space.Space, limit int) ([]space.Assignment, bool) {
	wide := *sp
	wide.Params = slices.Clone(sp.Params)
	for i, p := range wide.Params {
		if p.Categorical() {
			continue
		}
		if p.Max-p.Min >= int64(limit) {
			return nil, false
		}
		values := []string{space.Unset}
		for v := p.Min; v <= p.Max; v++ {
			values = append(values, strconv.FormatInt(v, 10))
		}
		wide.Params[i].Values = values
	}
	return search.Enumerate(&wide, 0, limit)
}

// waysWithin are prepared.ways, from the scores of all (nil where one
// fails) that the enumeration found; NCCL's defaults, which hold no term,
// count too. The space's rules and the terms held are read only for a
// configuration within Tolerance of some range's optimum, a few of all.
func (p *prepared) waysWithin(all []space.Assignment, scores [][]float64) [][][]int {
	ways := make([][][]int, len(p.truth.Optimum))
	within := func(r int, v float64) bool { return v >= (1-Tolerance)*p.truth.Optimum[r] }
	add := func(scores []float64, held []int) {
		for r, v := range scores {
			if within(r, v) && !slices.ContainsFunc(ways[r], func(w []int) bool { return slices.Equal(w, held) }) {
				ways[r] = append(ways[r], held)
			}
		}
	}
	add(p.truth.Default, []int{})
	for i, a := range all {
		near := false
		for r, v := range scores[i] {
			near = near || within(r, v)
		}
		if near && p.sp.Check(a) == nil {
			add(scores[i], p.sc.HeldTerms(space.EnvMap(p.sp.Env(a))))
		}
	}
	return ways
}

// trueScores is the objective per range without noise, like the tuner's
// (geometric mean of the bus bandwidth over the range's sizes).
func (p *prepared) trueScores(env []string) ([]float64, bool) {
	s := p.scoresOf(nil, env)
	return s, s != nil
}

// scoresOf is trueScores (nil where the configuration fails), memoised in
// memo, if not nil, under sim.TruthKey: on a generated landscape most
// configurations share their truth with many others.
func (p *prepared) scoresOf(memo map[string][]float64, env []string) []float64 {
	m := space.EnvMap(env)
	key := ""
	if memo != nil {
		key = sim.TruthKey(p.sc, "all_reduce", m)
	}
	if s, ok := memo[key]; ok && key != "" {
		return s
	}
	var s []float64
	if bw, err := sim.Evaluate(p.sc, "all_reduce", m, p.sizes); err == nil {
		s = results.RangeScores(p.sp, p.sizes, bw)
	}
	if key != "" {
		memo[key] = s
	}
	return s
}

// clock runs the simulator in process instead of launching it: the same
// table, parser and failure classification as a launched run, and it adds up
// how long the runs would take on the modelled hardware. Job.Command[1:] are
// the simulator's arguments (the Tuner's Simulator command is just a name).
type clock struct {
	seconds float64
}

func (c *clock) Run(_ context.Context, job runner.Job) runner.Result {
	cmd := job.Benchmark.Command(job.Plan)
	res := runner.Result{Command: cmd, Started: time.Now()}
	var out bytes.Buffer
	code, seconds := sim.Simulate(cmd[1:], job.Env, &out, &out)
	c.seconds += seconds
	res.Output, res.Exit, res.Duration = out.Bytes(), runner.Exit{Code: code}, time.Duration(seconds*float64(time.Second))
	res.Log = nccllog.Parse(res.Output)
	res.Measurement, res.Failure = job.Benchmark.Read(job.Plan, runner.Output{Text: res.Output, Exit: res.Exit, Log: res.Log})
	return res
}

// campaign runs one real campaign, as `nccltune run` does without its
// simplification and validation, and scores, after every trial, each range's
// choice, the configuration that would be exported then, by its true value.
func (p *prepared) campaign(ctx context.Context, o Options, sampler string, seed int64) (Run, error) {
	if err := ctx.Err(); err != nil {
		return Run{}, err // stopped: the campaigns not started stay so
	}
	var simulator strings.Builder
	for _, f := range append(slices.Clone(p.Flags), fmt.Sprintf("-noise=%g", o.Noise), fmt.Sprintf("-seed=%d", seed)) {
		k, v, _ := strings.Cut(strings.TrimPrefix(f, "-"), "=")
		fmt.Fprintf(&simulator, "%s = %q\n", k, v)
	}
	strategy := Strategies[sampler]
	name := fmt.Sprintf("%s-%s-%d", p.Name, sampler, seed)
	settings := fmt.Sprintf("name = %q\ntrials = %d\nsampler = %q\nseed = %d\nprune = %t\nwarm_start = %t\npatience = %d",
		name, o.Trials, strategy.Sampler, seed, o.Prune, strategy.WarmStart, o.Patience)
	src := fmt.Sprintf(layout, settings, p.sc.Nodes*p.sc.GPUsPerNode,
		fmt.Sprintf("noise_target = %g\n[simulator]\n%s", o.NoiseTarget, simulator.String())) + p.Space
	sp, err := space.Parse(name+".toml", []byte(src))
	if err != nil {
		return Run{}, err
	}
	st, err := freshStore(o.Dir, name)
	if err != nil {
		return Run{}, err
	}
	defer st.Close()
	R := len(sp.Ranges)
	run := Run{Regret: make([][]float64, R), Tried: make([][]float64, R), Miss: make([][]Miss, R)}
	truths := map[string][]float64{}
	truth := func(env []string) []float64 {
		key := strings.Join(env, " ")
		if _, ok := truths[key]; !ok {
			truths[key], _ = p.trueScores(env)
		}
		return truths[key]
	}
	book := newTriedBook(sp)
	var trials []store.Trial
	clk := &clock{}
	c := tuner.Tuner{Space: sp, Store: st, Simulator: []string{"sim"}, Runner: clk, Progress: func(pr tuner.Progress) {
		trials = append(trials, pr.Trial)
		run.Seconds = append(run.Seconds, clk.seconds)
		book.observe(pr.Trial, truth(pr.Trial.Env), p.sc.HeldTerms(space.EnvMap(pr.Trial.Env)))
		for r, res := range results.Of(sp, trials, nil) {
			regret := 1.0
			if ch := res.Chosen(); ch != nil {
				if cv := truth(ch.Env); cv != nil {
					regret = 1 - cv[r]/p.truth.Optimum[r]
				}
			}
			tried := 1 - book.best[r]/p.truth.Optimum[r]
			run.Regret[r] = append(run.Regret[r], regret)
			run.Tried[r] = append(run.Tried[r], tried)
			miss := MissNone
			if p.ways != nil && regret > Tolerance {
				miss = missOf(tried, p.ways[r], book.bestHeld[r], book.everHeld[r])
			}
			run.Miss[r] = append(run.Miss[r], miss)
		}
	}}
	return run, c.Run(ctx, tuner.Options{})
}

// triedBook keeps, per range, what the search has tried: the true score of
// the best configuration the choice can see (a trial measured in full),
// the landscape's terms it holds, and those held by any trial that
// measured the range (a pruned one too: its quick pass taught the sampler).
type triedBook struct {
	ranges   []string
	best     []float64
	bestHeld [][]int
	everHeld []map[int]bool
}

func newTriedBook(sp *space.Space) *triedBook {
	b := &triedBook{best: make([]float64, len(sp.Ranges)), bestHeld: make([][]int, len(sp.Ranges)), everHeld: make([]map[int]bool, len(sp.Ranges))}
	for r, rg := range sp.Ranges {
		b.ranges, b.everHeld[r] = append(b.ranges, rg.Name), map[int]bool{}
	}
	return b
}

// observe books trial t, whose configuration's true scores are truth (nil
// where it fails, which tells nothing of its speed) and which holds the
// terms held.
func (b *triedBook) observe(t store.Trial, truth []float64, held []int) {
	for r, name := range b.ranges {
		if s, ok := t.Scores[name]; !ok || s <= 0 || truth == nil {
			continue // a failure, or a range settled before the trial
		}
		for _, i := range held {
			b.everHeld[r][i] = true
		}
		if t.State == store.Complete && truth[r] > b.best[r] {
			b.best[r], b.bestHeld[r] = truth[r], held
		}
	}
}

// missOf is why a choice more than Tolerance off missed, given the regret
// of the best configuration tried, the ways of the range, the terms the best
// tried holds and those any trial measuring the range held.
func missOf(tried float64, ways [][]int, bestHeld []int, everHeld map[int]bool) Miss {
	if tried <= Tolerance {
		return MissChoice
	}
	within := func(held func(int) bool) func([]int) bool {
		return func(way []int) bool {
			for _, i := range way {
				if !held(i) {
					return false
				}
			}
			return true
		}
	}
	switch {
	case slices.ContainsFunc(ways, within(func(i int) bool { return slices.Contains(bestHeld, i) })):
		return MissPolish
	case !slices.ContainsFunc(ways, within(func(i int) bool { return everHeld[i] })):
		return MissUnseen
	}
	return MissUnkept
}

// Measure runs every sampler on every scenario over the seeds: the
// scenarios' enumerations, then every campaign, in parallel, until ctx is
// done (then it returns ctx's error: a benchmark of hours stops on a signal).
func Measure(ctx context.Context, scenarios []Scenario, o Options, progress func(string)) ([]Result, map[string]Truth, error) {
	if err := CheckStrategies(o.Samplers); err != nil {
		return nil, nil, err
	}
	preps := make([]*prepared, len(scenarios))
	errs := make([]error, len(scenarios))
	// An enumeration takes seconds and is shared (prepare), so it is not
	// cut short; none starts once ctx is done.
	parallel(len(scenarios), runtime.GOMAXPROCS(0), func(i int) {
		if ctx.Err() == nil {
			preps[i], errs[i] = prepare(scenarios[i])
		}
	})
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	for i, err := range errs {
		if err != nil {
			return nil, nil, fmt.Errorf("scenario %s: %w", scenarios[i].Name, err)
		}
	}
	truths := map[string]Truth{}
	out := make([]Result, 0, len(scenarios)*len(o.Samplers))
	for _, p := range preps {
		truths[p.Name] = p.truth
		for _, name := range o.Samplers {
			res := Result{Scenario: p.Name, Sampler: name, Trials: o.Trials, Runs: make([]Run, o.Seeds)}
			for _, r := range p.sp.Ranges {
				res.Ranges = append(res.Ranges, r.Name)
			}
			out = append(out, res)
		}
	}
	S := len(o.Samplers)
	errs = make([]error, len(out)*o.Seeds)
	left := make([]int, len(out))
	for i := range left {
		left[i] = o.Seeds
	}
	var mu sync.Mutex
	parallel(len(out)*o.Seeds, runtime.GOMAXPROCS(0), func(k int) {
		r, seed := k/o.Seeds, k%o.Seeds
		out[r].Runs[seed], errs[k] = preps[r/S].campaign(ctx, o, out[r].Sampler, int64(seed+1))
		mu.Lock()
		defer mu.Unlock()
		if left[r]--; left[r] == 0 && progress != nil {
			progress(fmt.Sprintf("%s: %s done", out[r].Scenario, out[r].Sampler))
		}
	})
	for r := range out {
		if err := errors.Join(errs[r*o.Seeds : (r+1)*o.Seeds]...); err != nil {
			return nil, nil, fmt.Errorf("%s/%s: %w", out[r].Scenario, out[r].Sampler, err)
		}
	}
	return out, truths, nil
}

// parallel calls f(0) .. f(n-1), width at once, in order of start. A panic
// of a call's is raised in parallel's caller (safego), once the others end.
func parallel(n, width int, f func(int)) {
	var g safego.Group
	sem := make(chan struct{}, width)
	for i := range n {
		sem <- struct{}{}
		g.Go(func() {
			defer func() { <-sem }()
			f(i)
		})
	}
	g.Wait()
}

// MedianRegret is the median over seeds of a range's regret after n trials.
func (r Result) MedianRegret(rangeIdx, n int) float64 {
	return r.median(func(run Run) []float64 { return run.Regret[rangeIdx] }, n)
}

// MedianTried is the median over seeds of the regret of a range's best
// configuration tried by trial n.
func (r Result) MedianTried(rangeIdx, n int) float64 {
	return r.median(func(run Run) []float64 { return run.Tried[rangeIdx] }, n)
}

func (r Result) median(series func(Run) []float64, n int) float64 {
	var v []float64
	for _, run := range r.Runs {
		s := series(run)
		v = append(v, s[min(n, len(s))-1])
	}
	return Median(v)
}

// WorstMedianRegret is the largest per-range median regret after n trials.
func (r Result) WorstMedianRegret(n int) float64 { return r.MedianRegret(r.worstRange(n), n) }

// WorstRangeTried is MedianTried of the range of WorstMedianRegret.
func (r Result) WorstRangeTried(n int) float64 { return r.MedianTried(r.worstRange(n), n) }

// worstRange is the range of the largest median regret after n trials.
func (r Result) worstRange(n int) int {
	worst := 0
	for i := range r.Ranges {
		if r.MedianRegret(i, n) > r.MedianRegret(worst, n) {
			worst = i
		}
	}
	return worst
}

// Misses counts, over seeds, why the range whose choice is furthest off
// after n trials in each run is more than Tolerance off (none where it is
// within); with one seed, that is the range of WorstMedianRegret.
func (r Result) Misses(n int) map[Miss]int {
	out := map[Miss]int{}
	for _, run := range r.Runs {
		t, worst := min(n, len(run.Seconds))-1, 0
		for i := range r.Ranges {
			if run.Regret[i][t] > run.Regret[worst][t] {
				worst = i
			}
		}
		if m := run.Miss[worst][t]; m != MissNone {
			out[m]++
		}
	}
	return out
}

// TrialsToWithin is the median over seeds of the first trial count after
// which every range is within tol of its optimum and stays so to the end of
// the campaign (the budget+1 if never: a campaign that stopped early, by
// patience, ran no more). A choice that a noisy measurement moves off
// again has not come within for a campaign stopped at that count.
func (r Result) TrialsToWithin(tol float64) float64 {
	var v []float64
	for _, run := range r.Runs {
		n := r.Trials + 1
		for t := len(run.Seconds) - 1; t >= 0; t-- {
			if slices.ContainsFunc(run.Regret, func(regret []float64) bool { return regret[t] > tol }) {
				break
			}
			n = t + 1
		}
		v = append(v, float64(n))
	}
	return trialsQuantile(v, 0.5, r.Trials+1)
}

// trialsQuantile is Quantile of trial counts v where never stands for a
// campaign that did not come within: a mark, not a count, so a quantile
// that would lie between it and a count (the mean of 40 and never) is never.
func trialsQuantile(v []float64, q float64, never int) float64 {
	x := Quantile(v, q)
	counts := slices.DeleteFunc(slices.Clone(v), func(n float64) bool { return n >= float64(never) })
	if len(counts) == 0 || x > slices.Max(counts) {
		return float64(never)
	}
	return x
}

// MedianSeconds is the median benchmark time spent by n trials.
func (r Result) MedianSeconds(n int) float64 {
	var v []float64
	for _, run := range r.Runs {
		v = append(v, run.Seconds[min(n, len(run.Seconds))-1])
	}
	return Median(v)
}

// Median is the middle of v (the mean of the two middle values of an even count).
func Median(v []float64) float64 {
	sort.Float64s(v)
	if len(v) == 0 {
		return math.NaN()
	}
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// Quantile is the q-quantile of v (0 <= q <= 1), interpolated linearly
// between order statistics; NaN for none.
func Quantile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	v = slices.Clone(v)
	sort.Float64s(v)
	pos := q * float64(len(v)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(v)-1)
	return v[lo] + (pos-float64(lo))*(v[hi]-v[lo])
}

// Spread is a figure's median and 90th percentile over a family of scenarios.
type Spread struct {
	Median float64 `json:"median"`
	P90    float64 `json:"p90"`
}

// SpreadOf is v's median and 90th percentile.
func SpreadOf(v []float64) Spread { return Spread{Quantile(v, 0.5), Quantile(v, 0.9)} }

// FamilyRow is one strategy over a family of scenarios (the generated
// landscapes): over them, the spread of its worst-range regret after each
// number of trials asked for, and of its trials until every range is
// within 3% (trials+1 where never, and where a quantile would lie between
// never and a count).
type FamilyRow struct {
	Sampler   string         `json:"sampler"`
	Scenarios int            `json:"landscapes"`
	Regret    map[int]Spread `json:"worst_range_regret"`
	// Tried is the spread of the regret of the best configuration tried in
	// the range of Regret: where it is near Regret, the search missed, not
	// the choice.
	Tried     map[int]Spread       `json:"worst_range_best_tried_regret"`
	Misses    map[int]map[Miss]int `json:"misses,omitempty"` // why the worst range is more than 3% off, summed over the scenarios; nil where the family's misses are not diagnosed
	TrialsTo3 Spread               `json:"trials_to_3pct"`
	Each      []FamilyOutcome      `json:"per_landscape"`
	never     int                  // TrialsTo3's mark of never: the budget + 1
}

// FamilyOutcome is one scenario's figures in a FamilyRow.
type FamilyOutcome struct {
	Scenario  string               `json:"scenario"`
	Regret    map[int]float64      `json:"worst_range_regret"`
	Tried     map[int]float64      `json:"worst_range_best_tried_regret"`
	Misses    map[int]map[Miss]int `json:"misses,omitempty"`
	TrialsTo3 float64              `json:"trials_to_3pct"`
}

// Family summarises results over their scenarios, one row per sampler in
// order of appearance; regret is taken after each of at trials.
func Family(results []Result, at []int) []FamilyRow {
	var rows []FamilyRow
	for _, r := range results {
		k := slices.IndexFunc(rows, func(f FamilyRow) bool { return f.Sampler == r.Sampler })
		if k < 0 {
			rows = append(rows, FamilyRow{Sampler: r.Sampler, Regret: map[int]Spread{}, Tried: map[int]Spread{}, Misses: map[int]map[Miss]int{}, never: r.Trials + 1})
			k = len(rows) - 1
		}
		e := FamilyOutcome{Scenario: r.Scenario, Regret: map[int]float64{}, Tried: map[int]float64{}, Misses: map[int]map[Miss]int{},
			TrialsTo3: r.TrialsToWithin(Tolerance)}
		for _, n := range at {
			e.Regret[n], e.Tried[n] = r.WorstMedianRegret(n), r.WorstRangeTried(n)
			if m := r.Misses(n); len(m) > 0 {
				e.Misses[n] = m
			}
			if rows[k].Misses[n] == nil {
				rows[k].Misses[n] = map[Miss]int{}
			}
			for m, c := range e.Misses[n] {
				rows[k].Misses[n][m] += c
			}
		}
		rows[k].Each = append(rows[k].Each, e)
		rows[k].Scenarios++
	}
	for k := range rows {
		var trials []float64
		for _, e := range rows[k].Each {
			trials = append(trials, e.TrialsTo3)
		}
		rows[k].TrialsTo3 = Spread{trialsQuantile(trials, 0.5, rows[k].never), trialsQuantile(trials, 0.9, rows[k].never)}
		for _, n := range at {
			var regret, tried []float64
			for _, e := range rows[k].Each {
				regret, tried = append(regret, e.Regret[n]), append(tried, e.Tried[n])
			}
			rows[k].Regret[n], rows[k].Tried[n] = SpreadOf(regret), SpreadOf(tried)
		}
	}
	return rows
}
