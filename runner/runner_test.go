package runner

import (
	"bytes"
	"context"
	"math"
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

	"github.com/nccltune/nccltune/internal/safego"
	"github.com/nccltune/nccltune/internal/simtest"
	"github.com/nccltune/nccltune/runner/mpitag"
	"github.com/nccltune/nccltune/runner/nccllog"
	"github.com/nccltune/nccltune/space"
)

const goodTable = `#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
        1024           256     float     sum      -1    20.50    0.05    0.09       0    19.93    0.05    0.09       0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 0.09
`

// tableJob runs program as an nccl-tests binary measuring goodTable's one size.
func tableJob(program string) Job {
	return Job{Benchmark: NCCLTests{Binary: program, Collective: "all_reduce", GPUs: 1, Check: true},
		Plan: Plan{Sizes: space.Sizes{Min: 1024, Max: 1024, Factor: 2}, Iters: 20, Warmup: 5}, Timeout: 10 * time.Second}
}

// script writes an executable shell script and returns its path.
func script(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "bench.sh")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRunClassifies(t *testing.T) {
	dir := t.TempDir()
	table := filepath.Join(dir, "table.txt")
	os.WriteFile(table, []byte(goodTable), 0o644)
	wrongTable := filepath.Join(dir, "wrong.txt")
	os.WriteFile(wrongTable, []byte(strings.Replace(goodTable, "0.09       0    19.93", "0.09       5    19.93", 1)), 0o644)
	for _, tc := range []struct {
		name   string
		body   string
		kind   FailureKind
		reason string
	}{
		{"success", "cat " + table, "", ""},
		{"garbage", "echo 'Segmentation fault (core dumped)'; echo '%%%'", FailUnparsable, "no result rows"},
		{"nccl failure", "cat " + table + "; echo \"node1: Test NCCL failure common.cu:1005 'unhandled system error / NET/IB'\"; exit 3", FailNCCL, "exit status 3 (NCCL error): node1: Test NCCL failure common.cu:1005 'unhandled system error"},
		{"harmless NCCL WARN", "echo 'node1:1:1 [0] NCCL WARN Could not find real path of /sys/class/net/ib0'; cat " + table, "", ""},
		{"harmless NCCL WARN after the table, NCCL's last error in the footer", "cat " + table + "; echo 'node1:1:1 [0] NCCL WARN NET/IB : Got async event : port error'; echo '# error: NET/IB : Got async event : port error'", "", ""},
		{"nccl failure after the table, exit status swallowed", "cat " + table + "; echo \"node1: Test NCCL failure common.cu:1786 'unhandled cuda error / '\"", FailNCCL,
			"nccl-tests stopped on an error, though the exit status was 0: node1: Test NCCL failure common.cu:1786"},
		{"nccl failure named after warnings", "for i in $(seq 60); do echo 'node1:1:1 [0] NCCL WARN Cuda failure 2'; done; echo \"node1: Test NCCL failure common.cu:1005 'unhandled cuda error'\"; exit 3", FailNCCL,
			"exit status 3 (NCCL error): node1: Test NCCL failure common.cu:1005"},
		{"too many GPUs", "echo 'Invalid number of GPUs: 2 requested but only 1 were found.'; echo ' .. vm pid 1657: Test failure common.cu:1454'; exit 5", FailLaunch, "exit status 5 (not supported by this build or launch): Invalid number of GPUs"},
		{"exit 3 silently", "exit 3", FailNCCL, "exit status 3 (NCCL error)"},
		{"exit 7", "cat " + table + "; exit 7", FailWrong, "exit status 7"},
		{"other exit", "cat " + table + "; exit 9", FailExit, "exit status 9"},
		// As the dynamic loader, a shell or env exit: no rank ran, whatever the settings.
		{"missing shared library", "echo './all_reduce_perf: error while loading shared libraries: libnccl.so.2: cannot open shared object file: No such file or directory' >&2; exit 127", FailLaunch,
			"exit status 127 (a program could not be started): ./all_reduce_perf: error while loading shared libraries: libnccl.so.2"},
		{"not executable", "echo 'sh: 1: ./all_reduce_perf: Permission denied' >&2; exit 126", FailLaunch, "exit status 126 (a program could not be started)"},
		{"wrong results", "cat " + wrongTable, FailWrong, "5 wrong elements at 1024 bytes"},
		// As nccl-tests exits where it found wrong data: the table says where.
		{"wrong results, exit 7", "cat " + wrongTable + "; exit 7", FailWrong, "exit status 7 (wrong data, or bus bandwidth under NCCL_TESTS_MIN_BW): 5 wrong elements at 1024 bytes"},
		{"signal", "cat " + table + "; kill -SEGV $$", FailSignal, "segmentation fault"},
		// As mpirun and srun report a rank killed by SIGSEGV.
		{"signal of a rank", "cat " + table + "; exit 139", FailSignal, "exit status 139: a process killed by signal 11 (segmentation fault)"},
		{"real-time signal", "cat " + table + "; kill -34 $$", FailSignal, "killed by signal 34 (real-time signal 34)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Runner{Launcher: Local{}}
			res := r.Run(context.Background(), tableJob(script(t, tc.body)))
			if tc.kind == "" {
				if res.Failure != nil || len(res.Measurement.Rows) != 1 || res.Exit.Code != 0 {
					t.Fatalf("failure %v, measurement %+v", res.Failure, res.Measurement)
				}
				return
			}
			if res.Failure == nil || res.Failure.Kind != tc.kind || !strings.Contains(res.Failure.Reason, tc.reason) {
				t.Fatalf("failure = %v; want %s containing %q\noutput: %s", res.Failure, tc.kind, tc.reason, res.Output)
			}
		})
	}
}

