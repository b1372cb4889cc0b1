package doctor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/nccltune/nccltune/internal/simtest"
	"github.com/nccltune/nccltune/runner"
	"github.com/nccltune/nccltune/runner/nccllog"
	"github.com/nccltune/nccltune/space"
)

// The test binary doubles as the simulator for the NCCL check.
func TestMain(m *testing.M) { simtest.Main(m) }

func read(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// fakeExec answers with recorded outputs; tools it has none for are missing.
func fakeExec(outputs map[string]string) func(context.Context, string, ...string) ([]byte, error) {
	return func(_ context.Context, name string, _ ...string) ([]byte, error) {
		out, ok := outputs[name]
		if !ok {
			return nil, &exec.Error{Name: name, Err: exec.ErrNotFound}
		}
		return []byte(out), nil
	}
}

func TestParsers(t *testing.T) {
	gpus := ParseNvidiaSMI(read(t, "testdata/h200-nvidia-smi-query.csv"))
	if len(gpus) != 1 || gpus[0].Name != "NVIDIA H200" || gpus[0].Driver != "580.159.04" {
		t.Errorf("gpus = %+v", gpus)
	}
	// One GPU's odd name (a stray quote, which a CSV reader stops at) loses that GPU's name at most.
	gpus = ParseNvidiaSMI("0, NVIDIA \"H200, 00000000:00:06.0, 143771 MiB, 580.159.04\r\n1, NVIDIA H200, 00000000:00:07.0, 143771 MiB, 580.159.04\n")
	if len(gpus) != 2 || gpus[1].Name != "NVIDIA H200" || gpus[1].Driver != "580.159.04" {
		t.Errorf("gpus after a stray quote = %+v", gpus)
	}
	ports := ParseIbstat(read(t, "testdata/ibstat-roce.txt"))
	if len(ports) != 2 || !ports[0].Active() || ports[0].Rate != "400" || ports[0].LinkLayer != "Ethernet" || ports[1].Active() {
		t.Errorf("ports = %+v", ports)
	}
	gids := ReadGIDs("testdata/roce")
	if len(gids) != 4 { // index 4 is all zeros: unused
		t.Errorf("gids = %+v", gids)
	}
	if idx, ok := SuggestGIDIndex(gids, GIDKind{Version: 2}); !ok || idx != 3 {
		t.Errorf("suggested GID index %d, want 3 (RoCE v2 with an IPv4 address)", idx)
	}
	if cuda, known := OMPICUDA(read(t, "testdata/h200-ompi_info-cuda.txt")); !known || cuda {
		t.Errorf("Open MPI on the H200 machine was built without CUDA: %v %v", cuda, known)
	}
	if mods := Modules(read(t, "testdata/roce/proc/modules")); !mods["nvidia_peermem"] || !mods["mlx5_ib"] {
		t.Errorf("modules = %v", mods)
	}
}

func byCheck(results []Result) map[string]Result {
	m := map[string]Result{}
	for _, r := range results {
		m[strings.SplitN(r.Check, " ", 2)[0]] = r
	}
	return m
}

func TestRunOnRecordedMachine(t *testing.T) {
	t.Setenv("MASTER_ADDR", "")
	// A RoCE node whose NCCL falls back to sockets: the simulated cluster over TCP.
	res := byCheck(Run(context.Background(), Options{
		Root: "testdata/roce",
		Exec: fakeExec(map[string]string{
			"nvidia-smi": read(t, "testdata/h200-nvidia-smi-query.csv"),
			"ibstat":     read(t, "testdata/ibstat-roce.txt"),
			"ompi_info":  read(t, "testdata/h200-ompi_info-cuda.txt"),
		}),
		Probe: &runner.Job{Benchmark: runner.NCCLTests{Program: []string{os.Args[0], "-nodes=2", "-fabric=tcp"}, Binary: "all_reduce_perf",
			Collective: "all_reduce", GPUs: 16, Check: true}, Plan: runner.Plan{Sizes: space.Sizes{Min: 8, Max: 1 << 20, Factor: 8}, Iters: 2, Warmup: 1}},
	}))
	for check, want := range map[string]Status{
		"GPUs": OK, "InfiniBand/RoCE": OK, "RoCE": OK, "mlx5": OK, "GPUDirect": OK, "Open": Warn,
		"MASTER_ADDR": Skip, "tiny": Fail, "torch.distributed": Skip,
	} {
		if got := res[check]; got.Status != want {
			t.Errorf("%s: %s (%s); want %s", check, got.Status, got.Detail, want)
		}
	}
	if !strings.Contains(res["RoCE"].Fix, "NCCL_IB_GID_INDEX=3") {
		t.Errorf("GID check: %+v", res["RoCE"])
	}
	if !strings.Contains(res["tiny"].Fix, "NCCL used sockets") {
		t.Errorf("NCCL check: %+v", res["tiny"])
	}
	// What NCCL takes from a config file is named.
	conf := filepath.Join(t.TempDir(), "nccl.conf")
	if err := os.WriteFile(conf, []byte("NCCL_ALGO=Ring\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	probe := Options{Env: []string{"NCCL_CONF_FILE=" + conf}, Probe: &runner.Job{Benchmark: runner.NCCLTests{Program: []string{os.Args[0], "-nodes=2", "-fabric=ib"}, Binary: "all_reduce_perf",
		Collective: "all_reduce", GPUs: 16, Check: true}, Plan: runner.Plan{Sizes: space.Sizes{Min: 8, Max: 1 << 20, Factor: 8}, Iters: 2, Warmup: 1}}}
	if got := NCCL(context.Background(), probe, Hardware{}); !strings.Contains(got.Detail, "NCCL also read NCCL_ALGO=Ring (") {
		t.Errorf("NCCL check does not name the config file's setting: %+v", got)
	}
	if _, err := json.Marshal(res); err != nil {
		t.Fatal(err)
	}
}

func TestMissingToolsSkip(t *testing.T) {
	t.Setenv("MASTER_ADDR", "127.0.0.1")
	t.Setenv("MASTER_PORT", "1") // nothing listens: refused, so the host answers
	res := Run(context.Background(), Options{Root: t.TempDir(), Exec: fakeExec(nil), Python: "no-such-python"})
	for _, r := range res {
		if r.Check == "MASTER_ADDR reachable" {
			if r.Status != OK || !strings.Contains(r.Detail, "or a firewall on the way rejects the port") {
				t.Errorf("MASTER_ADDR: %+v; a refusal may be a firewall's", r)
			}
			continue
		}
		if r.Status != Skip {
			t.Errorf("%s: %s (%s); a missing tool must skip", r.Check, r.Status, r.Detail)
		}
	}
}

// TestRecordedOnH200 checks the modules read there and what doctor printed there.
func TestRecordedOnH200(t *testing.T) {
	if mods := Modules(read(t, "testdata/h200-proc-modules.txt")); !mods["nvidia"] || mods["nvidia_peermem"] {
		t.Errorf("modules = %v", mods)
	}
	var rep struct {
		Nodes []struct {
			Results []Result
		}
		Cluster []Result
	}
	if err := json.Unmarshal([]byte(read(t, "testdata/h200-doctor-mpirun.json")), &rep); err != nil || len(rep.Nodes) != 1 {
		t.Fatalf("recorded doctor --json: %v", err)
	}
	got := byCheck(rep.Nodes[0].Results)
	if got["GPUs"].Status != OK || got["Open"].Status != Warn || rep.Cluster[0].Status != OK {
		t.Errorf("recorded verdicts changed meaning: %+v %+v", got, rep.Cluster)
	}
}

// TestFramework reads the torch.distributed check's output. Its detail was
// the output's last line: with NCCL_DEBUG=INFO in the environment, NCCL's
// lines, which libc flushes at exit after Python's, came last, and the
// check said an NCCL line instead of the versions.
func TestFramework(t *testing.T) {
	const ok = "FRAMEWORK_OK torch 2.5.1+cu124 backend nccl 2.21.5 sum 1.0\n"
	const versions = "torch 2.5.1+cu124 backend nccl 2.21.5 sum 1.0"
	for _, tc := range []struct {
		name, out string
		status    Status
		detail    string
	}{
		{"alone", ok, OK, versions},
		{"NCCL's log after it", ok + "gpu-a:1:1 [0] NCCL INFO comm 0x55 rank 0 nranks 1 cudaDev 0 busId 1000 - Destroy COMPLETE\n", OK, versions},
		{"a warning before it, CRLF", "UserWarning: TypedStorage is deprecated\r\n" + strings.ReplaceAll(ok, "\n", "\r\n"), OK, versions},
		{"no torch", "ModuleNotFoundError: No module named 'torch'\n", Skip, "PyTorch is not installed for python3"},
		{"failed", "Traceback (most recent call last):\nRuntimeError: NCCL error\n", Fail, "RuntimeError: NCCL error"},
		// An interpreter (a shim, a wrapper) that ended well and said nothing failed with no detail at all.
		{"silent", "", Fail, "no output"},
		{"blank lines", "\n \r\n", Fail, "no output"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := checkFramework(context.Background(), Options{Python: "python3", Exec: fakeExec(map[string]string{"python3": tc.out})}, nil)
			if r.Status != tc.status || r.Detail != tc.detail {
				t.Errorf("%s %q; want %s %q", r.Status, r.Detail, tc.status, tc.detail)
			}
		})
	}
}

