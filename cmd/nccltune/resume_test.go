package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nccltune/nccltune/store"
)

// stored reads a store's campaign: its trials and validations.
func stored(t *testing.T, path, campaign string) ([]store.Trial, []store.Validation) {
	t.Helper()
	st, err := store.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c, err := st.Campaign(campaign)
	if err != nil {
		t.Fatal(err)
	}
	trials, err := st.Trials(c.ID)
	if err != nil {
		t.Fatal(err)
	}
	vals, err := st.Validations(c.ID)
	if err != nil {
		t.Fatal(err)
	}
	return trials, vals
}

// finishedTrials reads a store's campaign and maps trial numbers to their one
// finished trial, failing the test on a duplicate.
func finishedTrials(t *testing.T, path, campaign string) map[int]store.Trial {
	t.Helper()
	trials, _ := stored(t, path, campaign)
	out := map[int]store.Trial{}
	for _, tr := range trials {
		if tr.State == store.Complete || tr.State == store.Failed {
			if _, dup := out[tr.Number]; dup {
				t.Fatalf("trial %d finished twice", tr.Number)
			}
			out[tr.Number] = tr
		}
	}
	return out
}

// TestKillNineAndResume kills nccltune with SIGKILL again and again, each
// time once the store shows a chosen point of progress (a trial committed, or
// a trial started and running), resumes, and checks that the result is
// exactly that of an uninterrupted run with the same seed. The kills follow
// the store, not the clock, so they land however loaded the machine is.
func TestKillNineAndResume(t *testing.T) {
	const trials = 20 // past the search's 10 covering draws, into the model's proposals
	whole := t.TempDir()
	if code, out, errOut := nccltune(t, whole, "run", "-q", "--no-validate", "--trials", strconv.Itoa(trials)); code != 0 {
		t.Fatalf("uninterrupted run: %d\n%s%s", code, out, errOut)
	}
	want := finishedTrials(t, filepath.Join(whole, "nccltune.db"), "sim-2node-ib")

	dir := t.TempDir()
	db := filepath.Join(dir, "nccltune.db")
	rng := rand.New(rand.NewPCG(1, 2))
	kills := 0
	for attempt := 0; ; attempt++ {
		if attempt > 100 {
			t.Fatal("the campaign never finished")
		}
		finished, _ := storeProgress(db)
		// Kill once trial `at` is committed, or (every other time) once it is running.
		at, running := finished+rng.IntN(3), attempt%2 == 1
		cmd := exec.Command(os.Args[0], "run", "-q", "--no-validate", "--trials", strconv.Itoa(trials))
		cmd.Dir = dir
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		done := started(t, cmd)
		if exited := waitFor(done, func() bool {
			f, r := storeProgress(db)
			return f > at || running && r >= at
		}); exited != nil {
			if err := *exited; err != nil {
				t.Fatalf("run failed: %v\n%s", err, stderr.String())
			}
			break // the campaign finished before the point was reached
		}
		cmd.Process.Signal(syscall.SIGKILL)
		<-done
		kills++
	}
	if kills < 10 {
		t.Errorf("only %d kills landed; the test proves little", kills)
	}
	got := finishedTrials(t, db, "sim-2node-ib")
	// The budget, then the trials that simplify each range's choice.
	if len(got) != len(want) || len(want) < trials {
		t.Fatalf("%d finished trials after %d kills (uninterrupted: %d), want %d or more", len(got), kills, len(want), trials)
	}
	for n := range want {
		g, w := got[n], want[n]
		if !reflect.DeepEqual(g.Params, w.Params) || !reflect.DeepEqual(g.Scores, w.Scores) || !reflect.DeepEqual(g.Rows, w.Rows) {
			t.Errorf("trial %d differs from the uninterrupted run:\n%v %v\n%v %v", n, g.Params, g.Scores, w.Params, w.Scores)
		}
	}
}

// storeProgress reads, without taking part in the campaign, how many trials the
// store holds finished, and the number of the trial running (-1 if none).
func storeProgress(path string) (finished, running int) {
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(1000)")
	if err != nil {
		return 0, -1
	}
	defer db.Close()
	running = -1
	_ = db.QueryRow(`SELECT count(DISTINCT number) FROM trials WHERE state IN ('complete', 'failed', 'pruned')`).Scan(&finished)
	_ = db.QueryRow(`SELECT coalesce(max(number), -1) FROM trials WHERE state = 'running'`).Scan(&running)
	return finished, running
}

