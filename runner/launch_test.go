package runner

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nccltune/nccltune/internal/simtest"
	"github.com/nccltune/nccltune/space"
)

// The test binary doubles as the simulator, so mpirun can start it as real ranks.
func TestMain(m *testing.M) { simtest.Main(m) }

// needMPI requires mpirun and returns the environment for its ranks, which act as the simulator.
func needMPI(t *testing.T) []string {
	t.Helper()
	simtest.RequireMPI(t)
	return BaseEnv()
}

func TestMPIRunReachesEveryRank(t *testing.T) {
	env := needMPI(t)
	r := &Runner{Launcher: MPIRun{NP: 4, Args: []string{"--oversubscribe"}}, BaseEnv: env}
	algo := "allreduce:tree,ring;allgather:ring" // commas and a semicolon must survive the launcher
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
		t.Errorf("%d rows of %d ranks, want 3 of 4 (rank 0 prints the table once)", len(res.Measurement.Rows), res.Measurement.Ranks)
	}
	for rank := range 4 {
		want := fmt.Sprintf("[%d] NCCL INFO NCCL_ALGO set by environment to %s.", rank, algo)
		if !strings.Contains(string(res.Output), want) {
			t.Errorf("rank %d did not confirm NCCL_ALGO; output:\n%s", rank, res.Output)
		}
	}
	if !slices.Contains(res.Command, "-x") || res.Command[0] != "mpirun" {
		t.Errorf("command = %v", res.Command)
	}
}

// TestMPIRunOutputPrefixes: launcher.args may have mpirun prefix every line
// of the ranks' output: --tag-output's "[1,0]<stdout>:", and
// --timestamp-output's time, "Sun Dec  6 14:45:56 2026<stdout>:" alone or
// before the tag. The table, the header's ranks and NCCL's log read
// through them.
func TestMPIRunOutputPrefixes(t *testing.T) {
	env := needMPI(t)
	for _, args := range [][]string{{"--tag-output"}, {"--timestamp-output"}, {"--timestamp-output", "--tag-output"}} {
		r := &Runner{Launcher: MPIRun{NP: 2, Args: append([]string{"--oversubscribe"}, args...)}, BaseEnv: env}
		res := r.Run(context.Background(), Job{
			Benchmark: NCCLTests{Program: []string{os.Args[0], "-nodes=1", "-gpus_per_node=8"}, Binary: "all_reduce_perf", Collective: "all_reduce", GPUs: 1, Check: true, Ranks: 2},
			Plan:      Plan{Sizes: space.Sizes{Min: 1024, Max: 4096, Factor: 2}, Iters: 20, Warmup: 5},
			Env:       []string{"NCCL_ALGO=Ring", "NCCL_DEBUG=INFO"},
			Timeout:   time.Minute,
		})
		switch {
		case res.Failure != nil:
			t.Errorf("%q: %v\n%s", args, res.Failure, res.Output)
		case len(res.Measurement.Rows) != 3 || res.Measurement.Ranks != 2:
			t.Errorf("%q: %d rows of %d ranks, want 3 of 2", args, len(res.Measurement.Rows), res.Measurement.Ranks)
		case res.Log.Read["NCCL_ALGO"] != "Ring":
			t.Errorf("%q: NCCL read NCCL_ALGO as %q", args, res.Log.Read["NCCL_ALGO"])
		}
	}
}

// TestMPIRunTimestampedRanks: a user's metric is read per rank, its
// warm-up values skipped on each, where --tag-output tags the ranks' lines,
// --timestamp-output's time before the tag too.
func TestMPIRunTimestampedRanks(t *testing.T) {
	env := needMPI(t)
	body := `for ms in 1000 1000 10; do echo "step time: $ms ms"; sleep 0.1; done`
	for _, args := range [][]string{{"--tag-output"}, {"--timestamp-output", "--tag-output"}} {
		r := &Runner{Launcher: MPIRun{NP: 2, Args: append([]string{"--oversubscribe"}, args...)}, BaseEnv: env}
		bench := UserCommand{Argv: []string{"sh", "-c", body}, Metric: space.Metric{Regex: `step time: ([0-9.]+) ms`, Goal: "min", Skip: 2}}
		bench.regex = regexp.MustCompile(bench.Metric.Regex)
		res := r.Run(context.Background(), Job{Benchmark: bench, Timeout: time.Minute})
		if res.Failure != nil || res.Measurement.Value != 1/10.0 {
			t.Errorf("%q: failure %v, measurement %+v; want every rank's 10 ms, its two warm-up steps skipped\n%s", args, res.Failure, res.Measurement, res.Output)
		}
	}
}

// TestMPIRunRanksLineInChunks: mpirun --tag-output passes on what a rank
// wrote of a line ("ms: 1") as a chunk, another rank's line after it, and
// the rest of the line ("00") as another: the rank's line reads 100.
func TestMPIRunRanksLineInChunks(t *testing.T) {
	env := needMPI(t)
	body := `if [ "$OMPI_COMM_WORLD_RANK" = 0 ]; then printf 'step 0 ms: 1'; sleep 0.5; printf '00\n'; else sleep 0.2; echo 'step 0 ms: 100'; fi`
	for _, args := range [][]string{{"--tag-output"}, {"--timestamp-output", "--tag-output"}} {
		r := &Runner{Launcher: MPIRun{NP: 2, Args: append([]string{"--oversubscribe"}, args...)}, BaseEnv: env}
		bench := UserCommand{Argv: []string{"sh", "-c", body}, Metric: space.Metric{Regex: `ms: ([0-9.]+)`, Goal: "max"}}
		bench.regex = regexp.MustCompile(bench.Metric.Regex)
		res := r.Run(context.Background(), Job{Benchmark: bench, Timeout: time.Minute})
		if res.Failure != nil || res.Measurement.Value != 100 {
			t.Errorf("%q: failure %v, measurement %+v; want each rank's 100\n%s", args, res.Failure, res.Measurement, res.Output)
		}
	}
}

