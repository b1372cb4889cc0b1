// Package quality measures search quality and campaign cost on the simulated
// cluster: for each scenario it finds the true optimum of every size range by
// enumerating the space without noise, then runs real campaigns (tuner's loop,
// store, parser and sampler, with the simulator in process) for each sampler
// over many seeds, and reports the regret of the configuration each campaign
// would export, the trials needed to come within 3% of the optimum, and the
// benchmark time spent.
package quality

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

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
// (TPE after the warm start), TPE without the warm start, and the textbook
// baselines, random and grid search from NCCL's defaults alone; random-warm
// isolates what the warm start gives random search.
var Strategies = map[string]struct {
	Sampler   string
	WarmStart bool
}{
	"tpe": {"tpe", true}, "tpe-cold": {"tpe", false}, "random": {"random", false},
	"grid": {"grid", false}, "random-warm": {"random", true},
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

// ScenariosNamed returns the named scenarios, in the order given.
func ScenariosNamed(names []string) ([]Scenario, error) {
	var out []Scenario
	for _, name := range names {
		k := slices.IndexFunc(Scenarios, func(s Scenario) bool { return s.Name == name })
		if k < 0 {
			var known []string
			for _, s := range Scenarios {
				known = append(known, s.Name)
			}
			return nil, fmt.Errorf("unknown scenario %q (known: %s)", name, strings.Join(known, ", "))
		}
		out = append(out, Scenarios[k])
	}
	return out, nil
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
	Regret  [][]float64 // [range][trial]: regret of the choice after trial n
	Seconds []float64   // cumulative benchmark seconds after trial n
}

// Result is every run of one sampler on one scenario.
type Result struct {
	Scenario, Sampler string
	Ranges            []string
	Runs              []Run
}

// Truth is a scenario's noise-free optimum per range.
type Truth struct {
	Optimum []float64
	Best    []space.Assignment
	Points  int // assignments enumerated
}

type prepared struct {
	Scenario
	sc    sim.Scenario
	sp    *space.Space
	sizes []int64
	truth Truth
}

func prepare(s Scenario) (*prepared, error) {
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
	all, ok := search.Enumerate(sp, 0, 1<<22)
	if !ok {
		return nil, fmt.Errorf("scenario %s: too many configurations to find the optimum by enumeration", s.Name)
	}
	for _, a := range all {
		p.truth.Points++
		if sp.Check(a) != nil {
			continue
		}
		scores, ok := p.trueScores(sp.Env(a))
		if !ok {
			continue
		}
		for r, v := range scores {
			if v > p.truth.Optimum[r] {
				p.truth.Optimum[r], p.truth.Best[r] = v, a
			}
		}
	}
	return p, nil
}

// trueScores is the objective per range without noise, like the tuner's
// (geometric mean of the bus bandwidth over the range's sizes).
func (p *prepared) trueScores(env []string) ([]float64, bool) {
	bw, err := sim.Evaluate(p.sc, "all_reduce", space.EnvMap(env), p.sizes)
	if err != nil {
		return nil, false
	}
	return results.RangeScores(p.sp, p.sizes, bw), true
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
func (p *prepared) campaign(o Options, sampler string, seed int64) (Run, error) {
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
	st, err := store.Open(filepath.Join(o.Dir, name+".db"))
	if err != nil {
		return Run{}, err
	}
	defer st.Close()
	R := len(sp.Ranges)
	run := Run{Regret: make([][]float64, R)}
	truths := map[string][]float64{}
	var trials []store.Trial
	clk := &clock{}
	c := tuner.Tuner{Space: sp, Store: st, Simulator: []string{"sim"}, Runner: clk, Progress: func(pr tuner.Progress) {
		trials = append(trials, pr.Trial)
		run.Seconds = append(run.Seconds, clk.seconds)
		for r, res := range results.Of(sp, trials, nil) {
			regret := 1.0
			if ch := res.Chosen(); ch != nil {
				key := strings.Join(ch.Env, " ")
				if _, ok := truths[key]; !ok {
					truths[key], _ = p.trueScores(ch.Env)
				}
				if v := truths[key]; v != nil {
					regret = 1 - v[r]/p.truth.Optimum[r]
				}
			}
			run.Regret[r] = append(run.Regret[r], regret)
		}
	}}
	return run, c.Run(context.Background(), tuner.Options{})
}

// Measure runs every sampler on every scenario over the seeds, campaigns in
// parallel.
func Measure(scenarios []Scenario, o Options, progress func(string)) ([]Result, map[string]Truth, error) {
	if err := CheckStrategies(o.Samplers); err != nil {
		return nil, nil, err
	}
	var out []Result
	truths := map[string]Truth{}
	for _, s := range scenarios {
		p, err := prepare(s)
		if err != nil {
			return nil, nil, fmt.Errorf("scenario %s: %w", s.Name, err)
		}
		truths[s.Name] = p.truth
		for _, name := range o.Samplers {
			res := Result{Scenario: s.Name, Sampler: name, Runs: make([]Run, o.Seeds)}
			for _, r := range p.sp.Ranges {
				res.Ranges = append(res.Ranges, r.Name)
			}
			errs := make([]error, o.Seeds)
			var wg sync.WaitGroup
			sem := make(chan struct{}, runtime.GOMAXPROCS(0))
			for i := range o.Seeds {
				wg.Add(1)
				sem <- struct{}{}
				go func() {
					defer func() { <-sem; wg.Done() }()
					res.Runs[i], errs[i] = p.campaign(o, name, int64(i+1))
				}()
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				return nil, nil, fmt.Errorf("%s/%s: %w", s.Name, name, err)
			}
			if progress != nil {
				progress(fmt.Sprintf("%s: %s done", s.Name, name))
			}
			out = append(out, res)
		}
	}
	return out, truths, nil
}

// MedianRegret is the median over seeds of a range's regret after n trials.
func (r Result) MedianRegret(rangeIdx, n int) float64 {
	var v []float64
	for _, run := range r.Runs {
		v = append(v, run.Regret[rangeIdx][min(n, len(run.Regret[rangeIdx]))-1])
	}
	return Median(v)
}

// WorstMedianRegret is the largest per-range median regret after n trials.
func (r Result) WorstMedianRegret(n int) float64 {
	worst := 0.0
	for i := range r.Ranges {
		worst = math.Max(worst, r.MedianRegret(i, n))
	}
	return worst
}

// TrialsToWithin is the median over seeds of the first trial count after
// which every range is within tol of its optimum (trials+1 if never).
func (r Result) TrialsToWithin(tol float64) float64 {
	var v []float64
	for _, run := range r.Runs {
		n := len(run.Seconds) + 1
		for t := range run.Seconds {
			ok := true
			for i := range r.Ranges {
				ok = ok && run.Regret[i][t] <= tol
			}
			if ok {
				n = t + 1
				break
			}
		}
		v = append(v, float64(n))
	}
	return Median(v)
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