// waitFor polls cond until it holds (nil) or the process exits first (its error).
func waitFor(done chan error, cond func() bool) *error {
	for !cond() {
		select {
		case err := <-done:
			return &err
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}

// started starts cmd; done gets what its Wait returns.
func started(t *testing.T, cmd *exec.Cmd) (done chan error) {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done = make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	return done
}

// startHeld starts cmd, a campaign whose launch writes dir/held as it
// hangs (slowSpace's, told to by dir/hold, which startHeld writes), in dir,
// and returns once a launch hangs, with cmd's stderr; its standard output
// is discarded unless cmd has one.
func startHeld(t *testing.T, dir string, cmd *exec.Cmd) (done chan error, stderr *bytes.Buffer) {
	t.Helper()
	os.WriteFile(filepath.Join(dir, "hold"), nil, 0o644)
	stderr = &bytes.Buffer{}
	cmd.Dir, cmd.Stderr = dir, stderr
	if cmd.Stdout == nil {
		cmd.Stdout = io.Discard
	}
	done = started(t, cmd)
	if err := waitFor(done, func() bool { _, err := os.Stat(filepath.Join(dir, "held")); return err == nil }); err != nil {
		t.Fatalf("the campaign ended before its held trial: %v\n%s", *err, stderr.String())
	}
	return done, stderr
}

// slowSpace writes a campaign whose benchmark is a shell script that sleeps,
// so that a test can act while a trial runs. Where dir holds a file "hold",
// the next trial removes it and hangs, its pid in dir/held, for the test to kill.
func slowSpace(t *testing.T, dir string, trials int) string {
	t.Helper()
	return scriptSpace(t, dir, "slow", trials, `d=$(dirname "$0")
if rm "$d/hold" 2>/dev/null; then echo $$ > "$d/held.tmp"; mv "$d/held.tmp" "$d/held"; exec sleep 60; fi
sleep 0.4
for s in 1024 2048 4096; do
  echo "  $s  $((s/4))  float  sum  -1  20.5  0.05  0.09  0  19.9  0.05  0.09  0"
done
`)
}

// scriptSpace writes a space file in dir for a campaign name of trials
// over NCCL_ALGO and NCCL_MIN_NCHANNELS (more configurations than any test's
// budget, so that none stops for want of untried ones) whose benchmark is
// the shell script, and returns its path.
func scriptSpace(t *testing.T, dir, name string, trials int, script string) string {
	t.Helper()
	bench := filepath.Join(dir, name+"_perf.sh")
	spaceFile := filepath.Join(dir, "space.toml")
	err := errors.Join(os.WriteFile(bench, []byte("#!/bin/sh\n"+script), 0o755), os.WriteFile(spaceFile, []byte(`[campaign]
name = "`+name+`"
trials = `+strconv.Itoa(trials)+`
sizes = { min = "1K", max = "4K", factor = 2 }
[benchmark]
binary = "`+bench+`"
[[param]]
name = "NCCL_ALGO"
values = ["Ring", "Tree"]
[[param]]
name = "NCCL_MIN_NCHANNELS"
min = 1
max = 32
`), 0o644))
	if err != nil {
		t.Fatal(err)
	}
	return spaceFile
}

func TestOneWriterAndKilledBenchmark(t *testing.T) {
	t.Parallel() // waits on its benchmark's sleeps and signals, not a CPU
	dir := t.TempDir()
	spaceFile := slowSpace(t, dir, 6)
	first := exec.Command(os.Args[0], "run", "-q", "--space", spaceFile)
	first.Dir = dir
	var out bytes.Buffer
	first.Stdout, first.Stderr = &out, &out
	done := started(t, first)
	// Once a trial finished (the unrecorded warm launch is over), the next one hangs, its pid written.
	if err := waitFor(done, func() bool { finished, _ := storeProgress(filepath.Join(dir, "nccltune.db")); return finished > 0 }); err != nil {
		t.Fatalf("the campaign ended before a trial finished: %v\n%s", *err, out.String())
	}
	os.WriteFile(filepath.Join(dir, "hold"), nil, 0o644)
	var pid int
	if err := waitFor(done, func() bool {
		b, err := os.ReadFile(filepath.Join(dir, "held"))
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	}); err != nil {
		t.Fatalf("the campaign ended before a trial hung: %v\n%s", *err, out.String())
	}

	code, _, errOut := nccltune(t, dir, "run", "--space", spaceFile)
	if code != 1 || !strings.Contains(errOut, "in use by another nccltune run") {
		t.Errorf("second writer: exit %d, %q", code, errOut)
	}
	if code, _, errOut := nccltune(t, dir, "status"); code != 0 {
		t.Errorf("status beside a running campaign: exit %d, %s", code, errOut)
	}
	// Kill the benchmark of the running trial (this test's, by its pid): that trial fails, the campaign goes on.
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill the hung benchmark %d: %v", pid, err)
	}
	if err := <-done; err != nil {
		t.Fatalf("campaign: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "6 of 6 trials finished (5 complete, 1 failed: 1 signal)") {
		t.Errorf("a killed benchmark should fail one trial as signal:\n%s", out.String())
	}
}

// TestFullDisk runs the campaign with a file-size limit that the store outgrows:
// nccltune must stop with a clear error, keep every trial committed before, and
// resume once there is room.
func TestFullDisk(t *testing.T) {
	dir := t.TempDir()
	// The store and its log outgrow 160 KiB within the first few trials (a
	// 10-trial store alone takes 250 KiB): the resume runs the most of them.
	const trials = 12
	script := "trap '' XFSZ; ulimit -f 160; exec \"$0\" run -q --trials " + strconv.Itoa(trials)
	cmd := exec.Command("bash", "-c", script, os.Args[0])
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the campaign fit in 160 KiB; the test proves nothing\n%s", out)
	}
	if !strings.Contains(string(out), "nccltune:") || !(strings.Contains(string(out), "full") || strings.Contains(string(out), "too large") || strings.Contains(string(out), "I/O")) {
		t.Errorf("unclear error:\n%s", out)
	}
	before := finishedTrials(t, filepath.Join(dir, "nccltune.db"), "sim-2node-ib")
	if len(before) == 0 {
		t.Fatal("no trial survived")
	}
	if code, o, e := nccltune(t, dir, "resume", "-q", "--trials", strconv.Itoa(trials)); code != 0 {
		t.Fatalf("resume: %d\n%s%s", code, o, e)
	}
	after := finishedTrials(t, filepath.Join(dir, "nccltune.db"), "sim-2node-ib")
	for n := range trials {
		if _, ok := after[n]; !ok {
			t.Errorf("trial %d missing after resume", n)
		}
	}
	// The trial cut off by the full disk reads interrupted, or, cut off before
	// its first write, left nothing; none is left running.
	if _, out, _ := nccltune(t, dir, "status", "--json"); strings.Contains(out, `"running"`) || strings.Contains(out, `"interrupted": 2`) {
		t.Errorf("after the resume:\n%s", out)
	}
	for n, tr := range before {
		if !reflect.DeepEqual(after[n].Params, tr.Params) || !reflect.DeepEqual(after[n].Scores, tr.Scores) {
			t.Errorf("trial %d changed across the resume", n)
		}
	}
}

// TestFullDiskReader: a command that cannot open a store's log where the
// disk is full (a campaign killed there left its -wal; SQLite remakes the
// -shm beside it) says so, and that the store is as it was: it said "not a
// readable SQLite database: disk I/O error", which reads as a damaged store.
func TestFullDiskReader(t *testing.T) {
	dir := smallCampaign(t)
	// What a campaign killed mid-trial leaves: the store with its log.
	killed := t.TempDir()
	st, err := store.Open(filepath.Join(dir, "nccltune.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.LockWriter(); err != nil { // writes to the log
		t.Fatal(err)
	}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		data, err := os.ReadFile(filepath.Join(dir, "nccltune.db"+suffix))
		if err == nil {
			err = os.WriteFile(filepath.Join(killed, "nccltune.db"+suffix), data, 0o666)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	for _, command := range []string{"status", "resume -q"} {
		// A file-size limit below the -shm's size fails its writes as a full disk does.
		cmd := exec.Command("bash", "-c", "trap '' XFSZ; ulimit -f 16; exec \"$0\" "+command, os.Args[0])
		cmd.Dir = killed
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Fatalf("%s read the store's log in 16 KiB; the test proves nothing\n%s", command, out)
		}
		if strings.Contains(string(out), "not a readable") || !strings.Contains(string(out), "full") {
			t.Errorf("%s, its -shm not written: unclear error:\n%s", command, out)
		}
	}
	if code, out, errOut := nccltune(t, killed, "status"); code != 0 {
		t.Errorf("status with room: exit %d\n%s%s", code, out, errOut)
	}
}

// TestStoredSpaceThatFailsANewerCheck: a campaign whose stored space fails a
// check added since it ran (here a timeout under a second) keeps its results
// readable, with the check told; what would run it again refuses it.
func TestStoredSpaceThatFailsANewerCheck(t *testing.T) {
	dir := t.TempDir()
	ranCampaign(t, dir, "-q", "--trials", "4", "--no-simplify", "--no-validate")
	tamper(t, filepath.Join(dir, "nccltune.db"), `UPDATE campaigns SET space = CAST(replace(CAST(space AS TEXT), 'timeout = "2m"', 'timeout = "500ms"') AS BLOB)`)
	for _, args := range [][]string{{"status"}, {"status", "--json"}, {"show", "2"}, {"report", "--out", dir}, {"export", "--out", dir}} {
		code, out, errOut := nccltune(t, dir, args...)
		if code != 0 || out == "" || strings.Count(errOut, "fails checks added since it ran") != 1 || !strings.Contains(errOut, "timeout") {
			t.Errorf("%v: exit %d, stderr %q; want its results and the check told once", args, code, errOut)
		}
	}
	if code, _, errOut := nccltune(t, dir, "resume"); code != 1 || !strings.Contains(errOut, "timeout") {
		t.Errorf("resume: exit %d, stderr %q; want the check as its error", code, errOut)
	}
}

// TestStoredWorkloadThatFailsANewerCheck: a [[workload]] entry that fails a
// check added since the campaign ran is still one of its collectives: the
// read-only commands show its results (and do not panic with none left).
func TestStoredWorkloadThatFailsANewerCheck(t *testing.T) {
	dir := t.TempDir()
	copyFile(t, filepath.Join("..", "..", "examples", "sim-2node-ib-workload.toml"), filepath.Join(dir, "w.toml"))
	if code, out, errOut := nccltune(t, dir, "run", "--space", "w.toml", "--trials", "3", "-q", "--no-validate", "--no-simplify"); code != 0 {
		t.Fatalf("run exited %d\n%s\n%s", code, out, errOut)
	}
	_, before, _ := nccltune(t, dir, "status")
	tamper(t, filepath.Join(dir, "nccltune.db"), `UPDATE campaigns SET space = CAST(replace(CAST(space AS TEXT), 'ranks = 16', 'ranks = 2000000') AS BLOB)`)
	for _, args := range [][]string{{"status"}, {"status", "--json"}, {"show", "1"}, {"report", "--out", dir}, {"export", "--out", dir}} {
		code, out, errOut := nccltune(t, dir, args...)
		if code != 0 || out == "" || strings.Contains(errOut, "panic") || !strings.Contains(errOut, "workload.ranks") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want its results and the check told", args, code, out, errOut)
		}
		if args[0] == "status" && len(args) == 1 && !strings.Contains(out, "all_gather") {
			t.Errorf("status lost the workload's ranges:\n%s\nbefore:\n%s", out, before)
		}
	}
}

// TestStoredFixedThatFailsANewerCheck: a variable the campaign pinned, whose
// value a check added since refuses ("default"), is still what each trial
// ran with: export writes it, where it found every stored environment
// "altered" without it.
func TestStoredFixedThatFailsANewerCheck(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile(filepath.Join("..", "..", "examples", "sim-2node-ib.toml"))
	if err != nil {
		t.Fatal(err)
	}
	sp := strings.Replace(string(data), "[fixed]\n", "[fixed]\nNCCL_SOCKET_IFNAME = \"eth9\"\n", 1)
	if err := os.WriteFile(filepath.Join(dir, "s.toml"), []byte(sp), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := nccltune(t, dir, "run", "--space", "s.toml", "--trials", "4", "-q", "--no-validate", "--no-simplify"); code != 0 {
		t.Fatalf("run exited %d\n%s\n%s", code, out, errOut)
	}
	tamper(t, filepath.Join(dir, "nccltune.db"),
		`UPDATE campaigns SET space = CAST(replace(CAST(space AS TEXT), '"eth9"', '"default"') AS BLOB)`,
		`UPDATE trials SET env = replace(env, 'NCCL_SOCKET_IFNAME=eth9', 'NCCL_SOCKET_IFNAME=default')`)
	for _, args := range [][]string{{"status"}, {"export", "--out", dir}} {
		code, out, errOut := nccltune(t, dir, args...)
		if code != 0 || !strings.Contains(errOut, "fails checks added since it ran") || !strings.Contains(errOut, "NCCL_SOCKET_IFNAME") {
			t.Errorf("%v: exit %d\n%s\n%s; want its results and the check told", args, code, out, errOut)
		}
	}
}

// TestStoredValueThatFailsANewerCheck: a param value that a check added
// since its campaign ran refuses (listed twice, as NCCL reads it) is still a
// value its trials ran: export writes it, where it found the trial
// "altered" for setting a value the space does not offer.
func TestStoredValueThatFailsANewerCheck(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile(filepath.Join("..", "..", "examples", "sim-2node-ib.toml"))
	if err != nil {
		t.Fatal(err)
	}
	sp, _, _ := strings.Cut(string(data), "[[param]]")
	sp += "[[param]]\nname = \"NCCL_PROTO\"\nvalues = [\"LL,LL128\", \"Simple\"]\n\n[[try_first]]\nNCCL_PROTO = \"LL,LL128\"\n"
	if err := os.WriteFile(filepath.Join(dir, "s.toml"), []byte(sp), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := nccltune(t, dir, "run", "--space", "s.toml", "--trials", "4", "-q", "--no-validate", "--no-simplify"); code != 0 {
		t.Fatalf("run exited %d\n%s\n%s", code, out, errOut)
	}
	// try_first's trial is made the best of every range.
	tamper(t, filepath.Join(dir, "nccltune.db"), `UPDATE trials SET scores = '{"small":1000,"medium":1000,"large":1000}' WHERE params LIKE '%LL,LL128%'`)
	if code, out, errOut := nccltune(t, dir, "status"); code != 0 || !strings.Contains(out, "PROTO=LL,LL128") {
		t.Fatalf("no range chose LL,LL128: exit %d\n%s\n%s", code, out, errOut)
	}
	// As a campaign run before the check could have listed it: first another spelling of the set.
	tamper(t, filepath.Join(dir, "nccltune.db"), `UPDATE campaigns SET space = CAST(replace(CAST(space AS TEXT), '["LL,LL128", "Simple"]', '["LL128,LL", "LL,LL128", "Simple"]') AS BLOB)`)
	for _, args := range [][]string{{"status"}, {"export", "--out", dir}} {
		code, out, errOut := nccltune(t, dir, args...)
		if code != 0 || !strings.Contains(errOut, "listed twice") || args[0] == "status" && !strings.Contains(out, "PROTO=LL,LL128") {
			t.Errorf("%v: exit %d\n%s\n%s; want its results and the check told", args, code, out, errOut)
		}
	}
}

// TestResumeEndsAsTheRunAsked: a campaign started with --no-simplify and
// --validate-rounds 3, interrupted and resumed, is not simplified and is
// validated in 3 rounds, as its budget is kept; resume forgot both, and
// simplified and validated it in the default 5. A flag given to resume
// overrides the stored one, as --trials does.
func TestResumeEndsAsTheRunAsked(t *testing.T) {
	t.Parallel() // waits on its benchmark's sleeps and signals, not a CPU
	dir := t.TempDir()
	spaceFile := slowSpace(t, dir, 6)
	db := filepath.Join(dir, "nccltune.db")
	cmd := exec.Command(os.Args[0], "run", "-q", "--space", spaceFile, "--no-simplify", "--validate-rounds", "3")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	done := started(t, cmd)
	if exited := waitFor(done, func() bool { f, _ := storeProgress(db); return f >= 2 }); exited != nil {
		t.Fatalf("the run ended before it was interrupted: %v\n%s", *exited, stderr.String())
	}
	cmd.Process.Signal(syscall.SIGINT)
	if err := <-done; err == nil {
		t.Fatalf("the interrupted run exited 0\n%s", stderr.String())
	}
	ended := func(rounds ...int) {
		t.Helper()
		trials, vals := stored(t, db, "slow")
		for _, tr := range trials {
			if !tr.Searched() {
				t.Errorf("trial %d simplified the choices of a campaign run with --no-simplify", tr.Number)
			}
		}
		var got []int
		for _, v := range vals {
			if !slices.Contains(got, v.Rounds) {
				got = append(got, v.Rounds)
			}
		}
		if !slices.Equal(got, rounds) {
			t.Errorf("validated in %v rounds, want %v", got, rounds)
		}
	}
	if code, out, errOut := nccltune(t, dir, "resume", "-q", "--space", spaceFile); code != 0 {
		t.Fatalf("resume: exit %d\n%s\n%s", code, out, errOut)
	}
	ended(3)
	// Fewer rounds than its validation ran ask nothing new; more validate again.
	for _, tc := range []struct {
		rounds string
		want   []int
	}{{"2", []int{3}}, {"4", []int{3, 4}}} {
		if code, out, errOut := nccltune(t, dir, "resume", "-q", "--space", spaceFile, "--validate-rounds", tc.rounds); code != 0 {
			t.Fatalf("resume --validate-rounds %s: exit %d\n%s\n%s", tc.rounds, code, out, errOut)
		}
		ended(tc.want...)
	}
}

// TestResumeUpgradesAnOlderStore: a store of the schema before this
// build's (11, before simplify, validate_rounds, phase, the latest run's
// patience and timeout, the shortest timeout, and a validation run's
// nccl_info) is resumed, as the
// readers' refusal tells its user to do; resume read the campaign through
// a reader first, which refused the older schema, so no resume could
// upgrade it.
func TestResumeUpgradesAnOlderStore(t *testing.T) {
	t.Parallel() // waits on its benchmark's sleeps and signals, not a CPU
	dir := t.TempDir()
	spaceFile := slowSpace(t, dir, 3)
	if code, out, errOut := nccltune(t, dir, "run", "-q", "--space", spaceFile, "--no-simplify", "--no-validate"); code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errOut)
	}
	db, err := sql.Open("sqlite", filepath.Join(dir, "nccltune.db"))
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{"ALTER TABLE trials DROP COLUMN phase", "ALTER TABLE campaigns DROP COLUMN simplify", "ALTER TABLE campaigns DROP COLUMN validate_rounds",
		"ALTER TABLE campaigns DROP COLUMN latest_patience", "ALTER TABLE campaigns DROP COLUMN latest_timeout_ns",
		"ALTER TABLE campaigns DROP COLUMN shortest_timeout_ns", "ALTER TABLE validation_runs DROP COLUMN nccl_info", "PRAGMA user_version = 11"} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	if code, out, errOut := nccltune(t, dir, "status"); code == 0 || !strings.Contains(errOut+out, "nccltune resume") {
		t.Fatalf("status of the older store: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, out, errOut := nccltune(t, dir, "resume", "-q", "--space", spaceFile, "--trials", "4", "--no-simplify", "--no-validate"); code != 0 {
		t.Fatalf("resume of the older store: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, out, errOut := nccltune(t, dir, "status"); code != 0 {
		t.Errorf("status after the resume: exit %d\n%s\n%s", code, out, errOut)
	}
}

// TestFinishedCampaignRunsNothing: `resume` and `run` of a campaign that has
// run its budget and been validated as asked measure nothing (they validated
// it again, every launch of it, and replaced its verdicts), and say so;
// a larger budget, or other validation rounds, still runs
// (TestSmallerBudgetIsRefused: a smaller one is refused).
func TestFinishedCampaignRunsNothing(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "nccltune.db")
	if code, out, errOut := nccltune(t, dir, "run", "--trials", "4", "--validate-rounds", "2"); code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, out, errOut)
	}
	batches := func() int {
		t.Helper()
		_, vals := stored(t, db, "sim-2node-ib")
		seen := map[int64]bool{}
		for _, v := range vals {
			seen[v.Batch] = true
		}
		return len(seen)
	}
	for _, args := range [][]string{{"resume"}, {"run", "--trials", "4", "--validate-rounds", "2"}} {
		code, out, errOut := nccltune(t, dir, args...)
		if code != 0 || !strings.Contains(errOut, "nothing to run") || strings.Contains(errOut, "validation 1/") || !strings.Contains(out, "4 of 4 trials finished") {
			t.Errorf("%v of a finished campaign: exit %d\n%s%s", args, code, out, errOut)
		}
	}
	if n := batches(); n != 1 {
		t.Errorf("%d validations after running the finished campaign again, want 1", n)
	}
	if code, out, errOut := nccltune(t, dir, "resume", "--validate-rounds", "3"); code != 0 || strings.Contains(errOut, "nothing to run") {
		t.Errorf("resume --validate-rounds 3: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := nccltune(t, dir, "resume", "--trials", "5"); code != 0 || strings.Contains(errOut, "nothing to run") || !strings.Contains(out, "5 of 5 trials finished") {
		t.Errorf("resume --trials 5: exit %d\n%s%s", code, out, errOut)
	}
	if n := batches(); n != 3 {
		t.Errorf("%d validations after resuming with other rounds and a larger budget, want 3", n)
	}
}

// TestRaisedBudgetRunsTheSearchOn: `resume --trials 6` of a finished
// campaign of 4 runs 2 more search trials, numbered past its
// simplification's, and status counts 6 of 6; resumed again, it runs
// nothing. Its simplification trials, numbered from 4, had counted as the
// search's under the new budget: it ran no search trial, and status said
// "6 of 6 trials finished".
func TestRaisedBudgetRunsTheSearchOn(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "nccltune.db")
	trials := func() []store.Trial {
		t.Helper()
		ts, _ := stored(t, db, "sim-2node-ib")
		return ts
	}
	ranCampaign(t, dir, "-q", "--trials", "4", "--no-validate")
	before := trials()
	last := before[len(before)-1].Number
	if last < 4 {
		t.Fatalf("the 4-trial campaign ran no simplification trial; the test needs one")
	}
	code, out, errOut := nccltune(t, dir, "resume", "-q", "--trials", "6")
	if code != 0 || !strings.Contains(out, "6 of 6 trials finished") {
		t.Fatalf("resume --trials 6: exit %d\n%s%s", code, out, errOut)
	}
	after := trials()
	var added []int
	for _, tr := range after {
		if tr.Searched() && tr.Number >= 4 {
			added = append(added, tr.Number)
		}
	}
	if want := []int{last + 1, last + 2}; !slices.Equal(added, want) {
		t.Errorf("resume --trials 6 ran search trials %v, want %v", added, want)
	}
	code, out, errOut = nccltune(t, dir, "status", "--json")
	var st struct {
		Search struct {
			Total   int            `json:"total"`
			ByState map[string]int `json:"by_state"`
		} `json:"search"`
		Simplification int `json:"simplification"`
	}
	if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil || st.Search.Total != 6 ||
		st.Search.ByState["complete"]+st.Search.ByState["failed"] != 6 || st.Simplification != len(after)-6 {
		t.Errorf("status --json after resume --trials 6: %+v (%v), want 6 search trials and %d others\n%s", st, err, len(after)-6, errOut)
	}
	if code, out, errOut := nccltune(t, dir, "resume", "-q"); code != 0 || !strings.Contains(out, "6 of 6 trials finished") || len(trials()) != len(after) {
		t.Errorf("resume of the raised campaign: exit %d, %d trials after %d\n%s%s", code, len(trials()), len(after), out, errOut)
	}
}