// failingExec answers as fakeExec, but every tool exits 255.
func failingExec(outputs map[string]string) func(context.Context, string, ...string) ([]byte, error) {
	return func(ctx context.Context, name string, args ...string) ([]byte, error) {
		out, err := fakeExec(outputs)(ctx, name, args...)
		if err != nil {
			return out, err
		}
		return out, exec.Command("sh", "-c", "exit 255").Run()
	}
}

// TestPortsIbstatFails: ibstat that fails (it needs the ib_umad module,
// which NCCL does not) said "no HCA found ... fine on one node" of a node
// whose ports it never read.
func TestPortsIbstatFails(t *testing.T) {
	const panic = "ibwarn: [4242] umad_init: can't read ABI version from /sys/class/infiniband_mad/abi_version (No such file or directory): is ib_umad module loaded?\nibpanic: [4242] main: can't init UMAD library: (No such file or directory)\n"
	for _, tc := range []struct {
		name   string
		exec   func(context.Context, string, ...string) ([]byte, error)
		status Status
		detail string
	}{
		{"ports", fakeExec(map[string]string{"ibstat": read(t, "testdata/ibstat-roce.txt")}), OK, "active: mlx5_0/1 Ethernet 400Gb/s; down: mlx5_1/1 Ethernet Down"},
		{"no HCA", fakeExec(map[string]string{"ibstat": ""}), Warn, "no HCA found"},
		{"ibstat fails", failingExec(map[string]string{"ibstat": panic}), Warn, "ibstat failed: ibpanic: [4242] main: can't init UMAD library: (No such file or directory)"},
		{"ibstat fails after a CA", failingExec(map[string]string{"ibstat": read(t, "testdata/ibstat-roce.txt") + panic}), OK, "active: mlx5_0/1 Ethernet 400Gb/s; down: mlx5_1/1 Ethernet Down"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := checkPorts(context.Background(), Options{Root: t.TempDir(), Exec: tc.exec}, &facts{}) // no sysfs ports
			if r.Status != tc.status || r.Detail != tc.detail {
				t.Errorf("%s %q; want %s %q", r.Status, r.Detail, tc.status, tc.detail)
			}
		})
	}
}

// TestPortsWithoutHCA: on a node with no RDMA device (a GPU node with
// rdma-core installed), ibstat fails for want of ib_umad, which no HCA
// loads; sysfs, which lists every HCA, lists none. It was told to modprobe
// ib_umad, its fabric unchecked; it has no HCA.
func TestPortsWithoutHCA(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "sys/class/net"), 0o755); err != nil {
		t.Fatal(err)
	}
	const panic = "ibpanic: [4242] main: can't init UMAD library: (No such file or directory)\n"
	for name, exec := range map[string]func(context.Context, string, ...string) ([]byte, error){
		"ibstat fails": failingExec(map[string]string{"ibstat": panic}),
		// Skipped as no fabric checked, where ibstat that printed nothing
		// said "no HCA found" of the same node.
		"no ibstat": fakeExec(nil),
	} {
		r := checkPorts(context.Background(), Options{Root: root, Exec: exec}, &facts{})
		if r.Status != Warn || !strings.HasPrefix(r.Detail, "no HCA found") || strings.Contains(r.Fix, "ib_umad") {
			t.Errorf("%s: %s %q, fix %q; want no HCA found", name, r.Status, r.Detail, r.Fix)
		}
	}
}

// tool writes an executable script named name into dir.
func tool(t *testing.T, dir, name, script string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestToolsBounded: a tool that hangs is killed with its children at
// o.Timeout (a child that kept the output open held the check for as long
// as it ran), and a tool that prints without end is read only so far.
func TestToolsBounded(t *testing.T) {
	dir := t.TempDir()
	tool(t, dir, "nvidia-smi", "echo 'index, name, pci.bus_id, memory.total [MiB], driver_version'; /bin/sleep 60; echo late") // sleep, a child, holds the output open
	tool(t, dir, "ibstat", "/bin/sh -c '/bin/sleep 60' & echo 'CA '\\''mlx5_0'\\'")
	t.Setenv("PATH", dir)
	t.Setenv("MASTER_ADDR", "")
	start := time.Now()
	res := byCheck(Run(context.Background(), Options{Root: t.TempDir(), Exec: nil, Timeout: 200 * time.Millisecond}))
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("doctor took %s with a tool timeout of 200ms", d)
	}
	if r := res["GPUs"]; r.Status != Fail || r.Detail != "nvidia-smi: no answer in 200ms" {
		t.Errorf("a hung nvidia-smi, which printed its header: %+v", r)
	}
	out, err := run(context.Background(), 5*time.Second, "/bin/sh", "-c", "exec /usr/bin/head -c 5000000 /dev/zero")
	if err != nil || len(out) > maxToolOutput {
		t.Errorf("a tool's 5 MB: kept %d bytes (%v), want at most %d", len(out), err, maxToolOutput)
	}
}

// gidTable writes a port's sysfs GID table under root: index -> GID, type.
func gidTable(t *testing.T, root, ca string, entries map[int][2]string) {
	t.Helper()
	dir := filepath.Join(root, "sys/class/infiniband", ca, "ports/1")
	for _, sub := range []string{"gids", "gid_attrs/types"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for i, e := range entries {
		name := strconv.Itoa(i)
		if os.WriteFile(filepath.Join(dir, "gids", name), []byte(e[0]+"\n"), 0o644) != nil ||
			os.WriteFile(filepath.Join(dir, "gid_attrs/types", name), []byte(e[1]+"\n"), 0o644) != nil {
			t.Fatal("cannot write the GID table")
		}
	}
}

// TestGIDIndex: the GID check judges the active RoCE ports' own tables as
// NCCL (2.21 and later, NCCL_IB_GID_INDEX unset) picks from them: a RoCE v2
// GID with an IPv4 address, on each port. It took the first such index of
// any port, down or not, called a link-local IPv6 GID fit, and advised
// pinning an index that NCCL picks by itself and that differs between ports.
func TestGIDIndex(t *testing.T) {
	const (
		linkLocal = "fe80:0000:0000:0000:ba3f:d2ff:fe1c:2a10"
		ipv4      = "0000:0000:0000:0000:0000:ffff:0a00:0001"
		ipv6      = "fd00:0000:0000:0000:0000:0000:0000:0001"
		ipv4b     = "0000:0000:0000:0000:0000:ffff:0a01:0001"
		v1, v2    = "IB/RoCE v1", "RoCE v2"
	)
	plain := map[int][2]string{0: {linkLocal, v1}, 1: {linkLocal, v2}, 2: {ipv4, v1}, 3: {ipv4, v2}}
	withIPv6 := map[int][2]string{0: {linkLocal, v1}, 1: {linkLocal, v2}, 2: {ipv6, v1}, 3: {ipv6, v2}, 4: {ipv4, v1}, 5: {ipv4, v2}}
	linkLocalOnly := map[int][2]string{0: {linkLocal, v1}, 1: {linkLocal, v2}}
	ipv6Only := map[int][2]string{0: {linkLocal, v1}, 1: {linkLocal, v2}, 2: {ipv6, v1}, 3: {ipv6, v2}}
	twoAddresses := map[int][2]string{0: {linkLocal, v1}, 1: {linkLocal, v2}, 2: {ipv4, v1}, 3: {ipv4, v2}, 4: {ipv4b, v1}, 5: {ipv4b, v2}}
	up := func(cas ...string) *facts {
		f := &facts{roce: true}
		for _, ca := range cas {
			f.activePorts = append(f.activePorts, Port{CA: ca, Num: 1, State: "Active", LinkLayer: "Ethernet"})
		}
		return f
	}
	for _, tc := range []struct {
		name   string
		tables map[string]map[int][2]string
		facts  *facts
		pinned string // NCCL_IB_GID_INDEX
		status Status
		detail string // a part of it
	}{
		{"one port", map[string]map[int][2]string{"mlx5_0": plain}, up("mlx5_0"), "", OK, "mlx5_0/1 at index 3"},
		{"a port down first", map[string]map[int][2]string{"mlx5_0": plain, "mlx5_1": withIPv6}, up("mlx5_1"), "", OK, "mlx5_1/1 at index 5"},
		{"ports differ", map[string]map[int][2]string{"mlx5_0": plain, "mlx5_1": withIPv6}, up("mlx5_0", "mlx5_1"), "", OK, "mlx5_0/1 at index 3, mlx5_1/1 at index 5"},
		{"link-local only", map[string]map[int][2]string{"mlx5_0": linkLocalOnly}, up("mlx5_0"), "", Fail, "mlx5_0/1 has no RoCE v2 with IPv4 GID"},
		{"no table", nil, up("mlx5_0"), "", Warn, "cannot read the GID table of mlx5_0/1"},
		{"pinned right", map[string]map[int][2]string{"mlx5_0": plain}, up("mlx5_0"), "3", OK, "mlx5_0/1 at index 3"},
		// NCCL takes a pinned index as is, whatever NCCL_IB_ADDR_FAMILY says: an IPv6 fabric's.
		{"pinned to an IPv6 address", map[string]map[int][2]string{"mlx5_0": ipv6Only}, up("mlx5_0"), "3", OK, "mlx5_0/1 at index 3"},
		{"pinned to link-local", map[string]map[int][2]string{"mlx5_0": ipv6Only}, up("mlx5_0"), "1", Fail, "NCCL_IB_GID_INDEX=1 names mlx5_0/1's RoCE v2 GID fe80:"},
		// Another address's RoCE v2 GID, which NCCL uses as well as the first.
		{"pinned to a second address", map[string]map[int][2]string{"mlx5_0": twoAddresses}, up("mlx5_0"), "5", OK, "mlx5_0/1 at index 5"},
		{"pinned wrong", map[string]map[int][2]string{"mlx5_0": plain, "mlx5_1": withIPv6}, up("mlx5_0", "mlx5_1"), "3", Fail, "NCCL_IB_GID_INDEX=3 names mlx5_1/1's RoCE v2 GID fd00:0000:0000:0000:0000:0000:0000:0001, not its RoCE v2 with IPv4 one (index 5)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("NCCL_IB_GID_INDEX", tc.pinned)
			root := t.TempDir()
			for ca, entries := range tc.tables {
				gidTable(t, root, ca, entries)
			}
			r := checkGID(context.Background(), Options{Root: root}, tc.facts)
			if r.Status != tc.status || !strings.Contains(r.Detail, tc.detail) {
				t.Errorf("%s %q (fix %q); want %s %q", r.Status, r.Detail, r.Fix, tc.status, tc.detail)
			}
			if strings.Contains(r.Fix, "NCCL_IB_GID_INDEX=") && tc.name == "ports differ" {
				t.Errorf("advises one index for ports that differ: %q", r.Fix)
			}
		})
	}
}

