package runner

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/nccltune/nccltune/internal/text"
	"github.com/nccltune/nccltune/space"
)

// Group is one of launcher.groups: a launcher bound to nodes of its own, so
// that trials on different groups run at the same time without sharing a GPU
// or a link.
type Group struct {
	Launcher Launcher
	Nodes    []string // the group's nodes, where the launcher names them
	// GPUs are the job's GPUs on each of Nodes where it asked for them
	// job-wide (gpusJobWide); nil otherwise.
	GPUs []int
}

// Groups splits the launcher's nodes into l.Groups disjoint groups of one
// shape: srun's allocation into groups of l.Nodes nodes, mpirun's hostfile
// into groups of as many hosts. A simulated cluster is one of its own for
// every group, so a local launcher is the same for each. Nodes beyond the
// groups' are left idle.
func Groups(l space.LauncherSettings) ([]Group, error) {
	n := max(l.Groups, 1)
	if n == 1 {
		if l.Kind == "srun" {
			launcher, err := SrunStep(l)
			if err == nil {
				err = allocationHolds(l.Nodes)
			}
			return []Group{{Launcher: launcher, Nodes: launcher.NodeList}}, err
		}
		return []Group{{Launcher: NewLauncher(l)}}, nil
	}
	var hosts []Host
	switch l.Kind {
	case "srun":
		if l.Nodes < 1 {
			return nil, fmt.Errorf("launcher.groups: %d groups need each group's node count (launcher.nodes, or a scale's)", n)
		}
		names, err := AllocationNodes()
		if err != nil {
			return nil, err
		}
		if need := n * l.Nodes; len(names) < need {
			return nil, fmt.Errorf("launcher.groups: %d groups of %s need %d nodes; the allocation has %d (%s)", n, text.Count(l.Nodes, "node", "nodes"), need, len(names), strings.Join(names, ","))
		}
		for _, name := range names[:n*l.Nodes] {
			hosts = append(hosts, Host{Name: name})
		}
	case "mpirun":
		all, err := HostfileHosts(l.Hostfile)
		if err != nil {
			return nil, err
		}
		if len(all)%n != 0 {
			return nil, fmt.Errorf("launcher.groups: hostfile %s lists %s, which cannot be split into %d groups of one shape", l.Hostfile, text.Count(len(all), "host", "hosts"), n)
		}
		seen := map[string]string{} // HostKey → the name first listed
		for _, h := range all {
			if h.Slots == 0 {
				return nil, fmt.Errorf("launcher.groups: hostfile %s gives host %s no slot count (host slots=N, or host:N): a group's host list must carry it", l.Hostfile, h.Name)
			}
			// mpirun takes a host's lines as one host: split apart, its
			// lines would put two groups' trials on it at once.
			if first, ok := seen[HostKey(h.Name)]; ok {
				if first != h.Name {
					first += " (also as " + h.Name + ")"
				}
				return nil, fmt.Errorf("launcher.groups: hostfile %s lists host %s twice: list each host once, with all its slots, so that no two groups share it", l.Hostfile, first)
			}
			seen[HostKey(h.Name)] = h.Name
			// Open MPI's --host takes no user to log in as (4.1.4: an
			// "illegal character" in the node's name); under Slurm, which
			// starts its daemons, it needs none (MPIRun.Wrap drops it).
			if at := strings.LastIndexByte(h.Name, '@'); at >= 0 && l.Flavor != "mpich" && os.Getenv("SLURM_JOB_ID") == "" {
				return nil, fmt.Errorf("launcher.groups: hostfile %s logs into host %s as %s, which mpirun's --host, by which each group names its hosts, cannot say: give the user in ~/.ssh/config", l.Hostfile, ompiHostKey(h.Name), h.Name[:at+1])
			}
		}
		hosts = all
	default:
		groups := make([]Group, n)
		for i := range groups {
			groups[i].Launcher = NewLauncher(l)
		}
		return groups, nil
	}
	size := len(hosts) / n
	for i := 1; i < n; i++ {
		if a, b := hosts[:size], hosts[i*size:(i+1)*size]; !slices.EqualFunc(a, b, func(x, y Host) bool { return x.Slots == y.Slots }) {
			return nil, fmt.Errorf("launcher.groups: hostfile %s does not split into %d groups of one shape: group %d is %s, group 0 %s; give every group's hosts the same slots", l.Hostfile, n, i, hostList(b), hostList(a))
		}
	}
	var held map[string]int // the job's GPUs per node, where it asked for them job-wide
	if l.Kind == "srun" && gpusJobWide(l) {
		var err error
		if held, err = jobGPUs(); err != nil {
			return nil, err
		}
	}
	groups := make([]Group, n)
	for i := range groups {
		part := hosts[i*size : (i+1)*size]
		var names []string
		for _, h := range part {
			names = append(names, h.Name)
		}
		groups[i].Nodes = names
		switch launcher := NewLauncher(l).(type) {
		case Srun:
			launcher.NodeList = names
			groups[i].GPUs, launcher.GPUs = onNodes(held, names)
			groups[i].Launcher = launcher
		case MPIRun:
			launcher.Hostfile, launcher.Hosts = "", part
			groups[i].Launcher = launcher
		}
	}
	if err := unevenGPUs(groups); err != nil {
		return groups, err
	}
	return groups, tooFewGPUs(held, groups[0].Nodes, l.TasksPerNode)
}

