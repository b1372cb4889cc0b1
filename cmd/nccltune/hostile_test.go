package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rivo/uniseg"

	"github.com/nccltune/nccltune/examples"
	"github.com/nccltune/nccltune/export"
	"github.com/nccltune/nccltune/internal/text"
	"github.com/nccltune/nccltune/space"
	_ "modernc.org/sqlite"
)

// shells are the POSIX shells a user's launch script may run in.
func shells() [][]string {
	out := [][]string{{"bash", "-c"}, {"bash", "--posix", "-c"}}
	for _, sh := range [][]string{{"dash", "-c"}, {"busybox", "sh", "-c"}, {"zsh", "-c"}} {
		if _, err := exec.LookPath(sh[0]); err == nil {
			out = append(out, sh)
		}
	}
	return out
}

// TestTamperedStoreExportsNothingThatRuns alters a finished campaign's store
// as an attacker with write access to it would, and checks that no exported
// file runs anything when its consumer reads it, and that settings the space
// never searched are refused rather than exported.
func TestTamperedStoreExportsNothingThatRuns(t *testing.T) {
	dir := t.TempDir()
	ranCampaign(t, dir, "-q", "--trials", "6", "--validate-rounds", "2")
	db := filepath.Join(dir, "nccltune.db")
	tamper(t, db,
		`UPDATE campaigns SET name = 'c' || char(10) || 'touch PWNED1 #', space_hash = 'h' || char(13) || char(10) || '$(touch PWNED2)'`,
		`UPDATE validations SET reason = 'x' || char(10) || 'touch PWNED3' || char(8232) || 'touch PWNED4'`,
		`UPDATE trials SET fingerprint = json_set(fingerprint, '$.gpu', 'H100' || char(10) || 'touch PWNED5' || char(27) || '[2J')`,
		`UPDATE trials SET output = output || char(27) || ']52;c;cm0gLXJmIH4=' || char(7) || char(13), failure_reason = char(27) || '[2J'`)
	for _, args := range [][]string{{"status"}, {"show", "--output", "0"}, {"report", "--out", "plots"}} {
		if _, stdout, errOut := nccltune(t, dir, args...); strings.ContainsAny(stdout+errOut, "\r\x1b\u2028") {
			t.Errorf("%v prints the store's control characters:\n%q", args, stdout)
		}
	}
	out := filepath.Join(dir, "out")
	if code, _, errOut := nccltune(t, dir, "export", "--format", "plugin", "--out", out, "--plugin", "/opt/x.so"); code != 0 {
		t.Fatalf("plugin export: %d %s", code, errOut)
	}
	for _, f := range export.Formats {
		if code, _, errOut := nccltune(t, dir, "export", "--format", f, "--out", out); code != 0 && f != "slurm" && f != "job" {
			t.Fatalf("export %s: %d %s", f, code, errOut)
		}
	}
	files, _ := filepath.Glob(filepath.Join(out, "*"))
	if len(files) < 10 {
		t.Fatalf("exported only %v", files)
	}
	// A fake torchrun shows what the wrapper hands on.
	bin := filepath.Join(dir, "bin")
	os.Mkdir(bin, 0o755)
	os.WriteFile(filepath.Join(bin, "torchrun"), []byte("#!/bin/sh\nenv | grep ^NCCL_ | sort\n"), 0o755)
	for _, f := range files {
		data, _ := os.ReadFile(f)
		if strings.ContainsAny(strings.ReplaceAll(string(data), "\n", ""), "\r\x1b\u2028") || strings.Contains(string(data), "\ntouch") {
			t.Errorf("%s holds a control character or a command line:\n%s", f, data)
		}
		var script string
		switch {
		case strings.HasSuffix(f, ".env") || strings.HasSuffix(f, ".slurm"):
			script = ". " + f
		case strings.HasSuffix(f, ".dotenv"):
			script = "set -a; . " + f + "; set +a"
		case strings.HasSuffix(f, ".torchrun.sh"):
			script = f + " --nproc-per-node 1 train.py"
		default:
			continue
		}
		for _, sh := range shells() {
			cmd := exec.Command(sh[0], append(sh[1:], script)...)
			cmd.Dir, cmd.Env = dir, append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("%v %s: %v\n%s", sh, script, err, out)
			}
		}
	}
	if pwned, _ := filepath.Glob(filepath.Join(dir, "PWNED*")); len(pwned) > 0 {
		t.Errorf("reading the exports ran commands: %v", pwned)
	}

	// Settings the space does not search, or an environment that is not what
	// the settings give, are the store's word alone: refused.
	for _, stmt := range []string{
		`UPDATE trials SET params = json_set(params, '$.NCCL_NET_PLUGIN', '/tmp/evil.so')`,
		`UPDATE trials SET env = json_insert(env, '$[#]', 'NCCL_DEBUG_FILE=/tmp/nccl.log')`,
		`UPDATE trials SET params = json_set(params, '$.NCCL_ALGO', 'Ring;touch PWNED')`,
	} {
		altered := t.TempDir()
		copyFile(t, db, filepath.Join(altered, "nccltune.db"))
		tamper(t, filepath.Join(altered, "nccltune.db"), stmt)
		for _, f := range []string{"env", "plugin", "json"} {
			code, stdout, errOut := nccltune(t, altered, "export", "--format", f, "--out", "x")
			if code != 1 || !strings.Contains(errOut, "the store was altered") || strings.Contains(stdout, "nccl-large") {
				t.Errorf("%s after %s: exit %d\n%s%s", f, stmt, code, stdout, errOut)
			}
		}
	}
}

