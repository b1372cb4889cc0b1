// Package bench measures search quality and campaign cost on the simulated
// cluster: for each scenario it finds the true optimum of every size range by
// enumerating the space without noise, then runs each sampler over many seeds
// with noisy measurements, and reports the regret of the configuration a
// campaign would choose, the trials needed to come within 3% of the optimum,
// and the benchmark time spent.
package bench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/nccltune/nccltune/runner/sim"
	"github.com/nccltune/nccltune/search"
	"github.com/nccltune/nccltune/space"
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

// Scenarios are the clusters of the search-quality benchmark.
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
	{"2node-tcp", []string{"-nodes=2", "-fabric=tcp"}, common + `
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
`},
}

const header = `
[campaign]
sizes = { min = "8", max = "1G", factor = 4 }
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
[fixed]
NCCL_NVLS_ENABLE = 0
`

// Options says what to run.
type Options struct {
	Samplers []string
	Seeds    int
	Trials   int
	Noise    float64 // relative standard deviation of each measurement
	Prune    bool    // run each trial's quick pass first, as a campaign with prune = true does
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
	noise float64
	prune bool
	sc    sim.Scenario
	sp    *space.Space
	sizes []int64
	truth Truth
}

func prepare(s Scenario) (*prepared, error) {
	sp, err := space.Parse(s.Name+".toml", []byte(header+s.Space))
	if err != nil {
		return nil, err
	}
	sc, err := sim.ParseScenario(append(slices.Clone(s.Flags), "-noise=0"))
	if err != nil {
		return nil, err
	}
	p := &prepared{sc: sc, sp: sp, sizes: sp.Sizes.List()}
	p.truth = Truth{Optimum: make([]float64, len(sp.Ranges)), Best: make([]space.Assignment, len(sp.Ranges))}
	for _, a := range search.Enumerate(sp, 0) {
		p.truth.Points++
		scores, ok := p.score(a, nil)
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

// score is the objective per range, like the tuner's (geometric mean busbw),
// with measurement noise drawn from rng (nil: none).
func (p *prepared) score(a space.Assignment, rng *rand.Rand) ([]float64, bool) {
	return p.scoreNoise(a, rng, p.noise)
}

func (p *prepared) scoreNoise(a space.Assignment, rng *rand.Rand, noise float64) ([]float64, bool) {
	if p.sp.Check(a) != nil {
		return nil, false
	}
	bw, err := sim.Evaluate(p.sc, "all_reduce", space.EnvMap(p.sp.Env(a)), p.sizes)
	if err != nil {
		return nil, false
	}
	logs := make([]float64, len(p.sp.Ranges))
	counts := make([]int, len(p.sp.Ranges))
	for i, size := range p.sizes {
		r := p.sp.RangeOf(size)
		if r < 0 || bw[i] <= 0 {
			continue
		}
		v := bw[i]
		if rng != nil {
			v *= math.Exp(rng.NormFloat64() * noise)
		}
		logs[r] += math.Log(v)
		counts[r]++
	}
	out := make([]float64, len(logs))
	for r := range logs {
		out[r] = math.Exp(logs[r] / float64(counts[r]))
	}
	return out, true
}

func (p *prepared) seconds(a space.Assignment, warmup, iters int) float64 {
	return sim.Seconds(p.sc, "all_reduce", space.EnvMap(p.sp.Env(a)), p.sizes, warmup, iters)
}

// quickPass is the pruning decision of a campaign with prune = true: a sweep
// with 2 iterations (noisier by sqrt(20/2)), pruned if more than
// tuner.PruneMargin below the best measured in every range.
func (p *prepared) quickPass(a space.Assignment, rng *rand.Rand, measured []float64) (scores []float64, pruned bool) {
	quick, ok := p.scoreNoise(a, rng, p.noise*math.Sqrt(10))
	if !ok {
		return nil, false
	}
	for r, v := range quick {
		if v >= measured[r]*(1-tuner.PruneMargin) {
			return quick, false
		}
	}
	return quick, true
}

// campaign runs one sampler as the tuner would (trial 0 = NCCL's defaults,
// ask, measure with noise, tell) and scores each range's choice, the
// best-measured configuration so far, by its true value.
func (p *prepared) campaign(sampler string, seed int64, trials int) (Run, error) {
	s, err := search.New(sampler, p.sp, seed)
	if err != nil {
		return Run{}, err
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 77))
	R := len(p.sp.Ranges)
	run := Run{Regret: make([][]float64, R), Seconds: make([]float64, trials)}
	measured, trueOfChoice := make([]float64, R), make([]float64, R)
	spent := 0.0
	for n := range trials {
		a := tuner.Defaults(p.sp)
		if n > 0 {
			if a, err = s.Ask(n); err != nil {
				return run, err
			}
		}
		if p.prune && n > 0 {
			spent += p.seconds(a, 1, 2)
			if quick, pruned := p.quickPass(a, rng, measured); pruned {
				if err := s.Tell(a, quick); err != nil {
					return run, err
				}
				run.Seconds[n] = spent
				for r := range R {
					run.Regret[r] = append(run.Regret[r], 1-trueOfChoice[r]/p.truth.Optimum[r])
				}
				continue
			}
		}
		noisy, ok := p.score(a, rng)
		if ok {
			spent += p.seconds(a, 5, 20)
			truth, _ := p.score(a, nil)
			for r := range noisy {
				if noisy[r] > measured[r] {
					measured[r], trueOfChoice[r] = noisy[r], truth[r]
				}
			}
			err = s.Tell(a, noisy)
		} else {
			spent += 5 // a launch that fails at init, or a rejection: start-up cost at most
			err = s.Tell(a, nil)
		}
		if err != nil {
			return run, err
		}
		run.Seconds[n] = spent
		for r := range R {
			run.Regret[r] = append(run.Regret[r], 1-trueOfChoice[r]/p.truth.Optimum[r])
		}
	}
	return run, nil
}

// Measure runs every sampler on every scenario over the seeds.
func Measure(scenarios []Scenario, o Options, progress func(string)) ([]Result, map[string]Truth, error) {
	var out []Result
	truths := map[string]Truth{}
	for _, s := range scenarios {
		p, err := prepare(s)
		if err != nil {
			return nil, nil, fmt.Errorf("scenario %s: %w", s.Name, err)
		}
		p.noise, p.prune = o.Noise, o.Prune
		truths[s.Name] = p.truth
		for _, name := range o.Samplers {
			res := Result{Scenario: s.Name, Sampler: name}
			for _, r := range p.sp.Ranges {
				res.Ranges = append(res.Ranges, r.Name)
			}
			for seed := range int64(o.Seeds) {
				run, err := p.campaign(name, seed+1, o.Trials)
				if err != nil {
					return nil, nil, fmt.Errorf("%s/%s: %w", s.Name, name, err)
				}
				res.Runs = append(res.Runs, run)
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
	return median(v)
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
	return median(v)
}

// MedianSeconds is the median benchmark time spent by n trials.
func (r Result) MedianSeconds(n int) float64 {
	var v []float64
	for _, run := range r.Runs {
		v = append(v, run.Seconds[min(n, len(run.Seconds))-1])
	}
	return median(v)
}

func median(v []float64) float64 {
	sort.Float64s(v)
	if len(v) == 0 {
		return math.NaN()
	}
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}