// tooFewGPUs refuses a step on nodes of which one holds fewer of the job's
// GPUs (held; nil: not counted) than the step's tasks there: each rank
// needs a GPU of its own (NCCL refuses two ranks on one), and a job that
// asked for its GPUs job-wide may hold them unevenly (sbatch -G 12 over 4
// nodes of 4: 4, 4, 3 and 1), which fails every trial.
func tooFewGPUs(held map[string]int, nodes []string, tasksPerNode int) error {
	if held == nil {
		return nil
	}
	tasks := max(tasksPerNode, 1)
	for _, node := range nodes {
		if held[node] < tasks {
			return fmt.Errorf("launcher srun: node %s holds %d of the job's GPUs, fewer than its %s (launcher.ntasks_per_node), each of which needs one of its own; ask for the GPUs per node (sbatch --gpus-per-node), or give launcher.args the step's own (--gpus-per-node=N)",
				node, held[node], text.Count(tasks, "task", "tasks"))
		}
	}
	return nil
}

// unevenGPUs refuses groups that hold the job's GPUs differently, node by
// node (a job that asked for them job-wide, sbatch -G 12 over 4 nodes of
// 4, holds 4, 4, 3 and 1): trials on the poorer group would place their
// ranks on fewer GPUs and measure the group, not the setting.
func unevenGPUs(groups []Group) error {
	for i, g := range groups[1:] {
		if !slices.Equal(g.GPUs, groups[0].GPUs) {
			return fmt.Errorf("launcher.groups: the job's GPUs are spread unevenly over its nodes: group %d (%s) holds %s, group 0 (%s) %s; ask for them per node (sbatch --gpus-per-node), or give launcher.args the step's own (--gpus-per-node=N)",
				i+1, strings.Join(g.Nodes, ","), perNode(g.GPUs), strings.Join(groups[0].Nodes, ","), perNode(groups[0].GPUs))
		}
	}
	return nil
}

// perNode writes GPU counts node by node: "4+4".
func perNode(counts []int) string {
	var parts []string
	for _, n := range counts {
		parts = append(parts, strconv.Itoa(n))
	}
	return strings.Join(parts, "+")
}

// onNodes are the counts of held (GPUs by node; nil: not counted) on each
// of nodes, and their sum.
func onNodes(held map[string]int, nodes []string) ([]int, int) {
	if held == nil {
		return nil, 0
	}
	counts, sum := make([]int, len(nodes)), 0
	for i, node := range nodes {
		counts[i] = held[node]
		sum += counts[i]
	}
	return counts, sum
}

// SrunStep is the srun launcher of one step on l.Nodes nodes (all: 0).
// Where the job asked for its GPUs job-wide (sbatch -G 16), srun refuses a
// step on part of its nodes that names no GPU count ("Invalid generic
// resource (gres) specification"), and the count it may name is what the
// job holds on the step's nodes: the step then runs on the allocation's
// first l.Nodes nodes with their GPUs, each of which must hold one for
// every task of the step there (tooFewGPUs). Otherwise srun picks the
// nodes, as the job's own srun would.
func SrunStep(l space.LauncherSettings) (Srun, error) {
	launcher := NewLauncher(l).(Srun)
	if !gpusJobWide(l) {
		return launcher, nil
	}
	names, err := AllocationNodes()
	if err != nil {
		return launcher, err
	}
	held, err := jobGPUs()
	if err != nil {
		return launcher, err
	}
	if l.Nodes >= 1 && len(names) > l.Nodes {
		launcher.NodeList = names[:l.Nodes]
		_, launcher.GPUs = onNodes(held, launcher.NodeList)
		names = launcher.NodeList
	}
	return launcher, tooFewGPUs(held, names, l.TasksPerNode)
}

