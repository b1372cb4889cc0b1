package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestInterruptedSaysWhatGoesOn: a campaign stopped by a signal says its
// finished trials are stored and how it goes on; compare, which stores
// nothing, says only that it was interrupted (it said a `nccltune run`
// would go on from its trials), and so does a benchmark, which stops.
func TestInterruptedSaysWhatGoesOn(t *testing.T) {
	t.Parallel() // waits on its benchmark's sleeps and signals, not a CPU
	dir := t.TempDir()
	spaceFile := slowSpace(t, dir, 6)
	os.WriteFile(filepath.Join(dir, "a.env"), []byte("# NCCL's defaults\n"), 0o644)
	for _, tc := range []struct {
		args []string
		hint bool
	}{
		{[]string{"run", "--space", spaceFile}, true},
		{[]string{"compare", "--space", spaceFile, "a.env", "a.env"}, false},
		// bench ran every campaign to its end, deaf to the signal, and
		// was ended by the forced exit a minute later. One scenario: the
		// enumeration of each before its campaigns is not stopped (seconds
		// of the default ones').
		{[]string{"bench", "search", "--scenarios", "2node-tcp", "--landscapes", "20", "--smooth", "0", "--trials", "80", "--out", dir}, false},
	} {
		cmd := exec.Command(os.Args[0], tc.args...)
		cmd.Dir = dir
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = io.Discard, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		cmd.Process.Signal(syscall.SIGTERM)
		err := cmd.Wait()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 || !strings.Contains(stderr.String(), "nccltune: interrupted") ||
			strings.Contains(stderr.String(), "finished trials are stored") != tc.hint {
			t.Errorf("nccltune %v stopped: %v\n%s", tc.args[0], err, stderr.String())
		}
	}
}

// TestHangupStopsAsSIGTERM: a closed terminal or ssh session (SIGHUP) stops
// a campaign as SIGTERM does: exit 130, and the running trial recorded as
// interrupted, not left running as kill -9 leaves it. Under nohup, which
// ignores SIGHUP, the campaign runs on.
func TestHangupStopsAsSIGTERM(t *testing.T) {
	t.Parallel() // waits on its benchmark's sleeps and signals, not a CPU
	for _, nohup := range []bool{false, true} {
		dir := t.TempDir()
		spaceFile := slowSpace(t, dir, 6)
		trap := ""
		if nohup {
			trap = "trap '' HUP; "
		}
		cmd := exec.Command("sh", "-c", trap+`exec "$0" run -q --space "$1"`, os.Args[0], spaceFile)
		done, stderr := startHeld(t, dir, cmd)
		cmd.Process.Signal(syscall.SIGHUP)
		if nohup {
			select {
			case err := <-done:
				t.Fatalf("under nohup, SIGHUP ended the campaign: %v\n%s", err, stderr.String())
			case <-time.After(500 * time.Millisecond):
			}
			cmd.Process.Signal(syscall.SIGTERM)
		}
		err := <-done
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitInterrupted {
			t.Errorf("nohup %v: exit %v, want %d\n%s", nohup, err, exitInterrupted, stderr.String())
		}
		code, out, _ := nccltune(t, dir, "status", "--json")
		if code != 0 || strings.Contains(out, `"running"`) || !strings.Contains(out, `"interrupted"`) {
			t.Errorf("nohup %v: status after the signal: %d\n%s", nohup, code, out)
		}
	}
}

// TestHangupTwiceStops: a closed terminal sends a foreground campaign
// SIGHUP twice, the shell handing its jobs the one it got, then the kernel,
// as the shell exits, sending its foreground group another, while the
// running trial's benchmark still stops (mpirun takes a while): the second
// must not kill nccltune as a second Ctrl-C does, leaving the trial running.
func TestHangupTwiceStops(t *testing.T) {
	t.Parallel() // waits on its benchmark's sleeps and signals, not a CPU
	dir := t.TempDir()
	spaceFile := scriptSpace(t, dir, "slowstop", 6, `d=$(dirname "$0")
trap 'sleep 1; exit 143' TERM
echo $$ > "$d/held.tmp"; mv "$d/held.tmp" "$d/held"
sleep 60 & wait
`)
	cmd := exec.Command(os.Args[0], "run", "-q", "--space", spaceFile)
	done, stderr := startHeld(t, dir, cmd)
	cmd.Process.Signal(syscall.SIGHUP)
	time.Sleep(200 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGHUP)
	err := <-done
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitInterrupted {
		t.Errorf("exit %v, want %d\n%s", err, exitInterrupted, stderr.String())
	}
	code, out, _ := nccltune(t, dir, "status", "--json")
	if code != 0 || strings.Contains(out, `"running"`) || !strings.Contains(out, `"interrupted"`) {
		t.Errorf("status after the signals: %d\n%s", code, out)
	}
}