func TestMPIRunTimeoutLeavesNoRank(t *testing.T) {
	env := needMPI(t)
	marker := fmt.Sprintf("nccltune-hang-%d", time.Now().UnixNano())
	body := "trap '' TERM\nsleep 300 # " + marker + "\n"
	r := &Runner{Launcher: MPIRun{NP: 2, Args: []string{"--oversubscribe"}}, BaseEnv: env, Grace: 500 * time.Millisecond}
	res := r.Run(context.Background(), Job{Benchmark: DDPStep{Program: []string{"sh", "-c", body, marker}}, Timeout: 2 * time.Second})
	if res.Failure == nil || res.Failure.Kind != FailTimeout {
		t.Fatalf("failure = %v\n%s", res.Failure, res.Output)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		out, _ := exec.Command("pgrep", "-f", marker).Output()
		if len(strings.TrimSpace(string(out))) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("ranks survived the timeout: pids %s", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestMPIRunLaunchFailure: mpirun that starts no rank fails the trial as a
// launch, with Open MPI's report: too few slots exited 1, read as
// nccl-tests' "internal error", and a missing executable 132, read as a
// rank killed by SIGILL.
// TestMPIRunOwnTimeLimit: a trial that mpirun ends at its own time limit
// (MPIEXEC_TIMEOUT in the caller's environment, or --timeout in
// launcher.args), which Open MPI 4.1.4 reports and exits 110 for, ran past
// a time limit as one past benchmark.timeout does: it failed as kind exit,
// "exit status 110", with nothing of why.
func TestMPIRunOwnTimeLimit(t *testing.T) {
	needMPI(t)
	for _, tc := range []struct {
		env  string
		args []string
	}{{"MPIEXEC_TIMEOUT=1", nil}, {"", []string{"--timeout", "1"}}} {
		r := &Runner{Launcher: MPIRun{NP: 2, Args: append([]string{"--oversubscribe"}, tc.args...)}, BaseEnv: append(BaseEnv(), tc.env)}
		job := tableJob(script(t, "sleep 30"))
		job.Timeout = time.Minute
		res := r.Run(context.Background(), job)
		want := "ran past mpirun's own time limit (--timeout, MPIEXEC_TIMEOUT): Timeout: 1 seconds"
		if res.Failure == nil || res.Failure.Kind != FailTimeout || !strings.Contains(res.Failure.Reason, want) {
			t.Errorf("%s %q: failure %v; want timeout: ...%s\n%s", tc.env, tc.args, res.Failure, want, res.Output)
		}
	}
}

func TestMPIRunLaunchFailure(t *testing.T) {
	env := needMPI(t)
	// A script whose interpreter is missing: Open MPI's execve fails past its
	// own checks, and mpirun exits 131, read as a rank killed by SIGQUIT.
	badInterpreter := filepath.Join(t.TempDir(), "all_reduce_perf")
	if err := os.WriteFile(badInterpreter, []byte("#!/nonexistent/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mpirun  MPIRun
		program string
		reason  string
	}{
		{MPIRun{NP: 4096}, "true", "There are not enough slots available in the system to satisfy the 4096 slots that were requested by the application:"},
		{MPIRun{NP: 1}, "/nonexistent/all_reduce_perf", "mpirun was unable to launch the specified application as it could not access or execute an executable:"},
		{MPIRun{NP: 2, Args: []string{"--oversubscribe"}}, badInterpreter, `Open MPI tried to fork a new process via the "execve" system call but failed.  ` +
			"Open MPI checks many things before attempting to launch a child process, but nothing is perfect. This error may be indicative of another problem on the target host," +
			" or even something as silly as having specified a directory for your application. Your job will now abort."},
	} {
		r := &Runner{Launcher: tc.mpirun, BaseEnv: env}
		job := tableJob(tc.program)
		res := r.Run(context.Background(), job)
		if res.Failure == nil || res.Failure.Kind != FailLaunch || res.Failure.Reason != tc.reason {
			t.Errorf("%+v: failure = %v; want launch: %s\noutput: %s", tc.mpirun, res.Failure, tc.reason, res.Output)
		}
	}
}

// TestMPIRunUnlistedLaunchFailure: a report of Open MPI's that nccltune
// does not know is still a launch's where mpirun counts ranks that did not start.
func TestMPIRunUnlistedLaunchFailure(t *testing.T) {
	rule := strings.Repeat("-", 74)
	output := rule + "\nmpirun could not do something new:\n\n  Node: vm\n" + rule + "\n1 total process failed to start\n"
	if got, want := (MPIRun{}).LaunchFailure([]byte(output), Exit{Code: 1}), "1 total process failed to start"; got != want {
		t.Errorf("LaunchFailure = %q, want %q", got, want)
	}
}

// TestMPIRunRefusesItsOptions: mpirun that refuses to map or bind the
// ranks as launcher.map_by, bind_to or args ask (an unknown policy, more
// ranks bound than cores, more cores per rank than there are), or to run
// as root without Open MPI's consent, starts no rank and exits 1, which
// read as nccl-tests' "internal error": a failure of the trial's settings,
// which none of them can mend.
func TestMPIRunRefusesItsOptions(t *testing.T) {
	env := needMPI(t)
	type tc struct {
		mpirun MPIRun
		env    []string
		reason string
	}
	many := 4 * runtime.NumCPU()
	cases := []tc{
		{MPIRun{NP: 2, MapBy: "foo", Args: []string{"--oversubscribe"}}, env, "The specified mapping policy is not recognized:"},
		{MPIRun{NP: 2, BindTo: "foo", Args: []string{"--oversubscribe"}}, env, "The specified binding policy is not recognized:"},
		{MPIRun{NP: 2, MapBy: "ppr:1:foo", Args: []string{"--oversubscribe"}}, env, "An unrecognized value was given for the number of processes per resource (ppr)"},
		{MPIRun{NP: many, BindTo: "core", Args: []string{"--oversubscribe"}}, env, "A request was made to bind to that would result in binding more processes than cpus on a resource:"},
		{MPIRun{NP: 2, MapBy: "socket:PE=4096", Args: []string{"--oversubscribe"}}, env, "A request for multiple cpus-per-proc was given"},
	}
	// An option mpirun does not know, in launcher.args.
	cases = append(cases, tc{MPIRun{NP: 1, Args: []string{"--no-such-option"}}, env, `mpirun: Error: unknown option "--no-such-option"`})
	if os.Geteuid() == 0 {
		asRoot := slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, "OMPI_ALLOW_RUN_AS_ROOT") })
		cases = append(cases, tc{MPIRun{NP: 1}, asRoot, "mpirun has detected an attempt to run as root."})
	}
	for _, tc := range cases {
		r := &Runner{Launcher: tc.mpirun, BaseEnv: tc.env}
		res := r.Run(context.Background(), tableJob("true"))
		if res.Failure == nil || res.Failure.Kind != FailLaunch || !strings.HasPrefix(res.Failure.Reason, tc.reason) {
			t.Errorf("%+v: failure = %v; want launch: %s...\noutput: %s", tc.mpirun, res.Failure, tc.reason, res.Output)
		}
	}
}

// TestMPIRunFailureDetail: a user's command whose rank fails under mpirun
// fails with the rank's last words, not the last line of Open MPI's report
// that follows them ("Exit code:    1"), nor NCCL's INFO lines.
func TestMPIRunFailureDetail(t *testing.T) {
	env := needMPI(t)
	for _, tc := range []struct{ body, reason string }{
		{`[ "$OMPI_COMM_WORLD_RANK" = 1 ] && { echo "ValueError: no data" >&2; exit 1; }; echo "vm:42:42 [0] NCCL INFO comm 0x1 rank 0 nranks 2 - Init COMPLETE"; exec sleep 30`,
			"exit status 1: ValueError: no data"},
		{`[ "$OMPI_COMM_WORLD_RANK" = 1 ] && { echo "ValueError: no data" >&2; kill -SEGV $$; }; exec sleep 30`,
			"exit status 139: a process killed by signal 11 (segmentation fault): ValueError: no data"},
	} {
		r := &Runner{Launcher: MPIRun{NP: 2, Args: []string{"--oversubscribe"}}, BaseEnv: env}
		res := r.Run(context.Background(), Job{Benchmark: UserCommand{Argv: []string{"sh", "-c", tc.body}, Metric: space.Metric{Regex: `step ([0-9]+)`, Goal: "min"}}, Timeout: time.Minute})
		if res.Failure == nil || res.Failure.Reason != tc.reason {
			t.Errorf("failure = %v; want %q\noutput: %s", res.Failure, tc.reason, res.Output)
		}
	}
}

// TestMPIRunFailureDetailReports: the detail is the ranks' last words above
// mpirun's reports, however they and the ranks' other lines fall.
func TestMPIRunFailureDetailReports(t *testing.T) {
	// Hydra's report, framed by '='; a report alone leaves the detail to the output's last line.
	hydra := "ValueError: bad\n\n===================================================================================\n=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n=   EXIT CODE: 1\n===================================================================================\n"
	// A rank's INFO line between Open MPI's two reports, as the ranks' output
	// and mpirun's arrived apart on a loaded machine.
	between := "ValueError: no data\n----------\nPrimary job  terminated normally, but 1 process returned\n" +
		"a non-zero exit code. Per user-direction, the job has been aborted.\n----------\n" +
		"vm:42:42 [0] NCCL INFO comm 0x1 rank 0 nranks 2 - Init COMPLETE\n----------\n" +
		"mpirun detected that one or more processes exited with non-zero status\n  Exit code:    1\n----------\n"
	report := "----------\nmpirun detected that one or more processes exited with non-zero status\n  Exit code:    1\n----------\n"
	// A rule the rank printed after its last words, with no opening rule
	// above it, is no report's: the words above it are the detail.
	ruled := "ValueError: no data\n----------------------------------------\n"
	for output, want := range map[string]string{
		hydra: "ValueError: bad",
		// Hydra's closing advice, where the ranks' wait statuses read as a signal.
		"ValueError: bad\n" + hydraReport("=   KILLED BY SIGNAL: 6 (Aborted)", "Aborted (signal 6)"): "ValueError: bad",
		between: "ValueError: no data",
		"------------------\nExit code: 1\n------------------\n": "",
		ruled + report: "ValueError: no data",
		ruled + "vm:42:42 [1] NCCL INFO comm 0x1 rank 1 nranks 2 - Abort COMPLETE\n" + report: "ValueError: no data",
	} {
		if got := (MPIRun{}).FailureDetail([]byte(output)); got != want {
			t.Errorf("FailureDetail(%q) = %q, want %q", output, got, want)
		}
	}
}

// TestMPIRunRankKilledBySignal: mpirun exits 128+N when a rank is killed by
// signal N, and the trial fails as killed by it.
func TestMPIRunRankKilledBySignal(t *testing.T) {
	env := needMPI(t)
	table := filepath.Join(t.TempDir(), "table.txt")
	if err := os.WriteFile(table, []byte(goodTable), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &Runner{Launcher: MPIRun{NP: 2, Args: []string{"--oversubscribe"}}, BaseEnv: env}
	job := tableJob("rank")
	body := `[ "$OMPI_COMM_WORLD_RANK" = 0 ] && cat ` + table + `; [ "$OMPI_COMM_WORLD_RANK" = 1 ] && kill -KILL $$; exit 0`
	job.Benchmark = NCCLTests{Program: []string{"sh", "-c", body}, Binary: "rank", Collective: "all_reduce", GPUs: 1, Check: true}
	res := r.Run(context.Background(), job)
	if res.Failure == nil || res.Failure.Kind != FailSignal || !strings.Contains(res.Failure.Reason, "exit status 137: a process killed by signal 9 (killed)") {
		t.Fatalf("failure = %v, want a rank killed by SIGKILL\n%s", res.Failure, res.Output)
	}
}

func TestLauncherCommandLines(t *testing.T) {
	bench := []string{"all_reduce_perf", "-g", "1"}
	env := []string{"NCCL_ALGO=Ring,Tree", "NCCL_PROTO=Simple"}
	py := []string{"/usr/bin/python3", "/tmp/step.py", "--steps", "5"}
	if argv, _ := (Torchrun{NProcPerNode: 8, NNodes: 2, RdzvEndpoint: "node1:29400"}).Wrap(py, env); len(argv) < 12 ||
		strings.Join(slices.Delete(argv, 10, 11), " ") != // the rendezvous id, TestTorchrunRdzvID's
			"torchrun --nproc_per_node 8 --nnodes 2 --rdzv_backend c10d --rdzv_endpoint node1:29400 --rdzv_id --no_python /usr/bin/python3 -u /tmp/step.py --steps 5" {
		t.Errorf("torchrun must run the step under its own python: %q", argv)
	}
	for _, tc := range []struct {
		l    Launcher
		want string
	}{
		{Local{}, "all_reduce_perf -g 1"},
		{MPIRun{NP: 16, Hostfile: "hosts", MapBy: "ppr:8:node", BindTo: "none", Args: []string{"--mca", "btl", "^openib"}},
			"mpirun -np 16 --hostfile hosts --map-by ppr:8:node --bind-to none -x NCCL_ALGO -x NCCL_PROTO --mca btl ^openib all_reduce_perf -g 1"},
		{MPIRun{Flavor: "mpich", NP: 2, Hostfile: "hosts", Command: "mpiexec.hydra"},
			"mpiexec.hydra -np 2 -f hosts -genv NCCL_ALGO Ring,Tree -genv NCCL_PROTO Simple all_reduce_perf -g 1"},
		{Srun{Nodes: 2, TasksPerNode: 8, Args: []string{"--mpi=pmix"}},
			"srun --export=ALL --kill-on-bad-exit=1 -N 2 -n 16 --ntasks-per-node 8 --mpi=pmix all_reduce_perf -g 1"},
		{Torchrun{NProcPerNode: 8}, "torchrun --nproc_per_node 8 --standalone --no_python all_reduce_perf -g 1"},
	} {
		argv, err := tc.l.Wrap(bench, env)
		if err != nil || strings.Join(argv, " ") != tc.want {
			t.Errorf("%T: %q, %v\nwant %q", tc.l, strings.Join(argv, " "), err, tc.want)
		}
	}
}

// TestSrunShape: a step's shape is given in full, -N, -n and
// --ntasks-per-node, since srun takes what is not given from the allocation.
func TestSrunShape(t *testing.T) {
	bench := []string{"all_reduce_perf"}
	for _, tc := range []struct {
		srun        Srun
		allocNodes  string // SLURM_JOB_NUM_NODES
		want, error string
	}{
		{Srun{Nodes: 2, TasksPerNode: 8}, "4", "srun --export=ALL --kill-on-bad-exit=1 -N 2 -n 16 --ntasks-per-node 8 all_reduce_perf", ""},
		{Srun{TasksPerNode: 4}, "3", "srun --export=ALL --kill-on-bad-exit=1 -N 3 -n 12 --ntasks-per-node 4 all_reduce_perf", ""},
		{Srun{Nodes: 2}, "4", "srun --export=ALL --kill-on-bad-exit=1 -N 2 -n 2 --ntasks-per-node 1 all_reduce_perf", ""},
		{Srun{Nodes: 1, TasksPerNode: 2, NodeList: []string{"n3"}}, "4", "srun --export=ALL --kill-on-bad-exit=1 -N 1 -n 2 --ntasks-per-node 2 --nodelist=n3 all_reduce_perf", ""},
		{Srun{TasksPerNode: 4}, "", "", `the allocation's is unknown: SLURM_JOB_NUM_NODES = ""`},
		{Srun{TasksPerNode: 4}, "0", "", `SLURM_JOB_NUM_NODES = "0"`},
	} {
		t.Setenv("SLURM_JOB_NUM_NODES", tc.allocNodes)
		argv, err := tc.srun.Wrap(bench, nil)
		if got := strings.Join(argv, " "); got != tc.want || (err == nil) != (tc.error == "") || err != nil && !strings.Contains(err.Error(), tc.error) {
			t.Errorf("%+v in %s nodes: %q, %v\nwant %q, %q", tc.srun, tc.allocNodes, got, err, tc.want, tc.error)
		}
	}
	// Check finds it before any trial runs.
	sh, _ := exec.LookPath("sh")
	t.Setenv("SLURM_JOB_ID", "7")
	t.Setenv("SLURM_JOB_NUM_NODES", "")
	if err := (Srun{Command: sh, TasksPerNode: 4}).Check(); err == nil || !strings.Contains(err.Error(), "SLURM_JOB_NUM_NODES") {
		t.Errorf("Check: %v", err)
	}
	if err := (Srun{Command: sh, Nodes: 2, TasksPerNode: 4}).Check(); err != nil {
		t.Errorf("Check with nodes: %v", err)
	}
}

// TestSrunEnv: srun's input variables that shape a step or its output are
// dropped from its environment; the allocation's job ID and the cluster's
// configuration stay.
func TestSrunEnv(t *testing.T) {
	env := []string{"SLURM_JOB_ID=7", "SLURM_NTASKS=16", "SLURM_NPROCS=16", "SLURM_NNODES=4", "SLURM_JOB_NUM_NODES=4",
		"SLURM_NTASKS_PER_NODE=4", "SLURM_CPUS_PER_TASK=8", "SRUN_CPUS_PER_TASK=8", "SLURM_GPUS_PER_TASK=1",
		"SLURM_DISTRIBUTION=cyclic", "SLURM_LABELIO=1", "SLURM_STDOUTMODE=out", "SLURM_DEBUG=2", "SLURMD_DEBUG=3", "SLURM_UNBUFFEREDIO=1",
		"SLURM_EXIT_ERROR=137", "SLURM_WORKING_DIR=/elsewhere", "SLURM_CPU_BIND=quiet,mask_cpu:0x1", "SLURM_CPU_BIND_TYPE=mask_cpu:",
		"SLURM_CPU_BIND_VERBOSE=quiet", "SLURM_CPU_BIND_LIST=0x1",
		"SLURM_CONF=/etc/slurm/slurm.conf", "SLURM_MPI_TYPE=pmix", "SLURM_JOB_NODELIST=n[1-4]", "PATH=/bin", "SLURM_NTASKS_X=1"}
	want := []string{"SLURM_JOB_ID=7", "SLURM_CPUS_PER_TASK=8", "SRUN_CPUS_PER_TASK=8", "SLURM_GPUS_PER_TASK=1", "SLURM_DISTRIBUTION=cyclic",
		"SLURM_CPU_BIND_TYPE=mask_cpu:", "SLURM_CPU_BIND_VERBOSE=quiet", "SLURM_CPU_BIND_LIST=0x1", "SLURM_CONF=/etc/slurm/slurm.conf",
		"SLURM_MPI_TYPE=pmix", "SLURM_JOB_NODELIST=n[1-4]", "PATH=/bin", "SLURM_NTASKS_X=1"}
	if got := (Srun{}).LauncherEnv(env); !slices.Equal(got, want) {
		t.Errorf("srun's environment %q\nwant %q", got, want)
	}
}

// TestSrunKeepsTheUsersCPUBind: SLURM_CPU_BIND or SLURM_MEM_BIND exported
// in a batch script, or in the shell of a step's task after srun set the
// task's (srun --pty bash; export SLURM_CPU_BIND=none), is the user's
// --cpu-bind, which their job's own srun takes: a trial's step keeps it,
// under any launcher. The one srun set in a step's task, with its parts
// beside it (SLURM_CPU_BIND_VERBOSE, _TYPE, _LIST, as 22.05 sets them), is
// that task's mask and is dropped.
func TestSrunKeepsTheUsersCPUBind(t *testing.T) {
	srunsMask := []string{"SLURM_CPU_BIND_VERBOSE=quiet", "SLURM_CPU_BIND_TYPE=mask_cpu:", "SLURM_CPU_BIND_LIST=0x1",
		"SLURM_MEM_BIND_VERBOSE=quiet", "SLURM_MEM_BIND_TYPE=local", "SLURM_MEM_BIND_LIST="}
	users := []string{"SLURM_CPU_BIND=none", "SLURM_MEM_BIND=none"}
	srunsOwn := []string{"SLURM_CPU_BIND=quiet,mask_cpu:0x1", "SLURM_MEM_BIND=quiet,local"}
	job, step := []string{"SLURM_JOB_ID=7"}, []string{"SLURM_JOB_ID=7", "SLURM_STEP_ID=0"}
	for _, tc := range []struct {
		env, want []string
	}{
		{slices.Concat(job, users), slices.Concat(job, users)},
		{slices.Concat(job, srunsOwn, srunsMask), slices.Concat(job, srunsMask)},
		{slices.Concat(step, users, srunsMask), slices.Concat(job, users)},
		{slices.Concat(step, srunsOwn, srunsMask), job},
	} {
		if got := (Srun{}).LauncherEnv(withoutOuterLaunch(tc.env)); !slices.Equal(got, tc.want) {
			t.Errorf("srun's environment from %q: %q\nwant %q", tc.env, got, tc.want)
		}
		if got := withoutOuterLaunch(tc.env); slices.Contains(tc.want, users[0]) != slices.Contains(got, users[0]) {
			t.Errorf("every launcher's environment from %q: %q", tc.env, got)
		}
	}
}

// TestSrunsPreferredMemBind: srun --mem-bind=prefer,... sets the task's
// SLURM_MEM_BIND with "prefer," between its verbosity and its type, and
// SLURM_MEM_BIND_PREFER beside them (22.05, checked on the real srun here):
// that is srun's binding of the one task nccltune runs in (map_mem:0, its
// NUMA node), which would bind every rank of every trial there, and goes as
// any other binding srun set; the same value the user exported stays.
func TestSrunsPreferredMemBind(t *testing.T) {
	srunsOwn := []string{"SLURM_MEM_BIND=quiet,prefer,map_mem:0", "SLURM_MEM_BIND_LIST=0", "SLURM_MEM_BIND_PREFER=prefer",
		"SLURM_MEM_BIND_TYPE=map_mem:", "SLURM_MEM_BIND_VERBOSE=quiet"}
	step := []string{"SLURM_JOB_ID=7", "SLURM_STEP_ID=0"}
	if got := (Srun{}).LauncherEnv(withoutOuterLaunch(slices.Concat(step, srunsOwn))); !slices.Equal(got, step[:1]) {
		t.Errorf("srun's environment in a step of srun --mem-bind=prefer,map_mem:0: %q", got)
	}
	users := []string{"SLURM_JOB_ID=7", "SLURM_MEM_BIND=quiet,prefer,map_mem:0"}
	if got := (Srun{}).LauncherEnv(withoutOuterLaunch(users)); !slices.Equal(got, users) {
		t.Errorf("srun's environment with the user's own SLURM_MEM_BIND: %q", got)
	}
}

// TestOuterPALSRank: where nccltune runs as a rank of HPE's PALS mpiexec
// (PBS with PALS), every variable that PALS sets in a rank (pals.h's list
// "available for applications": its fd to PALS, the layout and the rank's
// place in it) is that outer launch's, and reaches no trial; a PMI setting
// of the user's stays.
func TestOuterPALSRank(t *testing.T) {
	rank := []string{"PALS_APID=1234", "PALS_APINFO=/var/run/palsd/1234/apinfo", "PALS_RANKID=0", "PALS_NODEID=0",
		"PALS_DEPTH=8", "PALS_LOCAL_RANKID=0", "PALS_LOCAL_SIZE=1", "PALS_SPOOL_DIR=/var/run/palsd/1234", "PALS_FD=5",
		"PMI_RANK=0", "PMI_SIZE=1", "PMI_LOCAL_RANK=0", "PMI_LOCAL_SIZE=1", "PMI_JOBID=1234", "PMI_SHARED_SECRET=99", "PMI_UNIVERSE_SIZE=1"}
	settings := []string{"PATH=/bin", "PMI_NO_FORK=1"}
	if got := withoutOuterLaunch(slices.Concat(settings, rank)); !slices.Equal(got, settings) {
		t.Errorf("a PALS rank's environment: %q, want %q", got, settings)
	}
}

// TestLauncherEnvInStep: where nccltune runs in a task of a Slurm step (its
// variables as srun 22.05 --mpi=pmi2 -N 2 -n 2 set them), no launcher's
// environment keeps what describes that step or wires its tasks (PMI,
// PMIx, --mpi=cray_shasta's PALS; withoutOuterLaunch); the allocation's variables, the cluster's
// configuration and PMIx's MCA parameters stay, and so do the CPUs per
// task of salloc's interactive step, which are the allocation's. Outside
// a step (a batch script's variables) nothing goes.
func TestLauncherEnvInStep(t *testing.T) {
	job := []string{"SLURM_JOB_ID=7", "SLURM_JOBID=7", "SLURM_JOB_NODELIST=n[1-2]", "SLURM_CONF=/etc/slurm/slurm.conf",
		"SLURM_MPI_TYPE=pmi2", "PMIX_MCA_gds=hash", "PATH=/bin"}
	step := append(slices.Clone(job), "SLURM_STEP_ID=0", "SLURM_STEPID=0", "SLURM_STEP_NODELIST=n[1-2]", "SLURM_STEP_NUM_NODES=2",
		"SLURM_STEP_NUM_TASKS=2", "SLURM_STEP_TASKS_PER_NODE=1(x2)", "SLURM_STEP_LAUNCHER_PORT=40175", "SLURM_SRUN_COMM_HOST=127.0.0.1",
		"SLURM_SRUN_COMM_PORT=40175", "SLURM_PROCID=0", "SLURM_LOCALID=0", "SLURM_NODEID=0", "SLURM_GTIDS=0", "SLURM_TASK_PID=22536",
		"SLURM_DISTRIBUTION=cyclic", "PMI_FD=10", "PMI_JOBID=7.0", "PMI_RANK=0", "PMI_SIZE=2", "PMIX_RANK=0", "PMIX_NAMESPACE=slurm.pmix.7.0",
		"PMIX_SERVER_URI2=pmix-server.1;tcp4://127.0.0.1:1", "SLURM_STEP_GPUS=0,1", "SLURM_STEP_RESV_PORTS=12000-12001",
		"SLURM_CPUS_PER_TASK=2", "SLURM_TRES_PER_TASK=cpu:2", "SLURM_CPU_BIND=quiet,corescores", "SLURM_CPU_BIND_VERBOSE=quiet",
		"SLURM_CPU_BIND_TYPE=cores", "SLURM_CPU_BIND_LIST=cores", "SLURM_MEM_BIND=quiet,local", "SLURM_MEM_BIND_VERBOSE=quiet",
		"SLURM_MEM_BIND_TYPE=local", "SLURM_MEM_BIND_LIST=")
	batch := append(slices.Clone(job), "SLURM_PROCID=0", "SLURM_LOCALID=0", "SLURM_DISTRIBUTION=block")
	// salloc -c 2's shell in its interactive step (LaunchParameters=
	// use_interactive_step), as 22.05 sets it: that step asks for no CPUs
	// of its own, and its CPUs per task are salloc's, the allocation's.
	allocCPUs := []string{"SLURM_CPUS_PER_TASK=2", "SLURM_TRES_PER_TASK=cpu=2"}
	interactive := append(slices.Concat(job, allocCPUs), "SLURM_STEP_ID=4294967290", "SLURM_STEPID=4294967290",
		"SLURM_STEP_NUM_TASKS=1", "SLURM_PROCID=0", "SLURM_SRUN_COMM_PORT=35371", "SLURM_CPU_BIND=quiet,mask_cpu:0x1",
		"SLURM_CPU_BIND_VERBOSE=quiet", "SLURM_CPU_BIND_TYPE=mask_cpu:", "SLURM_CPU_BIND_LIST=0x1")
	// A step of srun --mpi=cray_shasta (HPE Cray's PMI): its PALS wiring,
	// by which Cray PMI finds the step's layout and its rank in it.
	cray := append(slices.Clone(job), "SLURM_STEP_ID=1", "PALS_APID=7.1", "PALS_APINFO=/var/spool/slurmd/mpi_cray_shasta/7.1/apinfo",
		"PALS_NODEID=0", "PALS_RANKID=0", "PALS_SPOOL_DIR=/var/spool/slurmd/mpi_cray_shasta/7.1")
	// A rank of MPICH's Hydra with -pmi-port: PMI_PORT and PMI_ID, no PMI_RANK.
	hydraPort := []string{"PATH=/bin", "PMI_PORT=n1:40411", "PMI_ID=1", "MPI_LOCALRANKID=1", "MPI_LOCALNRANKS=2", "PMI_NO_FORK=1"}
	for _, tc := range []struct{ env, want []string }{{step, job}, {batch, batch}, {interactive, slices.Concat(job, allocCPUs)}, {cray, job},
		{hydraPort, []string{"PATH=/bin", "PMI_NO_FORK=1"}}} {
		if got := withoutOuterLaunch(tc.env); !slices.Equal(got, tc.want) {
			t.Errorf("environment from %q:\n%q\nwant %q", tc.env, got, tc.want)
		}
	}
}

// TestMPIRunEnv: the caller's MCA parameters by which mpirun would hand
// the ranks an NCCL variable past the trial's -x (mca_base_env_list, its
// delimiter, files of parameters or variables; Open MPI 4's and 5's prefixes)
// or write their output as XML (orte_xml_output, orte_xml_file, --xml's),
// MPICH's mpiexec's rank labels (MPIEXEC_PREFIX_*), and Hydra's file of
// options are dropped from mpirun's environment; other
// MCA parameters, and a list without an NCCL variable, stay.
func TestMPIRunEnv(t *testing.T) {
	env := []string{
		"OMPI_MCA_mca_base_env_list=FOO=1;NCCL_ALGO=Ring", "PRTE_MCA_mca_base_env_list=NCCL_PROTO=LL",
		"PMIX_MCA_mca_base_env_list=NCCL_IB_HCA", "OMPI_MCA_mca_base_env_list_delimiter=:",
		"OMPI_MCA_mca_base_param_files=/tmp/p.conf", "OMPI_MCA_mca_base_param_file_prefix=ft",
		"OMPI_MCA_mca_base_envar_file_prefix=envs", "PRTE_MCA_mca_base_param_files=/tmp/q.conf",
		"OMPI_MCA_mca_base_override_param_file=/tmp/o.conf", "HYDRA_CONFIG_FILE=/tmp/h.conf",
		"OMPI_MCA_mca_param_files=/tmp/p.conf", // mca_base_param_files' deprecated synonym
		// --xml's, --xml-file's, Open MPI 5's --output's, as XML or to files only.
		"OMPI_MCA_orte_xml_output=1", "OMPI_MCA_orte_xml_file=/tmp/o.xml", "PRTE_MCA_output=tag,Xml", "PRTE_MCA_output=file=/tmp/o:nocopy",
		// MPICH's gforker's and remshell's rank labels.
		"MPIEXEC_PREFIX_DEFAULT=1", "MPIEXEC_PREFIX_STDOUT=%d: ", "MPIEXEC_PREFIX_STDERR=%d! ",
		"PATH=/bin", "PRTE_MCA_output=tag,timestamp", "OMPI_MCA_btl=^openib", "OMPI_MCA_pml=ucx", "PRTE_MCA_mca_base_env_list=UCX_TLS=rc",
		"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_MCA_btl_openib_device_param_files=/etc/ompi/mca-btl-openib-device-params.ini",
	}
	want := []string{"PATH=/bin", "PRTE_MCA_output=tag,timestamp", "OMPI_MCA_btl=^openib", "OMPI_MCA_pml=ucx", "PRTE_MCA_mca_base_env_list=UCX_TLS=rc", "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_MCA_btl_openib_device_param_files=/etc/ompi/mca-btl-openib-device-params.ini"}
	for _, m := range []MPIRun{{}, {Flavor: "mpich"}} {
		if got := m.LauncherEnv(env); !slices.Equal(got, want) {
			t.Errorf("mpirun's environment %q\nwant %q", got, want)
		}
	}
	// Through a run: what a trial's mpirun gets.
	fake := filepath.Join(t.TempDir(), "mpirun")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\nenv | grep 'mca_base_env_list' || echo no mca_base_env_list\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("OMPI_MCA_mca_base_env_list", "NCCL_ALGO=Ring")
	r := &Runner{Launcher: MPIRun{Command: fake}, BaseEnv: BaseEnv()}
	res := r.Run(context.Background(), Job{Benchmark: DDPStep{Program: []string{"step.py"}}, Timeout: time.Minute})
	if !strings.Contains(string(res.Output), "no mca_base_env_list") {
		t.Errorf("mpirun got\n%s", res.Output)
	}
}

// TestTorchrunEnv: torchrun takes PET_NAME as its option --name's default,
// so none of the caller's reaches it; other variables do.
func TestTorchrunEnv(t *testing.T) {
	env := []string{"PET_NPROC_PER_NODE=8", "PATH=/bin", "PET_MAX_RESTARTS=3", "PET_REDIRECTS=3", "PET_NO_PYTHON=1", "OMP_NUM_THREADS=4", "MY_PET_X=1"}
	want := []string{"PATH=/bin", "OMP_NUM_THREADS=4", "MY_PET_X=1"}
	if got := (Torchrun{}).LauncherEnv(env); !slices.Equal(got, want) {
		t.Errorf("torchrun's environment %q\nwant %q", got, want)
	}
	// Through a run: what a trial's torchrun gets.
	dir := t.TempDir()
	fake := filepath.Join(dir, "torchrun")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\nenv | grep '^PET_' || echo no PET_ variable\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PET_MAX_RESTARTS", "3")
	r := &Runner{Launcher: Torchrun{Command: fake}, BaseEnv: BaseEnv()}
	res := r.Run(context.Background(), Job{Benchmark: DDPStep{Program: []string{"step.py"}}, Timeout: time.Minute})
	if !strings.Contains(string(res.Output), "no PET_ variable") {
		t.Errorf("torchrun got\n%s", res.Output)
	}
}

// torchrunKilled is how torchrun ends when worker 1 is killed by SIGKILL and
// torchrun then stops worker 0 with SIGTERM: its ChildFailedError report, as
// PyTorch 1.13's ChildFailedError.format_msg formats it, after its log line.
const torchrunKilled = `ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 1 (pid: 4242) of binary: step.sh
torch.distributed.elastic.multiprocessing.errors.ChildFailedError: 
======================================================
step.sh FAILED
------------------------------------------------------
Failures:
[0]:
  time      : 2023-11-14_22:13:21
  host      : localhost
  rank      : 0 (local_rank: 0)
  exitcode  : -15 (pid: 4241)
  error_file: <N/A>
  traceback : Signal 15 (SIGTERM) received by PID 4241
------------------------------------------------------
Root Cause (first observed failure):
[1]:
  time      : 2023-11-14_22:13:20
  host      : localhost
  rank      : 1 (local_rank: 1)
  exitcode  : -9 (pid: 4242)
  error_file: <N/A>
  traceback : Signal 9 (SIGKILL) received by PID 4242
======================================================
`

// torchrunExited is the report of a worker that exited with status 3.
const torchrunExited = `
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2023-11-14_22:13:20
  host      : localhost
  rank      : 0 (local_rank: 0)
  exitcode  : 3 (pid: 4243)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
`

// TestTorchrunRankExit: torchrun exits 1 whatever its workers did; the
// first failed worker's end is read from its report.
func TestTorchrunRankExit(t *testing.T) {
	for _, tc := range []struct {
		name     string
		output   string
		torchrun Exit
		want     Exit
	}{
		{"killed", torchrunKilled, Exit{Code: 1}, Exit{Code: -1, Signal: syscall.SIGKILL}},
		{"exited", torchrunExited, Exit{Code: 1}, Exit{Code: 3}},
		{"no report", "Traceback (most recent call last):\nValueError: bad\n", Exit{Code: 1}, Exit{Code: 1}},
		{"a worker's imitation, then torchrun's report", strings.Replace(torchrunExited, "3 (pid", "-11 (pid", 1) + torchrunKilled,
			Exit{Code: 1}, Exit{Code: -1, Signal: syscall.SIGKILL}},
		{"no status under the root cause", "Root Cause (first observed failure):\n[0]:\n  exitcode  : x (pid: 1)\n", Exit{Code: 1}, Exit{Code: 1}},
		{"no such signal", strings.Replace(torchrunKilled, "-9 (pid", "-99 (pid", 1), Exit{Code: 1}, Exit{Code: 1}},
		{"torchrun itself killed", torchrunKilled, Exit{Code: -1, Signal: syscall.SIGTERM}, Exit{Code: -1, Signal: syscall.SIGTERM}},
		{"a clean exit", torchrunKilled, Exit{}, Exit{}},
	} {
		if got := (Torchrun{}).RankExit([]byte(tc.output), tc.torchrun); got != tc.want {
			t.Errorf("%s: RankExit = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// TestTorchrunWorkerKilled: a trial whose worker torchrun reports killed by
// a signal fails as killed by it, not as torchrun's exit 1.
func TestTorchrunWorkerKilled(t *testing.T) {
	fake := filepath.Join(t.TempDir(), "torchrun")
	script := "#!/bin/sh\ncat >&2 <<'EOF'\n" + torchrunKilled + "EOF\nexit 1\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, b := range []Benchmark{DDPStep{Program: []string{"step.sh"}}, UserCommand{Argv: []string{"train.py"}}} {
		r := &Runner{Launcher: Torchrun{Command: fake, NProcPerNode: 2}, BaseEnv: BaseEnv()}
		res := r.Run(context.Background(), Job{Benchmark: b, Timeout: time.Minute})
		// The detail is the report's last line that says something, not its closing rule.
		if res.Failure == nil || res.Failure.Kind != FailSignal || !strings.Contains(res.Failure.Reason, "killed by signal 9 (killed): ") || strings.Contains(res.Failure.Reason, "===") {
			t.Errorf("%T: failure %v, want killed by SIGKILL\n%s", b, res.Failure, res.Output)
		}
	}
}

// TestTorchrunTarget: torchrun runs its positional script with its own
// "python -u", a module with -m, and anything else only under --no_python
// (torch/distributed/run.py). A command's interpreter is kept, under
// --no_python with torchrun's -u: torchrun's own is the one its script
// names (/usr/bin/torchrun's /usr/bin/python3.11), which need not be the
// command's (a venv's, DDP's benchmark.python), nor have its packages.
func TestTorchrunTarget(t *testing.T) {
	for _, tc := range []struct {
		cmd, args []string
		want      string
	}{
		{[]string{"python3", "train.py", "--lr", "1"}, nil, "--no_python python3 -u train.py --lr 1"},
		{[]string{"python3", "-u", "train.py"}, nil, "--no_python python3 -u train.py"},
		{[]string{"/venv/bin/python3.11", "train"}, nil, "--no_python /venv/bin/python3.11 -u train"},
		{[]string{"python", "-m", "megatron.train", "--x"}, nil, "--no_python python -u -m megatron.train --x"},
		{[]string{"python3", "-u", "-m", "pkg"}, nil, "--no_python python3 -u -m pkg"},
		{[]string{"python3", "-O", "train.py"}, nil, "--no_python python3 -O train.py"},
		{[]string{"python3", "-c", "print(1)"}, nil, "--no_python python3 -c print(1)"},
		{[]string{"python3"}, nil, "--no_python python3"},
		{[]string{"train.py", "--x"}, nil, "train.py --x"},
		{[]string{"./train.sh", "--x"}, nil, "--no_python ./train.sh --x"},
		{[]string{"/opt/bin/trainer"}, nil, "--no_python /opt/bin/trainer"},
		{[]string{"pythonista", "x.py"}, nil, "--no_python pythonista x.py"},
		// launcher.args that already say how to run the target are the user's to keep.
		{[]string{"python3", "-u", "train.py"}, []string{"--no-python"}, "--no-python python3 -u train.py"},
		{[]string{"train"}, []string{"-m"}, "-m train"},
	} {
		argv, err := Torchrun{Args: tc.args}.Wrap(tc.cmd, nil)
		got := strings.Join(argv[2:], " ") // after torchrun --standalone
		if err != nil || got != tc.want {
			t.Errorf("%q (args %q): torchrun ... %s, want %s", tc.cmd, tc.args, got, tc.want)
		}
	}
}

func TestLauncherChecks(t *testing.T) {
	dir := t.TempDir()
	hosts := filepath.Join(dir, "hosts")
	os.WriteFile(hosts, []byte("# two nodes\nnode1 slots=8\nnode2 slots=8 max_slots=8\n"), 0o644)
	mpichHosts := filepath.Join(dir, "mpich-hosts")
	os.WriteFile(mpichHosts, []byte("node1:8\nnode2:4\n"), 0o644)
	oneSlot := filepath.Join(dir, "one-slot")
	os.WriteFile(oneSlot, []byte("node1 slots=1\n"), 0o644)
	if hosts, err := HostfileHosts(mpichHosts); slotsOf(hosts) != 12 || err != nil {
		t.Errorf("MPICH hostfile: %d slots, %v", slotsOf(hosts), err)
	}
	sh, _ := exec.LookPath("sh") // an executable that surely exists, standing in for mpirun
	for _, tc := range []struct {
		c    Checker
		want string
	}{
		{MPIRun{Command: sh, NP: 16, Hostfile: hosts}, ""},
		{MPIRun{Command: sh, NP: 12, Hostfile: hosts}, "np = 12 does not match the 16 slots"},
		{MPIRun{Command: sh, NP: 20, Hostfile: hosts, Args: []string{"--oversubscribe"}}, ""},
		// Open MPI's other spellings of it: a long option after one dash, a
		// mapping policy's modifier (Open MPI 5's own), in map_by or the args.
		{MPIRun{Command: sh, NP: 20, Hostfile: hosts, Args: []string{"-oversubscribe"}}, ""},
		{MPIRun{Command: sh, NP: 20, Hostfile: hosts, MapBy: "ppr:10:node:OVERSUBSCRIBE"}, ""},
		{MPIRun{Command: sh, NP: 20, Hostfile: hosts, Args: []string{"--map-by", "slot:oversubscribe"}}, ""},
		{MPIRun{Command: sh, NP: 20, Hostfile: hosts, Args: []string{"--map-by=slot:PE=1,OVERSUBSCRIBE"}}, ""},
		{MPIRun{Command: sh, NP: 20, Hostfile: hosts, MapBy: "slot:NOOVERSUBSCRIBE"}, "np = 20 does not match the 16 slots"},
		{MPIRun{Command: sh, NP: 2, Hostfile: oneSlot}, "np = 2 does not match the 1 slot of hostfile"},
		{MPIRun{Command: sh, NP: 2, Hostfile: filepath.Join(dir, "nope")}, "no such file"},
		{MPIRun{Command: "no-such-mpirun", NP: 2}, "no-such-mpirun"},
		{MPIRun{Command: sh, Flavor: "lam"}, "flavor"},
		{Srun{Command: sh}, "not inside a Slurm allocation"},
	} {
		err := tc.c.Check()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v; want %q", tc.c, err, tc.want)
		}
	}
}

// TestMPIRunCallersEnvList: Open MPI refuses to run where an
// mca_base_env_list of the caller's environment stands beside the -x by
// which nccltune hands the ranks each trial's variables ("does not support
// mixing these two methods"), so every trial failed: the check refuses it
// before any trial, for Open MPI alone.
func TestMPIRunCallersEnvList(t *testing.T) {
	sh, _ := exec.LookPath("sh")
	for _, name := range []string{"OMPI_MCA_mca_base_env_list", "PRTE_MCA_mca_base_env_list"} {
		t.Run(name, func(t *testing.T) {
			t.Setenv(name, "UCX_TLS=rc")
			if err := (MPIRun{Command: sh}).Check(); err == nil || !strings.Contains(err.Error(), name+"=UCX_TLS=rc") {
				t.Errorf("Check() = %v; want %s refused", err, name)
			}
			if err := (MPIRun{Command: sh, Flavor: "mpich"}).Check(); err != nil {
				t.Errorf("MPICH: Check() = %v; Hydra reads no MCA parameter", err)
			}
		})
	}
	env := needMPI(t)
	r := &Runner{Launcher: MPIRun{NP: 1}, BaseEnv: append(env, "OMPI_MCA_mca_base_env_list=UCX_TLS=rc")}
	res := r.Run(context.Background(), Job{Benchmark: DDPStep{Program: []string{"true"}}, Env: []string{"NCCL_DEBUG=INFO"}, Timeout: time.Minute})
	if res.Exit.Code == 0 || !strings.Contains(string(res.Output), "mixing these two methods") {
		t.Errorf("Open MPI ran with an mca_base_env_list beside -x: exit %d\n%s", res.Exit.Code, res.Output)
	}
}

// TestSimulatedCollectivesReadAsNCCLTests runs the simulated cluster for
// every collective and reads its table as nccl-tests': the sizes nccl-tests
// prints (a rank's share rounded to 16 bytes), its bus factors, every number
// plausible.
func TestSimulatedCollectivesReadAsNCCLTests(t *testing.T) {
	for _, coll := range space.Collectives {
		b := NCCLTests{Program: []string{os.Args[0], "-nodes=2", "-fabric=ib"}, Binary: coll + "_perf", Collective: coll, GPUs: 16, Check: true}
		res := (&Runner{Launcher: Local{}, BaseEnv: BaseEnv()}).Run(context.Background(), Job{Benchmark: b,
			Plan: Plan{Sizes: space.Sizes{Min: 8, Max: 1 << 30, Factor: 4}, Iters: 20, Warmup: 5}, Env: []string{"NCCL_DEBUG=INFO"}, Timeout: time.Minute})
		if res.Failure != nil || len(res.Measurement.Rows) != 14 || res.Measurement.Ranks != 16 {
			t.Errorf("%s: %v\n%s", coll, res.Failure, res.Output[:min(len(res.Output), 3000)])
		}
	}
}

// TestSrunEnvCurrentNames: srun reads -o, -e and -i from SRUN_OUTPUT,
// SRUN_ERROR and SRUN_INPUT (src/srun/opt.c; SLURM_STDOUTMODE and the like
// are only kept for backward compatibility), and the step's task count from
// SLURM_NTASKS_PER_TRES too: a caller's SRUN_OUTPUT=/dev/null took away the
// output nccltune reads. A task's GPUs are the allocation's.
func TestSrunEnvCurrentNames(t *testing.T) {
	env := []string{"SLURM_JOB_ID=7", "SRUN_OUTPUT=/dev/null", "SRUN_ERROR=/dev/null", "SRUN_INPUT=none",
		"SLURM_NTASKS_PER_TRES=1", "SLURM_GPUS_PER_SOCKET=4", "PATH=/bin"}
	want := []string{"SLURM_JOB_ID=7", "SLURM_GPUS_PER_SOCKET=4", "PATH=/bin"}
	if got := (Srun{}).LauncherEnv(env); !slices.Equal(got, want) {
		t.Errorf("srun's environment %q\nwant %q", got, want)
	}
}

// hydraReport is what MPICH's (and Intel MPI's) mpiexec prints as it ends
// a job whose rank died: the first failed rank's report, then, where the
// OR of every rank's wait status reads as a signal, that signal
// (src/pm/hydra/mpiexec/mpiexec.c).
func hydraReport(first, exitString string) string {
	out := "===================================================================================\n" +
		"=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n=   RANK 1 PID 4242 RUNNING AT node1\n" +
		first + "\n===================================================================================\n"
	if exitString != "" {
		out += "YOUR APPLICATION TERMINATED WITH THE EXIT STRING: " + exitString + "\n" +
			"This typically refers to a problem with your application.\nPlease see the FAQ page for debugging suggestions\n"
	}
	return out
}

// TestHydraRankExit: Hydra's mpiexec exits with the wait status of its
// ranks (their OR), not 128+N: a rank killed by SIGABRT makes it exit 6,
// which is nccl-tests' "invalid usage", SIGBUS 7 its "wrong data", and a
// rank's exit 3 (an NCCL error) with the others killed by Hydra's cleanup 9.
// The trial is classified by the first failed rank, as Hydra reports it.
func TestHydraRankExit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		rank   string // the ranks' output
		report string
		status int // mpiexec's
		kind   FailureKind
		reason string
	}{
		{"aborted, Intel MPI", "boom", hydraReport("=   KILLED BY SIGNAL: 6 (Aborted)", "Aborted (signal 6)"), 6,
			FailSignal, "killed by signal 6 (aborted)"},
		{"bus error, MPICH 3", "boom", hydraReport("=   EXIT CODE: 7", "Bus error (signal 7)"), 7,
			FailSignal, "killed by signal 7 (bus error)"},
		// MPICH 3.2 on reports only a rank a signal killed, by its wait
		// status; the proxy's SIGKILL of the others ORs 9 into mpiexec's.
		{"aborted, the others killed", "boom", hydraReport("=   EXIT CODE: 6", "Terminated (signal 15)"), 15,
			FailSignal, "killed by signal 6 (aborted)"},
		{"segfault with a core", "boom", hydraReport("=   EXIT CODE: 139", "Segmentation fault (signal 11)"), 139,
			FailSignal, "exit status 139: a process killed by signal 11 (segmentation fault)"},
		{"NCCL error, the others killed", "node1: Test NCCL failure common.cu:1005 'unhandled system error'",
			hydraReport("=   EXIT CODE: 3", "Killed (signal 9)"), 9,
			FailNCCL, "exit status 3 (NCCL error): node1: Test NCCL failure common.cu:1005 'unhandled system error'"},
		{"exit 1, no signal", "boom", hydraReport("=   EXIT CODE: 1", ""), 1, FailExit, "exit status 1 (nccl-tests internal error)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out.txt")
			if err := os.WriteFile(out, []byte(tc.rank+"\n"+tc.report), 0o644); err != nil {
				t.Fatal(err)
			}
			mpiexec := script(t, fmt.Sprintf("cat %s; exit %d\n", out, tc.status))
			r := &Runner{Launcher: MPIRun{Flavor: "mpich", Command: mpiexec, NP: 2}}
			res := r.Run(context.Background(), tableJob("all_reduce_perf"))
			if res.Failure == nil || res.Failure.Kind != tc.kind || res.Failure.Reason != tc.reason {
				t.Errorf("failure = %v, want %s: %s\n%s", res.Failure, tc.kind, tc.reason, res.Output)
			}
		})
	}
}

