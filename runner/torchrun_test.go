package runner

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nccltune/nccltune/space"
)

// torchrunOwn is what torchrun (PyTorch 2.x) prints after its workers'
// output when one of them exited with a status: its log line, its own
// traceback ending in ChildFailedError, and the report of the root cause
// (rank and local rank 0 here).
const torchrunOwn = `[2026-12-05 10:00:00,123] torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: 1) local_rank: 0 (pid: 4242) of binary: /usr/bin/python3
Traceback (most recent call last):
  File "/usr/local/bin/torchrun", line 8, in <module>
    sys.exit(main())
             ^^^^^^
  File "/usr/local/lib/python3.11/site-packages/torch/distributed/elastic/multiprocessing/errors/__init__.py", line 347, in wrapper
    return f(*args, **kwargs)
           ^^^^^^^^^^^^^^^^^^
  File "/usr/local/lib/python3.11/site-packages/torch/distributed/run.py", line 812, in main
    run(args)
  File "/usr/local/lib/python3.11/site-packages/torch/distributed/run.py", line 803, in run
    elastic_launch(
  File "/usr/local/lib/python3.11/site-packages/torch/distributed/launcher/api.py", line 135, in __call__
    return launch_agent(self._config, self._entrypoint, list(args))
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/usr/local/lib/python3.11/site-packages/torch/distributed/launcher/api.py", line 268, in launch_agent
    raise ChildFailedError(
torch.distributed.elastic.multiprocessing.errors.ChildFailedError: 
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-12-05_10:00:00
  host      : node1
  rank      : 0 (local_rank: 0)
  exitcode  : 1 (pid: 4242)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
`

// torchrunOneRank: one worker's NCCL error, a message of one line.
const torchrunOneRank = `[W1205 10:00:00.000000 4242 torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:4115] Warning: using GPU 0 to perform barrier as devices used by this process are currently unknown.
Traceback (most recent call last):
  File "/work/train.py", line 42, in <module>
    main()
  File "/work/train.py", line 30, in main
    dist.barrier()
  File "/usr/local/lib/python3.11/site-packages/torch/distributed/c10d_logger.py", line 79, in wrapper
    return func(*args, **kwargs)
           ^^^^^^^^^^^^^^^^^^^^^
RuntimeError: NCCL error in: /opt/pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:317, invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.21.5
` + torchrunOwn

// torchrunMultiline: a DistBackendError whose message runs over four lines,
// the second of them in the form of an exception too.
const torchrunMultiline = `Traceback (most recent call last):
  File "/work/train.py", line 42, in <module>
    main()
  File "/work/train.py", line 30, in main
    dist.all_reduce(t)
  File "/usr/local/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", line 2501, in all_reduce
    work = group.allreduce([tensor], opts)
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
torch.distributed.DistBackendError: NCCL error in: /opt/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5
ncclUnhandledCudaError: Call to CUDA function failed.
Last error:
Cuda failure 'out of memory'
` + torchrunOwn

// torchrunTwoRanks: two workers' tracebacks interleaved line by line under
// torch's "[rank0]:" and "[rank1]:"; rank 1 failed first (the report's root
// cause), rank 0's exception, printed last, followed from it.
var torchrunTwoRanks = `[rank1]: Traceback (most recent call last):
[rank0]: Traceback (most recent call last):
[rank1]:   File "/work/train.py", line 42, in <module>
[rank0]:   File "/work/train.py", line 42, in <module>
[rank1]:     main()
[rank0]:     main()
[rank1]:   File "/work/train.py", line 31, in main
[rank1]:     loss = model(x).sum()
[rank1]: RuntimeError: CUDA error: an illegal memory access was encountered
[rank1]: CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.
[rank0]:   File "/work/train.py", line 30, in main
[rank0]:     dist.all_reduce(t)
[rank0]: torch.distributed.DistBackendError: NCCL communicator was aborted on rank 0.
W1205 10:00:00.123000 140 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 4242 closing signal SIGTERM
` + strings.NewReplacer("rank      : 0 (local_rank: 0)", "rank      : 1 (local_rank: 1)", "(pid: 4242)", "(pid: 4243)").Replace(torchrunOwn)

// torchrunTee: the same under torchrun --tee 3 of PyTorch 2.0, whose prefix
// is the role and the local rank, with no space after it.
var torchrunTee = strings.NewReplacer("[rank0]: ", "[default0]:", "[rank1]: ", "[default1]:").Replace(torchrunTwoRanks)

// torchrunTeeSyntax: a worker's script that does not compile, under
// torchrun --tee 3: Python prints no "Traceback" header above a
// SyntaxError's frame, and the tee's prefix is followed by the frame's own
// two spaces.
const torchrunTeeSyntax = `[default0]:  File "/work/train.py", line 12
[default0]:    x = (
[default0]:        ^
[default0]:SyntaxError: '(' was never closed
` + torchrunOwn

// torchrunTeeOverRank: --tee's prefix over torch's own, as torchrun --tee 3
// of PyTorch 2.2 and later prints the ranks' lines.
var torchrunTeeOverRank = strings.NewReplacer("[rank0]: ", "[default0]:[rank0]: ", "[rank1]: ", "[default1]:[rank1]: ").Replace(torchrunTwoRanks)

// torchrunOneRankTeeOverRank: torchrunOneRank's worker under both
// prefixes, its exception line a sign of an NCCL failure to UserCommand.
var torchrunOneRankTeeOverRank = func() string {
	worker, own, _ := strings.Cut(torchrunOneRank, torchrunOwn)
	return "[default0]:[rank0]: " + strings.ReplaceAll(strings.TrimSuffix(worker, "\n"), "\n", "\n[default0]:[rank0]: ") + "\n" + own + torchrunOwn
}()

// torchrunBanner is what torchrun (PyTorch 2.4 and later) prints first
// where OMP_NUM_THREADS is not set, and NCCL's first INFO line.
const torchrunBanner = `W1205 10:00:00.000000 140 torch/distributed/run.py:793] 
W1205 10:00:00.000000 140 torch/distributed/run.py:793] *****************************************
W1205 10:00:00.000000 140 torch/distributed/run.py:793] Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your system being overloaded, please further tune the variable for optimal performance in your application as needed. 
W1205 10:00:00.000000 140 torch/distributed/run.py:793] *****************************************
node1:4242:4242 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>
`

// torchrunNoException: a worker that exited 1 without a traceback
// (sys.exit("...")), NCCL's INFO lines and torchrun's own after its message.
const torchrunNoException = torchrunBanner + `step 10: loss nan, giving up
node1:4242:4300 [0] NCCL INFO comm 0x5555 rank 0 nranks 2 cudaDev 0 busId 1000 - Destroy COMPLETE
W1205 10:00:01.000000 140 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 4243 closing signal SIGTERM
` + torchrunOwn

