// Package sim is a simulated cluster for tests, demos and search-quality
// benchmarks without GPUs. It runs as a real process that accepts the flags of
// nccl-tests' *_perf binaries, reads NCCL_* variables from its environment and
// prints nccl-tests' table, so the tuner drives it through the same launcher,
// parser and failure handling as the real benchmark.
//
// Its cost model follows the shape of NCCL's own (src/graph/tuning.cc): a base
// plus per-hop latency and a bandwidth per algorithm and protocol, limited by
// channels and links. NCCL's default choice (NCCL_ALGO/NCCL_PROTO unset) is made
// with NCCL's nominal constants, while the measured time uses the scenario's
// true ones, which differ the way real fabrics do; so the default is sometimes
// wrong for a size range and a search has something true to find.
//
// A scenario may instead lay a generated landscape over the physics
// (Scenario.Landscape, flag -landscape=N; see landscape.go): a seeded random
// search problem over a few variables, of which the physics keeps only the
// time under NCCL's defaults, to judge a search on problems it was not
// written for.
package sim

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Scenario describes the simulated cluster. None of it is tunable: it is the hardware.
type Scenario struct {
	Nodes       int
	GPUsPerNode int
	Fabric      string  // nvlink (one node), ib, roce, tcp
	NICsPerNode int     // network ports per node
	NICGbps     float64 // per port
	GDR         bool    // GPUDirect RDMA possible (nvidia_peermem loaded)
	GPUNIC      string  // PCI distance between GPU and NIC: PIX, PXB, PHB or SYS
	RoCEGID     int     // the GID index that holds RoCE v2 (roce); other indexes fall back to slow paths
	GIDs        int     // size of the GID table (roce)
	Noise       float64 // relative standard deviation of a measurement at 20 iterations (see MeasurementNoise)
	Seed        int64
	// Landscape, when positive, numbers the generated landscape that
	// replaces the physics' effects of settings (see landscape.go); 0 is off.
	Landscape int
	// LandscapeKind is the generated landscape's family: "levels" (see
	// landscape.go) or "smooth" (smooth.go).
	LandscapeKind string
	// Pace is not the model's: each run sleeps Pace seconds per second it
	// would take on the modelled hardware, so that launches take time as a
	// real benchmark's do (0: it answers at once).
	Pace float64
}

// DefaultScenario is a single DGX-like node.
func DefaultScenario() Scenario {
	return Scenario{Nodes: 1, GPUsPerNode: 8, Fabric: "nvlink", NICsPerNode: 8, NICGbps: 400,
		GDR: true, GPUNIC: "PIX", RoCEGID: 3, GIDs: 4, Noise: 0.02, Seed: 1, LandscapeKind: "levels"}
}

func (s Scenario) validate() error {
	switch {
	case s.Nodes < 1 || s.GPUsPerNode < 1 || s.Nodes > 1<<16 || s.GPUsPerNode > 1<<16 || s.Nodes*s.GPUsPerNode > 1<<16: // each first, so that the product cannot wrap
		return fmt.Errorf("nodes and gpus_per_node must be positive, with at most 65536 GPUs in all")
	case s.Fabric != "nvlink" && s.Fabric != "ib" && s.Fabric != "roce" && s.Fabric != "tcp":
		return fmt.Errorf("fabric %q is not one of nvlink, ib, roce, tcp", s.Fabric)
	case s.Fabric == "nvlink" && s.Nodes > 1:
		return fmt.Errorf("fabric nvlink is a single node; use ib, roce or tcp between nodes")
	case s.NICsPerNode < 1 || !(s.NICGbps > 0) || math.IsInf(s.NICGbps, 0):
		return fmt.Errorf("nics_per_node and nic_gbps must be positive")
	case s.NICsPerNode > maxNICs || s.NICGbps > maxNICGbps:
		// Each run names every port in its log (nics_per_node = 2^62 would
		// write ports until memory ran out), and their bandwidth is summed.
		return fmt.Errorf("nics_per_node must be at most %d and nic_gbps at most %g: beyond any node", maxNICs, maxNICGbps)
	case pciRank(s.GPUNIC) < 0:
		return fmt.Errorf("gpu_nic %q is not one of PIX, PXB, PHB, SYS", s.GPUNIC)
	case s.GIDs < 1 || s.RoCEGID < 0 || s.RoCEGID >= s.GIDs:
		return fmt.Errorf("roce_gid must index the GID table (0..gids-1)")
	case !(s.Noise >= 0 && s.Noise <= 0.5):
		return fmt.Errorf("noise must be within [0, 0.5]")
	case s.Landscape < 0:
		return fmt.Errorf("landscape must be 0 (off) or the number of a generated landscape")
	case s.LandscapeKind != "levels" && s.LandscapeKind != "smooth":
		return fmt.Errorf("landscape_kind %q is not one of levels, smooth", s.LandscapeKind)
	case s.LandscapeKind != "levels" && s.Landscape == 0:
		return fmt.Errorf("landscape_kind %s needs a landscape (-landscape=N): without one the physics answers", s.LandscapeKind)
	case !(s.Pace >= 0 && s.Pace <= 1):
		return fmt.Errorf("pace must be within [0, 1] (1: as long as on the modelled hardware)")
	}
	return nil
}

