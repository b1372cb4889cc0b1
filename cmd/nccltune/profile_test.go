package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nccltune/nccltune/space"
	"github.com/nccltune/nccltune/workload"
)

// TestProfile reads a job's NCCL COLL log (gzipped), keeps one communicator
// size, and writes [[workload]] tables that a space file takes as they are.
func TestProfile(t *testing.T) {
	dir := t.TempDir()
	log, err := os.ReadFile("../../workload/testdata/nccl-2.28.3-all.log")
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	w.Write(log)
	w.Close()
	os.WriteFile(filepath.Join(dir, "job.log.gz"), gz.Bytes(), 0o644)
	code, out, errOut := nccltune(t, dir, "profile", "--ranks", "8", "job.log.gz")
	if code != 0 || !strings.Contains(errOut, "all_reduce") || strings.Contains(out, "ranks = 4") {
		t.Fatalf("profile: exit %d\n%s\n%s", code, out, errOut)
	}
	sp, err := space.Parse("job.toml", []byte("[benchmark]\nbinary = \"all_reduce_perf\"\ngpus = 8\n[[param]]\nname = \"NCCL_ALGO\"\nvalues = [\"default\", \"Ring\"]\n"+out))
	if err != nil {
		t.Fatalf("the workload does not load:\n%v\n%s", err, out)
	}
	if len(sp.Workload) == 0 || sp.Workload[0].Ranks != 8 {
		t.Errorf("workload %+v", sp.Workload)
	}
	os.WriteFile(filepath.Join(dir, "plain.log"), []byte("just a job's output\nNCCL INFO Bootstrap: Using eth0\n"), 0o644)
	if code, _, errOut := nccltune(t, dir, "profile", "plain.log"); code != 1 || !strings.Contains(errOut, "NCCL_DEBUG_SUBSYS=COLL") {
		t.Errorf("a log without COLL lines: exit %d, %s", code, errOut)
	}
}