// torchrunNoExceptionRanks: the same under --tee's prefixes, rank 1 the
// root cause and rank 0 printing after it.
var torchrunNoExceptionRanks = torchrunBanner + `[default1]:no shard for rank 1 in /data, giving up
[default0]:waiting for rank 1
` + strings.NewReplacer("rank      : 0 (local_rank: 0)", "rank      : 1 (local_rank: 1)").Replace(torchrunOwn)

// torchrunExitThenPeer is PyTorch 2.11's torchrun on an H100 (trimmed):
// rank 0 called sys.exit("tree refused by rank 0"), which Python prints
// with no prefix, and rank 1, blocked in gloo's all_reduce, raised as its
// peer went; it printed a line of its own between the two.
const torchrunExitThenPeer = `W1206 05:11:22.750000 793 torch/distributed/run.py:851] *****************************************
W1206 05:11:22.750000 793 torch/distributed/run.py:851] Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your system being overloaded, please further tune the variable for optimal performance in your application as needed.
W1206 05:11:22.750000 793 torch/distributed/run.py:851] *****************************************
step 3 step_ms: 0.498
tree refused by rank 0
step 3 step_ms: 0.490
[rank1]: Traceback (most recent call last):
[rank1]:   File "/work/main/.devtmp/work.py", line 11, in <module>
[rank1]:     dist.all_reduce(t2)
[rank1]:   File "/opt/torch/.venv/lib/python3.12/site-packages/torch/distributed/distributed_c10d.py", line 3075, in all_reduce
[rank1]:     work.wait()
[rank1]: RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:547] Connection closed by peer [127.0.0.1]:17610
W1206 05:11:26.592000 793 torch/distributed/elastic/multiprocessing/api.py:1012] Sending process 817 closing signal SIGTERM
E1206 05:11:26.656000 793 torch/distributed/elastic/multiprocessing/api.py:986] failed (exitcode: 1) local_rank: 0 (pid: 816) of binary: /opt/torch/.venv/bin/python
Traceback (most recent call last):
  File "/opt/torch/.venv/bin/torchrun", line 10, in <module>
    sys.exit(main())
             ^^^^^^
  File "/opt/torch/.venv/lib/python3.12/site-packages/torch/distributed/launcher/api.py", line 317, in launch_agent
    raise ChildFailedError(
torch.distributed.elastic.multiprocessing.errors.ChildFailedError: 
============================================================
.devtmp/work.py FAILED
------------------------------------------------------------
Failures:
[1]:
  time      : 2026-12-06_05:11:26
  host      : localhost
  rank      : 1 (local_rank: 1)
  exitcode  : -15 (pid: 817)
  error_file: <N/A>
  traceback : Signal 15 (SIGTERM) received by PID 817
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-12-06_05:11:26
  host      : localhost
  rank      : 0 (local_rank: 0)
  exitcode  : 1 (pid: 816)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
`

// torchrunErrorFile: a script under @record: the worker wrote its error
// file, whose traceback the report prints, each line two spaces further in.
const torchrunErrorFile = `Traceback (most recent call last):
  File "/work/train.py", line 30, in main
    dist.all_reduce(t)
torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, remote process exited or there was a network error, NCCL version 2.21.5
ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-12-05_10:00:00
  host      : node1
  rank      : 0 (local_rank: 0)
  exitcode  : 1 (pid: 4242)
  error_file: /tmp/torchelastic_abc/none_def/attempt_0/0/error.json
  traceback : Traceback (most recent call last):
    File "/usr/local/lib/python3.11/site-packages/torch/distributed/elastic/multiprocessing/errors/__init__.py", line 347, in wrapper
      return f(*args, **kwargs)
    File "/work/train.py", line 30, in main
      dist.all_reduce(t)
  torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, remote process exited or there was a network error, NCCL version 2.21.5
  ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.
  
============================================================
`

