package tuner

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"gonum.org/v1/gonum/stat"

	"github.com/nccltune/nccltune/results"
	"github.com/nccltune/nccltune/space"
	"github.com/nccltune/nccltune/store"
)

// Comparison is how two configurations compare on one size range.
type Comparison struct {
	Range        space.Range
	MeanA, MeanB float64 // scores (higher is better: busbw in GB/s, or a time's inverse), geometric over the rounds; NaN if a run failed
	Gain         float64 // of B over A
	CILow        float64
	CIHigh       float64
	Verdict      string // "B faster", "A faster", "no significant difference", or why there is no verdict
}

// Compare measures two environments (NAME=value lists) against each other,
// interleaved for rounds rounds, and reports per range which is faster with
// a 95% confidence interval. Nothing is stored.
func (t *Tuner) Compare(ctx context.Context, a, b []string, rounds int) ([]Comparison, error) {
	if err := CheckRounds(rounds); err != nil {
		return nil, err
	}
	benches, groups, err := t.launchable()
	if err != nil {
		return nil, err
	}
	arms, err := compareArms(t.Space, a, b)
	if err != nil {
		return nil, err
	}
	s := &session{Tuner: t, benches: benches, groups: groups}
	s.prepare(fullSweep(t.Space))
	runs, err := s.measure(ctx, arms, rounds, progress{}, nil)
	if err != nil {
		return nil, err
	}
	return compareRuns(t.Space.Ranges, runs), nil
}

// compareRuns judges, per range, B against A from their interleaved runs.
func compareRuns(ranges []space.Range, runs []store.ValidationRun) []Comparison {
	var out []Comparison
	for _, r := range ranges {
		cmp := Comparison{Range: r, MeanA: math.NaN(), MeanB: math.NaN(), Gain: math.NaN(), CILow: math.NaN(), CIHigh: math.NaN()}
		var sa, sb []float64
		for _, run := range runs {
			if run.State != store.Complete {
				cmp.Verdict = fmt.Sprintf("no verdict: %s failed in round %d (%s)", run.Arm, run.Round, run.Failure)
				break
			}
			// A range nccl-tests measured no size of has no score, not one of 0.
			s, ok := run.Scores[r.Name]
			if !ok {
				cmp.Verdict = fmt.Sprintf("no verdict: %s measured no size of this range in round %d", run.Arm, run.Round)
				break
			}
			if run.Arm == "A" {
				sa = append(sa, s)
			} else {
				sb = append(sb, s)
			}
		}
		if cmp.Verdict == "" {
			cmp.MeanA, cmp.MeanB = stat.GeometricMean(sa, nil), stat.GeometricMean(sb, nil) // as validation's, beside a gain of ratios
			cmp.Gain, cmp.CILow, cmp.CIHigh = results.PairedGain(sa, sb)
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
	return out
}

// compareArms are A and B as launched: every setting checked as the space
// checks what it pins (a DDP knob that the benchmark would never get, or a
// setting that hides NCCL's log, is an error, not a silent no-op), the
// variables in the environment and the DDP knobs as the step's options.
func compareArms(sp *space.Space, a, b []string) ([]arm, error) {
	var arms []arm
	var errs []error
	for i, env := range [][]string{a, b} {
		name := []string{"A", "B"}[i]
		for _, kv := range env {
			k, v, _ := strings.Cut(kv, "=")
			if err := sp.CheckSetting(k, v); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
			}
		}
		set := space.Assignment(space.EnvMap(env))
		arms = append(arms, arm{name: name, assignment: set, env: sp.Env(set)})
	}
	return arms, errors.Join(errs...)
}
