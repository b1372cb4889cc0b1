package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nccltune/nccltune/space"
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
	if code, out, errOut := nccltune(t, dir, "profile", "sizes.log"); code != 1 || out != "" || !strings.Contains(errOut, "communicators of 8 (1 calls), 16 (1 calls) ranks") || !strings.Contains(errOut, "--ranks N") {
		t.Errorf("several sizes: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, out, errOut := nccltune(t, dir, "profile", "--json", "--out", "w.json", "sizes.log"); code != 0 || out != "" {
		t.Errorf("--json --out: exit %d\n%s\n%s", code, out, errOut)
	} else if text, err := os.ReadFile(filepath.Join(dir, "w.json")); err != nil || !strings.Contains(string(text), `"Entries"`) {
		t.Errorf("w.json: %v\n%s", err, text)
	}
	if code, _, errOut := nccltune(t, dir, "profile", "--ranks", "-3", "sizes.log"); code != 2 {
		t.Errorf("--ranks -3: exit %d, %s", code, errOut)
	}
}
