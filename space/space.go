// Package space models a tuning campaign's search space: the NCCL variables to
// search, the ones pinned, the message sizes to sweep and the ranges to tune
// separately. Load reads and validates it from space.toml.
package space

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Unset, as a categorical value, leaves the variable out of the environment so
// that NCCL applies its own default (which may differ per message size).
const Unset = "default"

// Space is a validated space.toml.
type Space struct {
	Campaign  CampaignSettings
	Sizes     Sizes
	Ranges    []Range
	Benchmark BenchmarkSettings
	Launcher  LauncherSettings
	// Simulator, when set, replaces the benchmark binary with nccltune's simulated
	// cluster; its keys are the simulator's flags (see `nccltune sim --help`).
	Simulator map[string]string
	Fixed     map[string]string // pinned variables, never searched
	Params    []Param
	// TryFirst are the user's own known-good configurations ([[try_first]]),
	// run right after NCCL's defaults, before the built-in warm start.
	TryFirst []Assignment
	// Workload is the job's mix of collectives and sizes ([[workload]]): with
	// one, each trial measures every collective it names, and each
	// collective is a range, scored by its share of the job's predicted
	// communication time.
	Workload []Call
	// Weighted: the workload's entries give weights, relative shares of the
	// calls, not counts, so the job's predicted times are relative, not
	// seconds (TimeUnit).
	Weighted bool
	Source   []byte // the file as read, kept with the campaign
	// Dir is the directory the file's relative paths were made absolute
	// against, its own; "" for a copy read without one (a store's), whose
	// relative paths stay as written.
	Dir string
}

// TimeUnit is the unit of the job's predicted times: seconds, or a relative
// unit where the workload gives weights.
func (s *Space) TimeUnit() string {
	if s.Weighted {
		return "(relative)"
	}
	return "s"
}

// CampaignSettings are the [campaign] table: what the campaign is and how
// long it runs (store.Campaign is a campaign as stored).
type CampaignSettings struct {
	Name       string
	Collective string // nccl-tests name without "_perf": all_reduce, all_gather, ...
	Trials     int    // budget, including trial 0 (NCCL's defaults)
	Objective  string // busbw
	Sampler    string // one of Samplers
	// SamplerNamed says the file names the sampler: a stored campaign run
	// again takes it. Otherwise the campaign keeps the one it started with,
	// so that a new DefaultSampler does not change a campaign under way.
	SamplerNamed bool
	Seed         int64
	// Patience stops the campaign once no range has improved by MinGain for
	// this many trials (0: run the whole budget).
	Patience int
	// Prune runs each trial's sweep with few iterations first, and skips the
	// full run when that is far below the best in every range.
	Prune bool
	// WarmStart runs the known-good configurations (see WarmStart) right
	// after NCCL's defaults, before the sampler's own proposals.
	WarmStart bool
	// Scales are node counts to tune at, one campaign each (see AtScale),
	// smallest first; none: the launcher's one node count.
	Scales []int
	// Scale is the node count of one of them, in the space AtScale gives.
	Scale int
}

// AtScale is the space of one of campaign.scales: the campaign NAME@Nn of
// nodes nodes, srun's -N or the simulated cluster's node count set to it
// (and, when one process simulates every rank, its GPU count).
func (s *Space) AtScale(nodes int) *Space {
	c := *s
	c.Campaign.Name = fmt.Sprintf("%s@%dn", s.Campaign.Name, nodes)
	c.Campaign.Scales, c.Campaign.Scale = nil, nodes
	c.TryFirst = slices.Clone(s.TryFirst)
	if s.Launcher.Kind == "srun" {
		c.Launcher.Nodes = nodes
	}
	if len(s.Simulator) > 0 {
		c.Simulator = maps.Clone(s.Simulator)
		c.Simulator["nodes"] = strconv.Itoa(nodes)
		if s.Launcher.Kind == "local" {
			c.Benchmark.GPUs = nodes * s.simulatedGPUsPerNode()
		}
	}
	return &c
}

// simulatedGPUsPerNode is the simulator's gpus_per_node (8 unless set).
func (s *Space) simulatedGPUsPerNode() int {
	if n, err := strconv.Atoi(s.Simulator["gpus_per_node"]); err == nil {
		return n
	}
	return 8
}

// MinTrials is the smallest trial budget: trials 0 and 1 measure NCCL's
// defaults (twice, for the run-to-run noise), so a third is the first to compare.
const MinTrials = 3

// DefaultsTrials is how many trials measure NCCL's defaults, trials 0 to
// DefaultsTrials-1: twice, for the run-to-run noise, and once on every group
// of nodes, so that every group's baseline is known and a slow group shows.
func (s *Space) DefaultsTrials() int { return max(MinTrials-1, s.Launcher.Groups) }