// Bounds of a node's network: past any node built.
const (
	maxNICs    = 64
	maxNICGbps = 100e3 // 100 Tbit/s a port
)

func (s Scenario) ranks() int { return s.Nodes * s.GPUsPerNode }

// Algorithms and protocols, indexed as in NCCL.
const (
	ring = iota
	tree
	nAlgos
)
const (
	protoLL = iota
	protoLL128
	protoSimple
	nProtos
)

var (
	protoNames = [nProtos]string{"LL", "LL128", "Simple"}
	// NCCL's base latencies (us) per algorithm and protocol, and per-hop latencies
	// over NVLink and over the network.
	baseLat  = [nAlgos][nProtos]float64{{6.6, 14.0, 8.4}, {6.8, 14.0, 8.4}}
	nvlHwLat = [nAlgos][nProtos]float64{{0.6, 1.9, 3.4}, {0.6, 1.25, 4.0}}
	netHwLat = [nAlgos][nProtos]float64{{2.7, 4.0, 14.0}, {5.0, 8.5, 14.0}}
)

// collectives maps nccl-tests' binary names to the bus-bandwidth factor
// nccl-tests applies and the algorithms NCCL offers for them.
var collectives = map[string]struct {
	busFactor func(n float64) float64
	algos     []int
	redop     string
}{
	"all_reduce":     {func(n float64) float64 { return 2 * (n - 1) / n }, []int{ring, tree}, "sum"},
	"all_gather":     {func(n float64) float64 { return (n - 1) / n }, []int{ring}, "none"},
	"reduce_scatter": {func(n float64) float64 { return (n - 1) / n }, []int{ring}, "sum"},
	"alltoall":       {func(n float64) float64 { return (n - 1) / n }, []int{ring}, "none"},
	"broadcast":      {func(float64) float64 { return 1 }, []int{ring}, "none"},
	"reduce":         {func(float64) float64 { return 1 }, []int{ring}, "sum"},
	"sendrecv":       {func(float64) float64 { return 1 }, []int{ring}, "sum"},
}

// config is what NCCL makes of its environment on this scenario.
type config struct {
	algos, protos      []bool // allowed by NCCL_ALGO / NCCL_PROTO
	minCh, maxCh       int
	buffSize           float64
	nThreads           float64
	gdr                bool
	netBW              float64 // GB/s per node after GID, QP, socket and GDR effects
	netLatExtra        float64 // us added per network hop
	cuMem              bool
	protoExplicit      bool // NCCL_PROTO was set: NCCL then runs LL128 even where it would not choose it
	p2pDisabled        bool
	ll128Corrupts      bool
	ibFallbackToSocket bool
}