func tamper(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestNothingOutlivesNCCLTune stops a campaign whose benchmark ignores
// SIGTERM and leaves a daemon (setsid) behind, by two Ctrl-Cs and by kill -9:
// every process of the trial ends with nccltune.
func TestNothingOutlivesNCCLTune(t *testing.T) {
	t.Parallel() // waits on its benchmark's sleeps and signals, not a CPU
	for _, stop := range []struct {
		name string
		sigs []syscall.Signal
	}{{"second ctrl-c", []syscall.Signal{syscall.SIGINT, syscall.SIGINT}}, {"kill -9", []syscall.Signal{syscall.SIGKILL}}} {
		t.Run(stop.name, func(t *testing.T) {
			t.Parallel() // each waits out the runner's grace
			dir := t.TempDir()
			cmd, pids := startStubborn(t, dir, nil)
			for _, sig := range stop.sigs {
				cmd.Process.Signal(sig)
				time.Sleep(100 * time.Millisecond)
			}
			cmd.Wait()
			waitGone(t, pids)
		})
	}
}

// TestStopWaitEndsAStuckStop: one Ctrl-C to a campaign that cannot stop
// cleanly within stopWait (its benchmark ignores SIGTERM for the runner's
// 5 s grace, longer than the 1 s stopWait here) ends nccltune when stopWait
// is up, with the interrupted exit code, and the trial's processes end too.
func TestStopWaitEndsAStuckStop(t *testing.T) {
	t.Parallel() // waits on its benchmark's sleeps and signals, not a CPU
	dir := t.TempDir()
	var stderr strings.Builder
	cmd, pids := startStubborn(t, dir, &stderr, "NCCLTUNE_TEST_STOP_WAIT=1s")
	start := time.Now()
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitInterrupted {
		t.Fatalf("exit: %v, want %d\n%s", err, exitInterrupted, stderr.String())
	}
	if !strings.Contains(stderr.String(), "not stopped 1s after the signal") {
		t.Errorf("no word of the forced exit:\n%s", stderr.String())
	}
	if took := time.Since(start); took > 4*time.Second {
		t.Errorf("nccltune ended %s after the signal, not when its 1 s stopWait was up", took)
	}
	waitGone(t, pids)
}

// startStubborn starts a campaign, in dir with env added and its standard
// error to stderr, whose benchmark
// ignores SIGTERM and SIGINT and leaves a daemon (setsid) behind, and
// returns it and the pids of the benchmark and the daemon once both run.
func startStubborn(t *testing.T, dir string, stderr io.Writer, env ...string) (*exec.Cmd, []int) {
	t.Helper()
	bench := filepath.Join(dir, "stubborn_perf.sh")
	os.WriteFile(bench, []byte(fmt.Sprintf(`#!/bin/sh
trap '' TERM INT
setsid sh -c 'trap "" TERM; echo $$ > %[1]s/daemon.pid; exec sleep 300' </dev/null >/dev/null 2>&1 &
echo $$ > %[1]s/bench.pid
exec sleep 300
`, dir)), 0o755)
	spaceFile := filepath.Join(dir, "space.toml")
	os.WriteFile(spaceFile, []byte("[benchmark]\nbinary = \""+bench+"\"\n[[param]]\nname = \"NCCL_ALGO\"\nvalues = [\"Ring\", \"Tree\"]\n"), 0o644)
	cmd := exec.Command(os.Args[0], "run", "-q", "--space", spaceFile)
	cmd.Dir, cmd.Env, cmd.Stderr = dir, append(os.Environ(), env...), stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Whatever the test's outcome, nothing it started outlives it, and a
	// campaign that never ends fails the test instead of hanging it.
	hang := time.AfterFunc(30*time.Second, func() { cmd.Process.Kill() })
	t.Cleanup(func() { hang.Stop(); cmd.Process.Kill() })
	pids := waitPids(t, dir, "bench.pid", "daemon.pid")
	t.Cleanup(func() {
		// Only after a failure: after a pass they are gone and their pids free for others.
		for _, pid := range pids {
			if t.Failed() && alive(pid) {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	return cmd, pids
}

// waitGone fails the test if any of pids outlives the runner's grace (5 s) and some.
func waitGone(t *testing.T, pids []int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range pids {
		for alive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("process %d of the trial outlived nccltune", pid) // startStubborn's cleanup kills it
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// waitPids waits for the benchmark to write the pid files, and reads them.
func waitPids(t *testing.T, dir string, names ...string) []int {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var pids []int
	for _, name := range names {
		for {
			data, _ := os.ReadFile(filepath.Join(dir, name))
			if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil {
				pids = append(pids, pid)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never appeared", name)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return pids
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(stat)
	return !strings.HasPrefix(strings.TrimSpace(s[strings.LastIndexByte(s, ')')+1:]), "Z")
}

// TestTamperedStoreStartsNothing swaps a finished campaign's stored space for
// one naming a program (and recomputes its hash, as an attacker would):
// validate, resume and compare refuse to start it without the user's own
// space file (compare, reading the stored space, ran the program), and
// validate and resume with that file refuse the campaign as another one.
func TestTamperedStoreStartsNothing(t *testing.T) {
	dir := t.TempDir()
	data, err := examples.Files.ReadFile(examples.Default)
	if err != nil {
		t.Fatal(err)
	}
	own := filepath.Join(dir, "space.toml")
	os.WriteFile(own, data, 0o644)
	if code, out, errOut := nccltune(t, dir, "run", "-q", "--space", own, "--trials", "4", "--no-validate"); code != 0 {
		t.Fatalf("run: %d\n%s%s", code, out, errOut)
	}
	evil := filepath.Join(dir, "evil.sh")
	os.WriteFile(evil, []byte("#!/bin/sh\ntouch "+filepath.Join(dir, "PWNED")+"\n"), 0o755)
	text := string(data)
	sim := strings.Index(text, "\n[simulator]")
	end := sim + 1 + strings.Index(text[sim+1:], "\n[")
	text = text[:sim] + text[end:]
	text = strings.Replace(text, "[benchmark]\n", "[benchmark]\nbinary = \""+evil+"\"\n", 1)
	sp, err := space.Parse("tampered", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "nccltune.db")
	tamper(t, db, fmt.Sprintf(`UPDATE campaigns SET space = CAST(x'%x' AS BLOB), space_hash = '%s'`, text, sp.Hash()))
	for _, name := range []string{"a.env", "b.env"} {
		os.WriteFile(filepath.Join(dir, name), []byte("NCCL_ALGO=Ring\n"), 0o644)
	}
	for _, args := range [][]string{
		{"compare", "--rounds", "2", "a.env", "b.env"},
		{"validate", "-q", "--rounds", "2"},
		{"resume", "-q", "--trials", "6", "--no-validate"},
		{"validate", "-q", "--rounds", "2", "--space", own},
		{"resume", "-q", "--trials", "6", "--no-validate", "--space", own},
	} {
		code, _, errOut := nccltune(t, dir, args...)
		if code == 0 || !strings.Contains(errOut, "space") {
			t.Errorf("%v on a tampered store: exit %d: %s", args, code, errOut)
		}
		if _, err := os.Stat(filepath.Join(dir, "PWNED")); err == nil {
			t.Fatalf("%v ran the program the store named", args)
		}
	}
}

// TestTamperedStoreExportsNoPlugin pins plugins and files in a finished
// campaign's stored space and in its trials' environments, consistently, as
// an attacker would: no export writes them, and export says it left them out.
func TestTamperedStoreExportsNoPlugin(t *testing.T) {
	dir := t.TempDir()
	ranCampaign(t, dir, "-q", "--trials", "6", "--validate-rounds", "2")
	added := []string{"NCCL_NET_PLUGIN=/tmp/evil.so", "NCCL_TUNER_PLUGIN=/tmp/evil2.so", "NCCL_TOPO_DUMP_FILE=/tmp/overwritten"}
	db, err := sql.Open("sqlite", filepath.Join(dir, "nccltune.db"))
	if err != nil {
		t.Fatal(err)
	}
	var text string
	if err := db.QueryRow(`SELECT space FROM campaigns`).Scan(&text); err != nil {
		t.Fatal(err)
	}
	var pins string
	for _, kv := range added {
		k, v, _ := strings.Cut(kv, "=")
		pins += fmt.Sprintf("%s = %q\n", k, v)
	}
	text = strings.Replace(text, "[fixed]\n", "[fixed]\n"+pins, 1)
	sp, err := space.Parse("tampered", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE campaigns SET space = ?, space_hash = ?`, []byte(text), sp.Hash()); err != nil {
		t.Fatal(err)
	}
	rows, err := db.Query(`SELECT id, params FROM trials`)
	if err != nil {
		t.Fatal(err)
	}
	envs := map[int64]string{}
	for rows.Next() {
		var id int64
		var params string
		rows.Scan(&id, &params)
		var a space.Assignment
		json.Unmarshal([]byte(params), &a)
		env, _ := json.Marshal(sp.Env(a))
		envs[id] = string(env)
	}
	rows.Close()
	for id, env := range envs {
		if _, err := db.Exec(`UPDATE trials SET env = ? WHERE id = ?`, env, id); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	out := filepath.Join(dir, "out")
	for _, f := range []string{"env", "dotenv", "json", "torchrun", "plugin", "tuner-csv"} {
		code, _, errOut := nccltune(t, dir, "export", "--format", f, "--out", out)
		if code != 0 {
			t.Fatalf("export %s: %d %s", f, code, errOut)
		}
		if !strings.Contains(errOut, "leaving out NCCL_NET_PLUGIN, NCCL_TOPO_DUMP_FILE, NCCL_TUNER_PLUGIN") {
			t.Errorf("export %s does not say what it left out: %s", f, errOut)
		}
	}
	files, _ := filepath.Glob(filepath.Join(out, "*"))
	for _, f := range files {
		data, _ := os.ReadFile(f)
		for _, kv := range added {
			if strings.Contains(string(data), kv[strings.Index(kv, "=")+1:]) {
				t.Errorf("%s exports %s from the store", f, kv)
			}
		}
	}
	if len(files) < 5 {
		t.Fatalf("exported only %v", files)
	}
}

// TestTamperedNumbersAreRefused: a trial renumbered -1 is a clear error for
// every command that reads the store, not a panic nor a spin.
func TestTamperedNumbersAreRefused(t *testing.T) {
	dir := t.TempDir()
	ranCampaign(t, dir, "-q", "--trials", "4", "--no-validate")
	tamper(t, filepath.Join(dir, "nccltune.db"), `UPDATE trials SET number = -1 WHERE number = 0`)
	for _, args := range [][]string{{"status"}, {"report", "--out", "r"}, {"validate", "-q", "--rounds", "2"}, {"resume", "-q", "--trials", "14"}, {"export"}} {
		code, _, errOut := nccltune(t, dir, args...)
		if code == 0 || strings.Contains(errOut, "panic") || !strings.Contains(errOut, "edited or damaged") {
			t.Errorf("%v: exit %d: %s", args, code, errOut)
		}
	}
}

// TestTamperedStoreErrorsDriveNoTerminal: what the store says reaches the
// terminal escaped on standard error too, where the errors and warnings
// that quote it go (a campaign's name leads a stored space's error and its
// failed checks).
func TestTamperedStoreErrorsDriveNoTerminal(t *testing.T) {
	dir := t.TempDir()
	ranCampaign(t, dir, "-q", "--trials", "4", "--no-validate")
	for _, c := range []struct{ name, space string }{
		{"unparseable", `'[not toml'`}, // an error
		{"failing checks", `''`},       // a warning: the checks it fails
	} {
		db := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".db")
		copyFile(t, filepath.Join(dir, "nccltune.db"), db)
		tamper(t, db, `UPDATE campaigns SET name = char(27) || ']0;pwned' || char(7) || char(27) || '[2J', space = `+c.space)
		for _, args := range [][]string{{"status"}, {"status", "--json"}, {"report", "--out", "r"}, {"export", "--out", "x"}} {
			code, _, errOut := nccltune(t, dir, append(args, "--store", db)...)
			if strings.ContainsAny(errOut, "\x1b\a") || errOut == "" || strings.Contains(errOut, "panic") {
				t.Errorf("%s: %v: exit %d, standard error %q", c.name, args, code, errOut)
			}
		}
	}
}

// TestAnotherUsersWriterLeavesNoLog: on a shared folder (1777), another
// user's run, resume or validate on a store it may not write is refused
// with the reason and leaves no -wal or -shm of its own, which the owner's
// next campaign could not write ("attempt to write a readonly database").
// Needs root, to run as two other users.
func TestAnotherUsersWriterLeavesNoLog(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run as other users")
	}
	const owner, intruder = 65534, 1 // nobody, daemon
	// A folder and a test binary every user can reach (t.TempDir is 0700).
	dir, err := os.MkdirTemp("", "shared")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := filepath.Join(dir, "nccltune.test")
	copyFile(t, os.Args[0], bin)
	if err := errors.Join(os.Chmod(bin, 0o755), os.Chmod(dir, 0o1777)); err != nil {
		t.Fatal(err)
	}
	as := func(uid uint32, args ...string) (int, string) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	if code, out := as(owner, "run", "-q", "--trials", "4", "--no-validate"); code != 0 {
		t.Fatalf("owner's run: %d %s", code, out)
	}
	db := filepath.Join(dir, "nccltune.db")
	for _, args := range [][]string{{"run", "-q", "--trials", "6", "--no-validate"}, {"resume", "-q", "--trials", "6", "--no-validate"}, {"validate", "-q", "--rounds", "2"}} {
		if code, out := as(intruder, args...); code != 1 || !strings.Contains(out, "store nccltune.db cannot be written") {
			t.Errorf("another user's %v: exit %d: %s", args, code, out)
		}
		for _, log := range []string{"-wal", "-shm"} {
			if fi, err := os.Stat(db + log); err == nil && fi.Sys().(*syscall.Stat_t).Uid != owner {
				t.Errorf("another user's %v left nccltune.db%s", args, log)
			}
		}
	}
	if code, out := as(owner, "resume", "-q", "--trials", "6", "--no-validate"); code != 0 {
		t.Errorf("the owner's resume after another user's: %d %s", code, out)
	}
	// The owner's store in a folder it may not write: SQLite cannot make
	// the log; the store is readable, and is not called damaged.
	locked := filepath.Join(dir, "locked")
	if err := os.Mkdir(locked, 0o755); err != nil {
		t.Fatal(err)
	}
	copyFile(t, db, filepath.Join(locked, "nccltune.db"))
	if err := os.Chown(filepath.Join(locked, "nccltune.db"), owner, owner); err != nil {
		t.Fatal(err)
	}
	if code, out := as(owner, "resume", "-q", "--store", "locked/nccltune.db"); code != 1 || !strings.Contains(out, "write access to the file and to its folder") {
		t.Errorf("the owner's resume in a folder it may not write: exit %d: %s", code, out)
	}
}

// TestLostOutputIsAFailure: a command whose output could not be written (a
// full disk under `nccltune show 3 > file`) exits 1 with the reason, not 0.
func TestLostOutputIsAFailure(t *testing.T) {
	dir := t.TempDir()
	ranCampaign(t, dir, "-q", "--trials", "4", "--no-validate")
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skip(err)
	}
	defer full.Close()
	for _, args := range [][]string{{"show", "2"}, {"show", "--output", "2"}, {"show", "--json", "2"}, {"status"}, {"status", "--json"}} {
		var errOut strings.Builder
		cmd := exec.Command(os.Args[0], args...)
		cmd.Dir, cmd.Stdout, cmd.Stderr = dir, full, &errOut
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(errOut.String(), "no space left") {
			t.Errorf("%v to a full disk: %v %s", args, err, errOut.String())
		}
	}
}

// TestTamperedSettingsRunNothing: validate and resume launch no benchmark
// with a setting the store names and the space does not offer: a variable
// it does not search (NCCL_NET_PLUGIN, whose library NCCL would load) or a
// value outside a parameter's. Both refuse the store as altered (validate
// ran the chosen trial's stored settings, plugin included).
func TestTamperedSettingsRunNothing(t *testing.T) {
	dir := t.TempDir()
	ranCampaign(t, dir, "-q", "--trials", "4", "--no-validate")
	counts := func(db string) (runs, trials int) {
		t.Helper()
		sdb, err := sql.Open("sqlite", db)
		if err != nil {
			t.Fatal(err)
		}
		defer sdb.Close()
		if err := sdb.QueryRow(`SELECT (SELECT count(*) FROM validation_runs), (SELECT count(*) FROM trials)`).Scan(&runs, &trials); err != nil {
			t.Fatal(err)
		}
		return runs, trials
	}
	_, ran := counts(filepath.Join(dir, "nccltune.db"))
	for _, set := range []string{`'$.NCCL_NET_PLUGIN', '/tmp/evil.so'`, `'$.NCCL_ALGO', 'Bogus'`} {
		db := filepath.Join(dir, "t.db")
		copyFile(t, filepath.Join(dir, "nccltune.db"), db)
		tamper(t, db, `UPDATE trials SET params = json_set(params, `+set+`)`)
		for _, args := range [][]string{{"validate", "-q", "--rounds", "2"}, {"resume", "-q", "--trials", "8", "--no-validate"}} {
			code, _, errOut := nccltune(t, dir, append(args, "--store", db)...)
			if code != 1 || !strings.Contains(errOut, "the store was altered") {
				t.Errorf("%v after setting %s: exit %d: %s", args, set, code, errOut)
			}
		}
		if runs, trials := counts(db); runs != 0 || trials != ran {
			t.Errorf("after setting %s: %d validation runs and %d trials launched", set, runs, trials-ran)
		}
	}
}

// TestTamperedRangeNamesDriveNoTerminal: report's importance lines quoted
// a stored range's name raw (an escape sequence reached the terminal) and
// aligned the lines by the name's runes, not by the columns it takes
// (a name in Chinese pushed its line's importances left of the others').
func TestTamperedRangeNamesDriveNoTerminal(t *testing.T) {
	dir := t.TempDir()
	ranCampaign(t, dir, "-q", "--trials", "8", "--no-simplify", "--no-validate")
	const name = "sm\x1b[2J中文"
	tamper(t, filepath.Join(dir, "nccltune.db"),
		`UPDATE campaigns SET space = CAST(replace(CAST(space AS TEXT), 'name = "small"', 'name = "sm\u001b[2J中文"') AS BLOB)`,
		`UPDATE trials SET scores = replace(scores, '"small":', '"sm\u001b[2J中文":')`)
	code, out, errOut := nccltune(t, dir, "report", "--out", "r")
	if code != 0 || strings.ContainsRune(out, '\x1b') || !strings.Contains(out, text.Clean(name)) {
		t.Fatalf("report: exit %d, standard output %q\n%s", code, out, errOut)
	}
	_, imp, _ := strings.Cut(out, "what matters most")
	var columns []int
	for i, line := range strings.Split(imp, "\n")[1:4] {
		rest, ok := strings.CutPrefix(line, "  "+[]string{text.Clean(name), "medium", "large"}[i])
		if !ok {
			t.Fatalf("importance line %q", line)
		}
		columns = append(columns, uniseg.StringWidth(line)-uniseg.StringWidth(strings.TrimLeft(rest, " ")))
	}
	if columns[0] != columns[1] || columns[1] != columns[2] {
		t.Errorf("importance columns %v, not aligned:\n%s", columns, imp)
	}
}

// TestTamperedNamesKeepTheTables: a stored range's name holding a tab or
// a newline split its table cell, as a column or a line of its own, in
// status's and report's tables: the rows after it stood out of line, and
// the importance line of the range began with part of its name. The name
// is one cell, escaped.
func TestTamperedNamesKeepTheTables(t *testing.T) {
	dir := t.TempDir()
	ranCampaign(t, dir, "-q", "--trials", "8", "--no-simplify", "--no-validate")
	tamper(t, filepath.Join(dir, "nccltune.db"),
		`UPDATE campaigns SET space = CAST(replace(CAST(space AS TEXT), 'name = "small"', 'name = "sm\tall\nX"') AS BLOB)`,
		`UPDATE trials SET scores = replace(scores, '"small":', '"sm\tall\nX":')`)
	for _, args := range [][]string{{"status"}, {"report", "--out", "r"}} {
		code, out, errOut := nccltune(t, dir, args...)
		if code != 0 || strings.Contains(out, "\t") || !strings.Contains(out, `sm\u0009all\u000aX`) {
			t.Errorf("%v: exit %d, standard output %q\n%s", args, code, out, errOut)
			continue
		}
		// Each table's rows: the header's line, then one line per range.
		lines := strings.Split(out, "\n")
		header := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, "chosen settings") })
		if header < 0 || !strings.Contains(lines[header+1], "8-64K") || !strings.Contains(lines[header+2], "medium") {
			t.Errorf("%v: the table's rows are split:\n%s", args, out)
		}
		if imp := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "what matters most") }); imp >= 0 &&
			(!strings.HasPrefix(lines[imp+1], `  sm\u0009all\u000aX `) || !strings.HasPrefix(lines[imp+2], "  medium ")) {
			t.Errorf("%v: the importance lines are split:\n%s", args, out)
		}
	}
}

// TestOutputsNeverReplaceTheStore: an export or a report whose --out holds
// the store under a name it writes (a link to it, or the store itself, as
// nccl-small.env) is refused, and the campaign is kept: each wrote its file
// over the store, the campaign lost.
func TestOutputsNeverReplaceTheStore(t *testing.T) {
	dir := t.TempDir()
	ranCampaign(t, dir, "-q", "--trials", "4", "--no-simplify", "--no-validate")
	want, err := os.ReadFile(filepath.Join(dir, "nccltune.db"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, store string
		args        []string
	}{
		{"nccl-small.env", "out/nccl-small.env", []string{"export", "--out", "out"}},
		{"nccl-tuned.json", "nccltune.db", []string{"export", "--format", "json", "--out", "out"}},
		{"busbw.png", "out/busbw.png", []string{"report", "--out", "out"}},
		{"convergence.png", "nccltune.db", []string{"report", "--out", "out"}},
	} {
		out := filepath.Join(dir, "out")
		os.RemoveAll(out)
		os.Mkdir(out, 0o755)
		os.WriteFile(filepath.Join(dir, "nccltune.db"), want, 0o644)
		store := filepath.Join(dir, tc.store)
		if tc.store == "nccltune.db" { // a link to it
			os.Symlink(store, filepath.Join(out, tc.name))
		} else {
			os.Rename(filepath.Join(dir, "nccltune.db"), store)
		}
		code, _, errOut := nccltune(t, dir, append(tc.args, "--store", tc.store)...)
		got, _ := os.ReadFile(store)
		if code != 1 || !bytes.Equal(got, want) || !strings.Contains(errOut, "is the store") {
			t.Errorf("%v with the store as %s: exit %d, store kept %v: %s", tc.args, tc.name, code, bytes.Equal(got, want), errOut)
		}
	}
}

// TestStatusOfAKilledCampaign: kill -9 leaves the running trial marked
// running; status says that the nccltune that ran it is gone and that a
// resume runs it again (--json: its number under "orphaned", and the
// "writer" that "runs" no more), and says nothing of the kind while the
// campaign runs.
func TestStatusOfAKilledCampaign(t *testing.T) {
	t.Parallel() // waits out the runner's grace, not a CPU
	dir := t.TempDir()
	cmd, pids := startStubborn(t, dir, nil)
	type doc struct {
		Orphaned []int
		Writer   *struct {
			PID  int
			Runs *bool
		}
	}
	status := func() (string, doc) {
		t.Helper()
		_, out, errOut := nccltune(t, dir, "status")
		code, js, jsErr := nccltune(t, dir, "status", "--json")
		var d doc
		if err := json.Unmarshal([]byte(js), &d); code != 0 || err != nil || d.Writer == nil || d.Writer.Runs == nil {
			t.Fatalf("status --json: exit %d, %v\n%s%s", code, err, js, jsErr)
		}
		return out + errOut, d
	}
	if out, d := status(); strings.Contains(out, "is gone") || len(d.Orphaned) > 0 || !*d.Writer.Runs || d.Writer.PID != cmd.Process.Pid {
		t.Errorf("while the campaign runs (pid %d): orphaned %v, writer pid %d runs %v\n%s", cmd.Process.Pid, d.Orphaned, d.Writer.PID, *d.Writer.Runs, out)
	}
	cmd.Process.Kill()
	cmd.Wait()
	waitGone(t, pids)
	out, d := status()
	if !strings.Contains(out, "warning: trial 0 marked running, yet the nccltune that last wrote the store (pid "+strconv.Itoa(cmd.Process.Pid)) || !strings.Contains(out, "`nccltune resume --space FILE` marks such a trial interrupted") {
		t.Errorf("status after kill -9 says nothing of trial 0's gone writer:\n%s", out)
	}
	if !slices.Equal(d.Orphaned, []int{0}) || *d.Writer.Runs {
		t.Errorf("status --json after kill -9: orphaned %v, writer runs %v; want [0], false", d.Orphaned, *d.Writer.Runs)
	}
}