// TestPeermemDMABUF: without nvidia_peermem, GPUDirect RDMA still works
// through DMA-BUF, which NCCL uses by itself where the open GPU kernel
// modules run on Linux 5.12 or later; the check said it was off there.
func TestPeermemDMABUF(t *testing.T) {
	const (
		open        = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.124.06  Release Build  (dvs-builder@U16-I2-C03-12-4)  Wed Feb 26 01:05:55 UTC 2025\nGCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n"
		proprietary = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\nGCC version:  gcc version 11.4.0 (Ubuntu 11.4.0-1ubuntu1~22.04)\n"
	)
	for _, tc := range []struct {
		name, driver, kernel string
		status               Status
	}{
		{"open module, new kernel", open, "6.8.0-45-generic", OK},
		{"open module, 5.12", open, "5.12.0", OK},
		{"open module, old kernel", open, "5.4.0-150-generic", Warn},
		{"proprietary module", proprietary, "6.8.0-45-generic", Warn},
		{"no driver version", "", "6.8.0-45-generic", Warn},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for path, content := range map[string]string{
				"proc/modules":               "mlx5_ib 495616 0 - Live 0x0000000000000000\nnvidia 9760768 2 - Live 0x0000000000000000 (POE)\n",
				"proc/sys/kernel/osrelease":  tc.kernel + "\n",
				"proc/driver/nvidia/version": tc.driver,
			} {
				if path == "proc/driver/nvidia/version" && tc.driver == "" {
					continue
				}
				if os.MkdirAll(filepath.Dir(filepath.Join(root, path)), 0o755) != nil || os.WriteFile(filepath.Join(root, path), []byte(content), 0o644) != nil {
					t.Fatal("cannot write", path)
				}
			}
			f := &facts{activePorts: []Port{{CA: "mlx5_0", Num: 1, State: "Active", LinkLayer: "InfiniBand"}}}
			r := checkPeermem(context.Background(), Options{Root: root}, f)
			if r.Status != tc.status {
				t.Errorf("%s %q; want %s", r.Status, r.Detail, tc.status)
			}
			if got := HardwareOf([]Result{r}).Peermem; got != (tc.status == OK) {
				t.Errorf("HardwareOf says GPUDirect RDMA %v", got)
			}
		})
	}
}

// TestGPUsMixed: a node of GPUs of different models was reported as so
// many of the first one's model.
func TestGPUsMixed(t *testing.T) {
	for _, tc := range []struct {
		name, csv string
		status    Status
		detail    string
	}{
		{"alike", "index, name, pci.bus_id, memory.total [MiB], driver_version\n0, NVIDIA H100 80GB HBM3, 00000000:18:00.0, 81559 MiB, 550.54.15\n1, NVIDIA H100 80GB HBM3, 00000000:2A:00.0, 81559 MiB, 550.54.15\n2, NVIDIA H100 80GB HBM3, 00000000:3A:00.0, 81559 MiB, 550.54.15\n",
			OK, "3 x NVIDIA H100 80GB HBM3, driver 550.54.15"},
		{"mixed", "index, name, pci.bus_id, memory.total [MiB], driver_version\n0, NVIDIA H100 80GB HBM3, 00000000:18:00.0, 81559 MiB, 550.54.15\n1, NVIDIA A100-SXM4-40GB, 00000000:2A:00.0, 40960 MiB, 550.54.15\n2, NVIDIA H100 80GB HBM3, 00000000:3A:00.0, 81559 MiB, 550.54.15\n",
			Warn, "2 x NVIDIA H100 80GB HBM3, 1 x NVIDIA A100-SXM4-40GB, driver 550.54.15"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := checkGPUs(context.Background(), Options{Exec: fakeExec(map[string]string{"nvidia-smi": tc.csv})}, &facts{})
			if r.Status != tc.status || r.Detail != tc.detail {
				t.Errorf("%s %q; want %s %q", r.Status, r.Detail, tc.status, tc.detail)
			}
		})
	}
}

// TestMemlock: RDMA registers memory that must stay locked; a small
// `ulimit -l` (containers get 8 MiB or 64 KiB unless told) makes NCCL's
// IB transport fail or fall back. The check was missing.
func TestMemlock(t *testing.T) {
	active := &facts{activePorts: []Port{{CA: "mlx5_0", Num: 1, State: "Active", LinkLayer: "InfiniBand"}}}
	for _, tc := range []struct {
		name, limits string
		facts        *facts
		status       Status
		detail       string
	}{
		{"unlimited", "testdata/limits/unlimited.txt", active, OK, "unlimited"},
		{"docker's default", "testdata/limits/docker-default.txt", active, Warn, "8 MiB (soft), 8 MiB (hard)"},
		{"no RDMA", "testdata/limits/docker-default.txt", &facts{}, Skip, "no active RDMA port"},
		{"unreadable", "", active, Skip, "cannot read /proc/self/limits"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			if tc.limits != "" {
				if os.MkdirAll(filepath.Join(root, "proc/self"), 0o755) != nil || os.WriteFile(filepath.Join(root, "proc/self/limits"), []byte(read(t, tc.limits)), 0o644) != nil {
					t.Fatal("cannot write the limits")
				}
			}
			r := checkMemlock(context.Background(), Options{Root: root}, tc.facts)
			if r.Status != tc.status || !strings.Contains(r.Detail, tc.detail) {
				t.Errorf("%s %q; want %s %q", r.Status, r.Detail, tc.status, tc.detail)
			}
		})
	}
}

