package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/nccltune/nccltune/doctor"
	"github.com/nccltune/nccltune/internal/slurmtest"
	"github.com/nccltune/nccltune/runner"
)

// TestDoctorOfABrokenLauncher: a launcher that reaches no node (srun
// outside any Slurm cluster: "Could not establish a configuration
// source") is a failed check, told as the others are, JSON included, and
// exit 1: doctor stopped with an error and printed no report, where the
// broken launcher is the very finding.
func TestDoctorOfABrokenLauncher(t *testing.T) {
	dir := t.TempDir()
	srun := filepath.Join(dir, "srun")
	os.WriteFile(srun, []byte("#!/bin/sh\necho 'srun: fatal: Could not establish a configuration source' >&2\nexit 1\n"), 0o755)
	src, err := os.ReadFile("../../examples/sim-2node-ib.toml")
	if err != nil {
		t.Fatal(err)
	}
	spaceFile := filepath.Join(dir, "space.toml")
	os.WriteFile(spaceFile, []byte(strings.Replace(strings.Replace(string(src), "gpus = 16 ", "gpus = 1 ", 1), "[benchmark]",
		"[launcher]\nkind = \"srun\"\ncommand = \""+srun+"\"\nnodes = 2\nntasks_per_node = 8\n\n[benchmark]", 1)), 0o644)
	code, out, errOut := nccltune(t, dir, "doctor", "--space", spaceFile, "--python", "", "--json")
	var rep struct {
		Cluster []struct{ Check, Status, Detail string }
	}
	if err := json.Unmarshal([]byte(out), &rep); code != 1 || err != nil || len(rep.Cluster) == 0 ||
		rep.Cluster[0].Status != "fail" || !strings.Contains(rep.Cluster[0].Detail, "Could not establish a configuration source") {
		t.Errorf("doctor --json through a broken srun: exit %d, %v\n%s%s", code, err, out, errOut)
	}
	code, out, errOut = nccltune(t, dir, "doctor", "--space", spaceFile, "--python", "")
	if code != 1 || !strings.Contains(out, "FAIL") {
		t.Errorf("doctor through a broken srun: exit %d\n%s%s", code, out, errOut)
	}
}

// TestDoctorEscapesToolOutput: a check's detail quotes what a local tool or
// a remote node printed; a terminal escape or a newline in it reached the
// terminal as is, driving it or breaking the table.
func TestDoctorEscapesToolOutput(t *testing.T) {
	var out strings.Builder
	hostile := "\x1b]0;owned\x07line one\nline two"
	nodes := []nodeReport{{Host: "n1\x1b[2J", Results: []doctor.Result{{Status: doctor.Fail, Layer: "hardware", Check: "GPUs", Detail: hostile, Fix: hostile}}}}
	if err := printDoctor(&out, nodes, nil); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(out.String(), "\x1b\x07") || strings.Count(out.String(), "\n") != 3 {
		t.Errorf("doctor printed control characters or split a field:\n%q", out.String())
	}
}

// TestDoctorGroupsMatchNodesToReports: each group's nodes are found among
// the reports by host name; a node named otherwise than its report's host
// (a hostfile of addresses, a Slurm NodeName apart from the hostname) had
// none, read as "no hardware checked" on every node alike, and the groups
// passed as alike unchecked. A name as mpirun and DNS take it (another case,
// a domain) is the host it names.
func TestDoctorGroupsMatchNodesToReports(t *testing.T) {
	gpus := func(model string) []doctor.Result {
		return []doctor.Result{{Layer: "hardware", Check: "GPUs (nvidia-smi)", Status: doctor.OK, Detail: "8 x " + model}}
	}
	reports := []nodeReport{{Host: "gpu-01", Results: gpus("H100")}, {Host: "gpu-02", Results: gpus("H100")}}
	groups := []runner.Group{{Nodes: []string{"10.0.0.1"}}, {Nodes: []string{"10.0.0.2"}}}
	if r := groupsAlike(groups, nil, reports); r.Status != doctor.Warn || !strings.Contains(r.Detail, "10.0.0.1, 10.0.0.2") {
		t.Errorf("nodes that sent no report: %s %q", r.Status, r.Detail)
	}
	groups = []runner.Group{{Nodes: []string{"GPU-01.cluster"}}, {Nodes: []string{"gpu-02"}}}
	if r := groupsAlike(groups, nil, reports); r.Status != doctor.OK {
		t.Errorf("nodes named as mpirun reads them: %s %q", r.Status, r.Detail)
	}
}