// nominalChannels is the channel count NCCL's topology search would pick.
func (s Scenario) nominalChannels() int {
	if s.Nodes == 1 {
		return 16
	}
	return min(32, 2*s.NICsPerNode)
}

// parseConfig reads NCCL_* variables as NCCL would. An error is what NCCL
// would report (and fail the communicator with).
func (s Scenario) parseConfig(env map[string]string, coll string) (config, error) {
	c := config{minCh: 1, maxCh: 64, buffSize: 4 << 20, nThreads: 512, cuMem: true}
	var err error
	if c.algos, err = parseList(env["NCCL_ALGO"], coll, algoTokens, nAlgos); err != nil {
		return c, fmt.Errorf("NCCL_ALGO: %w", err)
	}
	if c.protos, err = parseList(env["NCCL_PROTO"], coll, protoNames[:], nProtos); err != nil {
		return c, fmt.Errorf("NCCL_PROTO: %w", err)
	}
	ints := []struct {
		names    []string
		dst      *int
		min, max int
	}{
		{[]string{"NCCL_MIN_CTAS", "NCCL_MIN_NCHANNELS"}, &c.minCh, 1, 64},
		{[]string{"NCCL_MAX_CTAS", "NCCL_MAX_NCHANNELS"}, &c.maxCh, 1, 64},
	}
	for _, in := range ints {
		for _, name := range in.names {
			if v, ok := env[name]; ok {
				n, err := strconv.Atoi(v)
				if err != nil || n < in.min || n > in.max {
					return c, fmt.Errorf("invalid %s=%q", name, v)
				}
				*in.dst = n
				break
			}
		}
	}
	if v, ok := env["NCCL_BUFFSIZE"]; ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 4096 {
			return c, fmt.Errorf("invalid NCCL_BUFFSIZE=%q", v)
		}
		c.buffSize = float64(n)
	}
	if v, ok := env["NCCL_NTHREADS"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 64 || n > 512 || n%32 != 0 {
			return c, fmt.Errorf("invalid NCCL_NTHREADS=%q", v)
		}
		c.nThreads = float64(n)
	}
	_, c.protoExplicit = env["NCCL_PROTO"]
	c.cuMem = env["NCCL_CUMEM_ENABLE"] != "0"
	c.p2pDisabled = env["NCCL_P2P_DISABLE"] == "1"
	return c, s.network(env, &c)
}

var algoTokens = []string{"Ring", "Tree", "CollnetDirect", "CollnetChain", "NVLS", "NVLSTree", "PAT"}

// parseList reads NCCL_ALGO/NCCL_PROTO syntax. Tokens the simulator does not
// model (CollNet, NVLS, PAT) are accepted by the syntax but cannot run here,
// as on a cluster without SHARP or with NVLS disabled.
func parseList(v, coll string, tokens []string, n int) ([]bool, error) {
	allowed := make([]bool, n)
	if v == "" {
		for i := range allowed {
			allowed[i] = true
		}
		return allowed, nil
	}
	spec := ""
	for _, part := range strings.Split(v, ";") {
		if c, rest, ok := strings.Cut(part, ":"); ok {
			if strings.EqualFold(strings.ReplaceAll(c, "_", ""), strings.ReplaceAll(coll, "_", "")) {
				spec = rest
			}
			continue
		}
		spec = part
	}
	if spec == "" {
		return parseList("", coll, tokens, n)
	}
	exclude := strings.HasPrefix(spec, "^")
	for i := range allowed {
		allowed[i] = exclude
	}
	for _, tok := range strings.Split(strings.TrimPrefix(spec, "^"), ",") {
		idx := -1
		for i, t := range tokens {
			if strings.EqualFold(strings.TrimSpace(tok), t) {
				idx = i
			}
		}
		if idx < 0 {
			return nil, fmt.Errorf("unknown value %q", tok)
		}
		if idx < n {
			allowed[idx] = !exclude
		}
	}
	return allowed, nil
}

func pciRank(level string) int {
	for i, l := range []string{"LOC", "PIX", "PXB", "PHB", "SYS"} {
		if strings.EqualFold(level, l) {
			return i
		}
	}
	if n, err := strconv.Atoi(level); err == nil && n >= 0 {
		return min(n, 4)
	}
	return -1
}