// TestExitFailureSignalNames: a real-time signal (Go names it only "signal
// 34") is named one, and an exit status above 128+64 (SIGRTMAX) is no
// signal's. Without signalName the real-time cases read "(signal 34)".
func TestExitFailureSignalNames(t *testing.T) {
	none := func(int) *Failure { return nil }
	for _, tc := range []struct {
		exit   Exit
		kind   FailureKind
		reason string
	}{
		{Exit{Code: -1, Signal: syscall.SIGKILL}, FailSignal, "killed by signal 9 (killed): boom"},
		{Exit{Code: -1, Signal: syscall.SIGSYS}, FailSignal, "killed by signal 31 (bad system call): boom"},
		{Exit{Code: -1, Signal: 32}, FailSignal, "killed by signal 32 (real-time signal 32): boom"},
		{Exit{Code: -1, Signal: 34}, FailSignal, "killed by signal 34 (real-time signal 34): boom"},
		{Exit{Code: -1, Signal: 64}, FailSignal, "killed by signal 64 (real-time signal 64): boom"},
		{Exit{Code: 128 + 34}, FailSignal, "exit status 162: a process killed by signal 34 (real-time signal 34): boom"},
		{Exit{Code: 128 + 64}, FailSignal, "exit status 192: a process killed by signal 64 (real-time signal 64): boom"},
		{Exit{Code: 128}, FailExit, "exit status 128: boom"},
		{Exit{Code: 128 + 65}, FailExit, "exit status 193: boom"},
		{Exit{Code: 255}, FailExit, "exit status 255: boom"},
	} {
		f := exitFailure(tc.exit, "boom", none)
		if f == nil || f.Kind != tc.kind || f.Reason != tc.reason {
			t.Errorf("exitFailure(%+v) = %v, want %s: %s", tc.exit, f, tc.kind, tc.reason)
		}
	}
}

// TestPythonCouldNotStart: a Python program whose interpreter could not
// open its script (the DDP step's, where benchmark.script_dir is not shared
// with a node; a training script's path mistyped) or find its module (-m)
// ran nothing, whatever the settings, as a missing binary: Python exits 2
// (or 1), which read as the settings' exit.
func TestPythonCouldNotStart(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	user := func(argv ...string) Benchmark {
		return UserCommand{Argv: argv, Metric: space.Metric{Regex: `step ([0-9.]+)`, Goal: "min"}, regex: regexp.MustCompile(`step ([0-9.]+)`)}
	}
	for _, tc := range []struct {
		bench        Benchmark
		status, says string
	}{
		{DDPStep{Program: []string{python, "/nonexistent/ddp_step.py"}}, "exit status 2", "python3: can't open file '/nonexistent/ddp_step.py': [Errno 2] No such file or directory"},
		{user(python, "/nonexistent/pretrain_gpt.py"), "exit status 2", "python3: can't open file '/nonexistent/pretrain_gpt.py'"},
		{user(python, "-m", "no_such_module_of_nccltune"), "exit status 1", "python3: No module named no_such_module_of_nccltune"},
	} {
		r := &Runner{Launcher: Local{}, BaseEnv: BaseEnv()}
		res := r.Run(context.Background(), Job{Benchmark: tc.bench, Timeout: time.Minute})
		if f := res.Failure; f == nil || f.Kind != FailLaunch || !strings.HasPrefix(f.Reason, tc.status+" (a program could not be started): ") || !strings.Contains(f.Reason, tc.says) {
			t.Errorf("%v: failure = %v, want launch: %s (a program could not be started): ...%s\n%s", tc.bench, f, tc.status, tc.says, res.Output)
		}
	}
}

func TestRunMissingBinary(t *testing.T) {
	r := &Runner{Launcher: Local{}}
	res := r.Run(context.Background(), tableJob("/nonexistent/all_reduce_perf"))
	if res.Failure == nil || res.Failure.Kind != FailLaunch {
		t.Fatalf("failure = %v", res.Failure)
	}
}

