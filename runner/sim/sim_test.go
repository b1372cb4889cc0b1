package sim

import (
	"bytes"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nccltune/nccltune/runner/nccltests"
)

// simulate runs the simulator in-process and parses what it printed.
func simulate(t *testing.T, scenario []string, env []string, args ...string) (*nccltests.Report, int, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	argv := append(append(append([]string{}, scenario...), "all_reduce_perf"), args...)
	code := Main(argv, env, &out, &errOut)
	rep, _ := nccltests.Parse(bytes.NewReader(out.Bytes()))
	return rep, code, out.String() + errOut.String()
}

// busbw returns the out-of-place bus bandwidth at size.
func busbw(t *testing.T, rep *nccltests.Report, size int64) float64 {
	t.Helper()
	for _, r := range rep.Rows {
		if r.Size == size {
			return r.OutOfPlace.BusBW
		}
	}
	t.Fatalf("no row for %d", size)
	return 0
}

var twoNodeIB = []string{"-nodes=2", "-fabric=ib", "-noise=0"}

func TestTableIsNCCLTests(t *testing.T) {
	rep, code, out := simulate(t, twoNodeIB, nil, "-b", "8", "-e", "1G", "-f", "2", "-g", "16")
	if code != 0 || len(rep.Rows) != 28 || len(rep.Failures) != 0 || rep.OutOfBounds != 0 {
		t.Fatalf("exit %d, %d rows, failures %q\n%s", code, len(rep.Rows), rep.Failures, out)
	}
	last := rep.Rows[27].OutOfPlace
	if ratio := last.BusBW / last.AlgBW; ratio < 1.86 || ratio > 1.89 { // 2*15/16
		t.Errorf("busbw/algbw = %.3f, want 1.875", ratio)
	}
	if !strings.Contains(out, "not a measurement") {
		t.Error("output does not say it is simulated")
	}
}

func TestTheDefaultIsNotAlwaysBest(t *testing.T) {
	def, _, _ := simulate(t, twoNodeIB, nil, "-b", "16M", "-e", "16M", "-g", "16")
	ring, _, _ := simulate(t, twoNodeIB, []string{"NCCL_ALGO=Ring"}, "-b", "16M", "-e", "16M", "-g", "16")
	if d, r := busbw(t, def, 16<<20), busbw(t, ring, 16<<20); r < d*1.05 {
		t.Errorf("16M on 2-node IB: Ring %.1f should beat NCCL's default %.1f", r, d)
	}
	// Small messages want a low-latency protocol; forcing Simple hurts.
	defSmall, _, _ := simulate(t, twoNodeIB, nil, "-b", "4K", "-e", "4K", "-g", "16")
	simple, _, _ := simulate(t, twoNodeIB, []string{"NCCL_PROTO=Simple"}, "-b", "4K", "-e", "4K", "-g", "16")
	if s, d := simple.Rows[0].OutOfPlace.TimeUs, defSmall.Rows[0].OutOfPlace.TimeUs; s < d*1.3 {
		t.Errorf("4K: Simple %.1fus should be much slower than the default %.1fus", s, d)
	}
}

