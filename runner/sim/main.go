package sim

import (
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nccltune/nccltune/internal/text"
	"github.com/nccltune/nccltune/runner/nccltests"
	"github.com/nccltune/nccltune/space"
)

// Usage explains the simulator's command line.
const Usage = `nccltune sim [scenario flags] COLLECTIVE_perf [nccl-tests flags]

Runs a simulated cluster that behaves like nccl-tests on real hardware: it reads
NCCL_* variables from the environment and prints nccl-tests' result table.
Its numbers are a model, not a measurement.

nccl-tests flags modelled: -b -e -f -i -g -t -n -w -c -d -o -r. Its other flags
are taken and change nothing, except -S, -I and -C, which change the table, and
-h: those are errors.
Under mpirun or srun each process is one rank; only rank 0 prints the table.`

// Main runs the simulator with the given arguments (without the program name)
// and environment, and returns the process exit code, as nccl-tests would.
func Main(args, environ []string, stdout, stderr io.Writer) int {
	code, _ := Simulate(args, environ, stdout, stderr)
	return code
}

// startSeconds is what a launch costs before the first size runs: processes,
// CUDA contexts, NCCL's bootstrap and topology search.
const startSeconds = 5

// Simulate is Main that also returns how long the run would take on the
// modelled hardware, for benchmarks of the search that run the simulator in
// process, thousands of trials, without a process start per trial.
func Simulate(args, environ []string, stdout, stderr io.Writer) (code int, seconds float64) {
	var msg strings.Builder
	sc, fs := scenarioFlags(&msg)
	label := fs.String("run", "", "label of this launch; seeds the noise, so that each launch is a new draw")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) { // asked for: on standard output, as any command's help
			io.WriteString(stdout, msg.String())
			return 0, 0
		}
		io.WriteString(stderr, msg.String())
		return 1, 0
	}
	if err := sc.validate(); err != nil {
		fmt.Fprintln(stderr, "nccltune sim:", err)
		return 1, 0
	}
	rest := fs.Args()
	if len(rest) == 0 || !strings.HasSuffix(rest[0], "_perf") || !knownCollective(rest[0]) {
		fmt.Fprintln(stderr, "nccltune sim: name a benchmark such as all_reduce_perf\n\n"+Usage)
		return 1, 0
	}
	coll := strings.TrimSuffix(rest[0], "_perf")
	opts, err := parseTestFlags(rest[1:])
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", rest[0], err)
		return 1, 0
	}
	env := ncclEnv(environ)
	if sc.ranks() == 1 {
		// A communicator of one rank chooses no algorithm or protocol:
		// NCCL 2.28 on an H100 never read either, nor logged them.
		delete(env, "NCCL_ALGO")
		delete(env, "NCCL_PROTO")
	}
	r := &run{sc: *sc, coll: coll, opts: opts, env: env, out: stdout, host: "simnode0",
		rank: envOr(environ, 0, "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"),
		// A step's own task count: SLURM_NTASKS is also the allocation's,
		// which a run inside sbatch or salloc inherits without being a task
		// of any step (the local launcher there needed 16 times the GPUs).
		procs:   envOr(environ, 1, "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS"),
		nonce:   *label,
		seconds: startSeconds}
	code = r.main()
	time.Sleep(time.Duration(r.seconds * sc.Pace * float64(time.Second)))
	return code, r.seconds
}

// The space loader checks a [simulator] table with CheckScenario.
func init() { space.CheckSimulator = CheckScenario }

// CheckScenario validates scenario flags (as the tuner will pass them) without running anything.
func CheckScenario(args []string) error {
	var msg strings.Builder
	sc, fs := scenarioFlags(&msg)
	fs.String("run", "", "")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("simulator: %w", err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("simulator: unexpected argument %q", fs.Arg(0))
	}
	if err := sc.validate(); err != nil {
		return fmt.Errorf("simulator: %w", err)
	}
	return nil
}

