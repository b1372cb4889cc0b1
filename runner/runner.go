// Package runner runs one trial: it starts the benchmark through a launcher
// with the trial's environment, under a supervisor that ends every process of
// the trial with it, enforces the timeout, reads NCCL's log and lets the
// benchmark judge its output.
package runner

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

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
	FailInvalid     FailureKind = "invalid"     // rejected before launch: NCCL would refuse the combination
)

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
// a user's shell settings cannot leak into a trial and skew the comparison.
func BaseEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "NCCL_") && !strings.HasPrefix(kv, superviseEnv+"=") {
			env = append(env, kv)
		}
	}
	return env
}

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
	cmd.Env = append(append(append([]string{}, r.BaseEnv...), job.Env...),
		superviseEnv+"="+strconv.Itoa(os.Getpid())+":"+grace.String())
	cmd.Stdout, cmd.Stderr = out, out
	cmd.ExtraFiles = []*os.File{statusW}
	// Pdeathsig: if nccltune dies, even by kill -9, the supervisor gets SIGTERM
	// and ends the trial. It is tied to the creating OS thread, so the
	// goroutine stays on that thread until the supervisor is reaped.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	// On timeout or interrupt the supervisor ends the tree: SIGTERM (so that
	// mpirun can take down its remote daemons), SIGKILL after the grace. A
	// launcher whose ranks are not in the tree (srun's) stops them itself.
	cmd.Cancel = func() error {
		err := cmd.Process.Signal(syscall.SIGTERM)
		if s, ok := r.Launcher.(Stopper); ok {
			if pid := status.pid(); pid > 0 {
				_ = s.Stop(pid) // best effort: srun, for one, usually ends its step on SIGTERM by itself
			}
		}
		return err
	}
	cmd.WaitDelay = grace + 5*time.Second
	err = cmd.Start()
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
	res.Duration = time.Since(res.Started)
	res.Output = out.Bytes()
	res.Log = nccllog.Parse(res.Output)
	exit, launchErr := status.result(cmd.ProcessState, waitErr)
	res.Exit = exit
	switch {
	case ctx.Err() != nil:
		res.Failure = &Failure{FailInterrupted, "campaign stopped while the trial ran"}
	case runCtx.Err() != nil:
		res.Failure = &Failure{FailTimeout, fmt.Sprintf("no exit within %s; every process of the trial was killed", job.Timeout)}
	case launchErr != "":
		res.Failure = &Failure{FailLaunch, launchErr}
	default:
		res.Measurement, res.Failure = job.Benchmark.Read(job.Plan, Output{Text: res.Output, Kept: out.Kept(), Exit: exit, Log: res.Log})
	}
	return res
}

// report is the supervisor's account of the benchmark, read as it comes:
// "pid N" once it started it, then how it ended ("exit N", "signal N"), or
// "launch ERROR" when it could not be started.
type report struct {
	done      chan string
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
	word, arg, _ := strings.Cut(<-r.done, " ")
	n, err := strconv.Atoi(arg)
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
		return &Failure{FailSignal, "killed by " + e.Signal.String() + suffix}
	case e.Code == 0:
		return nil
	}
	if f := describe(e.Code); f != nil {
		f.Reason += suffix
		return f
	}
	return &Failure{FailExit, fmt.Sprintf("exit status %d%s", e.Code, suffix)}
}

// capture keeps the first and the last part of a long output, and every
// line that keep (if set) keeps, up to limit bytes of them.
type capture struct {
	limit int
	head  bytes.Buffer
	tail  []byte
	lost  int64
	keep  func(line string) bool
	line  []byte // the unfinished line, for keep
	kept  []string
	size  int // bytes kept
}

func (c *capture) Write(p []byte) (int, error) {
	n := len(p)
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
	return n, nil
}

func (c *capture) trim() {
	if over := len(c.tail) - c.limit*3/4; over > 0 {
		c.lost += int64(over)
		c.tail = append(c.tail[:0], c.tail[over:]...)
	}
}

// lines passes each complete line of p to keep; a line longer than
// maxLine is no line a metric is read from, and is passed cut.
func (c *capture) lines(p []byte) {
	const maxLine = 64 << 10
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			c.line = append(c.line, p[:min(len(p), max(0, maxLine-len(c.line)))]...)
			return
		}
		c.line = append(c.line, p[:min(i, max(0, maxLine-len(c.line)))]...)
		c.offer()
		p = p[i+1:]
	}
}

func (c *capture) offer() {
	line := strings.TrimSuffix(string(c.line), "\r")
	c.line = c.line[:0]
	if c.size+len(line) <= c.limit && c.keep(line) {
		c.kept = append(c.kept, line)
		c.size += len(line)
	}
}

// Kept are the lines keep kept, the last one included if unfinished.
func (c *capture) Kept() []string {
	if c.keep != nil && len(c.line) > 0 {
		c.offer()
	}
	return c.kept
}

func (c *capture) Bytes() []byte {
	c.trim()
	out := append([]byte{}, c.head.Bytes()...)
	if c.lost > 0 {
		out = fmt.Appendf(out, "\n[nccltune: %d bytes of output dropped here]\n", c.lost)
	}
	return append(out, c.tail...)
}
