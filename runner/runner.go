// Package runner runs one trial: it starts the benchmark through a launcher with
// the trial's environment, enforces the timeout on the whole process group,
// parses the output and classifies any failure.
package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/nccltune/nccltune/runner/ddp"
	"github.com/nccltune/nccltune/runner/nccltests"
)

// FailureKind says how a trial failed; the store and reports count by it.
type FailureKind string

const (
	FailLaunch      FailureKind = "launch"      // the command could not be started
	FailTimeout     FailureKind = "timeout"     // it ran past the trial timeout (hang)
	FailInterrupted FailureKind = "interrupted" // the campaign was stopped while it ran
	FailNCCL        FailureKind = "nccl"        // NCCL or CUDA reported an error
	FailWrong       FailureKind = "wrong"       // results were checked and found wrong
	FailSignal      FailureKind = "signal"      // killed by a signal it did not get from us
	FailExit        FailureKind = "exit"        // non-zero exit with no better explanation
	FailUnparsable  FailureKind = "unparsable"  // no result table in the output
	FailOOM         FailureKind = "oom"         // out of GPU memory (DDP step)
	FailInvalid     FailureKind = "invalid"     // rejected before launch: NCCL would refuse the combination
)

// Format is what the benchmark prints, and so how its output is read.
type Format int

const (
	NCCLTests Format = iota // nccl-tests' result table
	DDPStep                 // the DDP step script's NCCLTUNE_DDP lines
)

// Failure is why a trial produced no usable result.
type Failure struct {
	Kind   FailureKind
	Reason string
}

func (f *Failure) Error() string { return string(f.Kind) + ": " + f.Reason }

// Job is one benchmark launch.
type Job struct {
	Command []string      // the benchmark's argv, before the launcher wraps it
	Env     []string      // the trial's NCCL_* variables, NAME=value
	Timeout time.Duration // 0 means none
	Format  Format
}

// Result is what one launch produced.
type Result struct {
	Command  []string // the argv that was executed, launcher included
	Output   []byte   // stdout and stderr, interleaved as written (head and tail kept when huge)
	ExitCode int      // -1 when the process did not exit normally
	Started  time.Time
	Duration time.Duration
	Report   *nccltests.Report // nil when the output was not parsed
	DDP      *ddp.Result       // rank 0's step time, for the DDPStep format
	Failure  *Failure          // nil on success
}

// Launcher turns a benchmark command into the command that starts it on every
// rank, passing the trial's variables to all of them.
type Launcher interface {
	Wrap(cmd, env []string) ([]string, error)
}

// Local starts the benchmark directly on this node; its variables reach it
// through the process environment.
type Local struct{}

// Wrap returns cmd unchanged.
func (Local) Wrap(cmd, _ []string) ([]string, error) { return cmd, nil }

// Runner runs jobs through one launcher.
type Runner struct {
	Launcher Launcher
	// BaseEnv is the environment every job starts from; the job's variables are
	// appended. Use BaseEnv() to inherit this process's environment minus NCCL_*.
	BaseEnv []string
	// Grace is how long the process group has between SIGTERM and SIGKILL.
	Grace time.Duration
}

// BaseEnv returns this process's environment without NCCL_* variables, so that
// a user's shell settings cannot leak into a trial and skew the comparison.
func BaseEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "NCCL_") {
			env = append(env, kv)
		}
	}
	return env
}

// maxOutput bounds the output kept per trial; NCCL INFO logs of large jobs are long.
const maxOutput = 8 << 20

// Run launches the job and waits for it. It never returns an error: every
// problem is a Failure in the result, so that a campaign records it and goes on.
func (r *Runner) Run(ctx context.Context, job Job) Result {
	res := Result{Started: time.Now(), ExitCode: -1}
	argv, err := r.Launcher.Wrap(job.Command, job.Env)
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

	out := &capture{limit: maxOutput}
	cmd := exec.CommandContext(runCtx, argv[0], argv[1:]...)
	cmd.Env = append(append([]string{}, r.BaseEnv...), job.Env...)
	cmd.Stdout, cmd.Stderr = out, out
	// Pdeathsig: if nccltune itself is killed (even with -9), the benchmark gets
	// SIGTERM instead of running on unwatched. It is tied to the creating OS
	// thread, so the goroutine stays on that thread until the benchmark is reaped.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	grace := r.Grace
	if grace <= 0 {
		grace = 5 * time.Second
	}
	// On timeout or interrupt the whole process tree gets SIGTERM (so mpirun can
	// take down its remote daemons), then SIGKILL after the grace period.
	cmd.Cancel = func() error {
		pid := cmd.Process.Pid
		tree := descendants(pid)
		signalTree(pid, tree, syscall.SIGTERM)
		time.AfterFunc(grace, func() { signalTree(pid, append(tree, descendants(pid)...), syscall.SIGKILL) })
		if s, ok := r.Launcher.(Stopper); ok {
			// Best effort: srun, for one, usually ends its step on SIGTERM by itself.
			_ = s.Stop(pid)
		}
		return nil
	}
	// A grandchild that keeps the output pipe open must not block us past the grace.
	cmd.WaitDelay = grace + time.Second
	if err := cmd.Start(); err != nil {
		res.Failure = &Failure{FailLaunch, err.Error()}
		if ctx.Err() != nil {
			res.Failure = &Failure{FailInterrupted, "campaign stopped before the trial started"}
		}
		return res
	}
	waitErr := cmd.Wait()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // nothing of the trial outlives it
	res.Duration = time.Since(res.Started)
	res.Output = out.Bytes()
	if cmd.ProcessState != nil {
		res.ExitCode = cmd.ProcessState.ExitCode()
	}
	if job.Format == DDPStep {
		res.Failure = classifyDDP(ctx, runCtx, cmd.ProcessState, waitErr, &res)
	} else {
		res.Report, err = nccltests.Parse(bytes.NewReader(res.Output))
		res.Failure = classify(ctx, runCtx, cmd.ProcessState, waitErr, res.Report, err)
	}
	if res.Failure != nil && res.Failure.Kind == FailTimeout {
		res.Failure.Reason = fmt.Sprintf("no exit within %s; process group killed", job.Timeout)
	}
	return res
}