func scenarioFlags(stderr io.Writer) (*Scenario, *flag.FlagSet) {
	sc := DefaultScenario()
	fs := flag.NewFlagSet("nccltune sim", flag.ContinueOnError)
	if stderr == nil {
		stderr = io.Discard
	}
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, Usage+"\n\nScenario flags:"); fs.PrintDefaults() }
	fs.Var(decimal[int]{&sc.Nodes}, "nodes", "`N` nodes in the cluster")
	fs.Var(decimal[int]{&sc.GPUsPerNode}, "gpus_per_node", "`N` GPUs per node")
	fs.StringVar(&sc.Fabric, "fabric", sc.Fabric, "interconnect between nodes: nvlink (one node), ib, roce, tcp")
	fs.Var(decimal[int]{&sc.NICsPerNode}, "nics_per_node", "`N` network ports per node")
	fs.Float64Var(&sc.NICGbps, "nic_gbps", sc.NICGbps, "speed of each port, Gbit/s")
	fs.BoolVar(&sc.GDR, "gdr", sc.GDR, "GPUDirect RDMA is possible (nvidia_peermem loaded)")
	fs.StringVar(&sc.GPUNIC, "gpu_nic", sc.GPUNIC, "PCI distance between GPU and NIC: PIX, PXB, PHB, SYS")
	fs.Var(decimal[int]{&sc.RoCEGID}, "roce_gid", "GID index `N` holding RoCE v2 (roce)")
	fs.Var(decimal[int]{&sc.GIDs}, "gids", "`N` entries in the GID table (roce)")
	fs.Float64Var(&sc.Noise, "noise", sc.Noise, "relative standard deviation of measurements")
	fs.Var(decimal[int64]{&sc.Seed}, "seed", "noise seed `N`")
	fs.Var(decimal[int]{&sc.Landscape}, "landscape", "number `N` of a generated landscape laid over the physics: settings then pay only as it says (0: off)")
	fs.StringVar(&sc.LandscapeKind, "landscape_kind", sc.LandscapeKind, "kind of the generated landscape: levels (every variable a few levels) or smooth (integers pay through smooth curves)")
	fs.Float64Var(&sc.Pace, "pace", sc.Pace, "seconds to sleep per second the run takes on the modelled hardware (0: answer at once)")
	return &sc, fs
}

// decimal is an integer flag read in decimal, as the space that gives the
// scenario in its [simulator] table reads its integers: the flag package
// read a leading 0 as octal (gpus_per_node = "010" was 8 GPUs, 10 to the
// space's rank count) and took 0x hexadecimal.
type decimal[T int | int64] struct{ p *T }

func (d decimal[T]) Set(s string) error {
	n, err := text.Integer(s)
	if err != nil {
		return err
	}
	if int64(T(n)) != n {
		return fmt.Errorf("out of range (%d to %d)", math.MinInt32, math.MaxInt32) // an int of 32 bits
	}
	*d.p = T(n)
	return nil
}

func (d decimal[T]) String() string {
	if d.p == nil { // the flag package's zero value, for its help
		return "0"
	}
	return strconv.FormatInt(int64(*d.p), 10)
}

func knownCollective(bin string) bool {
	_, ok := collectives[strings.TrimSuffix(bin, "_perf")]
	return ok
}

type testOpts struct {
	minBytes, maxBytes, stepBytes int64
	factor                        int64
	gpus, threads, iters, warmup  int
	check                         bool
	dtype, op                     string
	root                          int
}

