package runner

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nccltune/nccltune/internal/simtest"
	"github.com/nccltune/nccltune/internal/slurmtest"
	"github.com/nccltune/nccltune/space"
)

// TestSrun runs real srun steps on a one-node Slurm cluster of its own, inside
// an allocation of 16 tasks, as nccltune runs under salloc; each trial asks
// for 4 of them.
func TestSrun(t *testing.T) {
	c := slurmtest.Start(t, 1)
	job := c.Alloc(t, 16)
	srun := Srun{Nodes: 1, TasksPerNode: 4}
	if err := srun.Check(); err != nil {
		t.Fatal(err)
	}
	t.Run("variables", func(t *testing.T) { testSrunVariables(t, srun) })
	t.Run("task prolog under any launcher", testTaskPrologUnderAnyLauncher)
	t.Run("export list under any launcher", testExportListUnderAnyLauncher)
	t.Run("simulator", func(t *testing.T) { testSrunSimulator(t, srun) })
	t.Run("failures", func(t *testing.T) { testSrunFailures(t, srun) })
	t.Run("launch failures", testSrunLaunchFailures)
	t.Run("failure detail", func(t *testing.T) { testSrunFailureDetail(t, srun) })
	t.Run("hang", func(t *testing.T) { testSrunHang(t, c, job, srun) })
	t.Run("inherited shape", testSrunInheritedShape)
	t.Run("outer step's CPUs", func(t *testing.T) { testSrunOuterStepCPUs(t, srun) })
	t.Run("outer step's PMI", func(t *testing.T) { testSrunOuterStepPMI(t, srun) })
	t.Run("DDP step in the caller's world", testSrunDDPCallerWorld)
}

// testSrunDDPCallerWorld runs the real DDP step (PyTorch's gloo on CPU) on
// 2 ranks under srun, whose caller exported a world of its own (a job
// script's WORLD_SIZE, RANK and LOCAL_RANK, which srun hands every rank):
// the step reads its ranks from srun's variables, where it read WORLD_SIZE
// first and waited in init_process_group for 8 ranks until the timeout.
func testSrunDDPCallerWorld(t *testing.T) {
	py := torchPython(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	for name, value := range map[string]string{"WORLD_SIZE": "8", "RANK": "5", "LOCAL_RANK": "5", "MASTER_PORT": port} {
		t.Setenv(name, value)
	}
	bench, err := newDDPStep(space.BenchmarkSettings{Python: py, Params: "1M", Layers: 2, Batch: 8, Device: "cpu", ScriptDir: t.TempDir()}, "srun")
	if err != nil {
		t.Fatal(err)
	}
	r := &Runner{Launcher: Srun{Nodes: 1, TasksPerNode: 2}, BaseEnv: BaseEnv()}
	res := r.Run(context.Background(), Job{Benchmark: bench, Plan: Plan{Iters: 3, Warmup: 1}, Timeout: time.Minute})
	if res.Failure != nil || res.Measurement.Ranks != 2 {
		t.Fatalf("failure = %v, measurement %+v; want one of 2 ranks\n%s", res.Failure, res.Measurement, res.Output)
	}
}

// testSrunInheritedShape: srun variables that nccltune's caller has, from
// its allocation (salloc -n 16: SLURM_NTASKS=16) or its own environment,
// change neither a step's rank count nor its output: srun takes them as the
// defaults of options the space leaves out. Where tasks sit
// (SLURM_DISTRIBUTION) is the allocation's, as for the job's own srun.
// The output is the ranks' alone: srun's and slurmstepd's verbose lines
// (SLURM_DEBUG, SLURMD_DEBUG), which a metric's regex would read as a
// rank's, are no trial's.
func testSrunInheritedShape(t *testing.T) {
	for name, value := range map[string]string{
		"SLURM_NTASKS_PER_NODE": "5", "SLURM_DISTRIBUTION": "cyclic",
		"SLURM_LABELIO": "1", "SLURM_STDOUTMODE": filepath.Join(t.TempDir(), "out"),
		"SLURM_DEBUG": "2", "SLURMD_DEBUG": "3", "SLURM_UNBUFFEREDIO": "1",
	} {
		t.Setenv(name, value)
	}
	for _, tc := range []struct {
		srun  Srun
		ranks int
	}{
		{Srun{Nodes: 1, TasksPerNode: 4}, 4},
		{Srun{TasksPerNode: 3}, 3}, // every node of the allocation, 3 tasks each
	} {
		r := &Runner{Launcher: tc.srun, BaseEnv: BaseEnv()}
		// A task's SLURM_NTASKS, which trainers read as the world's size, is its step's.
		res := r.Run(context.Background(), Job{Benchmark: DDPStep{Program: []string{"sh", "-c", `echo "rank $SLURM_PROCID of $SLURM_STEP_NUM_TASKS, $SLURM_NTASKS"`}}, Timeout: time.Minute})
		if res.Exit.Code != 0 || strings.Count(string(res.Output), "\n") != tc.ranks {
			t.Errorf("%+v: exit status %d, and the output is not the %d ranks' lines:\n%s", tc.srun, res.Exit.Code, tc.ranks, res.Output)
			continue
		}
		for rank := range tc.ranks {
			if line := fmt.Sprintf("rank %d of %d, %d\n", rank, tc.ranks, tc.ranks); !strings.HasPrefix(string(res.Output), line) && !strings.Contains(string(res.Output), "\n"+line) {
				t.Errorf("%+v: no line %q in the output:\n%s", tc.srun, line, res.Output)
			}
		}
	}
}

// testSrunOuterStepCPUs: where nccltune runs in a task of a step that
// asked for its task's CPUs (srun -c 2 --cpu-bind=cores nccltune ...),
// srun set that task's SLURM_CPUS_PER_TASK and binding, which a trial's
// srun reads as its own -c and --cpu-bind (SLURM_CPUS_PER_TASK before 22.05
// and from 23.11 on) and, under --export=ALL, handed every rank as its own;
// under any launcher they are nccltune's task's, not the trial's. The
// outer step's environment is real srun's (22.05 here).
func testSrunOuterStepCPUs(t *testing.T, srun Srun) {
	out, err := exec.Command("srun", "-n1", "-c2", "--cpu-bind=cores", "env", "-0").Output()
	if err != nil {
		t.Fatalf("the outer step: %v", err)
	}
	outer := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if !slices.Contains(outer, "SLURM_CPUS_PER_TASK=2") {
		t.Fatalf("the outer step's task has no SLURM_CPUS_PER_TASK=2: %q", outer)
	}
	// The user's own binding, exported in the task's shell after srun set
	// the task's (srun --pty bash; export SLURM_CPU_BIND=none), is theirs:
	// it stays, as their job's own srun in that shell takes it.
	users := slices.Clone(outer)
	for i, kv := range users {
		if strings.HasPrefix(kv, "SLURM_CPU_BIND=") {
			users[i] = "SLURM_CPU_BIND=none"
		}
	}
	for _, l := range []Launcher{srun, Local{}} {
		for _, tc := range []struct {
			env  []string
			bind string
		}{{outer, "bind=\n"}, {users, "bind=none"}} {
			r := &Runner{Launcher: l, BaseEnv: tc.env}
			res := r.Run(context.Background(), Job{Benchmark: DDPStep{Program: []string{"sh", "-c", `echo "cpus=$SLURM_CPUS_PER_TASK tres=$SLURM_TRES_PER_TASK bind=${SLURM_CPU_BIND#quiet,}$SLURM_CPU_BIND_LIST"`}}, Timeout: time.Minute})
			if res.Exit.Code != 0 || !strings.Contains(string(res.Output), "cpus= tres= "+tc.bind) || strings.Contains(string(res.Output), "cpus=2") || strings.Contains(string(res.Output), "cores") {
				t.Errorf("%T: the ranks got the outer step's CPUs, or not the user's %s (exit %d):\n%s", l, tc.bind, res.Exit.Code, res.Output)
			}
		}
	}
}

// testSrunOuterStepPMI: where nccltune runs in a task of a step of srun
// --mpi=pmi2, that task's PMI wiring (PMI_FD, PMI_RANK, PMI_JOBID, ...)
// reaches no trial's rank (a trial's srun wires its own step's, as the
// outer step's SLURM_MPI_TYPE says), and the PMI settings the user exported
// before it (Cray PMI's PMI_NO_FORK, srun's PMI_FANOUT), which srun handed
// the task as they were, reach every one.
func testSrunOuterStepPMI(t *testing.T, srun Srun) {
	cmd := exec.Command("srun", "-n1", "--mpi=pmi2", "env", "-0")
	cmd.Env = append(os.Environ(), "PMI_NO_FORK=1", "PMI_FANOUT=8")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the outer step: %v", err)
	}
	outer := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if !slices.Contains(outer, "PMI_RANK=0") || !slices.Contains(outer, "PMI_NO_FORK=1") {
		t.Fatalf("the outer step's task has no PMI_RANK=0 or PMI_NO_FORK=1: %q", outer)
	}
	jobid, _ := lookup(outer, "PMI_JOBID")
	for _, tc := range []struct {
		l     Launcher
		ranks int
	}{{srun, 4}, {Local{}, 1}} {
		r := &Runner{Launcher: tc.l, BaseEnv: outer}
		res := r.Run(context.Background(), Job{Benchmark: DDPStep{Program: []string{"sh", "-c", `echo "jobid=$PMI_JOBID fork=$PMI_NO_FORK fanout=$PMI_FANOUT"`}}, Timeout: time.Minute})
		if res.Exit.Code != 0 || strings.Contains(string(res.Output), "jobid="+jobid+" ") || strings.Count(string(res.Output), " fork=1 fanout=8\n") != tc.ranks {
			t.Errorf("%T: the ranks got the outer step's PMI wiring (PMI_JOBID=%s), or not the user's settings (exit %d):\n%s", tc.l, jobid, res.Exit.Code, res.Output)
		}
	}
}