// TestTimeoutKillsProcessGroup runs a benchmark that hangs and leaves a
// grandchild that also hangs (as mpirun leaves its ranks); after the timeout
// both must be gone.
func TestTimeoutKillsProcessGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	body := "trap '' TERM\nsleep 300 &\necho $! > " + pidFile + "\necho started\nwait\n"
	r := &Runner{Launcher: Local{}, Grace: 200 * time.Millisecond}
	start := time.Now()
	job := tableJob(script(t, body))
	job.Timeout = 500 * time.Millisecond
	res := r.Run(context.Background(), job)
	if res.Failure == nil || res.Failure.Kind != FailTimeout {
		t.Fatalf("failure = %v, output %q", res.Failure, res.Output)
	}
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("Run returned after %s", elapsed)
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	deadline := time.Now().Add(3 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("grandchild %d survived the timeout", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestInterruptIsNotAFailureOfTheConfig(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	r := &Runner{Launcher: Local{}, Grace: 100 * time.Millisecond}
	res := r.Run(ctx, tableJob(script(t, "sleep 30")))
	if res.Failure == nil || res.Failure.Kind != FailInterrupted {
		t.Fatalf("failure = %v", res.Failure)
	}
	// Stopped before it starts (another group's trial stopped the campaign): no failure of its own either.
	res = r.Run(ctx, tableJob(script(t, "sleep 30")))
	if res.Failure == nil || res.Failure.Kind != FailInterrupted {
		t.Fatalf("stopped before the start: failure = %v", res.Failure)
	}
}

func TestEnvironmentReachesTheBenchmark(t *testing.T) {
	t.Setenv("NCCL_ALGO", "Tree") // a user's shell setting must not leak into trials
	r := &Runner{Launcher: Local{}, BaseEnv: BaseEnv()}
	job := tableJob(script(t, `echo "algo=[$NCCL_ALGO] proto=[$NCCL_PROTO] path=[${PATH:+set}] supervised=[$`+superviseEnv+`]"`))
	job.Env = []string{"NCCL_PROTO=Simple"}
	res := r.Run(context.Background(), job)
	if got := string(res.Output); !strings.Contains(got, "algo=[] proto=[Simple] path=[set] supervised=[]") {
		t.Fatalf("benchmark saw %q", got)
	}
}

func TestCaptureKeepsHeadAndTail(t *testing.T) {
	c := &capture{limit: 1000}
	for i := range 10000 {
		c.Write([]byte(strconv.Itoa(i % 10)))
	}
	c.Write([]byte("THE END"))
	out := string(c.Bytes())
	if !strings.HasPrefix(out, "0123456789") || !strings.HasSuffix(out, "THE END") || len(out) > 1100 || !strings.Contains(out, "bytes of output dropped") {
		t.Fatalf("captured %d bytes: %q...%q", len(out), out[:20], out[len(out)-20:])
	}
}

// TestCaptureBoundsKeptLines: the lines keep keeps are bounded by the
// limit however short they are; empty ones, which a metric may match, too.
func TestCaptureBoundsKeptLines(t *testing.T) {
	for _, tc := range []struct {
		name string
		line string
	}{
		{"empty lines", "\n"},
		{"carriage returns", "\r\n"},
		{"one character", "7\n"},
		{"metric lines", "step time: 12.5 ms\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &capture{limit: 1000, keep: func(string) bool { return true }}
			chunk := []byte(strings.Repeat(tc.line, 1000))
			for range 100 {
				c.Write(chunk)
			}
			kept, size := len(keptLines(c)), 0
			for _, l := range keptLines(c) {
				size += len(l) + 1
			}
			if size > 1000 || kept > 1000 {
				t.Errorf("kept %d lines, %d bytes with their newlines, from 100,000 lines; the limit is 1000 bytes", kept, size)
			}
			if kept == 0 {
				t.Error("kept no line")
			}
		})
	}
}

// TestCaptureJoinsRanksChunks: Open MPI's mpirun --tag-output tags each
// chunk of a rank's output it passes on, not each line; the capture joins
// each rank's chunks into its line, under its first chunk's tag, wherever
// the launcher's output is cut into writes (inside a tag too). A '\r' ends
// a rank's line as it ends any (a progress bar's values), "\r\n" one line.
// Untagged output passes as it came.
func TestCaptureJoinsRanksChunks(t *testing.T) {
	for _, tc := range []struct {
		name, in, out string
		kept          []string
	}{
		{"chunks of two ranks",
			"mpirun: starting\n[1,0]<stdout>:ms: 1Mon Dec  7 04:05:01 2026[1,1]<stdout>:ms: 100\n[1,0]<stdout>:0[1,0]<stdout>:0\n" +
				"[1,1]<stderr>:\rt=1\rt=2[1,1]<stderr>:\r\n[1,0]<stdout>:a\r[1,0]<stdout>:\n[1,0]<stdout>:end",
			"mpirun: starting\nMon Dec  7 04:05:01 2026[1,1]<stdout>:ms: 100\n[1,0]<stdout>:ms: 100\n" +
				"[1,1]<stderr>:\r[1,1]<stderr>:t=1\r[1,1]<stderr>:t=2\r\n[1,0]<stdout>:a\r\n[1,0]<stdout>:end\n",
			[]string{"mpirun: starting", "Mon Dec  7 04:05:01 2026[1,1]<stdout>:ms: 100", "[1,0]<stdout>:ms: 100",
				"[1,1]<stderr>:", "[1,1]<stderr>:t=1", "[1,1]<stderr>:t=2", "[1,0]<stdout>:a", "[1,0]<stdout>:end"}},
		{"untagged", "plain [1,0] text\r\nSun Dec  6 14:45:56 2026<stdout>:x\n[rank0]: y\n[1,0]<stdout",
			"plain [1,0] text\r\nSun Dec  6 14:45:56 2026<stdout>:x\n[rank0]: y\n[1,0]<stdout",
			[]string{"plain [1,0] text", "Sun Dec  6 14:45:56 2026<stdout>:x", "[rank0]: y", "[1,0]<stdout"}},
	} {
		for i := range len(tc.in) + 1 {
			c := &capture{limit: 1 << 20, keep: func(string) bool { return true }}
			c.Write([]byte(tc.in[:i]))
			c.Write([]byte(tc.in[i:]))
			if out := string(c.Bytes()); out != tc.out {
				t.Fatalf("%s, written as %q and %q: output\n%q\nwant\n%q", tc.name, tc.in[:i], tc.in[i:], out, tc.out)
			}
			if kept := keptLines(c); !slices.Equal(kept, tc.kept) {
				t.Fatalf("%s, written as %q and %q: kept\n%q\nwant\n%q", tc.name, tc.in[:i], tc.in[i:], kept, tc.kept)
			}
		}
	}
}

// TestCaptureBoundsARanksLine: a rank's line waits for its newline, but
// one that sends none is cut at a line's bound (mpitag.MaxLine): the output
// says so, and no part of it is read as a line (cut, "ms: 1" and
// "000...0"); the other ranks' lines, and its own after its newline, are
// read.
func TestCaptureBoundsARanksLine(t *testing.T) {
	var offered []string
	c := &capture{limit: maxOutput, keep: func(line string) bool {
		offered = append(offered, line)
		return true
	}}
	c.Write([]byte("[1,0]<stdout>:ms: 1"))
	chunk := []byte("[1,0]<stdout>:" + strings.Repeat("0", 4000))
	for i := range 2500 { // 10 MB
		c.Write(chunk)
		if i%100 == 0 {
			c.Write([]byte("[1,1]<stdout>:ms: 5\n"))
		}
	}
	c.Write([]byte("[1,0]<stdout>:0\n[1,0]<stdout>:ms: 7\n"))
	out := c.Bytes()
	note := "[1,0]<stdout>:" + mpitag.CutNote
	for _, l := range keptLines(c) {
		if l != "[1,1]<stdout>:ms: 5" && l != "[1,0]<stdout>:ms: 7" && l != note {
			t.Errorf("kept %.60q... (%d bytes)", l, len(l))
		}
	}
	if n := len(offered); n != 27 {
		t.Errorf("%d lines offered, want rank 1's 25, the note of rank 0's cut line and its last", n)
	}
	if !bytes.Contains(out, []byte(note+"\n")) {
		t.Errorf("the output does not say that rank 0's line was cut: %.200q", out)
	}
}

func TestDescendants(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 30 & sleep 30 & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	deadline := time.Now().Add(3 * time.Second)
	for len(descendants(cmd.Process.Pid)) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("descendants = %v, want two sleeps", descendants(cmd.Process.Pid))
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, p := range descendants(cmd.Process.Pid) {
		syscall.Kill(p.pid, syscall.SIGKILL)
	}
}

func TestRunClassifiesDDP(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		kind       FailureKind
		reason     string
	}{
		{"result", `echo 'NCCLTUNE_DDP {"rank": 0, "world": 1, "steps": 3, "step_ms_mean": 12.5}'`, "", ""},
		{"oom", `echo 'NCCLTUNE_DDP_ERROR {"kind": "oom", "message": "out of GPU memory with 7000000000 parameters"}'; exit 2`, FailOOM, "out of GPU memory"},
		{"no torch", `echo 'NCCLTUNE_DDP_ERROR {"kind": "no_torch", "message": "PyTorch is not installed"}'; exit 2`, FailLaunch, "PyTorch is not installed"},
		{"nccl", `echo 'NCCLTUNE_DDP_ERROR {"kind": "nccl", "message": "NCCL error: unhandled system error"}'; exit 2`, FailNCCL, "unhandled system error"},
		{"traceback", "echo 'Traceback (most recent call last):'; echo 'ValueError: bad'; exit 1", FailExit, "exit status 1: ValueError: bad"},
		{"silent", "exit 0", FailUnparsable, "no NCCLTUNE_DDP result"},
	} {
		r := &Runner{Launcher: Local{}}
		res := r.Run(context.Background(), Job{Benchmark: DDPStep{Program: []string{script(t, tc.body)}}, Plan: Plan{Iters: 3}, Timeout: 10 * time.Second})
		switch {
		case tc.kind == "" && (res.Failure != nil || res.Measurement == nil || res.Measurement.Value != 1e3/12.5):
			t.Errorf("%s: %v %+v", tc.name, res.Failure, res.Measurement)
		case tc.kind != "" && (res.Failure == nil || res.Failure.Kind != tc.kind || !strings.Contains(res.Failure.Reason, tc.reason)):
			t.Errorf("%s: failure %v; want %s containing %q", tc.name, res.Failure, tc.kind, tc.reason)
		}
	}
}