// parseTestFlags reads nccl-tests' options as nccl-tests does
// (space.NCCLTestsOptions: "-G1", "--stepf 8"). Those that change no
// simulated number (CUDA graphs, blocking, the average over ranks, the
// timeout, ...) are taken and left alone, as a space's benchmark.args may
// give any that nccl-tests takes; those that add or change the table's
// columns are refused, as the simulator prints only its plain table.
func parseTestFlags(args []string) (testOpts, error) {
	o := testOpts{minBytes: 32 << 20, maxBytes: 32 << 20, stepBytes: 1 << 20, gpus: 1, threads: 1,
		iters: 20, warmup: 5, check: true, dtype: "float", op: "sum"}
	opts, err := space.NCCLTestsOptions(args)
	if err != nil {
		return o, err
	}
	for _, opt := range opts {
		n, isInt := opt.Int()
		ints := map[string]*int{"ngpus": &o.gpus, "nthreads": &o.threads, "iters": &o.iters, "warmup_iters": &o.warmup, "root": &o.root}
		sizes := map[string]*int64{"minbytes": &o.minBytes, "maxbytes": &o.maxBytes, "stepbytes": &o.stepBytes}
		switch name := opt.Long; {
		case sizes[name] != nil:
			if *sizes[name], err = space.ParseSize(opt.Value); err != nil {
				return o, fmt.Errorf("%s: %w", opt.Written, err)
			}
		case !isInt && (ints[name] != nil || slices.Contains([]string{"stepfactor", "check", "report_timestamps", "per_iter_timing", "report_cputime"}, name)):
			return o, fmt.Errorf("%s %q: not an integer", opt.Written, opt.Value)
		case ints[name] != nil:
			*ints[name] = n
		case name == "stepfactor":
			o.factor = int64(n)
		case name == "check":
			o.check = n != 0
		case name == "datatype":
			o.dtype = opt.Value
		case name == "op":
			o.op = opt.Value
		case name == "help" || slices.Contains([]string{"report_timestamps", "per_iter_timing", "report_cputime"}, name) && n != 0:
			return o, fmt.Errorf("%s %s changes nccl-tests' table, which the simulator does not model", opt.Written, opt.Value)
		}
	}
	if o.minBytes < 1 || o.maxBytes < o.minBytes || o.gpus < 1 || o.threads < 1 || o.iters < 1 || o.factor == 1 {
		return o, fmt.Errorf("invalid sizes, step or counts")
	}
	if _, ok := space.ElementBytes[o.dtype]; !ok {
		return o, fmt.Errorf("invalid type %q", o.dtype)
	}
	return o, nil
}

// modelledVars are the variables the simulated NCCL reads; others are ignored,
// as NCCL ignores a misspelt name.
var modelledVars = []string{"NCCL_ALGO", "NCCL_PROTO", "NCCL_MIN_CTAS", "NCCL_MAX_CTAS", "NCCL_MIN_NCHANNELS",
	"NCCL_MAX_NCHANNELS", "NCCL_BUFFSIZE", "NCCL_NTHREADS", "NCCL_CUMEM_ENABLE", "NCCL_P2P_DISABLE",
	"NCCL_NET_GDR_LEVEL", "NCCL_IB_QPS_PER_CONNECTION", "NCCL_IB_GID_INDEX", "NCCL_IB_DISABLE", "NCCL_NET",
	"NCCL_SOCKET_NTHREADS", "NCCL_NSOCKS_PERTHREAD", "NCCL_NVLS_ENABLE", "NCCL_DEBUG", "NCCL_DEBUG_SUBSYS"}

// ncclEnv is what the simulated NCCL reads: the environment's modelled
// variables, then, as NCCL loads it into its environment, NCCL_CONF_FILE's
// NAME=value lines where the environment does not set the name. NCCL reads
// ~/.nccl.conf and /etc/nccl.conf in its place; the simulator does not, so
// that this machine's files do not change a simulated cluster.
func ncclEnv(environ []string) map[string]string {
	env := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && slices.Contains(modelledVars, k) {
			env[k] = v
		}
	}
	if conf, err := readConf(lookup(environ, "NCCL_CONF_FILE")); err == nil {
		for _, line := range strings.Split(string(conf), "\n") {
			// NCCL drops a line's '\r' too: a file written on Windows reads the same.
			k, v, ok := strings.Cut(strings.TrimSuffix(line, "\r"), "=")
			if _, set := env[k]; ok && !set && slices.Contains(modelledVars, k) {
				env[k] = v
			}
		}
	}
	return env
}

// confLimit bounds what the simulator reads of NCCL_CONF_FILE.
const confLimit = 1 << 20

// readConf reads a regular file's first confLimit bytes. NCCL reads any
// file to its end; the simulator, a test runner, must not wedge or exhaust
// memory on a hostile name: a FIFO blocks at open, /dev/zero never ends.
func readConf(path string) ([]byte, error) {
	if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("NCCL_CONF_FILE %q: not a regular file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, confLimit))
}

func lookup(environ []string, name string) string {
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v
		}
	}
	return ""
}

func envOr(environ []string, def int, names ...string) int {
	for _, n := range names {
		if v, err := strconv.Atoi(lookup(environ, n)); err == nil {
			return v
		}
	}
	return def
}