// TestResumeTheChangedSpacesCampaign: the campaign that run
// --allow-space-change made of a changed space (NAME-2) resumes and
// validates by its own name, as `status` names it; they took the stored
// space's campaign.name, NAME, whose campaign ran the space before the
// change, and refused it as changed.
func TestResumeTheChangedSpacesCampaign(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile("../../examples/sim-2node-ib.toml")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "space.toml")
	for i, args := range [][]string{{}, {"--allow-space-change"}} {
		if i > 0 {
			src = bytes.Replace(src, []byte("max = 32"), []byte("max = 16"), 1)
		}
		if err := os.WriteFile(file, src, 0o644); err != nil {
			t.Fatal(err)
		}
		run := append([]string{"run", "-q", "--space", file, "--trials", "4", "--no-simplify", "--no-validate"}, args...)
		if code, out, errOut := nccltune(t, dir, run...); code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", run, code, out, errOut)
		}
	}
	for _, args := range [][]string{
		{"resume", "-q", "--campaign", "sim-2node-ib-2", "--trials", "5"},
		{"validate", "-q", "--campaign", "sim-2node-ib-2", "--rounds", "2"},
	} {
		if code, out, errOut := nccltune(t, dir, args...); code != 0 {
			t.Errorf("%v: exit %d\n%s%s", args, code, out, errOut)
		}
	}
	trials, vals := stored(t, filepath.Join(dir, "nccltune.db"), "sim-2node-ib-2")
	if n := len(slices.DeleteFunc(trials, func(tr store.Trial) bool { return !tr.Searched() })); n != 5 || len(vals) == 0 {
		t.Errorf("sim-2node-ib-2: %d search trials, %d verdicts; want 5 and some", n, len(vals))
	}
	if trials, _ := stored(t, filepath.Join(dir, "nccltune.db"), "sim-2node-ib"); len(trials) != 4 {
		t.Errorf("sim-2node-ib, of the space before the change: %d trials, want its 4", len(trials))
	}
}