// TestMPIRunInsideAnOuterJob: nccltune run by an Open MPI mpirun (mpirun
// -np 1 nccltune ..., a site's wrapper) inherits that job's description of
// its rank, which a trial's mpirun took for a recursive call ("mpirun does
// not support recursive calls", every trial failed) or, given the outer
// daemon's URI, tried to join; the trial's mpirun starts a job of its own.
// The caller's own MCA parameters, which the outer mpirun hands its rank
// too, are settings and stay, those named orte_* (plm_rsh_agent's synonym
// orte_rsh_agent, orte_keep_fqdn_hostnames) among them.
func TestMPIRunInsideAnOuterJob(t *testing.T) {
	env := needMPI(t)
	own := []string{"OMPI_MCA_orte_rsh_agent=ssh -o BatchMode=yes", "OMPI_MCA_orte_keep_fqdn_hostnames=1", "OMPI_MCA_orte_base_help_aggregate=0"}
	cmd := exec.Command("mpirun", "-np", "1", "env")
	cmd.Env = append(slices.Clone(env), own...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("mpirun -np 1 env: %v", err)
	}
	outer := strings.Split(strings.TrimSpace(string(out)), "\n")
	kept := withoutOuterLaunch(outer)
	for _, kv := range own {
		if !slices.Contains(kept, kv) {
			t.Errorf("the caller's %s dropped", kv)
		}
	}
	if i := slices.IndexFunc(kept, func(kv string) bool {
		return strings.HasPrefix(kv, "OMPI_MCA_orte_hnp_uri=") || strings.HasPrefix(kv, "OMPI_MCA_ess_base_jobid=")
	}); i >= 0 {
		t.Errorf("the outer job's %s kept", kept[i])
	}
	r := &Runner{Launcher: MPIRun{NP: 2, Args: []string{"--oversubscribe"}}, BaseEnv: outer}
	res := r.Run(context.Background(), Job{
		Benchmark: NCCLTests{Program: []string{os.Args[0], "-nodes=1", "-gpus_per_node=8"}, Binary: "all_reduce_perf", Collective: "all_reduce", GPUs: 1, Check: true},
		Plan:      Plan{Sizes: space.Sizes{Min: 1024, Max: 4096, Factor: 2}, Iters: 20, Warmup: 5},
		Timeout:   time.Minute,
	})
	if res.Failure != nil {
		t.Fatalf("%v\n%s", res.Failure, res.Output)
	}
	if res.Measurement.Ranks != 2 {
		t.Errorf("%d ranks, want the trial's 2", res.Measurement.Ranks)
	}
}