type run struct {
	sc          Scenario
	coll        string
	opts        testOpts
	env         map[string]string
	out         io.Writer
	host        string
	rank, procs int
	nonce       string
	seconds     float64 // the run's duration on the modelled hardware
}

func (r *run) main() int {
	ranks := r.procs * r.opts.threads * r.opts.gpus
	if ranks > r.sc.ranks() {
		r.fail("CUDA", "invalid device ordinal", fmt.Sprintf("the launch needs %d GPUs; the simulated cluster has %d", ranks, r.sc.ranks()))
		return 2
	}
	// The launch uses as many whole nodes as its ranks need.
	r.sc.Nodes = (ranks + r.sc.GPUsPerNode - 1) / r.sc.GPUsPerNode
	r.sc.GPUsPerNode = min(ranks, r.sc.GPUsPerNode)
	if r.sc.Nodes == 1 && r.sc.Fabric != "nvlink" {
		r.sc.Fabric = "nvlink"
	}
	cfg, err := r.sc.parseConfig(r.env, r.coll)
	var gain func(float64) float64
	if land := r.sc.generated(); land != nil {
		var lerr error
		if gain, lerr = land.under(r.env); err == nil {
			err = lerr
		}
	}
	if r.rank == 0 {
		r.header(ranks)
	}
	r.info(cfg)
	if err != nil {
		kind := "invalid usage (run with NCCL_DEBUG=WARN for details)"
		if strings.HasPrefix(err.Error(), "NET/") {
			kind = "unhandled system error (run with NCCL_DEBUG=INFO for details)"
		}
		r.fail("NCCL", kind, err.Error())
		return 3
	}
	if r.rank != 0 {
		return 0
	}
	if r.env["NCCL_NVLS_ENABLE"] != "0" && r.sc.ranks() > 1 {
		// The simulated GPUs do not support NVLink SHARP; NCCL would print this and go on.
		r.debug("WARN", "NVLS is not supported on this simulated platform")
	}
	var rows []nccltests.Row
	var sum float64
	wrongHalves := 0 // halves of rows with wrong elements, as nccl-tests counts them (its errors)
	dt := space.ElementBytes[r.opts.dtype]
	redop, root := collectives[r.coll].redop, -1
	if r.coll == "broadcast" || r.coll == "reduce" {
		root = r.opts.root
	}
	if redop == "sum" {
		redop = r.opts.op
	}
	for requested := r.opts.minBytes; requested <= r.opts.maxBytes; requested = r.next(requested) {
		// The size nccl-tests really moves: its per-rank shares are rounded down to 16 bytes.
		size, _ := nccltests.PrintedSize(r.coll, requested, r.opts.dtype, ranks)
		algo, proto, ok := r.sc.choose(r.coll, float64(size), cfg)
		if !ok {
			r.fail("NCCL", "invalid usage (run with NCCL_DEBUG=WARN for details)",
				fmt.Sprintf("no algorithm/protocol available for %s with NCCL_ALGO=%q NCCL_PROTO=%q", r.coll, r.env["NCCL_ALGO"], r.env["NCCL_PROTO"]))
			return 3
		}
		r.decision(size, algo, proto, cfg, ranks)
		row := nccltests.Row{Size: size, Count: r.count(size, dt, ranks), Type: r.opts.dtype, Redop: redop, Root: root}
		truth := r.sc.predict(r.coll, float64(size), algo, proto, cfg, r.sc.truth())
		if gain != nil {
			truth = r.sc.landscapeTime(gain, r.sc.baseTable(r.coll), r.coll, float64(size))
		}
		r.seconds += 2 * float64(r.opts.warmup+r.opts.iters) * truth / 1e6
		for inPlace, m := range []*nccltests.Measure{&row.OutOfPlace, &row.InPlace} {
			m.TimeUs = truth * r.noise(size, inPlace)
			m.AlgBW = float64(size) / m.TimeUs / 1e3
			m.BusBW = m.AlgBW * collectives[r.coll].busFactor(float64(ranks))
			sum += m.BusBW
			switch {
			case !r.opts.check || inPlace == 1 && nccltests.InPlaceUnsupported(r.coll):
				m.Wrong = -1 // nccl-tests checks neither
			case proto == protoLL128 && cfg.ll128Corrupts && size >= 64<<10:
				m.Wrong = size/dt/997 + 1
				wrongHalves += r.procs * r.opts.threads // each thread of each process finds its own
			}
		}
		rows = append(rows, row)
	}
	for _, row := range rows {
		fmt.Fprintln(r.out, nccltests.FormatRow(row))
	}
	fmt.Fprintf(r.out, "# Out of bounds values : %d %s\n", wrongHalves, map[bool]string{false: "OK", true: "FAILED"}[wrongHalves > 0])
	fmt.Fprintf(r.out, "# Avg bus bandwidth    : %g \n#\n", math.Round(sum/float64(2*len(rows))*1e4)/1e4)
	fmt.Fprintf(r.out, "# Collective test concluded: %s_perf\n#\n", r.coll)
	if wrongHalves > 0 {
		return 7 // nccl-tests' testNumResults
	}
	return 0
}