// TestResumeTheChangedScalesCampaign: run --allow-space-change runs a
// changed space of campaign.scales as NAME@2n-2, NAME@4n-2; resuming one
// resumes those scales, and ran into NAME@2n, the scale of the space before
// the change, refused as changed.
func TestResumeTheChangedScalesCampaign(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile("../../examples/sim-scales-ib.toml")
	if err != nil {
		t.Fatal(err)
	}
	src = bytes.Replace(src, []byte("scales = [2, 4, 8]"), []byte("scales = [2, 4]"), 1)
	file := filepath.Join(dir, "space.toml")
	for i, args := range [][]string{{}, {"--allow-space-change"}} {
		if i > 0 {
			src = bytes.Replace(src, []byte(`max = "64M"`), []byte(`max = "16M"`), 1)
		}
		if err := os.WriteFile(file, src, 0o644); err != nil {
			t.Fatal(err)
		}
		run := append([]string{"run", "-q", "--space", file, "--trials", "4", "--no-simplify", "--no-validate"}, args...)
		if code, out, errOut := nccltune(t, dir, run...); code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", run, code, out, errOut)
		}
	}
	args := []string{"resume", "-q", "--campaign", "sim-scales-ib@4n-2", "--trials", "5"}
	if code, out, errOut := nccltune(t, dir, args...); code != 0 {
		t.Errorf("%v: exit %d\n%s%s", args, code, out, errOut)
	}
	for name, want := range map[string]int{"sim-scales-ib@2n": 4, "sim-scales-ib@4n": 4, "sim-scales-ib@2n-2": 5, "sim-scales-ib@4n-2": 5} {
		trials, _ := stored(t, filepath.Join(dir, "nccltune.db"), name)
		if n := len(slices.DeleteFunc(trials, func(tr store.Trial) bool { return !tr.Searched() })); n != want {
			t.Errorf("%s: %d search trials, want %d", name, n, want)
		}
	}
}