// IsDefaults reports whether a is NCCL's defaults: it sets nothing NCCL
// reads otherwise than unset (Reading, which results group trials by:
// NCCL_IB_QPS_PER_CONNECTION=1 alone is a run of the defaults). Trials are
// matched to the defaults by this, not by number, since DefaultsTrials
// follows launcher.groups, which a space file may change between runs of
// one campaign (the groups are no part of its hash).
func (s *Space) IsDefaults(a Assignment) bool { return s.Reading(a) == s.Reading(nil) }

// MaxTrials is the largest trial budget: days of trials at a second each, as
// many as the largest grid, and far below the trial numbers a store holds
// (the simplification's trials, after each budget a campaign is given, are
// numbered among them), so that no budget is accepted that the store would
// then refuse to read, or that would take memory in proportion to itself
// before its first trial.
const MaxTrials = 1 << 16

// CheckTrials checks a trial budget: at least one trial after the defaults',
// at most MaxTrials.
func (s *Space) CheckTrials(n int) error {
	if min := s.DefaultsTrials() + 1; n < min {
		return fmt.Errorf("the trial budget must be at least %d (trials 0 to %d measure NCCL's defaults%s), not %d", min, min-2, map[bool]string{true: ", one on each group"}[s.Launcher.Groups > 1], n)
	}
	if n > MaxTrials {
		return fmt.Errorf("the trial budget must be at most %d, not %d", MaxTrials, n)
	}
	return nil
}

// Sizes is the message-size sweep of each trial (nccl-tests -b, -e, -f).
type Sizes struct {
	Min, Max int64
	Factor   int
}

// List returns every size the sweep visits.
func (s Sizes) List() []int64 {
	if s.Min < 1 || s.Factor < 2 {
		return nil // not a sweep: a factor of 1 (or less) would never reach max
	}
	var out []int64
	for n := s.Min; n <= s.Max; n *= int64(s.Factor) {
		out = append(out, n)
		if n == 0 || n > math.MaxInt64/int64(s.Factor) {
			break
		}
	}
	return out
}

// Range is a band of message sizes of one collective tuned on its own: Min
// inclusive, Max exclusive. A range of a workload is its collective's calls,
// of every size.
type Range struct {
	Name       string
	Collective string // nccl-tests' name: all_reduce, all_gather, ...
	Min, Max   int64
	Calls      []Call // the workload's calls of Collective; none for a range of sizes
}

// Call is one entry of a job's workload: Count calls (or a relative weight)
// of a collective of Bytes, nccl-tests' size, on a communicator of Ranks ranks
// (0 where the log did not say).
type Call struct {
	Collective string
	Bytes      int64
	Count      float64
	Ranks      int
}

// Contains reports whether size falls into the range.
func (r Range) Contains(size int64) bool { return size >= r.Min && size < r.Max }

func (r Range) String() string {
	return fmt.Sprintf("%s [%s, %s)", r.Name, FormatSize(r.Min), FormatSize(r.Max))
}

// Benchmark kinds.
const (
	NCCLTests = "nccl-tests" // a *_perf binary: busbw per size range
	DDP       = "ddp"        // the PyTorch DDP step script: steps per second
	Command   = "command"    // the user's own program: the metric it prints
)

// BenchmarkKinds are the benchmarks a space can name.
var BenchmarkKinds = []string{NCCLTests, DDP, Command}

// kindSettings declares, per benchmark kind, the settings of the space file
// it uses beyond those of every kind (the campaign's name, budget, sampler,
// seed, patience, warm start and scales, benchmark.timeout and warm_launch,
// the launcher, [fixed], [[param]], [[try_first]]). The loader refuses any
// other that is set, with its line, so that none is silently ignored.
var kindSettings = map[string][]string{
	NCCLTests: {"campaign.collective", "campaign.sizes", "campaign.objective", "campaign.prune", "[[range]]", "[[workload]]", "[simulator]",
		"benchmark.binary", "benchmark.gpus", "benchmark.check", "benchmark.noise_target", "benchmark.iters", "benchmark.warmup", "benchmark.args"},
	// The DDP step all-reduces its gradients: one objective, the step rate.
	DDP: {"campaign.prune", "benchmark.iters", "benchmark.warmup", "benchmark.args", "benchmark.python", "benchmark.model_params",
		"benchmark.layers", "benchmark.batch", "benchmark.device", "benchmark.script_dir"},
	// The user's command runs as written: no iteration count to set or shorten.
	Command: {"benchmark.command", "benchmark.metric"},
}

