package runner

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A trial's supervisor is this executable started again with superviseEnv
// set: it runs the benchmark and ends every process of the trial with it.
const (
	superviseEnv  = "NCCLTUNE_SUPERVISE" // "PARENT_PID:GRACE"
	superviseArg0 = "nccltune-trial"     // how it shows in ps
)

// Any binary that links this package (nccltune, and the test binaries that
// launch trials) can act as a supervisor: it has to decide before main runs.
func init() {
	if v, ok := os.LookupEnv(superviseEnv); ok {
		os.Exit(supervise(v, os.Args[1:]))
	}
}

// supervise runs argv as the benchmark and reports on file descriptor 3 its
// pid ("pid N") and how it ended ("exit N", "signal N" or "launch ERROR").
//
// It is the child subreaper of the trial's processes (PR_SET_CHILD_SUBREAPER):
// a process whose parent exits, a daemon started with setsid among them, is
// reparented to it rather than to init, so every process the benchmark
// started is its descendant and can be found. When the benchmark exits, what
// it left behind is ended; on SIGTERM (the timeout, an interrupt, or the
// death of nccltune, through Pdeathsig) the whole tree is, SIGTERM first and
// SIGKILL after the grace period.
func supervise(setting string, argv []string) int {
	status := os.NewFile(3, "status")
	// Neither the status pipe nor the held lock (fd 4, see WithHeld) goes to
	// the benchmark: a descendant that kept the pipe open, having killed or
	// stopped this supervisor, would make nccltune wait for its last word
	// forever; the lock is held by this process alone, until it exits.
	syscall.CloseOnExec(3)
	syscall.CloseOnExec(4)
	report := func(format string, args ...any) int {
		fmt.Fprintf(status, format+"\n", args...)
		status.Close()
		return 0
	}
	parent, graceText, _ := strings.Cut(setting, ":")
	grace, err := time.ParseDuration(graceText)
	if err != nil || len(argv) == 0 {
		return report("launch bad supervisor arguments %q", setting)
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGCHLD)
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return report("launch cannot become the trial's subreaper: %v", err)
	}
	if strconv.Itoa(os.Getppid()) != parent {
		return report("launch nccltune exited before the trial started")
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return report("launch %v", err)
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, superviseEnv+"=") {
			env = append(env, kv)
		}
	}
	// The benchmark's own process group lets mpirun be signalled as launched;
	// Pdeathsig, tied to this thread, covers a supervisor that is killed.
	runtime.LockOSThread()
	bench, err := os.StartProcess(path, argv, &os.ProcAttr{Env: env, Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
		Sys: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}})
	if err != nil {
		return report("launch %v", err)
	}
	fmt.Fprintf(status, "pid %d\n", bench.Pid)
	t := tree{self: os.Getpid(), main: bench.Pid}
	t.watch(sigs, grace)
	switch {
	case !t.mainDone: // stuck in the kernel past SIGKILL
		return report("signal %d", int(syscall.SIGKILL))
	case t.status.Signaled():
		return report("signal %d", int(t.status.Signal()))
	}
	return report("exit %d", t.status.ExitStatus())
}

// tree is the supervisor's view of the trial's processes.
type tree struct {
	self, main int
	status     syscall.WaitStatus // the benchmark's, once it exited
	mainDone   bool
}

// watch reaps until the benchmark has exited and no descendant is left,
// ending the tree when the benchmark exits or a stop signal arrives: SIGTERM,
// then SIGKILL to whatever still lives once the grace period is over.
func (t *tree) watch(sigs chan os.Signal, grace time.Duration) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var termSent, killSent bool
	var kill, giveUp <-chan time.Time
	terminate := func() {
		if !termSent {
			termSent = true
			t.signal(syscall.SIGTERM)
			kill = time.After(grace)
		}
	}
	for {
		select {
		case sig := <-sigs:
			if sig != syscall.SIGCHLD {
				terminate()
			}
		case <-tick.C:
		case <-kill:
			killSent = true
			// A srun that outlived the grace did not end its step, and
			// SIGKILL takes the child that would with it: its ranks run
			// under slurmstepd, out of reach. nccltune cancels the steps
			// as it stops a trial, but it may be gone (killed, whence
			// Pdeathsig brought the SIGTERM): cancel them while their
			// sruns, which name them, still live.
			_ = stopSteps(t.self)
			// A process stuck in the kernel cannot be killed; do not wait for it forever.
			giveUp = time.After(5 * time.Second)
		case <-giveUp:
			return
		}
		if killSent {
			t.signal(syscall.SIGKILL) // also whatever was started since the last round
		}
		t.reap()
		if !t.mainDone {
			continue
		}
		left := descendants(t.self)
		if len(left) == 0 {
			return // every one reaped: none is left to init as a zombie
		}
		if len(living(left)) > 0 {
			terminate() // the benchmark is done: what it left behind goes too
		}
	}
}

// reap collects every exited child: the benchmark, and the orphans reparented here.
func (t *tree) reap() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
		if pid == t.main {
			t.status, t.mainDone = ws, true
		}
	}
}

// signal sends sig to the benchmark's process group and to every descendant.
// The group is signalled only until the benchmark is reaped: its members are
// all descendants, and once they too are gone, the kernel may give its
// number to another program's process, which may lead a group of its own.
func (t *tree) signal(sig syscall.Signal) {
	if !t.mainDone {
		_ = syscall.Kill(-t.main, sig)
	}
	for _, p := range descendants(t.self) {
		_ = syscall.Kill(p.pid, sig)
	}
}