// TestStatusJSONCountsTheBudgetsTrials: a trial interrupted and run again
// under its number is one trial of the budget. status --json's search.total
// counted both records: a 6-trial campaign stopped once and finished said
// 7 of 6, and one stopped twice with 4 finished said 6 of 6, which a script
// waiting for search.total to reach the budget took for done.
func TestStatusJSONCountsTheBudgetsTrials(t *testing.T) {
	t.Parallel() // waits on its benchmark's sleeps and signals, not a CPU
	dir := t.TempDir()
	spaceFile := slowSpace(t, dir, 6)
	cmd := exec.Command(os.Args[0], "run", "-q", "--no-simplify", "--no-validate", "--space", spaceFile)
	done, _ := startHeld(t, dir, cmd)
	cmd.Process.Signal(syscall.SIGTERM)
	<-done
	var st struct {
		Budget int
		Search struct {
			Total   int            `json:"total"`
			ByState map[string]int `json:"by_state"`
		} `json:"search"`
	}
	status := func() {
		t.Helper()
		code, o, errOut := nccltune(t, dir, "status", "--json")
		if err := json.Unmarshal([]byte(o), &st); code != 0 || err != nil {
			t.Fatalf("status --json: %d, %v\n%s%s", code, err, o, errOut)
		}
	}
	status()
	if finished := st.Search.ByState["complete"] + st.Search.ByState["failed"]; st.Search.ByState["interrupted"] != 1 || st.Search.Total != finished {
		t.Errorf("stopped: search %+v, want 1 interrupted and a total of the %d finished", st.Search, finished)
	}
	if code, o, errOut := nccltune(t, dir, "resume", "-q", "--space", spaceFile); code != 0 {
		t.Fatalf("resume: %d\n%s%s", code, o, errOut)
	}
	status()
	if st.Search.Total != 6 || st.Budget != 6 || st.Search.ByState["interrupted"] != 1 {
		t.Errorf("finished: budget %d, search %+v, want a total of 6 and the interrupted record by state", st.Budget, st.Search)
	}
}