// TestDriversOfTheNICs: the mlx5 check warned "mlx5_ib not loaded" of
// nodes whose active ports are another vendor's (irdma, bnxt_re, efa), and
// of kernels with mlx5 built in (no line in /proc/modules, a directory in
// /sys/module).
//
// rdma-core's udev rule (60-rdma-persistent-naming.rules, NAME_FALLBACK)
// names an HCA by its PCI address, rocep65s0f0 or ibp12s0, rather than
// mlx5_N: such a ConnectX was skipped as another vendor's NIC. Its driver
// is in sysfs (device/driver), whatever its name.
func TestDriversOfTheNICs(t *testing.T) {
	for _, tc := range []struct {
		name, ca string
		driver   string // the PCI driver sysfs names ("": no sysfs)
		modules  string
		builtin  []string
		status   Status
	}{
		{"mlx5 modules", "mlx5_0", "", "mlx5_ib 495616 0 - Live 0x0\nmlx5_core 2412544 1 mlx5_ib, Live 0x0\n", nil, OK},
		{"mlx5 missing", "mlx5_0", "", "mlx5_core 2412544 0 - Live 0x0\n", nil, Warn},
		{"mlx5 built in", "mlx5_0", "", "nvidia 9760768 2 - Live 0x0\n", []string{"mlx5_core", "mlx5_ib"}, OK},
		{"Intel irdma", "irdma0", "", "irdma 323584 0 - Live 0x0\n", nil, Skip},
		{"Broadcom", "bnxt_re0", "", "bnxt_re 229376 0 - Live 0x0\n", nil, Skip},
		{"mlx5 named by PCI address", "rocep65s0f0", "mlx5_core", "mlx5_core 2412544 0 - Live 0x0\n", nil, Warn},
		{"mlx5 named by PCI address, loaded", "ibp12s0", "mlx5_core", "mlx5_ib 495616 0 - Live 0x0\nmlx5_core 2412544 1 mlx5_ib, Live 0x0\n", nil, OK},
		{"mlx5 sub-function", "rocep193s0f0S88", "mlx5_core.sf", "mlx5_core 2412544 0 - Live 0x0\n", nil, Warn},
		{"Broadcom named by PCI address", "rocep1s0f0", "bnxt_en", "bnxt_re 229376 0 - Live 0x0\n", nil, Skip},
		{"Broadcom named mlx5 by hand", "mlx5_9", "bnxt_en", "bnxt_re 229376 0 - Live 0x0\n", nil, Skip},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			if os.MkdirAll(filepath.Join(root, "proc"), 0o755) != nil || os.WriteFile(filepath.Join(root, "proc/modules"), []byte(tc.modules), 0o644) != nil {
				t.Fatal("cannot write /proc/modules")
			}
			if tc.driver != "" {
				dev := filepath.Join(root, "sys/class/infiniband", tc.ca, "device")
				if os.MkdirAll(dev, 0o755) != nil || os.Symlink("../../../../bus/pci/drivers/"+tc.driver, filepath.Join(dev, "driver")) != nil {
					t.Fatal("cannot write sysfs")
				}
			}
			for _, m := range tc.builtin {
				if os.MkdirAll(filepath.Join(root, "sys/module", m, "parameters"), 0o755) != nil {
					t.Fatal("cannot write /sys/module")
				}
			}
			f := &facts{activePorts: []Port{{CA: tc.ca, Num: 1, State: "Active", LinkLayer: "Ethernet"}}}
			if r := checkDrivers(context.Background(), Options{Root: root}, f); r.Status != tc.status {
				t.Errorf("%s %q; want %s", r.Status, r.Detail, tc.status)
			}
		})
	}
}

// TestFrameworkNoRendezvous: the torch.distributed check, a world of one,
// rendezvoused through MASTER_ADDR (env://) where it was set, as it is in a
// job's environment: on every node but that one, it reached for another
// node's port, and failed or hung there. It runs here against a stub torch
// whose env:// rendezvous connects to MASTER_ADDR:MASTER_PORT, as torch's does.
func TestFrameworkNoRendezvous(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	dir := t.TempDir()
	for path, src := range map[string]string{
		"torch/__init__.py": "__version__ = '2.9.0+stub'\n" +
			"class cuda:\n    @staticmethod\n    def is_available(): return False\n" +
			"def ones(n, device=None): return [1.0] * n\n",
		"torch/distributed.py": "import os, socket\n" +
			"class HashStore: pass\n" +
			"def init_process_group(backend, init_method=None, store=None, rank=-1, world_size=-1):\n" +
			"    if store is None:\n" +
			"        socket.create_connection((os.environ['MASTER_ADDR'], int(os.environ['MASTER_PORT'])), timeout=5).close()\n" +
			"def all_reduce(t): pass\n" +
			"def destroy_process_group(): pass\n",
	} {
		if os.MkdirAll(filepath.Join(dir, filepath.Dir(path)), 0o755) != nil || os.WriteFile(filepath.Join(dir, path), []byte(src), 0o644) != nil {
			t.Fatal("cannot write the stub torch")
		}
	}
	t.Setenv("PYTHONPATH", dir)
	t.Setenv("MASTER_ADDR", "127.0.0.1")
	t.Setenv("MASTER_PORT", "1") // another node's, where nothing listens yet
	exec := func(ctx context.Context, name string, args ...string) ([]byte, error) {
		return run(ctx, 20*time.Second, name, args...)
	}
	r := checkFramework(context.Background(), Options{Python: python, Exec: exec}, nil)
	if r.Status != OK || r.Detail != "torch 2.9.0+stub backend gloo sum 1.0" {
		t.Errorf("%s %q", r.Status, r.Detail)
	}
}

// TestPortsFromSysfs: without ibstat (infiniband-diags, seldom in a
// container) or with it failing (no ib_umad), the ports went unchecked, and
// with them every RDMA check after; the kernel lists them in sysfs, where
// NCCL reads them too.
func TestPortsFromSysfs(t *testing.T) {
	root := infinibandSysfs(t, map[string]string{
		"mlx5_0/ports/1/state":      "4: ACTIVE\n",
		"mlx5_0/ports/1/rate":       "400 Gb/sec (4X NDR)\n",
		"mlx5_0/ports/1/link_layer": "Ethernet\n",
		"mlx5_1/ports/1/state":      "1: DOWN\n",
		"mlx5_1/ports/1/rate":       "40 Gb/sec (4X QDR)\n",
		"mlx5_1/ports/1/link_layer": "Ethernet\n",
	})
	const panic = "ibpanic: [4242] main: can't init UMAD library: (No such file or directory)\n"
	for name, exec := range map[string]func(context.Context, string, ...string) ([]byte, error){
		"no ibstat":    fakeExec(nil),
		"ibstat fails": failingExec(map[string]string{"ibstat": panic}),
	} {
		t.Run(name, func(t *testing.T) {
			f := &facts{}
			r := checkPorts(context.Background(), Options{Root: root, Exec: exec}, f)
			if r.Status != OK || !strings.HasPrefix(r.Detail, "active: mlx5_0/1 Ethernet 400Gb/s; down: mlx5_1/1 Ethernet Down") || !f.roce {
				t.Errorf("%s %q", r.Status, r.Detail)
			}
		})
	}
}

// TestSummaryBounded: a failed tool's detail is its output's last line,
// which was kept whole: a megabyte of it went into the node's one-line
// report, which the fan-out reads back through the launcher's bounded output.
func TestSummaryBounded(t *testing.T) {
	long := "Unable to determine the device handle for GPU0000:18:00.0: " + strings.Repeat("é", 1<<19) + "\n"
	r := checkGPUs(context.Background(), Options{Exec: failingExec(map[string]string{"nvidia-smi": long})}, &facts{})
	if r.Status != Fail || len(r.Detail) > maxSummary+len("…") || !strings.HasPrefix(r.Detail, "Unable to determine the device handle") || !utf8.ValidString(r.Detail) {
		t.Errorf("%s, a detail of %d bytes: %.80q", r.Status, len(r.Detail), r.Detail)
	}
}

// TestGPUsMIG: a GPU in MIG mode was reported as any other; a MIG instance
// has no peer-to-peer path (NVLink or PCIe) to another GPU, so NCCL goes
// through host memory, and a process sees one instance.
func TestGPUsMIG(t *testing.T) {
	var asked []string
	exec := func(_ context.Context, name string, args ...string) ([]byte, error) {
		asked = args
		return []byte(read(t, "testdata/h100-mig-nvidia-smi-query.csv")), nil
	}
	r := checkGPUs(context.Background(), Options{Exec: exec}, &facts{})
	if !slices.ContainsFunc(asked, func(a string) bool { return strings.Contains(a, "mig.mode.current") }) {
		t.Errorf("nvidia-smi was not asked for MIG mode: %q", asked)
	}
	if r.Status != Warn || !strings.Contains(r.Detail, "MIG mode on GPU 1") {
		t.Errorf("%s %q", r.Status, r.Detail)
	}
}

// TestGIDIndexPinnedInSpace: an NCCL_IB_GID_INDEX the space pins (the
// variables every trial runs with, Options.Env) was not checked, only one
// in doctor's own environment.
func TestGIDIndexPinnedInSpace(t *testing.T) {
	t.Setenv("NCCL_IB_GID_INDEX", "")
	f := &facts{roce: true, activePorts: []Port{{CA: "mlx5_0", Num: 1, State: "Active", LinkLayer: "Ethernet"}}}
	r := checkGID(context.Background(), Options{Root: "testdata/roce", Env: []string{"NCCL_IB_GID_INDEX=1"}}, f)
	if r.Status != Fail || !strings.Contains(r.Detail, "NCCL_IB_GID_INDEX=1 names mlx5_0/1's RoCE v2 GID fe80:") {
		t.Errorf("%s %q", r.Status, r.Detail)
	}
}

// TestToolLeavesAChild: a tool that ends well but leaves a child holding its
// output open (a wrapper script's daemon) failed, and the child ran on.
func TestToolLeavesAChild(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "pid")
	out, err := run(context.Background(), 20*time.Second, "/bin/sh", "-c", "echo 0, NVIDIA H200; /bin/sleep 60 & echo $! > "+pidfile)
	if err != nil || string(out) != "0, NVIDIA H200\n" {
		t.Errorf("%q, %v", out, err)
	}
	data, _ := os.ReadFile(pidfile)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	time.Sleep(100 * time.Millisecond)
	// Killed, it may stay a zombie where nothing reaps orphans (a container's init).
	if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && !strings.Contains(string(stat), ") Z ") {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("the tool's child %d runs on: %s", pid, stat)
	}
}