// allocationHolds refuses a step of more nodes than the Slurm allocation
// this process runs in holds, which srun would refuse at every trial.
// Outside an allocation srun allocates each step's nodes itself.
func allocationHolds(nodes int) error {
	if nodes < 1 || os.Getenv("SLURM_JOB_NODELIST") == "" {
		return nil
	}
	names, err := AllocationNodes()
	if err != nil {
		return err
	}
	if len(names) < nodes {
		return fmt.Errorf("launcher srun: %d nodes asked for; the allocation has %d (%s)", nodes, len(names), strings.Join(names, ","))
	}
	return nil
}

// gpuArgs reports whether srun arguments ask for GPUs themselves (-G,
// --gpus*, a GPU of --gres or --tres-per-task, or --gres=none), as srun
// reads its options.
func gpuArgs(args []string) bool {
	return slices.ContainsFunc(space.SrunOptions(args), func(o space.SrunOption) bool {
		switch {
		case o.Long == "gres" && o.Value == "none":
			return true
		case o.Long == "gres" || o.Long == "tres-per-task":
			return namesGPU(o.Value)
		}
		return o.Long == "gpus" || strings.HasPrefix(o.Long, "gpus-per-")
	})
}

// namesGPU reports whether list, a value of srun's --gres or
// --tres-per-task ("gpu:a100:2,nvme:1", "gres/gpu=1", "cpu=2"), asks for
// GPUs: other resources leave the step's GPUs to the job's.
func namesGPU(list string) bool {
	return slices.ContainsFunc(strings.Split(list, ","), func(item string) bool {
		item = strings.TrimPrefix(strings.TrimPrefix(item, "gres/"), "gres:")
		name, _, _ := strings.Cut(strings.ReplaceAll(item, "=", ":"), ":")
		return name == "gpu"
	})
}

// gpusJobWide reports whether the Slurm job this process runs in asked
// for GPUs job-wide (salloc/sbatch -G, --gpus), which salloc and sbatch
// hand on as SLURM_GPUS, and launcher.args leave the step's GPUs to it.
func gpusJobWide(l space.LauncherSettings) bool {
	return os.Getenv("SLURM_GPUS") != "" && os.Getenv("SLURM_JOB_ID") != "" && !gpuArgs(l.Args)
}

// jobGPUs is how many GPUs the job holds on each of its nodes, as
// `scontrol show job -d` lists them ("Nodes=n[1-2] CPU_IDs=0 Mem=0
// GRES=gpu:a100:4(IDX:0-3)").
func jobGPUs() (map[string]int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	id := os.Getenv("SLURM_JOB_ID")
	out, err := slurmOutput(ctx, "scontrol", "show", "job", "-d", id)
	if err != nil {
		return nil, fmt.Errorf("launcher srun: the job's GPUs per node: scontrol show job -d %s: %w", id, err)
	}
	held := map[string]int{}
	// A job array's id or a heterogeneous job's shows every task's or
	// component's record, each from its JobId line: only the job's own
	// holds its steps' GPUs (another task's may share a node).
	own, found := false, false
	for _, line := range strings.Split(string(out), "\n") {
		fields := strings.Fields(line)
		if len(fields) > 0 && strings.HasPrefix(fields[0], "JobId=") {
			own = fields[0] == "JobId="+id
			found = found || own
		}
		if !own || len(fields) == 0 || !strings.HasPrefix(fields[0], "Nodes=") {
			continue
		}
		count := 0
		for _, f := range fields[1:] {
			if gres, ok := strings.CutPrefix(f, "GRES="); ok {
				count = gresGPUs(gres)
			}
		}
		names, err := hostnames(ctx, strings.TrimPrefix(fields[0], "Nodes="))
		if err != nil {
			return nil, err
		}
		for _, name := range names {
			held[name] = count
		}
	}
	if !found {
		// Read as none, the steps would ask for no GPUs and groups of
		// different counts would pass as even.
		return nil, fmt.Errorf("launcher srun: the job's GPUs per node: scontrol show job -d %s printed no record of job %s", id, id)
	}
	return held, nil
}

