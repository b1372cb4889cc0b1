package runner

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/nccltune/nccltune/internal/text"
	"github.com/nccltune/nccltune/runner/ddp"
	"github.com/nccltune/nccltune/runner/nccllog"
	"github.com/nccltune/nccltune/runner/nccltests"
	"github.com/nccltune/nccltune/runner/sim"
	"github.com/nccltune/nccltune/space"
)

// Collectives is implemented by a benchmark of one collective that can
// measure another, as a workload of several collectives needs.
type Collectives interface {
	For(coll string) (Benchmark, error)
}

// A Benchmark is what a trial runs: it builds the command of one launch and
// judges what the launch printed, as nccl-tests' per-collective function
// table does for its collectives. nccl-tests (and the simulated cluster,
// which speaks it), the DDP step and the user's own command implement it; the
// campaign loop knows none of them by name.
type Benchmark interface {
	// Command is the argv of one launch under p, before a launcher wraps it.
	Command(p Plan) []string
	// Read judges a finished launch: what it measured, or why it measured nothing.
	Read(p Plan, out Output) (*Measurement, *Failure)
}

// A LineKeeper is a benchmark whose reading needs lines that the capped
// output could drop (a training log with NCCL's INFO lines runs past the
// cap): the runner asks it of every line as the output streams, and hands
// the lines it keeps to Read as Output.Kept, all of them.
type LineKeeper interface {
	Keep(line string) bool
}

// Plan is what one launch measures. A benchmark takes what applies to it:
// nccl-tests sweeps Sizes with Iters iterations, the DDP step times Iters
// steps, the user's command is run as written.
type Plan struct {
	Sizes  space.Sizes
	Iters  int
	Warmup int
	Args   []string // the configuration's own options (the DDP step's knobs)
	// Label names the launch (the trial number, "validate-1-2", ...); the
	// simulator seeds its noise with it, so that every launch is a new draw.
	Label string
}

// Output is what a finished launch left behind.
type Output struct {
	Text []byte      // stdout and stderr, interleaved as written (head and tail kept when huge)
	Kept []string    // a LineKeeper's lines of the whole output, in order
	Exit Exit        // how it ended
	Log  nccllog.Log // what NCCL logged in Text
	// Dropped counts the LineKeeper's lines past the bound on those kept
	// (maxOutput bytes): Kept lacks them.
	Dropped int
	// Detail is what the launcher says made the failed rank fail
	// (DetailReader: the exception a worker under torchrun raised); "" where
	// it says nothing.
	Detail string
}

// detail is a failed launch's detail: the launcher's, else the output's
// last line that says something.
func (o Output) detail() string {
	if o.Detail != "" {
		return o.Detail
	}
	return lastLine(o.Text)
}

// Exit is how a process ended.
type Exit struct {
	Code   int            // exit status; -1 when killed by a signal
	Signal syscall.Signal // the signal that killed it; 0 when it exited
}

func exitOf(ps *os.ProcessState) Exit {
	if ps == nil {
		return Exit{Code: -1}
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return Exit{Code: -1, Signal: ws.Signal()}
	}
	return Exit{Code: ps.ExitCode()}
}

// Measurement is what a launch measured.
type Measurement struct {
	// Rows are the per-size results of a benchmark that sweeps message sizes.
	Rows []nccltests.Row
	// Value is the one objective of a benchmark that does not (higher is
	// better: the DDP step's steps per second, the user's metric).
	Value float64
	// What it ran on, as far as its own output says.
	Ranks int
	Hosts []string
	GPU   string
}

// Fingerprint says what a trial ran on: what its benchmark reported and what
// NCCL logged. Every exported file names it, since settings tuned for one
// fabric and scale may be wrong on another.
type Fingerprint struct {
	NCCL        string `json:"nccl_version,omitempty"`
	GPU         string `json:"gpu,omitempty"`
	Nodes       int    `json:"nodes"`
	GPUsPerNode int    `json:"gpus_per_node"`
	Ranks       int    `json:"ranks"`
	Network     string `json:"network,omitempty"`
	GDR         bool   `json:"gdr"`
}

// FingerprintOf combines a measurement's view of the ranks with NCCL's log.
func FingerprintOf(m *Measurement, log nccllog.Log) Fingerprint {
	f := Fingerprint{NCCL: log.Version, Network: log.Network, GDR: log.GDR, Nodes: log.Nodes}
	if m != nil {
		f.GPU, f.Ranks = m.GPU, m.Ranks
		if len(m.Hosts) > 0 {
			f.Nodes = len(m.Hosts)
		}
	}
	if f.Nodes > 0 && f.Ranks > 0 {
		f.GPUsPerNode = f.Ranks / f.Nodes
	}
	return f
}