// TestProfileSaysWhatItLeavesOut: calls of 0 bytes (which no sweep
// measures) and COLL lines it cannot read are left out and counted, in the
// tables' comments and the summary; a log of several communicator sizes
// asks for --ranks rather than writing tables that would not load;
// --json honours --out; a negative --ranks is a usage error.
func TestProfileSaysWhatItLeavesOut(t *testing.T) {
	dir := t.TempDir()
	const line = "gpu-a:100:100 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x7f00 recvbuff 0x7f00 count %s datatype 7 op 0 root 0 comm 0x55aa [nranks=%s] stream 0x5500\n"
	call := func(count, ranks string) string { return fmt.Sprintf(line, count, ranks) }
	write := func(name string, lines ...string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.Join(lines, "")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("job.log", call("0", "8"), call("262144", "8"), call("262144", "8"),
		"gpu-a:100:100 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x7f00 recvbuff 0x7f00 count 12 datatype 7 op\n")
	code, out, errOut := nccltune(t, dir, "profile", "job.log")
	if code != 0 || strings.Contains(out, `size = "0"`) {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"left out, as they move no byte (count 0): calls of all_reduce 1", "left out, as they could not be read: 1 COLL line (the first: line 4: "} {
		if !strings.Contains(out, "# "+want) || !strings.Contains(errOut, want) {
			t.Errorf("%q is not in the tables' comments and the summary:\n%s\n%s", want, out, errOut)
		}
	}
	if _, err := space.Parse("job.toml", []byte("[benchmark]\nbinary = \"all_reduce_perf\"\ngpus = 8\n[[param]]\nname = \"NCCL_ALGO\"\nvalues = [\"default\", \"Ring\"]\n"+out)); err != nil {
		t.Errorf("the workload does not load: %v\n%s", err, out)
	}

	write("sizes.log", call("262144", "8"), call("262144", "16"))
	if code, out, errOut := nccltune(t, dir, "profile", "sizes.log"); code != 1 || out != "" || !strings.Contains(errOut, "communicators of 8 (1 call), 16 (1 call) ranks") || !strings.Contains(errOut, "--ranks N") {
		t.Errorf("several sizes: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, out, errOut := nccltune(t, dir, "profile", "--json", "--out", "w.json", "sizes.log"); code != 0 || out != "" {
		t.Errorf("--json --out: exit %d\n%s\n%s", code, out, errOut)
	} else if text, err := os.ReadFile(filepath.Join(dir, "w.json")); err != nil || !strings.Contains(string(text), `"Entries"`) {
		t.Errorf("w.json: %v\n%s", err, text)
	}
	// --ranks: what the tables leave out is of their communicators (the
	// 16-rank calls of 0 bytes were said to be left out of the 8-rank tables).
	write("sizes0.log", call("262144", "8"), call("0", "16"))
	if code, out, errOut := nccltune(t, dir, "profile", "--ranks", "8", "sizes0.log"); code != 0 || strings.Contains(out+errOut, "left out") || strings.Contains(out, "of 16 ranks") {
		t.Errorf("--ranks 8: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, _, errOut := nccltune(t, dir, "profile", "--ranks", "1", "sizes.log"); code != 1 || !strings.Contains(errOut, "no calls on communicators of 1 rank; the log's are on communicators of 8 (1 call), 16 (1 call) ranks\n") {
		t.Errorf("--ranks 1: exit %d, %s", code, errOut)
	}
	// --ranks 0 was read as no --ranks: tables of whatever size the log
	// held, or the request for a --ranks just given.
	for _, n := range []string{"-3", "0"} {
		if code, _, errOut := nccltune(t, dir, "profile", "--ranks", n, "job.log"); code != 2 || !strings.Contains(errOut, "--ranks must be a communicator's rank count, 1 or more, not "+n) {
			t.Errorf("--ranks %s: exit %d, %s", n, code, errOut)
		}
	}
}

// TestProfileOfHostileLogs: whatever sizes and communicators a log gives,
// the tables profile writes load in a space, or profile says why it wrote
// none. A call larger than a space takes (256G) and a communicator larger
// than it takes (2^20 ranks) went into the tables as they were, which the
// loader then refused.
func TestProfileOfHostileLogs(t *testing.T) {
	// op, count, datatype (0 int8, 7 float32, 8 float64), ranks
	call := func(op string, count int64, dtype, ranks int) string {
		return fmt.Sprintf("gpu-a:100:100 [0] NCCL INFO %s: opCount 0 sendbuff 0x7f00 recvbuff 0x7f00 count %d datatype %d op 0 root 0 comm 0x55aa [nranks=%d] stream 0x5500\n",
			op, count, dtype, ranks)
	}
	for _, tc := range []struct {
		name string
		log  string
		want []string // in the tables, or with fails in the error
		fail bool
	}{
		{"0 bytes and 1 byte", call("AllReduce", 0, 0, 8) + call("AllReduce", 1, 0, 8),
			[]string{`size = "1"` + "\ncount = 1\n", "move no byte (count 0): calls of all_reduce 1"}, false},
		{"sizes of no power of two", call("AllReduce", 3, 7, 8) + call("Broadcast", 1000003, 0, 8),
			[]string{`size = "12"`, `size = "1000003"`}, false},
		{"the largest size", call("AllReduce", 1<<38, 0, 8), []string{`size = "256G"` + "\ncount = 1\n"}, false},
		{"larger sizes", call("AllReduce", 1<<38+1, 0, 8) + call("AllReduce", 1<<40, 0, 8),
			[]string{`size = "256G"` + "\ncount = 6\n", "measured at 256G, the largest size a space takes, each as one call per 256G it moves (rounded up): calls of all_reduce 2"}, false},
		{"the largest count a line may give", call("AllReduce", math.MaxInt64/8, 8, 1), []string{`size = "256G"` + "\ncount = 33554432\n"}, false},
		{"one rank", call("AllGather", 5, 7, 1), []string{`size = "20"`, "ranks = 1\n"}, false},
		{"thousands of ranks", call("AllGather", 1<<20, 7, 4096) + call("ReduceScatter", 1<<26, 7, 4096),
			[]string{`size = "16G"`, "collective = \"reduce_scatter\"\nsize = \"256G\"\ncount = 4\nranks = 4096\n"}, false},
		{"the most ranks", call("AllReduce", 2, 7, 1<<20), []string{"ranks = 1048576\n"}, false},
		{"more ranks than a space takes, beside a call", call("AllReduce", 2, 7, 1<<20+1) + call("AllReduce", 2, 7, 8),
			[]string{"ranks = 8\n", "left out, as they could not be read: 1 COLL line"}, false},
		{"more ranks than a space takes, alone", call("AllReduce", 2, 7, 1<<21), []string{"none of the 1 NCCL COLL lines could be read"}, true},
		{"0 bytes alone", call("AllReduce", 0, 7, 8), []string{"no call that nccltune can measure, only all_reduce of 0 bytes"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "job.log"), []byte(tc.log), 0o644); err != nil {
				t.Fatal(err)
			}
			code, _, errOut := nccltune(t, dir, "profile", "--out", "w.toml", "job.log")
			out, readErr := os.ReadFile(filepath.Join(dir, "w.toml"))
			if tc.fail {
				if code != 1 || readErr == nil || !containsAll(errOut, tc.want) {
					t.Errorf("exit %d, w.toml written: %t\n%s", code, readErr == nil, errOut)
				}
				return
			}
			if code != 0 || readErr != nil {
				t.Fatalf("exit %d (%v)\n%s", code, readErr, errOut)
			}
			if _, err := space.ParseWorkload("w.toml", out); err != nil || !containsAll(string(out), tc.want) {
				t.Errorf("%v\n%s", err, out)
			}
		})
	}
}

// TestProfileChecksItsTables: tables that a space would not load are
// profile's bug, and it says so rather than write them.
func TestProfileChecksItsTables(t *testing.T) {
	w := &workload.Workload{Entries: []workload.Entry{{Collective: "all_reduce", Bytes: 8, Count: 1, Ranks: 8}, {Collective: "all_reduce", Bytes: 8, Count: 1, Ranks: 16}}}
	if data, err := render(w, false); err == nil || !strings.Contains(err.Error(), "bug: profile wrote [[workload]] tables that a space does not load") || data != nil {
		t.Errorf("%v\n%s", err, data)
	}
}

// TestProfileTablesASpaceHolds: a job whose sizes vary from call to call
// (an alltoall of uneven splits, as a mixture of experts sends) gave tables
// larger than a space file may be (space.MaxFile), which profile wrote and
// `run` then refused with the space they went into. profile says why it
// writes none.
func TestProfileTablesASpaceHolds(t *testing.T) {
	w := &workload.Workload{}
	for i := range 250_000 {
		w.Entries = append(w.Entries, workload.Entry{Collective: "sendrecv", Bytes: int64(i + 1), Count: 1, Ranks: 8})
	}
	data, err := render(w, false)
	if err == nil || !strings.Contains(err.Error(), "the tables of 250000 sizes would be 17.5 MiB, over the 16 MiB a space file may be") || data != nil {
		t.Errorf("%v (%d bytes of tables)", err, len(data))
	}
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// TestProfileOutFailsWhole: --out that cannot be written whole (here past
// the file size limit, as on a full disk) fails and leaves the old file as
// it was. profile wrote into the file itself, so the failure left it
// truncated, and it did not check Close, which on some file systems is
// where a full disk shows.
func TestProfileOutFailsWhole(t *testing.T) {
	dir := t.TempDir()
	var log strings.Builder
	for i := range 100 { // tables of some 6K
		fmt.Fprintf(&log, "gpu-a:100:100 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x7f00 recvbuff 0x7f00 count %d datatype 7 op 0 root 0 comm 0x55aa [nranks=8] stream 0x5500\n", i+1)
	}
	const old = "# the tables of an earlier profile\n"
	for name, text := range map[string]string{"job.log": log.String(), "w.toml": old} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// ulimit -f 1 lets a process write files of 1K at most (512 bytes in dash).
	cmd := exec.Command("sh", "-c", `ulimit -f 1 && exec "$0" "$@"`, os.Args[0], "profile", "--out", "w.toml", "job.log")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "writing w.toml") {
		t.Errorf("exit %v, want 1\n%s", err, out)
	}
	if text, err := os.ReadFile(filepath.Join(dir, "w.toml")); string(text) != old {
		t.Errorf("w.toml = %q (%v), want it as it was", text, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("left %v in the folder", entries)
	}
}

// TestProfileStopsOnASignal: a signal stops profile at once, whether it is
// reading a log without end (/dev/zero here; a log of a hundred gigabytes
// takes minutes) or waiting on a pipe that says nothing more. profile read
// on, deaf to the signal, until the forced exit a minute later.
func TestProfileStopsOnASignal(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "job.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// Held open for writing, so that profile's open returns and its read waits.
	writer, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	writer.WriteString("gpu-a:100:100 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x7f00 recvbuff 0x7f00 count 1 datatype 7 op 0 root 0 comm 0x55aa [nranks=8] stream 0x5500\n")
	for _, log := range []string{"/dev/zero", fifo} {
		cmd := exec.Command(os.Args[0], "profile", log)
		cmd.Env = append(os.Environ(), "NCCLTUNE_TEST_STOP_WAIT=20s")
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = io.Discard, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		start := time.Now()
		cmd.Process.Signal(syscall.SIGTERM)
		err := cmd.Wait()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 || time.Since(start) > 10*time.Second || !strings.Contains(stderr.String(), "nccltune: interrupted") {
			t.Errorf("profile %s: %v, %s after the signal\n%s", log, err, time.Since(start).Round(time.Second), stderr.String())
		}
	}
}

// TestProfileOutIsNotTheLog: --out naming the log it reads (a typo, or a
// link to it) replaced the job's log with the tables; it is refused, and
// the log is left as it was.
func TestProfileOutIsNotTheLog(t *testing.T) {
	dir := t.TempDir()
	const log = "gpu-a:100:100 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x7f00 recvbuff 0x7f00 count 8 datatype 7 op 0 root 0 comm 0x55aa [nranks=8] stream 0x5500\n"
	if err := os.WriteFile(filepath.Join(dir, "job.log"), []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("job.log", filepath.Join(dir, "link.log")); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{"job.log", "./job.log", "link.log"} {
		code, stdout, errOut := nccltune(t, dir, "profile", "--out", out, "job.log")
		if code != 2 || !strings.Contains(errOut, "is the log") {
			t.Errorf("profile --out %s job.log: exit %d, want 2\n%s%s", out, code, stdout, errOut)
		}
		if text, err := os.ReadFile(filepath.Join(dir, "job.log")); string(text) != log {
			t.Fatalf("profile --out %s job.log left the log as %q (%v)", out, text, err)
		}
	}
	// The log on standard input: profile --out job.log - < job.log.
	in, err := os.Open(filepath.Join(dir, "job.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	cmd := exec.Command(os.Args[0], "profile", "--out", "job.log", "-")
	cmd.Dir, cmd.Stdin = dir, in
	if out, err := cmd.CombinedOutput(); cmd.ProcessState.ExitCode() != 2 {
		t.Errorf("profile --out job.log - < job.log: %v, want exit 2\n%s", err, out)
	}
	if text, _ := os.ReadFile(filepath.Join(dir, "job.log")); string(text) != log {
		t.Errorf("profile --out job.log - < job.log left the log as %q", text)
	}
}