func TestRunReadsTheUserMetric(t *testing.T) {
	megatron := "for ms in 900 100 101 99 130; do echo \" iteration | elapsed time per iteration (ms): $ms | loss 2.0\"; done"
	for _, tc := range []struct {
		name   string
		metric space.Metric
		body   string
		value  float64
		kind   FailureKind
		reason string
	}{
		{"median after warm-up", space.Metric{Regex: `per iteration \(ms\): ([0-9.]+)`, Goal: "min", Skip: 1}, megatron, 1 / 100.5, "", ""},
		{"rate", space.Metric{Regex: `per iteration \(ms\): ([0-9.]+)`, Goal: "max"}, megatron, 101, "", ""},
		{"json line", space.Metric{JSON: "tokens_per_s", Goal: "max"}, `echo '[0,0]<stdout>: {"step": 1, "tokens_per_s": 5e4}'; echo '{"tokens_per_s": "6e4"}'`, 5.5e4, "", ""},
		{"all warm-up", space.Metric{Regex: `per iteration \(ms\): ([0-9.]+)`, Goal: "min", Skip: 5}, megatron, 0, FailUnparsable, "the first 5 of each rank's are warm-up"},
		{"no metric", space.Metric{JSON: "ms", Goal: "min"}, "echo done", 0, FailUnparsable, "0 values"},
		{"zero", space.Metric{Regex: `t=(\S+)`, Goal: "min"}, "echo t=0", 0, FailImplausible, `"0", not a positive number`},
		{"infinite", space.Metric{Regex: `t=(\S+)`, Goal: "min"}, "echo t=1e400", 0, FailImplausible, "not a positive number"},
		{"nan", space.Metric{Regex: `t=(\S+)`, Goal: "min"}, "echo t=NaN", 0, FailImplausible, "not a positive number"},
		{"oom", space.Metric{Regex: `t=(\S+)`, Goal: "min"}, "echo 'torch.OutOfMemoryError: CUDA out of memory.'; exit 1", 0, FailOOM, "CUDA out of memory"},
		{"nccl", space.Metric{Regex: `t=(\S+)`, Goal: "min"}, "echo t=5; echo 'torch.distributed.DistBackendError: NCCL error in: x.cpp:1, remote process exited'; exit 1", 0, FailNCCL, "exit status 1"},
		{"harmless words on success", space.Metric{Regex: `t=(\S+)`, Goal: "min"}, "echo 'NCCL INFO no NCCL error here'; echo t=5", 0.2, "", ""},
		// A text in the metric's place that is no number does not match it; a number that is no plausible value fails.
		{"no number", space.Metric{Regex: `t=([0-9.]+)`, Goal: "min"}, "echo t=5; echo 'version t=1.2.3'; echo t=7", 1.0 / 6, "", ""},
		{"only no numbers", space.Metric{Regex: `t=([0-9.]+)`, Goal: "min"}, "echo t=1.2.3", 0, FailUnparsable, "0 values"},
		// Where every match is no number, the reason names one, as a unit or a locale's comma in the group.
		{"a unit in the group", space.Metric{Regex: `t=(\S+)`, Goal: "min"}, "echo t=5ms; echo t=6ms", 0, FailUnparsable, `2 matches of it held no number, such as "5ms"`},
		{"a decimal comma", space.Metric{Regex: `t=(\S+)`, Goal: "min"}, "echo t=5,25", 0, FailUnparsable, `1 match of it held no number, such as "5,25"`},
		// A number is read as printf writes one: Go's own forms fail, as an infinity does.
		{"a hexadecimal float", space.Metric{Regex: `t=(\S+)`, Goal: "min"}, "echo t=0x1p3; echo t=5", 0, FailImplausible, `"0x1p3", not a positive number`},
		{"underscores", space.Metric{Regex: `t=(\S+)`, Goal: "min"}, "echo t=1_000", 0, FailImplausible, `"1_000", not a positive number`},
		{"+Inf", space.Metric{Regex: `t=(\S+)`, Goal: "min"}, "echo t=+Inf", 0, FailImplausible, `"+Inf", not a positive number`},
		{"a JSON string in Go's form", space.Metric{JSON: "ms", Goal: "min"}, `echo '{"ms": "0x1p3"}'`, 0, FailImplausible, `"0x1p3", not a positive number`},
		// Python's json writes a float JSON has no form of as a bare NaN or Infinity: a metric of
		// one fails as "nan" does under a regex, and another key's hides no line of the metric.
		{"a JSON NaN, as Python writes it", space.Metric{JSON: "ms", Goal: "min"}, `echo '{"ms": NaN}'; echo '{"ms": 5}'`, 0, FailImplausible, `"NaN", not a positive number`},
		{"a JSON -Infinity", space.Metric{JSON: "ms", Goal: "min"}, `echo '{"ms": 5}'; echo '{"ms": -Infinity}'`, 0, FailImplausible, `"-Infinity", not a positive number`},
		{"another JSON key's NaN", space.Metric{JSON: "ms", Goal: "min"}, `echo '{"loss": NaN, "ms": 5}'; echo '{"loss": Infinity, "ms": 7, "note": "NaN"}'`, 1.0 / 6, "", ""},
		// The metric given twice on one line is ambiguous, not its first (or last) value.
		{"two numbers on a line", space.Metric{Regex: `time: ([0-9.]+)`, Goal: "min"}, "echo 'time: 5 ms, data time: 1 ms'", 0, FailUnparsable, "its regex matches 2 numbers on one line (5, 1)"},
		// Two ranks' lines run together (PYTHONUNBUFFERED=1: text and newline in two writes) are each read.
		{"ranks' lines run together", space.Metric{Regex: `step_ms: ([0-9.]+)`, Goal: "min"}, `printf 'step 9 step_ms: 0.5step 10 step_ms: 0.25\n\n'`, 1 / 0.375, "", ""},
		{"ranks' JSON lines run together", space.Metric{JSON: "ms", Goal: "min"}, `printf '[x] {"step": 9, "ms": 0.5}[x] {"step": 10, "ms": 0.25}\n\n'`, 1 / 0.375, "", ""},
		// A launcher tags each write: run-together lines are each their rank's, skip per rank, and
		// the newline's own tag follows them (Open MPI 4.1.4's mpirun --tag-output, PYTHONUNBUFFERED=1).
		{"mpirun ranks' lines run together", space.Metric{Regex: `ms: ([0-9.]+)`, Goal: "max", Skip: 1},
			`printf '[1,1]<stdout>:step 0 ms: 100[1,0]<stdout>:step 0 ms: 100[1,1]<stdout>:\n[1,0]<stdout>:\n[1,0]<stdout>:step 1 ms: 5\n[1,1]<stdout>:step 1 ms: 7\n'`, 6, "", ""},
		// A write mpirun passed on in two chunks of its rank's, on one line, is one line's text, not two.
		{"a rank's line in two chunks", space.Metric{Regex: `ms: ([0-9.]+)`, Goal: "max"},
			`printf '[1,0]<stdout>:step 0 ms: 10[1,0]<stdout>:0\n[1,1]<stdout>:step 0 ms: 100\nSun Dec  6 14:45:56 2026[1,0]<stdout>:step 1 ms: 1Sun Dec  6 14:45:57 2026[1,0]<stdout>:00\n'`, 100, "", ""},
		// mpirun passes on a rank's line in chunks as the rank writes it, another rank's line between them:
		// the rank's chunks up to its newline are its line, 100, not 1 and a part that matches nothing.
		{"a rank's line in chunks, another rank's line between", space.Metric{Regex: `ms: ([0-9.]+)`, Goal: "max"},
			`printf '[1,0]<stdout>:ms: 1[1,1]<stdout>:ms: 100\n[1,0]<stdout>:00\n'`, 100, "", ""},
		{"a rank's line in timestamped chunks, another rank's line between", space.Metric{Regex: `^step \d+ ms: ([0-9.]+)$`, Goal: "max"},
			`printf 'Mon Dec  7 04:05:01 2026[1,0]<stdout>:step 0 ms: 1Mon Dec  7 04:05:01 2026[1,1]<stdout>:step 0 ms: 100\nMon Dec  7 04:05:02 2026[1,0]<stdout>:0Mon Dec  7 04:05:02 2026[1,0]<stdout>:0\n'`, 100, "", ""},
		{"tagged ranks' lines run together", space.Metric{Regex: `ms: ([0-9.]+)`, Goal: "max", Skip: 1},
			`printf '[default1]:step 0 ms: 100[default0]:step 0 ms: 100\n[default0]:step 1 ms: 5\n[default1]:step 1 ms: 7\n'`, 6, "", ""},
		{"a tag's form in a tagged line's text", space.Metric{Regex: `gpu\[0\]: ([0-9.]+)`, Goal: "max"}, `echo '[1,0]<stdout>:gpu[0]: 5 gpu[1]: 9'`, 5, "", ""},
		{"ranks' JSON lines run together, the key named again", space.Metric{JSON: "ms", Goal: "min"}, `printf '{"name": "ms", "ms": 0.5}{"name": "ms", "ms": 0.25}\n\n'`, 1 / 0.375, "", ""},
		{"JSON lines run together, one without the key", space.Metric{JSON: "ms", Goal: "min"}, `printf '{"ms": 0.5, "x": {"ms": 1}}{"ms": 0.25, "x": {}}\n'`, 0, FailUnparsable, "0 values"},
		{"three ranks' lines run together", space.Metric{Regex: `t=([0-9.]+)`, Goal: "max"}, `printf 'x t=4 sx t=5 sx t=6 s\n\n\n'`, 5, "", ""},
		{"a number and a word on a line", space.Metric{Regex: `t=(\S+)`, Goal: "min"}, "echo 't=5 t=n/a'", 0.2, "", ""},
		{"a word and a number on a line", space.Metric{Regex: `t=(\S+)`, Goal: "min"}, "echo 't=n/a t=5'", 0.2, "", ""},
		{"a JSON key twice", space.Metric{JSON: "ms", Goal: "min"}, `echo '{"ms": 5, "ms": 500}'`, 0, FailUnparsable, `its key "ms" is given 2 times in one JSON object`},
		{"a JSON key twice, once escaped", space.Metric{JSON: "ms", Goal: "min"}, `echo '{"ms": 5, "\u006ds": 500}'`, 0, FailUnparsable, `its key "ms" is given 2 times`},
		{"another JSON key twice", space.Metric{JSON: "ms", Goal: "min"}, `echo '{"ms": 5, "step": 1, "step": 2}'`, 0.2, "", ""},
		// skip is per rank where the launcher tags the lines (torchrun, mpirun --tag-output).
		{"skip per rank", space.Metric{Regex: `t=(\S+)`, Goal: "min", Skip: 1},
			"echo '[rank0]: t=100'; echo '[rank1]: t=100'; echo '[rank0]: t=5'; echo '[rank1]: t=7'", 1.0 / 6, "", ""},
		{"skip per mpirun rank", space.Metric{Regex: `t=(\S+)`, Goal: "max", Skip: 1},
			"echo '[1,0]<stdout>: t=100'; echo '[1,1]<stdout>: t=100'; echo '[1,1]<stdout>: t=7'; echo '[1,0]<stdout>: t=5'", 6, "", ""},
		// A launcher's tag is no part of the line the program printed: a regex anchored at its start matches.
		{"an anchored regex on tagged lines", space.Metric{Regex: `^t=([0-9.]+)$`, Goal: "max", Skip: 1},
			"echo '[1,0]<stdout>:t=100'; echo '[1,1]<stdout>:t=100'; echo '[1,0]<stdout>:t=5'; echo '[default1]:[rank1]:t=7'", 6, "", ""},
		// A regex that names a tag picks that rank's lines, as it did before tags were taken off.
		{"a regex naming rank 0's tag", space.Metric{Regex: `^\[rank0\]: t=([0-9.]+)$`, Goal: "max"},
			"echo '[rank0]: t=5'; echo '[rank1]: t=100'; echo '[rank0]: t=7'", 6, "", ""},
		{"a regex naming an mpirun tag", space.Metric{Regex: `\[1,0\]<stdout>:t=([0-9.]+)`, Goal: "max"},
			"echo '[1,0]<stdout>:t=5'; echo '[1,1]<stdout>:t=100'", 5, "", ""},
		// A progress bar rewrites its line with '\r': each value counts, the first (warm-up) is skipped.
		{"a progress bar", space.Metric{Regex: `t=([0-9.]+)`, Goal: "min", Skip: 1}, `printf 't=500\rt=5\rt=6\rt=7\r\n'`, 1.0 / 6, "", ""},
		{"a progress bar, no warm-up", space.Metric{Regex: `t=([0-9.]+)`, Goal: "min"}, `printf 't=500\rt=5\rt=6\rt=7\rt=8'`, 1.0 / 7, "", ""},
		// A launcher tags the bar's line once, at its start: its later values are still that rank's, skip per rank.
		{"a progress bar per mpirun rank", space.Metric{Regex: `t=([0-9.]+)`, Goal: "max", Skip: 2},
			`printf '[1,0]<stderr>:\rt=100\rt=90\rt=5\n[1,1]<stderr>:\rt=100\rt=90\rt=7\n'`, 6, "", ""},
		// A line too long to read a metric from is passed over, not read cut inside its number (t=12|345).
		{"an over-long line", space.Metric{Regex: `t=([0-9]+)`, Goal: "max"}, "head -c 65532 /dev/zero | tr '\\0' x; echo t=12345; echo t=5", 5, "", ""},
		// Metric lines amid more output than is kept (NCCL's INFO log) are all read.
		{"past the cap", space.Metric{Regex: `^step t=(\S+)`, Goal: "max"},
			"yes 'NCCL INFO xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx' | head -c 5000000; echo; echo step t=4; echo step t=6; yes 'NCCL INFO yyyyyyyyyyyyyyy' | head -c 7000000", 5, "", ""},
		// More lines of the metric than a trial keeps: the values past them would not count (the
		// last half here, whose median is another), so the trial is no measurement of the run.
		{"more metric lines than are kept", space.Metric{Regex: `time: ([0-9.]+) ms`, Goal: "min"},
			`awk 'BEGIN { for (i = 0; i < 300000; i++) printf "step %d time: %d ms\n", i, i < 150000 ? 100 : 50 }'`, 0, FailUnparsable, "than a trial keeps"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := newUserCommand(space.BenchmarkSettings{Kind: space.Command, Command: []string{script(t, tc.body)}, Metric: tc.metric}, space.LauncherSettings{})
			if err != nil {
				t.Fatal(err)
			}
			res := (&Runner{Launcher: Local{}}).Run(context.Background(), Job{Benchmark: b, Timeout: 10 * time.Second})
			switch {
			case tc.kind == "" && (res.Failure != nil || math.Abs(res.Measurement.Value-tc.value) > 1e-12*tc.value):
				t.Errorf("failure %v, measurement %+v; want %v", res.Failure, res.Measurement, tc.value)
			case tc.kind != "" && (res.Failure == nil || res.Failure.Kind != tc.kind || !strings.Contains(res.Failure.Reason, tc.reason)):
				t.Errorf("failure %v; want %s containing %q", res.Failure, tc.kind, tc.reason)
			}
		})
	}
}