// TestIbstatLongLine: ibstat's output was read with a bufio.Scanner, which
// stops at a line over 64 KiB and dropped every port after it.
func TestIbstatLongLine(t *testing.T) {
	out := "ibwarn: " + strings.Repeat("x", 100<<10) + "\n" + read(t, "testdata/ibstat-roce.txt")
	if ports := ParseIbstat(out); len(ports) != 2 || !ports[0].Active() {
		t.Errorf("ports after a long line: %+v", ports)
	}
}

// TestGIDIndexFamily: NCCL picks the GID of the address family and RoCE
// version NCCL_IB_ADDR_FAMILY and NCCL_IB_ROCE_VERSION_NUM name; the check
// judged IPv4 RoCE v2 alone, and failed an IPv6 fabric set up as NCCL says.
func TestGIDIndexFamily(t *testing.T) {
	t.Setenv("NCCL_IB_GID_INDEX", "")
	root := t.TempDir()
	gidTable(t, root, "mlx5_0", map[int][2]string{
		0: {"fe80:0000:0000:0000:ba3f:d2ff:fe1c:2a10", "IB/RoCE v1"}, 1: {"fe80:0000:0000:0000:ba3f:d2ff:fe1c:2a10", "RoCE v2"},
		2: {"fd00:0000:0000:0000:0000:0000:0000:0001", "IB/RoCE v1"}, 3: {"fd00:0000:0000:0000:0000:0000:0000:0001", "RoCE v2"},
	})
	f := &facts{roce: true, activePorts: []Port{{CA: "mlx5_0", Num: 1, State: "Active", LinkLayer: "Ethernet"}}}
	for _, tc := range []struct {
		env    []string
		status Status
		detail string
	}{
		{nil, Fail, "mlx5_0/1 has no RoCE v2 with IPv4 GID"},
		{[]string{"NCCL_IB_ADDR_FAMILY=AF_INET6"}, OK, "RoCE v2 with IPv6: mlx5_0/1 at index 3"},
		{[]string{"NCCL_IB_ADDR_FAMILY=AF_INET6", "NCCL_IB_ROCE_VERSION_NUM=1"}, OK, "RoCE v1 with IPv6: mlx5_0/1 at index 2"},
	} {
		r := checkGID(context.Background(), Options{Root: root, Env: tc.env}, f)
		if r.Status != tc.status || !strings.Contains(r.Detail, tc.detail) {
			t.Errorf("%v: %s %q; want %s %q", tc.env, r.Status, r.Detail, tc.status, tc.detail)
		}
	}
}

// TestGIDIndexAsNCCLReadsIt: NCCL reads NCCL_IB_GID_INDEX and
// NCCL_IB_ROCE_VERSION_NUM as each integer setting, strtoll(value, NULL, 0):
// "0x1", "01", " 1" and "1 " are 1 to it, and "abc" is 0; the check read
// each but "1" as unset, and judged the GID NCCL picks itself.
func TestGIDIndexAsNCCLReadsIt(t *testing.T) {
	f := &facts{roce: true, activePorts: []Port{{CA: "mlx5_0", Num: 1, State: "Active", LinkLayer: "Ethernet"}}}
	for value, want := range map[string]string{"0x1": "1", "01": "1", " 1": "1", "1 ": "1", "+1": "1", "abc": "0"} {
		t.Setenv("NCCL_IB_GID_INDEX", value)
		r := checkGID(context.Background(), Options{Root: "testdata/roce"}, f)
		if !strings.Contains(r.Detail, "NCCL_IB_GID_INDEX="+want+" names mlx5_0/1's") {
			t.Errorf("NCCL_IB_GID_INDEX=%q: %s %q; want it read as %s", value, r.Status, r.Detail, want)
		}
	}
	t.Setenv("NCCL_IB_GID_INDEX", "")
	root := t.TempDir()
	gidTable(t, root, "mlx5_0", map[int][2]string{0: {"0000:0000:0000:0000:0000:ffff:0a00:0001", "IB/RoCE v1"}})
	r := checkGID(context.Background(), Options{Root: root, Env: []string{"NCCL_IB_ROCE_VERSION_NUM=0x1"}}, f)
	if r.Status != OK || !strings.Contains(r.Detail, "RoCE v1 with IPv4: mlx5_0/1 at index 0") {
		t.Errorf("NCCL_IB_ROCE_VERSION_NUM=0x1: %s %q", r.Status, r.Detail)
	}
}

// TestGIDIndexAddrRange: with NCCL_IB_ADDR_RANGE set, NCCL (2.21 and later)
// picks the first GID of the kind whose address lies in that range; the
// check ignored it and judged the port's first address.
func TestGIDIndexAddrRange(t *testing.T) {
	t.Setenv("NCCL_IB_GID_INDEX", "")
	root := t.TempDir()
	const linkLocal = "fe80:0000:0000:0000:ba3f:d2ff:fe1c:2a10"
	gidTable(t, root, "mlx5_0", map[int][2]string{
		0: {linkLocal, "IB/RoCE v1"}, 1: {linkLocal, "RoCE v2"},
		2: {"0000:0000:0000:0000:0000:ffff:0a00:0001", "IB/RoCE v1"}, 3: {"0000:0000:0000:0000:0000:ffff:0a00:0001", "RoCE v2"},
		4: {"0000:0000:0000:0000:0000:ffff:0a01:0001", "IB/RoCE v1"}, 5: {"0000:0000:0000:0000:0000:ffff:0a01:0001", "RoCE v2"},
		6: {"fd00:0000:0000:0000:0000:0000:0000:0001", "RoCE v2"}, 7: {"fd01:0000:0000:0000:0000:0000:0000:0001", "RoCE v2"},
	})
	f := &facts{roce: true, activePorts: []Port{{CA: "mlx5_0", Num: 1, State: "Active", LinkLayer: "Ethernet"}}}
	for _, tc := range []struct {
		env    []string
		status Status
		detail string
	}{
		{[]string{"NCCL_IB_ADDR_RANGE=10.1.0.0/16"}, OK, "mlx5_0/1 at index 5"},
		{[]string{"NCCL_IB_ADDR_RANGE=10.0.0.0/8"}, OK, "mlx5_0/1 at index 3"},
		{[]string{"NCCL_IB_ADDR_RANGE=10.2.0.0/16"}, Fail, "mlx5_0/1 has no RoCE v2 with IPv4 in 10.2.0.0/16 GID"},
		// NCCL filters nothing by a range it cannot read: no mask, another family's, a mask too long.
		{[]string{"NCCL_IB_ADDR_RANGE=10.1.0.0"}, OK, "mlx5_0/1 at index 3"},
		{[]string{"NCCL_IB_ADDR_RANGE=fd01::/16"}, OK, "mlx5_0/1 at index 3"},
		{[]string{"NCCL_IB_ADDR_RANGE=10.1.0.0/33"}, OK, "mlx5_0/1 at index 3"},
		{[]string{"NCCL_IB_ADDR_FAMILY=AF_INET6", "NCCL_IB_ADDR_RANGE=fd01::/16"}, OK, "mlx5_0/1 at index 7"},
		// NCCL reads the mask with (int)strtol(mask, NULL, 10): space and a
		// sign before the digits, a long's range clamped, then cut to 32
		// bits. A negative mask compares no bit, which NCCL calls no match:
		// no address is in the range, and NCCL falls back to GID index 0.
		{[]string{"NCCL_IB_ADDR_RANGE=10.1.0.0/ 16"}, OK, "mlx5_0/1 at index 5"},
		{[]string{"NCCL_IB_ADDR_RANGE=10.1.0.0/+16"}, OK, "mlx5_0/1 at index 5"},
		{[]string{"NCCL_IB_ADDR_RANGE=10.1.0.0/4294967312"}, OK, "mlx5_0/1 at index 5"},
		{[]string{"NCCL_IB_ADDR_RANGE=10.1.0.0/-0"}, OK, "mlx5_0/1 at index 3"},
		{[]string{"NCCL_IB_ADDR_RANGE=10.1.0.0/x16"}, OK, "mlx5_0/1 at index 3"},
		{[]string{"NCCL_IB_ADDR_RANGE=10.1.0.0/-1"}, Fail, "mlx5_0/1 has no RoCE v2 with IPv4 in 10.1.0.0/-1 GID"},
		{[]string{"NCCL_IB_ADDR_RANGE=10.1.0.0/99999999999999999999"}, Fail, "mlx5_0/1 has no RoCE v2 with IPv4 in 10.1.0.0/-1 GID"},
		{[]string{"NCCL_IB_ADDR_FAMILY=AF_INET6", "NCCL_IB_ADDR_RANGE=fd01::/-8"}, Fail, "mlx5_0/1 has no RoCE v2 with IPv6 in fd01::/-8 GID"},
	} {
		r := checkGID(context.Background(), Options{Root: root, Env: tc.env}, f)
		if r.Status != tc.status || !strings.Contains(r.Detail, tc.detail) {
			t.Errorf("%v: %s %q; want %s %q", tc.env, r.Status, r.Detail, tc.status, tc.detail)
		}
		if strings.Contains(tc.detail, "/-") && !strings.Contains(r.Fix, "negative mask") {
			t.Errorf("%v: fix %q does not name the negative mask", tc.env, r.Fix)
		}
	}
}