func TestFabricTraps(t *testing.T) {
	large := []string{"-b", "1G", "-e", "1G", "-g", "16"}
	phb := append([]string{"-gpu_nic=PHB"}, twoNodeIB...)
	noGDR, _, _ := simulate(t, phb, nil, large...)
	gdr, _, out := simulate(t, phb, []string{"NCCL_NET_GDR_LEVEL=PHB", "NCCL_DEBUG=INFO"}, large...)
	if busbw(t, gdr, 1<<30) < 1.5*busbw(t, noGDR, 1<<30) {
		t.Errorf("enabling GDR at PHB distance gained too little: %.1f vs %.1f", busbw(t, gdr, 1<<30), busbw(t, noGDR, 1<<30))
	}
	if !strings.Contains(out, "[GDR]") || !strings.Contains(out, "NCCL_NET_GDR_LEVEL set by environment to PHB") {
		t.Errorf("INFO log lacks GDR or the variable:\n%s", out)
	}

	roce := []string{"-nodes=2", "-fabric=roce", "-roce_gid=3", "-noise=0"}
	wrongGID, _, _ := simulate(t, roce, []string{"NCCL_IB_GID_INDEX=0"}, large...)
	rightGID, _, _ := simulate(t, roce, []string{"NCCL_IB_GID_INDEX=3"}, large...)
	if busbw(t, rightGID, 1<<30) < 2*busbw(t, wrongGID, 1<<30) {
		t.Errorf("RoCE v2 GID %.1f vs wrong GID %.1f", busbw(t, rightGID, 1<<30), busbw(t, wrongGID, 1<<30))
	}

	tcp := []string{"-nodes=2", "-fabric=tcp", "-noise=0"}
	rep, code, _ := simulate(t, tcp, []string{"NCCL_PROTO=LL128"}, "-b", "1M", "-e", "1M", "-g", "16")
	if code != 7 || rep.Rows[0].Wrong() == 0 {
		t.Errorf("LL128 forced over sockets must corrupt data: exit %d, wrong %d", code, rep.Rows[0].Wrong())
	}
	unchecked, _, _ := simulate(t, tcp, []string{"NCCL_PROTO=LL128"}, "-b", "1M", "-e", "1M", "-g", "16", "-c", "0")
	if unchecked.Rows[0].OutOfPlace.Wrong != -1 {
		t.Error("-c 0 must print N/A")
	}
}

func TestNCCLErrors(t *testing.T) {
	for _, tc := range []struct {
		scenario []string
		env      []string
		args     []string
		code     int
		want     string
	}{
		{twoNodeIB, []string{"NCCL_PROTO=LL9"}, []string{"-g", "16"}, 3, "Test NCCL failure"},
		{twoNodeIB, []string{"NCCL_ALGO=NVLS"}, []string{"-g", "16"}, 3, "no algorithm/protocol available"},
		{[]string{"-nodes=2", "-fabric=roce"}, []string{"NCCL_IB_GID_INDEX=7"}, []string{"-g", "16"}, 3, "unhandled system error"},
		{[]string{"-nodes=2", "-fabric=tcp"}, []string{"NCCL_SOCKET_NTHREADS=16", "NCCL_NSOCKS_PERTHREAD=8"}, []string{"-g", "16"}, 3, "exceeds the maximum of 64"},
		{nil, nil, []string{"-g", "9"}, 2, "Test CUDA failure"},
		{nil, nil, []string{"-S", "1"}, 1, ""}, // a timestamp column the simulator does not print
		{[]string{"-fabric=warp"}, nil, nil, 1, ""},
	} {
		rep, code, out := simulate(t, tc.scenario, tc.env, tc.args...)
		if code != tc.code || tc.want != "" && (len(rep.Failures) == 0 || !strings.Contains(rep.Failures[0], tc.want)) {
			t.Errorf("%v %v %v: exit %d, failures %q; want exit %d and %q\n%s", tc.scenario, tc.env, tc.args, code, rep.Failures, tc.code, tc.want, out)
		}
	}
}

func TestNoiseIsReproducible(t *testing.T) {
	noisy := []string{"-nodes=2", "-fabric=ib", "-noise=0.05", "-seed=9"}
	a, _, outA := simulate(t, append(noisy, "-run=1"), nil, "-b", "1M", "-e", "1M", "-g", "16")
	_, _, outB := simulate(t, append(noisy, "-run=1"), nil, "-b", "1M", "-e", "1M", "-g", "16")
	c, _, _ := simulate(t, append(noisy, "-run=2"), nil, "-b", "1M", "-e", "1M", "-g", "16")
	if outA != outB {
		t.Error("same seed and run gave different output")
	}
	if a.Rows[0].OutOfPlace.TimeUs == c.Rows[0].OutOfPlace.TimeUs {
		t.Error("another run of the same configuration measured exactly the same time")
	}
}