// TestRunReadsEachRanksLineWhole: Open MPI's mpirun --tag-output passes on
// a rank's output in chunks as it reads them, each tagged, other ranks'
// chunks and lines between them: nccl-tests' table row and the DDP step's
// result that came so are read whole, as their rank's lines, not as two
// parts that read as nothing.
func TestRunReadsEachRanksLineWhole(t *testing.T) {
	dir := t.TempDir()
	row := "        1024           256     float     sum      -1    20.50    0.05    0.09       0    19.93    0.05    0.09       0"
	header, footer, _ := strings.Cut(goodTable, row+"\n")
	tagged := func(text string) string {
		return "[1,0]<stdout>:" + strings.ReplaceAll(strings.TrimSuffix(text, "\n"), "\n", "\n[1,0]<stdout>:") + "\n"
	}
	table := tagged(header) + "[1,0]<stdout>:" + row[:60] +
		"[1,1]<stdout>:node2:7:7 [1] NCCL INFO comm 0x5 rank 1 nRanks 2 nNodes 1 localRanks 2 localRank 1 MNNVL 0\n" +
		"Mon Dec  7 04:05:01 2026[1,0]<stdout>:" + row[60:] + "\n" + tagged(footer)
	result := `[1,0]<stdout>:NCCLTUNE_DDP {"rank": 0, "world": 2, "steps": 3, "step_` +
		`[1,1]<stdout>:NCCLTUNE_DDP {"rank": 1, "world": 2, "steps": 3, "step_ms_mean": 20}` + "\n" +
		`[1,0]<stdout>:ms_mean": 12.5}` + "\n"
	for i, tc := range []struct {
		name, out string
		bench     func(program string) Benchmark
		check     func(m *Measurement) bool
	}{
		{"nccl-tests' row", table, func(p string) Benchmark { return tableJob(p).Benchmark },
			func(m *Measurement) bool {
				return len(m.Rows) == 1 && m.Rows[0].OutOfPlace.TimeUs == 20.50 && m.Rows[0].InPlace.TimeUs == 19.93
			}},
		{"the DDP step's result", result, func(p string) Benchmark { return DDPStep{Program: []string{p}} },
			func(m *Measurement) bool { return m.Value == 1e3/12.5 && m.Ranks == 2 }},
	} {
		out := filepath.Join(dir, strconv.Itoa(i))
		if err := os.WriteFile(out, []byte(tc.out), 0o644); err != nil {
			t.Fatal(err)
		}
		job := tableJob(script(t, "cat '"+out+"'"))
		job.Benchmark = tc.bench(job.Benchmark.(NCCLTests).Binary)
		res := (&Runner{Launcher: Local{}}).Run(context.Background(), job)
		if res.Failure != nil || !tc.check(res.Measurement) {
			t.Errorf("%s: failure %v, measurement %+v; output:\n%s", tc.name, res.Failure, res.Measurement, res.Output)
		}
	}
}