// TestMPIRunOversubscribeByMCA: Open MPI oversubscribes for its MCA
// parameters too, given in the args (--mca rmaps_base_oversubscribe 1, a
// mapping policy's OVERSUBSCRIBE) or in mpirun's environment
// (OMPI_MCA_rmaps_base_oversubscribe, which container images set), and the
// check refused np beyond the slots under them.
func TestMPIRunOversubscribeByMCA(t *testing.T) {
	dir := t.TempDir()
	hosts := filepath.Join(dir, "hosts")
	os.WriteFile(hosts, []byte("node1 slots=8\nnode2 slots=8\n"), 0o644)
	sh, _ := exec.LookPath("sh")
	for _, args := range [][]string{
		{"--mca", "rmaps_base_oversubscribe", "1"},
		{"-mca", "rmaps_base_oversubscribe", "true"},
		{"--mca", "rmaps_base_mapping_policy", "slot:oversubscribe"},
		{"--prtemca", "rmaps_default_mapping_policy", ":OVERSUBSCRIBE"},
	} {
		if err := (MPIRun{Command: sh, NP: 20, Hostfile: hosts, Args: args}).Check(); err != nil {
			t.Errorf("args %q: %v", args, err)
		}
	}
	if err := (MPIRun{Command: sh, NP: 20, Hostfile: hosts, Args: []string{"--mca", "rmaps_base_oversubscribe", "0"}}).Check(); err == nil {
		t.Errorf("rmaps_base_oversubscribe 0 taken as oversubscribing")
	}
	for _, kv := range [][2]string{{"OMPI_MCA_rmaps_base_oversubscribe", "yes"}, {"PRTE_MCA_rmaps_default_mapping_policy", "slot:OVERSUBSCRIBE"}} {
		t.Run(kv[0], func(t *testing.T) {
			t.Setenv(kv[0], kv[1])
			if err := (MPIRun{Command: sh, NP: 20, Hostfile: hosts}).Check(); err != nil {
				t.Errorf("%s=%s: %v", kv[0], kv[1], err)
			}
		})
	}
}