// gresGPUs is the GPU count of a node's GRES list as `scontrol show job -d`
// prints it: "gpu:4(IDX:0-3)", "gpu:a100:2(IDX:0-1),nic:1(IDX:0)"; older
// Slurm's (19.05, which has -G) without the count, "gpu(IDX:0-3)", "gpu:a100(IDX:0,2)"; and
// GPUs counted without device files (gres.conf with no File=) as
// "gpu(CNT:4)", "gpu:a100(CNT:4)". An index list gives the count itself, so
// that a type named by a number (gpu:1080) is not taken for one.
func gresGPUs(gres string) int {
	n := 0
	for len(gres) > 0 {
		item, rest, paren := gres, "", ""
		if i := strings.IndexAny(gres, ",("); i >= 0 {
			item, rest = gres[:i], gres[i:]
			if rest[0] == '(' { // "(IDX:...)" or "(CNT:n)"
				if j := strings.IndexByte(rest, ')'); j >= 0 {
					paren, rest = rest[1:j], rest[j+1:]
				} else {
					rest = ""
				}
			}
			rest = strings.TrimPrefix(rest, ",")
		}
		gres = rest
		parts := strings.Split(item, ":")
		if parts[0] != "gpu" {
			continue
		}
		if idx, ok := strings.CutPrefix(paren, "IDX:"); ok {
			if c, ok := indexCount(idx); ok {
				n += c
				continue
			}
		}
		if cnt, ok := strings.CutPrefix(paren, "CNT:"); ok {
			if c, err := strconv.Atoi(cnt); err == nil {
				n += c
			}
		} else if len(parts) >= 2 {
			if c, err := strconv.Atoi(parts[len(parts)-1]); err == nil {
				n += c
			}
		}
	}
	return n
}

// indexCount is how many indices a list such as "0-3,5" names.
func indexCount(list string) (int, bool) {
	n := 0
	for _, r := range strings.Split(list, ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		if !isRange {
			hi = lo
		}
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if err1 != nil || err2 != nil || b < a {
			return 0, false
		}
		n += b - a + 1
	}
	return n, true
}

// hostList is hosts as mpirun's --host takes them: "a:8,b:8".
func hostList(hosts []Host) string {
	var list []string
	for _, h := range hosts {
		list = append(list, h.String())
	}
	return strings.Join(list, ",")
}