func TestOnlyRankZeroPrintsTheTable(t *testing.T) {
	rep, code, _ := simulate(t, twoNodeIB, []string{"OMPI_COMM_WORLD_RANK=3", "OMPI_COMM_WORLD_SIZE=16"}, "-g", "1")
	if code != 0 || len(rep.Rows) != 0 {
		t.Errorf("rank 3 printed %d rows (exit %d)", len(rep.Rows), code)
	}
	rep, code, _ = simulate(t, twoNodeIB, []string{"OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=16"}, "-g", "1")
	if code != 0 || len(rep.Rows) != 1 {
		t.Errorf("rank 0 printed %d rows (exit %d)", len(rep.Rows), code)
	}
}

// TestEvaluateMatchesTheTable: the ground truth is what the process prints, without noise.
func TestEvaluateMatchesTheTable(t *testing.T) {
	sc, err := ParseScenario(twoNodeIB)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"NCCL_ALGO": "Ring", "NCCL_MIN_CTAS": "24"}
	rep, _, _ := simulate(t, twoNodeIB, []string{"NCCL_ALGO=Ring", "NCCL_MIN_CTAS=24"}, "-b", "1M", "-e", "1G", "-f", "32", "-g", "16")
	var sizes []int64
	for _, r := range rep.Rows {
		sizes = append(sizes, r.Size)
	}
	bw, err := Evaluate(sc, "all_reduce", env, sizes)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rep.Rows {
		if math.Abs(bw[i]-r.OutOfPlace.BusBW) > 0.01*bw[i]+0.01 {
			t.Errorf("size %d: Evaluate %.2f, table %.2f", r.Size, bw[i], r.OutOfPlace.BusBW)
		}
	}
	if _, err := Evaluate(sc, "all_reduce", map[string]string{"NCCL_PROTO": "LL9"}, sizes); err == nil {
		t.Error("an invalid setting evaluated")
	}
}

// TestSimulateModelsTime: a run costs its start-up plus every iteration of
// every size; a communicator that fails costs the start-up alone.
func TestSimulateModelsTime(t *testing.T) {
	run := func(env []string, iters string) (int, float64) {
		args := append(slices.Clone(twoNodeIB), "all_reduce_perf", "-b", "1M", "-e", "1G", "-f", "32", "-g", "16", "-n", iters)
		return Simulate(args, env, io.Discard, io.Discard)
	}
	code20, s20 := run(nil, "20")
	code200, s200 := run(nil, "200")
	if code20 != 0 || code200 != 0 || s20 <= startSeconds || s20 > 60 {
		t.Fatalf("exit %d, %d; a 4-size sweep takes %.2fs", code20, code200, s20)
	}
	if got, want := s200-startSeconds, (s20-startSeconds)*205/25; math.Abs(got-want) > 1e-9*want {
		t.Errorf("200 iterations: %.3fs of sweep, want %.3fs", got, want)
	}
	if code, s := run([]string{"NCCL_PROTO=LL9"}, "20"); code != 3 || s != startSeconds {
		t.Errorf("invalid NCCL_PROTO: exit %d after %.1fs", code, s)
	}
}

// TestNoiseAveragesOutDownToAFloor: more iterations make a measurement less
// noisy, but never below the run-to-run part.
func TestNoiseAveragesOutDownToAFloor(t *testing.T) {
	sc := Scenario{Noise: 0.04}
	if got := sc.MeasurementNoise(20); math.Abs(got-0.04) > 1e-12 {
		t.Errorf("at 20 iterations: %g, want the scenario's 0.04", got)
	}
	if a, b := sc.MeasurementNoise(80), sc.MeasurementNoise(20); a >= b || a <= 0.02 {
		t.Errorf("80 iterations: %g (20: %g)", a, b)
	}
	if got := sc.MeasurementNoise(1 << 30); math.Abs(got-0.02) > 1e-6 {
		t.Errorf("floor %g, want half the noise", got)
	}
}

