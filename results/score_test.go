package results

import (
	"math"
	"strings"
	"testing"

	"github.com/nccltune/nccltune/runner"
	"github.com/nccltune/nccltune/runner/nccltests"
	"github.com/nccltune/nccltune/space"
)

// TestScoreTimesTinyCalls: a workload's calls below the smallest size
// nccl-tests measures (all_gather prints 0 below 16 bytes a rank) take the
// time of the smallest size it measured; a range of which it measured
// nothing fails the trial, rather than leaving the job's time NaN.
func TestScoreTimesTinyCalls(t *testing.T) {
	sp, err := space.Parse("w.toml", []byte(`
[benchmark]
binary = "all_reduce_perf"
gpus = 16
[[workload]]
collective = "all_gather"
size = "64"
count = 1000
[[workload]]
collective = "all_reduce"
size = "1M"
count = 10
[[param]]
name = "NCCL_MIN_CTAS"
values = ["default", "4"]
`))
	if err != nil {
		t.Fatal(err)
	}
	row := func(coll string, size int64, us float64) nccltests.Row {
		return nccltests.Row{Collective: coll, Size: size, OutOfPlace: nccltests.Measure{TimeUs: us}, InPlace: nccltests.Measure{TimeUs: us}}
	}
	measured := []bool{true, true}
	scores, err := Score(sp, &runner.Measurement{Ranks: 16, Rows: []nccltests.Row{row("all_gather", sp.Sweep("all_gather").Min, 20), row("all_reduce", 1<<20, 50)}}, measured)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := 1/scores["all_gather"], 1000*20e-6; math.Abs(got-want) > 1e-12 {
		t.Errorf("all_gather's calls take %g s, want %g s", got, want)
	}
	// Over more ranks than the space says, nccl-tests printed size 0.
	_, err = Score(sp, &runner.Measurement{Ranks: 64, Rows: []nccltests.Row{row("all_gather", 0, 20), row("all_reduce", 1<<20, 50)}}, measured)
	if err == nil || !strings.Contains(err.Error(), "range all_gather: nccl-tests measured no size of all_gather above 0 over 64 ranks") {
		t.Errorf("%v", err)
	}
}