// TestStoreLockedByAnotherProgram: a store another program holds SQLite's
// locks on (a sqlite3 shell with a transaction open, or in exclusive
// locking mode) stops a writer, and a reader, with an error that says so
// and that the same command goes on: it said "database is locked (5)
// (SQLITE_BUSY)", which reads as another nccltune run (whose lock nccltune
// tells by its pid), "not a readable SQLite database", or "read lock:
// resource temporarily unavailable".
func TestStoreLockedByAnotherProgram(t *testing.T) {
	t.Parallel() // each command waits out the store's busy timeout, not a CPU
	for _, tc := range []struct {
		name, hold string
		commands   [][]string
		interrupt  bool // Ctrl-C as the command waits
	}{
		{"open transaction", "BEGIN; DELETE FROM writer", [][]string{{"resume", "-q", "--trials", "5"}}, false},
		{"exclusive mode", "PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE; SELECT count(*) FROM trials", [][]string{{"status"}, {"resume", "-q", "--trials", "5"}}, false},
		// It exited 1: a script took the user's Ctrl-C for a failure.
		{"interrupted", "BEGIN; DELETE FROM writer", [][]string{{"resume", "-q", "--trials", "5"}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := smallCampaign(t)
			db, err := sql.Open("sqlite", filepath.Join(dir, "nccltune.db"))
			if err != nil {
				t.Fatal(err)
			}
			db.SetMaxOpenConns(1) // the lock is its connection's
			if _, err := db.Exec(tc.hold); err != nil {
				t.Fatal(err)
			}
			defer func() { db.Exec("ROLLBACK"); db.Close() }()
			var wg sync.WaitGroup
			for _, args := range tc.commands {
				wg.Add(1)
				go func() {
					defer wg.Done()
					want, code, out, errOut := exitFailure, 0, "", ""
					if tc.interrupt {
						want = exitInterrupted
						code, out, errOut = interruptedAfter(t, dir, 3*time.Second, args...)
					} else {
						code, out, errOut = nccltune(t, dir, args...)
					}
					if code != want || !strings.Contains(errOut, "another program") || !strings.Contains(errOut, "goes on") || strings.Contains(errOut, "not a readable") {
						t.Errorf("%s of a store another program holds (%s): exit %d\n%s%s", args[0], tc.hold, code, out, errOut)
					}
				}()
			}
			wg.Wait()
		})
	}
}

// interruptedAfter runs nccltune with args in dir and sends it SIGINT
// after d (past its start-up, when its handler is in place).
func interruptedAfter(t *testing.T, dir string, d time.Duration, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(d, func() { cmd.Process.Signal(syscall.SIGINT) })
	defer timer.Stop()
	err := cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}
