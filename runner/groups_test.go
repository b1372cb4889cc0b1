package runner

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nccltune/nccltune/internal/simtest"
	"github.com/nccltune/nccltune/internal/slurmtest"
	"github.com/nccltune/nccltune/space"
)

func TestGroupsOfAHostfile(t *testing.T) {
	t.Setenv("SLURM_JOB_ID", "") // outside Slurm
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	four := write("four", "# four nodes\nnode1 slots=8\nnode2 slots=8 max_slots=8\nnode3:8\nnode4 slots=8\n")
	for _, flavor := range []string{"openmpi", "mpich"} {
		groups, err := Groups(space.LauncherSettings{Kind: "mpirun", Flavor: flavor, NP: 16, Hostfile: four, Groups: 2})
		if err != nil {
			t.Fatal(err)
		}
		flag := map[string]string{"openmpi": "--host", "mpich": "-hosts"}[flavor]
		for i, want := range []string{"node1:8,node2:8", "node3:8,node4:8"} {
			argv, err := groups[i].Launcher.Wrap([]string{"all_reduce_perf"}, nil)
			line := strings.Join(argv, " ")
			if err != nil || !strings.Contains(line, flag+" "+want) || strings.Contains(line, four) || !strings.Contains(line, "-np 16") {
				t.Errorf("%s group %d: %q, %v; want %s %s instead of the hostfile", flavor, i, line, err, flag, want)
			}
			if nodes := strings.Join(groups[i].Nodes, ","); nodes != strings.ReplaceAll(strings.ReplaceAll(want, ":8", ""), " ", "") {
				t.Errorf("group %d nodes %s", i, nodes)
			}
		}
	}
	for _, tc := range []struct {
		hostfile string
		groups   int
		want     string
	}{
		{four, 3, "4 hosts, which cannot be split into 3 groups"},
		{write("one", "node1 slots=8\n"), 2, "lists 1 host, which cannot be split into 2 groups"},
		{write("noslots", "node1\nnode2 slots=4\n"), 2, "gives host node1 no slot count"},
		{write("zero", "node1 slots=0\nnode2\n"), 2, "zero slots"},
		// Open MPI 4.1.4 refuses it ("max_slots is less than slots") and starts no rank.
		{write("overmax", "node1 slots=8 max_slots=4\nnode2 slots=8\n"), 2, "hostfile " + filepath.Join(dir, "overmax") + ":1: slots=8 above max_slots=4"},
		{write("empty", "# nothing\n"), 2, "lists no host"},
		// Groups of one shape: every group's hosts the same slots.
		{write("unequal", "a slots=8\nb slots=4\n"), 2, "does not split into 2 groups of one shape: group 1 is b:4, group 0 a:8"},
		// Open MPI's --host takes no user to log in as (4.1.4: "illegal
		// character" in the node's name); under Slurm none is needed.
		{write("user", "alice@node1 slots=8\nnode2 slots=8\n"), 2, "logs into host node1 as alice@, which mpirun's --host"},
	} {
		if _, err := Groups(space.LauncherSettings{Kind: "mpirun", Hostfile: tc.hostfile, Groups: tc.groups}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s in %d groups: %v; want %q", tc.hostfile, tc.groups, err, tc.want)
		}
	}
}

