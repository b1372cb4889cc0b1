// Package runner runs one trial: it starts the benchmark through a launcher
// with the trial's environment, under a supervisor that ends every process of
// the trial with it, enforces the timeout, reads NCCL's log and lets the
// benchmark judge its output.
package runner

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nccltune/nccltune/internal/safego"
	"github.com/nccltune/nccltune/runner/mpitag"
	"github.com/nccltune/nccltune/runner/nccllog"
)

// FailureKind says how a trial failed; the store and reports count by it.
type FailureKind string

const (
	FailLaunch      FailureKind = "launch"      // the command could not be started
	FailTimeout     FailureKind = "timeout"     // it ran past the trial timeout (hang)
	FailInterrupted FailureKind = "interrupted" // the campaign was stopped while it ran
	FailNCCL        FailureKind = "nccl"        // NCCL or CUDA reported an error
	FailWrong       FailureKind = "wrong"       // results were checked and found wrong, or not checked
	FailSignal      FailureKind = "signal"      // killed by a signal it did not get from us
	FailExit        FailureKind = "exit"        // non-zero exit with no better explanation
	FailUnparsable  FailureKind = "unparsable"  // no result, or not the result asked for
	FailImplausible FailureKind = "implausible" // numbers no hardware produces: garbled or made up
	FailOOM         FailureKind = "oom"         // out of GPU memory (DDP step)
	FailInvalid     FailureKind = "invalid"     // not launched: NCCL would override the combination (space.Check)
	// FailNode: a node of the trial failed under it (nodeFailureLine): the
	// cluster's fault, not the settings', which the trial does not judge.
	FailNode FailureKind = "node"
	// FailAllocation: the Slurm job's allocation ended under it (its time
	// limit, scancel of the job, preemption; allocationEnded): the trial's
	// ranks were ended, or its step could not be created, whatever its
	// settings, and no later trial can run in the allocation.
	FailAllocation FailureKind = "allocation"
)

// Settings reports whether a failure of kind k may be its settings' doing,
// and so come again with them: not a launch that started no rank (srun's
// step never created, mpirun's daemons, torchrun's rendezvous), nor an
// interrupt, a node's failure or the end of the allocation.
func (k FailureKind) Settings() bool {
	return k != FailLaunch && k != FailInterrupted && k != FailNode && k != FailAllocation
}

// Failure is why a trial produced no usable result.
type Failure struct {
	Kind   FailureKind
	Reason string
}

func (f *Failure) Error() string { return string(f.Kind) + ": " + f.Reason }

// Job is one benchmark launch.
type Job struct {
	Benchmark Benchmark
	Plan      Plan
	Env       []string      // the trial's NCCL_* variables, NAME=value
	Timeout   time.Duration // 0 means none
}

// Result is what one launch produced.
type Result struct {
	Command     []string // the argv that was executed, launcher included
	Output      []byte   // stdout and stderr, interleaved as written (head and tail kept when huge)
	Exit        Exit
	Started     time.Time
	Duration    time.Duration
	Log         nccllog.Log  // what NCCL logged
	Measurement *Measurement // nil on failure
	Failure     *Failure     // nil on success
}

// Runner runs jobs through one launcher.
type Runner struct {
	Launcher Launcher
	// BaseEnv is the environment every job starts from; the job's variables are
	// appended. Use BaseEnv() to inherit this process's environment minus NCCL_*.
	BaseEnv []string
	// Grace is how long a trial's processes have between SIGTERM and SIGKILL.
	Grace time.Duration
}

// BaseEnv returns this process's environment without NCCL_* variables, so that
// a user's shell settings cannot leak into a trial and skew the comparison,
// nor those of notInherited.
func BaseEnv() []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return strings.HasPrefix(name, "NCCL_") || slices.Contains(notInherited, name)
	})
}

// notInherited are the caller's variables that no trial gets: the
// supervisor's own setting, and those by which every Slurm step of a trial,
// under any launcher (srun's, torchrun's wrapper, the daemons Open MPI's
// mpirun starts through srun, a training script's), would hand its ranks
// other variables than the trial's: a task prolog (srun's --task-prolog),
// which slurmstepd runs before each task, whose "export NAME=value" lines
// set its variables past srun's; and srun's --export (sbatch --export=NONE
// sets SLURM_EXPORT_ENV=NONE in the batch script), which kept the trial's
// variables, NCCL_DEBUG among them, from every rank.
var notInherited = []string{superviseEnv, "SLURM_TASK_PROLOG", "SLURM_EXPORT_ENV", "SRUN_EXPORT_ENV"}