// TestNCCLLogReadsRanksLinesWhole: mpirun --tag-output tags each chunk it
// reads of a rank's output, and a record of NCCL's may come in several (its
// newline apart, as seen with Open MPI 4.1.4, or cut inside a value), with
// another rank's between them: read from the capture, each rank's parts
// are one record, its value whole and no tag a part of it, and one cut at
// 1023 bytes confirms the value it starts.
func TestNCCLLogReadsRanksLinesWhole(t *testing.T) {
	long := "/shared/topology/" + strings.Repeat("x", 1500) + ".xml"
	cut := ("h:1:1 [0] NCCL INFO NCCL_TOPO_FILE set by environment to " + long)[:1023]
	for _, tc := range []struct {
		name, log string
		env       []string
		version   string
	}{
		{"a line's tag before its newline, a line run into another rank's",
			"[1,1]<stdout>:h:1:1 [1] NCCL INFO NCCL version 2.21.5+cuda12.4[1,1]<stdout>:\n" +
				"[1,1]<stdout>:h:1:1 [1] NCCL INFO NCCL_MIN_CTAS set by environment to 32[1,1]<stdout>:\n" +
				"[1,0]<stdout>:h:1:1 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n" +
				"[1,0]<stdout>:h:1:1 [0] NCCL INFO NCCL_MIN_CTAS set by environment to 32" +
				"[1,1]<stdout>:h:1:1 [1] NCCL INFO NCCL_ALGO set by environment to Ring[1,0]<stdout>:\n" +
				"Mon Dec  7 04:05:01 2026[1,0]<stdout>:h:1:1 [0] NCCL INFO NCCL_ALGO set by environment to Ring" +
				"Mon Dec  7 04:05:01 2026[1,0]<stdout>:\n",
			[]string{"NCCL_MIN_CTAS=32", "NCCL_ALGO=Ring"}, "2.21.5+cuda12.4"},
		{"a value in two chunks", "[1,0]<stdout>:h:1:1 [0] NCCL INFO NCCL_IB_HCA set to mlx5_0,ml[1,0]<stdout>:x5_1\n",
			[]string{"NCCL_IB_HCA=mlx5_0,mlx5_1"}, ""},
		{"another rank's line between", "[1,0]<stdout>:h:1:1 [0] NCCL INFO NCCL_ALGO set by environment to Ri" +
			"[1,1]<stdout>:h:1:1 [1] NCCL INFO NCCL_ALGO set by environment to Ring\n[1,0]<stdout>:ng\n",
			[]string{"NCCL_ALGO=Ring"}, ""},
		{"a record cut at 1023 bytes in two chunks", "[1,0]<stdout>:" + cut[:600] +
			"[1,1]<stdout>:" + cut + "[1,1]<stdout>:\n" +
			"Mon Dec  7 04:05:01 2026[1,0]<stdout>:" + cut[600:] + "[1,0]<stdout>:\n",
			[]string{"NCCL_TOPO_FILE=" + long}, ""},
	} {
		c := &capture{limit: maxOutput}
		c.Write([]byte(tc.log))
		l := nccllog.Parse(c.Bytes())
		if got := l.Unconfirmed(tc.env); got != nil {
			t.Errorf("%s: unconfirmed %v (read %.80q)", tc.name, got, l.Read)
		}
		if l.Version != tc.version && tc.version != "" {
			t.Errorf("%s: version %q", tc.name, l.Version)
		}
	}
}