// TestDoctorCountsHostsAsMPIRunDoes: a hostfile that names one host twice,
// once with its domain or in another case, starts one process there under
// ppr:1:node, as mpirun takes both names for one host; doctor counted two
// nodes and failed the one report as "1 of 2 nodes reported".
func TestDoctorCountsHostsAsMPIRunDoes(t *testing.T) {
	dir := t.TempDir()
	mpirun := filepath.Join(dir, "mpirun")
	os.WriteFile(mpirun, []byte("#!/bin/sh\ncat "+reportsFile(t, dir, nodeReport{Host: "node1", Time: 1})+"\n"), 0o755)
	os.WriteFile(filepath.Join(dir, "hosts"), []byte("node1 slots=4\nNODE1.cluster slots=4\n"), 0o644)
	spaceFile := doctorSpace(t, dir, "kind = \"mpirun\"\ncommand = \""+mpirun+"\"\nhostfile = \""+filepath.Join(dir, "hosts")+"\"")
	_, out, errOut := nccltune(t, dir, "doctor", "--space", spaceFile, "--python", "", "--json")
	var rep struct {
		Cluster []struct{ Check, Status, Detail string }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s%s", err, out, errOut)
	}
	for _, r := range rep.Cluster {
		if r.Check == "per-node checks" {
			t.Errorf("one host named twice counted as two: %s %q", r.Status, r.Detail)
		}
	}
}

// TestDoctorCountsTheAllocationsNodes: srun without launcher.nodes runs
// the per-node checks on every node of the allocation; with no count to
// expect, a node that reported nothing passed unseen.
func TestDoctorCountsTheAllocationsNodes(t *testing.T) {
	dir := t.TempDir()
	slurmtest.FakeAllocation(t, "n1", "n2", "n3")
	t.Setenv("SLURM_JOB_NUM_NODES", "3")
	srun := filepath.Join(dir, "srun")
	os.WriteFile(srun, []byte("#!/bin/sh\ncat "+reportsFile(t, dir, nodeReport{Host: "n1", Time: 1}, nodeReport{Host: "n2", Time: 1})+"\n"), 0o755)
	spaceFile := doctorSpace(t, dir, "kind = \"srun\"\ncommand = \""+srun+"\"\nntasks_per_node = 8")
	_, out, errOut := nccltune(t, dir, "doctor", "--space", spaceFile, "--python", "", "--json")
	var rep struct {
		Cluster []struct{ Check, Status, Detail string }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s%s", err, out, errOut)
	}
	if !slices.ContainsFunc(rep.Cluster, func(r struct{ Check, Status, Detail string }) bool {
		return r.Check == "per-node checks" && r.Status == "fail" && strings.Contains(r.Detail, "2 of 3 nodes reported")
	}) {
		t.Errorf("a node of three reported nothing: %+v", rep.Cluster)
	}
}

