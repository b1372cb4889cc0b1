package tuner

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"

	"gonum.org/v1/gonum/stat"

	"github.com/nccltune/nccltune/space"
	"github.com/nccltune/nccltune/store"
)

// Comparison is how two configurations compare on one size range.
type Comparison struct {
	Range        space.Range
	MeanA, MeanB float64 // busbw, GB/s; NaN if a run failed
	Gain         float64 // of B over A
	CILow        float64
	CIHigh       float64
	Verdict      string // "B faster", "A faster", "no significant difference", or why there is no verdict
}

// Compare measures two environments (NAME=value lists) against each other,
// interleaved for rounds rounds, and reports per range which is faster with
// a 95% confidence interval. Nothing is stored.
func (c *Campaign) Compare(ctx context.Context, a, b []string, rounds int) ([]Comparison, error) {
	if rounds < 2 {
		return nil, fmt.Errorf("comparison needs at least 2 rounds, got %d", rounds)
	}
	ses, err := c.launchable()
	if err != nil {
		return nil, err
	}
	arms := []arm{{name: "A", env: c.Space.Env(space.Assignment(space.EnvMap(a)))}, {name: "B", env: c.Space.Env(space.Assignment(space.EnvMap(b)))}}
	runs, err := c.measure(ctx, ses, arms, rounds)
	if err != nil {
		return nil, err
	}
	var out []Comparison
	for _, r := range c.Space.Ranges {
		cmp := Comparison{Range: r, MeanA: math.NaN(), MeanB: math.NaN(), Gain: math.NaN(), CILow: math.NaN(), CIHigh: math.NaN()}
		var sa, sb []float64
		for _, run := range runs {
			if run.State != store.Complete {
				cmp.Verdict = fmt.Sprintf("no verdict: %s failed in round %d (%s)", run.Arm, run.Round, run.Failure)
				break
			}
			if run.Arm == "A" {
				sa = append(sa, run.Scores[r.Name])
			} else {
				sb = append(sb, run.Scores[r.Name])
			}
		}
		if cmp.Verdict == "" {
			cmp.MeanA, cmp.MeanB = stat.Mean(sa, nil), stat.Mean(sb, nil)
			cmp.Gain, cmp.CILow, cmp.CIHigh = pairedGain(sa, sb)
			switch {
			case cmp.CILow > 0:
				cmp.Verdict = "B faster"
			case cmp.CIHigh < 0:
				cmp.Verdict = "A faster"
			default:
				cmp.Verdict = "no significant difference"
			}
		}
		out = append(out, cmp)
	}
	return out, nil
}

// ReadEnvFile reads NCCL_* settings from a file in the env format (`export
// NAME='value'`, as nccltune writes it) or the dotenv format (NAME=value).
// Every name and value is checked against the catalogue.
func ReadEnvFile(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var env []string
	var errs []error
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		name, raw, ok := strings.Cut(strings.TrimPrefix(text, "export "), "=")
		value, qerr := unquote(raw)
		var v space.Var
		if ok && qerr == nil {
			v, err = space.Lookup(name)
		}
		if ok && qerr == nil && err == nil {
			value, err = v.Normalize(value)
		}
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("%s:%d: not NAME=value", path, line))
		case qerr != nil:
			errs = append(errs, fmt.Errorf("%s:%d: %v", path, line, qerr))
		case err != nil:
			errs = append(errs, fmt.Errorf("%s:%d: %v", path, line, err))
		default:
			env = append(env, name+"="+value)
		}
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, err)
	}
	return env, errors.Join(errs...)
}

// unquote reads a value as a POSIX shell would: single quotes (with '\”
// joins), or bare.
func unquote(raw string) (string, error) {
	if !strings.HasPrefix(raw, "'") {
		if strings.ContainsAny(raw, "'\\\"$`") {
			return "", fmt.Errorf("value %q: only bare or single-quoted values are read", raw)
		}
		return raw, nil
	}
	var b strings.Builder
	rest := raw
	for {
		if !strings.HasPrefix(rest, "'") {
			return "", fmt.Errorf("value %q: unbalanced quotes", raw)
		}
		end := strings.IndexByte(rest[1:], '\'')
		if end < 0 {
			return "", fmt.Errorf("value %q: unbalanced quotes", raw)
		}
		b.WriteString(rest[1 : 1+end])
		rest = rest[end+2:]
		if rest == "" {
			return b.String(), nil
		}
		if !strings.HasPrefix(rest, `\'`) {
			return "", fmt.Errorf("value %q: unexpected %q after a quote", raw, rest)
		}
		b.WriteByte('\'')
		rest = rest[2:]
		if rest == "" {
			return b.String(), nil
		}
	}
}
