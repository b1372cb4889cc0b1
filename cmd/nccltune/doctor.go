package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/nccltune/nccltune/doctor"
	"github.com/nccltune/nccltune/internal/text"
	"github.com/nccltune/nccltune/runner"
	"github.com/nccltune/nccltune/space"
)

// nodeReport is what `doctor --node` prints on each node.
type nodeReport struct {
	Host    string          `json:"host"`
	Time    int64           `json:"unix_nano"`
	Results []doctor.Result `json:"results"`
}

// nodeTag begins each line of a node's report, which `doctor --node`
// prints in lines that no launcher splits: srun forwards a task's output in
// messages of 1,024 bytes at most (slurmstepd's SLURM_IO_MAX_MSG_LEN),
// whole lines where they fit, and the pieces of a longer line interleave
// with other tasks' printed at once.
const nodeTag = "NCCLTUNE_DOCTOR "

const (
	maxPiece  = 900  // the base64 text a line carries: with the tag, id and number, under 1,024 bytes
	maxPieces = 1024 // a report's lines at most, where a garbled line says more
)

// reportLines are the lines `doctor --node` prints of n: its JSON in
// base64, in pieces, each line "NCCLTUNE_DOCTOR id i/count piece", id
// telling this node's lines from another's (a host may run two).
func reportLines(n nodeReport) ([]string, error) {
	data, err := json.Marshal(n)
	if err != nil {
		return nil, err
	}
	text := base64.StdEncoding.EncodeToString(data)
	id := make([]byte, 8)
	rand.Read(id)
	count := (len(text) + maxPiece - 1) / maxPiece
	var lines []string
	for i := range count {
		lines = append(lines, fmt.Sprintf("%s%x %d/%d %s", nodeTag, id, i+1, count, text[i*maxPiece:min(len(text), (i+1)*maxPiece)]))
	}
	return lines, nil
}

// readReports reads the nodes' reports from the launcher's output, each
// whose lines all came, in the order of their first lines.
func readReports(output []byte) []nodeReport {
	// A report's pieces by number, as they come: room for those a line
	// says it has, before they came, would let garbled lines of new ids
	// take gigabytes.
	type report struct {
		count  int
		pieces map[int]string
	}
	reports := map[string]*report{}
	var ids []string
	for _, line := range strings.Split(string(output), "\n") {
		i := strings.Index(line, nodeTag)
		if i < 0 {
			continue
		}
		f := strings.Fields(line[i+len(nodeTag):])
		if len(f) != 3 {
			continue
		}
		num, total, _ := strings.Cut(f[1], "/")
		k, err1 := strconv.Atoi(num)
		count, err2 := strconv.Atoi(total)
		if err1 != nil || err2 != nil || k < 1 || k > count || count > maxPieces {
			continue
		}
		r := reports[f[0]]
		if r == nil {
			r = &report{count: count, pieces: map[int]string{}}
			reports[f[0]] = r
			ids = append(ids, f[0])
		}
		if r.count == count {
			r.pieces[k] = f[2]
		}
	}
	var nodes []nodeReport
	for _, id := range ids {
		r := reports[id]
		if len(r.pieces) != r.count {
			continue
		}
		var text strings.Builder
		for k := 1; k <= r.count; k++ {
			text.WriteString(r.pieces[k])
		}
		data, err := base64.StdEncoding.DecodeString(text.String())
		var n nodeReport
		if err == nil && json.Unmarshal(data, &n) == nil {
			nodes = append(nodes, n)
		}
	}
	return nodes
}

