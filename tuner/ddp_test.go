package tuner

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nccltune/nccltune/runner"
	"github.com/nccltune/nccltune/runner/ddp"
	"github.com/nccltune/nccltune/store"
)

// torchPython finds a python3 that imports torch: CI installs Debian's
// python3-torch (a CPU build) for /usr/bin/python3.
func torchPython(t *testing.T) string {
	t.Helper()
	if py := findTorchPython(); py != "" {
		return py
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no python3 with torch in CI: .ci/run should install python3-torch")
	}
	t.Skip("no python3 with torch")
	return ""
}

// findTorchPython looks once per test binary: importing torch takes
// seconds of CPU, and the tests that need it would each pay them again.
var findTorchPython = sync.OnceValue(func() string {
	for _, py := range []string{"python3", "/usr/bin/python3"} {
		if exec.Command(py, "-c", "import torch").Run() == nil {
			path, _ := exec.LookPath(py)
			return path
		}
	}
	return ""
})

func freePort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
}

const ddpSpace = `
[campaign]
name = "ddp"
trials = 3
seed = 1
[launcher]
%s
[benchmark]
kind = "ddp"
python = "%s"
device = "cpu"
model_params = "1M"
layers = 2
batch = 8
iters = 3
warmup = 1
timeout = "2m"
warm_launch = false
[fixed]
NCCL_NVLS_ENABLE = 0
[[param]]
name = "bucket_cap_mb"
min = 1
max = 64
log = true
[[param]]
name = "static_graph"
values = ["0", "1"]
[[param]]
name = "gradient_as_bucket_view"
values = ["0", "1"]
`

// TestDDPCampaign runs the real DDP step script with PyTorch's gloo backend on
// CPU, two ranks under torchrun and under mpirun, and validates the result.
func TestDDPCampaign(t *testing.T) {
	py := torchPython(t)
	launchers := map[string]string{"torchrun": "kind = \"torchrun\"\nnproc_per_node = 2"}
	if _, err := exec.LookPath("mpirun"); err == nil {
		launchers["mpirun"] = "kind = \"mpirun\"\nnp = 2\nargs = [\"--oversubscribe\"]"
		if os.Geteuid() == 0 {
			t.Setenv("OMPI_ALLOW_RUN_AS_ROOT", "1")
			t.Setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
		}
	}
	if !torchrunWorks(t) {
		delete(launchers, "torchrun")
	}
	for name, launcher := range launchers {
		t.Run(name, func(t *testing.T) {
			t.Setenv("MASTER_PORT", freePort(t))
			sp := mustParse(t, "ddp.toml", fmt.Sprintf(ddpSpace, launcher, py))
			st := openStore(t)
			if err := newTuner(t, sp, st).Run(context.Background(), Options{ValidateRounds: 2}); err != nil {
				t.Fatal(err)
			}
			trials := campaignTrials(t, st, "ddp")
			for _, tr := range trials {
				if tr.State != store.Complete || !(tr.Scores["step"] > 0) || tr.Command[0] != name {
					out, _ := st.Output(tr.ID)
					t.Fatalf("trial %d: %s %s: %v %v\n%s", tr.Number, tr.State, tr.FailureReason, tr.Scores, tr.Command, out)
				}
				out, _ := st.Output(tr.ID)
				if !strings.Contains(string(out), `"world": 2`) || !strings.Contains(string(out), `"backend": "gloo"`) {
					t.Errorf("trial %d did not run two gloo ranks:\n%s", tr.Number, out)
				}
				if tr.Number > 1 && !strings.Contains(strings.Join(tr.Command, " "), "--bucket-cap-mb=") {
					t.Errorf("trial %d: DDP knobs not passed as options: %v", tr.Number, tr.Command)
				}
				for _, kv := range tr.Env {
					if strings.HasPrefix(kv, "bucket_cap_mb") {
						t.Errorf("a DDP knob went into the environment: %v", tr.Env)
					}
				}
			}
			camp, _ := st.Campaign("ddp")
			if vals, err := st.Validations(camp.ID); err != nil || len(vals) != 1 {
				t.Errorf("validation: %v %v", vals, err)
			}
		})
	}
}

// torchrunWorks probes the installed torchrun: Debian's (PyTorch 1.13 under
// Python 3.11) cannot start workers at all; the launcher is then tested on the
// accelerator machine only.
func torchrunWorks(t *testing.T) bool {
	probe := filepath.Join(t.TempDir(), "probe.py")
	os.WriteFile(probe, []byte("print('torchrun works')\n"), 0o644)
	out, err := exec.Command("torchrun", "--standalone", "--nproc_per_node", "1", probe).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "torchrun works") {
		t.Logf("torchrun unusable here, skipped: %v", err)
		return false
	}
	return true
}

