// Package results is what a campaign's measurements mean: each trial's
// score per size range, the choice per range (the configuration of the
// highest estimate, held to its measurements, the simplest among equals),
// the verdict of a validation, and which parameters matter.
package results

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/nccltune/nccltune/runner"
	"github.com/nccltune/nccltune/runner/nccltests"
	"github.com/nccltune/nccltune/space"
)

// Score scores a measurement per size range, by range name: for a sweep, each
// range it measured (measured[i], indexed like sp.Ranges) scores its
// geometric mean bus bandwidth; a single objective is the one range's score.
// Every score is finite and positive; a measured range without one is an
// error. (A range of sizes that all round to nothing, as all_gather's
// smallest do over many ranks, measured nothing and gets no score; a
// workload's range must be scored, so that the job's time is known.)
func Score(sp *space.Space, m *runner.Measurement, measured []bool) (map[string]float64, error) {
	scores := map[string]float64{}
	if len(m.Rows) == 0 {
		if !(m.Value > 0) || math.IsInf(m.Value, 0) {
			return nil, fmt.Errorf("objective %v is not a positive number", m.Value)
		}
		scores[sp.Ranges[0].Name] = m.Value
		return scores, nil
	}
	for i, s := range Scores(sp, m.Rows, m.Ranks) {
		moved := slices.ContainsFunc(RowsOf(m.Rows, sp.Ranges[i].Collective, sp.Campaign.Collective), func(row nccltests.Row) bool {
			return row.Size > 0 && sp.Ranges[i].Contains(row.Size)
		})
		switch {
		case !measured[i]:
			continue
		case !moved && len(sp.Ranges[i].Calls) > 0:
			// A workload's calls must be timed: a range left unscored would make the job's time unknown.
			return nil, fmt.Errorf("range %s: nccl-tests measured no size of %s above 0 over %d ranks (it prints 0 below 16 bytes a rank), so its calls cannot be timed; the trials run more ranks than the space says (workload.ranks, the launcher)",
				sp.Ranges[i].Name, sp.Ranges[i].Collective, m.Ranks)
		case !moved:
			continue
		}
		if !(s > 0) || math.IsInf(s, 0) {
			return nil, fmt.Errorf("no usable row in range %s", sp.Ranges[i])
		}
		scores[sp.Ranges[i].Name] = s
	}
	return scores, nil
}

// Scores returns one objective per range, indexed like sp.Ranges, NaN where
// the rows measure none: a range of sizes scores the geometric mean over its
// collective's sizes in it of the bus bandwidth (GB/s); a workload's range,
// the inverse of its calls' predicted time (1/s). Bandwidth is recomputed from
// the printed time, which keeps precision where nccl-tests prints 0.00 GB/s,
// with the bus factor of ranks, the rank count of the run (BusBW).
func Scores(sp *space.Space, rows []nccltests.Row, ranks int) []float64 {
	out := make([]float64, len(sp.Ranges))
	for i, r := range sp.Ranges {
		mine := RowsOf(rows, r.Collective, sp.Campaign.Collective)
		if len(r.Calls) > 0 {
			out[i] = 1 / CallTime(mine, r.Calls)
			continue
		}
		sizes := make([]int64, len(mine))
		for j, row := range mine {
			sizes[j] = row.Size
		}
		out[i] = rangeScore(r, sizes, BusBW(mine, ranks))
	}
	return out
}

// RowsOf are the rows of collective coll; an untagged row (a store written
// before rows named theirs) is the campaign's one collective's.
func RowsOf(rows []nccltests.Row, coll, campaign string) []nccltests.Row {
	var out []nccltests.Row
	for _, r := range rows {
		if r.Collective == coll || r.Collective == "" && coll == campaign {
			out = append(out, r)
		}
	}
	return out
}

// RangeScores is, per range of a space of one collective, the geometric
// mean of the bus bandwidth of its sizes.
func RangeScores(sp *space.Space, sizes []int64, busBW []float64) []float64 {
	out := make([]float64, len(sp.Ranges))
	for i, r := range sp.Ranges {
		out[i] = rangeScore(r, sizes, busBW)
	}
	return out
}

func rangeScore(r space.Range, sizes []int64, busBW []float64) float64 {
	logSum, count := 0.0, 0
	for j, bw := range busBW {
		if r.Contains(sizes[j]) && bw > 0 {
			logSum += math.Log(bw)
			count++
		}
	}
	if count == 0 {
		return math.NaN()
	}
	return math.Exp(logSum / float64(count))
}