// Uses reports whether the benchmark uses a setting of the space file
// ("campaign.sizes", "[[range]]", "benchmark.iters").
func (b BenchmarkSettings) Uses(setting string) bool {
	return slices.Contains(kindSettings[b.Kind], setting)
}

// DefaultNoiseTarget is benchmark.noise_target unless the space says
// otherwise: a range's score known to ±1%, the smallest gain the tuner counts
// (results.MinGain). Tighter costs iterations that the search quality
// benchmark shows buy nothing; looser lets noise pick the winners.
const DefaultNoiseTarget = 0.01

// BenchmarkSettings are the [benchmark] table: what each trial runs and with
// what flags (runner.Benchmark runs it).
type BenchmarkSettings struct {
	Kind   string // one of BenchmarkKinds
	Binary string // nccl-tests: path or name in PATH; empty with a simulator
	GPUs   int    // -g: GPUs per process
	Iters  int    // -n: the first trials'; see NoiseTarget
	Warmup int    // -w
	// NoiseTarget is the standard deviation of a range's score (relative)
	// that the iteration count is adapted to, from two runs of NCCL's
	// defaults; 0 keeps Iters throughout. nccl-tests only.
	NoiseTarget float64
	Check       bool          // -c 1: verify results (#wrong)
	Timeout     time.Duration // per trial; the whole process group is killed after it
	// WarmLaunch runs NCCL's defaults once, unrecorded, before the first
	// launch of each session: the first launch on a cold GPU measures slow
	// (21% on small messages on an H200), which would skew the baseline and
	// the noise the iteration count is adapted to.
	WarmLaunch bool
	Args       []string // extra arguments
	// DDP step settings.
	Python    string // interpreter; torchrun uses its own
	Params    string // model size, e.g. "100M"
	Layers    int
	Batch     int
	Device    string // cuda (NCCL) or cpu (gloo)
	ScriptDir string // where the script is written; shared by all nodes for multi-node runs
	// The user's command and what it prints.
	Command []string
	Metric  Metric
}

// Sweeps reports whether the benchmark measures message sizes, so that size
// ranges, the sweep and its iteration count apply. The others have one
// objective: the step time, the user's metric.
func (b BenchmarkSettings) Sweeps() bool { return b.Uses("campaign.sizes") }

// Measure is how a benchmark's scores read to a user: in the unit the
// benchmark measures, and which way is better. Scores are higher-is-better
// throughout; a time (the user's metric with goal "min", a workload's
// predicted seconds) is scored by its inverse.
type Measure struct {
	Unit    string // as measured: GB/s, steps/s, ms, s
	Inverse bool   // the score is 1/value: lower values are better
}

// Value is a score as measured, in Unit.
func (m Measure) Value(score float64) float64 {
	if m.Inverse {
		return 1 / score
	}
	return score
}

func (m Measure) String() string {
	if m.Inverse {
		return m.Unit + " (lower is better)"
	}
	return m.Unit
}

// Measure says how the benchmark's scores read.
func (b BenchmarkSettings) Measure() Measure {
	switch b.Kind {
	case DDP:
		return Measure{Unit: "steps/s"}
	case Command:
		return Measure{Unit: orDefault(b.Metric.Unit, "(metric)"), Inverse: b.Metric.Goal == "min"}
	}
	return Measure{Unit: "GB/s"}
}

// Measure says how a range's scores read: the benchmark's, or for a
// workload's range the predicted time of its calls, in the job's unit.
func (s *Space) Measure(r Range) Measure {
	if len(r.Calls) > 0 {
		return Measure{Unit: s.TimeUnit(), Inverse: true}
	}
	return s.Benchmark.Measure()
}

// Sized reports whether a range's scores are over message sizes, so that
// its bounds mean something: not a workload's collective, nor the one
// objective of a benchmark that does not sweep.
func (s *Space) Sized(r Range) bool { return s.Benchmark.Sweeps() && len(r.Calls) == 0 }

// Metric is how the user's command reports its objective: the first group
// of Regex, or the value of the key JSON in a line that is a JSON object;
// the median of the values after the first Skip (warm-up) is the objective.
type Metric struct {
	Regex, JSON string
	Goal        string // "min" (a time: its inverse is scored) or "max" (a rate)
	Skip        int
	Unit        string // for reports
}

func (m Metric) String() string {
	if m.Regex != "" {
		return "regex " + strconv.Quote(m.Regex)
	}
	return "JSON key " + strconv.Quote(m.JSON)
}

// Launchers are the ways a trial's processes can be started.
var Launchers = []string{"local", "mpirun", "srun", "torchrun"}