// torchrunDetailCases are torchrun's outputs of a worker that raised, and
// the detail its failure should give.
var torchrunDetailCases = []struct {
	name, output, detail string
}{
	{"one rank", torchrunOneRank, "RuntimeError: NCCL error in: /opt/pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:317, invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.21.5"},
	{"a message of several lines", torchrunMultiline, "torch.distributed.DistBackendError: NCCL error in: /opt/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5"},
	{"two ranks interleaved, [rankN]:", torchrunTwoRanks, "RuntimeError: CUDA error: an illegal memory access was encountered"},
	{"two ranks interleaved, --tee's [defaultN]:", torchrunTee, "RuntimeError: CUDA error: an illegal memory access was encountered"},
	// Another rank's exception, where the root cause's printed none, is named as that rank's.
	{"the root cause's rank printed nothing", strings.ReplaceAll(torchrunTwoRanks, "[rank1]: ", "[rank7]: "), "rank 1 printed no traceback; rank 0 then raised torch.distributed.DistBackendError: NCCL communicator was aborted on rank 0."},
	{"the root cause exited with a message, its peer raised", torchrunExitThenPeer, "rank 0 printed no traceback; rank 1 then raised RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:547] Connection closed by peer [127.0.0.1]:17610"},
	{"the same under --tee", strings.NewReplacer("[rank1]:", "[default1]:[rank1]:", "step 3 step_ms: 0.498\ntree", "[default0]:step 3 step_ms: 0.498\n[default0]:tree").Replace(torchrunExitThenPeer), "tree refused by rank 0"},
	{"two ranks, no prefix", strings.NewReplacer("[rank0]: ", "", "[rank1]: ", "").Replace(torchrunTwoRanks), "torch.distributed.DistBackendError: NCCL communicator was aborted on rank 0."},
	{"a SyntaxError under --tee", torchrunTeeSyntax, "SyntaxError: '(' was never closed"},
	{"--tee's [defaultN]: over torch's [rankN]:", torchrunTeeOverRank, "RuntimeError: CUDA error: an illegal memory access was encountered"},
	{"one rank, --tee's [default0]: over torch's [rank0]:", torchrunOneRankTeeOverRank, "RuntimeError: NCCL error in: /opt/pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:317, invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.21.5"},
	{"an error file", torchrunErrorFile, "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, remote process exited or there was a network error, NCCL version 2.21.5"},
	{"CRLF", strings.ReplaceAll(torchrunOneRank, "\n", "\r\n"), "RuntimeError: NCCL error in: /opt/pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:317, invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.21.5"},
	{"Python 3.13's colours (FORCE_COLOR=1)", "Traceback (most recent call last):\n  File \x1b[35m\"/work/train.py\"\x1b[0m, line \x1b[35m42\x1b[0m, in \x1b[35m<module>\x1b[0m\n    main()\n    \x1b[31m~~~~\x1b[0m\x1b[1;31m^^\x1b[0m\n\x1b[1;35mRuntimeError\x1b[0m: \x1b[35mNCCL error in: NCCLUtils.hpp:317, invalid usage\x1b[0m\n" + torchrunOwn, "RuntimeError: NCCL error in: NCCLUtils.hpp:317, invalid usage"},
	// A worker that raised nothing: its last line, not the report's.
	{"no exception", torchrunNoException, "step 10: loss nan, giving up"},
	{"no exception, warnings as the worker exits", strings.Replace(torchrunNoException, "giving up\n", `giving up
[rank0]:/usr/local/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py:4062: UserWarning: No device id is provided via init_process_group or barrier.
[rank0]:  warnings.warn(  # warn only once
[rank0]:[W1205 10:00:00.500000 4242 torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1250] Warning: WARNING: process group has NOT been destroyed before we destruct ProcessGroupNCCL. On normal program exit, the application should call destroy_process_group to ensure that any pending NCCL operations have finished in this process. (function operator())
[W ProcessGroupNCCL.cpp:1168] Warning: WARNING: process group has NOT been destroyed before it is being destructed. (function ~ProcessGroupNCCL)
`, 1), "step 10: loss nan, giving up"},
	{"no exception, two ranks", torchrunNoExceptionRanks, "no shard for rank 1 in /data, giving up"},
	{"no exception, another rank's NCCL warning after it", strings.Replace(torchrunNoException, "giving up\n", "giving up\nnode1:4243:4301 [1] NCCL WARN socket closed: remote process exited\n", 1), "step 10: loss nan, giving up"},
	{"no exception, the root cause's own NCCL warning", strings.Replace(torchrunNoException, "giving up\n", "giving up\nnode1:4242:4300 [0] NCCL WARN Cuda failure 'out of memory'\n", 1), "node1:4242:4300 [0] NCCL WARN Cuda failure 'out of memory'"},
	{"no exception, a progress bar's line", strings.Replace(torchrunNoException, "step 10: loss nan, giving up\n", "step 10: loss nan, giving up\n"+strings.Repeat("\rEpoch 1:  10%|█         | 10/100 [00:01<00:09,  9.90it/s]", 1000)+"\n", 1), "step 10: loss nan, giving up"},
	{"no exception, W&B's summary as the worker exits", strings.Replace(torchrunNoException, "giving up\n", `giving up
wandb: 🚀 View run glorious-sun-1 at: https://wandb.ai/team/proj/runs/abc123
wandb: Find logs at: ./wandb/run-20261205_100000-abc123/logs
`, 1), "step 10: loss nan, giving up"},
	{"no exception, a line of 64 KiB", strings.Replace(torchrunNoException, "step 10: loss nan, giving up\n", "tensor(["+strings.Repeat("0.5, ", 13<<10)+"])\n", 1), "tensor([" + strings.Repeat("0.5, ", 101)[:504] + "..."},
	{"no exception, under torch 2.0's log format", strings.NewReplacer(
		"W1205 10:00:01.000000 140 torch/distributed/elastic/multiprocessing/api.py:897] ", "WARNING:torch.distributed.elastic.multiprocessing.api:",
		"[2026-12-05 10:00:00,123] torch.distributed.elastic.multiprocessing.api: [ERROR] ", "ERROR:torch.distributed.elastic.multiprocessing.api:",
	).Replace(torchrunNoException), "step 10: loss nan, giving up"},
	// Nothing better: the detail is the output's last line with words, as before.
	{"nothing printed", torchrunBanner + torchrunOwn, ""},
	// A signal: the report's word of it.
	{"killed by a signal", "Traceback (most recent call last):\n  File \"x.py\", line 1\nValueError: not this\n" + torchrunKilled, "Signal 9 (SIGKILL) received by PID 4242"},
	{"no report, no log of the failure", torchrunOneRank[:strings.Index(torchrunOneRank, "[2026-12-05")], ""},
	// torchrun logged the worker's failure, and waited at its exit barrier
	// (FailedRank): the worker's exception.
	{"no report", torchrunOneRank[:strings.Index(torchrunOneRank, "Root Cause")], "RuntimeError: NCCL error in: /opt/pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:317, invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.21.5"},
}

// TestTorchrunFailureDetail: the detail is the exception the failed worker
// raised, not torchrun's ChildFailedError nor its report's last line.
func TestTorchrunFailureDetail(t *testing.T) {
	for _, tc := range torchrunDetailCases {
		if got := (Torchrun{}).FailureDetail([]byte(tc.output)); got != tc.detail {
			t.Errorf("%s: FailureDetail = %q, want %q", tc.name, got, tc.detail)
		}
	}
}

// TestTorchrunWorkerRaised: a trial under torchrun whose worker raised fails
// with that exception as its detail, whatever the benchmark. Without
// FailureDetail every case but the last reads "traceback : To enable
// traceback see: ..." (the error file's, "ncclRemoteError: ...").
func TestTorchrunWorkerRaised(t *testing.T) {
	dir := t.TempDir()
	for i, tc := range torchrunDetailCases {
		if strings.HasPrefix(tc.name, "no report") || tc.name == "killed by a signal" {
			continue // TestTorchrunWorkerKilled, TestTorchrunRankExit
		}
		want := "exit status 1: " + tc.detail
		if tc.detail == "" {
			want = "exit status 1: traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"
		}
		fake := filepath.Join(dir, "torchrun"+string(rune('a'+i)))
		out := filepath.Join(dir, "out"+string(rune('a'+i)))
		if err := os.WriteFile(out, []byte(tc.output), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(fake, []byte("#!/bin/sh\ncat '"+out+"' >&2\nexit 1\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, b := range []Benchmark{DDPStep{Program: []string{"step.py"}}, UserCommand{Argv: []string{"train.py"}}} {
			r := &Runner{Launcher: Torchrun{Command: fake, NProcPerNode: 2}, BaseEnv: BaseEnv()}
			res := r.Run(context.Background(), Job{Benchmark: b, Timeout: time.Minute})
			if res.Failure == nil || !strings.HasPrefix(res.Failure.Reason, want) {
				t.Errorf("%s, %T: failure %v, want a reason beginning %q", tc.name, b, res.Failure, want)
			}
			if res.Failure != nil && strings.Contains(res.Failure.Reason, "\x1b") {
				t.Errorf("%s, %T: failure %q, with a terminal's colours", tc.name, b, res.Failure.Reason)
			}
			if res.Failure != nil && tc.detail != "" && strings.Count(res.Failure.Reason, tc.detail) != 1 {
				t.Errorf("%s, %T: failure %v, which names %q %d times, not once", tc.name, b, res.Failure, tc.detail, strings.Count(res.Failure.Reason, tc.detail))
			}
		}
	}
}

// BenchmarkTorchrunFailureDetail reads a failed trial's output as large as
// the runner keeps (maxOutput): a million lines of a worker, then one of
// 64 KiB lines, before torchrun's report.
func BenchmarkTorchrunFailureDetail(b *testing.B) {
	for _, bc := range []struct{ name, output string }{
		{"a million lines", strings.Repeat("node1:4242:4300 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read\n", 100000) + strings.Repeat("step 5 loss 2.3\n", 900000) + torchrunOwn},
		{"64 KiB lines", strings.Repeat(strings.Repeat("a(", 32<<10)+"\n", 100) + torchrunOwn},
	} {
		output := []byte(bc.output)
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				(Torchrun{}).FailureDetail(output)
			}
		})
	}
}