// doctorSpace writes the example space of the simulated cluster with
// launcher, the [launcher] table's body, into dir, and returns its path.
func doctorSpace(t *testing.T, dir, launcher string) string {
	t.Helper()
	src, err := os.ReadFile("../../examples/sim-2node-ib.toml")
	if err != nil {
		t.Fatal(err)
	}
	spaceFile := filepath.Join(dir, "space.toml")
	if err := os.WriteFile(spaceFile, []byte(strings.Replace(string(src), "[benchmark]", "[launcher]\n"+launcher+"\n\n[benchmark]", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	return spaceFile
}

// TestDoctorBoundsWhatNodesSay: a launcher that reached no node put the
// last five lines it printed, each whole, into its check's detail, and a
// node's report (an older nccltune's there) went into the report as it
// came: megabytes of either bloated the report and --json.
func TestDoctorBoundsWhatNodesSay(t *testing.T) {
	dir := t.TempDir()
	flood := "/usr/bin/yes 'srun: error: Unable to resolve' | /usr/bin/tr -d '\\n' | /usr/bin/head -c 1000000"
	for name, script := range map[string]string{
		"srun":   "for i in 1 2 3 4 5; do " + flood + "; echo; done; exit 1",
		"mpirun": "cat " + reportsFile(t, dir, nodeReport{Host: "node1", Time: 1, Results: []doctor.Result{{Layer: "hardware", Check: "GPUs", Status: doctor.OK, Detail: strings.Repeat("srun: error: Unable to resolve", 1<<13)}}}),
	} {
		t.Run(name, func(t *testing.T) {
			launcher := filepath.Join(dir, name)
			os.WriteFile(launcher, []byte("#!/bin/sh\n"+script+"\n"), 0o755)
			settings := "kind = \"" + name + "\"\ncommand = \"" + launcher + "\""
			if name == "srun" {
				settings += "\nnodes = 1\nntasks_per_node = 8"
			}
			spaceFile := doctorSpace(t, t.TempDir(), settings)
			_, out, errOut := nccltune(t, dir, "doctor", "--space", spaceFile, "--python", "", "--json")
			var rep struct {
				Nodes []struct {
					Results []doctor.Result
				}
				Cluster []doctor.Result
			}
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("%v\n%.2000s%s", err, out, errOut)
			}
			results := rep.Cluster
			for _, n := range rep.Nodes {
				results = append(results, n.Results...)
			}
			if len(results) == 0 || len(out) > 64<<10 || name == "mpirun" && len(rep.Nodes) != 1 {
				t.Errorf("--json of %d bytes, %d results", len(out), len(results))
			}
			for _, r := range results {
				if len(r.Detail) > 8<<10 {
					t.Errorf("%s: a detail of %d bytes", r.Check, len(r.Detail))
				}
			}
		})
	}
}

// TestDoctorThroughSrunsChunks: srun forwards each task's output in
// messages of 1,024 bytes at most (slurmstepd's SLURM_IO_MAX_MSG_LEN):
// whole lines where they fit, a longer line in pieces, and the pieces of
// tasks that print at once interleave (a real 3-node step, 6,000-byte lines:
// 85 of 120 mixed; 1,000-byte lines: none of 1,200). A node's report, one
// line of 1.5 KB and more, came mixed with another's, neither read: doctor
// failed "the launcher reaches the nodes" on a cluster in order. The fake
// srun here forwards two nodes' reports as srun does.
func TestDoctorThroughSrunsChunks(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 for the fake srun")
	}
	dir := t.TempDir()
	srun := filepath.Join(dir, "srun")
	os.WriteFile(srun, []byte(`#!`+python+`
import subprocess, sys
node = [`+strconv.Quote(os.Args[0])+`, "doctor", "--node", "--python", ""]
def messages(out):
    msgs, cur = [], b""
    for line in out.splitlines(keepends=True):
        if len(line) > 1024:
            msgs += [cur] if cur else []
            msgs += [line[i:i + 1024] for i in range(0, len(line), 1024)]
            cur = b""
        elif len(cur) + len(line) > 1024:
            msgs.append(cur)
            cur = line
        else:
            cur += line
    return msgs + ([cur] if cur else [])
tasks = [messages(subprocess.run(node, stdout=subprocess.PIPE, check=True).stdout) for _ in range(2)]
for i in range(max(map(len, tasks))):
    for msgs in tasks:
        if i < len(msgs):
            sys.stdout.buffer.write(msgs[i])
`), 0o755)
	spaceFile := doctorSpace(t, dir, "kind = \"srun\"\ncommand = \""+srun+"\"\nnodes = 2\nntasks_per_node = 8")
	_, out, errOut := nccltune(t, dir, "doctor", "--space", spaceFile, "--python", "", "--json")
	var rep struct {
		Nodes   []nodeReport
		Cluster []doctor.Result
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s%s", err, out, errOut)
	}
	if len(rep.Nodes) != 2 || len(rep.Nodes[0].Results) == 0 {
		t.Errorf("%d nodes reported through srun's messages: %+v", len(rep.Nodes), rep.Cluster)
	}
}

// reportsFile writes the lines `doctor --node` prints of each report into
// a file in dir, and returns its path.
func reportsFile(t *testing.T, dir string, reports ...nodeReport) string {
	t.Helper()
	var lines []string
	for _, r := range reports {
		l, err := reportLines(r)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l...)
	}
	path := filepath.Join(dir, "reports")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestDoctorSaysWhyTheLauncherFailed: a launcher that failed before it
// printed anything (its command missing, srun outside an allocation with no
// launcher.nodes to ask for) failed "the per-node checks printed nothing
// through srun: ", the reason, which the launch's failure holds, left out.
func TestDoctorSaysWhyTheLauncherFailed(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ settings, reason string }{
		{"kind = \"srun\"\ncommand = \"" + filepath.Join(dir, "no-srun") + "\"\nnodes = 2\nntasks_per_node = 8", "no-srun"},
		{"kind = \"mpirun\"\ncommand = \"" + filepath.Join(dir, "no-mpirun") + "\"", "no-mpirun"},
	} {
		_, out, errOut := nccltune(t, dir, "doctor", "--space", doctorSpace(t, t.TempDir(), tc.settings), "--python", "", "--json")
		var rep struct{ Cluster []doctor.Result }
		if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Cluster) != 1 || !strings.Contains(rep.Cluster[0].Detail, tc.reason) {
			t.Errorf("%v: %+v\n%s", err, rep.Cluster, errOut)
		}
	}
}

