package runner

import (
	"context"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nccltune/nccltune/space"
)

// torchPython is a python3 that imports torch; the test is skipped without one.
func torchPython(t *testing.T) string {
	for _, p := range []string{"python3", "/usr/bin/python3"} {
		if exec.Command(p, "-c", "import torch").Run() == nil {
			return p
		}
	}
	t.Skip("no python3 with torch")
	return ""
}

// TestDDPStepPortInUse: another campaign's DDP step on this host (or any
// program) holds PyTorch's usual port 29500, and the caller sets no
// MASTER_PORT. A trial's rank 0 hosts its rendezvous on a port of its own,
// where every trial on every campaign used 29500: the second campaign's rank
// 0 failed to listen, and its other ranks joined the first's rendezvous.
func TestDDPStepPortInUse(t *testing.T) {
	py := torchPython(t)
	if l, err := net.Listen("tcp", ":29500"); err == nil { // else something holds it already
		defer l.Close()
	}
	bench, err := newDDPStep(space.BenchmarkSettings{Python: py, Params: "1M", Layers: 2, Batch: 8, Device: "cpu", ScriptDir: t.TempDir()}, "local")
	if err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range BaseEnv() {
		if !strings.HasPrefix(kv, "MASTER_PORT=") {
			env = append(env, kv)
		}
	}
	r := &Runner{Launcher: Local{}, BaseEnv: env}
	res := r.Run(context.Background(), Job{Benchmark: bench, Plan: Plan{Iters: 2, Warmup: 1}, Timeout: time.Minute})
	if res.Failure != nil {
		t.Fatalf("failure = %v\n%s", res.Failure, res.Output)
	}
}
