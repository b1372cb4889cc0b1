// Package results is what a campaign's measurements mean: each trial's
// score per size range, the choice per range (the best configuration, the
// simplest among equals), the verdict of a validation, and which parameters
// matter.
package results

import (
	"fmt"
	"math"
	"slices"

	"github.com/nccltune/nccltune/runner"
	"github.com/nccltune/nccltune/runner/nccltests"
	"github.com/nccltune/nccltune/space"
)

// Score scores a measurement per size range, by range name: for a sweep, each
// range it measured (measured[i], indexed like sp.Ranges) scores its
// geometric mean bus bandwidth; a single objective is the one range's score.
// Every score is finite and positive; a measured range without one is an
// error. (A range whose sizes all round to nothing, as all_gather's smallest
// do over many ranks, measured nothing and gets no score.)
func Score(sp *space.Space, m *runner.Measurement, measured []bool) (map[string]float64, error) {
	scores := map[string]float64{}
	if len(m.Rows) == 0 {
		if !(m.Value > 0) || math.IsInf(m.Value, 0) {
			return nil, fmt.Errorf("objective %v is not a positive number", m.Value)
		}
		scores[sp.Ranges[0].Name] = m.Value
		return scores, nil
	}
	for i, s := range Scores(sp, m.Rows) {
		moved := slices.ContainsFunc(m.Rows, func(row nccltests.Row) bool { return row.Size > 0 && sp.Ranges[i].Contains(row.Size) })
		if !measured[i] || !moved {
			continue
		}
		if !(s > 0) || math.IsInf(s, 0) {
			return nil, fmt.Errorf("no usable row in range %s", sp.Ranges[i])
		}
		scores[sp.Ranges[i].Name] = s
	}
	return scores, nil
}

// Scores returns one objective value per size range: the geometric mean over
// the range's sizes of the bus bandwidth (GB/s). Bandwidth is recomputed from
// the printed time, which keeps precision where nccl-tests prints 0.00 GB/s.
// A range without rows scores NaN.
func Scores(sp *space.Space, rows []nccltests.Row) []float64 {
	sizes := make([]int64, len(rows))
	for i, r := range rows {
		sizes[i] = r.Size
	}
	return RangeScores(sp, sizes, BusBW(rows))
}

// RangeScores is Scores from each size's bus bandwidth.
func RangeScores(sp *space.Space, sizes []int64, busBW []float64) []float64 {
	logSum := make([]float64, len(sp.Ranges))
	count := make([]int, len(sp.Ranges))
	for j, bw := range busBW {
		i := sp.RangeOf(sizes[j])
		if i < 0 || bw <= 0 {
			continue
		}
		logSum[i] += math.Log(bw)
		count[i]++
	}
	out := make([]float64, len(sp.Ranges))
	for i := range out {
		out[i] = math.NaN()
		if count[i] > 0 {
			out[i] = math.Exp(logSum[i] / float64(count[i]))
		}
	}
	return out
}

// BusBW returns each row's bus bandwidth in GB/s, from the mean of its
// out-of-place and in-place times (0 where the row has no usable time).
func BusBW(rows []nccltests.Row) []float64 {
	factor := busFactor(rows)
	out := make([]float64, len(rows))
	for i, r := range rows {
		if t := (r.OutOfPlace.TimeUs + r.InPlace.TimeUs) / 2; t > 0 && r.Size > 0 {
			out[i] = float64(r.Size) / t / 1e3 * factor
		}
	}
	return out
}

// busFactor is the ratio of bus to algorithm bandwidth that nccl-tests applied
// (2(n-1)/n for all_reduce over n ranks), read off the rows whose figures are
// large enough to be precise. With one rank it is 0; algorithm bandwidth is
// used then, so that configurations can still be compared.
func busFactor(rows []nccltests.Row) float64 {
	var ratios []float64
	for _, r := range rows {
		if m := r.OutOfPlace; m.AlgBW >= 1 {
			ratios = append(ratios, m.BusBW/m.AlgBW)
		}
	}
	if len(ratios) == 0 {
		return 1
	}
	slices.Sort(ratios)
	if f := ratios[len(ratios)/2]; f > 0.01 {
		return f
	}
	return 1
}
