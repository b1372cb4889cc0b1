package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestStatusOfACampaignStoppedFailing: a campaign whose trials all failed
// the same way stops early (run says so); status, asked later, says so too,
// not only "5 of 40 trials finished".
func TestStatusOfACampaignStoppedFailing(t *testing.T) {
	dir := t.TempDir()
	spaceFile := scriptSpace(t, dir, "broken", 40, "echo 'cudaErrorNoDevice' >&2\nexit 3\n")
	if code, out, errOut := nccltune(t, dir, "run", "--space", spaceFile); code != 1 || !strings.Contains(errOut, "stopping early") {
		t.Fatalf("run of a broken benchmark: exit %d\n%s\n%s", code, out, errOut)
	}
	_, out, _ := nccltune(t, dir, "status")
	if !strings.Contains(out, "stopping early: every trial so far failed the same way (5 trials") || !strings.Contains(out, "nccltune resume") {
		t.Errorf("status of a campaign stopped failing:\n%s", out)
	}
	if _, out, _ = nccltune(t, dir, "status", "--json"); !strings.Contains(out, `"stopped": "stopping early: every trial so far failed the same way`) {
		t.Errorf("status --json of a campaign stopped failing:\n%s", out)
	}
}

// TestSuggestionsNameTheStore: the commands a failed or stopped run
// suggests named neither its --store nor, for resume, the --space file a
// campaign that starts a program needs: `nccltune resume` read the default
// store (no store nccltune.db), or refused to start the stored program.
// The resume it suggests goes on, and the others name the store.
func TestSuggestionsNameTheStore(t *testing.T) {
	t.Parallel() // waits on its benchmark's sleeps and signals, not a CPU
	dir := t.TempDir()
	spaceFile := scriptSpace(t, dir, "broken", 40, "echo 'cudaErrorNoDevice' >&2\nexit 3\n")
	code, out, errOut := nccltune(t, dir, "run", "--space", spaceFile, "--store", "b.db")
	if code != 1 || !strings.Contains(errOut, "see `nccltune show 4`; the commands it names need --store b.db") {
		t.Errorf("run of a broken benchmark: exit %d\n%s%s", code, out, errOut)
	}
	// status, which has no --space, names the file the resume needs.
	if _, out, _ := nccltune(t, dir, "status", "--store", "b.db", "--campaign", "broken"); !strings.Contains(out, "see `nccltune show 4`; the commands it names need --store b.db --campaign broken") ||
		!strings.Contains(out, "then `nccltune resume --store b.db --campaign broken --space FILE`") {
		t.Errorf("status of a campaign stopped failing:\n%s", out)
	}

	spaceFile = slowSpace(t, dir, 4)
	cmd := exec.Command(os.Args[0], "run", "--space", spaceFile, "--store", "s.db")
	done, stderr := startHeld(t, dir, cmd)
	cmd.Process.Signal(syscall.SIGTERM)
	<-done
	resume := []string{"resume", "--store", "s.db", "--space", spaceFile}
	if !strings.Contains(stderr.String(), "`"+shellJoin(append([]string{"nccltune"}, resume...))+"`") {
		t.Fatalf("interrupted run does not suggest its resume:\n%s", stderr.String())
	}
	if code, out, errOut := nccltune(t, dir, resume...); code != 0 || !strings.Contains(out, "4 of 4 trials finished") {
		t.Errorf("the suggested resume: exit %d\n%s%s", code, out, errOut)
	}
	// Run again, a finished campaign suggests validating it.
	if code, out, errOut := nccltune(t, dir, "run", "--space", spaceFile, "--store", "s.db"); code != 0 || !strings.Contains(errOut, "`"+shellJoin([]string{"nccltune", "validate", "--store", "s.db", "--space", spaceFile})+"` measures") {
		t.Errorf("run of a finished campaign: exit %d\n%s%s", code, out, errOut)
	}
}

// TestExportSuggestsValidatingTheStore: export of rules that need
// validation said "run `nccltune validate`", which without the --store the
// export read validates the default store's campaign, or none.
func TestExportSuggestsValidatingTheStore(t *testing.T) {
	dir := t.TempDir()
	if code, out, errOut := nccltune(t, dir, "run", "-q", "--store", "nv.db", "--trials", "3", "--no-validate"); code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := nccltune(t, dir, "export", "--store", "nv.db", "--format", "tuner-csv")
	if code != 1 || !strings.Contains(errOut, "run `nccltune validate`\n`nccltune validate` here is `nccltune validate --store nv.db`") {
		t.Errorf("export --format tuner-csv of an unvalidated campaign: exit %d\n%s%s", code, out, errOut)
	}
}