// network works out the inter-node bandwidth and latency penalties.
func (s Scenario) network(env map[string]string, c *config) error {
	if s.Nodes == 1 {
		return nil
	}
	portBW := s.NICGbps / 8 * float64(s.NICsPerNode) // GB/s per node
	c.netBW = portBW * 0.92
	sockets := s.Fabric == "tcp" || env["NCCL_IB_DISABLE"] == "1" || strings.EqualFold(env["NCCL_NET"], "Socket")
	if sockets {
		c.ibFallbackToSocket = s.Fabric != "tcp"
		threads, socks := envInt(env, "NCCL_SOCKET_NTHREADS", 1), envInt(env, "NCCL_NSOCKS_PERTHREAD", 1)
		if threads < 0 || socks < 0 || threads*socks > 64 {
			return fmt.Errorf("NCCL_SOCKET_NTHREADS*NCCL_NSOCKS_PERTHREAD (%d*%d) exceeds the maximum of 64", threads, socks)
		}
		if s.Fabric != "tcp" {
			portBW = float64(s.NICsPerNode) * 12.5 // IPoIB-like kernel path over the same ports
		}
		// One socket gets a quarter of the link; parallel sockets fill it.
		// Without any, the control socket carries the data.
		c.netBW = portBW * math.Min(0.9, 0.25*math.Sqrt(float64(max(threads*socks, 1))))
		c.netLatExtra = 20 + 0.8*float64(threads)
		c.ll128Corrupts = true
		return nil
	}
	level := "PXB"
	if v, ok := env["NCCL_NET_GDR_LEVEL"]; ok {
		level = v
	}
	if pciRank(level) < 0 {
		return fmt.Errorf("invalid NCCL_NET_GDR_LEVEL=%q", level)
	}
	c.gdr = s.GDR && pciRank(s.GPUNIC) <= pciRank(level)
	if !c.gdr {
		// Staging through host memory: a copy on each side and a bounce buffer.
		c.netBW *= 0.55
		c.netLatExtra += 2.5
	}
	qps := envInt(env, "NCCL_IB_QPS_PER_CONNECTION", 1)
	if qps < 1 || qps > 128 {
		return fmt.Errorf("invalid NCCL_IB_QPS_PER_CONNECTION=%d", qps)
	}
	c.netLatExtra += 0.15 * float64(qps-1)
	if s.Fabric == "roce" {
		// ECMP hashes each QP onto one path: a single QP per connection leaves
		// most of the fabric's paths idle.
		c.netBW *= math.Min(1, 0.55+0.15*float64(qps))
		gid := envInt(env, "NCCL_IB_GID_INDEX", 0)
		switch {
		case gid >= s.GIDs || gid < -1:
			return fmt.Errorf("NET/IB : ibv_modify_qp failed with 22 Invalid argument (GID index %d of %d)", gid, s.GIDs)
		case gid != s.RoCEGID && gid != -1:
			// Not the RoCE v2 entry: traffic takes a path no better than IPoIB.
			c.netBW = math.Min(c.netBW, float64(s.NICsPerNode)*12.5*0.6)
			c.netLatExtra += 6
		}
	}
	return nil
}

func envInt(env map[string]string, name string, def int) int {
	if v, ok := env[name]; ok {
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
		return -1 << 30
	}
	return def
}

// calibration is how far a scenario's truth departs from NCCL's nominal model.
type calibration struct {
	treeBW, ll128NetLat, netLat, llBW float64
}

var nominal = calibration{treeBW: 1, ll128NetLat: 1, netLat: 1, llBW: 1}

