package runner

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nccltune/nccltune/space"
)

// torchPython is a python3 that has torch; the test is skipped without one.
func torchPython(t *testing.T) string {
	p := findTorchPython()
	if p == "" {
		t.Skip("no python3 with torch")
	}
	return p
}

// findTorchPython looks once, for torch's package without importing it:
// the import takes seconds of CPU, and a torch that is there but fails to
// import fails the tests that need it rather than skipping them.
var findTorchPython = sync.OnceValue(func() string {
	for _, p := range []string{"python3", "/usr/bin/python3"} {
		if exec.Command(p, "-c", `import importlib.util, sys; sys.exit(importlib.util.find_spec("torch") is None)`).Run() == nil {
			return p
		}
	}
	return ""
})

// TestDDPStepSucceeds runs the DDP step once where it must succeed, each
// of these at once, as importing torch takes seconds a launch:
//
// Another campaign's DDP step on this host (or any program) holds
// PyTorch's usual port 29500, and the caller sets no MASTER_PORT. A trial's
// rank 0 hosts its rendezvous on a port of its own, where every trial on
// every campaign used 29500: the second campaign's rank 0 failed to listen,
// and its other ranks joined the first's rendezvous.
//
// Every model_params the space accepts ("4MB", "1 MiB", "64k") is a size
// the script reads, not a ValueError of every trial.
//
// Run by hand (--ranks-from any), the script reads its rank, world and
// local rank from the one launcher whose rank variable is set, not each
// from whichever launcher's is: mpirun's rank 0 of 1 under a job script's
// WORLD_SIZE=2 waited for a rank 1 that never came.
//
// The gradient check holds no second copy of the model's gradients beside
// the reduced ones. A model sized to fill the GPU's memory with its
// parameters, gradients and DDP's buckets (a 7B model's on an 80 GB GPU
// with gradient_as_bucket_view) steps, and every trial failed as oom in the
// check after it. Here a memory that holds a step's gradients and half a
// model's more (checkFitsHook).
func TestDDPStepSucceeds(t *testing.T) {
	py := torchPython(t)
	const size = "1 MiB"
	if _, err := space.ParseSize(size); err != nil {
		t.Fatal(err)
	}
	if l, err := net.Listen("tcp", ":29500"); err == nil { // else something holds it already
		defer l.Close()
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "sitecustomize.py"), []byte(checkFitsHook), 0o644); err != nil {
		t.Fatal(err)
	}
	bench, err := newDDPStep(space.BenchmarkSettings{Python: py, Params: size, Layers: 8, Batch: 8, Device: "cpu", ScriptDir: t.TempDir()}, "any")
	if err != nil {
		t.Fatal(err)
	}
	env := slices.DeleteFunc(BaseEnv(), func(kv string) bool { return strings.HasPrefix(kv, "MASTER_PORT=") })
	r := &Runner{Launcher: Local{}, BaseEnv: env}
	res := r.Run(context.Background(), Job{Benchmark: bench, Plan: Plan{Iters: 2, Warmup: 1}, Timeout: time.Minute,
		Env: []string{"PYTHONPATH=" + dir, "OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=1", "WORLD_SIZE=2", "RANK=", "LOCAL_RANK="}})
	if res.Failure != nil || res.Measurement.Ranks != 1 {
		t.Fatalf("failure = %v, measurement %+v; want one rank's\n%s", res.Failure, res.Measurement, res.Output)
	}
}

// runDDPStep runs the DDP step script on CPU (gloo), one process under the
// local launcher, with the model settings of b and the variables env added
// as a trial's, which every launcher hands its ranks, for at most timeout.
func runDDPStep(t *testing.T, b space.BenchmarkSettings, timeout time.Duration, env ...string) Result {
	return runDDPStepFrom(t, Local{}, "local", b, timeout, env...)
}

// runDDPStepFrom is runDDPStep under launcher l, with the ranks read from
// the variables of the launcher kind.
func runDDPStepFrom(t *testing.T, l Launcher, kind string, b space.BenchmarkSettings, timeout time.Duration, env ...string) Result {
	b.Python, b.Device, b.ScriptDir = torchPython(t), "cpu", t.TempDir()
	if b.Layers == 0 {
		b.Layers, b.Batch = 2, 8
	}
	bench, err := newDDPStep(b, kind)
	if err != nil {
		t.Fatal(err)
	}
	r := &Runner{Launcher: l, BaseEnv: BaseEnv()}
	return r.Run(context.Background(), Job{Benchmark: bench, Plan: Plan{Iters: 2, Warmup: 1}, Env: env, Timeout: timeout})
}

// corruptingHook is a sitecustomize.py that gives every DDP model a
// communication hook that returns its bucket tripled, not all-reduced: the
// wrong data an NCCL setting that corrupts its reductions would give.
const corruptingHook = `import torch
from torch.nn.parallel import DistributedDataParallel as DDP

init = DDP.__init__


def corrupting(self, *args, **kwargs):
    init(self, *args, **kwargs)

    def hook(state, bucket):
        fut = torch.futures.Future()
        fut.set_result(bucket.buffer().mul_(3))
        return fut

    self.register_comm_hook(None, hook)


DDP.__init__ = corrupting
`