// maxOutput bounds the output kept per trial; NCCL INFO logs of large jobs are long.
const maxOutput = 8 << 20

// Run launches the job and waits for it. It never returns an error: every
// problem is a Failure in the result, so that a campaign records it and goes on.
//
// The benchmark runs under a supervisor, this executable started again (see
// supervise), which makes itself the subreaper of the trial's process tree:
// whatever the benchmark starts, also under setsid, stays its descendant,
// and all of it is killed when the benchmark exits, at the timeout, on
// interrupt, and when nccltune itself dies, even by kill -9.
func (r *Runner) Run(ctx context.Context, job Job) Result {
	res := Result{Started: time.Now(), Exit: Exit{Code: -1}}
	argv, err := r.Launcher.Wrap(job.Benchmark.Command(job.Plan), job.Env)
	if err != nil {
		res.Failure = &Failure{FailLaunch, err.Error()}
		return res
	}
	res.Command = argv
	runCtx, cancel := ctx, context.CancelFunc(func() {})
	if job.Timeout > 0 {
		runCtx, cancel = context.WithTimeout(ctx, job.Timeout)
	}
	defer cancel()
	grace := r.Grace
	if grace <= 0 {
		grace = 5 * time.Second
	}
	becomeSubreaper.Do(func() {
		// Orphans of a supervisor that died (a benchmark can kill or stop
		// it) come to nccltune rather than to init, where sweep finds them.
		_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	})
	statusR, statusW, err := os.Pipe()
	if err != nil {
		res.Failure = &Failure{FailLaunch, err.Error()}
		return res
	}
	status := readReport(statusR)

	out := &capture{limit: maxOutput}
	if k, ok := job.Benchmark.(LineKeeper); ok {
		out.keep = k.Keep
	}
	cmd := exec.CommandContext(runCtx, "/proc/self/exe", argv...)
	cmd.Args[0] = superviseArg0
	base := withoutOuterLaunch(r.BaseEnv)
	if f, ok := r.Launcher.(EnvFilter); ok {
		base = f.LauncherEnv(base)
	}
	cmd.Env = append(append(append([]string{}, base...), job.Env...),
		superviseEnv+"="+strconv.Itoa(os.Getpid())+":"+grace.String())
	cmd.Stdout, cmd.Stderr = out, out
	cmd.ExtraFiles = []*os.File{statusW}
	if held, ok := ctx.Value(heldKey{}).(*os.File); ok && held != nil {
		// The supervisor holds the store's lock until the trial's last
		// process is gone, also after nccltune died: a resume waits for it.
		cmd.ExtraFiles = append(cmd.ExtraFiles, held)
	}
	// Pdeathsig: if nccltune dies, even by kill -9, the supervisor gets SIGTERM
	// and ends the trial. It is tied to the creating OS thread, so the
	// goroutine stays on that thread until the supervisor is reaped.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	// On timeout or interrupt the supervisor ends the tree: SIGTERM (so that
	// mpirun can take down its remote daemons), SIGKILL after the grace.
	// Ranks that are not in the tree (those of a srun's step, whichever
	// launcher or command ran srun) are stopped through Slurm.
	cmd.Cancel = func() error {
		if ctx.Err() == nil {
			out.mark() // at the timeout: what came before the trial's processes are signalled
		}
		err := cmd.Process.Signal(syscall.SIGTERM)
		if status.pid() > 0 { // the launcher has started
			_ = stopSteps(cmd.Process.Pid) // best effort: srun, for one, usually ends its step on SIGTERM by itself
		}
		return err
	}
	cmd.WaitDelay = grace + 5*time.Second
	supervisors.Lock()
	err = cmd.Start()
	if err == nil {
		supervisors.pids[cmd.Process.Pid] = true
	}
	supervisors.Unlock()
	statusW.Close()
	switch {
	case ctx.Err() != nil: // stopped before it could start: run it again later
		res.Failure = &Failure{FailInterrupted, "campaign stopped as the trial started"}
		return res
	case err != nil:
		res.Failure = &Failure{FailLaunch, err.Error()}
		return res
	}
	waitErr := cmd.Wait()
	supervisors.Lock()
	delete(supervisors.pids, cmd.Process.Pid)
	supervisors.Unlock()
	res.Duration = time.Since(res.Started)
	res.Output = out.Bytes()
	res.Log = nccllog.Parse(res.Output)
	exit, launchErr := status.result(cmd.ProcessState, waitErr)
	var supervisorKilled syscall.Signal
	if !status.worded {
		// A supervisor killed before its word (by the benchmark, an OOM
		// killer, a hand): the signal is its own, not the benchmark's, which
		// only ended with it (Pdeathsig), so it must not read as the
		// configuration's.
		supervisorKilled = exit.Signal
		// The supervisor died (or was stopped, then killed at the timeout)
		// without ending the tree: nccltune ends what is left of it. The
		// trial fails as the supervisor ended (a signal, the timeout).
		sweep(status.pid())
	}
	if p := out.writePanic(); p != nil {
		panic(*p) // once the trial's processes are gone
	}
	if er, ok := r.Launcher.(ExitReader); ok {
		exit = er.RankExit(res.Output, exit)
	}
	// At the timeout, what the trial printed before nccltune signalled its
	// processes and cancelled its steps says how it stood. A launch that
	// ran on past a rank that had failed (torchrun at its exit barrier,
	// waiting for the other nodes' agents) did not hang: the trial failed
	// as that rank did.
	atTimeout, timedOut := out.marked()
	seen, failedFirst := res.Output, false
	if fr, ok := r.Launcher.(FailedRankReader); ok && timedOut {
		if e, ok := fr.FailedRank(atTimeout); ok {
			exit, seen, failedFirst = e, atTimeout, true
		}
	}
	if lr, ok := r.Launcher.(LaunchReader); ok && launchErr == "" {
		launchErr = lr.LaunchFailure(seen, exit)
	}
	if timedOut && launchErr == "" && !failedFirst {
		// Under any launcher, as any may run srun: a step that waited to
		// be created, or for a task of it that never started.
		launchErr = cmp.Or(stepNeverCreated(atTimeout), taskNotStarted(atTimeout))
	}
	res.Exit = exit
	detail, nodeErr, ended := "", nodeFailureLine(res.Output), ""
	if dr, ok := r.Launcher.(DetailReader); ok && exit.Code != 0 {
		detail = dr.FailureDetail(seen)
	}
	cancelled, limit := "", ""
	if exit.Code != 0 {
		cancelled, limit = stepCancelledByHand(seen), ownTimeLimit(seen)
	}
	if nodeErr == "" && ctx.Err() == nil && (exit.Code != 0 || runCtx.Err() != nil) {
		ended = allocationEnded(res.Output, throughSlurm(r.Launcher))
	}
	switch {
	case ctx.Err() != nil:
		res.Failure = &Failure{FailInterrupted, "campaign stopped while the trial ran"}
	case nodeErr != "": // the ranks' exit, or hang, is the node's doing
		res.Failure = &Failure{FailNode, nodeErr}
	case ended != "": // and so is the allocation's end
		res.Failure = &Failure{FailAllocation, ended}
	case limit != "": // the ranks' end is the launcher's, at its own limit
		res.Failure = &Failure{FailTimeout, limit}
	case runCtx.Err() != nil && launchErr == "" && !failedFirst: // one that never launched its ranks did not hang
		res.Failure = &Failure{FailTimeout, fmt.Sprintf("no exit within %s; every process of the trial was killed", job.Timeout)}
	case cancelled != "": // the ranks' signal is the hand's, not the settings'
		res.Failure = &Failure{FailLaunch, CancelledByHand + ", the job running on: " + cancelled}
	case launchErr != "":
		res.Failure = &Failure{FailLaunch, launchErr}
	case supervisorKilled != 0:
		res.Failure = &Failure{FailSignal, fmt.Sprintf("the trial's supervisor (%s) was killed by signal %d (%v) before it reported how the benchmark ended; the benchmark was ended with it",
			superviseArg0, int(supervisorKilled), supervisorKilled)}
	default:
		kept, dropped := out.Kept() // its last line offered, which may be dropped
		res.Measurement, res.Failure = job.Benchmark.Read(job.Plan, Output{Text: seen, Kept: kept, Dropped: dropped, Exit: exit, Log: res.Log, Detail: detail})
	}
	if res.Failure != nil {
		// It ends with a line of the output, which may be of megabytes (a
		// progress bar's '\r'-ended parts, a dumped tensor): the store
		// keeps it for every trial.
		res.Failure.Reason = clipTo(res.Failure.Reason, maxReason)
	}
	return res
}

