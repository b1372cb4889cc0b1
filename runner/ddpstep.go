package runner

import (
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"unicode"

	"github.com/nccltune/nccltune/runner/ddp"
)

// DDPStep runs nccltune's DistributedDataParallel step script; its objective
// is rank 0's steps per second.
type DDPStep struct {
	Program []string // the interpreter, the script and its model options
}

// Command adds the plan's step counts, a port for rank 0's rendezvous and
// the configuration's DDP knobs.
func (b DDPStep) Command(p Plan) []string {
	argv := append(append([]string{}, b.Program...), "--steps", strconv.Itoa(p.Iters), "--warmup", strconv.Itoa(p.Warmup))
	if port := freePort(); port != 0 {
		argv = append(argv, "--master-port", strconv.Itoa(port))
	}
	return append(argv, p.Args...)
}

// freePort is a TCP port that nothing listens on now, 0 where none is found:
// each trial's rank 0 hosts its rendezvous (where MASTER_PORT is not set) on
// a port of its own, as torchrun --standalone does, so that the trials of
// two campaigns on one host neither fail to listen nor join each other's.
func freePort() int {
	l, err := net.Listen("tcp", ":0")
	if err != nil {
		return 0
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// ddpKinds maps the DDP script's own error kinds to failure kinds.
var ddpKinds = map[string]FailureKind{"no_torch": FailLaunch, "no_cuda": FailLaunch, "no_rendezvous": FailLaunch, "oom": FailOOM, "nccl": FailNCCL, "wrong": FailWrong}

// A step time outside these bounds (milliseconds) is no training step.
const minStepMs, maxStepMs = 1e-3, 1e8

// Read takes rank 0's result line, or the script's own error.
func (b DDPStep) Read(_ Plan, out Output) (*Measurement, *Failure) {
	r, err := ddp.Parse(out.Text)
	var scriptErr ddp.Error
	if errors.As(err, &scriptErr) {
		kind, ok := ddpKinds[scriptErr.Kind]
		if !ok {
			kind = FailExit
		}
		return nil, &Failure{kind, scriptErr.Message}
	}
	if f := exitFailure(out.Exit, out.detail(), func(int) *Failure { return nil }); f != nil {
		return nil, f
	}
	switch {
	case err != nil:
		return nil, &Failure{FailUnparsable, err.Error()}
	case math.IsNaN(r.StepMsMean) || r.StepMsMean < minStepMs || r.StepMsMean > maxStepMs:
		return nil, &Failure{FailImplausible, fmt.Sprintf("a step time of %g ms", r.StepMsMean)}
	case r.World < 1:
		return nil, &Failure{FailImplausible, fmt.Sprintf("a world of %d ranks", r.World)}
	}
	return &Measurement{Value: 1e3 / r.StepMsMean, Ranks: r.World}, nil
}

// lastLine is the last line of output that says something (a letter or a
// digit, not a rule such as torchrun's "====" under its report): a Python
// traceback's message.
func lastLine(output []byte) string {
	lines := strings.Split(string(output), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if saysSomething(lines[i]) {
			return strings.TrimSpace(lines[i])
		}
	}
	return ""
}

// saysSomething reports whether line holds a letter or a digit: not blank,
// nor a rule or other line of punctuation.
func saysSomething(line string) bool {
	return strings.IndexFunc(line, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0
}