// LauncherSettings are the [launcher] table: how a trial's processes are
// started (runner.Launcher starts them).
type LauncherSettings struct {
	Kind         string // local, mpirun or srun
	Command      string // the launcher's binary, if not the kind's name in PATH
	Flavor       string // mpirun: openmpi (default) or mpich (also Intel MPI)
	NP           int    // mpirun -np
	Hostfile     string // mpirun --hostfile
	MapBy        string // mpirun --map-by
	BindTo       string // mpirun --bind-to
	Nodes        int    // srun -N, torchrun --nnodes
	TasksPerNode int    // srun --ntasks-per-node
	NProcPerNode int    // torchrun --nproc-per-node
	RdzvEndpoint string // torchrun --rdzv-endpoint
	Args         []string
	// Groups splits the allocation (srun's nodes, mpirun's hostfile) into
	// this many disjoint groups of one shape, each running a trial at a time.
	Groups int
}

// MaxGroups bounds launcher.groups: beyond it, the trials proposed before
// the others' results are known would make the search a random one.
const MaxGroups = 64

// Param is one searched variable, or in a space whose workload holds
// several collectives, one collective's part of NCCL_ALGO or NCCL_PROTO
// (named "NCCL_ALGO[allreduce]": NCCL >= 2.24 takes a value per collective).
type Param struct {
	Name     string
	Values   []string // categorical choices; may include Unset
	Min, Max int64    // integer range, when Values is empty
	Log      bool     // sample the integer range on a log scale
	When     []Condition
	// Var and Collective, for one collective's part: the variable and
	// NCCL's name of the collective; Var is "" otherwise (the variable is Name).
	Var, Collective string
}

// Variable is the environment variable, or DDP knob, the parameter sets.
func (p Param) Variable() string {
	if p.Var != "" {
		return p.Var
	}
	return p.Name
}

// NCCLDefault is the value NCCL takes when p's variable is unset (the
// catalogue's Default; DDP's, for a DDP knob), where p can take it: p set
// to it, or left out, runs as the default. False for one collective's
// part, which NCCL reads in a list.
func (p Param) NCCLDefault() (string, bool) {
	v, ok := catalogue[p.Variable()]
	if knob, isKnob := ddpKnobs[p.Name]; isKnob {
		v, ok = knob, true
	}
	if p.Collective != "" || !ok || v.Default == "" || !p.Offers(v.Default) {
		return "", false
	}
	return v.Default, true
}

// NCCLReads is the value NCCL reads p's value v as (Var.reads): a Pow2
// integer's power of two, 3 as 4. A categorical's values are apart to NCCL
// already (the loader refuses two it reads alike) and stay as listed.
func (p Param) NCCLReads(v string) string {
	if cat, ok := catalogue[p.Variable()]; ok && !p.Categorical() {
		return cat.reads(v)
	}
	return v
}

// Categorical reports whether the parameter chooses among Values.
func (p Param) Categorical() bool { return len(p.Values) > 0 }

// Condition makes a parameter active only when another variable (an earlier
// parameter or a fixed variable) holds one of the listed values.
type Condition struct {
	Var string
	In  []string
}

// Assignment maps each active parameter's name to its chosen value.
type Assignment map[string]string

// Active reports whether every condition of p holds under the fixed variables
// and the parameters already chosen in a.
func (s *Space) Active(p Param, a Assignment) bool {
	for _, c := range p.When {
		v, ok := a[c.Var]
		if !ok {
			v, ok = s.Fixed[c.Var]
		}
		if !ok || !slices.Contains(c.In, v) {
			return false
		}
	}
	return true
}

// Complete makes an assignment of values (each already a value its
// parameter offers): NCCL's default ("default") where a parameter offers it and
// values has none, nothing where a condition switches a parameter off. It
// also returns the categorical parameters left without a value (they offer
// no "default") and the parameters of values that ended up inactive.
func (s *Space) Complete(values map[string]string) (a Assignment, unset, inactive []string) {
	a = Assignment{}
	for _, p := range s.Params {
		v, given := values[p.Name]
		switch {
		case !s.Active(p, a):
			if given {
				inactive = append(inactive, p.Name)
			}
		case given:
			a[p.Name] = v
		case slices.Contains(p.Values, Unset):
			a[p.Name] = Unset
		case p.Categorical():
			unset = append(unset, p.Name)
		}
	}
	return a, unset, inactive
}

