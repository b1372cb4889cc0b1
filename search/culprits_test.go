package search

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/nccltune/nccltune/space"
)

// culpritSpace is six settings of 40 values each (234 unit features) over
// two ranges.
func culpritSpace(t *testing.T) *space.Space {
	var params string
	for i, name := range []string{"NCCL_SOCKET_IFNAME", "NCCL_IB_HCA", "NCCL_TOPO_FILE", "NCCL_NET_PLUGIN", "NCCL_NET", "NCCL_TUNER_CONFIG_FILE"} {
		var vs []string
		for v := range 40 {
			vs = append(vs, fmt.Sprintf("%q", fmt.Sprintf("/x%d/v%d", i, v)))
		}
		params += param(name, "values = ["+strings.Join(vs, ", ")+"]")
	}
	return hostileSpace(t, 2, params)
}

// TestSparseCulpritsAreBounded: every failure kept a flag per pair of the
// space's unit features, and a proposal weighed every failure over all of
// those pairs for each of the tens of thousands of neighbours its climbs
// weigh: a campaign whose draws mostly fail (rules most configurations
// break) or a long one resumed took tens of seconds to hours a proposal
// and a flag per pair per failure (here 2000 failures of 234 units, 110
// MB). A failure keeps its suspects among the units it held, and the
// latest sparseObservations failures are weighed, as the regression
// weighs a bounded number of trials.
func TestSparseCulpritsAreBounded(t *testing.T) {
	sp := culpritSpace(t)
	s, err := newSparse(sp, 1)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		var scores []float64
		if i%10 == 0 {
			scores = []float64{1 + rng.Float64(), 1 + rng.Float64()}
		}
		if err := s.Tell(draw(sp, rng), scores); err != nil {
			t.Fatal(err)
		}
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	c := s.culprits()
	runtime.ReadMemStats(&after)
	if mb := (after.TotalAlloc - before.TotalAlloc) >> 20; mb > 16 {
		t.Errorf("the culprits of 1800 failures allocated %d MiB", mb)
	}
	if n := len(c.failures); n > sparseObservations {
		t.Errorf("%d failures weighed, want at most %d", n, sparseObservations)
	}
}