// AllocationNodes lists the nodes of the Slurm allocation this process runs
// in, as `scontrol show hostnames` expands the job's node list: the one
// slurmctld holds now, or, where it cannot be asked, SLURM_JOB_NODELIST. A
// job of --no-kill goes on without a node that failed, which its node list
// then no longer holds and SLURM_JOB_NODELIST, set as the job started,
// still does: a step that names it fails ("Requested node configuration is
// not available"), every trial of its group's, on every resume.
func AllocationNodes() ([]string, error) {
	list := os.Getenv("SLURM_JOB_NODELIST")
	if list == "" {
		return nil, errors.New("launcher srun: not inside a Slurm allocation (SLURM_JOB_NODELIST is not set; run nccltune under salloc or sbatch)")
	}
	if id := os.Getenv("SLURM_JOB_ID"); id != "" {
		if now := jobNodeList(id); now != "" {
			list = now
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	names, err := hostnames(ctx, list)
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("launcher srun: scontrol show hostnames %s named no node", list)
	}
	return names, nil
}

// jobNodeList is job id's node list as slurmctld holds it now, "" where
// it cannot be asked. It has a stopTimeout of its own: one that slurmctld
// did not answer within leaves the expansion of SLURM_JOB_NODELIST, which
// scontrol does without it, its own.
func jobNodeList(id string) string {
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	if _, nodes, err := showJob(ctx, id); err == nil {
		return nodes
	}
	return ""
}

// hostnames expands a Slurm host list ("n[1-4],m2") into its hosts' names.
func hostnames(ctx context.Context, list string) ([]string, error) {
	out, err := slurmOutput(ctx, "scontrol", "show", "hostnames", list)
	if err != nil {
		return nil, fmt.Errorf("launcher srun: scontrol show hostnames %s: %w", list, err)
	}
	return strings.Fields(string(out)), nil
}

// Host is one line of a hostfile: the host and its slots (0: not given).
type Host struct {
	Name  string
	Slots int
	// Line is its line in the hostfile, colon whether the line gave its
	// slots in MPICH's form ("node1:8"), which Open MPI does not read.
	Line  int
	colon bool
}

// String is the host as mpirun's --host list takes it: "name:slots".
func (h Host) String() string {
	if h.Slots == 0 {
		return h.Name
	}
	return h.Name + ":" + strconv.Itoa(h.Slots)
}

// HostKey is the host a hostfile's name names: a name less its domain (an
// address whole), as Open MPI reads it, in DNS's one case.
func HostKey(name string) string { return strings.ToLower(ompiHostKey(name)) }

// ompiHostKey is the name by which Open MPI's hostfile parser (4.1's
// hostfile.c) tells a hostfile's hosts apart: less its domain (an address
// whole), its case as written ("NODE1" and "node1" are two hosts to it),
// and less a user before it ("alice@node1" is node1, logged into as alice).
func ompiHostKey(name string) string {
	if at := strings.LastIndexByte(name, '@'); at >= 0 {
		name = name[at+1:]
	}
	if net.ParseIP(name) == nil {
		name, _, _ = strings.Cut(name, ".")
	}
	return name
}

// hostfileSlotsRE is a host's slot count as Open MPI's hostfile parser
// reads it (hostfile_lex.l): "slots=N", its synonyms "count=N" and
// "cpu=N", blanks allowed around the '=', and the maximum, "max_slots=N"
// (or "max-slots", "slots_max", "max_cpu", "count-max", ...), which gives
// the slots where no other count does.
var hostfileSlotsRE = regexp.MustCompile(`(?:^| )((?:max[-_])?(?:slots|count|cpu)(?:[-_]max)?) ?= ?(\S*)`)

// HostfileHosts reads an Open MPI ("host slots=N") or MPICH ("host:N")
// hostfile.
func HostfileHosts(path string) ([]Host, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("hostfile: %w", err)
	}
	defer f.Close()
	var hosts []Host
	listed := map[string]bool{} // ompiHostKey
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(text)
		if len(fields) == 0 || strings.HasPrefix(fields[0], "^") {
			continue // "^node3" leaves node3 out of an allocation's hosts (Open MPI's hostfile.c): no host to run on
		}
		h := Host{Name: fields[0], Line: line}
		slots, maxSlots := "", ""
		// MPICH's "host:N" has one colon; an IPv6 address ("fe80::1",
		// "[::1]") has more, and names the host whole.
		if name, count, ok := strings.Cut(fields[0], ":"); ok && name != "" && !strings.Contains(count, ":") {
			h.Name, slots, h.colon = name, count, true
		}
		for _, m := range hostfileSlotsRE.FindAllStringSubmatch(strings.Join(fields[1:], " "), -1) {
			if strings.Contains(m[1], "max") {
				maxSlots = m[2]
			} else {
				slots = m[2]
			}
		}
		// A host's max_slots alone is its slots too, to Open MPI, on the
		// host's first line; on a later one the line adds a slot, as one
		// without a count does (hostfile.c).
		if !listed[ompiHostKey(h.Name)] {
			slots = cmp.Or(slots, maxSlots)
		}
		listed[ompiHostKey(h.Name)] = true
		if slots != "" {
			if h.Slots, err = strconv.Atoi(slots); err != nil || h.Slots < 0 {
				return nil, fmt.Errorf("hostfile %s:%d: bad slot count %q", path, line, slots)
			}
			if h.Slots == 0 {
				return nil, fmt.Errorf("hostfile %s:%d: zero slots", path, line)
			}
		}
		// Open MPI refuses a maximum below the slots ("max_slots is less
		// than slots") and starts no rank, at every trial.
		if most, err := strconv.Atoi(maxSlots); err == nil && h.Slots > most {
			return nil, fmt.Errorf("hostfile %s:%d: slots=%d above max_slots=%d, which Open MPI refuses", path, line, h.Slots, most)
		}
		hosts = append(hosts, h)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("hostfile %s: %w", path, err)
	}
	if len(hosts) == 0 {
		return nil, fmt.Errorf("hostfile %s lists no host", path)
	}
	return hosts, nil
}

// slotsOf is the hosts' total slot count, 0 if some host gives none
// (mpirun then decides).
func slotsOf(hosts []Host) int {
	total := 0
	for _, h := range hosts {
		if h.Slots == 0 {
			return 0
		}
		total += h.Slots
	}
	return total
}

// mpichForm is the first host whose line gives its slots in MPICH's form
// ("node1:8"), nil where none does: Open MPI (4's hostfile.c, 5's PRRTE)
// reads the line as a host named "node1:8", which it cannot reach.
func mpichForm(hosts []Host) *Host {
	if i := slices.IndexFunc(hosts, func(h Host) bool { return h.colon }); i >= 0 {
		return &hosts[i]
	}
	return nil
}

// slotsGivenAgain is the first host that a hostfile's line gives a slot
// count after a line before it listed the host (ompiHostKey), "" where none
// is: Open MPI (hostfile.c) refuses such a file, as "multiple definitions
// of the slot count", where each line without a count adds one slot.
func slotsGivenAgain(hosts []Host) string {
	seen := map[string]string{} // ompiHostKey → the name first listed
	for _, h := range hosts {
		first, ok := seen[ompiHostKey(h.Name)]
		switch {
		case ok && h.Slots > 0 && first != h.Name:
			return first + " (also as " + h.Name + ")"
		case ok && h.Slots > 0:
			return first
		case !ok:
			seen[ompiHostKey(h.Name)] = h.Name
		}
	}
	return ""
}