// Env returns the NCCL_* environment of a trial: the fixed variables and every
// assigned value except Unset, DDP knobs left out, as sorted NAME=value pairs.
func (s *Space) Env(a Assignment) []string {
	vars := s.settings(a, false)
	env := make([]string, 0, len(vars))
	for _, name := range slices.Sorted(maps.Keys(vars)) {
		env = append(env, name+"="+vars[name])
	}
	return env
}

// Identity lists, one per line, everything that decides what a trial
// measures: the collective, the sweep and ranges, the benchmark and launch,
// the simulated cluster, the pinned and the searched variables. Comments,
// the campaign's name, its budget, seed, sampler and timeout are not part of it.
func (s *Space) Identity() []string {
	b, l := s.Benchmark, s.Launcher
	lines := []string{
		"collective " + s.Campaign.Collective + ", objective " + s.Campaign.Objective,
		fmt.Sprintf("sizes %s..%s x%d", FormatSize(s.Sizes.Min), FormatSize(s.Sizes.Max), s.Sizes.Factor),
		fmt.Sprintf("benchmark %s %s -g %d -n %d -w %d check=%v args=%q noise_target=%g", b.Kind, b.Binary, b.GPUs, b.Iters, b.Warmup, b.Check, b.Args, b.NoiseTarget),
		// Groups is left out: how many trials run at once changes none of them.
		fmt.Sprintf("launcher {Kind:%s Command:%s Flavor:%s NP:%d Hostfile:%s MapBy:%s BindTo:%s Nodes:%d TasksPerNode:%d NProcPerNode:%d RdzvEndpoint:%s Args:[%s]}",
			l.Kind, word(l.Command), l.Flavor, l.NP, word(l.Hostfile), word(l.MapBy), word(l.BindTo), l.Nodes, l.TasksPerNode, l.NProcPerNode, word(l.RdzvEndpoint), words(l.Args)),
	}
	switch b.Kind {
	case DDP:
		lines = append(lines, fmt.Sprintf("ddp %s params=%s layers=%d batch=%d device=%s", b.Python, b.Params, b.Layers, b.Batch, b.Device))
	case Command:
		lines = append(lines, fmt.Sprintf("command %q metric %+v", b.Command, b.Metric))
	}
	for _, r := range s.Ranges {
		lines = append(lines, "range "+r.String())
	}
	for _, c := range s.Workload {
		lines = append(lines, fmt.Sprintf("workload %s %s x%g ranks %d", c.Collective, FormatSize(c.Bytes), c.Count, c.Ranks))
	}
	for _, k := range slices.Sorted(maps.Keys(s.Simulator)) {
		lines = append(lines, "simulator "+k+" = "+s.Simulator[k])
	}
	for _, k := range slices.Sorted(maps.Keys(s.Fixed)) {
		lines = append(lines, "fixed "+k+" = "+s.Fixed[k])
	}
	for _, p := range s.Params {
		line := "param " + p.Name + " " + p.Describe()
		for _, c := range p.When {
			line += fmt.Sprintf(" when %s in %v", c.Var, c.In)
		}
		lines = append(lines, line)
	}
	return lines
}

// word writes free text of the launcher's line of Identity as it is where
// it is one word, and quoted where it holds what parts words or quotes
// them: unquoted, text ran into the next field (hostfile "h MapBy:" and
// map_by "m" read as hostfile "h" and map_by " MapBy:m"), and arguments
// into one another (["-x", "A"] and ["-x A"], [""] and none). A word is
// written as it was, so that the hash of a space of words stays.
func word(s string) string {
	if strings.ContainsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || r == '"' || !unicode.IsGraphic(r) }) {
		return strconv.Quote(s)
	}
	return s
}

// words writes a list as fmt.Print did, each element a word, and an empty one quoted.
func words(list []string) string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = cmp.Or(word(s), `""`)
	}
	return strings.Join(out, " ")
}

