package runner

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nccltune/nccltune/internal/simtest"
)

// strays is a benchmark body that leaves processes behind in every way a
// wrapper script can: a daemon in a session of its own (setsid) that ignores
// SIGTERM, and an orphan whose parent has exited. Their pids go into dir.
func strays(dir string) string {
	return fmt.Sprintf(`setsid sh -c 'trap "" TERM; echo $$ > %[1]s/daemon.pid; exec sleep 300' </dev/null >/dev/null 2>&1 &
sh -c 'sleep 300 & echo $! > %[1]s/orphan.pid' </dev/null >/dev/null 2>&1
while [ ! -s %[1]s/daemon.pid ]; do sleep 0.01; done
echo ready
`, dir)
}

// requireGone waits until every pid written into dir has exited.
func requireGone(t *testing.T, dir string, within time.Duration) {
	t.Helper()
	for _, name := range []string{"daemon.pid", "orphan.pid"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
		deadline := time.Now().Add(within)
		for alive(pid) {
			if time.Now().After(deadline) {
				syscall.Kill(pid, syscall.SIGKILL)
				t.Fatalf("%s %d outlived the trial", name, pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// alive reports whether pid runs; a zombie is dead, whether or not its new
// parent (init, in a container perhaps a process that never reaps) has reaped it.
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(stat)
	return !strings.HasPrefix(strings.TrimSpace(s[strings.LastIndexByte(s, ')')+1:]), "Z")
}

func TestNothingOutlivesTheTrial(t *testing.T) {
	for _, tc := range []struct {
		name    string
		tail    string // after the strays are out
		timeout time.Duration
		kind    FailureKind
	}{
		{"clean exit", "cat /dev/null", time.Minute, FailUnparsable},
		{"timeout", "trap '' TERM; sleep 300", time.Second, FailTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			r := &Runner{Launcher: Local{}, Grace: 300 * time.Millisecond}
			job := tableJob(script(t, strays(dir)+tc.tail))
			job.Timeout = tc.timeout
			res := r.Run(context.Background(), job)
			if res.Failure == nil || res.Failure.Kind != tc.kind {
				t.Fatalf("failure %v, want %s\n%s", res.Failure, tc.kind, res.Output)
			}
			// The supervisor reports only once the tree is gone.
			requireGone(t, dir, 100*time.Millisecond)
		})
	}
}

// TestKilledNCCLTuneLeavesNothing runs a trial in a child process that
// stands in for nccltune, kills it with SIGKILL mid-trial, and checks that
// the trial's processes die with it.
func TestKilledNCCLTuneLeavesNothing(t *testing.T) {
	if dir := os.Getenv("RUNNER_TEST_STRAYS"); dir != "" {
		r := &Runner{Launcher: Local{}, Grace: 300 * time.Millisecond}
		job := tableJob(script(t, strays(dir)+"trap '' TERM; sleep 300"))
		job.Timeout = time.Hour
		r.Run(context.Background(), job)
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledNCCLTuneLeavesNothing$")
	// The child dies by SIGKILL before its own t.TempDir is removed: it
	// makes that under dir, which this test's cleanup removes.
	cmd.Env = append(os.Environ(), "RUNNER_TEST_STRAYS="+dir, simtest.Env+"=0", "TMPDIR="+dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		daemon, _ := os.ReadFile(filepath.Join(dir, "daemon.pid"))
		orphan, _ := os.ReadFile(filepath.Join(dir, "orphan.pid"))
		if len(daemon) > 0 && len(orphan) > 0 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the trial never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()
	requireGone(t, dir, 5*time.Second)
}

// TestBenchmarkKillsOrStopsItsSupervisor: a benchmark that kills or stops
// its supervisor, leaving a child that ignores SIGTERM, neither hangs the
// trial past its timeout nor leaves that child behind; the trial fails with
// a reason.
func TestBenchmarkKillsOrStopsItsSupervisor(t *testing.T) {
	for _, sig := range []string{"KILL", "STOP"} {
		t.Run(sig, func(t *testing.T) {
			t.Parallel() // each waits out its trial's timeout, in a folder of its own
			dir := t.TempDir()
			body := fmt.Sprintf(`trap '' TERM
(trap '' TERM; exec sleep 31304) &
echo $! > %[1]s/orphan.pid
setsid sh -c 'trap "" TERM; echo $$ > %[1]s/daemon.pid; exec sleep 31305' </dev/null >/dev/null 2>&1 &
while [ ! -s %[1]s/daemon.pid ]; do sleep 0.01; done
kill -%[2]s $PPID
sleep 1
`, dir, sig)
			r := &Runner{Launcher: Local{}, Grace: 300 * time.Millisecond}
			job := tableJob(script(t, body))
			job.Timeout = 2 * time.Second
			done := make(chan Result, 1)
			go func() { done <- r.Run(context.Background(), job) }()
			var res Result
			select {
			case res = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("the trial hangs")
			}
			if res.Failure == nil {
				t.Fatalf("no failure:\n%s", res.Output)
			}
			t.Logf("%s: %s", res.Failure.Kind, res.Failure.Reason)
			requireGone(t, dir, 2*time.Second)
		})
	}
}

// TestKilledSupervisorIsSaidSo: a trial whose supervisor is killed (by
// its benchmark, an OOM killer, a hand) before it said how the benchmark
// ended fails saying so: the signal is the supervisor's, not the
// benchmark's, whose end (SIGTERM through Pdeathsig) was read as a
// configuration killed by that signal ("killed by signal 9").
func TestKilledSupervisorIsSaidSo(t *testing.T) {
	r := &Runner{Launcher: Local{}, Grace: 300 * time.Millisecond}
	job := tableJob(script(t, "kill -KILL $PPID\nexec sleep 30\n"))
	job.Timeout = 20 * time.Second
	res := r.Run(context.Background(), job)
	if res.Failure == nil || res.Failure.Kind != FailSignal || !strings.Contains(res.Failure.Reason, "supervisor") {
		t.Errorf("failure %+v, want the supervisor's signal said", res.Failure)
	}
}

// TestSupervisorHoldsTheLock: the file of runner.WithHeld stays locked while
// the trial runs, though nccltune's own descriptor is closed, and is free
// once the trial is over: the benchmark does not keep it.
func TestSupervisorHoldsTheLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	r := &Runner{Launcher: Local{}, Grace: 300 * time.Millisecond}
	started := filepath.Join(t.TempDir(), "started")
	job := tableJob(script(t, "(exec sleep 30) </dev/null >/dev/null 2>&1 &\ntouch "+started+"\nsleep 1\n"))
	done := make(chan Result, 1)
	go func() { done <- r.Run(WithHeld(context.Background(), f), job) }()
	// Closed once the trial runs, not while Run starts its supervisor,
	// which passes it the descriptor.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(started); err == nil || time.Now().After(deadline) {
			break
		}
	}
	f.Close() // as nccltune killed
	try := func() error {
		g, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close()
		return syscall.Flock(int(g.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	}
	if err := try(); err == nil {
		t.Error("the lock was free while the trial ran")
	}
	<-done
	if err := try(); err != nil {
		t.Errorf("the lock outlived the trial: %v", err)
	}
}

// TestRecycledGroupIsNotSignalled: once the benchmark has exited and been
// reaped, its pid, which named its process group, is free once that group
// is empty: the kernel may give it to any new process (pid_max is 32768 on
// many hosts), which may lead a group of its own under that number. The
// supervisor, ending what the benchmark left behind, signalled that group
// still, killing a process that was never the trial's.
func TestRecycledGroupIsNotSignalled(t *testing.T) {
	const lastPid = "/proc/sys/kernel/ns_last_pid"
	if last, err := os.ReadFile(lastPid); err != nil || os.WriteFile(lastPid, last, 0) != nil {
		t.Skip("cannot choose the next pid (root in the pid namespace can)")
	}
	dir := t.TempDir()
	// The benchmark leaves a child of a group of its own, that ignores
	// SIGTERM until the grace is over, and exits at once.
	body := fmt.Sprintf(`setsid sh -c 'trap "" TERM; touch %[1]s/ready; exec sleep 30' </dev/null >/dev/null 2>&1 &
while [ ! -e %[1]s/ready ]; do sleep 0.01; done
echo $$ > %[1]s/main.pid`, dir)
	r := &Runner{Launcher: Local{}, Grace: 3 * time.Second}
	job := tableJob(script(t, body))
	done := make(chan Result, 1)
	go func() { done <- r.Run(context.Background(), job) }()
	var main int
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		data, _ := os.ReadFile(filepath.Join(dir, "main.pid"))
		if n, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && !alive(n) {
			if _, err := os.Stat(fmt.Sprintf("/proc/%d", n)); err != nil { // reaped
				main = n
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the benchmark did not exit")
		}
	}
	// Another program takes the pid, as a group leader: setsid.
	var other *exec.Cmd
	for range 200 {
		os.WriteFile(lastPid, []byte(strconv.Itoa(main-1)), 0)
		cmd := exec.Command("sleep", "30")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if cmd.Process.Pid == main {
			other = cmd
			break
		}
		cmd.Process.Kill()
		cmd.Wait()
	}
	if other == nil {
		<-done
		t.Skip("could not start a process under the benchmark's pid")
	}
	defer func() { other.Process.Kill(); other.Wait() }()
	<-done
	if err := other.Process.Signal(syscall.Signal(0)); err != nil || !alive(main) {
		t.Fatalf("the process now under the benchmark's pid %d was killed with the trial", main)
	}
}