// count is nccl-tests' count column: the elements of one rank's share
// where the collective splits the buffer among ranks.
func (r *run) count(size, dt int64, ranks int) int64 {
	if perRank[r.coll] {
		return size / dt / int64(ranks)
	}
	return size / dt
}

// perRank are the collectives whose count is each rank's share of the
// buffer, for nccl-tests' count column and NCCL's TUNING log alike.
var perRank = map[string]bool{"all_gather": true, "reduce_scatter": true, "alltoall": true}

// opNames are NCCL's names of the collectives, as its log writes them.
var opNames = map[string]string{"all_reduce": "AllReduce", "all_gather": "AllGather", "reduce_scatter": "ReduceScatter",
	"broadcast": "Broadcast", "reduce": "Reduce", "alltoall": "AlltoAll"}

// decision logs NCCL's choice for a size, as NCCL does at rank 0 with
// NCCL_DEBUG_SUBSYS=TUNING: bytes per rank where the count is a rank's share.
func (r *run) decision(size int64, algo, proto int, c config, ranks int) {
	op, ok := opNames[r.coll]
	subsys := strings.Split(strings.ToUpper(r.env["NCCL_DEBUG_SUBSYS"]), ",")
	if !ok || r.rank != 0 || !slices.Contains(subsys, "TUNING") && !slices.Contains(subsys, "ALL") {
		return
	}
	bytes := size
	if perRank[r.coll] {
		bytes = size / int64(ranks)
	}
	r.debug("INFO", fmt.Sprintf("%s: %d Bytes -> Algo %s proto %s channel{Lo..Hi}={0..%d}", op, bytes,
		[]string{"Ring", "Tree"}[algo], protoNames[proto], r.sc.channels(c)-1))
}

func (r *run) next(size int64) int64 {
	if r.opts.factor > 1 {
		return size * r.opts.factor
	}
	return size + r.opts.stepBytes
}

// noise is a multiplicative, log-normal measurement error, reproducible for the
// same scenario seed, environment, size and run nonce.
func (r *run) noise(size int64, inPlace int) float64 {
	if r.sc.Noise == 0 {
		return 1
	}
	sigma := r.sc.MeasurementNoise(r.opts.iters)
	h := fnv.New64a()
	for _, k := range slices.Sorted(maps.Keys(r.env)) {
		fmt.Fprintf(h, "%s=%s;", k, r.env[k])
	}
	fmt.Fprintf(h, "%d/%d/%s", size, inPlace, r.nonce)
	rng := rand.New(rand.NewPCG(uint64(r.sc.Seed), h.Sum64()))
	return math.Exp(rng.NormFloat64() * sigma)
}

// MeasurementNoise is the relative standard deviation of one measurement
// averaged over iters timed iterations. Scenario.Noise is the figure at
// nccl-tests' default of 20; three quarters of its variance is jitter between
// iterations, which more iterations average out, and a quarter varies from run
// to run (clocks, placement, other jobs on the fabric) whatever the count.
func (s Scenario) MeasurementNoise(iters int) float64 {
	return s.Noise * math.Sqrt(0.25+0.75*20/float64(max(iters, 1)))
}