// TestTorchrunRdzvID: every launch of torchrun on several nodes meets in a
// rendezvous of its own. torchrun's default id is "none": a second
// campaign's torchrun given the same endpoint, finding its port taken,
// connects to the first's store (c10d falls back to a client) and joins the
// first's rendezvous, as does a node left over from an earlier trial.
func TestTorchrunRdzvID(t *testing.T) {
	l := Torchrun{NProcPerNode: 8, NNodes: 2, RdzvEndpoint: "node1:29400"}
	id := func() string {
		argv, err := l.Wrap([]string{"/tmp/step.py"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.Index(argv, "--rdzv_id")
		if i < 0 || i+1 >= len(argv) || argv[i+1] == "" || argv[i+1] == "none" {
			t.Fatalf("no rendezvous id of its own: %q", argv)
		}
		return argv[i+1]
	}
	if a, b := id(), id(); a == b {
		t.Errorf("two launches share the rendezvous id %q", a)
	}
	// A single node's torchrun (--standalone) picks its own.
	if argv, _ := (Torchrun{NProcPerNode: 8}).Wrap([]string{"/tmp/step.py"}, nil); slices.Contains(argv, "--rdzv_id") {
		t.Errorf("--standalone with a rendezvous id: %q", argv)
	}
}

// torchrunRdzvTimeout is how torchrun (PyTorch 1.13, Debian's) ends where a
// node of its --nnodes 2 never joined the rendezvous within its join_timeout:
// no worker started.
const torchrunRdzvTimeout = `Traceback (most recent call last):
  File "/usr/bin/torchrun", line 33, in <module>
    sys.exit(load_entry_point('torch==1.13.0a0+gitunknown', 'console_scripts', 'torchrun')())
  ...
  File "/usr/lib/python3/dist-packages/torch/distributed/elastic/agent/server/api.py", line 538, in _rendezvous
    store, group_rank, group_world_size = spec.rdzv_handler.next_rendezvous()
                                          ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/usr/lib/python3/dist-packages/torch/distributed/elastic/rendezvous/dynamic_rendezvous.py", line 1025, in next_rendezvous
    self._op_executor.run(join_op, deadline)
  File "/usr/lib/python3/dist-packages/torch/distributed/elastic/rendezvous/dynamic_rendezvous.py", line 638, in run
    raise RendezvousTimeoutError()
torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError
`

// TestTorchrunRendezvousFailure: a torchrun whose rendezvous failed (a node
// that never joined, a store it could not reach) started no worker, and
// exits 1 as a failed worker's would: the trial is a launch that failed, not
// a failure of its settings, which the search would learn as one.
func TestTorchrunRendezvousFailure(t *testing.T) {
	connection := strings.Replace(torchrunRdzvTimeout, "torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError",
		"torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: The connection to the C10d store has failed. See inner exception for details.", 1)
	for _, tc := range []struct {
		name, output string
		launch       bool
	}{
		{"timeout", torchrunRdzvTimeout, true},
		{"connection", connection, true},
		// Workers that ran and failed: theirs is the failure, whatever came after.
		{"workers failed", torchrunOneRank + torchrunRdzvTimeout, false},
	} {
		dir := t.TempDir()
		out := filepath.Join(dir, "out")
		os.WriteFile(out, []byte(tc.output), 0o644)
		fake := script(t, "cat "+out+"; exit 1")
		l := Torchrun{Command: fake, NProcPerNode: 1, NNodes: 2, RdzvEndpoint: "node1:29400"}
		r := &Runner{Launcher: l}
		user, _ := newUserCommand(space.BenchmarkSettings{Kind: space.Command, Command: []string{"train.py"}, Metric: space.Metric{Regex: `time: (\S+) ms`}}, space.LauncherSettings{})
		for _, bench := range []Benchmark{DDPStep{Program: []string{"python3", "step.py"}}, user} {
			res := r.Run(context.Background(), Job{Benchmark: bench, Plan: Plan{Iters: 3}, Timeout: 10 * time.Second})
			if res.Failure == nil || (res.Failure.Kind == FailLaunch) != tc.launch {
				t.Errorf("%s, %T: failure %v; a launch's: %v", tc.name, bench, res.Failure, tc.launch)
			}
		}
	}
}

// TestTorchrunRefusesItsOptions: torchrun that refuses its command line (an
// option of launcher.args it does not know) starts no worker and exits 2,
// which nccl-tests' codes read as a CUDA error. The DDP step reads the
// real torchrun's refusal replayed: torchrun imports torch, seconds, to say it.
func TestTorchrunRefusesItsOptions(t *testing.T) {
	if _, err := exec.LookPath("torchrun"); err != nil {
		t.Skip("no torchrun")
	}
	args := []string{"--no-such-option"}
	r := &Runner{Launcher: Torchrun{NProcPerNode: 1, Args: args}, BaseEnv: BaseEnv()}
	for _, bench := range []Benchmark{tableJob("all_reduce_perf").Benchmark, DDPStep{Program: []string{"python3", "step.py"}}} {
		res := r.Run(context.Background(), Job{Benchmark: bench, Plan: tableJob("x").Plan, Timeout: time.Minute})
		if res.Failure == nil || res.Failure.Kind != FailLaunch || !strings.Contains(res.Failure.Reason, "torchrun: error: unrecognized arguments: --no-such-option") {
			t.Errorf("%T: failure %v, want launch\n%s", bench, res.Failure, res.Output)
		}
		out := filepath.Join(t.TempDir(), "out")
		if err := os.WriteFile(out, res.Output, 0o644); err != nil {
			t.Fatal(err)
		}
		r.Launcher = Torchrun{Command: script(t, fmt.Sprintf("cat '%s' >&2; exit %d", out, res.Exit.Code)), NProcPerNode: 1, Args: args}
	}
}

// torchrunStoreLost is how torchrun (PyTorch 1.13, Debian's) ends where the
// c10d store went away while its workers ran: the node that hosted it
// (rdzv_endpoint's) exited, its workers failed or the trial stopped, and
// this node's agent, polling the rendezvous for new nodes between its
// checks of the workers, lost the connection.
const torchrunStoreLost = `Traceback (most recent call last):
  File "/usr/lib/python3/dist-packages/torch/distributed/elastic/rendezvous/c10d_rendezvous_backend.py", line 113, in _call_store
    return getattr(self._store, store_op)(*args, **kwargs)
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
RuntimeError: Connection reset by peer

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/usr/bin/torchrun", line 33, in <module>
    sys.exit(load_entry_point('torch==1.13.0a0+gitunknown', 'console_scripts', 'torchrun')())
  File "/usr/lib/python3/dist-packages/torch/distributed/launcher/api.py", line 237, in launch_agent
    result = agent.run()
  File "/usr/lib/python3/dist-packages/torch/distributed/elastic/agent/server/api.py", line 709, in run
    result = self._invoke_run(role)
  File "/usr/lib/python3/dist-packages/torch/distributed/elastic/agent/server/api.py", line 881, in _invoke_run
    num_nodes_waiting = rdzv_handler.num_nodes_waiting()
  File "/usr/lib/python3/dist-packages/torch/distributed/elastic/rendezvous/dynamic_rendezvous.py", line 1080, in num_nodes_waiting
    self._state_holder.sync()
  File "/usr/lib/python3/dist-packages/torch/distributed/elastic/rendezvous/dynamic_rendezvous.py", line 409, in sync
    get_response = self._backend.get_state()
  File "/usr/lib/python3/dist-packages/torch/distributed/elastic/rendezvous/c10d_rendezvous_backend.py", line 73, in get_state
    base64_state: bytes = self._call_store("get", self._key)
  File "/usr/lib/python3/dist-packages/torch/distributed/elastic/rendezvous/c10d_rendezvous_backend.py", line 115, in _call_store
    raise RendezvousConnectionError(
torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: The connection to the C10d store has failed. See inner exception for details.
`

// TestTorchrunRendezvousLostAfterStart: a rendezvous error that torchrun
// raises after its workers started is not a launch that failed. The
// store's node going away while the workers ran (their failure there, or
// the trial's timeout stopping it first) ends this node's torchrun with
// RendezvousConnectionError: a hang of the settings read as a launch
// failure, and so did a failure of theirs, or a rendezvous again after
// workers that failed (--max-restarts) found the others gone.
func TestTorchrunRendezvousLostAfterStart(t *testing.T) {
	restart := strings.Replace(torchrunRdzvTimeout, "  ...\n",
		"  File \"/usr/lib/python3/dist-packages/torch/distributed/elastic/agent/server/api.py\", line 873, in _invoke_run\n"+
			"    self._restart_workers(self._worker_group)\n"+
			"  File \"/usr/lib/python3/dist-packages/torch/distributed/elastic/agent/server/api.py\", line 700, in _restart_workers\n"+
			"    self._initialize_workers(worker_group)\n", 1)
	dir := t.TempDir()
	lost, restarted := filepath.Join(dir, "lost"), filepath.Join(dir, "restart")
	os.WriteFile(lost, []byte(torchrunStoreLost), 0o644)
	os.WriteFile(restarted, []byte(restart), 0o644)
	user, _ := newUserCommand(space.BenchmarkSettings{Kind: space.Command, Command: []string{"train.py"}, Metric: space.Metric{Regex: `time: (\S+) ms`}}, space.LauncherSettings{})
	for _, tc := range []struct {
		name, body string
		timeout    time.Duration
		want       FailureKind // "" for any failure but a launch's
	}{
		{"store lost", "cat " + lost + "; exit 1", 10 * time.Second, ""},
		{"restart's rendezvous", "cat " + restarted + "; exit 1", 10 * time.Second, ""},
		// Workers that hang until the trial's timeout stops every node.
		{"timeout", "trap 'cat " + lost + "; exit 1' TERM; echo started; sleep 30 & wait", 2 * time.Second, FailTimeout},
	} {
		l := Torchrun{Command: script(t, tc.body), NProcPerNode: 1, NNodes: 2, RdzvEndpoint: "node1:29400"}
		r := &Runner{Launcher: l, Grace: 2 * time.Second}
		for _, bench := range []Benchmark{DDPStep{Program: []string{"python3", "step.py"}}, user} {
			res := r.Run(context.Background(), Job{Benchmark: bench, Plan: Plan{Iters: 3}, Timeout: tc.timeout})
			if res.Failure == nil || res.Failure.Kind == FailLaunch || tc.want != "" && res.Failure.Kind != tc.want {
				t.Errorf("%s, %T: failure %v, want %q (not a launch's)", tc.name, bench, res.Failure, tc.want)
			}
		}
	}
}

// torchrunBroken is how Debian's torchrun (PyTorch 1.13 under Python 3.11)
// ends on this machine, whatever it runs: its agent raises as it starts the
// workers, before any of them runs, and it exits 1, a failed worker's status.
const torchrunBroken = `WARNING:torch.distributed.run:
*****************************************
Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your system being overloaded, please further tune the variable for optimal performance in your application as needed. 
*****************************************
Traceback (most recent call last):
  File "/usr/bin/torchrun", line 33, in <module>
    sys.exit(load_entry_point('torch==1.13.0a0+gitunknown', 'console_scripts', 'torchrun')())
             ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/usr/lib/python3/dist-packages/torch/distributed/elastic/multiprocessing/errors/__init__.py", line 346, in wrapper
    return f(*args, **kwargs)
           ^^^^^^^^^^^^^^^^^^
  File "/usr/lib/python3/dist-packages/torch/distributed/run.py", line 762, in main
    run(args)
  File "/usr/lib/python3/dist-packages/torch/distributed/run.py", line 753, in run
    elastic_launch(
  File "/usr/lib/python3/dist-packages/torch/distributed/launcher/api.py", line 132, in __call__
    return launch_agent(self._config, self._entrypoint, list(args))
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/usr/lib/python3/dist-packages/torch/distributed/launcher/api.py", line 237, in launch_agent
    result = agent.run()
             ^^^^^^^^^^^
  File "/usr/lib/python3/dist-packages/torch/distributed/elastic/metrics/api.py", line 129, in wrapper
    result = f(*args, **kwargs)
             ^^^^^^^^^^^^^^^^^^
  File "/usr/lib/python3/dist-packages/torch/distributed/elastic/agent/server/api.py", line 709, in run
    result = self._invoke_run(role)
             ^^^^^^^^^^^^^^^^^^^^^^
  File "/usr/lib/python3/dist-packages/torch/distributed/elastic/agent/server/api.py", line 844, in _invoke_run
    self._initialize_workers(self._worker_group)
  File "/usr/lib/python3/dist-packages/torch/distributed/elastic/metrics/api.py", line 129, in wrapper
    result = f(*args, **kwargs)
             ^^^^^^^^^^^^^^^^^^
  File "/usr/lib/python3/dist-packages/torch/distributed/elastic/agent/server/api.py", line 681, in _initialize_workers
    worker_ids = self._start_workers(worker_group)
                 ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/usr/lib/python3/dist-packages/torch/distributed/elastic/metrics/api.py", line 129, in wrapper
    result = f(*args, **kwargs)
             ^^^^^^^^^^^^^^^^^^
  File "/usr/lib/python3/dist-packages/torch/distributed/elastic/agent/server/local_elastic_agent.py", line 271, in _start_workers
    self._pcontext = start_processes(
                     ^^^^^^^^^^^^^^^^
  File "/usr/lib/python3/dist-packages/torch/distributed/elastic/multiprocessing/__init__.py", line 207, in start_processes
    redirs = to_map(redirects, nprocs)
             ^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/usr/lib/python3/dist-packages/torch/distributed/elastic/multiprocessing/api.py", line 162, in to_map
    map[i] = val_or_map.get(i, Std.NONE)
             ^^^^^^^^^^^^^^
AttributeError: 'NoneType' object has no attribute 'get'
`

// TestTorchrunFailedToStartWorkers: a torchrun whose agent raised as it
// started its workers ran none of them (its own installation broken, as
// Debian's here; a program it could not execute under --no_python), and
// exits 1: the trial is a launch that failed, where it read as nccl-tests'
// "internal error" or an exit of the settings. An exception it raises after
// its workers ran (restarting them) is not.
func TestTorchrunFailedToStartWorkers(t *testing.T) {
	missing := strings.Replace(torchrunBroken, "AttributeError: 'NoneType' object has no attribute 'get'",
		"FileNotFoundError: [Errno 2] No such file or directory: '/opt/nccl-tests/build/all_reduce_perf'", 1)
	restarted := strings.Replace(torchrunBroken, "    self._initialize_workers(self._worker_group)\n",
		"    self._restart_workers(self._worker_group)\n  File \"/usr/lib/python3/dist-packages/torch/distributed/elastic/agent/server/api.py\", line 700, in _restart_workers\n    self._initialize_workers(worker_group)\n", 1)
	for _, tc := range []struct {
		name, output, reason string
	}{
		{"torchrun broken", torchrunBroken, "torchrun failed as it started its workers: AttributeError: 'NoneType' object has no attribute 'get'"},
		{"program missing", missing, "torchrun failed as it started its workers: FileNotFoundError: [Errno 2] No such file or directory: '/opt/nccl-tests/build/all_reduce_perf'"},
		{"restarting workers", restarted, ""},
	} {
		out := filepath.Join(t.TempDir(), "out")
		if err := os.WriteFile(out, []byte(tc.output), 0o644); err != nil {
			t.Fatal(err)
		}
		r := &Runner{Launcher: Torchrun{Command: script(t, "cat "+out+" >&2; exit 1"), NProcPerNode: 2}, BaseEnv: BaseEnv()}
		for _, bench := range []Benchmark{tableJob("all_reduce_perf").Benchmark, DDPStep{Program: []string{"python3", "step.py"}}} {
			res := r.Run(context.Background(), Job{Benchmark: bench, Plan: tableJob("x").Plan, Timeout: time.Minute})
			if got := res.Failure; got == nil || (got.Kind == FailLaunch) != (tc.reason != "") || tc.reason != "" && got.Reason != tc.reason {
				t.Errorf("%s, %T: failure %v, want launch: %q", tc.name, bench, got, tc.reason)
			}
		}
	}
}

// torchrunStoreNotTorchs is how Debian's torchrun (PyTorch 1.13) ends where
// its rdzv_endpoint's port is held by a service that is not PyTorch's store
// (here one that answers as sshd does): it connects to it as the store's
// client, reads the answer as the store's, and raises as it creates its
// rendezvous handler, before its agent runs, with no Rendezvous*Error.
const torchrunStoreNotTorchs = `Traceback (most recent call last):
  File "/usr/bin/torchrun", line 33, in <module>
    sys.exit(load_entry_point('torch==1.13.0a0+gitunknown', 'console_scripts', 'torchrun')())
             ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/usr/lib/python3/dist-packages/torch/distributed/elastic/multiprocessing/errors/__init__.py", line 346, in wrapper
    return f(*args, **kwargs)
           ^^^^^^^^^^^^^^^^^^
  File "/usr/lib/python3/dist-packages/torch/distributed/run.py", line 762, in main
    run(args)
  File "/usr/lib/python3/dist-packages/torch/distributed/run.py", line 753, in run
    elastic_launch(
  File "/usr/lib/python3/dist-packages/torch/distributed/launcher/api.py", line 132, in __call__
    return launch_agent(self._config, self._entrypoint, list(args))
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/usr/lib/python3/dist-packages/torch/distributed/launcher/api.py", line 220, in launch_agent
    rdzv_handler=rdzv_registry.get_rendezvous_handler(rdzv_parameters),
                 ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/usr/lib/python3/dist-packages/torch/distributed/elastic/rendezvous/registry.py", line 65, in get_rendezvous_handler
    return handler_registry.create_handler(params)
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/usr/lib/python3/dist-packages/torch/distributed/elastic/rendezvous/api.py", line 253, in create_handler
    handler = creator(params)
              ^^^^^^^^^^^^^^^
  File "/usr/lib/python3/dist-packages/torch/distributed/elastic/rendezvous/registry.py", line 36, in _create_c10d_handler
    backend, store = create_backend(params)
                     ^^^^^^^^^^^^^^^^^^^^^^
  File "/usr/lib/python3/dist-packages/torch/distributed/elastic/rendezvous/c10d_rendezvous_backend.py", line 254, in create_backend
    backend = C10dRendezvousBackend(store, params.run_id)
              ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/usr/lib/python3/dist-packages/torch/distributed/elastic/rendezvous/c10d_rendezvous_backend.py", line 64, in __init__
    self._call_store("compare_set", self._key, "", self._NULL_SENTINEL)
  File "/usr/lib/python3/dist-packages/torch/distributed/elastic/rendezvous/c10d_rendezvous_backend.py", line 113, in _call_store
    return getattr(self._store, store_op)(*args, **kwargs)
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
MemoryError: std::bad_alloc
`

// TestTorchrunRendezvousNotSetUp: a torchrun that raised as it set up its
// rendezvous (rdzv_endpoint's port held by a service that is not PyTorch's
// store, answering as sshd does), before its agent ran, started no worker
// and exits 1: a launch that failed, where it read as the settings' exit
// ("MemoryError: std::bad_alloc"), every trial. The real torchrun meets
// such a service where there is one; its output is replayed too.
func TestTorchrunRendezvousNotSetUp(t *testing.T) {
	want := "torchrun's rendezvous failed: MemoryError: std::bad_alloc"
	out := filepath.Join(t.TempDir(), "out")
	if err := os.WriteFile(out, []byte(torchrunStoreNotTorchs), 0o644); err != nil {
		t.Fatal(err)
	}
	launchers := []Launcher{Torchrun{Command: script(t, "cat "+out+" >&2; exit 1"), NProcPerNode: 1, NNodes: 2, RdzvEndpoint: "node1:29400"}}
	if _, err := exec.LookPath("torchrun"); err == nil {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				t.Cleanup(func() { c.Close() })
				go func() {
					buf := make([]byte, 4096)
					c.Read(buf)
					c.Write([]byte(strings.Repeat("SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n", 4)))
				}()
			}
		}()
		launchers = append(launchers, Torchrun{NProcPerNode: 1, NNodes: 2, RdzvEndpoint: l.Addr().String()})
	}
	for _, l := range launchers {
		r := &Runner{Launcher: l, BaseEnv: BaseEnv()}
		for _, bench := range []Benchmark{tableJob("all_reduce_perf").Benchmark, DDPStep{Program: []string{"python3", "step.py"}}} {
			res := r.Run(context.Background(), Job{Benchmark: bench, Plan: tableJob("x").Plan, Timeout: time.Minute})
			if res.Failure == nil || res.Failure.Kind != FailLaunch || res.Failure.Reason != want {
				t.Errorf("%s, %T: failure %v, want launch: %s\n%s", l.(Torchrun).Command, bench, res.Failure, want, res.Output)
			}
		}
	}
}