// CancelledByHand begins the reason of a trial whose step was cancelled
// from outside nccltune: a failed launch whose ranks had started, on nodes
// that may be sound.
const CancelledByHand = "the trial's step was cancelled from outside nccltune (scancel)"

// maxReason bounds a failure's reason.
const maxReason = 2048

// heldKey is the context key of WithHeld's file.
type heldKey struct{}

// WithHeld returns a context under which every trial's supervisor keeps f
// (the store's locked file) open until the trial's last process is gone, so
// that a flock on it outlives nccltune killed mid-trial for as long as the
// trial's processes do.
func WithHeld(ctx context.Context, f *os.File) context.Context {
	return context.WithValue(ctx, heldKey{}, f)
}

var (
	becomeSubreaper sync.Once
	// supervisors are the running trials' supervisors, registered under the
	// lock as they start, so that sweep never takes one for an orphan.
	supervisors = struct {
		sync.Mutex
		pids map[int]bool
	}{pids: map[int]bool{}}
)

// sweep ends what a dead supervisor left of its trial: the benchmark's
// process group, and every process reparented to nccltune (its subreaper)
// that is neither a running supervisor nor in nccltune's own process group,
// with all their descendants; it reaps them.
func sweep(bench int) {
	if bench > 0 {
		_ = syscall.Kill(-bench, syscall.SIGKILL)
	}
	supervisors.Lock()
	defer supervisors.Unlock()
	self, own := os.Getpid(), syscall.Getpgrp()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		var strays []proc
		for _, p := range children(self) {
			if !supervisors.pids[p.pid] && p.pgid != own {
				strays = append(strays, p)
			}
		}
		if len(strays) == 0 {
			return
		}
		for _, p := range strays {
			for _, d := range descendants(p.pid) {
				_ = syscall.Kill(d.pid, syscall.SIGKILL)
			}
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(p.pid, &ws, syscall.WNOHANG, nil)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// report is the supervisor's account of the benchmark, read as it comes:
// "pid N" once it started it, then how it ended ("exit N", "signal N"), or
// "launch ERROR" when it could not be started.
type report struct {
	done      chan string
	worded    bool // the supervisor said how the benchmark ended
	mu        sync.Mutex
	benchmark int // its pid
}

func readReport(r *os.File) *report {
	rep := &report{done: make(chan string, 1)}
	go func() {
		defer r.Close()
		sc := bufio.NewScanner(r)
		last := ""
		for sc.Scan() {
			if n, ok := strings.CutPrefix(sc.Text(), "pid "); ok {
				rep.mu.Lock()
				rep.benchmark, _ = strconv.Atoi(n)
				rep.mu.Unlock()
				continue
			}
			last = sc.Text()
		}
		rep.done <- last
	}()
	return rep
}

// pid is the benchmark's process id, 0 until the supervisor has started it.
func (r *report) pid() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.benchmark
}

// result waits for the supervisor's last word: how the benchmark ended, or why it could not start.
func (r *report) result(ps *os.ProcessState, waitErr error) (Exit, string) {
	var last string
	select {
	case last = <-r.done:
	case <-time.After(2 * time.Second):
		// The supervisor is reaped and the benchmark inherits no end of the
		// pipe: a writer left can only be a process that escaped both.
	}
	word, arg, _ := strings.Cut(last, " ")
	n, err := strconv.Atoi(arg)
	r.worded = err == nil && (word == "exit" || word == "signal") || word == "launch"
	switch {
	case word == "launch":
		return Exit{Code: -1}, arg
	case word == "exit" && err == nil:
		return Exit{Code: n}, ""
	case word == "signal" && err == nil:
		return Exit{Code: -1, Signal: syscall.Signal(n)}, ""
	}
	// The supervisor died without a word: report how.
	if e := exitOf(ps); e.Signal != 0 || waitErr == nil {
		return e, ""
	}
	return Exit{Code: -1}, "the trial's supervisor failed: " + waitErr.Error()
}

// exitFailure is the failure of a process that did not exit cleanly: killed
// by a signal, or a non-zero status, which describe explains where it can
// (nil: no better explanation); nil for a clean exit. detail is the
// benchmark's own first error line, if any.
func exitFailure(e Exit, detail string, describe func(code int) *Failure) *Failure {
	suffix := ""
	if detail != "" {
		suffix = ": " + detail
	}
	switch {
	case e.Signal != 0:
		return &Failure{FailSignal, fmt.Sprintf("killed by signal %d (%s)%s", int(e.Signal), signalName(e.Signal), suffix)}
	case e.Code == 0:
		return nil
	case e.Code > 128 && e.Code <= 128+maxSignal:
		// mpirun and srun (and a shell) exit 128+N when a rank was killed by
		// signal N. nccl-tests' own statuses are below 8; a user's command
		// that exits so high by itself is named killed, as a shell would.
		return &Failure{FailSignal, fmt.Sprintf("exit status %d: a process killed by signal %d (%s)%s", e.Code, e.Code-128, signalName(syscall.Signal(e.Code-128)), suffix)}
	case e.Code == 126 || e.Code == 127 || pythonNotStartedRE.MatchString(detail):
		// The dynamic loader (a missing libnccl.so.2), a shell or env: a
		// program found no library, or was not found or not executable; or
		// Python found no script or module to run (exit 2 or 1). No setting
		// of NCCL's does that, and no rank measured anything.
		return &Failure{FailLaunch, fmt.Sprintf("exit status %d (a program could not be started)%s", e.Code, suffix)}
	}
	if f := describe(e.Code); f != nil {
		f.Reason += suffix
		return f
	}
	return &Failure{FailExit, fmt.Sprintf("exit status %d%s", e.Code, suffix)}
}

// pythonNotStartedRE is the interpreter's word that it found nothing to run:
// "/usr/bin/python3: can't open file '/tmp/ddp_step.py': [Errno 2] No such
// file or directory" (the DDP step's script on a node that benchmark.
// script_dir is not shared with, a training script's path mistyped), or
// for -m "/usr/bin/python3: No module named megatron".
var pythonNotStartedRE = regexp.MustCompile(`\bpython[0-9.]*: (?:can't open file '[^']*': \[Errno [0-9]+\]|No module named \S+)`)

// maxSignal is Linux's highest signal number (SIGRTMAX).
const maxSignal = 64

// signalName describes sig as Go names it ("killed", "segmentation
// fault"), a real-time signal (32 to 64, the kernel's SIGRTMIN to SIGRTMAX,
// which Go names only "signal 34") as one, by its number: glibc keeps 32
// and 33 for itself and calls 34 SIGRTMIN, the kernel calls 32 so, so no
// SIGRTMIN+n form names one signal everywhere.
func signalName(sig syscall.Signal) string {
	if sig >= 32 && sig <= maxSignal {
		return fmt.Sprintf("real-time signal %d", int(sig))
	}
	return sig.String()
}

// stringHeader is what a string takes besides its bytes (pointer and length).
const stringHeader = 16

// capture keeps the first and the last part of a long output, and every
// line that keep (if set) keeps, up to limit bytes of them (string headers
// included). Both take the output with each mpirun rank's chunks joined
// into its lines (mpitag), as every reader of it reads it.
type capture struct {
	limit int
	ranks mpitag.Joiner
	head  bytes.Buffer
	tail  []byte
	lost  int64
	keep  func(line string) bool
	line  []byte // the unfinished line, for keep
	long  bool   // the unfinished line is longer than maxLine
	cr    bool   // the last line ended with '\r', so a '\n' right after it ends no other
	bar   bool   // the unfinished line follows a '\r' of the same '\n'-ended line
	tag   string // the rank prefix (rankRE) of that line's first part
	kept  []string
	size  int // bytes kept
	// dropped counts the lines keep kept once limit bytes of them were:
	// their values are missing from kept.
	dropped int
	// mu orders Write, which os/exec's goroutine calls, and mark, which
	// the timeout's does, and any Write that outlives Wait (WaitDelay).
	mu sync.Mutex
	// atMark is the output at mark, isMarked whether it was called.
	atMark   []byte
	isMarked bool
	// panicked is a panic of Write's (the Joiner's, keep's, a bug), which
	// runs in os/exec's goroutine, where it would end the process with
	// exit status 2; Run raises it in its own, where its caller's recover
	// reaches it.
	panicked *safego.Panic
}

func (c *capture) Write(p []byte) (n int, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer func() {
		if v := recover(); v != nil {
			c.panicked = &safego.Panic{Value: v, Stack: debug.Stack()}
			n, err = 0, errors.New("reading the output panicked") // the copy stops
		}
	}()
	c.ranks.Write(p, c.store)
	return len(p), nil
}

// store keeps p, output whose ranks' lines are joined.
func (c *capture) store(p []byte) {
	if c.keep != nil {
		c.lines(p)
	}
	if room := c.limit/4 - c.head.Len(); room > 0 {
		k := min(room, len(p))
		c.head.Write(p[:k])
		p = p[k:]
	}
	c.tail = append(c.tail, p...)
	if len(c.tail) > c.limit*3/2 { // compact rarely, so that writes stay amortised O(1)
		c.trim()
	}
}

func (c *capture) trim() {
	if over := len(c.tail) - c.limit*3/4; over > 0 {
		c.lost += int64(over)
		c.tail = append(c.tail[:0], c.tail[over:]...)
	}
}

// maxLine bounds a line passed to keep: a longer one is no line a metric is
// read from, and is not passed at all (cut, it could end inside a number).
const maxLine = 64 << 10

// lines passes each complete line of p to keep. A '\r' ends a line too: a
// progress bar rewrites its line with one, and each of its values is a
// value of the metric, not only the first.
func (c *capture) lines(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexAny(p, "\r\n")
		if i < 0 {
			c.add(p)
			c.cr = false
			return
		}
		c.add(p[:i])
		if i > 0 || p[i] == '\r' || !c.cr {
			c.offer()
		}
		c.cr = p[i] == '\r'
		c.bar = c.cr
		p = p[i+1:]
	}
}