// TestMPIRunHostfileSlotsGivenTwice: Open MPI (4.1.4) refuses a hostfile
// in which a host listed before is given a slot count again ("A hostfile
// was provided that contains multiple definitions of the slot count"),
// exit 1, at every trial; the check summed the lines' slots and passed it.
// A host's lines without a count are one slot each, which it takes.
func TestMPIRunHostfileSlotsGivenTwice(t *testing.T) {
	dir := t.TempDir()
	sh, _ := exec.LookPath("sh")
	for _, tc := range []struct {
		hosts, flavor, want string
	}{
		{"node1 slots=1\nnode1 slots=1\n", "", "lists host node1"},
		{"node1\nnode1 slots=1\n", "", "lists host node1"},
		{"node1 slots=1\nnode1.cluster slots=1\n", "openmpi", "lists host node1"},
		{"node1 slots=1\nnode1\n", "", ""},
		{"node1\nnode1\n", "", ""},
		{"node1:1\nnode1:1\n", "mpich", ""}, // Hydra takes both
		// A later line's max_slots alone is no slot count: it adds a slot,
		// as a line without one does, and raises the maximum (4.1.4: node1
		// slots=2 max_slots=4, then slots=3).
		{"node1\nnode1 max_slots=4\n", "", ""},
		{"node1 slots=1\nnode1 max_slots=4\n", "openmpi", ""},
		{"node1 max_slots=4\nnode1 slots=1\n", "", "lists host node1"},
		// Open MPI tells a hostfile's hosts apart by their names' case
		// (4.1.4 takes these as two hosts).
		{"NODE1 slots=1\nnode1 slots=1\n", "", ""},
		{"NODE1\nnode1 max_slots=1\n", "", ""},
		// A user before the host names it still (hostfile.c: "user@node1").
		{"alice@node1 slots=1\nnode1 slots=1\n", "", "lists host alice@node1 (also as node1) on two lines"},
		// MPICH's form: Open MPI (4's hostfile.c, 5's PRRTE) reads "node1:1"
		// as a host of that name, which it cannot reach.
		{"node1:1\nnode2:1\n", "", "hostfile line 1 gives host node1 its slots in MPICH's form, node1:1"},
		{"node1 slots=1\nnode2:1\n", "openmpi", "line 2 gives host node2 its slots in MPICH's form"},
		{"node1:1\nnode2:1\n", "mpich", ""},
	} {
		path := filepath.Join(dir, "hosts")
		os.WriteFile(path, []byte(tc.hosts), 0o644)
		err := MPIRun{Command: sh, Flavor: tc.flavor, NP: 2, Hostfile: path}.Check()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s %q: %v; want %q", tc.flavor, tc.hosts, err, tc.want)
		}
	}
}