func doctorCommand() *cli.Command {
	return &cli.Command{
		Name:  "doctor",
		Usage: "layered pre-flight check: hardware and fabric, then NCCL, then the framework",
		Description: "Checks GPUs (nvidia-smi), InfiniBand/RoCE ports (ibstat), each RoCE port's RoCE v2 GID,\n" +
			"the mlx5 and nvidia_peermem modules, ulimit -l, Open MPI's CUDA support and MASTER_ADDR on every node\n" +
			"(through the space's mpirun or srun launcher, one process per node), clock skew between\n" +
			"nodes, then a tiny all-reduce with NCCL_DEBUG=INFO compared with what the fabric says NCCL\n" +
			"should use, then a torch.distributed all_reduce. Each check prints ok, warn, fail or skip\n" +
			"(a missing tool), with the fix. Exits 1 if any check fails (0 with warnings only).",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "space", Usage: "space `FILE` whose launcher and benchmark to check"},
			&cli.StringFlag{Name: "python", Value: "python3", Usage: "interpreter for the framework check (\"\" to skip)"},
			&cli.BoolFlag{Name: "json", Usage: "print JSON for scripts"},
			&cli.BoolFlag{Name: "node", Hidden: true, Usage: "check this node only and print one line (used by the fan-out)"},
		},
		Action: func(c *cli.Context) error {
			if c.Bool("node") {
				lines, err := reportLines(thisNode(c.Context, c.String("python"), nil)) // the space's variables are in the environment
				if err != nil {
					return err
				}
				_, err = fmt.Println(strings.Join(lines, "\n"))
				return err
			}
			nodes, cluster, err := diagnose(c.Context, c.String("space"), c.String("python"))
			if err != nil {
				return err
			}
			// A signal stops the check under way, which then reads as failed:
			// no failure of the cluster, and no report.
			if err := c.Context.Err(); err != nil {
				return err
			}
			// The launcher's words, and what the nodes sent, are bounded
			// as this node's checks are.
			for i := range nodes {
				nodes[i].Results = bounded(nodes[i].Results)
			}
			cluster = bounded(cluster)
			if c.Bool("json") {
				if err := writeJSON(os.Stdout, map[string]any{"nodes": nodes, "cluster": list(cluster)}); err != nil {
					return err
				}
			} else if err := printDoctor(os.Stdout, nodes, cluster); err != nil {
				return err
			}
			results := cluster
			for _, n := range nodes {
				results = append(results, n.Results...)
			}
			if slices.ContainsFunc(results, func(r doctor.Result) bool { return r.Status == doctor.Fail }) {
				return exitCode(exitFailure)
			}
			return nil
		},
	}
}

func bounded(results []doctor.Result) []doctor.Result {
	for i, r := range results {
		results[i] = r.Bounded()
	}
	return results
}

// thisNode checks this node, timed for the clock skew between nodes; env is
// the space's pinned variables.
func thisNode(ctx context.Context, python string, env []string) nodeReport {
	return nodeReport{Host: hostname(), Time: time.Now().UnixNano(), Results: doctor.Run(ctx, doctor.Options{Python: python, Env: env})}
}

// diagnose runs the node checks on every node and the NCCL check across them.
func diagnose(ctx context.Context, spaceFile, python string) ([]nodeReport, []doctor.Result, error) {
	if spaceFile == "" {
		return []nodeReport{thisNode(ctx, python, nil)}, nil, nil
	}
	sp, err := loadSpaceFile(ctx, spaceFile)
	if err != nil {
		return nil, nil, err
	}
	if scales := sp.Campaign.Scales; len(scales) > 0 {
		sp = sp.AtScale(slices.Max(scales)) // the most nodes, in as many groups as the campaign runs
	}
	bench, err := runner.NewBenchmark(sp, nil)
	if err != nil {
		return nil, nil, err
	}
	// The probe is a short all-reduce; a benchmark that is not nccl-tests has none.
	var probe *runner.Job
	if nt, ok := bench.(runner.NCCLTests); ok {
		probe = &runner.Job{Benchmark: nt, Plan: runner.Plan{Sizes: space.Sizes{Min: 8, Max: 1 << 20, Factor: 8}, Iters: 2, Warmup: 1}}
	}
	// One group's launcher, as a trial's (the probe's step on part of an
	// allocation names its nodes and GPUs where srun needs them: SrunStep).
	launcher := runner.NewLauncher(sp.Launcher)
	groups, groupsErr := runner.Groups(sp.Launcher)
	if groupsErr == nil {
		launcher = groups[0].Launcher
	}
	env := sp.Env(space.Assignment{})
	nodes, missing, err := fanOut(ctx, sp.Launcher, python, env)
	if u := (unreached{}); errors.As(err, &u) {
		// The NCCL layer would run through the same launcher: nothing more to check.
		return []nodeReport{}, []doctor.Result{u.Result}, nil
	}
	if err != nil {
		return nil, nil, err
	}
	// The NCCL layer runs once, across all nodes, through the campaign's launcher,
	// and is judged against what every node's fabric checks found.
	var all []doctor.Result
	for i, n := range nodes {
		// The nodes' own NCCL rows only said "no benchmark here"; it runs below.
		nodes[i].Results = slices.DeleteFunc(n.Results, func(r doctor.Result) bool { return r.Layer == "nccl" })
		all = append(all, nodes[i].Results...)
	}
	nccl := doctor.NCCL(ctx, doctor.Options{Probe: probe, Launcher: launcher, Env: env}, doctor.HardwareOf(all))
	cluster := append([]doctor.Result{nccl, clockSkew(nodes)}, missing...)
	if sp.Launcher.Groups > 1 {
		cluster = append(cluster, groupsAlike(groups, groupsErr, nodes))
	}
	return nodes, cluster, nil
}