// TestWorkloadRunsEachCollectivesBinary: benchmark.binary only says where
// nccl-tests is; every collective of a workload runs its own *_perf binary,
// the first one (alphabetically all_gather, which the campaign is keyed
// on) too, named as the user's binary is.
func TestWorkloadRunsEachCollectivesBinary(t *testing.T) {
	for _, suffix := range []string{"", "_mpi"} {
		dir := simtest.PerfBinaries(t, suffix, "all_reduce", "all_gather")
		sp, err := space.Parse("w.toml", []byte(`
[benchmark]
binary = "`+filepath.Join(dir, "all_reduce_perf"+suffix)+`"
[[workload]]
collective = "all_reduce"
size = "1M"
count = 10
[[workload]]
collective = "all_gather"
size = "1M"
count = 10
[[param]]
name = "NCCL_MIN_CTAS"
values = ["default", "4"]
`))
		if err != nil {
			t.Fatal(err)
		}
		bench, err := NewBenchmark(sp, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, coll := range sp.Collectives() {
			b := bench
			if coll != sp.Campaign.Collective {
				if b, err = bench.(Collectives).For(coll); err != nil {
					t.Fatal(err)
				}
			}
			argv := b.Command(Plan{Sizes: sp.Sweep(coll), Iters: 1})
			if want := filepath.Join(dir, coll+"_perf"+suffix); argv[0] != want || b.(NCCLTests).Collective != coll {
				t.Errorf("%s runs %v (as %s), want %s", coll, argv, b.(NCCLTests).Collective, want)
			}
		}
	}
}

// outputOf is what the runner hands Read for text: capped, and the lines a
// LineKeeper keeps.
func outputOf(b Benchmark, text []byte) Output {
	c := &capture{limit: maxOutput}
	if k, ok := b.(LineKeeper); ok {
		c.keep = k.Keep
	}
	c.Write(text)
	kept, out := keptLines(c), c.Bytes()
	return Output{Text: out, Kept: kept, Dropped: c.dropped, Log: nccllog.Parse(out)}
}

// TestFailureReasonBounded: a failed trial's reason ends with what its output
// says went wrong, a line of it; a line of megabytes (a progress bar that
// rewrites itself with '\r' alone, a dumped tensor) went whole into the
// reason, which the store keeps for every trial and show prints.
func TestFailureReasonBounded(t *testing.T) {
	long := `head -c 3000000 /dev/zero | tr '\0' 'x'`
	user, err := newUserCommand(space.BenchmarkSettings{Kind: space.Command, Command: []string{"x"}, Metric: space.Metric{Regex: `time: (\S+) ms`}}, space.LauncherSettings{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		bench func(program string) Benchmark
		body  string
	}{
		{"ddp", func(p string) Benchmark { return DDPStep{Program: []string{p}} }, long + "; exit 1"},
		{"command", func(p string) Benchmark { u := user.(UserCommand); u.Argv = []string{p}; return u }, long + "; exit 1"},
		{"command, NCCL's words", func(p string) Benchmark { u := user.(UserCommand); u.Argv = []string{p}; return u }, "printf 'NCCL error '; " + long + "; exit 1"},
		{"nccl-tests", func(p string) Benchmark { return tableJob(p).Benchmark }, "printf 'node1: Test NCCL failure common.cu:1 '; " + long + "; exit 3"},
	} {
		r := &Runner{Launcher: Local{}}
		job := tableJob(script(t, tc.body))
		job.Benchmark = tc.bench(job.Benchmark.(NCCLTests).Binary)
		res := r.Run(context.Background(), job)
		if res.Failure == nil {
			t.Errorf("%s: no failure", tc.name)
		} else if n := len(res.Failure.Reason); n > 4096 {
			t.Errorf("%s: failure %s of a reason of %d bytes", tc.name, res.Failure.Kind, n)
		}
	}
}

// TestFingerprintCountsOneRank: a trial of one rank, on nodes no log
// named, was described as "1 ranks".
func TestFingerprintCountsOneRank(t *testing.T) {
	if got := (Fingerprint{NCCL: "2.28.3", Ranks: 1}).String(); got != "NCCL 2.28.3, 1 rank" {
		t.Errorf("fingerprint %q, want NCCL 2.28.3, 1 rank", got)
	}
}

// panicKeeper prints a line that its Keep panics on, a bug's stand-in in
// what reads the output as it streams (the Joiner, a metric's keeper).
type panicKeeper struct{}

func (panicKeeper) Command(Plan) []string {
	return []string{"sh", "-c", "echo ok; echo boom; echo after"}
}
func (panicKeeper) Read(Plan, Output) (*Measurement, *Failure) { return nil, nil }
func (panicKeeper) Keep(line string) bool {
	if line == "boom" {
		panic("boom")
	}
	return false
}

// TestAPanicReadingTheOutputReachesTheCaller: the output is read as it
// streams in os/exec's goroutine, where a panic (a bug of the capture's)
// ended the process with Go's exit status 2, which no recover reaches; it
// is raised in Run's caller, with its trace (safego), as one of Run's own.
func TestAPanicReadingTheOutputReachesTheCaller(t *testing.T) {
	defer func() {
		if p, ok := recover().(safego.Panic); !ok || p.Value != "boom" || !strings.Contains(p.String(), "panicKeeper.Keep") {
			t.Errorf("recovered %v, want Keep's panic with its trace", p)
		}
	}()
	(&Runner{Launcher: Local{}, BaseEnv: BaseEnv()}).Run(context.Background(), Job{Benchmark: panicKeeper{}, Timeout: time.Minute})
	t.Error("Run returned")
}

// keptLines are the lines c kept (capture.Kept), without the count dropped.
func keptLines(c *capture) []string {
	kept, _ := c.Kept()
	return kept
}