func (f Fingerprint) String() string {
	var parts []string
	if f.NCCL != "" {
		parts = append(parts, "NCCL "+f.NCCL)
	}
	switch {
	case f.Nodes > 0 && f.Ranks > 0:
		gpu := f.GPU
		if gpu == "" {
			gpu = "GPU(s)"
		}
		parts = append(parts, fmt.Sprintf("%d node(s) x %d %s", f.Nodes, f.GPUsPerNode, gpu))
	case f.Ranks > 0:
		parts = append(parts, text.Count(f.Ranks, "rank", "ranks"))
	}
	if f.Network != "" {
		gdr := map[bool]string{false: "off", true: "on"}[f.GDR]
		parts = append(parts, "network "+f.Network+" with GPUDirect RDMA "+gdr)
	}
	if len(parts) == 0 {
		return "unknown (no trial output to read it from)"
	}
	return strings.Join(parts, ", ")
}

// hosts lists the distinct hosts of the devices, in order of appearance.
func hosts(devices []nccltests.Device) []string {
	var out []string
	for _, d := range devices {
		if !slices.Contains(out, d.Host) {
			out = append(out, d.Host)
		}
	}
	return out
}

// NewBenchmark returns the space's benchmark, checking before any trial runs
// that it can work: the binary is there, the simulator's scenario is valid,
// the DDP step's script is written. simCommand starts nccltune's simulated
// cluster for a space with a [simulator] table (nil: this executable's "sim").
func NewBenchmark(sp *space.Space, simCommand []string) (Benchmark, error) {
	b := sp.Benchmark
	switch {
	case b.Kind == space.DDP:
		return newDDPStep(b, sp.Launcher.Kind)
	case b.Kind == space.Command:
		return newUserCommand(b, sp.Launcher)
	case len(sp.Simulator) > 0:
		var flags []string
		for _, k := range slices.Sorted(maps.Keys(sp.Simulator)) {
			flags = append(flags, "-"+k+"="+sp.Simulator[k])
		}
		if err := sim.CheckScenario(flags); err != nil {
			return nil, err
		}
		if simCommand == nil {
			self, err := os.Executable()
			if err != nil {
				return nil, fmt.Errorf("simulator: cannot find this executable: %w", err)
			}
			simCommand = []string{self, "sim"}
		}
		// The scenario's ports bound what a node's network carries.
		ports, _ := strconv.ParseFloat(sp.Simulator["nics_per_node"], 64)
		gbps, _ := strconv.ParseFloat(sp.Simulator["nic_gbps"], 64)
		return NCCLTests{Program: append(slices.Clone(simCommand), flags...), LabelFlag: "-run", Binary: sp.Campaign.Collective + "_perf",
			Collective: sp.Campaign.Collective, GPUs: b.GPUs, Check: b.Check, Args: b.Args, NodeNetGBs: ports * gbps / 8, Ranks: sp.LaunchRanks()}, nil
	}
	path, err := exec.LookPath(b.Binary)
	if err != nil {
		return nil, fmt.Errorf("benchmark %s: %w", b.Binary, err)
	}
	nt := NCCLTests{Binary: path, Collective: sp.Campaign.Collective, GPUs: b.GPUs, Check: b.Check, Args: b.Args, Ranks: sp.LaunchRanks()}
	if len(sp.Workload) > 0 {
		// benchmark.binary names where nccl-tests is; each collective runs its own.
		return nt.For(sp.Campaign.Collective)
	}
	return nt, nil
}

// newDDPStep writes the DDP step script and finds its interpreter. The
// script reads its ranks from the variables of launcher, the launcher kind,
// alone: another's, inherited from nccltune's caller, are not the trial's.
func newDDPStep(b space.BenchmarkSettings, launcher string) (Benchmark, error) {
	python, err := exec.LookPath(b.Python)
	if err != nil {
		return nil, fmt.Errorf("benchmark python %s: %w", b.Python, err)
	}
	dir := b.ScriptDir
	if dir == "" {
		dir = filepath.Join(os.TempDir(), fmt.Sprintf("nccltune-%d", os.Getuid()))
	}
	script, err := ddp.WriteScript(dir)
	if err != nil {
		return nil, err
	}
	return DDPStep{Program: append([]string{python, script, "--params", b.Params, "--layers", strconv.Itoa(b.Layers),
		"--batch", strconv.Itoa(b.Batch), "--device", b.Device, "--ranks-from", launcher}, b.Args...)}, nil
}