// TestPortsIbstatStopsPartWay: ibstat that failed or hung after listing
// some ports (a port's MAD query hanging, killed at the time limit) was
// read as the node's every port: a node whose active port came later
// failed "no port is Active". The kernel's list in sysfs is whole.
func TestPortsIbstatStopsPartWay(t *testing.T) {
	root := infinibandSysfs(t, downThenActive)
	partial := "CA 'mlx5_0'\n\tPort 1:\n\t\tState: Down\n\t\tRate: 40\n\t\tLink layer: Ethernet\n"
	hung := func(context.Context, string, ...string) ([]byte, error) {
		return []byte(partial), fmt.Errorf("ibstat: %w in 30s", errNoAnswer)
	}
	f := &facts{}
	r := checkPorts(context.Background(), Options{Root: root, Exec: hung}, f)
	if r.Status != OK || !strings.HasPrefix(r.Detail, "active: mlx5_1/1 Ethernet 400Gb/s; down: mlx5_0/1 Ethernet Down") || len(f.activePorts) != 1 {
		t.Errorf("%s %q", r.Status, r.Detail)
	}
}

// TestOMPIInfoFails: ompi_info that hung or failed before saying was
// skipped as "ompi_info does not say", as if it had answered.
func TestOMPIInfoFails(t *testing.T) {
	hung := func(context.Context, string, ...string) ([]byte, error) {
		return []byte("                 Package: Open MPI\n"), fmt.Errorf("ompi_info: %w in 30s", errNoAnswer)
	}
	if r := checkOMPI(context.Background(), Options{Exec: hung}, &facts{}); r.Status != Skip || !strings.Contains(r.Detail, "no answer in 30s") {
		t.Errorf("%s %q", r.Status, r.Detail)
	}
}

// TestNCCLOneNodeUsesNoNIC: a probe on one node connects no GPU to a NIC,
// so NCCL logs no GPUDirect RDMA use (2.30 logs its per-GPU choice at
// TRACE only); doctor warned that NCCL used the NICs without it.
func TestNCCLOneNodeUsesNoNIC(t *testing.T) {
	hw := Hardware{RDMA: true, Peermem: true}
	for _, tc := range []struct {
		nodes  int // 0: not logged (NCCL before 2.20)
		status Status
	}{{1, OK}, {2, Warn}, {0, Warn}} {
		r := judgeNCCL(Result{}, nccllog.Log{Debug: true, Network: "IB", Nodes: tc.nodes}, nil, 16, hw)
		if r.Status != tc.status {
			t.Errorf("%d nodes: %s %q (fix %q), want %s", tc.nodes, r.Status, r.Detail, r.Fix, tc.status)
		}
	}
}

// TestNCCLCountsOneRank: a probe on one GPU was told as "1 ranks".
func TestNCCLCountsOneRank(t *testing.T) {
	r := judgeNCCL(Result{}, nccllog.Log{Debug: true, Version: "2.28.3", Nodes: 1}, nil, 1, Hardware{})
	if !strings.Contains(r.Detail, "NCCL 2.28.3, 1 rank, ") {
		t.Errorf("detail %q, want NCCL 2.28.3, 1 rank, ...", r.Detail)
	}
}

// TestPortsIbstatSkipsACA: ibstat warns of a CA it cannot stat and goes on,
// with exit status 0 ("ibwarn: stat of IB device 'mlx5_1' failed"); its
// list, which lacked that CA's ports, was read as the node's every port: a
// node whose active port was there failed "no port is Active", or, where
// ibstat listed none, was said to have no HCA. The kernel's list in sysfs is
// whole.
func TestPortsIbstatSkipsACA(t *testing.T) {
	root := infinibandSysfs(t, downThenActive)
	const warn = "ibwarn: [4242] main: stat of IB device 'mlx5_1' failed\n"
	for name, out := range map[string]string{
		"after a CA": "CA 'mlx5_0'\n\tPort 1:\n\t\tState: Down\n\t\tRate: 40\n\t\tLink layer: Ethernet\n" + warn,
		"every CA":   "ibwarn: [4242] main: stat of IB device 'mlx5_0' failed\n" + warn,
	} {
		t.Run(name, func(t *testing.T) {
			f := &facts{}
			r := checkPorts(context.Background(), Options{Root: root, Exec: fakeExec(map[string]string{"ibstat": out})}, f)
			if r.Status != OK || !strings.HasPrefix(r.Detail, "active: mlx5_1/1 Ethernet 400Gb/s; down: mlx5_0/1 Ethernet Down (read from /sys/class/infiniband: ibstat") || len(f.activePorts) != 1 {
				t.Errorf("%s %q", r.Status, r.Detail)
			}
		})
	}
}

// TestNCCLLoggedNothing: a probe whose output held no NCCL INFO line under
// NCCL_DEBUG=INFO (NCCL_DEBUG_FILE in /etc/nccl.conf or ~/.nccl.conf, which
// NCCL reads where the environment does not set it, sends the log to a file)
// passed as "network none (one node, or not logged)", its fabric unjudged,
// though every trial reads NCCL's log for what NCCL chose and read.
func TestNCCLLoggedNothing(t *testing.T) {
	for _, hw := range []Hardware{{RDMA: true, Peermem: true}, {}} {
		r := judgeNCCL(Result{}, nccllog.Log{}, nil, 16, hw)
		if r.Status != Warn || !strings.Contains(r.Fix, "NCCL_DEBUG_FILE") {
			t.Errorf("%+v: %s %q, fix %q; want a warning that NCCL logged nothing", hw, r.Status, r.Detail, r.Fix)
		}
	}
	if r := judgeNCCL(Result{}, nccllog.Log{Debug: true, Version: "2.28.3", Nodes: 1}, nil, 8, Hardware{}); r.Status != OK {
		t.Errorf("a log on one node: %s %q, fix %q", r.Status, r.Detail, r.Fix)
	}
}

// TestPeermemWithoutProcModules: where /proc/modules cannot be read (a
// sandboxed container's), GPUDirect RDMA was skipped unchecked, though
// /sys/module lists a loaded nvidia_peermem (as the mlx5 check reads it) and
// the driver's version and the kernel's release tell DMA-BUF.
func TestPeermemWithoutProcModules(t *testing.T) {
	const open = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.124.06  Release Build\n"
	for _, tc := range []struct {
		name   string
		files  map[string]string
		status Status
	}{
		{"nvidia_peermem in /sys/module", map[string]string{"sys/module/nvidia_peermem/refcnt": "0\n"}, OK},
		{"DMA-BUF", map[string]string{"proc/driver/nvidia/version": open, "proc/sys/kernel/osrelease": "6.8.0-45-generic\n"}, OK},
		{"nothing to tell", map[string]string{"sys/module/nvidia/refcnt": "2\n"}, Skip},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for path, content := range tc.files {
				if os.MkdirAll(filepath.Dir(filepath.Join(root, path)), 0o755) != nil || os.WriteFile(filepath.Join(root, path), []byte(content), 0o644) != nil {
					t.Fatal("cannot write", path)
				}
			}
			f := &facts{activePorts: []Port{{CA: "mlx5_0", Num: 1, State: "Active", LinkLayer: "InfiniBand"}}}
			if r := checkPeermem(context.Background(), Options{Root: root}, f); r.Status != tc.status {
				t.Errorf("%s %q; want %s", r.Status, r.Detail, tc.status)
			}
		})
	}
}

// TestPortsOfIBDevicesOnly: sysfs lists iWARP devices (node_type 4: RNIC,
// irdma's default on an E810) beside InfiniBand and RoCE ones; ibstat, and
// so this check, knows the latter alone (node_type 1 to 3). Read from
// sysfs, an iWARP port counted as a fabric port, and one ibstat rightly
// left out read as a port it had missed.
func TestPortsOfIBDevicesOnly(t *testing.T) {
	root := infinibandSysfs(t, map[string]string{
		"mlx5_0/node_type": "1: CA\n", "mlx5_0/ports/1/state": "4: ACTIVE\n", "mlx5_0/ports/1/rate": "400 Gb/sec (4X NDR)\n", "mlx5_0/ports/1/link_layer": "InfiniBand\n",
		"irdma0/node_type": "4: RNIC\n", "irdma0/ports/1/state": "4: ACTIVE\n", "irdma0/ports/1/rate": "100 Gb/sec (4X EDR)\n", "irdma0/ports/1/link_layer": "Ethernet\n",
	})
	if ports := ReadPorts(root); len(ports) != 1 || ports[0].CA != "mlx5_0" {
		t.Errorf("ports in sysfs: %+v, want mlx5_0's alone", ports)
	}
	ibstat := "CA 'mlx5_0'\n\tCA type: MT4129\n\tPort 1:\n\t\tState: Active\n\t\tRate: 400\n\t\tLink layer: InfiniBand\n"
	f := &facts{}
	r := checkPorts(context.Background(), Options{Root: root, Exec: fakeExec(map[string]string{"ibstat": ibstat})}, f)
	if r.Status != OK || r.Detail != "active: mlx5_0/1 InfiniBand 400Gb/s" || f.roce {
		t.Errorf("%s %q, RoCE %v", r.Status, r.Detail, f.roce)
	}
}