// testSrunVariables checks that every rank gets exactly the trial's NCCL_*
// variables, byte for byte, and none of the caller's own, also through a
// task prolog of the caller's, whose "export NAME=value" lines slurmstepd
// sets in each task past srun's variables.
func testSrunVariables(t *testing.T, srun Srun) {
	t.Setenv("NCCL_PROTO", "LL128") // the caller's own settings must not reach a rank
	t.Setenv("NCCL_ALGO", "Tree")
	prolog := filepath.Join(t.TempDir(), "prolog.sh")
	if err := os.WriteFile(prolog, []byte("#!/bin/sh\necho export NCCL_ALGO=Tree\necho export NCCL_NET=Socket\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SLURM_TASK_PROLOG", prolog)
	trial := map[string]string{
		"NCCL_ALGO":          "allreduce:tree,ring;allgather:ring",
		"NCCL_SOCKET_IFNAME": "=eth0,^docker0 ; lo",
		"NCCL_DEBUG_FILE":    `/tmp/a b/"q" 's' $(touch pwned) ` + "`id` $HOME \\n %h.%p",
		"NCCL_DEBUG_SUBSYS":  "INIT\nGRAPH\tENV",
		"NCCL_IB_HCA":        "",
	}
	var env []string
	for name, value := range trial {
		env = append(env, name+"="+value)
	}
	dir := t.TempDir()
	r := &Runner{Launcher: srun, BaseEnv: BaseEnv()}
	res := r.Run(context.Background(), Job{Benchmark: DDPStep{Program: []string{"sh", "-c", `env -0 > "$0/$SLURM_PROCID"`, dir}}, Env: env, Timeout: time.Minute})
	if res.Exit.Code != 0 {
		t.Fatalf("exit status %d\n%s", res.Exit.Code, res.Output)
	}
	files, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 4 {
		t.Errorf("%d ranks ran, want 4\n%s", len(files), res.Output)
	}
	for rank := range 4 {
		data, err := os.ReadFile(filepath.Join(dir, strconv.Itoa(rank)))
		if err != nil {
			t.Errorf("rank %d: %v", rank, err)
			continue
		}
		got := map[string]string{}
		for _, kv := range strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00") {
			if name, value, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "NCCL_") {
				got[name] = value
			}
		}
		if !maps.Equal(got, trial) {
			t.Errorf("rank %d got NCCL variables\n%q\nwant\n%q", rank, got, trial)
		}
	}
}

// testTaskPrologUnderAnyLauncher: the caller's task prolog, whose "export
// NAME=value" lines slurmstepd sets in each task past srun's variables,
// reaches no rank of a step that another launcher's command runs through
// srun (torchrun's wrapper for several nodes; Open MPI's mpirun starts its
// daemons, and their ranks, so under Slurm).
func testTaskPrologUnderAnyLauncher(t *testing.T) {
	prolog := filepath.Join(t.TempDir(), "prolog.sh")
	if err := os.WriteFile(prolog, []byte("#!/bin/sh\necho export NCCL_ALGO=Tree\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SLURM_TASK_PROLOG", prolog)
	r := &Runner{Launcher: Local{}, BaseEnv: BaseEnv()}
	res := r.Run(context.Background(), Job{Benchmark: DDPStep{Program: []string{"srun", "-N", "1", "-n", "1", "sh", "-c", `echo "rank NCCL_ALGO=$NCCL_ALGO."`}}, Timeout: time.Minute})
	if res.Exit.Code != 0 || !strings.Contains(string(res.Output), "rank NCCL_ALGO=.") {
		t.Errorf("exit status %d; want the rank without the prolog's NCCL_ALGO\n%s", res.Exit.Code, res.Output)
	}
}

// testExportListUnderAnyLauncher: the caller's SLURM_EXPORT_ENV (sbatch
// --export=NONE sets it in the batch script) or SRUN_EXPORT_ENV, which a
// srun takes as its --export, keeps the trial's variables from no rank of
// a step that another launcher's command runs through srun (torchrun's
// wrapper, a training script).
func testExportListUnderAnyLauncher(t *testing.T) {
	for _, name := range []string{"SLURM_EXPORT_ENV", "SRUN_EXPORT_ENV"} {
		t.Run(name, func(t *testing.T) {
			t.Setenv(name, "NONE")
			r := &Runner{Launcher: Local{}, BaseEnv: BaseEnv()}
			res := r.Run(context.Background(), Job{Benchmark: DDPStep{Program: []string{"srun", "-N", "1", "-n", "1", "sh", "-c", `echo "rank NCCL_ALGO=$NCCL_ALGO."`}},
				Env: []string{"NCCL_ALGO=Ring"}, Timeout: time.Minute})
			if res.Exit.Code != 0 || !strings.Contains(string(res.Output), "rank NCCL_ALGO=Ring.") {
				t.Errorf("exit status %d; want the rank to get the trial's NCCL_ALGO\n%s", res.Exit.Code, res.Output)
			}
		})
	}
}

// testSrunSimulator runs the simulated nccl-tests as the ranks: rank 0's
// table is parsed out of srun's merged output and every rank reports the
// trial's variable.
func testSrunSimulator(t *testing.T, srun Srun) {
	algo := "allreduce:tree,ring;allgather:ring"
	r := &Runner{Launcher: srun, BaseEnv: BaseEnv()}
	res := r.Run(context.Background(), Job{
		Benchmark: NCCLTests{Program: []string{os.Args[0], "-nodes=1", "-gpus_per_node=8"}, Binary: "all_reduce_perf", Collective: "all_reduce", GPUs: 1, Check: true},
		Plan:      Plan{Sizes: space.Sizes{Min: 1024, Max: 4096, Factor: 2}, Iters: 20, Warmup: 5},
		Env:       []string{"NCCL_ALGO=" + algo, "NCCL_DEBUG=INFO", "NCCL_NVLS_ENABLE=0"},
		Timeout:   time.Minute,
	})
	if res.Failure != nil {
		t.Fatalf("%v\n%s", res.Failure, res.Output)
	}
	if len(res.Measurement.Rows) != 3 || res.Measurement.Ranks != 4 {
		t.Errorf("%d rows and %d ranks, want 3 and 4", len(res.Measurement.Rows), res.Measurement.Ranks)
	}
	for rank := range 4 {
		want := fmt.Sprintf("[%d] NCCL INFO NCCL_ALGO set by environment to %s.", rank, algo)
		if !strings.Contains(string(res.Output), want) {
			t.Errorf("rank %d did not confirm NCCL_ALGO; output:\n%s", rank, res.Output)
		}
	}
}

// testSrunFailures checks that srun hands on the ranks' exit status, so that
// a failed step is classified as nccl-tests' own exit would be.
func testSrunFailures(t *testing.T, srun Srun) {
	table := filepath.Join(t.TempDir(), "table.txt")
	if err := os.WriteFile(table, []byte(goodTable), 0o644); err != nil {
		t.Fatal(err)
	}
	// rankScript runs body on the given rank; rank 0 prints a good table first.
	rankScript := func(rank int, body string) []string {
		return []string{"sh", "-c", fmt.Sprintf(`[ "$SLURM_PROCID" = 0 ] && cat %s; [ "$SLURM_PROCID" = %d ] && { %s; }; exit 0`, table, rank, body)}
	}
	// hangScript runs body on the given rank; rank 0 prints a good table
	// first, and every other rank waits.
	hangScript := func(rank int, body string) []string {
		return []string{"sh", "-c", fmt.Sprintf(`[ "$SLURM_PROCID" = 0 ] && cat %s; [ "$SLURM_PROCID" = %d ] && { sleep 1; %s; }; exec sleep 300`, table, rank, body)}
	}
	for _, tc := range []struct {
		name   string
		cmd    []string
		env    []string
		kind   FailureKind
		reason string
	}{
		{"NCCL error on every rank", []string{os.Args[0], "all_reduce_perf"}, []string{"NCCL_ALGO=NoSuchAlgo"},
			FailNCCL, "exit status 3 (NCCL error): simnode0: Test NCCL failure"},
		{"NCCL error on one rank", rankScript(2, `echo "node1: Test NCCL failure common.cu:1005 'unhandled system error'"; exit 3`), nil,
			FailNCCL, "exit status 3 (NCCL error): node1: Test NCCL failure common.cu:1005"},
		{"wrong data on one rank", rankScript(3, "exit 7"), nil, FailWrong, "exit status 7"},
		{"other exit on one rank", rankScript(1, "exit 9"), nil, FailExit, "exit status 9"},
		{"signal on one rank", rankScript(1, "kill -SEGV $$"), nil, FailSignal, "killed by signal 11 (segmentation fault)"},
		// The others wait for the failed rank, as NCCL's peers of a dead rank
		// can: the step ends with it, and the trial fails as the rank did.
		{"NCCL error on one rank, the others waiting", hangScript(1, "exit 3"), nil, FailNCCL, "exit status 3 (NCCL error)"},
		{"signal on one rank, the others waiting", hangScript(2, "kill -SEGV $$"), nil, FailSignal, "killed by signal 11 (segmentation fault)"},
		{"no table", []string{"true"}, nil, FailUnparsable, "no result rows"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Runner{Launcher: srun, BaseEnv: BaseEnv()}
			// The last word of the command takes nccl-tests' flags (sh -c ignores them).
			job := tableJob(tc.cmd[len(tc.cmd)-1])
			job.Benchmark = NCCLTests{Program: tc.cmd[:len(tc.cmd)-1], Binary: tc.cmd[len(tc.cmd)-1], Collective: "all_reduce", GPUs: 1, Check: true}
			job.Env, job.Timeout = tc.env, 30*time.Second
			res := r.Run(context.Background(), job)
			if res.Failure == nil || res.Failure.Kind != tc.kind || !strings.Contains(res.Failure.Reason, tc.reason) {
				t.Fatalf("failure = %v; want %s containing %q\noutput: %s", res.Failure, tc.kind, tc.reason, res.Output)
			}
		})
	}
}