// add appends b to the unfinished line, which past maxLine is passed over.
func (c *capture) add(b []byte) {
	if len(c.line)+len(b) > maxLine {
		c.long = true
	}
	if !c.long {
		c.line = append(c.line, b...)
	}
}

func (c *capture) offer() {
	line, long := string(c.line), c.long
	c.line, c.long = c.line[:0], false
	// A launcher tags a line (torchrun) where it ends with '\n': the parts a
	// progress bar's '\r' ends after the first are that rank's too, and
	// take its tag, so that skip stays per rank. (An mpirun rank's each
	// have its tag already: mpitag passes each on under it.)
	if !c.bar {
		c.tag = rankRE.FindString(line)
	} else if !rankRE.MatchString(line) {
		line = c.tag + line
	}
	if long {
		return
	}
	// Each line counts what keeping it takes, its string header too, so that
	// empty lines (which a metric such as '^(\d*)$' keeps) cannot pile up
	// without bound.
	cost := len(line) + stringHeader
	switch {
	case !c.keep(line):
	case c.size+cost > c.limit:
		c.dropped++
	default:
		c.kept = append(c.kept, line)
		c.size += cost
	}
}

// Kept are the lines keep kept, the last one included if unfinished,
// and how many it dropped: a Write that outlives Wait (WaitDelay) changes
// neither.
func (c *capture) Kept() ([]string, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ranks.Flush(c.store)
	if c.keep != nil && len(c.line) > 0 {
		c.offer()
	}
	return slices.Clone(c.kept), c.dropped
}

// writePanic is a panic of Write's, nil where none came.
func (c *capture) writePanic() *safego.Panic {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.panicked
}

func (c *capture) Bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ranks.Flush(c.store)
	c.trim()
	return c.snapshot()
}

// snapshot is the output kept so far, a note where some was dropped.
func (c *capture) snapshot() []byte {
	out := append([]byte{}, c.head.Bytes()...)
	if c.lost > 0 {
		out = fmt.Appendf(out, "\n[nccltune: %d bytes of output dropped here]\n", c.lost)
	}
	return append(out, c.tail...)
}

// mark keeps a copy of the output written so far (a rank's line that
// mpirun has not ended yet aside), for marked, as it writes on.
func (c *capture) mark() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.atMark, c.isMarked = c.snapshot(), true
}

// marked is the output as mark found it, false where mark was not called.
func (c *capture) marked() ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.atMark, c.isMarked
}