// TestAnAllocationIsNoStep: inside sbatch or salloc, a run inherits the
// allocation's SLURM_NTASKS without being a task of any step, so the
// simulator run there by the local launcher is one process (it counted
// 16 and needed 16 times the GPUs); a task of an srun step counts the
// step's tasks, an MPI rank its world.
func TestAnAllocationIsNoStep(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
		gpus string
		ok   bool
	}{
		{"inside sbatch", []string{"SLURM_JOB_ID=5", "SLURM_NTASKS=16", "SLURM_PROCID=0"}, "16", true},
		{"a task of a 2-task step", []string{"SLURM_JOB_ID=5", "SLURM_NTASKS=16", "SLURM_STEP_NUM_TASKS=2", "SLURM_PROCID=0"}, "8", true},
		{"a step of 2 tasks of 16 GPUs is too many", []string{"SLURM_STEP_NUM_TASKS=2", "SLURM_PROCID=0"}, "16", false},
		{"an MPI rank of 2", []string{"OMPI_COMM_WORLD_SIZE=2", "OMPI_COMM_WORLD_RANK=0"}, "8", true},
	} {
		_, code, out := simulate(t, twoNodeIB, tc.env, "-b", "1M", "-e", "1M", "-g", tc.gpus)
		if (code == 0) != tc.ok {
			t.Errorf("%s: exit %d\n%s", tc.name, code, out)
		}
	}
}