func (r *run) header(ranks int) {
	o := r.opts
	land := ""
	if r.sc.Landscape > 0 {
		land = fmt.Sprintf(", generated landscape %d", r.sc.Landscape)
		if r.sc.LandscapeKind != "levels" {
			land = fmt.Sprintf(", generated %s landscape %d", r.sc.LandscapeKind, r.sc.Landscape)
		}
	}
	fmt.Fprintf(r.out, "# nccltune-sim: a simulated cluster, not a measurement: %d node(s) x %d GPU(s), fabric %s%s\n", r.sc.Nodes, r.sc.GPUsPerNode, r.sc.Fabric, land)
	fmt.Fprintf(r.out, "# Collective test starting: %s_perf\n", r.coll)
	fmt.Fprintf(r.out, "# nThread %d nGpus %d minBytes %d maxBytes %d step: %d(factor) warmup iters: %d iters: %d agg iters: 1 validation: %d graph: 0 unalign: 0\n#\n# Using devices\n",
		o.threads, o.gpus, o.minBytes, o.maxBytes, o.factor, o.warmup, o.iters, map[bool]int{false: 0, true: 1}[o.check])
	for i := range ranks {
		fmt.Fprintf(r.out, "#  Rank %2d Group  0 Pid %6d on %10s device %2d [0000:%02x:00] Simulated GPU\n", i, 1000+i, fmt.Sprintf("simnode%d", i/r.sc.GPUsPerNode), i%r.sc.GPUsPerNode, i)
	}
	fmt.Fprint(r.out, "#\n#                                                              out-of-place                       in-place          \n")
	fmt.Fprint(r.out, "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong \n")
	fmt.Fprint(r.out, "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)         \n")
}

// info prints what NCCL prints at init with NCCL_DEBUG=INFO: each variable it
// read, and the transport it chose.
func (r *run) info(c config) {
	for _, k := range slices.Sorted(maps.Keys(r.env)) {
		r.debug("INFO", fmt.Sprintf("%s set by environment to %s.", k, r.env[k]))
	}
	r.debug("INFO", fmt.Sprintf("comm 0x1 rank %d nRanks %d nNodes %d localRanks %d localRank %d MNNVL 0",
		r.rank, r.sc.ranks(), r.sc.Nodes, r.sc.GPUsPerNode, r.rank%r.sc.GPUsPerNode))
	for ch := range r.sc.channels(c) {
		r.debug("INFO", fmt.Sprintf("Channel %02d/%02d : 0 1", ch, r.sc.channels(c)))
	}
	switch {
	case r.sc.Nodes == 1:
		r.debug("INFO", "Connected all rings, use ring PXN 0 GDR 0")
	case c.ibFallbackToSocket || r.sc.Fabric == "tcp":
		r.debug("INFO", "NET/Socket : Using [0]eth0:10.0.0.1<0>")
		r.debug("INFO", "Using network Socket")
	default:
		gdr := ""
		if c.gdr {
			gdr = " [GDR]"
		}
		link := map[string]string{"ib": "IB", "roce": "RoCE"}[r.sc.Fabric]
		// As NCCL does, every port it uses, which bounds what a node carries.
		var ports strings.Builder
		for i := range max(r.sc.NICsPerNode, 1) {
			fmt.Fprintf(&ports, "[%d]mlx5_%d:1/%s ", i, i, link)
		}
		r.debug("INFO", fmt.Sprintf("NET/IB : Using %s%s ; OOB eth0:10.0.0.1<0>", strings.TrimSpace(ports.String()), gdr))
		r.debug("INFO", "Using network IB")
	}
}

func (r *run) debug(level, msg string) {
	want := strings.ToUpper(r.env["NCCL_DEBUG"])
	if want == "INFO" || want == "TRACE" || level == "WARN" && want == "WARN" {
		fmt.Fprintf(r.out, "%s:%d:%d [%d] NCCL %s %s\n", r.host, 1000+r.rank, 1000+r.rank, r.rank, level, msg)
	}
}

// fail prints an error the way nccl-tests does, on every rank.
func (r *run) fail(lib, errText, detail string) {
	r.debug("WARN", detail)
	fmt.Fprintf(r.out, "%s: Test %s failure sim.go:1 '%s / %s'\n", r.host, lib, errText, detail)
}

// Exit runs Main on this process's arguments and environment and exits.
func Exit(args []string) {
	os.Exit(Main(args, os.Environ(), os.Stdout, os.Stderr))
}