// Check applies the rules by which NCCL overrides a combination of
// variables (NCCL 2.28-2.30: net_socket.cc cuts the sockets per thread to
// 64 in all, init.cc sets NCCL_MIN_CTAS to NCCL_MAX_CTAS and cuts the P2P
// chunk to an eighth of NCCL_BUFFSIZE (NCCL_STEPS), paths.cc takes
// NCCL_MIN_P2P_NCHANNELS over NCCL_MAX_P2P_NCHANNELS; connect.cc runs
// NCCL_MIN_NCHANNELS above NCCL_MAX_NCHANNELS as written, duplicating the
// first channels), so that a configuration NCCL would not run as written,
// but as another one the space holds, is not launched: its measurement
// would be that other configuration's under a wrong name. Nor is one that
// NCCL fails each call of a collective the space measures by (algorithms).
func (s *Space) Check(a Assignment) error {
	env := EnvMap(s.Env(a))
	if err := s.algorithms(env); err != nil {
		return err
	}
	vars := map[string]int64{}
	for name, value := range env {
		if n, err := strconv.ParseInt(value, 10, 64); err == nil {
			vars[name] = n
		}
	}
	t, okT := vars["NCCL_SOCKET_NTHREADS"]
	n, okN := vars["NCCL_NSOCKS_PERTHREAD"]
	if okT && okN && t*n > 64 {
		return fmt.Errorf("NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD = %d exceeds NCCL's limit of 64 sockets, so NCCL would cut NCCL_NSOCKS_PERTHREAD to %d", t*n, 64/max(t, 1))
	}
	buffer, ok := vars["NCCL_BUFFSIZE"]
	if !ok {
		buffer = 4 << 20 // NCCL's default
	}
	for _, name := range []string{"NCCL_P2P_NET_CHUNKSIZE", "NCCL_P2P_NVL_CHUNKSIZE", "NCCL_P2P_PCI_CHUNKSIZE"} {
		if chunk, ok := vars[name]; ok && chunk > buffer/8 {
			return fmt.Errorf("%s = %d is above an eighth of NCCL_BUFFSIZE (%d), which NCCL cuts it to", name, chunk, buffer)
		}
	}
	for _, pair := range [][2]string{{"NCCL_MIN_CTAS", "NCCL_MAX_CTAS"}, {"NCCL_MIN_P2P_NCHANNELS", "NCCL_MAX_P2P_NCHANNELS"}} {
		lo, okLo := vars[pair[0]]
		hi, okHi := vars[pair[1]]
		if okLo && okHi && lo > hi {
			return fmt.Errorf("%s = %d exceeds %s = %d, which NCCL does not run as written but overrides", pair[0], lo, pair[1], hi)
		}
	}
	return nil
}

// algorithms refuses NCCL_ALGO and NCCL_PROTO that leave a collective the
// space measures no algorithm and protocol NCCL implements for it (Tree for
// all-gather): NCCL fails each call of it. The DDP step broadcasts too, as
// DistributedDataParallel syncs the model's state at its construction.
func (s *Space) algorithms(env map[string]string) error {
	algo, proto := env["NCCL_ALGO"], env["NCCL_PROTO"]
	if algo == "" && proto == "" {
		return nil
	}
	colls := s.Collectives()
	if s.Benchmark.Kind == DDP {
		colls = append(colls, "broadcast")
	}
	for _, coll := range colls {
		c := strings.ReplaceAll(coll, "_", "")
		if slices.Contains(collNames, c) && !implemented(c, algo, proto) {
			return fmt.Errorf("NCCL_ALGO = %s, NCCL_PROTO = %s leave %s none of the algorithms NCCL implements for it (%s; all but Ring and Tree with Simple alone): NCCL fails each call of it",
				cmp.Or(algo, Unset), cmp.Or(proto, Unset), coll, strings.Join(algosOf[c], ", "))
		}
	}
	return nil
}

// Key identifies a configuration: what its launches get, the environment and
// the options.
func (s *Space) Key(a Assignment) string {
	return strings.Join(append(s.Env(a), s.Args(a)...), " ")
}

// Reading identifies a configuration as NCCL reads it: Key with each
// catalogued variable's value normalized, then as NCCL reads it (Var.reads:
// a list as the set it names, a level's old number as its name), so that
// spellings NCCL reads alike ("ring" and "Ring", "07" and "7", "Simple,LL"
// and "LL,Simple", "4" and "SYS") are one configuration, whose failure under
// one spelling is its failure under all; and a variable set to the value
// NCCL takes when it is unset (Var.Default: NCCL_IB_QPS_PER_CONNECTION=1)
// is left out, as NCCL runs it, and so is a DDP knob set to DDP's default.
func (s *Space) Reading(a Assignment) string {
	return strings.Join(append(ReadingEnv(s.Env(a)), s.ReadingArgs(a)...), " ")
}

// KeyReading is the Reading of the configuration whose Key is key: a
// stored key (a verdict's) compares with another as NCCL reads the two.
// Key's words are its environment's NAME=value and its options'
// --flag=value, the options after the environment, joined by a blank; a
// value may hold blanks ("NCCL_NET=AWS Libfabric"), so a word that starts
// no NAME= or --flag= is the value's, as is a blank in it. An option at
// DDP's default is left out, as ReadingArgs leaves it.
func KeyReading(key string) string {
	if key == "" {
		return "" // NCCL's defaults
	}
	words := keyWords(key)
	first := slices.IndexFunc(words, func(w string) bool { return strings.HasPrefix(w, "--") })
	if first < 0 {
		first = len(words)
	}
	args := slices.DeleteFunc(words[first:], func(w string) bool {
		flag, value, _ := strings.Cut(w, "=")
		for _, knob := range ddpKnobs {
			if knob.Flag == flag {
				return value == knob.Default
			}
		}
		return false
	})
	return strings.Join(append(ReadingEnv(words[:first]), args...), " ")
}