// TestGPUsNone: nvidia-smi on a node (or in a container) that has no GPU
// says "No devices were found" and exits 6; that failed as a driver that
// does not work, and a list of none pointed at CUDA_VISIBLE_DEVICES, which
// nvidia-smi does not read.
func TestGPUsNone(t *testing.T) {
	for name, exec := range map[string]func(context.Context, string, ...string) ([]byte, error){
		"exit 6":       failingExec(map[string]string{"nvidia-smi": "No devices were found\n"}),
		"header alone": fakeExec(map[string]string{"nvidia-smi": "index, name, pci.bus_id, memory.total [MiB], driver_version, mig.mode.current\n"}),
	} {
		r := checkGPUs(context.Background(), Options{Exec: exec}, &facts{})
		if r.Status != Fail || r.Detail != "nvidia-smi lists no GPU" || strings.Contains(r.Fix, "CUDA_VISIBLE_DEVICES") || !strings.Contains(r.Fix, "NVIDIA_VISIBLE_DEVICES") {
			t.Errorf("%s: %s %q, fix %q", name, r.Status, r.Detail, r.Fix)
		}
	}
}

// downThenActive is a node's two RoCE ports in sysfs, the first down.
var downThenActive = map[string]string{
	"mlx5_0/ports/1/state": "1: DOWN\n", "mlx5_0/ports/1/rate": "40 Gb/sec (4X QDR)\n", "mlx5_0/ports/1/link_layer": "Ethernet\n",
	"mlx5_1/ports/1/state": "4: ACTIVE\n", "mlx5_1/ports/1/rate": "400 Gb/sec (4X NDR)\n", "mlx5_1/ports/1/link_layer": "Ethernet\n",
}

// infinibandSysfs writes files, by path under /sys/class/infiniband, into a
// root of its own, which it returns.
func infinibandSysfs(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for path, content := range files {
		path = filepath.Join(root, "sys/class/infiniband", path)
		if os.MkdirAll(filepath.Dir(path), 0o755) != nil || os.WriteFile(path, []byte(content), 0o644) != nil {
			t.Fatal("cannot write", path)
		}
	}
	return root
}

// TestModulesUnloading: /proc/modules lists a module being removed (rmmod
// waiting on its users, an exit that hangs) as "Unloading", and one being
// inserted as "Loading", and sysfs keeps its /sys/module directory until it
// is gone (initstate "going"): such a module counted as loaded, and
// GPUDirect RDMA passed on an nvidia_peermem on its way out.
func TestModulesUnloading(t *testing.T) {
	active := []Port{{CA: "mlx5_0", Num: 1, State: "Active", LinkLayer: "InfiniBand"}}
	for _, tc := range []struct {
		name  string
		files map[string]string
	}{
		{"unloading", map[string]string{
			"proc/modules":                        "nvidia_peermem 16384 1 - Unloading 0x0000000000000000 (OE)\nmlx5_ib 495616 0 - Unloading 0x0\nmlx5_core 2412544 1 mlx5_ib, Live 0x0\n",
			"sys/module/nvidia_peermem/initstate": "going\n", "sys/module/mlx5_ib/initstate": "going\n", "sys/module/mlx5_core/initstate": "live\n",
		}},
		{"loading", map[string]string{
			"proc/modules":                        "nvidia_peermem 16384 0 - Loading 0x0\nmlx5_ib 495616 0 - Loading 0x0\nmlx5_core 2412544 1 mlx5_ib, Live 0x0\n",
			"sys/module/nvidia_peermem/initstate": "coming\n", "sys/module/mlx5_ib/initstate": "coming\n",
		}},
		// A sandboxed container's: /proc/modules hidden, sysfs says it.
		{"going, /proc/modules hidden", map[string]string{
			"sys/module/nvidia_peermem/initstate": "going\n", "sys/module/mlx5_ib/initstate": "going\n", "sys/module/mlx5_core/initstate": "live\n",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for path, content := range tc.files {
				if os.MkdirAll(filepath.Dir(filepath.Join(root, path)), 0o755) != nil || os.WriteFile(filepath.Join(root, path), []byte(content), 0o644) != nil {
					t.Fatal("cannot write", path)
				}
			}
			f := &facts{activePorts: active}
			if r := checkPeermem(context.Background(), Options{Root: root}, f); r.Status == OK {
				t.Errorf("GPUDirect RDMA: %s %q; nvidia_peermem is not loaded", r.Status, r.Detail)
			}
			if r := checkDrivers(context.Background(), Options{Root: root}, f); r.Status == OK {
				t.Errorf("mlx5: %s %q; mlx5_ib is not loaded", r.Status, r.Detail)
			}
		})
	}
	if mods := Modules("nvidia_peermem 16384 1 - Unloading 0x0\nnvidia 9760768 2 nvidia_peermem, Live 0x0 (POE)\n"); mods["nvidia_peermem"] || !mods["nvidia"] {
		t.Errorf("modules = %v", mods)
	}
}

// TestToolsLongOutput: a tool's output was kept to its first megabyte, and
// what a check looks for further on was lost: ompi_info --all, which prints
// megabytes on a build of many components, lost its CUDA line (the check
// skipped, "ompi_info does not say"), python's FRAMEWORK_OK after a flood of
// warnings failed the framework check, and a failed tool's last line, where
// it says why, gave way to a line from its first megabyte.
func TestToolsLongOutput(t *testing.T) {
	dir := t.TempDir()
	const flood = "/usr/bin/yes 'mca:btl:tcp:param:btl_tcp_if_include:help:Comma-delimited list of devices and/or CIDR notation of networks' | /usr/bin/head -c 3000000; echo"
	tool(t, dir, "ompi_info", flood+"; echo mca:mpi:base:param:mpi_built_with_cuda_support:value:true; "+flood)
	tool(t, dir, "python3", flood+"; echo FRAMEWORK_OK torch 2.9.0 backend nccl 2.28.3 sum 1.0; "+flood)
	tool(t, dir, "nvidia-smi", flood+"; echo 'Failed to initialize NVML: Driver/library version mismatch'; exit 18")
	exec := func(ctx context.Context, name string, args ...string) ([]byte, error) {
		return run(ctx, 20*time.Second, filepath.Join(dir, name), args...)
	}
	o := Options{Exec: exec, Python: "python3"}
	if r := checkOMPI(context.Background(), o, &facts{}); r.Status != OK {
		t.Errorf("ompi_info: %s %q; want its CUDA line read", r.Status, r.Detail)
	}
	if r := checkFramework(context.Background(), o, &facts{}); r.Status != OK || r.Detail != "torch 2.9.0 backend nccl 2.28.3 sum 1.0" {
		t.Errorf("python: %s %q", r.Status, r.Detail)
	}
	if r := checkGPUs(context.Background(), o, &facts{}); r.Status != Fail || r.Detail != "Failed to initialize NVML: Driver/library version mismatch" {
		t.Errorf("nvidia-smi: %s %q; want its last line", r.Status, r.Detail)
	}
}

// TestDetailsBounded: a check's detail quoted what a tool printed, field by
// field, unbounded: GPU models of megabyte names, ibstat's CAs, the
// framework's line, NCCL's notes. A megabyte of it went into the node's
// report line, which the fan-out reads back through the launcher's bounded
// output, and into the report and --json.
func TestDetailsBounded(t *testing.T) {
	t.Setenv("MASTER_ADDR", "")
	huge := func(i int) string { return strings.Repeat("é", 200<<10) + strconv.Itoa(i) }
	var smi, ibstat strings.Builder
	for i := range 4 {
		fmt.Fprintf(&smi, "%d, %s, 00000000:18:00.0, 81559 MiB, %s, Enabled\n", i, huge(i), huge(9))
		fmt.Fprintf(&ibstat, "CA '%s'\n\tPort 1:\n\t\tState: Active\n\t\tRate: %s\n\t\tLink layer: %s\n", huge(i), huge(i), huge(i))
	}
	results := Run(context.Background(), Options{Root: t.TempDir(), Python: "python3", Exec: fakeExec(map[string]string{
		"nvidia-smi": smi.String(),
		"ibstat":     ibstat.String(),
		"python3":    "FRAMEWORK_OK torch " + huge(0) + "\n",
	})})
	var notes []string
	for i := range 20 {
		notes = append(notes, "NET/IB : No capable device "+huge(i))
	}
	results = append(results, judgeNCCL(Result{}, nccllog.Log{Debug: true, Version: huge(0), Network: huge(1), Notes: notes}, nil, 16, Hardware{}))
	for _, r := range results {
		if len(r.Detail) > maxDetail+len("…") || !utf8.ValidString(r.Detail) {
			t.Errorf("%s: %s, %d bytes: %.80q", r.Check, r.Status, len(r.Detail), r.Detail)
		}
	}
}

