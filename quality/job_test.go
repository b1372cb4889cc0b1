package quality

import (
	"context"
	"testing"

	"github.com/nccltune/nccltune/space"
)

// TestJobBenchmark runs a short version of `nccltune bench job`: the job's
// exported configuration must beat NCCL's defaults and come near the best
// single configuration there is for the workload.
func TestJobBenchmark(t *testing.T) {
	runs, err := MeasureJob(context.Background(), []string{"2node-ib-gdr-off"}, Options{Seeds: 1, Trials: 40, Noise: 0.02, NoiseTarget: space.DefaultNoiseTarget, Dir: t.TempDir()}, 3)
	if err != nil {
		t.Fatal(err)
	}
	r := runs["2node-ib-gdr-off"][0]
	if !(r.Best > 0) || r.Best > r.Exported || r.Exported >= r.Default || r.Regret() > 0.05 {
		t.Errorf("job times %+v: regret %.3f", r, r.Regret())
	}
}