// CallTime is the predicted time, in seconds, of a workload's calls of one
// collective from its rows: each call's size interpolated on log size and
// log time between the sizes measured, the time of one operation the row's
// (nccltests.Row.TimeUs); beyond the largest size, time grows with size.
// It is NaN without a usable row.
func CallTime(rows []nccltests.Row, calls []space.Call) float64 {
	type point struct{ size, us float64 }
	var pts []point
	for _, r := range rows {
		if t := r.TimeUs(); r.Size > 0 && t > 0 {
			pts = append(pts, point{float64(r.Size), t})
		}
	}
	if len(pts) == 0 {
		return math.NaN()
	}
	slices.SortFunc(pts, func(a, b point) int { return cmp.Compare(a.size, b.size) })
	total := 0.0
	for _, c := range calls {
		s := float64(c.Bytes)
		k := sort.Search(len(pts), func(i int) bool { return pts[i].size >= s })
		var us float64
		switch {
		case k == 0:
			us = pts[0].us // below the smallest size: latency bound
		case k == len(pts):
			last := pts[len(pts)-1]
			us = last.us * s / last.size
		default:
			a, b := pts[k-1], pts[k]
			f := math.Log(s/a.size) / math.Log(b.size/a.size)
			us = math.Exp(math.Log(a.us) + f*math.Log(b.us/a.us))
		}
		total += c.Count * us / 1e6
	}
	return total
}

// BusBW returns each row's bus bandwidth in GB/s, from its time of one
// operation (nccltests.Row.TimeUs; 0 where the row has no usable time),
// with each collective's bus factor over ranks, the rank count of the run
// that printed them; its algorithm bandwidth where nccl-tests reported no
// bus bandwidth (AlgorithmBandwidth). Where the rank count is unknown (0:
// a table without nccl-tests' "# Rank" lines), the factor is read off the
// rows.
func BusBW(rows []nccltests.Row, ranks int) []float64 {
	factors := map[string]float64{}
	out := make([]float64, len(rows))
	for i, r := range rows {
		f, ok := factors[r.Collective]
		if !ok {
			f, _ = busFactor(RowsOf(rows, r.Collective, r.Collective), ranks)
			factors[r.Collective] = f
		}
		if t := r.TimeUs(); t > 0 && r.Size > 0 {
			out[i] = float64(r.Size) / t / 1e3 * f
		}
	}
	return out
}

// AlgorithmBandwidth reports whether BusBW gives the algorithm bandwidth of
// rows (of one collective, printed by a run of ranks ranks): nccl-tests
// reported a bus bandwidth of 0, as it does for one rank.
func AlgorithmBandwidth(rows []nccltests.Row, ranks int) bool {
	_, bus := busFactor(rows, ranks)
	return !bus
}

// busFactor is the ratio of bus to algorithm bandwidth that nccl-tests
// applied to rows (of one collective) over ranks (2(n-1)/n for all_reduce
// over n), and 1 for one rank, whose bus bandwidth nccl-tests reports as 0,
// with bus false, so that configurations can still be compared by their
// algorithm bandwidth. Every run of a campaign has its one factor: read
// off each run's rows, it was 1 in a run whose every row was below 1
// GB/s, too imprecise to read it, and 1.875 (16 ranks) in a run whose
// largest size reached 1.01 GB/s, which scored 87% more for 2% faster.
// So it is read off the rows only where the rank count is unknown.
func busFactor(rows []nccltests.Row, ranks int) (f float64, bus bool) {
	coll := ""
	if len(rows) > 0 {
		coll = rows[0].Collective
	}
	if f, ok := nccltests.BusFactor(coll, ranks); ok {
		if f == 0 { // one rank
			return 1, false
		}
		return f, true
	}
	var ratios []float64
	for _, r := range rows {
		if m := r.OutOfPlace; m.AlgBW >= 1 {
			ratios = append(ratios, m.BusBW/m.AlgBW)
		}
	}
	if len(ratios) == 0 {
		// None precise (every size below 1 GB/s): one rank's still shows,
		// a bandwidth and a bus bandwidth of 0 beside it at every size.
		moved := slices.ContainsFunc(rows, func(r nccltests.Row) bool { return r.OutOfPlace.AlgBW > 0 })
		return 1, !moved || slices.ContainsFunc(rows, func(r nccltests.Row) bool { return r.OutOfPlace.BusBW > 0 })
	}
	slices.Sort(ratios)
	if f := ratios[len(ratios)/2]; f > 0.01 {
		return f, true
	}
	return 1, false
}
