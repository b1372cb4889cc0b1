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

// TestTPEGPIsTPEAndGPTakingTurns: the default sampler proposes what TPE
// and the Gaussian process, taking tpeGPTurn's turns, would.
func TestTPEGPIsTPEAndGPTakingTurns(t *testing.T) {
	sp := loadSpace(t)
	tpe, err := newTPE(sp, 42, true)
	if err != nil {
		t.Fatal(err)
	}
	want := portfolio{[]Sampler{tpe, newGP(sp, 42)}, tpeGPTurn}
	got := mustNew(t, "tpe-gp", sp)
	for n := range tpeGPEarly + 8 {
		a, _ := got.Ask(n)
		b, _ := want.Ask(n)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("trial %d: tpe-gp proposed %v, TPE and the Gaussian process in turn %v", n, a, b)
		}
		got.Tell(a, objective(a))
		want.Tell(a, objective(a))
	}
}