// jobEnded runs the test in Slurm job 7, which scontrol says its time
// limit ended.
func jobEnded(t *testing.T) {
	t.Helper()
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "scontrol"), []byte("#!/bin/sh\necho 'JobId=7 JobState=TIMEOUT NodeList=n1'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("SLURM_JOB_ID", "7")
}

// TestAllocationEndedSuggestsItsResume: a campaign stopped as the Slurm
// job's allocation ended said its trial "runs again on resume", and no
// more: `nccltune resume` without the run's --store and --space resumed
// the default store's campaign, or refused the stored program.
func TestAllocationEndedSuggestsItsResume(t *testing.T) {
	dir := t.TempDir()
	spaceFile := scriptSpace(t, dir, "ended", 10, "echo 'srun: error: Slurm job 7 has expired' >&2\nexit 1\n")
	jobEnded(t)
	code, out, errOut := nccltune(t, dir, "run", "--space", spaceFile, "--store", "a.db", "-q")
	resume := "`" + shellJoin([]string{"nccltune", "resume", "--store", "a.db", "--space", spaceFile}) + "`"
	if code != 1 || !strings.Contains(errOut, "allocation ended") || !strings.Contains(errOut, resume) {
		t.Errorf("run whose allocation ended: exit %d, want 1 naming %s\n%s%s", code, resume, out, errOut)
	}
}

// TestValidationAllocationEndedSuggestsItsValidate: `nccltune validate`
// stopped as the Slurm job's allocation ended said so and no more, though
// it stored nothing and the same validate, with its --store and --space,
// in an allocation whose nodes are up, goes on.
func TestValidationAllocationEndedSuggestsItsValidate(t *testing.T) {
	dir := t.TempDir()
	spaceFile := scriptSpace(t, dir, "ended", 4, `d=$(dirname "$0")
if [ -e "$d/ended" ]; then echo 'srun: error: Slurm job 7 has expired' >&2; exit 1; fi
t=20.5; [ "$NCCL_ALGO" = Tree ] && t=10.25
for s in 1024 2048 4096; do
  awk -v s=$s -v t=$t 'BEGIN { a = s / t / 1000; printf "  %d  %d  float  sum  -1  %.2f  %.4f  %.4f  0  %.2f  %.4f  %.4f  0\n", s, s/4, t, a, 1.8*a, t, a, 1.8*a }'
done
`)
	if code, out, errOut := nccltune(t, dir, "run", "--space", spaceFile, "--store", "a.db", "-q", "--no-validate", "--no-simplify"); code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, out, errOut)
	}
	if err := os.WriteFile(filepath.Join(dir, "ended"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	jobEnded(t)
	code, out, errOut := nccltune(t, dir, "validate", "--space", spaceFile, "--store", "a.db", "-q")
	validate := "`" + shellJoin([]string{"nccltune", "validate", "--store", "a.db", "--space", spaceFile}) + "`"
	if code != 1 || !strings.Contains(errOut, "allocation ended") || !strings.Contains(errOut, validate) {
		t.Errorf("validate whose allocation ended: exit %d, want 1 naming %s\n%s%s", code, validate, out, errOut)
	}
}

// TestJobFileNamesItsValidate: a workload's job file, exported before
// validation, told the reader to run `nccltune validate`, which without
// the campaign's --store validates another store's campaign, or none.
func TestJobFileNamesItsValidate(t *testing.T) {
	dir := t.TempDir()
	spaceFile, _ := filepath.Abs("../../examples/sim-2node-ib-workload.toml")
	if code, out, errOut := nccltune(t, dir, "run", "-q", "--space", spaceFile, "--store", "w.db", "--trials", "3", "--no-simplify", "--no-validate"); code != 0 {
		t.Fatalf("run: %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := nccltune(t, dir, "export", "--store", "w.db", "--format", "job", "--out", "env"); code != 0 {
		t.Fatalf("export: %d\n%s%s", code, out, errOut)
	}
	text, err := os.ReadFile(filepath.Join(dir, "env", "nccl-job.env"))
	if want := "# not validated: run `nccltune validate --store w.db`"; err != nil || !strings.Contains(string(text), want) {
		t.Errorf("job file (%v), want %q:\n%s", err, want, text)
	}
}