// TestAWaitingPipeStops: a signal stops a command reading a pipe (or a
// terminal) that has not ended: exit 130 at once. Closing standard input,
// which a shell opens blocking, ended no read under way of `nccltune
// profile -`, so it read on until the pipe ended or a minute had passed.
// So does a named pipe that no one writes yet, whose opening waits: a log
// to profile, a --space <(cmd) whose command hangs, an env file to compare.
func TestAWaitingPipeStops(t *testing.T) {
	t.Parallel() // waits on signals, not a CPU
	fifo := filepath.Join(t.TempDir(), "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"profile", "-"}, {"profile", fifo}, {"run", "--space", fifo}, {"compare", fifo, fifo}, {"doctor", "--space", fifo}} {
		// A signal before nccltune's handler is installed kills it as it
		// would any program; under load that took more than half a second,
		// so a death by the signal is tried again with a longer wait.
		for _, wait := range []time.Duration{500 * time.Millisecond, 3 * time.Second, 10 * time.Second} {
			if !interruptedExits(t, wait, args...) {
				break
			}
		}
	}
}

// interruptedExits runs nccltune with args, interrupts it after wait, and
// checks that it exits 130 within 10 s (its forced exit comes after 30);
// it reports whether it died of the signal instead, as before its handler
// was installed.
func interruptedExits(t *testing.T, wait time.Duration, args ...string) (tooSoon bool) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "NCCLTUNE_TEST_STOP_WAIT=30s")
	in, err := cmd.StdinPipe() // written to by no one, never closed until the end
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(wait)
	cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		ee, ok := err.(*exec.ExitError)
		if ok && ee.ExitCode() == -1 && wait < 10*time.Second {
			return true
		}
		if !ok || ee.ExitCode() != 130 {
			t.Errorf("%v stopped: %v\n%s", args, err, stderr.String())
		}
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Errorf("%v still read 10 s after the signal", args)
	}
	return false
}

// TestSimDiesOfASignal: the simulated cluster, a stand-in for nccl-tests,
// dies of SIGINT or SIGTERM as nccl-tests does. nccltune's own handler
// caught them, so that a paced run went on to its end and exited 0 with a
// whole table, a stopped benchmark read as one that ran.
func TestSimDiesOfASignal(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		cmd := exec.Command(os.Args[0], "sim", "-pace=1", "-nodes=2", "-fabric=ib", "all_reduce_perf", "-b", "1G", "-e", "1G", "-g", "16")
		var stdout bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, io.Discard
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond)
		start := time.Now()
		cmd.Process.Signal(sig)
		err := cmd.Wait()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ProcessState.Sys().(syscall.WaitStatus).Signal() != sig || time.Since(start) > 3*time.Second {
			t.Errorf("sim after %v: %v after %v\n%s", sig, err, time.Since(start), stdout.String())
		}
	}
}

// TestDoctorInterrupted: doctor stopped by a signal exits 130, saying it
// was interrupted; it exited 1 with its report, where the check the signal
// stopped failed ("interrupted: campaign stopped while the trial ran"), a
// failure of the cluster that nothing had found.
func TestDoctorInterrupted(t *testing.T) {
	dir := t.TempDir()
	spaceFile := scriptSpace(t, dir, "asleep", 4, "sleep 30\n")
	cmd := exec.Command(os.Args[0], "doctor", "--space", spaceFile, "--python", "")
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 || !strings.Contains(stderr.String(), "nccltune: interrupted") || strings.Contains(stdout.String(), "FAIL") {
		t.Errorf("doctor stopped: %v\n%s%s", err, stdout.String(), stderr.String())
	}
}

// TestPluginBuildInterrupted: Ctrl-C during `plugin build` (its signal to
// the terminal's whole process group, the compiler with it) exits 130,
// interrupted; it exited 1, the build failed ("signal: interrupt").
func TestPluginBuildInterrupted(t *testing.T) {
	dir := t.TempDir()
	cc := filepath.Join(dir, "slowcc")
	os.WriteFile(cc, []byte("#!/bin/sh\nsleep 30\n"), 0o755)
	cmd := exec.Command(os.Args[0], "plugin", "build", "--cc", cc, "--out", filepath.Join(dir, "out"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 || !strings.Contains(stderr.String(), "nccltune: interrupted") {
		t.Errorf("plugin build stopped: %v\n%s", err, stderr.String())
	}
}

// TestPluginBuildCompilerStoppedFirst: the Ctrl-C that reaches the
// compiler may end it before nccltune's own handler has run (a loaded
// machine): the build is interrupted all the same, not failed, exit 1
// ("signal: interrupt"). Here the compiler alone gets it.
func TestPluginBuildCompilerStoppedFirst(t *testing.T) {
	dir := t.TempDir()
	cc := filepath.Join(dir, "stoppedcc")
	os.WriteFile(cc, []byte("#!/bin/sh\nkill -INT $$\nsleep 30\n"), 0o755)
	cmd := exec.Command(os.Args[0], "plugin", "build", "--cc", cc, "--out", filepath.Join(dir, "out"))
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 || !strings.Contains(stderr.String(), "nccltune: interrupted") {
		t.Errorf("plugin build whose compiler was stopped: %v\n%s", err, stderr.String())
	}
}