// groupsAlike checks that launcher.groups splits the nodes into groups of
// one kind, from the nodes' own reports (err: why it does not split them).
func groupsAlike(groups []runner.Group, err error, nodes []nodeReport) doctor.Result {
	if err != nil {
		return doctor.Result{Layer: "hardware", Check: doctor.GroupsCheck, Status: doctor.Fail, Detail: err.Error(),
			Fix: "make the allocation (or hostfile) hold launcher.groups groups of one shape: as many nodes (and slots) each, and GPUs asked for per node"}
	}
	byHost := map[string][]doctor.Result{}
	var hosts []string
	for _, n := range nodes {
		byHost[runner.HostKey(n.Host)] = n.Results
		hosts = append(hosts, n.Host)
	}
	var results [][][]doctor.Result
	var unmatched []string
	for _, g := range groups {
		var nodes [][]doctor.Result
		for _, name := range g.Nodes {
			r, ok := byHost[runner.HostKey(name)]
			if !ok {
				unmatched = append(unmatched, name)
			}
			nodes = append(nodes, r)
		}
		results = append(results, nodes)
	}
	// A node without its report would count as checked and alike.
	if len(unmatched) > 0 {
		return doctor.Result{Layer: "hardware", Check: doctor.GroupsCheck, Status: doctor.Warn,
			Detail: fmt.Sprintf("no report names node %s (the reports came from %s): the groups are not compared", strings.Join(unmatched, ", "), strings.Join(hosts, ", ")),
			Fix:    "name the nodes in the hostfile (or Slurm) as their hostnames, so that each group's nodes are known by their reports"}
	}
	return doctor.GroupsAlike(results)
}

// fanOut runs `nccltune doctor --node` once per node through mpirun or srun,
// with env, the space's pinned variables; with another launcher only this
// node is checked. missing is a failed check where fewer nodes reported than
// were asked to.
func fanOut(ctx context.Context, l space.LauncherSettings, python string, env []string) (nodes []nodeReport, missing []doctor.Result, err error) {
	self, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	var launcher runner.Launcher
	want := 0 // the nodes asked to report, where the space says
	switch l.Kind {
	case "mpirun":
		want = 1
		if l.Hostfile != "" {
			hosts, err := runner.HostfileHosts(l.Hostfile)
			if err != nil {
				return nil, nil, err
			}
			// One process a node: a host on several lines (MPICH's
			// hostfile, a line a slot), or named with its domain or in
			// another case, is one node.
			names := map[string]bool{}
			for _, h := range hosts {
				names[runner.HostKey(h.Name)] = true
			}
			want = len(names)
		}
		args := l.Args
		if l.Flavor != "mpich" {
			// Open MPI's mpirun passes on each rank's output in the chunks
			// it reads, cut anywhere in a line, other ranks' between a
			// line's parts; tagged, the runner joins each rank's lines
			// (mpitag), and the nodes' pieces come whole.
			args = append(slices.Clone(args), "--tag-output")
		}
		launcher = runner.MPIRun{Flavor: l.Flavor, Command: l.Command, NP: want, Hostfile: l.Hostfile, MapBy: "ppr:1:node", Args: args}
	case "srun":
		// srun -u passes on each task's output as it reads it, a line cut
		// and another task's between its parts: the pieces go in lines.
		args := space.SrunWithout(l.Args, "unbuffered")
		step, err := runner.SrunStep(space.LauncherSettings{Kind: "srun", Command: l.Command, Nodes: l.Nodes * max(l.Groups, 1), TasksPerNode: 1, Args: args})
		if err != nil {
			return nil, nil, err
		}
		// Without launcher.nodes, every node of the allocation; unknown, the
		// launch fails and says so.
		want, _ = step.NodeCount()
		launcher = step
	default:
		return []nodeReport{thisNode(ctx, python, env)}, nil, nil
	}
	rn := &runner.Runner{Launcher: launcher, BaseEnv: runner.BaseEnv()}
	res := rn.Run(ctx, runner.Job{Benchmark: command{self, "doctor", "--node", "--python", python}, Env: env, Timeout: 5 * time.Minute})
	nodes = readReports(res.Output)
	if len(nodes) == 0 {
		// What it printed, and why it failed: a launch that failed before
		// it printed (its command missing) says it there alone.
		detail := "the per-node checks printed nothing through " + l.Kind
		if said := strings.ReplaceAll(strings.TrimSpace(lastLines(res.Output, 5)), "\n", "; "); said != "" {
			detail += ": " + said
		}
		if res.Failure != nil {
			detail += "; " + l.Kind + ": " + res.Failure.Error()
		}
		return nil, nil, unreached{doctor.Result{Layer: "hardware", Check: "the launcher reaches the nodes (" + l.Kind + ")", Status: doctor.Fail,
			Detail: detail, Fix: "run the launcher as the campaign will (inside its allocation, with its hostfile) and mend what it says"}}
	}
	// A node that printed nothing (nccltune not at this path there, a
	// crash) would otherwise pass unseen, the others judged as all.
	if len(nodes) < want {
		var hosts []string
		for _, n := range nodes {
			hosts = append(hosts, n.Host)
		}
		r := doctor.Result{Layer: "hardware", Check: "per-node checks", Status: doctor.Fail,
			Detail: fmt.Sprintf("%d of %d nodes reported (%s)", len(nodes), want, strings.Join(hosts, ", ")),
			Fix:    "run `" + self + " doctor --node` on the others: nccltune must be at this path on every node"}
		if res.Failure != nil {
			r.Detail += "; " + l.Kind + ": " + res.Failure.Error()
		}
		missing = append(missing, r)
	}
	return nodes, missing, nil
}

