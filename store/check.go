package store

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/nccltune/nccltune/space"
)

// ErrTampered means a row read from the store cannot have been written by
// nccltune: the store was edited or damaged. Nothing is decided on it.
var ErrTampered = errors.New("the store holds what nccltune never writes; it was edited or damaged")

// maxTrialNumber bounds a trial's number: far beyond any budget, well within
// what every slice indexed by it can hold.
const maxTrialNumber = 1 << 20

var states = map[State]bool{Running: true, Complete: true, Failed: true, Interrupted: true, Pruned: true}

var phases = map[Phase]bool{Search: true, Simplification: true}

// checkCampaign checks a campaign as read back.
func checkCampaign(c Campaign) error {
	switch {
	case c.Budget < 0 || c.Budget > maxTrialNumber:
		return fmt.Errorf("campaign %d: budget %d: %w", c.ID, c.Budget, ErrTampered)
	case c.Scale < 0 || c.Scale > 1<<20:
		return fmt.Errorf("campaign %d: scale %d: %w", c.ID, c.Scale, ErrTampered)
	case c.ValidateRounds < 0 || c.ValidateRounds > maxValidateRounds:
		return fmt.Errorf("campaign %d: %d validation rounds: %w", c.ID, c.ValidateRounds, ErrTampered)
	case len(c.Space) > space.MaxFile: // the loader reads no more, and every reader parses it
		return fmt.Errorf("campaign %d: a stored space of %d bytes, over %d MiB: %w", c.ID, len(c.Space), space.MaxFile>>20, ErrTampered)
	case c.Latest != nil && !c.Latest.valid():
		return fmt.Errorf("campaign %d: latest run's patience %d, timeout %s, shortest timeout %s: %w", c.ID, c.Latest.Patience, c.Latest.Timeout, c.Latest.ShortestTimeout, ErrTampered)
	}
	return nil
}

// valid reports whether r holds a patience and timeouts a space file may
// give: a resume without --space runs them as read back, past the space's
// checks, and a timeout of 0 is none (a hung trial waits for good).
func (r RunSettings) valid() bool {
	timeout := func(d time.Duration) bool { return d >= space.MinTimeout && d <= space.MaxTimeout }
	return r.Patience >= 0 && timeout(r.Timeout) && timeout(r.ShortestTimeout)
}

// maxValidateRounds bounds a campaign's validation rounds as
// tuner.MaxRounds does (the tuner imports this package): a resume runs
// them, and an edited count would run for weeks.
const maxValidateRounds = 1000

// storable refuses to write a campaign that checkCampaign would refuse to
// read back: the trials written under it would be lost to every later
// command.
func storable(c Campaign) error {
	if err := checkCampaign(c); err != nil {
		return fmt.Errorf("campaign %s: budget %d, scale %d, %d validation rounds or the run's settings (%+v) are beyond what a store holds (budget 0 to %d, rounds 0 to %d, patience 0 up, timeout %s to %s)",
			c.Name, c.Budget, c.Scale, c.ValidateRounds, c.Latest, maxTrialNumber, maxValidateRounds, space.MinTimeout, space.MaxTimeout)
	}
	return nil
}

// checkTrials checks a campaign's trials as read back, in the order Trials
// returns them (by number): every number from 0 up to a bound, each held by
// one trial that is not interrupted (an interrupted one runs again under its
// number) and by trials of one phase,
// every state and phase one nccltune writes, every score and measurement
// finite and not negative.
func checkTrials(ts []Trial) error {
	live := map[int]bool{}
	phaseOf := map[int]Phase{}
	for _, t := range ts {
		bad := func(format string, args ...any) error {
			return fmt.Errorf("trial %d (row %d): %s: %w", t.Number, t.ID, fmt.Sprintf(format, args...), ErrTampered)
		}
		switch {
		case t.Number < 0 || t.Number >= maxTrialNumber:
			return bad("number out of range")
		case !states[t.State]:
			return bad("unknown state %q", t.State)
		case !phases[t.Phase]:
			return bad("unknown phase %q", t.Phase)
		case phaseOf[t.Number] != "" && phaseOf[t.Number] != t.Phase:
			return bad("trials of that number in phases %s and %s", phaseOf[t.Number], t.Phase)
		case t.Group < 0 || t.Group > 1<<16:
			return bad("node group %d", t.Group)
		}
		phaseOf[t.Number] = t.Phase
		if t.State != Interrupted {
			if live[t.Number] {
				return bad("a second trial of that number")
			}
			live[t.Number] = true
		}
		for name, s := range t.Scores {
			if math.IsNaN(s) || math.IsInf(s, 0) || s < 0 {
				return bad("score %s = %g", name, s)
			}
		}
		for i, r := range t.Rows {
			for _, v := range []float64{r.OutOfPlace.TimeUs, r.OutOfPlace.AlgBW, r.OutOfPlace.BusBW, r.InPlace.TimeUs, r.InPlace.AlgBW, r.InPlace.BusBW} {
				if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
					return bad("result row %d: measurement %g", i, v)
				}
			}
			if r.Size < 0 || r.Count < 0 || r.OutOfPlace.Wrong < -1 || r.InPlace.Wrong < -1 {
				return bad("result row %d: negative size, count or error count", i)
			}
		}
	}
	return nil
}

// checkValidation checks a verdict as read back: one nccltune gives
// ("tuned" or "default"), on a trial number a store holds (-1: a composed
// configuration), with rounds not negative and means and gains finite or
// absent (NULL, read as NaN: the store never holds an infinity).
func checkValidation(v Validation) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("validation of range %q (batch %d): %s: %w", v.Range, v.Batch, fmt.Sprintf(format, args...), ErrTampered)
	}
	switch {
	case v.Verdict != "tuned" && v.Verdict != "default":
		return bad("unknown verdict %q", v.Verdict)
	case v.Candidate < -1 || v.Candidate >= maxTrialNumber:
		return bad("trial %d", v.Candidate)
	case v.Rounds < 0:
		return bad("%d rounds", v.Rounds)
	}
	for _, x := range []float64{v.DefaultMean, v.TunedMean, v.Gain, v.CILow, v.CIHigh} {
		if math.IsInf(x, 0) {
			return bad("%g", x)
		}
	}
	return nil
}

// checkValidationRun checks a validation run as read back: a state
// validation writes (a run it stopped is not kept), a round a validation
// can have, and scores not negative (JSON holds no NaN or infinity). A run
// of another state read as failed, and held its configuration to NCCL's
// defaults.
func checkValidationRun(r ValidationRun) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("validation run (round %d, %s): %s: %w", r.Round, r.Arm, fmt.Sprintf(format, args...), ErrTampered)
	}
	switch {
	case r.State != Complete && r.State != Failed:
		return bad("state %q", r.State)
	case r.Round < 0 || r.Round >= maxValidateRounds:
		return bad("round out of range")
	}
	for name, s := range r.Scores {
		if s < 0 {
			return bad("score %s = %g", name, s)
		}
	}
	return nil
}
