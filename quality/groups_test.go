package quality

import (
	"context"
	"math"
	"testing"
)

func TestGroupsResultCurves(t *testing.T) {
	r := GroupsResult{Runs: []GroupsRun{
		{Regret: []float64{0.5, 0.2, 0.1}, Wall: []float64{10, 20, 30}},
		{Regret: []float64{0.4, 0.3, 0.0}, Wall: []float64{12, 18, 40}},
		{Regret: []float64{0.6, 0.1, 0.1}, Wall: []float64{11, 25, 35}},
	}}
	for _, tc := range []struct{ w, want float64 }{{5, 1}, {11, 0.6}, {19, 0.5}, {26, 0.2}, {40, 0.1}} {
		if got := r.MedianRegretAt(tc.w); got != tc.want {
			t.Errorf("MedianRegretAt(%g) = %g, want %g", tc.w, got, tc.want)
		}
	}
	if got := r.MedianFinal(); got != 0.1 {
		t.Errorf("MedianFinal = %g", got)
	}
	if got := r.MedianWall(); got != 35 {
		t.Errorf("MedianWall = %g", got)
	}
	if got := r.WallToReach(0.2); got != 25 {
		t.Errorf("WallToReach(0.2) = %g, want 25 (when the third run reaches 0.1)", got)
	}
	if got := r.WallToReach(0.05); !math.IsNaN(got) {
		t.Errorf("WallToReach(0.05) = %g, want NaN (the median never gets there)", got)
	}
}

// TestGroupsNamedTwice: a scenario or a group count named twice runs its
// campaigns in full, each in a store of its own, instead of two campaigns
// opening one store at once.
func TestGroupsNamedTwice(t *testing.T) {
	o := Options{Seeds: 1, Trials: 10, Noise: 0.02, NoiseTarget: 0.1, Dir: t.TempDir()}
	res, err := MeasureGroups(context.Background(), []Scenario{Landscape(1), Landscape(1)}, []int{1, 1}, o, 0.001)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		for _, run := range r.Runs {
			if len(run.Regret) != o.Trials {
				t.Errorf("%s on %d group(s): %d trials scored, want %d", r.Scenario, r.Groups, len(run.Regret), o.Trials)
			}
		}
	}
}
