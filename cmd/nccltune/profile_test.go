package main

import (
	"bytes"
	"compress/gzip"
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
	sp, err := space.Parse("job.toml", []byte("[benchmark]\nbinary = \"all_reduce_perf\"\n[[param]]\nname = \"NCCL_ALGO\"\nvalues = [\"default\", \"Ring\"]\n"+out))
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