func (s Scenario) truth() calibration {
	switch {
	case s.Nodes == 1:
		return calibration{treeBW: 0.9, ll128NetLat: 1, netLat: 1, llBW: 0.8}
	case s.Fabric == "roce":
		return calibration{treeBW: 0.7, ll128NetLat: 1.8, netLat: 1.5, llBW: 0.9}
	case s.Fabric == "tcp":
		return calibration{treeBW: 0.8, ll128NetLat: 2, netLat: 2.5, llBW: 0.7}
	default:
		return calibration{treeBW: 0.75, ll128NetLat: 1.4, netLat: 1.2, llBW: 0.9}
	}
}

// channels is the channel count after NCCL_MIN/MAX_CTAS.
func (s Scenario) channels(c config) int {
	return max(c.minCh, min(c.maxCh, s.nominalChannels()))
}

// predict returns the time in microseconds of one operation of nBytes with
// the given algorithm and protocol, under calibration cal.
func (s Scenario) predict(coll string, nBytes float64, algo, proto int, c config, cal calibration) float64 {
	n := float64(s.ranks())
	if n == 1 {
		return 2.0 + nBytes/(1e3*1500) // a local copy at HBM speed
	}
	nNodes, ppn := float64(s.Nodes), float64(s.GPUsPerNode)
	ch := float64(s.channels(c))

	// Link bandwidth available to the collective, GB/s (bus bandwidth).
	nvlBW := 370.0
	if c.p2pDisabled {
		nvlBW = 22 // through shared host memory
	}
	linkBW := nvlBW
	if s.Nodes > 1 {
		linkBW = math.Min(nvlBW, c.netBW)
	}
	perCh := [nProtos]float64{protoLL: 8, protoLL128: 22, protoSimple: 26}[proto]
	if s.Nodes > 1 {
		perCh = math.Min(perCh, c.netBW/float64(s.NICsPerNode)*0.8)
	}
	busBW := math.Min(linkBW, ch*perCh)
	switch proto {
	case protoLL:
		busBW = math.Min(busBW*0.25*cal.llBW, 40*cal.llBW)
	case protoLL128:
		if ppn < 2 {
			busBW *= 0.7
		} else {
			busBW *= 0.92
		}
	case protoSimple:
		// Fewer threads move less per channel; small buffers pipeline worse.
		busBW *= math.Min(1, c.nThreads/448) * c.buffSize / (c.buffSize + 256<<10)
	}
	if algo == tree {
		busBW *= 0.92 * cal.treeBW
		if s.Nodes == 1 {
			busBW *= 0.8
		}
	}
	if !c.cuMem {
		busBW *= 0.99
	}

	// Latency, us.
	hops := 2 * (n - 1)
	netHops := 0.0
	if algo == tree {
		hops = 2 * (ppn - 1)
		netHops = 2 * math.Ceil(math.Log2(math.Max(nNodes, 1)))
	} else if s.Nodes > 1 {
		netHops = 2 * (nNodes - 1)
		hops -= netHops
	}
	netLat := (netHwLat[algo][proto] + c.netLatExtra) * cal.netLat
	if proto == protoLL128 {
		netLat *= cal.ll128NetLat
	}
	lat := baseLat[algo][proto] + hops*nvlHwLat[algo][proto] + netHops*netLat
	if coll != "all_reduce" {
		lat /= 2 // one pass instead of reduce-scatter plus all-gather
	}

	algBW := busBW / collectives[coll].busFactor(n)
	return lat + nBytes/(1e3*algBW)
}

// choose returns the algorithm and protocol NCCL would run for nBytes: the
// fastest allowed pair under NCCL's nominal model.
func (s Scenario) choose(coll string, nBytes float64, c config) (algo, proto int, ok bool) {
	best := math.Inf(1)
	for _, a := range collectives[coll].algos {
		for p := range nProtos {
			if !c.algos[a] || !c.protos[p] || a == tree && s.ranks() < 2 {
				continue
			}
			if p == protoLL128 && c.ll128Corrupts && !c.protoExplicit {
				continue // NCCL leaves LL128 off where it is not safe, unless NCCL_PROTO asks for it
			}
			if t := s.predict(coll, nBytes, a, p, c, nominal); t < best {
				best, algo, proto, ok = t, a, p, true
			}
		}
	}
	return algo, proto, ok
}