// torchrunFailedAtBarrier is what one node's torchrun (PyTorch 1.13, two
// nodes through srun, each torchrun-fixed's) prints where its worker
// raised: it logs the failure, then waits at its exit barrier for the
// other node's agent, whose worker runs on (hung in a collective with the
// failed one), up to 300 s, before it prints its report.
const torchrunFailedAtBarrier = `worker 1 2 n2
worker 0 2 n1
Traceback (most recent call last):
  File "/tmp/hrun/w2.py", line 8, in <module>
    time.sleep(2); raise RuntimeError("boom on rank 1")
                   ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
RuntimeError: boom on rank 1
ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 (pid: 3478) of binary: /usr/bin/python3.11
`

// TestTorchrunWorkerFailedBeforeTheTimeout: where a worker fails on one
// node of several, that node's torchrun waits at its exit barrier for the
// others (300 s) and theirs run on with their workers: the launch ends at
// the trial's timeout. The trial failed as its worker did (its exception,
// its signal), as it does on one node; it read as a hang of the settings.
// A failure torchrun logs only once the timeout signalled the trial's
// processes (a worker's SIGTERM) is the timeout's.
func TestTorchrunWorkerFailedBeforeTheTimeout(t *testing.T) {
	dir := t.TempDir()
	raised, killed := filepath.Join(dir, "raised"), filepath.Join(dir, "killed")
	if err := os.WriteFile(raised, []byte(torchrunFailedAtBarrier), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(killed, []byte("worker 0 2 n1\nERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 0 (pid: 3478) of binary: /usr/bin/python3.11\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ownSignal := "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -15) local_rank: 0 (pid: 3478) of binary: /usr/bin/python3.11"
	user, _ := newUserCommand(space.BenchmarkSettings{Kind: space.Command, Command: []string{"train.py"}, Metric: space.Metric{Regex: `time: (\S+) ms`}}, space.LauncherSettings{})
	for _, tc := range []struct {
		name, body string
		kind       FailureKind
		reason     string
	}{
		{"raised", "cat " + raised + "; sleep 30 & wait", FailExit, "exit status 1: RuntimeError: boom on rank 1"},
		{"killed", "cat " + killed + "; sleep 30 & wait", FailSignal, "killed by signal 9 (killed)"},
		{"the timeout's signal", "trap 'echo \"" + ownSignal + "\"; exit 1' TERM; echo 'worker 0 2 n1'; sleep 30 & wait", FailTimeout, "no exit within 2s"},
	} {
		l := Torchrun{Command: script(t, tc.body), NProcPerNode: 1, NNodes: 2, RdzvEndpoint: "node1:29400"}
		r := &Runner{Launcher: l, Grace: 2 * time.Second}
		for _, bench := range []Benchmark{DDPStep{Program: []string{"python3", "step.py"}}, user} {
			res := r.Run(context.Background(), Job{Benchmark: bench, Plan: Plan{Iters: 3}, Timeout: 2 * time.Second})
			if res.Failure == nil || res.Failure.Kind != tc.kind || !strings.HasPrefix(res.Failure.Reason, tc.reason) {
				t.Errorf("%s, %T: failure %v, want %s: %s...\n%s", tc.name, bench, res.Failure, tc.kind, tc.reason, res.Output)
			}
		}
	}
}

// TestTaskNotStartedBeforeTheTimeout: where a srun that the launcher's
// command runs (torchrun's wrapper for several nodes) could not start its
// program on a node (not found, not executable), its other tasks wait for
// it (torchrun's rendezvous, for the node that never joins) until the
// trial's timeout: the trial is a launch that failed, as under the srun
// launcher, where it read as a hang of the settings. A task that exited
// with a status of its own is no launch's failure.
func TestTaskNotStartedBeforeTheTimeout(t *testing.T) {
	missing := "sh: 1: exec: /nonexistent/torchrun: not found\nsrun: error: n2: task 1: Exited with exit code 127\n"
	execve := "slurmstepd-n2: error: execve(): /nonexistent/torchrun: No such file or directory\nsrun: error: n2: task 1: Exited with exit code 2\n"
	failed := "Traceback (most recent call last):\nModuleNotFoundError: No module named 'megatron'\nsrun: error: n2: task 1: Exited with exit code 1\n"
	for _, tc := range []struct {
		name, output string
		kind         FailureKind
		reason       string
	}{
		{"not found", missing, FailLaunch, "a task of a srun step could not start its program, and the others waited for it until the timeout: srun: error: n2: task 1: Exited with exit code 127"},
		{"execve", execve, FailLaunch, "a task of a srun step could not start its program, and the others waited for it until the timeout: slurmstepd-n2: error: execve(): /nonexistent/torchrun: No such file or directory"},
		{"a status of its own", failed, FailTimeout, "no exit within 2s"},
	} {
		out := filepath.Join(t.TempDir(), "out")
		if err := os.WriteFile(out, []byte(tc.output), 0o644); err != nil {
			t.Fatal(err)
		}
		l := Torchrun{Command: script(t, "cat "+out+" >&2; sleep 30 & wait"), NProcPerNode: 1, NNodes: 2, RdzvEndpoint: "node1:29400"}
		r := &Runner{Launcher: l, Grace: 2 * time.Second}
		res := r.Run(context.Background(), Job{Benchmark: DDPStep{Program: []string{"python3", "step.py"}}, Timeout: 2 * time.Second})
		if res.Failure == nil || res.Failure.Kind != tc.kind || !strings.HasPrefix(res.Failure.Reason, tc.reason) {
			t.Errorf("%s: failure %v, want %s: %s", tc.name, res.Failure, tc.kind, tc.reason)
		}
	}
}

// TestTorchrunCouldNotStart: a torchrun that failed as Python imported
// it, before its main ran (PyTorch's import failing on a node: a CUDA
// library missing, "ImportError: libcudart.so.12: ..."), ran nothing and
// exits 1, which read as the settings' exit. The real torchrun imports a
// torch that fails so; a worker's own import failure, which torchrun
// reports, is the worker's.
func TestTorchrunCouldNotStart(t *testing.T) {
	if _, err := exec.LookPath("torchrun"); err != nil {
		t.Skip("no torchrun")
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "torch"), 0o755); err != nil {
		t.Fatal(err)
	}
	exc := "ImportError: libcudart.so.12: cannot open shared object file: No such file or directory"
	if err := os.WriteFile(filepath.Join(dir, "torch", "__init__.py"), []byte(`raise ImportError("`+strings.TrimPrefix(exc, "ImportError: ")+`")`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := "torchrun could not start: " + exc
	r := &Runner{Launcher: Torchrun{NProcPerNode: 1}, BaseEnv: append(BaseEnv(), "PYTHONPATH="+dir)}
	for _, bench := range []Benchmark{tableJob("all_reduce_perf").Benchmark, DDPStep{Program: []string{"python3", "step.py"}}} {
		res := r.Run(context.Background(), Job{Benchmark: bench, Plan: tableJob("x").Plan, Timeout: time.Minute})
		if res.Failure == nil || res.Failure.Kind != FailLaunch || res.Failure.Reason != want {
			t.Errorf("%T: failure %v, want launch: %s\n%s", bench, res.Failure, want, res.Output)
		}
	}
	// A worker's import failure, under torchrun's report of it.
	worker := strings.Replace(torchrunOneRank, "RuntimeError: NCCL error in: /opt/pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:317, invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.21.5", exc, 1)
	out := filepath.Join(dir, "out")
	if err := os.WriteFile(out, []byte(worker), 0o644); err != nil {
		t.Fatal(err)
	}
	r = &Runner{Launcher: Torchrun{Command: script(t, "cat "+out+" >&2; exit 1"), NProcPerNode: 1}, BaseEnv: BaseEnv()}
	if res := r.Run(context.Background(), Job{Benchmark: DDPStep{Program: []string{"python3", "step.py"}}, Timeout: time.Minute}); res.Failure == nil || res.Failure.Kind == FailLaunch {
		t.Errorf("a worker's import failure: failure %v, want the worker's", res.Failure)
	}
}

// torchrunTwoNodes is what torchrun prints on two nodes (PyTorch 1.13,
// through srun) where the worker of one was killed by SIGKILL and the
// other's raised 5 s later, its peer gone: each node's torchrun logs its
// worker's failure as it finds it, and both print their reports as they
// leave their exit barrier together, in either order: torchrunTwoNodesA
// is the second failure's report, torchrunTwoNodesB the first's.
const (
	torchrunTwoNodes = `worker 1
worker 0
ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 0 (pid: 7672) of binary: /usr/bin/python3.11
Traceback (most recent call last):
  File "/work/train.py", line 7, in <module>
    raise RuntimeError("peer gone (rank 0)")
RuntimeError: peer gone (rank 0)
ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 (pid: 7671) of binary: /usr/bin/python3.11
`
	// torchrunAgentRaised begins each agent's report: ChildFailedError's
	// traceback, as torch 1.13 under Python 3.11 prints it.
	torchrunAgentRaised = `Traceback (most recent call last):
  File "/usr/bin/torchrun", line 13, in <module>
    sys.exit(main())
             ^^^^^^
  File "/usr/lib/python3/dist-packages/torch/distributed/elastic/multiprocessing/errors/__init__.py", line 346, in wrapper
    return f(*args, **kwargs)
           ^^^^^^^^^^^^^^^^^^
  File "/usr/lib/python3/dist-packages/torch/distributed/run.py", line 762, in main
    run(args)
  File "/usr/lib/python3/dist-packages/torch/distributed/run.py", line 753, in run
    elastic_launch(
  File "/usr/lib/python3/dist-packages/torch/distributed/launcher/api.py", line 132, in __call__
    return launch_agent(self._config, self._entrypoint, list(args))
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/usr/lib/python3/dist-packages/torch/distributed/launcher/api.py", line 246, in launch_agent
    raise ChildFailedError(
torch.distributed.elastic.multiprocessing.errors.ChildFailedError: 
`
	torchrunTwoNodesA = torchrunAgentRaised + `============================================================
/work/train.py FAILED
------------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-12-07_17:16:01
  host      : localhost
  rank      : 0 (local_rank: 0)
  exitcode  : 1 (pid: 7671)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
`
	torchrunTwoNodesB = torchrunAgentRaised + `=====================================================
/work/train.py FAILED
-----------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
-----------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-12-07_17:15:56
  host      : localhost
  rank      : 1 (local_rank: 0)
  exitcode  : -9 (pid: 7672)
  error_file: <N/A>
  traceback : Signal 9 (SIGKILL) received by PID 7672
=====================================================
`
	torchrunTwoNodesEnd = `srun: error: n1: task 0: Exited with exit code 1
srun: error: n2: task 1: Exited with exit code 1
`
)

// TestTorchrunReportsOfSeveralNodes: of the reports of several nodes'
// torchrun, which come in either order, the root cause is the one whose
// failure was observed first (its time): the trial failed as the worker
// killed first did, where it read as whichever report came last (the peer's
// exception, the next run its signal).
func TestTorchrunReportsOfSeveralNodes(t *testing.T) {
	for _, output := range []string{
		torchrunTwoNodes + torchrunTwoNodesA + torchrunTwoNodesB + torchrunTwoNodesEnd,
		torchrunTwoNodes + torchrunTwoNodesB + torchrunTwoNodesA + torchrunTwoNodesEnd,
	} {
		if got := (Torchrun{}).RankExit([]byte(output), Exit{Code: 1}); got != (Exit{Code: -1, Signal: syscall.SIGKILL}) {
			t.Errorf("RankExit = %+v, want SIGKILL's\n%s", got, output)
		}
		// Its report's word of the signal, not srun's line after the reports.
		if got, want := (Torchrun{}).FailureDetail([]byte(output)), "Signal 9 (SIGKILL) received by PID 7672"; got != want {
			t.Errorf("FailureDetail = %q, want %q", got, want)
		}
	}
	// Failures observed in one second: the last report, as on one node.
	same := strings.Replace(torchrunTwoNodesA, "2026-12-07_17:16:01", "2026-12-07_17:15:56", 1)
	if got := (Torchrun{}).RankExit([]byte(torchrunTwoNodes+torchrunTwoNodesB+same), Exit{Code: 1}); got != (Exit{Code: 1}) {
		t.Errorf("RankExit = %+v, want the last report's", got)
	}
}
