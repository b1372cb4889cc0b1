package results

import (
	"bytes"
	"math"
	"os"
	"slices"
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

// TestInPlaceUnsupportedIsNoMeasure: alltoall's in-place run on one H200
// copies nothing (7,453 GB/s at 8 MB against 1,175 out of place), so its
// bandwidth is the out-of-place half's; all_reduce's is both halves'.
func TestInPlaceUnsupportedIsNoMeasure(t *testing.T) {
	out, err := os.ReadFile("../runner/nccltests/testdata/h200-nccl2.28.3-tests2.19.6/alltoall_perf.txt")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := nccltests.Parse(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	for _, coll := range []string{"alltoall", "all_reduce"} {
		rows := slices.Clone(rep.Rows)
		for i := range rows {
			rows[i].Collective = coll
		}
		for i, bw := range BusBW(rows) {
			r := rows[i]
			want := float64(r.Size) / r.OutOfPlace.TimeUs / 1e3
			if coll == "all_reduce" {
				want = float64(r.Size) / ((r.OutOfPlace.TimeUs + r.InPlace.TimeUs) / 2) / 1e3
			}
			if r.Size > 0 && math.Abs(bw-want) > 1e-9*want {
				t.Errorf("%s at %d bytes: %.4g GB/s, want %.4g", coll, r.Size, bw, want)
			}
		}
	}
}