// keyWords are a Key's words, NAME=value and --flag=value, each value
// whole, blanks and all.
func keyWords(key string) []string {
	var words []string
	for i, w := range strings.Split(key, " ") {
		if i > 0 && !keyWordRE.MatchString(w) {
			words[len(words)-1] += " " + w
			continue
		}
		words = append(words, w)
	}
	return words
}

// keyWordRE starts a word of a Key: NAME= or --flag=.
var keyWordRE = regexp.MustCompile(`^(?:[A-Za-z_][A-Za-z0-9_]*|--[a-z][a-z-]*)=`)

// ReadingEnv is env (NAME=value) with each value as Reading writes it.
func ReadingEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		if v, ok := catalogue[name]; ok {
			// As the loader reads a space's value, refused since or not:
			// what the trials of its stored space ran.
			if n, err := v.read(value); err == nil {
				value = n
			}
			value = v.reads(value)
			if v.Default != "" && value == v.Default {
				continue
			}
		}
		out = append(out, name+"="+value)
	}
	return out
}

// Args returns the DDP step script's options for the DDP knobs, fixed or assigned.
func (s *Space) Args(a Assignment) []string { return s.args(a, false) }

// ReadingArgs are Args as DDP runs them: a knob set to its default
// (Var.Default) left out.
func (s *Space) ReadingArgs(a Assignment) []string { return s.args(a, true) }

func (s *Space) args(a Assignment, reading bool) []string {
	vars := s.settings(a, true)
	var args []string
	for _, name := range slices.Sorted(maps.Keys(vars)) {
		if knob := ddpKnobs[name]; !reading || vars[name] != knob.Default {
			args = append(args, knob.Flag+"="+vars[name])
		}
	}
	return args
}

// settings are the fixed and assigned values a trial sets: the DDP knobs
// among them, or the variables; a variable set per collective gets NCCL's
// per-collective syntax ("allgather:Ring;allreduce:Tree").
func (s *Space) settings(a Assignment, knobs bool) map[string]string {
	out := map[string]string{}
	for name, v := range s.Fixed {
		if _, knob := ddpKnobs[name]; knob == knobs {
			out[name] = v
		}
	}
	parts := map[string][]string{}
	for name, v := range a {
		if _, knob := ddpKnobs[name]; v == Unset || knob != knobs {
			continue
		}
		// A collective's part of a variable; anything else names its variable.
		if k := slices.IndexFunc(s.Params, func(p Param) bool { return p.Name == name }); k >= 0 && s.Params[k].Collective != "" {
			p := s.Params[k]
			parts[p.Var] = append(parts[p.Var], p.Collective+":"+v)
		} else {
			out[name] = v
		}
	}
	for name, ps := range parts {
		slices.Sort(ps)
		out[name] = strings.Join(ps, ";")
	}
	return out
}

// Collectives are the collectives each trial measures: the workload's, or the campaign's one.
func (s *Space) Collectives() []string {
	var out []string
	for _, r := range s.Ranges {
		if !slices.Contains(out, r.Collective) {
			out = append(out, r.Collective)
		}
	}
	return out
}

// Sweep is the message sizes a trial measures of collective coll: the
// campaign's sweep, or, with a workload, powers of two from below its
// smallest call of coll to above its largest, between which a call's time is
// interpolated (and below the smallest, extrapolated). A collective whose
// nccl-tests size is every rank's share (all_gather, reduce_scatter,
// alltoall) prints size 0, measuring nothing, below 16 bytes a rank: its
// sweep starts no lower than that, over the ranks the campaign launches.
func (s *Space) Sweep(coll string) Sizes {
	if len(s.Workload) == 0 {
		return s.Sizes
	}
	lo, hi := int64(math.MaxInt64), int64(1)
	for _, c := range s.Workload {
		if c.Collective == coll {
			lo, hi = min(lo, c.Bytes), max(hi, c.Bytes)
		}
	}
	sw := Sizes{Min: 1, Max: 1, Factor: 2}
	for sw.Min <= lo/2 { // not Min*2, which overflows past a call of 2^62 bytes, and loops for ever
		sw.Min *= 2
	}
	if PerRank(coll) {
		ranks := int64(cmp.Or(s.LaunchRanks(), s.WorkloadRanks(), 1))
		for sw.Min < 16*min(ranks, math.MaxInt64/64) {
			sw.Min *= 2
		}
	}
	for sw.Max < max(hi, sw.Min) {
		sw.Max *= 2
	}
	return sw
}