// unreached is a launcher that reached no node: a failed check, reported
// as the others are, not an error, since a broken launcher is what doctor
// is there to find.
type unreached struct{ doctor.Result }

func (u unreached) Error() string { return u.Detail }

// command runs as written, and its output is all that is wanted of it.
type command []string

func (c command) Command(runner.Plan) []string { return c }

func (command) Read(runner.Plan, runner.Output) (*runner.Measurement, *runner.Failure) {
	return &runner.Measurement{}, nil
}

// clockSkew compares the nodes' clocks as they reported (launch spread included).
func clockSkew(nodes []nodeReport) doctor.Result {
	r := doctor.Result{Layer: "hardware", Check: "clock skew between nodes"}
	if len(nodes) < 2 {
		r.Status, r.Detail = doctor.Skip, "one node"
		return r
	}
	lo, hi := nodes[0].Time, nodes[0].Time
	for _, n := range nodes {
		lo, hi = min(lo, n.Time), max(hi, n.Time)
	}
	skew := time.Duration(hi - lo)
	r.Status, r.Detail = doctor.OK, fmt.Sprintf("%s across %d nodes (an upper bound: it includes launch delays)", skew.Round(time.Millisecond), len(nodes))
	if skew > 2*time.Second {
		r.Status, r.Fix = doctor.Warn, "synchronise clocks (chrony/NTP): timeouts and logs across nodes need them"
	}
	return r
}

func printDoctor(out io.Writer, nodes []nodeReport, cluster []doctor.Result) error {
	// Buffered, and the buffer's first write error sticks: output lost (a
	// full disk) is the command's error.
	w := bufio.NewWriter(out)
	// Details quote local tools' and remote nodes' output: each field is
	// one line with control characters escaped, so that none can break the
	// table or drive the terminal.
	print := func(title string, results []doctor.Result) {
		fmt.Fprintln(w, text.Clean(title))
		tw := &table{w: w, left: true}
		for _, r := range results {
			row(tw, "  "+strings.ToUpper(string(r.Status)), r.Layer, r.Check, r.Detail)
			if r.Fix != "" && r.Status != doctor.OK && r.Status != doctor.Skip {
				row(tw, "  ", "", "", "fix: "+r.Fix)
			} else if r.Fix != "" {
				row(tw, "  ", "", "", "note: "+r.Fix)
			}
		}
		tw.Flush()
	}
	for _, n := range nodes {
		print("node "+n.Host, n.Results)
	}
	if len(cluster) > 0 {
		print("across nodes", cluster)
	}
	return w.Flush()
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "localhost"
	}
	return h
}

func lastLines(out []byte, n int) string {
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