// TestDoctorThroughMPIRunsChunks: Open MPI's mpirun forwards each rank's
// output in the chunks it reads of the rank's pipe, cut anywhere in a line,
// and a chunk of another rank's comes between the two parts of a line (4
// ranks printing 60 lines of 944 bytes at once: 37 lines mixed so). The
// nodes' pieces came so mixed, and their reports were lost. The fake
// mpirun runs the real one (4.1), its ranks printing long reports at once.
func TestDoctorThroughMPIRunsChunks(t *testing.T) {
	mpirun, err := exec.LookPath("mpirun")
	if err != nil {
		t.Skip("no mpirun")
	}
	t.Setenv("OMPI_ALLOW_RUN_AS_ROOT", "1")
	t.Setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
	dir := t.TempDir()
	hosts := []string{"node0", "node1", "node2", "node3"}
	longReports(t, dir, hosts)
	os.WriteFile(filepath.Join(dir, "hosts"), []byte(strings.Join(hosts, "\n")+"\n"), 0o644)
	// The fan-out's flags that say how output comes pass on; the four
	// ranks run here.
	fake := filepath.Join(dir, "mpirun")
	os.WriteFile(fake, []byte(`#!/bin/sh
flags=
for a; do case $a in --tag-output|--output-filename) flags="$flags $a";; esac; done
exec `+mpirun+` --oversubscribe -np 4 $flags sh -c 'cat `+dir+`/report$OMPI_COMM_WORLD_RANK'
`), 0o755)
	spaceFile := doctorSpace(t, dir, "kind = \"mpirun\"\ncommand = \""+fake+"\"\nhostfile = \""+filepath.Join(dir, "hosts")+"\"")
	allReport(t, dir, spaceFile, 4)
}