// TestGIDIndexFromConfigFiles: NCCL reads a setting the environment does
// not set from NCCL_CONF_FILE (else ~/.nccl.conf), then /etc/nccl.conf,
// where RoCE clusters often pin NCCL_IB_GID_INDEX; the check read the
// environment alone, and judged the GID NCCL would pick itself, not the one
// the file gives it.
func TestGIDIndexFromConfigFiles(t *testing.T) {
	for _, name := range []string{"NCCL_IB_GID_INDEX", "NCCL_IB_ADDR_RANGE", "NCCL_CONF_FILE"} {
		t.Setenv(name, "")
		os.Unsetenv(name)
	}
	const linkLocal = "fe80:0000:0000:0000:ba3f:d2ff:fe1c:2a10"
	f := &facts{roce: true, activePorts: []Port{{CA: "mlx5_0", Num: 1, State: "Active", LinkLayer: "Ethernet"}}}
	for _, tc := range []struct {
		name   string
		env    []string
		files  map[string]string
		status Status
		detail string
	}{
		{"/etc/nccl.conf", nil, map[string]string{"etc/nccl.conf": "# RoCE\r\nNCCL_IB_GID_INDEX=1\r\n"}, Fail, "NCCL_IB_GID_INDEX=1 (/etc/nccl.conf) names mlx5_0/1's RoCE v2 GID fe80:"},
		{"a comment", nil, map[string]string{"etc/nccl.conf": "#NCCL_IB_GID_INDEX=1\n"}, OK, "mlx5_0/1 at index 3"},
		{"NCCL_CONF_FILE first", []string{"NCCL_CONF_FILE=/opt/nccl.conf"}, map[string]string{"opt/nccl.conf": "NCCL_IB_ADDR_RANGE=10.1.0.0/16\n", "etc/nccl.conf": "NCCL_IB_ADDR_RANGE=10.0.0.0/16\nNCCL_IB_GID_INDEX=1\n"}, Fail, "NCCL_IB_GID_INDEX=1 (/etc/nccl.conf) names"},
		{"NCCL_CONF_FILE's range", []string{"NCCL_CONF_FILE=/opt/nccl.conf"}, map[string]string{"opt/nccl.conf": "NCCL_IB_ADDR_RANGE=10.1.0.0/16\nNCCL_IB_ADDR_RANGE=10.0.0.0/16\n", "etc/nccl.conf": "NCCL_IB_ADDR_RANGE=10.0.0.0/16\n"}, OK, "mlx5_0/1 at index 5"},
		{"the environment first", []string{"NCCL_IB_GID_INDEX=3"}, map[string]string{"etc/nccl.conf": "NCCL_IB_GID_INDEX=1\n"}, OK, "NCCL_IB_GID_INDEX=3, a routable RoCE v2 GID: mlx5_0/1 at index 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			gidTable(t, root, "mlx5_0", map[int][2]string{
				0: {linkLocal, "IB/RoCE v1"}, 1: {linkLocal, "RoCE v2"},
				2: {"0000:0000:0000:0000:0000:ffff:0a00:0001", "IB/RoCE v1"}, 3: {"0000:0000:0000:0000:0000:ffff:0a00:0001", "RoCE v2"},
				4: {"0000:0000:0000:0000:0000:ffff:0a01:0001", "IB/RoCE v1"}, 5: {"0000:0000:0000:0000:0000:ffff:0a01:0001", "RoCE v2"},
			})
			for path, content := range tc.files {
				if os.MkdirAll(filepath.Dir(filepath.Join(root, path)), 0o755) != nil || os.WriteFile(filepath.Join(root, path), []byte(content), 0o644) != nil {
					t.Fatal("cannot write", path)
				}
			}
			r := checkGID(context.Background(), Options{Root: root, Env: tc.env}, f)
			if r.Status != tc.status || !strings.Contains(r.Detail, tc.detail) {
				t.Errorf("%s %q; want %s %q", r.Status, r.Detail, tc.status, tc.detail)
			}
		})
	}
}

// TestPortsStateUnread: a port whose state sysfs would not give (an
// attribute that fails to read, a container's odd mount) read as a port
// in state "", down: a node whose ports are all so failed "no port is
// Active" of ports that may well be.
func TestPortsStateUnread(t *testing.T) {
	root := infinibandSysfs(t, map[string]string{
		"mlx5_0/ports/1/rate": "400 Gb/sec (4X NDR)\n", "mlx5_0/ports/1/link_layer": "InfiniBand\n",
	})
	// A directory where the attribute is: reading it fails, root or not.
	if err := os.MkdirAll(filepath.Join(root, "sys/class/infiniband/mlx5_0/ports/1/state"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := checkPorts(context.Background(), Options{Root: root, Exec: fakeExec(nil)}, &facts{})
	if r.Status != Warn || !strings.Contains(r.Detail, "cannot read the state of mlx5_0/1") {
		t.Errorf("%s %q, fix %q", r.Status, r.Detail, r.Fix)
	}
}

// TestToolUnkillable: a tool in uninterruptible sleep (nvidia-smi on a
// wedged GPU, in the driver) outlives SIGKILL until the kernel lets it go,
// and run waited for it to exit: doctor hung for as long as the GPU did. A
// frozen cgroup v1 freezer holds its tasks so, SIGKILL pending.
func TestToolUnkillable(t *testing.T) {
	cgroup := filepath.Join("/sys/fs/cgroup/freezer", fmt.Sprintf("nccltune-doctor-test-%d", os.Getpid()))
	if err := os.Mkdir(cgroup, 0o755); err != nil {
		t.Skip("no cgroup v1 freezer to hold a process past SIGKILL:", err)
	}
	t.Cleanup(func() {
		os.WriteFile(filepath.Join(cgroup, "freezer.state"), []byte("THAWED"), 0o644)
		for range 50 { // the killed tool leaves once thawed
			if os.Remove(cgroup) == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	script := "echo $$ > " + cgroup + "/tasks; echo index, name; echo FROZEN > " + cgroup + "/freezer.state; /bin/sleep 60"
	start := time.Now()
	out, err := run(context.Background(), 300*time.Millisecond, "/bin/sh", "-c", script)
	if d := time.Since(start); d > 10*time.Second || !errors.Is(err, errNoAnswer) {
		t.Errorf("run returned after %s: %q, %v", d, out, err)
	}
}

// TestConfigFileNotRegular: NCCL_CONF_FILE naming a FIFO blocked the check
// at open, waiting for a writer; /dev/zero never ends.
func TestConfigFileNotRegular(t *testing.T) {
	root := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{"/fifo", "/../../../../../../dev/zero"} {
		done := make(chan string, 1)
		go func() {
			done <- Options{Root: root, Env: []string{"NCCL_CONF_FILE=" + file}}.getenv("NCCL_IB_GID_INDEX")
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("NCCL_CONF_FILE=%s: still reading", file)
		}
	}
}

// TestFixKeptWhole: Result.Bounded cut a check's fix with its detail, though
// a fix quotes no tool's output, only what the user is to do: the probe's
// command to run by hand, as long as its launcher's flags make it, lost its end.
func TestFixKeptWhole(t *testing.T) {
	command := "mpirun " + strings.Repeat("-x NCCL_IB_GID_INDEX=3 ", 400) + "all_reduce_perf -b 8 -e 1M"
	r := Result{Detail: strings.Repeat("x", 2*maxDetail), Fix: "run it by hand with NCCL_DEBUG=INFO: " + command}.Bounded()
	if !strings.HasSuffix(r.Fix, command) || len(r.Detail) > maxDetail+len("…") {
		t.Errorf("fix of %d bytes ends %q; detail of %d bytes", len(r.Fix), r.Fix[max(0, len(r.Fix)-40):], len(r.Detail))
	}
}

// TestMissingToolByPath: a tool named by its path (--python
// /opt/conda/bin/python, an environment on the login node alone) that is
// not there failed, "fork/exec ...: no such file or directory", where one
// missing from the PATH is skipped as not found, as the README says of
// every missing tool.
func TestMissingToolByPath(t *testing.T) {
	python := filepath.Join(t.TempDir(), "bin/python")
	exec := func(ctx context.Context, name string, args ...string) ([]byte, error) {
		return run(ctx, 20*time.Second, name, args...)
	}
	r := checkFramework(context.Background(), Options{Python: python, Exec: exec}, nil)
	if r.Status != Skip || r.Detail != python+" not found" {
		t.Errorf("%s %q", r.Status, r.Detail)
	}
}
