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

// TestPortfolioTakesTurns: the members propose in turn, each counting its
// own trials, and every member is told every trial and the ranges to focus
// on.
func TestPortfolioTakesTurns(t *testing.T) {
	a, b := &recorder{name: "a"}, &recorder{name: "b"}
	p := portfolio{a, b}
	p.Focus([]bool{true, false})
	var asked []space.Assignment
	for n := range 5 {
		prop, err := p.Ask(n)
		if err != nil {
			t.Fatal(err)
		}
		asked = append(asked, prop)
		p.Tell(prop, []float64{1, 1})
	}
	want := []space.Assignment{
		{"by": "a", "n": "0"}, {"by": "b", "n": "0"}, {"by": "a", "n": "1"}, {"by": "b", "n": "1"}, {"by": "a", "n": "2"},
	}
	if !reflect.DeepEqual(asked, want) {
		t.Errorf("proposals %v, want %v", asked, want)
	}
	for _, r := range []*recorder{a, b} {
		if !reflect.DeepEqual(r.told, want) || !reflect.DeepEqual(r.focus, []bool{true, false}) {
			t.Errorf("%s was told %v, focused on %v", r.name, r.told, r.focus)
		}
	}
}