// TestHostfileExclusionIsNoHost: Open MPI reads a line "^node3" as node3
// left out of an allocation's hosts (hostfile.c), not as a host to run on;
// read as one, it gave the hostfile a host of no slots, refused for groups,
// and np was checked against the wrong hosts.
func TestHostfileExclusionIsNoHost(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(path, []byte("node1 slots=4\n^node3\nnode2 slots=4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hosts, err := HostfileHosts(path)
	if err != nil || len(hosts) != 2 || hosts[0].Name != "node1" || hosts[1].Name != "node2" {
		t.Fatalf("hosts %+v, %v; want node1 and node2", hosts, err)
	}
	if _, err := Groups(space.LauncherSettings{Kind: "mpirun", Hostfile: path, Groups: 2}); err != nil {
		t.Errorf("2 groups: %v", err)
	}
}

// TestGroupsHostListedTwice: a hostfile may list a host on several lines,
// which Open MPI (and Hydra) take as one host of their slots together. Split
// into groups, such a host was in two groups, whose trials then ran at once
// on its GPUs, each measuring the other's load.
func TestGroupsHostListedTwice(t *testing.T) {
	for _, text := range []string{
		"node1 slots=4\nnode2 slots=4\nnode1 slots=4\nnode2 slots=4\n",
		"node1:4\nnode1:4\n",
		// One host under its short and its full name, or in capitals: Open
		// MPI drops the domain of a hostfile's names (a name is not an
		// address), and DNS's names know no case.
		"node1 slots=4\nnode2 slots=4\nnode1.cluster.local slots=4\nnode2.cluster.local slots=4\n",
		"node1 slots=4\nnode2 slots=4\nNODE1 slots=4\nnode3 slots=4\n",
	} {
		path := filepath.Join(t.TempDir(), "hosts")
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		groups, err := Groups(space.LauncherSettings{Kind: "mpirun", Hostfile: path, Groups: 2})
		if err == nil || !strings.Contains(err.Error(), "node1") {
			var nodes [][]string
			for _, g := range groups {
				nodes = append(nodes, g.Nodes)
			}
			t.Errorf("%q in 2 groups: groups on %v, %v; want a host listed twice refused", text, nodes, err)
		}
	}
}

// TestMPIRunGroupNPFitsItsSlots: np is each group's rank count, which its
// hosts' slots must hold, as the whole hostfile's must without groups.
func TestMPIRunGroupNPFitsItsSlots(t *testing.T) {
	dir := t.TempDir()
	hostfile := filepath.Join(dir, "hosts")
	if err := os.WriteFile(hostfile, []byte("a slots=4\nb slots=4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mpirun := filepath.Join(dir, "mpirun")
	if err := os.WriteFile(mpirun, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for np, want := range map[int]string{8: "np = 8 does not match the 4 slots of its group of launcher.groups (b:4)", 4: ""} {
		groups, err := Groups(space.LauncherSettings{Kind: "mpirun", Command: mpirun, NP: np, Hostfile: hostfile, Groups: 2})
		if err != nil {
			t.Fatal(err)
		}
		err = groups[1].Launcher.(Checker).Check()
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("np %d: %v; want %q", np, err, want)
		}
	}
	// One slot a group is counted as one.
	if err := os.WriteFile(hostfile, []byte("a slots=1\nb slots=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	groups, err := Groups(space.LauncherSettings{Kind: "mpirun", Command: mpirun, NP: 2, Hostfile: hostfile, Groups: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := groups[0].Launcher.(Checker).Check(); err == nil || !strings.Contains(err.Error(), "np = 2 does not match the 1 slot of its group") {
		t.Errorf("np 2 in groups of one slot: %v", err)
	}
}

// TestMPIRunGroupHosts runs real ranks under Open MPI's mpirun with a
// group's --host list instead of a hostfile.
func TestMPIRunGroupHosts(t *testing.T) {
	env := needMPI(t)
	r := &Runner{Launcher: MPIRun{NP: 3, Hosts: []Host{{Name: "localhost", Slots: 3}}}, BaseEnv: env}
	res := r.Run(context.Background(), Job{Benchmark: DDPStep{Program: []string{"sh", "-c", "echo rank $OMPI_COMM_WORLD_RANK of $OMPI_COMM_WORLD_SIZE"}}, Timeout: time.Minute})
	if res.Exit.Code != 0 || strings.Count(string(res.Output), "of 3") != 3 {
		t.Fatalf("exit %d, %v\n%s", res.Exit.Code, res.Failure, res.Output)
	}
}

// TestMPIRunGroupMasterAddr: each group's ranks meet at its own first
// host, where rank 0 runs, not at a MASTER_ADDR that launcher.args (-x
// MASTER_ADDR=..., one for every group) or the job's shell (which MPICH
// hands every rank) name: there every group's ranks after the first waited
// for a rank 0 of another group until the trial's timeout.
func TestMPIRunGroupMasterAddr(t *testing.T) {
	hosts := []Host{{Name: "localhost", Slots: 2}}
	argv, err := (MPIRun{Flavor: "mpich", NP: 2, Hosts: hosts, Args: []string{"-genv", "MASTER_ADDR", "node1"}}).Wrap([]string{"step"}, nil)
	if want := "mpirun -np 2 -hosts localhost:2 -genv MASTER_ADDR node1 -genv MASTER_ADDR localhost step"; err != nil || strings.Join(argv, " ") != want {
		t.Errorf("mpich: %q, %v\nwant %q", strings.Join(argv, " "), err, want)
	}
	env := needMPI(t)
	r := &Runner{Launcher: MPIRun{NP: 2, Hosts: hosts, Args: []string{"-x", "MASTER_ADDR=node1"}}, BaseEnv: append(env, "MASTER_ADDR=node9")}
	res := r.Run(context.Background(), Job{Benchmark: DDPStep{Program: []string{"sh", "-c", "echo rank $OMPI_COMM_WORLD_RANK meets at $MASTER_ADDR"}}, Timeout: time.Minute})
	if res.Exit.Code != 0 || strings.Count(string(res.Output), "meets at localhost\n") != 2 {
		t.Fatalf("exit %d, %v; want both ranks to meet at localhost\n%s", res.Exit.Code, res.Failure, res.Output)
	}
}

// TestMPIRunGroupsUnderSlurm: a hostfile that names Slurm's nodes as Open
// MPI's hostfile parser reads them, with a domain or a user before them
// ("n2.cluster", "alice@n3"), runs as one launch (mpirun --hostfile), and
// split into groups each group's mpirun runs on its own node of the
// allocation, its ranks meeting at that host: mpirun's --host takes no
// such name under Slurm ("All nodes which are allocated for this job are
// already filled", Open MPI 4.1.4 and Slurm 22.05 here), and every trial
// failed to launch, and a MASTER_ADDR of alice@n3 names no host.
func TestMPIRunGroupsUnderSlurm(t *testing.T) {
	simtest.RequireMPI(t)
	c := slurmtest.Start(t, 3)
	c.Alloc(t, 3)
	hostfile := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(hostfile, []byte("n2.cluster slots=1\nalice@n3 slots=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	groups, err := Groups(space.LauncherSettings{Kind: "mpirun", NP: 1, Hostfile: hostfile, Groups: 2})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"node n2 meets at n2.cluster", "node n3 meets at n3"} {
		r := &Runner{Launcher: groups[i].Launcher, BaseEnv: BaseEnv()}
		res := r.Run(context.Background(), Job{Benchmark: DDPStep{Program: []string{"sh", "-c", "echo node $SLURMD_NODENAME meets at $MASTER_ADDR"}}, Timeout: time.Minute})
		if res.Exit.Code != 0 || strings.TrimSpace(string(res.Output)) != want {
			t.Errorf("group %d: exit %d, %v; want %q\n%s", i, res.Exit.Code, res.Failure, want, res.Output)
		}
	}
}

// TestSrunGroups splits a real allocation of 4 nodes into 2 groups of 2 and
// runs a step on each at once: each step's ranks run on its group's nodes
// alone, and both steps run at the same time.
func TestSrunGroups(t *testing.T) {
	c := slurmtest.Start(t, 4)
	c.Alloc(t, 8)
	l := space.LauncherSettings{Kind: "srun", Nodes: 2, TasksPerNode: 2, Groups: 2}
	groups, err := Groups(l)
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) != 2 || !slices.Equal(groups[0].Nodes, c.Nodes[:2]) || !slices.Equal(groups[1].Nodes, c.Nodes[2:]) {
		t.Fatalf("groups %+v of nodes %v", groups, c.Nodes)
	}
	dir := t.TempDir()
	// Each rank says where it ran, then waits for every rank of both steps to
	// have started: it can only end if the steps run at once.
	script := fmt.Sprintf(`echo "$SLURMD_NODENAME" > %[1]s/$1.$SLURM_PROCID; i=0
		while [ "$(ls %[1]s | wc -l)" -lt 8 ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i+1)); done
		[ $i -lt 200 ]`, dir)
	var wg sync.WaitGroup
	results := make([]Result, len(groups))
	for i, g := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &Runner{Launcher: g.Launcher, BaseEnv: BaseEnv()}
			results[i] = r.Run(context.Background(), Job{Benchmark: DDPStep{Program: []string{"sh", "-c", script, "sh", fmt.Sprint(i)}}, Timeout: time.Minute})
		}()
	}
	wg.Wait()
	for i, res := range results {
		if res.Exit.Code != 0 {
			t.Errorf("group %d: exit %d (the steps did not run at once?)\n%s", i, res.Exit.Code, res.Output)
		}
		if !slices.Contains(res.Command, "--nodelist="+strings.Join(groups[i].Nodes, ",")) {
			t.Errorf("group %d: command %q", i, res.Command)
		}
		for rank := range 4 {
			data, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%d.%d", i, rank)))
			if node := strings.TrimSpace(string(data)); err != nil || !slices.Contains(groups[i].Nodes, node) {
				t.Errorf("group %d rank %d ran on %q (%v), not on %v", i, rank, node, err, groups[i].Nodes)
			}
		}
	}
	l.Groups = 3
	if _, err := Groups(l); err == nil || !strings.Contains(err.Error(), "3 groups of 2 nodes need 6 nodes; the allocation has 4") {
		t.Errorf("3 groups of 2 in 4 nodes: %v", err)
	}
	l.Groups, l.Nodes = 5, 1
	if _, err := Groups(l); err == nil || !strings.Contains(err.Error(), "5 groups of 1 node need 5 nodes; the allocation has 4") {
		t.Errorf("5 groups of 1 in 4 nodes: %v", err)
	}
}

// TestSrunGroupsAtEachScale: with campaign.scales, each scale's groups take
// their scale's node count each, out of the allocation, which must hold
// groups x the largest scale.
func TestSrunGroupsAtEachScale(t *testing.T) {
	all := []string{"n1", "n2", "n3", "n4", "n5", "n6"}
	slurmtest.FakeAllocation(t, all...)
	sp, err := space.Parse("scales.toml", []byte(`
[campaign]
scales = [1, 3, 4]
[benchmark]
binary = "all_reduce_perf"
[launcher]
kind = "srun"
ntasks_per_node = 8
groups = 2
[[param]]
name = "NCCL_MIN_CTAS"
values = ["default", "4"]
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, nodes := range []int{1, 3} {
		groups, err := Groups(sp.AtScale(nodes).Launcher)
		if err != nil {
			t.Fatal(err)
		}
		for i, g := range groups {
			want := all[i*nodes : (i+1)*nodes]
			argv, _ := g.Launcher.Wrap([]string{"all_reduce_perf"}, nil)
			line := strings.Join(argv, " ")
			if !slices.Equal(g.Nodes, want) || !strings.Contains(line, fmt.Sprintf("-N %d ", nodes)) || !strings.Contains(line, "--nodelist="+strings.Join(want, ",")) {
				t.Errorf("scale %d, group %d: nodes %v, %s; want %v", nodes, i, g.Nodes, line, want)
			}
		}
	}
	if _, err := Groups(sp.AtScale(4).Launcher); err == nil || !strings.Contains(err.Error(), "2 groups of 4 nodes need 8 nodes; the allocation has 6") {
		t.Errorf("scale 4 on 6 nodes: %v", err)
	}
}

// TestSrunStepsOnPartOfJobWideGPUs: in a job that asked for its GPUs
// job-wide (salloc -G), srun refuses a step on part of its nodes that names
// no GPU count; groups' steps and a step on fewer nodes than the allocation
// name what the job holds on their nodes, and run with every one of them;
// groups that would hold different numbers are refused.
func TestSrunStepsOnPartOfJobWideGPUs(t *testing.T) {
	c := slurmtest.Start(t, 4)
	c.Alloc(t, 8, "-G", "12") // Slurm packs them: 4, 4, 3 and 1
	gpusOnNodes := func(t *testing.T, l space.LauncherSettings) int {
		t.Helper()
		groups, err := Groups(l)
		if err != nil {
			t.Fatal(err)
		}
		total := 0
		for i, g := range groups {
			r := &Runner{Launcher: g.Launcher, BaseEnv: BaseEnv()}
			res := r.Run(context.Background(), Job{Benchmark: DDPStep{Program: []string{"sh", "-c", `[ "$SLURM_LOCALID" = 0 ] && echo "gpus $SLURMD_NODENAME $SLURM_GPUS_ON_NODE"; true`}}, Timeout: time.Minute})
			if res.Exit.Code != 0 {
				t.Fatalf("group %d: exit %d, %v\n%s", i, res.Exit.Code, res.Failure, res.Output)
			}
			step := 0
			for _, f := range regexp.MustCompile(`gpus n[0-9]+ ([0-9]+)`).FindAllStringSubmatch(string(res.Output), -1) {
				n, _ := strconv.Atoi(f[1])
				step += n
			}
			if !slices.Contains(res.Command, fmt.Sprintf("--gpus=%d", step)) || step == 0 {
				t.Errorf("group %d: its nodes hold %d of the job's GPUs, command %q\n%s", i, step, res.Command, res.Output)
			}
			total += step
		}
		return total
	}
	if got := gpusOnNodes(t, space.LauncherSettings{Kind: "srun", Nodes: 1, TasksPerNode: 2, Groups: 2}); got != 8 {
		t.Errorf("2 groups of 1 node ran with %d GPUs, not the 8 of the job's first 2 nodes", got)
	}
	// Groups that hold different numbers of GPUs would measure the group.
	if _, err := Groups(space.LauncherSettings{Kind: "srun", Nodes: 2, TasksPerNode: 2, Groups: 2}); err == nil || !strings.Contains(err.Error(), "group 1 (n3,n4) holds 3+1, group 0 (n1,n2) 4+4") {
		t.Errorf("2 groups of 2 nodes holding 8 and 4 GPUs: %v", err)
	}
	if got := gpusOnNodes(t, space.LauncherSettings{Kind: "srun", Nodes: 1, TasksPerNode: 2}); got < 1 {
		t.Errorf("a step on 1 of 4 nodes ran with %d GPUs", got)
	}
	// launcher.args that name the step's GPUs are the user's to give.
	l := space.LauncherSettings{Kind: "srun", Nodes: 1, Args: []string{"--gpus-per-node=1"}}
	if groups, err := Groups(l); err != nil || groups[0].Launcher.(Srun).GPUs != 0 || groups[0].Launcher.(Srun).NodeList != nil {
		t.Errorf("with %v: %+v, %v", l.Args, groups, err)
	}
}

func TestGresGPUs(t *testing.T) {
	for gres, want := range map[string]int{
		"gpu:4(IDX:0-3)":                        4,
		"gpu:a100:2(IDX:0-1)":                   2,
		"gpu:a100:2(IDX:0-1),nic:1(IDX:0)":      2,
		"nic:1(IDX:0),gpu:1(IDX:3)":             1,
		"gpu:h100:1(IDX:0),gpu:a100:2(IDX:1-2)": 3,
		"gpu(IDX:0-3)":                          4,
		"gpu(IDX:0,2-3,5)":                      4,
		"gpu:1080(IDX:0-1)":                     2,
		"gpu(CNT:4)":                            4,
		"gpu:1080(CNT:2)":                       2,
		"nic(CNT:1),gpu:a100(CNT:3)":            3,
		"(null)":                                0,
		"":                                      0,
	} {
		if got := gresGPUs(gres); got != want {
			t.Errorf("gresGPUs(%q) = %d, want %d", gres, got, want)
		}
	}
}

// TestUnevenGPUs: groups must hold the job's GPUs alike node by node, not
// only in sum: a group of 4 and 2 would put its ranks on the node of 2 as
// one of 3 and 3 would not.
func TestUnevenGPUs(t *testing.T) {
	for _, tc := range []struct {
		gpus [][]int
		want string
	}{
		{[][]int{{4, 4}, {4, 4}}, ""},
		{[][]int{nil, nil}, ""}, // not counted: GPUs per node, or given in launcher.args
		{[][]int{{4, 2}, {3, 3}}, "group 1 (b1,b2) holds 3+3, group 0 (a1,a2) 4+2"},
		{[][]int{{4, 4}, {4, 4}, {4, 3}}, "group 2 (c1,c2) holds 4+3"},
	} {
		var groups []Group
		for i, g := range tc.gpus {
			p := string(rune('a' + i))
			groups = append(groups, Group{Nodes: []string{p + "1", p + "2"}, GPUs: g})
		}
		err := unevenGPUs(groups)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%v: %v; want %q", tc.gpus, err, tc.want)
		}
	}
}

// TestHostfileSlotSpellings: Open MPI 4.1.4's hostfile parser reads a
// host's slots from "slots=N", its synonyms "count=N" and "cpu=N", with
// blanks around the '=', and from "max_slots=N" alone; read as no count,
// np's check was skipped and launcher.groups refused the hostfile.
func TestHostfileSlotSpellings(t *testing.T) {
	dir := t.TempDir()
	for _, line := range []string{"node1 slots=4", "node1 slots = 4", "node1 count=4", "node1 cpu=4", "node1 cpu = 4",
		"node1 max_slots=4", "node1 slots=4 max_slots=8", "node1 max_slots=8 slots=4", "node1:4", "node1 slots=4 # four",
		// The maximum's other spellings (PRRTE's hostfile_lex.l).
		"node1 slots-max=4", "node1 slots_max=4", "node1 max-cpu=4", "node1 cpu_max=4", "node1 count-max=4", "node1 max_count=4"} {
		path := filepath.Join(dir, "hosts")
		if err := os.WriteFile(path, []byte(line+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if hosts, err := HostfileHosts(path); slotsOf(hosts) != 4 || err != nil {
			t.Errorf("%q: %d slots, %v; want 4", line, slotsOf(hosts), err)
		}
	}
}

// TestHostfileIPv6: an IPv6 address names a host with its colons
// ("fe80::1 slots=2", "[::1]"), which Open MPI's hostfile parser takes as
// one (its lexer's IPV6 token); read as MPICH's "host:N", its name was cut
// at the first colon, a line without slots failed as a bad count (":1"),
// and Open MPI's check refused one with slots as MPICH's form.
func TestHostfileIPv6(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(path, []byte("fe80::1 slots=2\n[::1] slots=2\n2001:db8::7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hosts, err := HostfileHosts(path)
	want := []Host{{Name: "fe80::1", Slots: 2, Line: 1}, {Name: "[::1]", Slots: 2, Line: 2}, {Name: "2001:db8::7", Line: 3}}
	if err != nil || !slices.Equal(hosts, want) {
		t.Errorf("hosts %+v, %v; want %+v", hosts, err, want)
	}
	sh, _ := exec.LookPath("sh")
	if err := (MPIRun{Command: sh, NP: 5, Hostfile: path}).Check(); err != nil {
		t.Errorf("Open MPI's check: %v", err)
	}
}

// TestGPUArgs: srun arguments ask for GPUs in every spelling srun's
// getopt_long reads (abbreviated, after flags, the value next), and not
// where only an option's value, or --gres-flags, looks like one, nor
// where --gres or --tres-per-task asks for other resources only (an NVMe
// disk, 23.11's CPUs per task); --gres=none leaves the step none.
func TestGPUArgs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"-G", "4"}, true},
		{[]string{"-lG4"}, true},
		{[]string{"--gpus=4"}, true},
		{[]string{"--gpus-per-node", "4"}, true},
		{[]string{"--gpus-per-n=4"}, true},
		{[]string{"--gres=gpu:4"}, true},
		{[]string{"--tres-per-task=gres/gpu:1"}, true},
		{[]string{"--gres-flags=enforce-binding"}, false},
		{[]string{"-J", "-G4"}, false},
		{[]string{"--mpi=pmix"}, false},
		{[]string{"--gres=nvme:1"}, false},
		{[]string{"--tres-per-task=cpu:2"}, false},
		{[]string{"--tres-per-task=cpu=2"}, false},
		{[]string{"--tres-per-task=cpu=2,gres/gpu=1"}, true},
		{[]string{"--gres", "nvme:1,gpu:a100:2"}, true},
		{[]string{"--gres=gpu"}, true},
		{[]string{"--gres=none"}, true},
	} {
		if got := gpuArgs(tc.args); got != tc.want {
			t.Errorf("gpuArgs(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}

// TestJobGPUsOfTheJobsOwnRecord: scontrol show job of a job array's id
// (SLURM_JOB_ID of its last task to start) lists every task's record, each
// with the GPUs it holds on its nodes; only the job's own record says what
// its steps may take (another task's GPUs on the same node are not its).
func TestJobGPUsOfTheJobsOwnRecord(t *testing.T) {
	records := `JobId=7 ArrayJobId=7 ArrayTaskId=1 JobName=wrap
   JobState=RUNNING Reason=None Dependency=(null)
   NodeList=n1
     Nodes=n1 CPU_IDs=0-1 Mem=0 GRES=gpu:3(IDX:0-2)
   TresPerJob=gres:gpu:3

JobId=8 ArrayJobId=7 ArrayTaskId=0 JobName=wrap
   JobState=RUNNING Reason=None Dependency=(null)
   NodeList=n1
     Nodes=n1 CPU_IDs=2-3 Mem=0 GRES=gpu:1(IDX:3)
   TresPerJob=gres:gpu:3
`
	scontrol := script(t, `if [ "$1" = show ] && [ "$2" = hostnames ]; then echo "$3" | tr , '\n'; else printf '%s' '`+records+`'; fi`)
	dir := t.TempDir()
	if err := os.Symlink(scontrol, filepath.Join(dir, "scontrol")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("SLURM_JOB_ID", "7")
	held, err := jobGPUs()
	if err != nil {
		t.Fatal(err)
	}
	if held["n1"] != 3 {
		t.Errorf("the job holds %d GPUs on n1 by scontrol, want its own record's 3\n%s", held["n1"], records)
	}
}

// TestJobGPUsWithoutTheJobsRecord: scontrol output that holds no record of
// the job (another job's alone, or none) is an error, not a job of no
// GPUs, which would let groups of different counts pass as even.
func TestJobGPUsWithoutTheJobsRecord(t *testing.T) {
	for name, records := range map[string]string{
		"another job's": "JobId=8 JobName=wrap\n     Nodes=n1 CPU_IDs=0 Mem=0 GRES=gpu:4(IDX:0-3)\n",
		"no JobId line": "     Nodes=n1 CPU_IDs=0 Mem=0 GRES=gpu:4(IDX:0-3)\n",
		"empty":         "",
	} {
		t.Run(name, func(t *testing.T) {
			scontrol := script(t, `if [ "$1" = show ] && [ "$2" = hostnames ]; then echo "$3" | tr , '\n'; else printf '`+records+`'; fi`)
			dir := t.TempDir()
			if err := os.Symlink(scontrol, filepath.Join(dir, "scontrol")); err != nil {
				t.Fatal(err)
			}
			t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
			t.Setenv("SLURM_JOB_ID", "7")
			if held, err := jobGPUs(); err == nil || !strings.Contains(err.Error(), "no record of job 7") {
				t.Errorf("jobGPUs = %v, %v; want no record of job 7", held, err)
			}
		})
	}
}

// TestMPIRunHostInAnotherCase: Open MPI's mpirun in a Slurm allocation
// finds a hostfile's host, or --host's (a group's), among the job's nodes
// by its name as Slurm spells it (4.1.4: "N1" is no node of n[1-2], "A
// hostfile was provided that contains at least one node not present in the
// allocation", every trial), where DNS and nccltune's groups take the
// case as one: the check refuses it before any trial, naming Slurm's node.
func TestMPIRunHostInAnotherCase(t *testing.T) {
	sh, _ := exec.LookPath("sh") // an executable that surely exists, standing in for mpirun
	hostfile := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(hostfile, []byte("N1 slots=1\nn2.cluster slots=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := "host N1, which Open MPI finds in no node of the Slurm allocation: it takes a node's name as Slurm spells it, n1"
	if err := (MPIRun{Command: sh, NP: 2, Hostfile: hostfile}).Check(); err != nil {
		t.Errorf("outside Slurm: %v", err)
	}
	slurmtest.FakeAllocation(t, "n1", "n2")
	for _, m := range []MPIRun{{Command: sh, NP: 2, Hostfile: hostfile}, {Command: sh, NP: 2, Hosts: []Host{{Name: "N1", Slots: 1}, {Name: "n2.cluster", Slots: 1}}}} {
		if err := m.Check(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: %v, want %q", m, err, want)
		}
	}
	// MPICH's Hydra is not Open MPI.
	if err := (MPIRun{Command: sh, Flavor: "mpich", NP: 2, Hosts: []Host{{Name: "N1", Slots: 1}, {Name: "n2", Slots: 1}}}).Check(); err != nil {
		t.Errorf("mpich: %v", err)
	}
}

// TestSrunGroupsOfANoKillJobThatLostANode: a job of salloc --no-kill goes
// on without a node that failed, which its node list (scontrol) then no
// longer holds, while SLURM_JOB_NODELIST, set as it started, still does.
// Groups split that stale list, and the group of the lost node failed every
// step ("Unable to create step for job 1: Requested node configuration is
// not available"), on every resume the campaign's stop suggested; they are
// split from the nodes the job holds now, and groups it no longer has nodes
// enough for are refused, naming those it holds.
func TestSrunGroupsOfANoKillJobThatLostANode(t *testing.T) {
	c := slurmtest.Start(t, 4)
	c.Alloc(t, 4, "--no-kill")
	c.Output(t, "scontrol", "update", "nodename=n2", "state=down", "reason=nccltune test")
	// Back before the cluster stops, which waits (30 s) for every node idle.
	t.Cleanup(func() { c.Output(t, "scontrol", "update", "nodename=n2", "state=resume") })
	groups, err := Groups(space.LauncherSettings{Kind: "srun", Nodes: 1, TasksPerNode: 1, Groups: 3})
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range groups {
		r := &Runner{Launcher: g.Launcher, BaseEnv: BaseEnv()}
		res := r.Run(context.Background(), Job{Benchmark: DDPStep{Program: []string{"sh", "-c", `echo "on $SLURMD_NODENAME"`}}, Timeout: time.Minute})
		if res.Exit.Code != 0 || g.Nodes[0] == "n2" {
			t.Errorf("group %d on %v: exit %d, %v\n%s", i, g.Nodes, res.Exit.Code, res.Failure, res.Output)
		}
	}
	if _, err := Groups(space.LauncherSettings{Kind: "srun", Nodes: 1, TasksPerNode: 1, Groups: 4}); err == nil || !strings.Contains(err.Error(), "the allocation has 3 (n1,n3,n4)") {
		t.Errorf("4 groups of 1 node in a job of 3 nodes: %v", err)
	}
}

// TestSrunStepOnNodesOfTooFewGPUs: a job that asked for its GPUs job-wide
// (salloc -G 12 over 4 nodes of 4: Slurm packs them 4, 4, 3 and 1) holds
// fewer on some nodes than a step's tasks there: each rank needs a GPU of
// its own (NCCL refuses two ranks on one), and every trial failed, the
// scales before that one run for hours first. A step, or a group, with a
// node so short is refused, naming it; one whose nodes hold enough runs.
func TestSrunStepOnNodesOfTooFewGPUs(t *testing.T) {
	c := slurmtest.Start(t, 4)
	c.Alloc(t, 8, "-G", "12") // 4, 4, 3 and 1
	for _, tc := range []struct {
		l    space.LauncherSettings
		want string
	}{
		{space.LauncherSettings{Kind: "srun", Nodes: 2, TasksPerNode: 4}, ""},
		{space.LauncherSettings{Kind: "srun", Nodes: 4, TasksPerNode: 1}, ""},
		{space.LauncherSettings{Kind: "srun", Nodes: 3, TasksPerNode: 4}, "node n3 holds 3 of the job's GPUs, fewer than its 4 tasks"},
		{space.LauncherSettings{Kind: "srun", Nodes: 4, TasksPerNode: 2}, "node n4 holds 1 of the job's GPUs, fewer than its 2 tasks"},
		{space.LauncherSettings{Kind: "srun", TasksPerNode: 2}, "node n4 holds 1 of the job's GPUs, fewer than its 2 tasks"},
		{space.LauncherSettings{Kind: "srun", Nodes: 1, TasksPerNode: 4, Groups: 2}, ""},
		{space.LauncherSettings{Kind: "srun", Nodes: 1, TasksPerNode: 5, Groups: 2}, "node n1 holds 4 of the job's GPUs, fewer than its 5 tasks"},
	} {
		_, err := Groups(tc.l)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%d nodes of %d tasks, %d groups: %v; want %q", tc.l.Nodes, tc.l.TasksPerNode, tc.l.Groups, err, tc.want)
		}
	}
}

// TestAllocationNodesWhereSlurmDoesNotAnswer: where slurmctld does not
// answer scontrol show job, the allocation's nodes are SLURM_JOB_NODELIST's,
// which scontrol show hostnames expands without asking it; both shared one
// stopTimeout, which the unanswered question used up, so the expansion
// failed too and no groups or step could be made.
func TestAllocationNodesWhereSlurmDoesNotAnswer(t *testing.T) {
	dir := t.TempDir()
	scontrol := "#!/bin/sh\nif [ \"$1 $2\" = 'show hostnames' ]; then printf 'n1\\nn2\\n'; else exec sleep 30; fi\n"
	if err := os.WriteFile(filepath.Join(dir, "scontrol"), []byte(scontrol), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("SLURM_JOB_ID", "7")
	t.Setenv("SLURM_JOB_NODELIST", "n[1-2]")
	defer func(d time.Duration) { stopTimeout = d }(stopTimeout)
	stopTimeout = time.Second
	if nodes, err := AllocationNodes(); err != nil || !slices.Equal(nodes, []string{"n1", "n2"}) {
		t.Errorf("AllocationNodes = %v, %v; want SLURM_JOB_NODELIST's n1, n2", nodes, err)
	}
}