// TestDoctorThroughSrunUnbuffered: srun -u (--unbuffered, in
// launcher.args for a Python benchmark's output) passes on each task's
// output as slurmstepd reads it, not in whole lines: a node's line is cut
// and another node's comes between its parts (22.05, 3 nodes printing 60
// lines of 944 bytes at once: 3 lines mixed), and the reports so cut were
// lost. The fake srun runs the real one on a private cluster, its tasks
// printing long reports at once.
func TestDoctorThroughSrunUnbuffered(t *testing.T) {
	c := slurmtest.Start(t, 3)
	c.Alloc(t, 3)
	dir := t.TempDir()
	longReports(t, dir, c.Nodes[:3])
	// srun's own options pass on; its tasks print the reports.
	srun := filepath.Join(dir, "srun")
	os.WriteFile(srun, []byte(`#!/bin/sh
n=0
for a; do [ "$a" = `+strconv.Quote(os.Args[0])+` ] && break; n=$((n+1)); done
opts=
while [ $n -gt 0 ]; do opts="$opts $1"; shift; n=$((n-1)); done
exec srun $opts sh -c 'cat `+dir+`/report$SLURM_PROCID'
`), 0o755)
	t.Setenv("SLURM_CONF", c.Conf)
	spaceFile := doctorSpace(t, dir, "kind = \"srun\"\ncommand = \""+srun+"\"\nnodes = 3\nntasks_per_node = 1\nargs = [\"-u\"]")
	allReport(t, dir, spaceFile, 3)
}

// longReports writes into dir, as report0, report1, ..., a node report of
// each host as doctor --node prints it, each of 40 results with long
// details: many lines at once, which launchers cut and interleave.
func longReports(t *testing.T, dir string, hosts []string) {
	t.Helper()
	for rank, host := range hosts {
		r := nodeReport{Host: host, Time: 1}
		for i := range 40 {
			r.Results = append(r.Results, doctor.Result{Layer: "hardware", Check: "check " + strconv.Itoa(i), Status: doctor.OK, Detail: strings.Repeat("a detail of some length ", 40)})
		}
		if err := os.Rename(reportsFile(t, dir, r), filepath.Join(dir, "report"+strconv.Itoa(rank))); err != nil {
			t.Fatal(err)
		}
	}
}

// allReport runs doctor over spaceFile's launcher three times and checks
// that each time all of its nodes' long reports (longReports) were read.
func allReport(t *testing.T, dir, spaceFile string, nodes int) {
	t.Helper()
	for range 3 {
		_, out, errOut := nccltune(t, dir, "doctor", "--space", spaceFile, "--python", "", "--json")
		var rep struct {
			Nodes   []nodeReport
			Cluster []doctor.Result
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%v\n%.2000s%s", err, out, errOut)
		}
		if len(rep.Nodes) != nodes || len(rep.Nodes[0].Results) != 40 {
			t.Fatalf("%d of %d nodes reported: %.3000v", len(rep.Nodes), nodes, rep.Cluster)
		}
	}
}

// TestReadReportsBoundsMemory: each id that a line named took room for as
// many pieces as the line said it has (1,024 at most), before any came:
// the launcher's output (8 MiB, kept by the runner) of short lines, each a
// new id (a node's garbled output, or one not nccltune's), took gigabytes.
func TestReadReportsBoundsMemory(t *testing.T) {
	var b strings.Builder
	for i := 0; b.Len() < 8<<20; i++ {
		fmt.Fprintf(&b, "NCCLTUNE_DOCTOR %x 1/1024 A\n", i)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if got := readReports([]byte(b.String())); len(got) != 0 {
		t.Errorf("%d reports read of no whole one", len(got))
	}
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 256<<20 {
		t.Errorf("reading 8 MiB of pieces took %d MiB", n>>20)
	}
}