// TestConfFileIsReadAsNCCLReadsIt: NCCL_CONF_FILE's lines set what the
// environment does not, each line's '\r' dropped (misc/param.cc).
func TestConfFileIsReadAsNCCLReadsIt(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "nccl.conf")
	if err := os.WriteFile(conf, []byte("NCCL_ALGO=Tree\r\nNCCL_PROTO=LL\r\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := ncclEnv([]string{"NCCL_CONF_FILE=" + conf, "NCCL_PROTO=Simple"})
	if env["NCCL_ALGO"] != "Tree" || env["NCCL_PROTO"] != "Simple" {
		t.Errorf("ncclEnv = %q, want NCCL_ALGO=Tree from the file, NCCL_PROTO=Simple from the environment", env)
	}
}

// TestConfFileCannotWedgeTheSimulator: a NCCL_CONF_FILE that never ends
// (/dev/zero), a FIFO no one writes (which blocks at open) and a file of
// gigabytes are read only so far: the simulator is a test runner, and a
// hostile space file's fixed variable must not hang or exhaust it.
func TestConfFileCannotWedgeTheSimulator(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge.conf")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	// Past the limit, a line that must not be read: the sparse file reads as confLimit zeros first.
	if _, err := f.WriteAt([]byte("\nNCCL_ALGO=Tree\n"), confLimit); err != nil {
		t.Fatal(err)
	}
	f.Close()
	// /dev/zero last: without the limit it would allocate until the test process ends.
	for _, path := range []string{huge, fifo, "/dev/zero"} {
		done := make(chan map[string]string, 1)
		go func() { done <- ncclEnv([]string{"NCCL_CONF_FILE=" + path}) }()
		select {
		case env := <-done:
			if len(env) != 0 {
				t.Errorf("%s: ncclEnv = %q, want NCCL_CONF_FILE's lines past the limit left unread", path, env)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: reading NCCL_CONF_FILE does not return", path)
		}
	}
}

// TestScenarioIntegersAreDecimal: the scenario's integer flags, which a
// space's [simulator] table gives, are read in decimal, as the space reads
// them (gpus_per_node = "010" is 10 GPUs to its rank count): the flag
// package read a leading 0 as octal, 8 GPUs, and took 0x hexadecimal.
func TestScenarioIntegersAreDecimal(t *testing.T) {
	sc, fs := scenarioFlags(nil)
	if err := fs.Parse([]string{"-nodes=010", "-gpus_per_node=08", "-seed=010"}); err != nil {
		t.Fatal(err)
	}
	if sc.Nodes != 10 || sc.GPUsPerNode != 8 || sc.Seed != 10 {
		t.Errorf("-nodes=010 -gpus_per_node=08 -seed=010: %d nodes, %d GPUs per node, seed %d; want 10, 8, 10", sc.Nodes, sc.GPUsPerNode, sc.Seed)
	}
	for _, arg := range []string{"-nodes=0x2", "-gids=1_0", "-seed=0b1"} {
		if err := CheckScenario([]string{arg}); err == nil {
			t.Errorf("%s: taken", arg)
		}
	}
}

// TestScenarioIntegerOutOfRange: an integer flag past int64
// (seed = "99999999999999999999") was refused as not a decimal integer,
// which it is, as nccltune's own flags were before 9cc9d8c.
func TestScenarioIntegerOutOfRange(t *testing.T) {
	for _, arg := range []string{"-seed=99999999999999999999", "-nodes=-99999999999999999999"} {
		if err := CheckScenario([]string{arg}); err == nil || !strings.Contains(err.Error(), "out of range") {
			t.Errorf("%s: %v, want out of range", arg, err)
		}
	}
}

// TestRowsArePrintedAsNCCLTestsPrintsThem: every row the simulator prints is
// the line nccl-tests 2.19.6 prints for its numbers (nccltests.FormatRow,
// checked against its recorded output): 1250.6 GB/s, not 1250.61; a
// count of wrong elements of 1.72316e+07; N/A in the in-place check of
// alltoall and sendrecv, which nccl-tests does not check; and a footer
// that counts the wrong halves, with exit status 7, as nccl-tests does.
func TestRowsArePrintedAsNCCLTestsPrintsThem(t *testing.T) {
	oneGPU := []string{"-nodes=1", "-gpus_per_node=1", "-noise=0"}
	for _, tc := range []struct {
		scenario, env, args []string
		code, halvesWrong   int
	}{
		{oneGPU, nil, []string{"-b", "8", "-e", "8G", "-f", "8", "-g", "1"}, 0, 0},
		{[]string{"-nodes=2", "-fabric=tcp", "-noise=0"}, []string{"NCCL_PROTO=LL128"}, []string{"-b", "1G", "-e", "16G", "-f", "4", "-g", "16", "-d", "int8"}, 7, 6},
		{[]string{"-nodes=2", "-fabric=tcp", "-noise=0"}, []string{"NCCL_PROTO=LL128"}, []string{"-b", "1G", "-e", "1G", "-g", "16", "-c", "0"}, 0, 0},
	} {
		for coll := range collectives {
			var out, errOut bytes.Buffer
			argv := append(append(slices.Clone(tc.scenario), coll+"_perf"), tc.args...)
			code := Main(argv, tc.env, &out, &errOut)
			rep, err := nccltests.Parse(bytes.NewReader(out.Bytes()))
			halves := tc.halvesWrong
			if nccltests.InPlaceUnsupported(coll) {
				halves /= 2
			}
			if err != nil || code != tc.code || rep.OutOfBounds != int64(halves) && (coll == "all_reduce" || tc.halvesWrong == 0) {
				t.Errorf("%s %v: exit %d, %v, out of bounds %d; want exit %d, %d\n%s%s", coll, tc.args, code, err, rep.OutOfBounds, tc.code, halves, out.String(), errOut.String())
			}
			var lines []string // the table's rows: what is neither a comment nor NCCL's log
			for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
				if !strings.HasPrefix(line, "#") && !strings.HasPrefix(line, "simnode") {
					lines = append(lines, line)
				}
			}
			if len(lines) != len(rep.Rows) {
				t.Fatalf("%s: %d rows read of\n%s", coll, len(rep.Rows), strings.Join(lines, "\n"))
			}
			for i, line := range lines {
				if want := nccltests.FormatRow(rep.Rows[i]); line != want {
					t.Errorf("%s printed\n%q\nwhere nccl-tests prints\n%q", coll, line, want)
				}
			}
			for _, row := range rep.Rows {
				if nccltests.InPlaceUnsupported(coll) && row.InPlace.Wrong != -1 {
					t.Errorf("%s: in-place #wrong %d; nccl-tests prints N/A", coll, row.InPlace.Wrong)
				}
			}
		}
	}
}

// TestTakesNCCLTestsOptions: the simulator takes every option nccl-tests
// takes, as its getopt_long reads them (a value attached, a long name or
// its prefix), where it measured nothing before: a space's benchmark.args
// of -G 1 -z 1 -a 1 failed every trial on the simulated cluster, exit 1,
// though nccl-tests runs them and prints the same table.
func TestTakesNCCLTestsOptions(t *testing.T) {
	for _, args := range [][]string{
		{"-G", "1", "-z", "1", "-a", "1", "-m", "1", "-p", "0", "-y", "0", "-R", "0", "-u", "0", "-C", "0", "-S", "0", "-I", "0", "-M", "1", "-T", "60"},
		{"-G1", "--cudagraph=1", "--average", "2", "--blocking=1", "-b8", "--maxbytes=1M", "--stepf", "8", "-g16"},
	} {
		args = append([]string{"-b", "8", "-e", "1M", "-f", "8", "-g", "16"}, args...)
		rep, code, out := simulate(t, twoNodeIB, nil, args...)
		if code != 0 || len(rep.Rows) != 6 {
			t.Errorf("%q: exit %d, %d rows\n%s", args, code, len(rep.Rows), out)
		}
	}
}

// TestHeaderIsNCCLTests: the simulator's header lines are nccl-tests
// 2.19.6's, numbers aside: its parameters end in "unalign: 0", and a
// rank's GPU has a PCI address, as recorded on an H200.
func TestHeaderIsNCCLTests(t *testing.T) {
	real, err := os.ReadFile("../nccltests/testdata/h200-nccl2.28.3-tests2.19.6/all_reduce_perf.txt")
	if err != nil {
		t.Fatal(err)
	}
	host, number := regexp.MustCompile(` on \S+`), regexp.MustCompile(`[0-9a-f]*[0-9][0-9a-f]*`)
	shape := func(line string) string {
		return number.ReplaceAllString(host.ReplaceAllString(strings.Join(strings.Fields(line), " "), " on HOST"), "N")
	}
	want := map[string]string{}
	for _, line := range strings.Split(string(real), "\n") {
		if f := strings.Fields(line); len(f) > 1 && (f[1] == "nThread" || f[1] == "Rank") {
			want[f[1]] = shape(strings.TrimSuffix(line, " NVIDIA H200"))
		}
	}
	_, _, out := simulate(t, twoNodeIB, nil, "-g", "16")
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 1 && want[f[1]] != "" && shape(strings.TrimSuffix(line, " Simulated GPU")) != want[f[1]] {
			t.Errorf("%s\nis not shaped as nccl-tests'\n%s", shape(line), want[f[1]])
		}
	}
}

