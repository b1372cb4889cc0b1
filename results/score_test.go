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
		for i, bw := range BusBW(rows, 1) {
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

// TestScoreIsContinuousInTime: two runs of a sweep of small sizes over 16
// ranks alike but for the largest size, 0.99 GB/s of algbw in one and 1.01
// in the other, score alike: the bus factor (1.875) is all_reduce's over
// the ranks, whether or not some row's figures are large enough to read it
// off (it was 1, algbw, in the first run and 1.875 in the second).
func TestScoreIsContinuousInTime(t *testing.T) {
	sp, err := space.Parse("s.toml", []byte(`
[campaign]
sizes = { min = "8", max = "32K", factor = 2 }
[benchmark]
binary = "all_reduce_perf"
gpus = 16
[[param]]
name = "NCCL_MIN_CTAS"
values = ["default", "4"]
`))
	if err != nil {
		t.Fatal(err)
	}
	run := func(topAlgBW float64) float64 {
		var rows []nccltests.Row
		for size := int64(8); size <= 32<<10; size *= 2 {
			us := 20.0
			if size == 32<<10 {
				us = float64(size) / topAlgBW / 1e3
			}
			alg := math.Round(float64(size)/us/1e3*100) / 100
			m := nccltests.Measure{TimeUs: math.Round(us*100) / 100, AlgBW: alg, BusBW: math.Round(alg*1.875*100) / 100}
			rows = append(rows, nccltests.Row{Collective: "all_reduce", Size: size, Count: size / 4, Type: "float", Redop: "sum", Root: -1, OutOfPlace: m, InPlace: m})
		}
		scores, err := Score(sp, &runner.Measurement{Ranks: 16, Rows: rows}, []bool{true})
		if err != nil {
			t.Fatal(err)
		}
		return scores["all"]
	}
	// A wrapper's table, which names no rank, is measured with the ranks
	// launched (runner's TestRanksOfATableNamingNone).
	slow, fast := run(0.99), run(1.01)
	if gain := fast/slow - 1; gain < 0 || gain > 0.01 {
		t.Errorf("a run 2%% faster at one size of 13 scores %+.1f%% over the other", 100*gain)
	}
}