// TestDDPStepNaNInReduction: an all-reduce that gives a NaN in the
// gradients of one parameter is wrong, whichever parameters are checked
// after it. (The hook corrupts only the checked step, the fourth: one
// warm-up and two timed steps before it.)
func TestDDPStepNaNInReduction(t *testing.T) {
	dir := t.TempDir()
	site := strings.Replace(corruptingHook, "fut.set_result(bucket.buffer().mul_(3))",
		"calls.append(1)\n        if len(calls) > 3:\n            bucket.buffer()[-1] = float('nan')\n        fut.set_result(bucket.buffer())", 1)
	site = strings.Replace(site, "    def hook(", "    calls = []\n\n    def hook(", 1)
	if err := os.WriteFile(filepath.Join(dir, "sitecustomize.py"), []byte(site), 0o644); err != nil {
		t.Fatal(err)
	}
	res := runDDPStep(t, space.BenchmarkSettings{Params: "100K"}, time.Minute, "PYTHONPATH="+dir)
	if res.Failure == nil || res.Failure.Kind != FailWrong {
		t.Fatalf("failure = %v, want %s\n%s", res.Failure, FailWrong, res.Output)
	}
}

// TestDDPStepStaleReduction: an all-reduce that gives the step before's
// gradients (a buffer read before it was written) is wrong. Rank 0's loss
// was scaled by 1 in the check as in the timed steps, so that the step
// before's gradients were its check step's, to within a step of SGD.
// (The hook gives the stale buffer from the fourth step on, the check's:
// one warm-up and two timed steps before it.)
func TestDDPStepStaleReduction(t *testing.T) {
	dir := t.TempDir()
	site := strings.Replace(corruptingHook, "fut.set_result(bucket.buffer().mul_(3))", `calls.append(bucket.buffer().clone())
        if len(calls) > 3:
            bucket.buffer().copy_(calls[-2])
        fut.set_result(bucket.buffer())`, 1)
	site = strings.Replace(site, "    def hook(", "    calls = []\n\n    def hook(", 1)
	if err := os.WriteFile(filepath.Join(dir, "sitecustomize.py"), []byte(site), 0o644); err != nil {
		t.Fatal(err)
	}
	res := runDDPStep(t, space.BenchmarkSettings{Params: "100K"}, time.Minute, "PYTHONPATH="+dir)
	if res.Failure == nil || res.Failure.Kind != FailWrong {
		t.Fatalf("failure = %v, want %s\n%s", res.Failure, FailWrong, res.Output)
	}
}