// TestDDPWithoutTorchStopsEarly: a python without torch fails every trial
// the same way, and the campaign stops instead of burning its budget.
func TestDDPWithoutTorchStopsEarly(t *testing.T) {
	noTorch := filepath.Join(t.TempDir(), "python-without-torch")
	os.WriteFile(noTorch, []byte("#!/bin/sh\nexec python3 -S -c 'import runpy, sys; sys.argv = sys.argv[1:]; sys.modules[\"torch\"] = None; runpy.run_path(sys.argv[0], run_name=\"__main__\")' \"$@\"\n"), 0o755)
	sp := mustParse(t, "ddp.toml", strings.Replace(fmt.Sprintf(ddpSpace, `kind = "local"`, noTorch), "trials = 3", "trials = 12", 1))
	st := openStore(t)
	err := newTuner(t, sp, st).Run(context.Background(), Options{})
	if !errors.Is(err, ErrAllFailing) || !strings.Contains(err.Error(), "PyTorch is not installed") {
		t.Fatalf("err = %v", err)
	}
	if n := len(campaignTrials(t, st, "ddp")); n != earlyStopAfter {
		t.Errorf("%d trials ran", n)
	}
}

// TestDDPRendezvousFromTheLauncher: rank 0's host comes from the launcher
// that started the ranks, not from a MASTER_ADDR the job script exported
// (the job's first node, where another group's step may be listening):
// srun's step on one node meets at 127.0.0.1, on several at its node list's
// first; mpirun's ranks on several nodes without MASTER_ADDR fail at once,
// where they waited for rank 0 at 127.0.0.1 until the timeout.
func TestDDPRendezvousFromTheLauncher(t *testing.T) {
	python := torchPython(t)
	script, err := ddp.WriteScript(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var base []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SLURM_") && !strings.HasPrefix(kv, "OMPI_") && !strings.HasPrefix(kv, "PMI_") && !strings.HasPrefix(kv, "MASTER_") && !strings.HasPrefix(kv, "RANK=") && !strings.HasPrefix(kv, "WORLD_SIZE=") {
			base = append(base, kv)
		}
	}
	bench := runner.DDPStep{Program: []string{python, script, "--device", "cpu", "--params", "10K", "--layers", "2", "--batch", "4"}}
	srunRank := []string{"SLURM_PROCID=0", "SLURM_NTASKS=1", "SLURM_LOCALID=0"}
	for _, tc := range []struct {
		name string
		env  []string
		want runner.FailureKind // "": a result
	}{
		{"srun, one node", append(srunRank, "SLURM_STEP_NODELIST=n9", "SLURM_STEP_NUM_NODES=1", "MASTER_ADDR=job-first-node.invalid"), ""},
		{"srun, two nodes", append(srunRank, "SLURM_STEP_NODELIST=localhost,n[2-3]", "SLURM_STEP_NUM_NODES=3", "MASTER_ADDR=job-first-node.invalid"), ""},
		// The job's own nodes, whose names do not resolve here: the job
		// script's MASTER_ADDR stands.
		{"srun, the job's nodes", append(srunRank, "SLURM_STEP_NODELIST=n[2-3]", "SLURM_JOB_NODELIST=n[2-3]", "SLURM_STEP_NUM_NODES=2", "MASTER_ADDR=127.0.0.1"), ""},
		{"mpirun, one node", []string{"OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=1", "OMPI_COMM_WORLD_LOCAL_RANK=0", "OMPI_COMM_WORLD_LOCAL_SIZE=1", "MASTER_ADDR=job-first-node.invalid"}, ""},
		{"mpirun, two nodes", []string{"OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=2", "OMPI_COMM_WORLD_LOCAL_RANK=0", "OMPI_COMM_WORLD_LOCAL_SIZE=1"}, runner.FailLaunch},
	} {
		r := &runner.Runner{Launcher: runner.Local{}, BaseEnv: append(base, "MASTER_PORT="+freePort(t))}
		res := r.Run(context.Background(), runner.Job{Benchmark: bench, Plan: runner.Plan{Iters: 2, Warmup: 1}, Env: tc.env, Timeout: time.Minute})
		switch {
		case tc.want == "" && res.Failure != nil:
			t.Errorf("%s: %v\n%s", tc.name, res.Failure, res.Output)
		case tc.want != "" && (res.Failure == nil || res.Failure.Kind != tc.want || !strings.Contains(res.Failure.Reason, "MASTER_ADDR")):
			t.Errorf("%s: failure %v, want %s naming MASTER_ADDR\n%s", tc.name, res.Failure, tc.want, res.Output)
		}
	}
}