// TestOuterLaunchUnderEveryLauncher: where nccltune runs as a rank of an
// outer launch (a task of a Slurm step, a rank of an Open MPI or Hydra
// job), what that launch told nccltune's own process of its step or job
// and its rank's wiring reaches no trial, under any launcher: under local
// and torchrun the ranks took themselves for the outer step's. PMIx's MCA
// parameters and the install prefix of a relocated PMIx (which Open MPI
// reads, and its ranks are not given) are settings and stay, and so are the PMI variables the user
// sets (Cray PMI's PMI_NO_FORK, PMI_MMAP_SYNC_WAIT_TIME; srun's PMI_FANOUT),
// which srun hands its tasks as they are: Cray PMI's wiring, as Slurm's
// --mpi=cray_shasta and Flux set it, goes.
func TestOuterLaunchUnderEveryLauncher(t *testing.T) {
	settings := map[string]string{"SLURM_JOB_ID": "7", "PMIX_MCA_gds": "hash", "PMI_NO_FORK": "1", "PMI_MMAP_SYNC_WAIT_TIME": "300",
		"PMI_FANOUT": "8", "PMI_DEBUG": "1", "PMIX_INSTALL_PREFIX": "/opt/pmix"}
	outer := map[string]string{
		"SLURM_STEP_ID": "0", "SLURM_STEP_NUM_TASKS": "2", "SLURM_PROCID": "1", "SLURM_LOCALID": "1",
		"SLURM_SRUN_COMM_PORT": "40175", "PMI_RANK": "1", "PMI_SIZE": "2", "PMI_FD": "10", "PMI_JOBID": "7.0", "PMIX_RANK": "1",
		"PMI_LOCAL_RANK": "1", "PMI_LOCAL_SIZE": "2", "PMI_UNIVERSE_SIZE": "2", "PMI_CONTROL_PORT": "11000,11001", "PMI_SHARED_SECRET": "123",
		"PMIX_NAMESPACE": "slurm.pmix.7.0", "OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_RANK": "1", "OMPI_UNIVERSE_SIZE": "2",
		"MPI_LOCALRANKID": "1", "MPI_LOCALNRANKS": "2",
	}
	maps.Copy(outer, settings)
	for name, value := range outer {
		t.Setenv(name, value)
	}
	env := script(t, "env")
	for _, l := range []Launcher{Local{}, Torchrun{Command: env}, Srun{Command: env, Nodes: 1}, MPIRun{Command: env}} {
		r := &Runner{Launcher: l, BaseEnv: BaseEnv()}
		res := r.Run(context.Background(), Job{Benchmark: DDPStep{Program: []string{env}}, Timeout: time.Minute})
		got := strings.Split(string(res.Output), "\n")
		for name, value := range outer {
			kept := slices.Contains(got, name+"="+value)
			if _, want := settings[name]; kept != want {
				t.Errorf("%T: %s=%s kept %v, want %v", l, name, value, kept, want)
			}
		}
	}
}