// testSrunLaunchFailures: a step srun cannot create or launch fails the
// trial as a launch, with srun's own error, where srun's status (1) was read
// as nccl-tests' own ("exit status 1 (nccl-tests internal error)") and its
// error was not in the reason; so does a step whose tasks slurmstepd could
// not exec (a benchmark missing or not executable on a node, a script's
// interpreter missing), which exit with execve's errno: 2 read as
// nccl-tests' CUDA error, 13 as an exit of the settings.
func testSrunLaunchFailures(t *testing.T) {
	dir := t.TempDir()
	notExecutable, badInterpreter := filepath.Join(dir, "all_reduce_perf"), filepath.Join(dir, "bad.sh")
	if err := os.WriteFile(notExecutable, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(badInterpreter, []byte("#!/nonexistent/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	one := Srun{Nodes: 1, TasksPerNode: 2}
	for _, tc := range []struct {
		srun    Srun
		reason  string
		program string // default all_reduce_perf
	}{
		{Srun{Nodes: 2, TasksPerNode: 1}, "srun: error: Only allocated 1 nodes asked for 2", ""},
		{Srun{Nodes: 1, TasksPerNode: 1, Args: []string{"--gres=gpu:1"}}, "srun: error: Step requested GRES but job doesn't have GRES", ""},
		{Srun{Nodes: 1, TasksPerNode: 1, Args: []string{"--nodelist=nosuch"}}, "srun: error: Unable to create step for job", ""},
		// An option srun does not know, or a value it cannot read, in launcher.args.
		{Srun{Nodes: 1, TasksPerNode: 1, Args: []string{"--no-such-option"}}, "srun: unrecognized option '--no-such-option'", ""},
		{Srun{Nodes: 1, TasksPerNode: 1, Args: []string{"--distribution=nosuch"}}, "srun: ", ""},
		{one, "slurmstepd-n1: error: execve(): /nonexistent/all_reduce_perf: No such file or directory", "/nonexistent/all_reduce_perf"},
		{one, "slurmstepd-n1: error: execve(): no_such_perf: No such file or directory", "no_such_perf"},
		{one, "slurmstepd-n1: error: execve(): " + notExecutable + ": Permission denied", notExecutable},
		{one, "slurmstepd-n1: error: execve(): bad interpreter(/nonexistent/sh): No such file or directory", badInterpreter},
	} {
		r := &Runner{Launcher: tc.srun, BaseEnv: BaseEnv()}
		job := tableJob(cmp.Or(tc.program, "all_reduce_perf"))
		job.Timeout = 30 * time.Second
		res := r.Run(context.Background(), job)
		if res.Failure == nil || res.Failure.Kind != FailLaunch || !strings.HasPrefix(res.Failure.Reason, tc.reason) {
			t.Errorf("%+v: failure = %v; want launch: %s...\noutput: %s", tc.srun, res.Failure, tc.reason, res.Output)
		}
	}
}

// testSrunFailureDetail: a user's command whose rank fails under srun fails
// with the rank's own last words, not the lines srun and slurmstepd print as
// --kill-on-bad-exit ends the step ("srun: Force Terminated StepId=7.0",
// "slurmstepd-n1: error: *** STEP 7.0 ON n1 CANCELLED AT ... ***"), nor
// NCCL's INFO lines of the others; where the ranks said nothing, srun's
// report of the failed task.
func testSrunFailureDetail(t *testing.T, srun Srun) {
	for _, tc := range []struct {
		body, reason string
	}{
		{`[ "$SLURM_PROCID" = 1 ] && { echo "loading shard 3"; echo "ValueError: no data in /data/shard3" >&2; exit 1; }; echo "n1:42:42 [0] NCCL INFO comm 0x1 rank $SLURM_PROCID nranks 4 - Init COMPLETE"; exec sleep 30`,
			"exit status 1: ValueError: no data in /data/shard3"},
		{`[ "$SLURM_PROCID" = 2 ] && exit 5; exec sleep 30`, "exit status 5: srun: error: n1: task 2: Exited with exit code 5"},
	} {
		r := &Runner{Launcher: srun, BaseEnv: BaseEnv()}
		cmd := UserCommand{Argv: []string{"sh", "-c", tc.body}, Metric: space.Metric{Regex: `step ([0-9.]+)`, Goal: "min"}}
		res := r.Run(context.Background(), Job{Benchmark: cmd, Timeout: time.Minute})
		if res.Failure == nil || res.Failure.Reason != tc.reason {
			t.Errorf("failure = %v; want %q\noutput: %s", res.Failure, tc.reason, res.Output)
		}
	}
}

// testSrunHang runs steps whose ranks hang, half of them ignoring SIGTERM,
// and stops them by the timeout or, once the ranks run, by an interrupt: Run
// must return promptly and no task of the step may be left, neither as a
// process nor in Slurm. A srun that cannot act on SIGTERM within the grace
// (stopped here, as one starved of CPU or stuck would be) is killed with its
// child, the process that would cancel the step: the Runner must cancel it,
// also where the launcher command is a wrapper script that runs srun, and
// where the launcher is another's and srun runs in the benchmark's command
// (a training script that runs srun, as torchrun's wrapper for several
// nodes does).
func testSrunHang(t *testing.T, c *slurmtest.Cluster, job string, srun Srun) {
	// The timeout leaves a loaded machine time to start the ranks; an interrupt
	// while srun launches them can leave a step that Slurm never clears.
	const timeout, grace = 3 * time.Second, time.Second
	// A wrapper script as the launcher command, which calls srun: the
	// launcher's pid is the wrapper's, not srun's.
	wrapper := srun
	wrapper.Command = script(t, `srun "$@"`)
	body := `[ $((SLURM_PROCID % 2)) = 1 ] && trap '' TERM; echo started; exec sleep 300`
	// The same step run by the benchmark's own command under the local launcher.
	ownSrun := []string{script(t, `srun -N 1 -n 4 sh -c "$NCCLTUNE_TEST_BODY"`)}
	for _, tc := range []struct {
		name             string
		launcher         Launcher
		program          []string
		interrupt, stuck bool
		want             FailureKind
	}{
		{"timeout", srun, nil, false, false, FailTimeout},
		{"interrupt", srun, nil, true, false, FailInterrupted},
		{"stuck srun", srun, nil, true, true, FailInterrupted},
		{"stuck srun under a wrapper", wrapper, nil, true, true, FailInterrupted},
		{"stuck srun of the benchmark's command", Local{}, ownSrun, true, true, FailInterrupted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			// Every process of the step inherits the marker, whatever it execs.
			marker := fmt.Sprintf("NCCLTUNE_TEST_HANG=%d", time.Now().UnixNano())
			r := &Runner{Launcher: tc.launcher, BaseEnv: BaseEnv(), Grace: grace}
			program := tc.program
			if program == nil {
				program = []string{"sh", "-c", body}
			}
			hang := Job{Benchmark: DDPStep{Program: program}, Env: []string{marker, "NCCLTUNE_TEST_BODY=" + body}, Timeout: timeout}
			if tc.interrupt {
				hang.Timeout = time.Minute
			}
			stop := time.Now().Add(timeout)
			done := make(chan Result, 1)
			go func() { done <- r.Run(ctx, hang) }()
			if tc.interrupt {
				srun := waitRanks(t, marker)
				if tc.stuck {
					if err := syscall.Kill(srun, syscall.SIGSTOP); err != nil {
						t.Fatal(err)
					}
				}
				stop = time.Now()
				cancel()
			}
			res := <-done
			if res.Failure == nil || res.Failure.Kind != tc.want {
				t.Fatalf("failure = %v, want %s\n%s", res.Failure, tc.want, res.Output)
			}
			if late := time.Since(stop); late > grace+3*time.Second {
				t.Errorf("Run returned %s after it was to stop", late)
			}
			if n := strings.Count(string(res.Output), "started"); !tc.stuck && n != 4 {
				t.Errorf("%d ranks started, want 4\n%s", n, res.Output)
			}
			waitGone(t, c, job, marker)
		})
	}
}

// waitRanks waits until the 4 ranks of the step run and returns the pid of
// the srun that started them, this process's child.
func waitRanks(t *testing.T, marker string) int {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		srun, ranks := 0, 0
		for _, pid := range slurmtest.Processes(marker) {
			switch comm, ppid := procStat(pid); {
			case comm == "sleep":
				ranks++
			case comm == "srun":
				// srun itself, not the child it forks to cancel the step should it die.
				if parent, _ := procStat(ppid); parent != "srun" {
					srun = pid
				}
			}
		}
		if srun != 0 && ranks == 4 {
			return srun
		}
		if time.Now().After(deadline) {
			t.Fatalf("the step did not start: srun %d, %d ranks", srun, ranks)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// procStat is a process's command name and parent, from /proc.
func procStat(pid int) (comm string, ppid int) {
	stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	s := string(stat)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return "", 0
	}
	if fields := strings.Fields(s[end+1:]); len(fields) > 1 {
		ppid, _ = strconv.Atoi(fields[1])
	}
	return s[open+1 : end], ppid
}

// waitGone waits until no process has marker in its environment and the job
// runs no step; it kills what is left when it gives up.
func waitGone(t *testing.T, c *slurmtest.Cluster, job, marker string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		procs := slurmtest.Processes(marker)
		steps := strings.TrimSpace(c.Output(t, "squeue", "--steps", "-h", "-o", "%i", "-j", job))
		if len(procs) == 0 && steps == "" {
			return
		}
		if time.Now().After(deadline) {
			for _, pid := range procs {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			t.Fatalf("the step outlived Run by 10s: processes %v, steps %q", procs, steps)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestStepsOf(t *testing.T) {
	steps := "StepId=7.0 UserId=0 State=RUNNING Nodes=1 Tasks=4 Name=sh SrunHost:Pid=node1:4242\n" +
		"StepId=7.1 UserId=0 State=RUNNING Nodes=2 Tasks=16 Name=all_reduce_perf SrunHost:Pid=node1:4343\n" +
		"StepId=7.TDB UserId=0 State=PENDING Nodes=1 Tasks=4 Name=(null) SrunHost:Pid=node1:4444\n" +
		"StepId=7.2 UserId=0 State=RUNNING Nodes=1 Tasks=1 Name=sh SrunHost:Pid=node2:4545\n"
	for _, tc := range []struct {
		host string
		pids []int
		want []string
	}{
		{"node1", []int{4343}, []string{"7.1"}},
		{"node1.cluster.example", []int{4242}, []string{"7.0"}},
		{"node1", []int{4444}, nil}, // pending: no ranks yet
		{"node1", []int{4545}, nil}, // another node's srun
		{"node2", []int{4545}, []string{"7.2"}},
		{"node1", []int{43}, nil},
		{"node1", []int{40, 4242, 4343}, []string{"7.0", "7.1"}}, // a wrapper's two sruns
	} {
		pids := map[int]bool{}
		for _, p := range tc.pids {
			pids[p] = true
		}
		if got := stepsOf(steps, tc.host, pids); !slices.Equal(got, tc.want) {
			t.Errorf("stepsOf(%s, %v) = %q, want %q", tc.host, tc.pids, got, tc.want)
		}
	}
}

// TestSrunLaunchFailure: srun's own error, where no rank reported, is the
// launch's failure; a rank's report, a clean exit or srun killed are not.
func TestSrunLaunchFailure(t *testing.T) {
	for _, tc := range []struct {
		output string
		e      Exit
		want   string
	}{
		{"srun: error: Unable to create step for job 7: Requested node configuration is not available\r\n", Exit{Code: 1},
			"srun: error: Unable to create step for job 7: Requested node configuration is not available"},
		{"srun: Warning: can't honor --ntasks-per-node\nsrun: fatal: Invalid --distribution specification\n", Exit{Code: 1}, "srun: fatal: Invalid --distribution specification"},
		{"srun: error: Task launch for StepId=7.0 failed on node n1: Invalid node name specified\n", Exit{Code: 1},
			"srun: error: Task launch for StepId=7.0 failed on node n1: Invalid node name specified"},
		{"table\nsrun: error: n1: task 1: Exited with exit code 1\nsrun: error: Timed out waiting for job step to complete\n", Exit{Code: 1}, ""},
		{"srun: error: Only allocated 1 nodes asked for 2\n", Exit{Code: 0}, ""},
		{"srun: error: Only allocated 1 nodes asked for 2\n", Exit{Code: -1, Signal: syscall.SIGKILL}, ""},
		{"nccl-tests: internal error\n", Exit{Code: 1}, ""},
		// Tasks slurmstepd could not exec: they exit with execve's errno.
		{"slurmstepd-n1: error: execve(): /nonexistent/all_reduce_perf: No such file or directory\r\nslurmstepd-n1: error: execve(): /nonexistent/all_reduce_perf: No such file or directory\n" +
			"srun: error: n1: tasks 0-1: Exited with exit code 2\nsrun: launch/slurm: _step_signal: Terminating StepId=1.0\n", Exit{Code: 2},
			"slurmstepd-n1: error: execve(): /nonexistent/all_reduce_perf: No such file or directory"},
		{"# nccl-tests table\nslurmstepd: error: execve(): bad interpreter(/nonexistent/sh): No such file or directory\nsrun: error: n2: task 1: Exited with exit code 2\n", Exit{Code: 2},
			"slurmstepd: error: execve(): bad interpreter(/nonexistent/sh): No such file or directory"},
		// A step that waited for resources: never created, whatever srun's status; or created, and ran.
		{"srun: Job 7 step creation temporarily disabled, retrying (Requested nodes are busy)\nsrun: Job 7 step creation still disabled, retrying (Requested nodes are busy)\nsrun: Cancelled pending step for job 7\n",
			Exit{Code: -1, Signal: syscall.SIGTERM}, "srun: Job 7 step creation temporarily disabled, retrying (Requested nodes are busy): the step was never created"},
		{"srun: Job 7 step creation temporarily disabled, retrying (Requested nodes are busy)\nsrun: Step created for StepId=7.3\nsrun: error: n1: task 0: Exited with exit code 3\n", Exit{Code: 3}, ""},
	} {
		if got := (Srun{}).LaunchFailure([]byte(tc.output), tc.e); got != tc.want {
			t.Errorf("LaunchFailure(%q, %+v) = %q, want %q", tc.output, tc.e, got, tc.want)
		}
	}
}

// TestSrunStepNeverCreated: a trial whose step waited for resources until
// the timeout (the last step's nodes still being cleared; the CPUs of the
// step nccltune runs in, where a wrapper's srun has no --overlap) fails as
// a launch with srun's word, not as a hang of its settings, under every
// launcher whose command may run srun (torchrun's wrapper, a training
// command's script).
func TestSrunStepNeverCreated(t *testing.T) {
	srun := script(t, `echo "srun: Job 7 step creation temporarily disabled, retrying (Requested nodes are busy)" >&2; exec sleep 300`)
	for _, l := range []Launcher{Srun{Command: srun, Nodes: 1, TasksPerNode: 1}, Torchrun{Command: srun, NProcPerNode: 1, NNodes: 2, RdzvEndpoint: "node1:29400"}, Local{}} {
		r := &Runner{Launcher: l, BaseEnv: BaseEnv(), Grace: time.Second}
		job := tableJob(srun)
		job.Timeout = time.Second
		res := r.Run(context.Background(), job)
		want := "srun: Job 7 step creation temporarily disabled, retrying (Requested nodes are busy): the step was never created"
		if res.Failure == nil || res.Failure.Kind != FailLaunch || res.Failure.Reason != want {
			t.Errorf("%T: failure = %v, want launch: %s\n%s", l, res.Failure, want, res.Output)
		}
	}
}

// TestSrunFailureDetail: the ranks' last words, not srun's and
// slurmstepd's lines that follow them as a failed step is ended.
func TestSrunFailureDetail(t *testing.T) {
	ended := "srun: error: n1: task 1: Exited with exit code 1\nsrun: launch/slurm: _step_signal: Terminating StepId=1.0\n" +
		"slurmstepd-n1: error: *** STEP 1.0 ON n1 CANCELLED AT 2026-12-06T05:20:05 ***\nslurmstepd: error: *** STEP 1.0 ON n1 CANCELLED ***\n" +
		"srun: error: n1: tasks 0,2-3: Terminated\nsrun: Force Terminated StepId=1.0\n"
	for _, tc := range []struct{ output, want string }{
		{"ValueError: no data\r\nn1:42:42 [0] NCCL INFO comm 0x1 rank 0 nranks 4 - Init COMPLETE\n" + ended, "ValueError: no data"},
		{ended, "srun: error: n1: task 1: Exited with exit code 1"},
	} {
		if got := (Srun{}).FailureDetail([]byte(tc.output)); got != tc.want {
			t.Errorf("FailureDetail(%q) = %q, want %q", tc.output, got, tc.want)
		}
	}
}

func TestSrunRankExit(t *testing.T) {
	for _, tc := range []struct {
		output string
		srun   Exit
		want   Exit
	}{
		{"srun: error: n1: task 1: Exited with exit code 3\nsrun: error: n1: tasks 0,2-3: Terminated\n", Exit{Code: 143}, Exit{Code: 3}},
		{"table\nsrun: error: gpu-07: task 12: Segmentation fault (core dumped)\nsrun: error: gpu-08: tasks 0-11,13-15: Terminated\n",
			Exit{Code: 143}, Exit{Code: -1, Signal: syscall.SIGSEGV}},
		{"srun: error: n1: tasks 0-3: Killed\n", Exit{Code: 137}, Exit{Code: -1, Signal: syscall.SIGKILL}},
		{"srun: error: n1: task 0: Something new\n", Exit{Code: 1}, Exit{Code: 1}},
		{"srun: error: Unable to create step for job 7: Invalid generic resource specification\n", Exit{Code: 1}, Exit{Code: 1}},
		{"no report\n", Exit{Code: 3}, Exit{Code: 3}},
		// No failure srun reports: a rank's own output.
		{"srun: error: n1: task 0: Exited with exit code 0\n", Exit{Code: 143}, Exit{Code: 143}},
		{"srun: error: n1: task 1: Exited with exit code 3\n", Exit{Code: -1, Signal: syscall.SIGKILL}, Exit{Code: -1, Signal: syscall.SIGKILL}}, // srun itself killed
	} {
		if got := (Srun{}).RankExit([]byte(tc.output), tc.srun); got != tc.want {
			t.Errorf("RankExit(%q, %+v) = %+v, want %+v", tc.output, tc.srun, got, tc.want)
		}
	}
}

// TestSrunInStep runs a trial as nccltune does when it runs in a task of a
// step of its own (srun --mpi=pmi2 -N 2 -n 2 nccltune run ...): the trial's
// step is created beside that step, which holds the allocation's CPUs (it
// waited for them until the timeout), its 4 ranks sit in blocks of 2 per
// node (srun took the outer step's SLURM_DISTRIBUTION=cyclic as its own),
// and no rank sees that step's PMI wiring (PMI_RANK=0, PMI_SIZE=2, PMI_FD
// in every rank of a trial whose step runs --mpi=none).
func TestSrunInStep(t *testing.T) {
	c := slurmtest.Start(t, 2)
	c.Alloc(t, 8)
	out := filepath.Join(t.TempDir(), "out")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "srun", "--mpi=pmi2", "-N", "2", "-n", "2", os.Args[0], "-test.run=^TestSrunInStepTask$", "-test.v")
	cmd.Env = append(os.Environ(), inStepOutput+"="+out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, b)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for rank := range 4 {
		if line := fmt.Sprintf("rank %d on n%d, PMI %q\n", rank, rank/2+1, "/"); !strings.Contains(string(got), line) {
			t.Errorf("no line %q in the trial's output:\n%s", line, got)
		}
	}
}

// inStepOutput names the file where TestSrunInStepTask writes its trial's output.
const inStepOutput = "NCCLTUNE_TEST_IN_STEP"

// TestSrunInStepTask is TestSrunInStep's step's task: its first runs the
// trial, on 2 nodes of 2 ranks.
func TestSrunInStepTask(t *testing.T) {
	out := os.Getenv(inStepOutput)
	if out == "" {
		t.Skip("a task of TestSrunInStep's step")
	}
	if os.Getenv("SLURM_PROCID") != "0" {
		return
	}
	r := &Runner{Launcher: Srun{Nodes: 2, TasksPerNode: 2, Args: []string{"--mpi=none"}}, BaseEnv: BaseEnv()}
	body := `echo "rank $SLURM_PROCID on $SLURMD_NODENAME, PMI \"$PMI_RANK/$PMI_SIZE$PMI_FD\""`
	res := r.Run(context.Background(), Job{Benchmark: DDPStep{Program: []string{"sh", "-c", body}}, Timeout: 20 * time.Second})
	if err := os.WriteFile(out, res.Output, 0o644); err != nil {
		t.Fatal(err)
	}
	if res.Exit.Code != 0 {
		t.Fatalf("exit status %d, failure %v\n%s", res.Exit.Code, res.Failure, res.Output)
	}
}

// nodeFailure is srun's output as Slurm 22.05 gave it when a node of a
// running step went down (scontrol update nodename=n2 state=down), the
// ranks' lines first.
const nodeFailure = "started 3\nstarted 1\nstarted 2\nstarted 0\n" +
	"srun: error: Node failure on n2\n" +
	"srun: Job step aborted: Waiting up to 32 seconds for job step to finish.\n" +
	"slurmstepd-n1: error: *** STEP 1.0 ON n1 CANCELLED AT 2026-12-06T09:56:17 DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***\n" +
	"srun: error: n1: tasks 0-1: Terminated\nsrun: launch/slurm: _step_signal: Terminating StepId=1.0\nsrun: error: n2: tasks 2-3: Terminated\n"

// TestSrunNodeFailure: a step that a failed node ended fails its trial as
// the node's (node), with srun's word, where its ranks' SIGTERM read as the
// settings' crash (signal); a step cancelled otherwise, and a rank that
// prints the words, are no node's failure.
func TestSrunNodeFailure(t *testing.T) {
	// Slurm as it answered with n2 down under job 7, and as it answers
	// with every node up.
	fakeSlurm(t, "JobId=7 JobState=RUNNING NodeList=n[1-2]", "idle\ndown*")
	for _, tc := range []struct{ output, want string }{
		{nodeFailure, "srun: error: Node failure on n2"},
		{"slurmstepd-n1: error: *** JOB 7 ON n1 CANCELLED AT 2026-12-06T09:56:17 DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***\r\n",
			"slurmstepd-n1: error: *** JOB 7 ON n1 CANCELLED AT 2026-12-06T09:56:17 DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***"},
		{"srun: Job step aborted: Waiting up to 32 seconds for job step to finish.\nslurmstepd-n1: error: *** STEP 2.0 ON n1 CANCELLED AT 2026-12-06T09:57:55 ***\n" +
			"srun: error: n1: tasks 0-1: Terminated\n", ""},
		{"retrying: Node failure on n2, DUE TO NODE FAILURE\nsrun: error: n1: task 0: Exited with exit code 1\n", ""},
	} {
		if got := nodeFailureLine([]byte(tc.output)); got != tc.want {
			t.Errorf("nodeFailureLine(%q) = %q, want %q", tc.output, got, tc.want)
		}
	}
	srun := script(t, fmt.Sprintf("printf '%%s' '%s'; exit 143", nodeFailure))
	r := &Runner{Launcher: Srun{Command: srun, Nodes: 2, TasksPerNode: 2}, BaseEnv: BaseEnv()}
	job := tableJob("all_reduce_perf")
	job.Timeout = time.Minute
	res := r.Run(context.Background(), job)
	if res.Failure == nil || res.Failure.Kind != FailNode || res.Failure.Reason != "srun: error: Node failure on n2" {
		t.Errorf("failure = %v, want node: srun: error: Node failure on n2\n%s", res.Failure, res.Output)
	}
	// The job's state alone says so too.
	fakeSlurm(t, "JobId=7 JobState=NODE_FAIL NodeList=n[1-2]", "")
	if got := nodeFailureLine([]byte(nodeFailure)); got != "srun: error: Node failure on n2" {
		t.Errorf("nodeFailureLine of a NODE_FAIL job = %q", got)
	}
	// A rank that prints srun's words, while Slurm has every node up, is
	// no node's failure: held as one, it would stop the campaign on every
	// resume.
	fakeSlurm(t, "JobId=7 JobState=RUNNING NodeList=n[1-2]", "alloc\nmix\ndrain")
	if got := nodeFailureLine([]byte(nodeFailure)); got != "" {
		t.Errorf("nodeFailureLine with every node up = %q, want none", got)
	}
	if res := r.Run(context.Background(), job); res.Failure == nil || res.Failure.Kind == FailNode {
		t.Errorf("failure = %v with every node up, want the ranks' own", res.Failure)
	}
}

// TestNodeFailureUnderAnyLauncher: a srun that another launcher's command
// runs (torchrun's wrapper for several nodes, a training script) says a
// node failed as the srun launcher's does, and its trial is the node's,
// where the ranks' SIGTERM read as the settings' crash.
func TestNodeFailureUnderAnyLauncher(t *testing.T) {
	fakeSlurm(t, "JobId=7 JobState=RUNNING NodeList=n[1-2]", "idle\ndown*")
	wrapper := script(t, fmt.Sprintf("printf '%%s' '%s'; exit 143", nodeFailure))
	for _, l := range []Launcher{Local{}, Torchrun{Command: wrapper}} {
		r := &Runner{Launcher: l, BaseEnv: BaseEnv()}
		res := r.Run(context.Background(), Job{Benchmark: DDPStep{Program: []string{wrapper}}, Timeout: time.Minute})
		if res.Failure == nil || res.Failure.Kind != FailNode || res.Failure.Reason != "srun: error: Node failure on n2" {
			t.Errorf("%T: failure = %v, want node: srun: error: Node failure on n2\n%s", l, res.Failure, res.Output)
		}
	}
}

// ompiNodeLost is Open MPI 4's mpirun's report of a node lost under its
// ranks (help-errmgr-base.txt), the ranks' lines first.
const ompiNodeLost = "started 0\nstarted 1\n" +
	"--------------------------------------------------------------------------\n" +
	"ORTE has lost communication with a remote daemon.\n\n" +
	"  HNP daemon   : [[16919,0],0] on node n1\n" +
	"  Remote daemon: [[16919,0],1] on node n2\n\n" +
	"This is usually due to either a failure of the TCP network\n" +
	"connection to the node, or possibly an internal failure of\n" +
	"the daemon itself. We cannot recover from this failure, and\n" +
	"therefore will terminate the job.\n" +
	"--------------------------------------------------------------------------\n"

// TestMPIRunNodeFailure: Open MPI's mpirun, which starts its daemons under
// Slurm with a srun whose output it discards, says that it lost a node's
// daemon; where Slurm confirms the node down, the trial is the node's, not
// the settings' (exit status 1, nccl-tests' "internal error"). With every
// node up (a daemon that crashed, a network interface mpirun could not
// use), it is the trial's.
func TestMPIRunNodeFailure(t *testing.T) {
	fakeSlurm(t, "JobId=7 JobState=RUNNING NodeList=n[1-2]", "idle\ndown*")
	mpirun := script(t, fmt.Sprintf("printf '%%s' '%s'; exit 1", ompiNodeLost))
	r := &Runner{Launcher: MPIRun{Command: mpirun, NP: 2}, BaseEnv: BaseEnv()}
	job := tableJob("all_reduce_perf")
	job.Timeout = time.Minute
	want := "ORTE has lost communication with a remote daemon. (Remote daemon: [[16919,0],1] on node n2)"
	if res := r.Run(context.Background(), job); res.Failure == nil || res.Failure.Kind != FailNode || res.Failure.Reason != want {
		t.Errorf("failure = %v, want node: %s\n%s", res.Failure, want, res.Output)
	}
	fakeSlurm(t, "JobId=7 JobState=RUNNING NodeList=n[1-2]", "alloc\nmix")
	if res := r.Run(context.Background(), job); res.Failure == nil || res.Failure.Kind == FailNode {
		t.Errorf("failure = %v with every node up, want the trial's own", res.Failure)
	}
}

// fakeSlurm puts on PATH an scontrol that shows job 7 as job and a sinfo
// that lists states, one a line, and sets SLURM_JOB_ID to 7.
func fakeSlurm(t *testing.T, job, states string) {
	t.Helper()
	dir := t.TempDir()
	for name, out := range map[string]string{"scontrol": job, "sinfo": states} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\nprintf '%s\\n' '"+out+"'\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("SLURM_JOB_ID", "7")
}

// TestSrunNodeFailureNoKill: a job that asked for --no-kill goes on
// without the node srun names, which its node list then no longer holds:
// that node's own state confirms the failure.
func TestSrunNodeFailureNoKill(t *testing.T) {
	fakeSlurm(t, "JobId=7 JobState=RUNNING NodeList=n1", "")
	dir := t.TempDir()
	sinfo := "#!/bin/sh\ncase \"$*\" in *n2*) printf 'idle\\ndown*\\n';; *) echo idle;; esac\n"
	if err := os.WriteFile(filepath.Join(dir, "sinfo"), []byte(sinfo), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	if got := nodeFailureLine([]byte(nodeFailure)); got != "srun: error: Node failure on n2" {
		t.Errorf("nodeFailureLine of a node the job went on without = %q", got)
	}
}

// TestSrunNodeFailureSlurmHangs: an scontrol that hangs, a wrapper script
// whose child holds its output open, is given up on after stopTimeout; the
// trial is not held for as long as the child lives.
func TestSrunNodeFailureSlurmHangs(t *testing.T) {
	fakeSlurm(t, "", "")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "scontrol"), []byte("#!/bin/sh\nsleep 30\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	defer func(d time.Duration) { stopTimeout = d }(stopTimeout)
	stopTimeout = time.Second
	start := time.Now()
	if got := nodeFailureLine([]byte(nodeFailure)); got != "" {
		t.Errorf("nodeFailureLine with Slurm unanswering = %q, want none", got)
	}
	if d := time.Since(start); d > stopTimeout+10*time.Second {
		t.Errorf("nodeFailureLine took %v waiting on scontrol", d)
	}
}

// TestSrunAllocationEnded: a trial whose step Slurm ends with the job's
// allocation (here scancel of the job; its time limit and preemption end it
// alike) fails as the allocation's, where its ranks' SIGTERM read as the
// settings' crash; so does the next trial, whose srun finds the job gone,
// where it read as a launch failure and the campaign went on through its
// budget. Open MPI's mpirun, which starts its daemons with srun and
// discards srun's output, says only that it lost a daemon, and then that
// its daemons failed.
func TestSrunAllocationEnded(t *testing.T) {
	launchers := []Launcher{Srun{Nodes: 1, TasksPerNode: 4}}
	if _, err := exec.LookPath("mpirun"); err == nil {
		simtest.RequireMPI(t)
		launchers = append(launchers, MPIRun{NP: 4, Args: []string{"--oversubscribe"}})
	}
	for _, l := range launchers {
		t.Run(fmt.Sprintf("%T", l), func(t *testing.T) {
			c := slurmtest.Start(t, 1)
			job := c.Alloc(t, 4)
			marker := fmt.Sprintf("NCCLTUNE_TEST_HANG=%d", time.Now().UnixNano())
			r := &Runner{Launcher: l, BaseEnv: BaseEnv(), Grace: time.Second}
			hang := Job{Benchmark: DDPStep{Program: []string{"sh", "-c", "echo started; exec sleep 300"}}, Env: []string{marker}, Timeout: time.Minute}
			done := make(chan Result, 1)
			go func() { done <- r.Run(context.Background(), hang) }()
			waitRanks(t, marker)
			c.Output(t, "scancel", job)
			for i, res := range []Result{<-done, r.Run(context.Background(), hang)} {
				if res.Failure == nil || res.Failure.Kind != FailAllocation || !strings.Contains(res.Failure.Reason, "Slurm job "+job) {
					t.Errorf("trial %d: failure = %v, want allocation: Slurm job %s ...\n%s", i, res.Failure, job, res.Output)
				}
			}
			waitGone(t, c, job, marker)
		})
	}
}

// TestAllocationEndedUnderAnyLauncher: where Slurm says the job no longer
// runs (its time limit: JobState=TIMEOUT), a failed trial whose output has
// Slurm's lines is the allocation's under any launcher that runs srun; where
// the job still runs, or nothing of Slurm's is in the output, it is the trial's.
func TestAllocationEndedUnderAnyLauncher(t *testing.T) {
	timeLimit := "started 0\nsrun: Job step aborted: Waiting up to 32 seconds for job step to finish.\n" +
		"slurmstepd-n1: error: *** STEP 7.0 ON n1 CANCELLED AT 2026-12-07T01:00:00 DUE TO TIME LIMIT ***\nsrun: error: n1: tasks 0-1: Terminated\n"
	wrapper := script(t, fmt.Sprintf("printf '%%s' '%s'; exit 143", timeLimit))
	for _, l := range []Launcher{Srun{Command: wrapper, Nodes: 1, TasksPerNode: 2}, Local{}, Torchrun{Command: wrapper}} {
		r := &Runner{Launcher: l, BaseEnv: BaseEnv()}
		job := Job{Benchmark: DDPStep{Program: []string{wrapper}}, Timeout: time.Minute}
		fakeSlurm(t, "JobId=7 JobState=TIMEOUT NodeList=n1", "idle")
		if res := r.Run(context.Background(), job); res.Failure == nil || res.Failure.Kind != FailAllocation || res.Failure.Reason != "Slurm job 7 no longer runs (JobState=TIMEOUT)" {
			t.Errorf("%T: failure = %v, want allocation\n%s", l, res.Failure, res.Output)
		}
		fakeSlurm(t, "JobId=7 JobState=RUNNING NodeList=n1", "idle")
		// The job running, the step ran past a time limit of its own (TestStepTimeLimit).
		if res := r.Run(context.Background(), job); res.Failure == nil || res.Failure.Kind != FailTimeout {
			t.Errorf("%T: failure = %v with the job running, want the trial's own", l, res.Failure)
		}
	}
	// A job slurmctld purged, once ended: the next trial's srun finds it gone.
	fakeSlurm(t, "", "")
	gone := filepath.Join(t.TempDir(), "scontrol")
	if err := os.WriteFile(gone, []byte("#!/bin/sh\necho 'slurm_load_jobs error: Invalid job id specified' >&2; exit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", filepath.Dir(gone)+string(os.PathListSeparator)+os.Getenv("PATH"))
	expired := script(t, `echo "srun: error: Slurm job 7 has expired" >&2; exit 1`)
	r := &Runner{Launcher: Srun{Command: expired, Nodes: 1, TasksPerNode: 2}, BaseEnv: BaseEnv()}
	if res := r.Run(context.Background(), tableJob("all_reduce_perf")); res.Failure == nil || res.Failure.Kind != FailAllocation || res.Failure.Reason != "Slurm job 7 no longer runs: slurmctld no longer knows it" {
		t.Errorf("failure = %v of a purged job, want allocation\n%s", res.Failure, res.Output)
	}
	fakeSlurm(t, "JobId=7 JobState=TIMEOUT NodeList=n1", "idle")
	r = &Runner{Launcher: Local{}, BaseEnv: BaseEnv()}
	if res := r.Run(context.Background(), Job{Benchmark: DDPStep{Program: []string{"sh", "-c", "echo no Slurm here; exit 3"}}, Timeout: time.Minute}); res.Failure == nil || res.Failure.Kind != FailExit {
		t.Errorf("failure = %v of a trial that ran no srun, want the trial's own", res.Failure)
	}
	// A launch that failed under a launcher that starts nothing through
	// Slurm, with an ended job's id left in the environment (a shell kept
	// from a finished salloc): the program is missing, whatever Slurm says.
	broken := filepath.Join(t.TempDir(), "torchrun.out")
	if err := os.WriteFile(broken, []byte(torchrunBroken), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, l := range []Launcher{Local{}, Torchrun{Command: script(t, `cat '`+broken+`' >&2; exit 1`)}} {
		r = &Runner{Launcher: l, BaseEnv: BaseEnv()}
		if res := r.Run(context.Background(), Job{Benchmark: DDPStep{Program: []string{filepath.Join(t.TempDir(), "missing")}}, Timeout: time.Minute}); res.Failure == nil || res.Failure.Kind != FailLaunch {
			t.Errorf("%T: failure = %v of a program that never started, want launch\n%s", l, res.Failure, res.Output)
		}
	}
}

// TestAllocationEndedUnderMPIRunSaysNothingOfSlurm: where scancel ends the
// job under mpirun, Slurm signals the ranks and mpirun's daemons at once,
// and mpirun may tell of a rank's signal before it loses a daemon, with no
// line of Slurm's in the output (TestSrunAllocationEnded, once in CI): a
// trial failed under a launcher that starts its ranks through Slurm is the
// allocation's wherever Slurm says the job no longer runs.
func TestAllocationEndedUnderMPIRunSaysNothingOfSlurm(t *testing.T) {
	signalled := "started\nmpirun noticed that process rank 0 with PID 7336 on node n1 exited on signal 15 (Terminated).\n"
	wrapper := script(t, fmt.Sprintf("printf '%s'; exit 143", signalled))
	for _, l := range []Launcher{MPIRun{Command: wrapper, NP: 2}, Srun{Command: wrapper, Nodes: 1, TasksPerNode: 2}} {
		r := &Runner{Launcher: l, BaseEnv: BaseEnv()}
		job := Job{Benchmark: DDPStep{Program: []string{"true"}}, Timeout: time.Minute}
		fakeSlurm(t, "JobId=7 JobState=CANCELLED NodeList=n1", "idle")
		if res := r.Run(context.Background(), job); res.Failure == nil || res.Failure.Kind != FailAllocation || res.Failure.Reason != "Slurm job 7 no longer runs (JobState=CANCELLED)" {
			t.Errorf("%T: failure = %v, want allocation\n%s", l, res.Failure, res.Output)
		}
		fakeSlurm(t, "JobId=7 JobState=RUNNING NodeList=n1", "idle")
		if res := r.Run(context.Background(), job); res.Failure == nil || res.Failure.Kind == FailAllocation {
			t.Errorf("%T: failure = %v with the job running, want the trial's own", l, res.Failure)
		}
	}
}

// TestArrayTaskRunning: the last task of a job array to start is the
// array's own job record, whose id (SLURM_JOB_ID) scontrol reads as the
// whole array's: every task's record, the earlier ones completed. A trial
// failed in that task, which runs, is the trial's own.
func TestArrayTaskRunning(t *testing.T) {
	c := slurmtest.Start(t, 1)
	id := strings.TrimSpace(c.Output(t, "sbatch", "--parsable", "--array=0-1%1", "-n1", "-o", "/dev/null", "--wrap", "[ $SLURM_ARRAY_TASK_ID = 0 ] || sleep 60"))
	t.Cleanup(func() { c.Command("scancel", id).Run() })
	running := regexp.MustCompile(`(?m)^JobId=` + id + ` ArrayJobId=` + id + ` ArrayTaskId=1 .*JobState=RUNNING`)
	for deadline := time.Now().Add(30 * time.Second); !running.MatchString(c.Output(t, "scontrol", "-o", "show", "job", id)); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("task 1 of array %s never ran", id)
		}
	}
	t.Setenv("SLURM_CONF", c.Conf)
	t.Setenv("SLURM_JOB_ID", id)
	wrapper := script(t, "echo 'mpirun noticed that process rank 0 with PID 7336 on node n1 exited on signal 6 (Aborted).'; exit 134")
	r := &Runner{Launcher: MPIRun{Command: wrapper, NP: 2}, BaseEnv: BaseEnv()}
	if res := r.Run(context.Background(), Job{Benchmark: DDPStep{Program: []string{"true"}}, Timeout: time.Minute}); res.Failure == nil || res.Failure.Kind == FailAllocation {
		t.Errorf("failure = %v in a running array task, want the trial's own\n%s", res.Failure, c.Output(t, "scontrol", "-o", "show", "job", id))
	}
}

// TestMPIRunDaemonsFailedUnderSlurm: Open MPI's mpirun in an allocation
// starts its daemons with srun; daemons that died before they called back
// (here an orte_launch_agent that exits at once; a network mpirun cannot be
// reached on) started no rank, and mpirun exits 1: a launch that failed,
// where it read as an exit of the settings.
func TestMPIRunDaemonsFailedUnderSlurm(t *testing.T) {
	simtest.RequireMPI(t)
	c := slurmtest.Start(t, 2)
	c.Alloc(t, 4)
	r := &Runner{Launcher: MPIRun{NP: 4, Args: []string{"--oversubscribe", "--mca", "orte_launch_agent", "/bin/false"}}, BaseEnv: BaseEnv()}
	res := r.Run(context.Background(), Job{Benchmark: DDPStep{Program: []string{"sh", "-c", "echo started"}}, Timeout: time.Minute})
	want := "An ORTE daemon has unexpectedly failed after launch and before communicating back to mpirun."
	if res.Failure == nil || res.Failure.Kind != FailLaunch || !strings.HasPrefix(res.Failure.Reason, want) {
		t.Errorf("failure = %v, want launch: %s\n%s", res.Failure, want, res.Output)
	}
}

// TestKilledNCCLTuneCancelsSteps: nccltune killed (kill -9) while a trial's
// srun cannot act on SIGTERM (stopped here, as one stuck would be): the
// trial's supervisor, told by Pdeathsig, ends the tree, srun and the child
// that would cancel its step with it, and must cancel the step itself;
// nccltune, which cancels it otherwise, is gone. Its ranks ran on until
// the job ended.
func TestKilledNCCLTuneCancelsSteps(t *testing.T) {
	if os.Getenv("RUNNER_TEST_STUCK_SRUN") != "" {
		r := &Runner{Launcher: Srun{Nodes: 1, TasksPerNode: 4}, BaseEnv: BaseEnv(), Grace: time.Second}
		r.Run(context.Background(), Job{Benchmark: DDPStep{Program: []string{"sh", "-c", "echo started; exec sleep 300"}}, Timeout: time.Hour})
		return
	}
	c := slurmtest.Start(t, 1)
	job := c.Alloc(t, 4)
	marker := fmt.Sprintf("NCCLTUNE_TEST_HANG=%d", time.Now().UnixNano())
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledNCCLTuneCancelsSteps$")
	cmd.Env = append(os.Environ(), "RUNNER_TEST_STUCK_SRUN=1", marker, simtest.Env+"=0")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	srun := waitRanks(t, marker)
	if err := syscall.Kill(srun, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	waitGone(t, c, job, marker)
}

// TestLabelledRanks: launcher.args may have the launcher label each rank's
// lines, srun --label ("0: ", " 0: " of ten tasks or more) or Hydra's -l
// (-prepend-rank, "[0] "), as nccl-tests' table reads through. A user's
// metric read none where its regex is anchored (every trial unparsable), and
// took every rank's lines for one rank's, so that skip dropped the first
// values of the ranks together: 1/505 ms, the median of two ranks' warm-up
// steps and timed ones, for a step of 10 ms.
func TestLabelledRanks(t *testing.T) {
	for _, tc := range []struct {
		launcher space.LauncherSettings
		output   string
	}{
		{space.LauncherSettings{Kind: "srun", Args: []string{"-l"}}, "0: step time: 1000 ms\n1: step time: 1000 ms\n 1: step time: 1000 ms\n 0: step time: 1000 ms\n0: step time: 10 ms\n1: step time: 10 ms\n"},
		{space.LauncherSettings{Kind: "srun", Args: []string{"--label"}}, "0: step time: 1000 ms\n0: step time: 1000 ms\n1: step time: 1000 ms\n1: step time: 1000 ms\n1: step time: 10 ms\n0: step time: 10 ms\n"},
		{space.LauncherSettings{Kind: "srun", Args: []string{"-lu"}}, "P0 0: step time: 1000 ms\nP0 1: step time: 1000 ms\nP0 0: step time: 1000 ms\nP0 1: step time: 1000 ms\nP0 1: step time: 10 ms\nP0 0: step time: 10 ms\n"},
		{space.LauncherSettings{Kind: "mpirun", Flavor: "mpich", Args: []string{"-prepend-rank"}}, "[0] step time: 1000 ms\n[1] step time: 1000 ms\n[1] step time: 1000 ms\n[0] step time: 1000 ms\n[0] step time: 10 ms\n[1] step time: 10 ms\n"},
		// torchrun --tee's prefix names the workers' role, "default" unless --role gives one.
		{space.LauncherSettings{Kind: "torchrun", Args: []string{"--tee", "3", "--role", "trainer"}}, "[trainer0]:step time: 1000 ms\n[trainer1]:step time: 1000 ms\n[trainer1]:step time: 1000 ms\n[trainer0]:step time: 1000 ms\n[trainer0]:step time: 10 ms\n[trainer1]:step time: 10 ms\n"},
		{space.LauncherSettings{Kind: "torchrun", Args: []string{"--role=t.x", "--tee=3"}}, "[t.x0]:step time: 1000 ms\n[t.x1]:step time: 1000 ms\n[t.x1]:[rank1]:step time: 1000 ms\n[t.x0]:step time: 1000 ms\n[t.x0]:step time: 10 ms\n[t.x1]:step time: 10 ms\n"},
	} {
		for _, regex := range []string{`^step time: ([0-9.]+) ms`, `step time: ([0-9.]+) ms`} {
			m, f := readMetric(t, tc.launcher, space.Metric{Regex: regex, Goal: "min", Skip: 2}, tc.output)
			if f != nil || m.Value != 1/10.0 {
				t.Errorf("%s %q, %s: failure %v, measurement %+v; want each rank's 10 ms", tc.launcher.Kind, tc.launcher.Args, regex, f, m)
			}
		}
	}
	// Under real srun --label.
	c := slurmtest.Start(t, 1)
	c.Alloc(t, 4)
	l := space.LauncherSettings{Kind: "srun", Nodes: 1, TasksPerNode: 2, Args: []string{"--label"}}
	body := `for ms in 1000 1000 10; do echo "step time: $ms ms"; sleep 0.1; done`
	b, _ := newUserCommand(space.BenchmarkSettings{Kind: space.Command, Command: []string{"sh", "-c", body}, Metric: space.Metric{Regex: `^step time: ([0-9.]+) ms`, Goal: "min", Skip: 2}}, l)
	res := (&Runner{Launcher: NewLauncher(l), BaseEnv: BaseEnv()}).Run(context.Background(), Job{Benchmark: b, Timeout: time.Minute})
	if res.Failure != nil || res.Measurement.Value != 1/10.0 {
		t.Errorf("srun --label: failure %v, measurement %+v; want each rank's 10 ms\n%s", res.Failure, res.Measurement, res.Output)
	}
}

// TestStepTimeLimit: a step that Slurm ended at its own time limit
// (launcher.args' --time, or a wrapper's srun --time), the job still
// running, ran past the time it was given: a timeout, as one of
// benchmark.timeout's is, where its ranks' SIGTERM read as a rank killed
// by a signal, under any launcher whose command runs srun.
func TestStepTimeLimit(t *testing.T) {
	out := "started 0\nsrun: Job step aborted: Waiting up to 32 seconds for job step to finish.\n" +
		"slurmstepd-n1: error: *** STEP 7.3 ON n1 CANCELLED AT 2026-12-07T01:00:00 DUE TO TIME LIMIT ***\nsrun: error: n1: tasks 0-1: Terminated\n"
	wrapper := script(t, fmt.Sprintf("printf '%%s' '%s'; exit 143", out))
	fakeSlurm(t, "JobId=7 JobState=RUNNING NodeList=n1", "idle")
	for _, l := range []Launcher{Srun{Command: wrapper, Nodes: 1, TasksPerNode: 2}, Local{}} {
		r := &Runner{Launcher: l, BaseEnv: BaseEnv()}
		res := r.Run(context.Background(), Job{Benchmark: DDPStep{Program: []string{wrapper}}, Timeout: time.Minute})
		if res.Failure == nil || res.Failure.Kind != FailTimeout || !strings.Contains(res.Failure.Reason, "*** STEP 7.3 ON n1 CANCELLED AT 2026-12-07T01:00:00 DUE TO TIME LIMIT ***") {
			t.Errorf("%T: failure = %v, want timeout with Slurm's word\n%s", l, res.Failure, res.Output)
		}
	}
	// Another step's line a rank printed is no word of Slurm's.
	r := &Runner{Launcher: Local{}, BaseEnv: BaseEnv()}
	res := r.Run(context.Background(), Job{Benchmark: DDPStep{Program: []string{"sh", "-c", "echo 'log: slurmstepd-n1: error: *** STEP 7.3 ON n1 CANCELLED AT 2026-12-07T01:00:00 DUE TO TIME LIMIT ***'; exit 3"}}, Timeout: time.Minute})
	if res.Failure == nil || res.Failure.Kind == FailTimeout {
		t.Errorf("failure = %v of a rank's line, want the trial's own", res.Failure)
	}
}

// hungStep is a trial whose step's ranks hang on a one-node cluster of an
// allocation of four tasks, each rank holding marker in its environment;
// done gets the trial's result, and r runs more trials there.
type hungStep struct {
	c           *slurmtest.Cluster
	job, marker string
	r           *Runner
	done        chan Result
}

func startHungStep(t *testing.T) hungStep {
	t.Helper()
	h := hungStep{c: slurmtest.Start(t, 1), marker: fmt.Sprintf("NCCLTUNE_TEST_HANG=%d", time.Now().UnixNano()), done: make(chan Result)}
	h.job = h.c.Alloc(t, 4)
	h.r = &Runner{Launcher: Srun{Nodes: 1, TasksPerNode: 4}, BaseEnv: append(BaseEnv(), h.marker), Grace: time.Second}
	go func() {
		h.done <- h.r.Run(context.Background(), Job{Benchmark: DDPStep{Program: []string{"sh", "-c", "echo started; exec sleep 300"}}, Timeout: time.Minute})
	}()
	return h
}

// TestSrunKilledLeavesNoStep: a srun killed alone while its step runs (the
// OOM killer's choice, a crash) fails its trial as killed, and leaves no
// step: the child srun forks to cancel the step should it die does so
// before the supervisor ends what the trial left.
func TestSrunKilledLeavesNoStep(t *testing.T) {
	h := startHungStep(t)
	if err := syscall.Kill(waitRanks(t, h.marker), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if res := <-h.done; res.Failure == nil || res.Failure.Kind != FailSignal {
		t.Errorf("failure %v, want srun's SIGKILL\n%s", res.Failure, res.Output)
	}
	waitGone(t, h.c, h.job, h.marker)
}

// TestSrunStepCancelledByHand: a trial's step cancelled from outside
// nccltune (scancel of the step, the job running on) ended its ranks with
// SIGKILL, which was read as the settings' doing; it is a launch that
// failed, with slurmstepd's word. A step that srun ended itself at a failed
// rank (--kill-on-bad-exit: slurmstepd's same words, after srun's report of
// the rank) is still that rank's failure.
func TestSrunStepCancelledByHand(t *testing.T) {
	h := startHungStep(t)
	waitRanks(t, h.marker)
	for _, id := range strings.Fields(h.c.Output(t, "squeue", "--steps", "-h", "-o", "%i", "-j", h.job)) {
		if _, n, _ := strings.Cut(id, "."); n != "" && strings.Trim(n, "0123456789") == "" {
			h.c.Output(t, "scancel", id)
		}
	}
	if res := <-h.done; res.Failure == nil || res.Failure.Kind != FailLaunch || !strings.Contains(res.Failure.Reason, " CANCELLED AT ") {
		t.Errorf("failure %v, want launch, cancelled\n%s", res.Failure, res.Output)
	}
	waitGone(t, h.c, h.job, h.marker)
	res := h.r.Run(context.Background(), Job{Benchmark: DDPStep{Program: []string{"sh", "-c", `[ "$SLURM_PROCID" = 1 ] && exit 3; exec sleep 30`}}, Timeout: time.Minute})
	if res.Failure == nil || res.Failure.Kind == FailLaunch || !strings.Contains(string(res.Output), " CANCELLED AT ") {
		t.Errorf("failed rank: failure %v, want the rank's\n%s", res.Failure, res.Output)
	}
}

// TestSrunLabelledSlurmLines: under srun --label (launcher.args) the lines
// slurmstepd writes into a task's output are labelled as the task's ("0:
// slurmstepd-n1: error: execve(): ..."), and were read as a rank's: a
// benchmark missing on a node failed every trial as nccl-tests' CUDA error
// (execve's ENOENT, exit 2), a failed rank's detail was slurmstepd's word
// that it cancelled the step, and a step's time limit or its node's failure
// went unread.
func TestSrunLabelledSlurmLines(t *testing.T) {
	c := slurmtest.Start(t, 1)
	c.Alloc(t, 4)
	srun := Srun{Nodes: 1, TasksPerNode: 2, Args: []string{"--label"}}
	r := &Runner{Launcher: srun, BaseEnv: BaseEnv(), Grace: time.Second}
	res := r.Run(context.Background(), tableJob("/nonexistent/all_reduce_perf"))
	if res.Failure == nil || res.Failure.Kind != FailLaunch || !strings.Contains(res.Failure.Reason, "execve(): /nonexistent/all_reduce_perf: No such file or directory") {
		t.Errorf("missing benchmark: failure %v, want launch\n%s", res.Failure, res.Output)
	}
	body := `[ "$SLURM_PROCID" = 1 ] && { echo "ValueError: no data" >&2; exit 3; }; exec sleep 30`
	res = r.Run(context.Background(), Job{Benchmark: UserCommand{Argv: []string{"sh", "-c", body}, Metric: space.Metric{Regex: `step ([0-9]+)`, Goal: "min"}}, Timeout: time.Minute})
	if res.Failure == nil || res.Failure.Reason != "exit status 3: 1: ValueError: no data" {
		t.Errorf("failed rank: failure %v, want its own last words\n%s", res.Failure, res.Output)
	}
	// A step's time limit, and a node's failure, in slurmstepd's labelled words.
	limit := script(t, `printf '0: slurmstepd-n1: error: *** STEP 7.3 ON n1 CANCELLED AT 2026-12-07T01:00:00 DUE TO TIME LIMIT ***\nsrun: error: n1: task 0: Terminated\n'; exit 143`)
	fakeSlurm(t, "JobId=7 JobState=RUNNING NodeList=n1", "idle")
	res = (&Runner{Launcher: Srun{Command: limit, Nodes: 1, TasksPerNode: 1}, BaseEnv: BaseEnv()}).Run(context.Background(), tableJob("all_reduce_perf"))
	if res.Failure == nil || res.Failure.Kind != FailTimeout {
		t.Errorf("step time limit: failure %v, want timeout", res.Failure)
	}
	fakeSlurm(t, "JobId=7 JobState=RUNNING NodeList=n[1-2]", "idle\ndown*")
	line := "12: slurmstepd-n1: error: *** STEP 7.0 ON n1 CANCELLED AT 2026-12-06T09:56:17 DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***"
	if got := nodeFailureLine([]byte("started\n" + line + "\n")); got != line {
		t.Errorf("nodeFailureLine = %q, want %q", got, line)
	}
}

// TestMPIRunRefusesItsHostfile: Open MPI's mpirun that refuses its
// hostfile starts no rank and exits 1, which read as nccl-tests' internal
// error, a failure of the trial's settings: a host not in the Slurm
// allocation it runs in, a line it cannot parse, a host given a slot count
// twice.
func TestMPIRunRefusesItsHostfile(t *testing.T) {
	simtest.RequireMPI(t)
	hosts := filepath.Join(t.TempDir(), "hosts")
	run := func(hostfile, reason string) {
		t.Helper()
		if err := os.WriteFile(hosts, []byte(hostfile), 0o644); err != nil {
			t.Fatal(err)
		}
		res := (&Runner{Launcher: MPIRun{NP: 2, Hostfile: hosts}, BaseEnv: BaseEnv()}).Run(context.Background(), tableJob("true"))
		if res.Failure == nil || res.Failure.Kind != FailLaunch || !strings.HasPrefix(res.Failure.Reason, reason) {
			t.Errorf("%q: failure %v, want launch: %s...\n%s", hostfile, res.Failure, reason, res.Output)
		}
	}
	run("localhost slot=2\n", "Open RTE detected a parse error in the hostfile:")
	run("localhost slots=1\nlocalhost slots=1\n", "A hostfile was provided that contains multiple definitions of the slot count for at least one node:")
	c := slurmtest.Start(t, 1)
	c.Alloc(t, 4)
	run("othernode slots=2\n", "A hostfile was provided that contains at least one node not present in the allocation:")
	// A group's hosts, given with --host.
	res := (&Runner{Launcher: MPIRun{NP: 2, Hosts: []Host{{Name: "othernode", Slots: 2}}}, BaseEnv: BaseEnv()}).Run(context.Background(), tableJob("true"))
	if res.Failure == nil || res.Failure.Kind != FailLaunch {
		t.Errorf("--host othernode:2: failure %v, want launch\n%s", res.Failure, res.Output)
	}
}

// TestRegexNamingTheLabel: a regex that names the launcher's label or
// torchrun's role ("^0: step time", rank 0's lines under srun --label, as
// one had to write before labels were read off) reads the line as printed,
// as one naming "[rank0]:" does; it read none once the label was cut, and
// every trial failed as unparsable.
func TestRegexNamingTheLabel(t *testing.T) {
	for _, tc := range []struct {
		launcher space.LauncherSettings
		regex    string
		output   string
	}{
		{space.LauncherSettings{Kind: "srun", Args: []string{"-l"}}, `^0: step time: ([0-9.]+) ms`, "0: step time: 10 ms\n1: step time: 1000 ms\n0: step time: 10 ms\n"},
		{space.LauncherSettings{Kind: "mpirun", Flavor: "mpich", Args: []string{"-l"}}, `^\[0\] step time: ([0-9.]+) ms`, "[0] step time: 10 ms\n[1] step time: 1000 ms\n[0] step time: 10 ms\n"},
		{space.LauncherSettings{Kind: "torchrun", Args: []string{"--tee", "3", "--role", "trainer"}}, `^\[trainer0\]:step time: ([0-9.]+) ms`, "[trainer0]:step time: 10 ms\n[trainer1]:step time: 1000 ms\n[trainer0]:step time: 10 ms\n"},
	} {
		m, f := readMetric(t, tc.launcher, space.Metric{Regex: tc.regex, Goal: "min"}, tc.output)
		if f != nil || m.Value != 1/10.0 {
			t.Errorf("%s %q, %s: failure %v, measurement %+v; want rank 0's 10 ms", tc.launcher.Kind, tc.launcher.Args, tc.regex, f, m)
		}
	}
}

// readMetric reads output, as the capture keeps it, for a user command
// whose metric is metric, launched by launcher.
func readMetric(t *testing.T, launcher space.LauncherSettings, metric space.Metric, output string) (*Measurement, *Failure) {
	t.Helper()
	b, err := newUserCommand(space.BenchmarkSettings{Kind: space.Command, Command: []string{"x"}, Metric: metric}, launcher)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(output, "\n"), "\n")
	lines = slices.DeleteFunc(lines, func(l string) bool { return !b.(LineKeeper).Keep(l) })
	return b.Read(Plan{}, Output{Text: []byte(output), Kept: lines})
}

// TestJobRunningUnderAFlag: scontrol names a running job's state by a flag
// it holds where one is set: CONFIGURING while its nodes boot (salloc
// returns before they have, and steps wait for them), RESIZING while its
// size is updated. Such a job runs: a trial that failed in it is the
// trial's own, where it read as the end of the allocation and stopped the
// campaign. A job that is completing, or suspended, no longer runs.
func TestJobRunningUnderAFlag(t *testing.T) {
	failed := script(t, "echo 'srun: error: n1: task 0: Exited with exit code 3' >&2; exit 3")
	r := &Runner{Launcher: Srun{Command: failed, Nodes: 1, TasksPerNode: 2}, BaseEnv: BaseEnv()}
	for state, ended := range map[string]bool{"RUNNING": false, "CONFIGURING": false, "RESIZING": false, "COMPLETING": true, "SUSPENDED": true} {
		fakeSlurm(t, "JobId=7 JobState="+state+" NodeList=n1", "idle")
		res := r.Run(context.Background(), Job{Benchmark: DDPStep{Program: []string{"true"}}, Timeout: time.Minute})
		if res.Failure == nil || (res.Failure.Kind == FailAllocation) != ended {
			t.Errorf("JobState=%s: failure = %v; the allocation's: %v", state, res.Failure, ended)
		}
	}
}