// AlgorithmCollectives are the space's collectives that NCCL runs with an
// algorithm and protocol (TakesAlgorithm), in their ranges' order.
func (s *Space) AlgorithmCollectives() []string {
	return slices.DeleteFunc(s.Collectives(), func(c string) bool { return !TakesAlgorithm(c) })
}

// TakesAlgorithm reports whether NCCL runs collective coll (nccl-tests'
// name, all_reduce) with an algorithm and protocol that NCCL_ALGO and
// NCCL_PROTO choose, and takes a prefix of it in them: not alltoall or
// sendrecv, which it runs with neither.
func TakesAlgorithm(coll string) bool {
	return slices.Contains(collNames, strings.ReplaceAll(coll, "_", ""))
}

// PerRank reports whether nccl-tests' size of collective coll is the sum of
// every rank's share, each rounded down to 16 bytes.
func PerRank(coll string) bool {
	return coll == "all_gather" || coll == "reduce_scatter" || coll == "alltoall"
}

// WorkloadRanks is the communicator size the workload's calls were made
// on (workload.ranks); 0 where it does not say.
func (s *Space) WorkloadRanks() int {
	for _, c := range s.Workload {
		if c.Ranks > 0 {
			return c.Ranks
		}
	}
	return 0
}

// LaunchRanks is how many ranks an nccl-tests trial runs, where the space
// says: the launcher's processes (one local process, srun's nodes x tasks
// per node, mpirun's np) times each one's GPUs (benchmark.gpus, -g); 0
// where the launcher leaves it to the allocation or hostfile.
func (s *Space) LaunchRanks() int {
	l, gpus := s.Launcher, s.Benchmark.GPUs
	if s.Benchmark.Kind != NCCLTests {
		return 0
	}
	switch l.Kind {
	case "local":
		return gpus
	case "srun":
		return l.Nodes * l.TasksPerNode * gpus
	case "mpirun":
		return l.NP * gpus
	}
	return 0
}

// EnvMap turns NAME=value pairs into a map.
func EnvMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

// Programs lists the programs other than nccltune itself that a trial of
// the space starts: the benchmark's binary, interpreter or command, and a
// launcher other than local. None for the simulated cluster run locally.
// A space read back from a store must not start them (see the README's
// threat model): only the user's own space file may.
func (s *Space) Programs() []string {
	var out []string
	b, l := s.Benchmark, s.Launcher
	switch {
	case b.Kind == DDP:
		out = append(out, "benchmark.python "+b.Python)
	case b.Kind == Command:
		out = append(out, fmt.Sprintf("benchmark.command %q", b.Command))
	case len(s.Simulator) == 0:
		out = append(out, "benchmark.binary "+b.Binary)
	}
	if l.Kind != "local" || l.Command != "" {
		out = append(out, "launcher "+l.Kind+" "+l.Command)
	}
	return out
}

// Hash identifies the space's Identity, so that a resumed campaign can tell
// that what its trials measure has changed.
func (s *Space) Hash() string {
	sum := sha256.Sum256([]byte(strings.Join(s.Identity(), "\n")))
	return hex.EncodeToString(sum[:8])
}

// Diff lists how b's identity differs from a's: "- line" for what b lost,
// "+ line" for what it gained.
func Diff(a, b *Space) []string {
	ai, bi := a.Identity(), b.Identity()
	var out []string
	for _, l := range ai {
		if !slices.Contains(bi, l) {
			out = append(out, "- "+l)
		}
	}
	for _, l := range bi {
		if !slices.Contains(ai, l) {
			out = append(out, "+ "+l)
		}
	}
	return out
}

// RangeOf returns the index of the range holding size of collective coll
// ("": the campaign's), or -1.
func (s *Space) RangeOf(coll string, size int64) int {
	if coll == "" {
		coll = s.Campaign.Collective
	}
	return slices.IndexFunc(s.Ranges, func(r Range) bool { return r.Collective == coll && r.Contains(size) })
}

// Describe is a one-line summary of a parameter's domain, for help and reports.
func (p Param) Describe() string {
	if p.Categorical() {
		return "{" + strings.Join(p.Values, ", ") + "}"
	}
	scale := ""
	if p.Log {
		scale = " log"
	}
	return fmt.Sprintf("[%d, %d]%s", p.Min, p.Max, scale)
}
