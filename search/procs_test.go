package search

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"testing"

	"github.com/nccltune/nccltune/space"
)

// TestProposalsDoNotDependOnProcessors: the Gaussian process fits its
// ranges' models and scores its candidates' chunks on one goroutine a
// processor, and the sparse regression climbs from its starts so; which
// goroutine takes which piece, and how many there are, must not change a
// proposal (a sum over chunks or ranges combined in the order they end
// would). Histories hold failures and trials that left ranges out.
func TestProposalsDoNotDependOnProcessors(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, tc := range []struct {
		name string
		sp   *space.Space
	}{{"gp", rangesSpace(t, 8)}, {"sparse", loadSpace(t)}} {
		var want []space.Assignment
		for _, procs := range []int{1, 3, 64} {
			runtime.GOMAXPROCS(procs)
			got := proposals(t, tc.name, tc.sp, 20, 2)
			if want == nil {
				want = got
			} else if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s over %d ranges: on %d processors proposed %v; on 1, %v", tc.name, len(tc.sp.Ranges), procs, got, want)
			}
		}
	}
}

// proposals are sampler name's asks, each told back, after told random
// trials of sp with random scores (a fifth failed, a fifth of the ranges
// left out).
func proposals(t *testing.T, name string, sp *space.Space, told, asks int) []space.Assignment {
	s, err := New(name, sp, 1)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	scores := func() []float64 {
		if rng.IntN(5) == 0 {
			return nil
		}
		out := make([]float64, len(sp.Ranges))
		for r := range out {
			if rng.IntN(5) > 0 {
				out[r] = 1 + rng.Float64()
			}
		}
		return out
	}
	var out []space.Assignment
	for n := range told + asks {
		a := draw(sp, rng)
		if n >= told {
			if a, err = s.Ask(n); err != nil {
				t.Fatal(fmt.Errorf("trial %d: %w", n, err))
			}
			out = append(out, a)
		}
		if err := s.Tell(a, scores()); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestOneWorkerBesideMeasuringGroups: where launcher.groups measure while
// a proposal is made, the proposal takes one goroutine, not a processor's
// each, on a node that may be one of the groups'.
func TestOneWorkerBesideMeasuringGroups(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8))
	sp := rangesSpace(t, 8)
	if got := workers(sp, 8); got != 8 {
		t.Fatalf("one group: %d workers for 8 pieces on 8 processors, want 8", got)
	}
	grouped := *sp
	grouped.Launcher.Groups = 2
	if got := workers(&grouped, 8); got != 1 {
		t.Errorf("two groups measuring: %d workers, want 1", got)
	}
}
