package search

import (
	"reflect"
	"strconv"
	"testing"

	"github.com/nccltune/nccltune/space"
)

// recorder proposes its own name and the trial number it was asked for,
// and keeps what it was told and which ranges it was focused on.
type recorder struct {
	name  string
	told  []space.Assignment
	focus []bool
}

func (r *recorder) Ask(n int) (space.Assignment, error) {
	return space.Assignment{"by": r.name, "n": strconv.Itoa(n)}, nil
}

func (r *recorder) Tell(a space.Assignment, _ []float64) error {
	r.told = append(r.told, a)
	return nil
}

func (r *recorder) Focus(ranges []bool) { r.focus = ranges }

// TestPortfolioTakesTurns: tpe-gp's members propose in turn, each counting
// its own trials: the Gaussian process alone up to trial tpeGPEarly, then
// TPE and the process in turn; every member is told every trial and the
// ranges to focus on.
func TestPortfolioTakesTurns(t *testing.T) {
	a, b := &recorder{name: "tpe"}, &recorder{name: "gp"}
	p := portfolio{[]Sampler{a, b}, tpeGPTurn}
	p.Focus([]bool{true, false})
	var asked []space.Assignment
	for n := range tpeGPEarly + 8 {
		prop, err := p.Ask(n)
		if err != nil {
			t.Fatal(err)
		}
		asked = append(asked, prop)
		p.Tell(prop, []float64{1, 1})
	}
	var want []space.Assignment
	for k := range tpeGPEarly {
		want = append(want, space.Assignment{"by": "gp", "n": strconv.Itoa(k)})
	}
	for k := range 4 {
		want = append(want, space.Assignment{"by": "tpe", "n": strconv.Itoa(k)}, space.Assignment{"by": "gp", "n": strconv.Itoa(tpeGPEarly + k)})
	}
	if !reflect.DeepEqual(asked, want) {
		t.Errorf("proposals\n%v\nwant\n%v", asked, want)
	}
	for _, r := range []*recorder{a, b} {
		if !reflect.DeepEqual(r.told, want) || !reflect.DeepEqual(r.focus, []bool{true, false}) {
			t.Errorf("%s was told %v, focused on %v", r.name, r.told, r.focus)
		}
	}
}

// TestTPEGPIsTPEAndGPTakingTurns: the default sampler is wired as TPE and
// the Gaussian process taking tpeGPTurn's turns (TestPortfolioTakesTurns
// pins the turns).
func TestTPEGPIsTPEAndGPTakingTurns(t *testing.T) {
	sp := loadSpace(t)
	tpe, err := newTPE(sp, 42, true)
	if err != nil {
		t.Fatal(err)
	}
	sameProposals(t, mustNew(t, "tpe-gp", sp), portfolio{[]Sampler{tpe, newGP(sp, 42)}, tpeGPTurn}, tpeGPEarly+8)
}

// TestTPEGPStartsAsGP: up to trial tpeGPEarly the default proposes what
// the Gaussian process alone would, covering start-up included.
func TestTPEGPStartsAsGP(t *testing.T) {
	sp := loadSpace(t)
	sameProposals(t, mustNew(t, "tpe-gp", sp), mustNew(t, "gp", sp), tpeGPEarly)
}

// sameProposals fails unless got and want propose the same for the first
// trials, each told the test objective's scores.
func sameProposals(t *testing.T, got, want Sampler, trials int) {
	t.Helper()
	for n := range trials {
		a, _ := got.Ask(n)
		b, _ := want.Ask(n)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("trial %d: proposed %v, want %v", n, a, b)
		}
		got.Tell(a, objective(a))
		want.Tell(a, objective(a))
	}
}