// nccl-tests' exit codes (testResult_t in src/common.h).
var exitMeaning = map[int]struct {
	kind   FailureKind
	reason string
}{
	1: {FailExit, "nccl-tests internal error"},
	2: {FailNCCL, "CUDA error"},
	3: {FailNCCL, "NCCL error"},
	4: {FailTimeout, "nccl-tests' own timeout (-T)"},
	5: {FailLaunch, "not supported by this build or launch"},
	6: {FailLaunch, "invalid usage"},
	7: {FailWrong, "wrong data, or bus bandwidth under NCCL_TESTS_MIN_BW"},
}

// stopped classifies a run that we stopped ourselves: interrupt or timeout.
func stopped(parent, run context.Context) *Failure {
	switch {
	case parent.Err() != nil:
		return &Failure{FailInterrupted, "campaign stopped while the trial ran"}
	case errors.Is(run.Err(), context.DeadlineExceeded):
		return &Failure{FailTimeout, ""}
	}
	return nil
}

// ddpKinds maps the DDP script's own error kinds to failure kinds.
var ddpKinds = map[string]FailureKind{"no_torch": FailLaunch, "no_cuda": FailLaunch, "oom": FailOOM, "nccl": FailNCCL}

func classifyDDP(parent, run context.Context, ps *os.ProcessState, waitErr error, res *Result) *Failure {
	if f := stopped(parent, run); f != nil {
		return f
	}
	r, err := ddp.Parse(res.Output)
	var scriptErr ddp.Error
	switch {
	case errors.As(err, &scriptErr):
		kind, ok := ddpKinds[scriptErr.Kind]
		if !ok {
			kind = FailExit
		}
		return &Failure{kind, scriptErr.Message}
	case ps != nil && !ps.Exited():
		return &Failure{FailSignal, "killed by " + ps.String()}
	case ps != nil && ps.ExitCode() != 0:
		return &Failure{FailExit, fmt.Sprintf("exit status %d: %s", ps.ExitCode(), lastLine(res.Output))}
	case waitErr != nil:
		return &Failure{FailExit, waitErr.Error()}
	case err != nil:
		return &Failure{FailUnparsable, err.Error()}
	}
	res.DDP = &r
	return nil
}

// lastLine is the last non-blank line of output: a Python traceback's message.
func lastLine(output []byte) string {
	lines := strings.Split(strings.TrimSpace(string(output)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

func classify(parent, run context.Context, ps *os.ProcessState, waitErr error, rep *nccltests.Report, parseErr error) *Failure {
	if f := stopped(parent, run); f != nil {
		return f
	}
	if ps != nil && !ps.Exited() {
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return &Failure{FailSignal, "killed by " + ws.Signal().String() + failureDetail(rep)}
		}
	}
	code := 0
	if ps != nil {
		code = ps.ExitCode()
	}
	if code == 0 && waitErr != nil {
		return &Failure{FailExit, waitErr.Error() + failureDetail(rep)}
	}
	return Judge(code, rep, parseErr)
}

// failureDetail is the benchmark's own first error line, if any, the most
// specific reason there is, as a suffix for a failure's reason.
func failureDetail(rep *nccltests.Report) string {
	if rep == nil || len(rep.Failures) == 0 {
		return ""
	}
	return ": " + rep.Failures[0]
}

// Judge classifies an nccl-tests run that exited with exitCode, from its
// parsed output (and the parser's error): nil if it measured correctly.
func Judge(exitCode int, rep *nccltests.Report, parseErr error) *Failure {
	detail := failureDetail(rep)
	if exitCode != 0 {
		m, ok := exitMeaning[exitCode]
		if !ok {
			m.kind, m.reason = FailExit, "unknown cause"
		}
		return &Failure{m.kind, fmt.Sprintf("exit status %d (%s)%s", exitCode, m.reason, detail)}
	}
	if parseErr != nil {
		if detail != "" {
			return &Failure{FailNCCL, strings.TrimPrefix(detail, ": ")}
		}
		return &Failure{FailUnparsable, parseErr.Error()}
	}
	// A clean exit with a full table: NCCL WARN lines alone (often harmless) do not fail it.
	for _, row := range rep.Rows {
		if w := row.Wrong(); w > 0 {
			return &Failure{FailWrong, fmt.Sprintf("%d wrong elements at %d bytes", w, row.Size)}
		}
	}
	if rep.OutOfBounds > 0 {
		return &Failure{FailWrong, fmt.Sprintf("%d out-of-bounds values", rep.OutOfBounds)}
	}
	return nil
}

// capture keeps the first and the last part of a long output.
type capture struct {
	limit int
	head  bytes.Buffer
	tail  []byte
	lost  int64
}

func (c *capture) Write(p []byte) (int, error) {
	n := len(p)
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

func (c *capture) Bytes() []byte {
	c.trim()
	out := append([]byte{}, c.head.Bytes()...)
	if c.lost > 0 {
		out = fmt.Appendf(out, "\n[nccltune: %d bytes of output dropped here]\n", c.lost)
	}
	return append(out, c.tail...)
}