// TestThreadsAreAnyMultipleOfTheWarp: NCCL takes NCCL_NTHREADS as any
// multiple of 32 from 64 to 512 (getNthreads, tuning.cc), which the space
// loads; the simulator failed 96 as invalid.
func TestThreadsAreAnyMultipleOfTheWarp(t *testing.T) {
	sc, err := ParseScenario(twoNodeIB)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		value string
		ok    bool
	}{{"96", true}, {"480", true}, {"100", false}, {"544", false}} {
		if _, err := Evaluate(sc, "all_reduce", map[string]string{"NCCL_NTHREADS": tc.value}, []int64{1 << 20}); (err == nil) != tc.ok {
			t.Errorf("NCCL_NTHREADS=%s: %v", tc.value, err)
		}
	}
}

// TestNoHelperSockets: NCCL 2.28.9 takes NCCL_SOCKET_NTHREADS=0 or
// NCCL_NSOCKS_PERTHREAD=0 as no helper sockets, its control socket carrying
// the data (net_socket.cc), which the space loads; the simulator failed it.
func TestNoHelperSockets(t *testing.T) {
	tcp := []string{"-nodes=2", "-fabric=tcp", "-noise=0"}
	for _, env := range [][]string{{"NCCL_SOCKET_NTHREADS=0"}, {"NCCL_SOCKET_NTHREADS=4", "NCCL_NSOCKS_PERTHREAD=0"}} {
		if rep, code, out := simulate(t, tcp, env, "-b", "1M", "-e", "1M", "-g", "16"); code != 0 || len(rep.Rows) != 1 {
			t.Errorf("%v: exit %d\n%s", env, code, out)
		}
	}
}