// TestDDPStepRankLostInReduction: an all-reduce that gives every rank rank
// 0's gradients, not the average of every rank's, is wrong however alike the
// ranks' gradients are. (A communication hook's bucket is not divided by the
// world: it is DDP's default hook that averages.)
func TestDDPStepRankLostInReduction(t *testing.T) {
	if _, err := exec.LookPath("mpirun"); err != nil {
		t.Skip("no mpirun")
	}
	dir := t.TempDir()
	site := strings.Replace(corruptingHook, "bucket.buffer().mul_(3)",
		"torch.distributed.broadcast(bucket.buffer(), 0) or bucket.buffer()", 1)
	if err := os.WriteFile(filepath.Join(dir, "sitecustomize.py"), []byte(site), 0o644); err != nil {
		t.Fatal(err)
	}
	res := runDDPStepFrom(t, MPIRun{NP: 2, Args: []string{"--oversubscribe"}}, "mpirun", space.BenchmarkSettings{Params: "100K"}, time.Minute,
		"PYTHONPATH="+dir, "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
	if res.Failure == nil || res.Failure.Kind != FailWrong {
		t.Fatalf("failure = %v, want %s\n%s", res.Failure, FailWrong, res.Output)
	}
}

// TestDDPStepRankRepeatedInReduction: an all-reduce that takes rank 0's
// part in place of rank 4's is wrong, though the two ranks step on the same
// input: the check gave ranks 4 apart the same scale, so that their parts
// were alike, and passed it.
func TestDDPStepRankRepeatedInReduction(t *testing.T) {
	if _, err := exec.LookPath("mpirun"); err != nil {
		t.Skip("no mpirun")
	}
	dir := t.TempDir()
	site := strings.Replace(corruptingHook, "fut.set_result(bucket.buffer().mul_(3))", `buf = bucket.buffer()
        first = buf.clone()
        torch.distributed.broadcast(first, 0)
        if torch.distributed.get_rank() == 4:
            buf.copy_(first)
        torch.distributed.all_reduce(buf)
        fut.set_result(buf.div_(torch.distributed.get_world_size()))`, 1)
	if err := os.WriteFile(filepath.Join(dir, "sitecustomize.py"), []byte(site), 0o644); err != nil {
		t.Fatal(err)
	}
	res := runDDPStepFrom(t, MPIRun{NP: 5, Args: []string{"--oversubscribe"}}, "mpirun", space.BenchmarkSettings{Params: "100K"}, 2*time.Minute,
		"PYTHONPATH="+dir, "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
	if res.Failure == nil || res.Failure.Kind != FailWrong {
		t.Fatalf("failure = %v, want %s\n%s", res.Failure, FailWrong, res.Output)
	}
}

// TestDDPStepCheckInLowPrecision: matrix products of less precision than
// fp32 (TF32, which TORCH_ALLOW_TF32_CUBLAS_OVERRIDE or
// NVIDIA_TF32_OVERRIDE turn on; here bf16's) round a rank's scaled gradients
// otherwise than its own: a right reduction still passes the check, in
// each of its steps (five ranks: two base-4 digits).
func TestDDPStepCheckInLowPrecision(t *testing.T) {
	if _, err := exec.LookPath("mpirun"); err != nil {
		t.Skip("no mpirun")
	}
	dir := t.TempDir()
	site := `import torch
import torch.nn.functional as F

linear = F.linear
F.linear = lambda x, w, b=None: linear(x.to(torch.bfloat16).float(), w.to(torch.bfloat16).float(), b)
`
	if err := os.WriteFile(filepath.Join(dir, "sitecustomize.py"), []byte(site), 0o644); err != nil {
		t.Fatal(err)
	}
	res := runDDPStepFrom(t, MPIRun{NP: 5, Args: []string{"--oversubscribe"}}, "mpirun", space.BenchmarkSettings{Params: "1M"}, 2*time.Minute,
		"PYTHONPATH="+dir, "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
	if res.Failure != nil {
		t.Fatalf("failure = %v\n%s", res.Failure, res.Output)
	}
}

// checkFitsHook is a sitecustomize.py that fails a gradient check holding
// more than half a model's gradients beside the reduced ones, as a GPU
// memory filled by the step would (TestDDPStepSucceeds).
const checkFitsHook = `import torch
from torch.nn.parallel import DistributedDataParallel as DDP

init, grad = DDP.__init__, torch.autograd.grad
total = [0]


def counting(self, module, *args, **kwargs):
    total[0] = sum(p.numel() for p in module.parameters())
    init(self, module, *args, **kwargs)


def bounded(outputs, inputs, *args, **kwargs):
    if sum(p.numel() for p in inputs) > total[0] / 2:
        raise RuntimeError("CUDA out of memory. Tried to allocate the model's gradients once more")
    return grad(outputs, inputs, *args, **kwargs)


DDP.__init__, torch.autograd.grad = counting, bounded
`

// TestDDPStepErrorExits: an NCCL setting that corrupts the gradients'
// all-reduce gives a step as fast as any, or faster; its time is no
// measurement, or the campaign exports the setting that breaks training
// (the first case). And a rank that failed exits at once, whatever its
// libraries' teardown would wait for (ProcessGroupNCCL's, at exit without
// destroy_process_group, aborts NCCL's communicators, which waits on the
// ranks still in a collective): the launcher then ends the others, where the
// trial otherwise waited for its timeout.
func TestDDPStepErrorExits(t *testing.T) {
	const hang = "\nimport atexit, time\natexit.register(time.sleep, 600)\n"
	for _, tc := range []struct {
		name, site string
		kind       FailureKind
	}{
		{"an error the script reports", corruptingHook + hang, FailWrong},
		{"an exception", "import torch\ntorch.optim.SGD = None" + hang, FailExit},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "sitecustomize.py"), []byte(tc.site), 0o644); err != nil {
			t.Fatal(err)
		}
		res := runDDPStep(t, space.BenchmarkSettings{Params: "100K"}, 20*time.Second, "PYTHONPATH="+dir)
		if res.Failure == nil || res.Failure.Kind != tc.kind {
			t.Errorf("%s: failure = %v, want %s\n%s", tc.name, res.Failure, tc.kind, res.Output)
		}
	}
}

// TestDDPStepRankOutsideWorld: a rank the launcher's variables place outside
// their world (a rank without its world's size, which reads as 1) has no
// rank 0 to meet: it fails at once, where it waited for one until the
// trial's timeout; and one whose variables do not read fails as launch too.
func TestDDPStepRankOutsideWorld(t *testing.T) {
	for _, env := range [][]string{
		{"OMPI_COMM_WORLD_RANK=1"},
		{"OMPI_COMM_WORLD_RANK=2", "OMPI_COMM_WORLD_SIZE=2"},
		{"OMPI_COMM_WORLD_RANK=-1", "OMPI_COMM_WORLD_SIZE=2"},
		{"OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=0"},
		{"OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=two"},
		{"OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=2", "OMPI_COMM_WORLD_LOCAL_SIZE=one"},
	} {
		res := runDDPStepFrom(t, Local{}, "mpirun", space.BenchmarkSettings{Params: "100K"}, 15*time.Second, env...)
		if res.Failure == nil || res.Failure.Kind != FailLaunch {
			t.Errorf("%s: failure = %v, want %s\n%s", env, res.Failure, FailLaunch, res.Output)
		}
	}
}
