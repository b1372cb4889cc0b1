package report

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/nccltune/nccltune/results"
	"github.com/nccltune/nccltune/runner/nccltests"
	"github.com/nccltune/nccltune/space"
	"github.com/nccltune/nccltune/store"
)

func TestPlots(t *testing.T) {
	sp, err := space.Parse("p.toml", []byte("[campaign]\nsizes = { min = \"1K\", max = \"1M\", factor = 4 }\n[benchmark]\nbinary = \"x\"\n[[param]]\nname = \"NCCL_ALGO\"\nvalues = [\"Ring\", \"Tree\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	trial := func(n int, slow float64) store.Trial {
		tr := store.Trial{Number: n, State: store.Complete, Env: []string{"NCCL_ALGO=Ring"}}
		for _, size := range sp.Sizes.List() {
			m := nccltests.Measure{TimeUs: slow * (5 + float64(size)/2e4), AlgBW: 1, BusBW: 2}
			tr.Rows = append(tr.Rows, nccltests.Row{Size: size, OutOfPlace: m, InPlace: m})
		}
		tr.Scores = map[string]float64{"all": results.Scores(sp, tr.Rows, tr.Fingerprint.Ranks)[0]}
		return tr
	}
	trials := []store.Trial{trial(0, 1.5), trial(1, 1), {Number: 2, State: store.Failed}, trial(3, 1.2)}
	dir := t.TempDir()
	for name, draw := range map[string]func(string) error{
		"busbw.png":       func(p string) error { return BusBW(sp, results.Of(sp, trials, nil), trials, p) },
		"convergence.png": func(p string) error { return Convergence(sp, results.Of(sp, trials, nil), trials, p) },
		"no-defaults.png": func(p string) error { return BusBW(sp, results.Of(sp, trials[1:], nil), trials[1:], p) },
	} {
		path := filepath.Join(dir, name)
		if err := draw(path); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		f, _ := os.Open(path)
		if _, err := png.Decode(f); err != nil {
			t.Errorf("%s is not a PNG: %v", name, err)
		}
		f.Close()
	}
}

// TestPlotsOfEveryKind: report draws every benchmark kind's campaign, those
// of one objective (trials with scores and no rows) on linear axes, and a
// sweep that measured no positive bandwidth (one GPU) without a log axis
// over nothing.
func TestPlotsOfEveryKind(t *testing.T) {
	for name, src := range map[string]string{
		"command": "[benchmark]\nkind = \"command\"\ncommand = [\"train\"]\nmetric = { regex = 'ms: ([0-9.]+)', goal = \"min\", unit = \"ms\" }\n",
		"ddp":     "[benchmark]\nkind = \"ddp\"\n",
		"zero":    "[benchmark]\nbinary = \"x\"\n",
	} {
		sp, err := space.Parse(name+".toml", []byte(src+"[[param]]\nname = \"NCCL_ALGO\"\nvalues = [\"default\", \"Ring\", \"Tree\"]\n"))
		if err != nil {
			t.Fatal(err)
		}
		var trials []store.Trial
		for n, v := range []float64{10, 11, 8, 9} {
			tr := store.Trial{Number: n, State: store.Complete, Scores: map[string]float64{}}
			if n >= 2 {
				tr.Params = map[string]string{"NCCL_ALGO": "Ring"}
			}
			if name == "zero" {
				tr.Rows = []nccltests.Row{{Size: 8}, {Size: 1024}} // busbw 0
			} else {
				tr.Scores[sp.Ranges[0].Name] = 1 / v
			}
			trials = append(trials, tr)
		}
		dir := t.TempDir()
		plots, err := Write(sp, results.Of(sp, trials, nil), trials, dir, "")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want := map[bool]string{true: "busbw", false: "measured"}[sp.Benchmark.Sweeps()]
		if len(plots) != 2 || plots[want] == "" {
			t.Errorf("%s: plots %v, want %s and convergence", name, plots, want)
		}
		for _, path := range plots {
			f, _ := os.Open(path)
			if _, err := png.Decode(f); err != nil {
				t.Errorf("%s: %s is not a PNG: %v", name, path, err)
			}
			f.Close()
		}
	}
}

// TestPlotsOfAbsurdScores: a store's scores need only be finite and not
// negative, so a tampered one can hold 1e308 or the smallest subnormal; the
// ratios and measurements report plots must not overflow into points the
// plotter refuses ("infinite data point"), which failed the whole report;
// so must a time's (lower is better), which measured.png plots as the
// score's inverse, 1/5e-324 = +Inf.
func TestPlotsOfAbsurdScores(t *testing.T) {
	for kind, src := range map[string]string{
		"ddp":          "[benchmark]\nkind = \"ddp\"\n",
		"command time": "[benchmark]\nkind = \"command\"\ncommand = [\"train\"]\nmetric = { regex = 'ms: ([0-9.]+)', goal = \"min\", unit = \"ms\" }\n",
	} {
		t.Run(kind, func(t *testing.T) { plotAbsurdScores(t, src) })
	}
}

func plotAbsurdScores(t *testing.T, benchmark string) {
	sp, err := space.Parse("p.toml", []byte(benchmark+"[[param]]\nname = \"NCCL_ALGO\"\nvalues = [\"default\", \"Ring\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		scores []float64
	}{
		{"a huge score", []float64{10, 11, math.MaxFloat64, 9}},
		{"subnormal defaults", []float64{5e-324, 5e-324, 10, 9}},
		{"zero and huge", []float64{0, 1, math.MaxFloat64, math.MaxFloat64}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var trials []store.Trial
			for n, v := range tc.scores {
				tr := store.Trial{Number: n, State: store.Complete, Scores: map[string]float64{sp.Ranges[0].Name: v}}
				if n >= 2 {
					tr.Params = map[string]string{"NCCL_ALGO": "Ring"}
				}
				trials = append(trials, tr)
			}
			if _, err := Write(sp, results.Of(sp, trials, nil), trials, t.TempDir(), ""); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestConvergenceStartsAtTheFirstMeasurement: where trial 0, the defaults'
// first run, failed, the plot has no best before trial 1; it drew a point of
// 0 at trial 0, a search seemingly 100% below the defaults.
func TestConvergenceStartsAtTheFirstMeasurement(t *testing.T) {
	sp, err := space.Parse("p.toml", []byte("[benchmark]\nkind = \"ddp\"\n[[param]]\nname = \"NCCL_ALGO\"\nvalues = [\"default\", \"Ring\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	name := sp.Ranges[0].Name
	trials := []store.Trial{
		{Number: 0, State: store.Failed},
		{Number: 1, State: store.Complete, Scores: map[string]float64{name: 10}},
		{Number: 2, State: store.Complete, Params: map[string]string{"NCCL_ALGO": "Ring"}, Scores: map[string]float64{name: 12}},
		// Not the settings' failure (a launch that started no rank): the ring stays the best.
		{Number: 3, State: store.Failed, Params: map[string]string{"NCCL_ALGO": "Ring"}, FailureKind: "launch"},
	}
	got := convergence(sp, results.Of(sp, trials, nil), trials)[0]
	want := []float64{1, 1.2, 1.2}
	if len(got) != len(want) || got[0].X != 1 {
		t.Fatalf("convergence %v, want trials 1 to 3 at %v", got, want)
	}
	for i, pt := range got {
		if math.Abs(pt.Y-want[i]) > 1e-12 {
			t.Errorf("trial %v at %v, want %v", pt.X, pt.Y, want[i])
		}
	}
}

// TestConvergenceOfTheSearchAlone: the simplification's trials re-measure
// the choice, which is not search progress; they were plotted as trials 3
// and 4, and a lucky re-measurement raised the best. A budget raised after
// them searches on as trial 5, which is plotted.
func TestConvergenceOfTheSearchAlone(t *testing.T) {
	sp, err := space.Parse("p.toml", []byte("[benchmark]\nkind = \"ddp\"\n[[param]]\nname = \"NCCL_ALGO\"\nvalues = [\"default\", \"Ring\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	name, ring := sp.Ranges[0].Name, map[string]string{"NCCL_ALGO": "Ring"}
	var trials []store.Trial
	// A budget of 3, then a re-measurement and a variant, then a 4th search trial.
	for n, s := range []float64{10, 10, 12, 13, 11, 11.5} {
		tr := store.Trial{Number: n, State: store.Complete, Phase: store.Search, Scores: map[string]float64{name: s}}
		if n >= 2 {
			tr.Params = ring
		}
		if n == 3 || n == 4 {
			tr.Phase = store.Simplification
		}
		trials = append(trials, tr)
	}
	got := convergence(sp, results.Of(sp, trials, nil), trials)[0]
	// The ring as the search measured it, in trials 2 and 5.
	if end := math.Sqrt(12*11.5) / 10; len(got) != 4 || got[2].X != 2 || got[3].X != 5 || math.Abs(got[3].Y-end) > 1e-12 {
		t.Errorf("convergence %v, want trials 0 to 2 and 5, ending at %v", got, end)
	}
}

// TestTrialTicksAreWholeTrials: a trial axis's labels name the trial at
// their tick. Over trials 0 to 5 a tick at 2.5 was labelled "2", and over 0
// to 1 one at 0.5 "0".
func TestTrialTicksAreWholeTrials(t *testing.T) {
	for _, r := range [][2]float64{{0, 1}, {0, 2}, {0, 5}, {0, 7}, {0, 13}, {3, 67}, {0, 500}} {
		labelled := 0
		for _, tick := range (intTicks{}).Ticks(r[0], r[1]) {
			if tick.Value != math.Round(tick.Value) {
				t.Errorf("%v: a tick at %v, between trials", r, tick.Value)
			}
			if tick.Label != "" {
				labelled++
				if tick.Label != strconv.Itoa(int(tick.Value)) {
					t.Errorf("%v: tick at %v labelled %q", r, tick.Value, tick.Label)
				}
			}
		}
		if labelled < 2 {
			t.Errorf("%v: %d labels", r, labelled)
		}
	}
}

// commandCampaign is a user command's campaign whose metric is in unit:
// NCCL's defaults twice, then Ring twice, of steps of 10, 11, 8 and 9.
func commandCampaign(t *testing.T, unit string) (*space.Space, []store.Trial) {
	t.Helper()
	sp, err := space.Parse("c.toml", []byte("[benchmark]\nkind = \"command\"\ncommand = [\"train\"]\nmetric = { regex = 'ms: ([0-9.]+)', goal = \"min\", unit = \""+
		unit+"\" }\n[[param]]\nname = \"NCCL_ALGO\"\nvalues = [\"default\", \"Ring\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	var trials []store.Trial
	for n, v := range []float64{10, 11, 8, 9} {
		tr := store.Trial{Number: n, State: store.Complete, Scores: map[string]float64{sp.Ranges[0].Name: 1 / v}}
		if n >= 2 {
			tr.Params = map[string]string{"NCCL_ALGO": "Ring"}
		}
		trials = append(trials, tr)
	}
	return sp, trials
}

// TestMeasuredOfALongUnit: a command's metric unit is the y axis's label; one
// longer than the plot is tall took the whole plot, which came out blank (no
// axis, no point) without an error.
func TestMeasuredOfALongUnit(t *testing.T) {
	sp, trials := commandCampaign(t, strings.Repeat("milliseconds per step ", 40))
	path := filepath.Join(t.TempDir(), "measured.png")
	if err := Measured(sp, trials, path); err != nil {
		t.Fatal(err)
	}
	img := decodePNG(t, path)
	// The searched trials' points (trials 2 and 3 of 0 to 3) are drawn in
	// the palette's first colour, in the right half; the legend is at the left.
	want := palette[0].(color.RGBA)
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := (b.Min.X + b.Max.X) / 2; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if uint8(r>>8) == want.R && uint8(g>>8) == want.G && uint8(bl>>8) == want.B {
				return
			}
		}
	}
	t.Error("no trial's point drawn")
}

// TestBusBWDefaultsOfEveryRun: busbw.png's defaults line is the geometric
// mean per size of every completed run of NCCL's defaults, as the gain's
// default score is; it was trial 0's alone, a cold first launch here twice
// as slow as trial 1.
func TestBusBWDefaultsOfEveryRun(t *testing.T) {
	sp, trial := sweep(t)
	for _, tc := range []struct {
		name   string
		trials []store.Trial
		label  string
		busBW  float64 // at every size
	}{
		{"two runs", []store.Trial{trial(0, 2, nil), trial(1, 1, nil), trial(2, 0.5, map[string]string{"NCCL_ALGO": "Ring"})}, "mean of trials 0, 1", math.Sqrt(0.5)},
		{"the first failed", []store.Trial{{Number: 0, State: store.Failed}, trial(1, 1, nil)}, "trial 1", 1},
	} {
		label, xy := configLine(sp, tc.trials, nil, sp.Campaign.Collective, nil)
		if label != tc.label || len(xy) != len(sp.Sizes.List()) {
			t.Errorf("%s: %q over %d sizes, want %q over every size", tc.name, label, len(xy), tc.label)
		}
		for _, pt := range xy {
			if math.Abs(pt.Y-tc.busBW) > 1e-9 {
				t.Errorf("%s: %g GB/s at %g bytes, want %g", tc.name, pt.Y, pt.X, tc.busBW)
			}
		}
	}
}

// TestBusBWChoiceOfEveryRun: a chosen configuration that the simplification
// re-measured is drawn over all its runs, as its score and the gain combine
// them, beside a defaults line that is drawn so: its first run alone (trial
// 1, twice as slow as its re-measurement, trial 5) was drawn.
func TestBusBWChoiceOfEveryRun(t *testing.T) {
	sp, trial := sweep(t)
	ring := map[string]string{"NCCL_ALGO": "Ring"}
	trials := []store.Trial{trial(0, 4, nil), trial(1, 2, ring), trial(2, 8, map[string]string{"NCCL_ALGO": "Tree"}), trial(5, 1, ring)}
	label, xy := configLine(sp, trials, ring, sp.Campaign.Collective, &sp.Ranges[0])
	if label != "mean of trials 1, 5" || len(xy) == 0 {
		t.Fatalf("%q over %d sizes, want the mean of trials 1 and 5", label, len(xy))
	}
	for _, pt := range xy {
		if want := math.Sqrt(0.5); math.Abs(pt.Y-want) > 1e-9 {
			t.Errorf("%g GB/s at %g bytes, want %g", pt.Y, pt.X, want)
		}
	}
}

// TestBusBWChoiceOfEverySpelling: runs NCCL reads alike are one
// configuration, as results scores them, however their values are written.
func TestBusBWChoiceOfEverySpelling(t *testing.T) {
	sp, trial := sweep(t)
	trials := []store.Trial{trial(0, 4, nil), trial(1, 2, map[string]string{"NCCL_ALGO": "Ring"}), trial(5, 1, map[string]string{"NCCL_ALGO": "RING"})}
	if label, _ := configLine(sp, trials, map[string]string{"NCCL_ALGO": "Ring"}, sp.Campaign.Collective, &sp.Ranges[0]); label != "mean of trials 1, 5" {
		t.Errorf("%q, want the mean of trials 1 and 5", label)
	}
}

// sweep is a space of one collective over sizes from 1K to 1M, and a maker
// of its completed trials, slow times slower than 1 GB/s at every size.
func sweep(t *testing.T) (*space.Space, func(n int, slow float64, params map[string]string) store.Trial) {
	t.Helper()
	sp, err := space.Parse("p.toml", []byte("[campaign]\nsizes = { min = \"1K\", max = \"1M\", factor = 4 }\n[benchmark]\nbinary = \"x\"\n[[param]]\nname = \"NCCL_ALGO\"\nvalues = [\"Ring\", \"Tree\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	trial := func(n int, slow float64, params map[string]string) store.Trial {
		tr := store.Trial{Number: n, State: store.Complete, Params: params}
		for _, size := range sp.Sizes.List() {
			m := nccltests.Measure{TimeUs: slow * float64(size) / 1e3, AlgBW: 1, BusBW: 1}
			tr.Rows = append(tr.Rows, nccltests.Row{Size: size, OutOfPlace: m, InPlace: m})
		}
		return tr
	}
	return sp, trial
}

// TestBandwidthOfOneRank: with one rank nccl-tests reports no bus
// bandwidth and the plot shows the algorithm bandwidth, which it says.
func TestBandwidthOfOneRank(t *testing.T) {
	sp, err := space.Parse("p.toml", []byte("[campaign]\nsizes = { min = \"1K\", max = \"1M\", factor = 4 }\n[benchmark]\nbinary = \"x\"\n[[param]]\nname = \"NCCL_ALGO\"\nvalues = [\"Ring\", \"Tree\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	trial := func(state store.State, busbw float64) store.Trial {
		tr := store.Trial{State: state}
		for _, size := range sp.Sizes.List() {
			m := nccltests.Measure{TimeUs: 10, AlgBW: 5, BusBW: busbw}
			tr.Rows = append(tr.Rows, nccltests.Row{Size: size, OutOfPlace: m, InPlace: m})
		}
		return tr
	}
	slowTrial := func(busbw float64) store.Trial { // no size's figures precise enough for the bus factor
		tr := trial(store.Complete, busbw)
		for i := range tr.Rows {
			tr.Rows[i].OutOfPlace.AlgBW, tr.Rows[i].InPlace.AlgBW = 0.5, 0.5
		}
		return tr
	}
	for _, c := range []struct {
		name   string
		trials []store.Trial
		want   string
	}{
		{"one rank", []store.Trial{trial(store.Complete, 0), trial(store.Complete, 0)}, "algorithm bandwidth (one rank)"},
		{"one rank, every size below 1 GB/s", []store.Trial{slowTrial(0)}, "algorithm bandwidth (one rank)"},
		{"ranks", []store.Trial{trial(store.Complete, 9.4)}, "bus bandwidth"},
		{"ranks, every size below 1 GB/s", []store.Trial{slowTrial(0.7)}, "bus bandwidth"},
		{"one trial of ranks", []store.Trial{trial(store.Complete, 0), trial(store.Complete, 9.4)}, "bus bandwidth"},
		{"a failed trial's rows", []store.Trial{trial(store.Failed, 0), trial(store.Complete, 9.4)}, "bus bandwidth"},
		{"nothing measured", nil, "bus bandwidth"},
	} {
		if got := bandwidth(sp, c.trials); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// TestPlotsOfOneValue: a plot whose points all hold one value (one size
// swept, as a latency campaign's, with its runs of NCCL's defaults alike;
// a command's metric that only NCCL's defaults measured) gets an axis
// around it. gonum widened such an axis by 1 either way: below 1 GB/s that
// put the log axis's minimum at or below 0, and report panicked; a linear
// axis of 1 ms ran from -0.x, where the points read as 0.
func TestPlotsOfOneValue(t *testing.T) {
	sp, err := space.Parse("p.toml", []byte("[campaign]\nsizes = { min = \"1K\", max = \"1K\", factor = 2 }\n[benchmark]\nbinary = \"x\"\n[[param]]\nname = \"NCCL_ALGO\"\nvalues = [\"Ring\", \"Tree\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	m := nccltests.Measure{TimeUs: 1e6, AlgBW: 0, BusBW: 0}
	tr := store.Trial{Number: 0, State: store.Complete, Rows: []nccltests.Row{{Size: 1024, OutOfPlace: m, InPlace: m}}}
	tr.Scores = map[string]float64{"all": results.Scores(sp, tr.Rows, tr.Fingerprint.Ranks)[0]}
	again := tr
	again.Number = 1
	for _, trials := range [][]store.Trial{{tr, again}, {tr, {Number: 1, State: store.Failed}}} {
		if err := BusBW(sp, results.Of(sp, trials, nil), trials, filepath.Join(t.TempDir(), "busbw.png")); err != nil {
			t.Fatal(err)
		}
	}
	// The geometric mean of one run is not always the run's value to the
	// last bit: an axis that narrow has no tick in it, and is as bad.
	for _, v := range []float64{1e-9, 1e-3, 0.5, 1e6} {
		for _, hi := range []float64{v, v * (1 + 1e-15)} {
			a := plot.New().Y
			a.Min, a.Max = v, hi
			if widen(&a); !(a.Min > 0 && a.Min < v && a.Max > hi) {
				t.Errorf("%g to %g: axis from %g to %g", v, hi, a.Min, a.Max)
			}
		}
	}
}

// TestLinesTellApart: every line of a plot of up to 24 (ranges'
// choices, collectives' defaults, ranges' convergence) is drawn unlike the
// others: the palette's six colours repeated, and with twenty ranges the
// choice of the sixth was drawn as NCCL's defaults, in their colour.
func TestLinesTellApart(t *testing.T) {
	seen := map[string]int{}
	for n := range 24 {
		s := lineStyle(n)
		key := fmt.Sprint(s.color, s.dashes, s.glyph)
		if m, ok := seen[key]; ok {
			t.Errorf("lines %d and %d are drawn alike: %s", m, n, key)
		}
		seen[key] = n
		if n >= 6 && s.glyph == lineStyle(n%6).glyph {
			t.Errorf("line %d's points are drawn as line %d's", n, n%6)
		}
	}
}

// TestBusBWAxesAreLabelled: a sweep of large messages alone measures bus
// bandwidths within one decade (150 to 380 GB/s), where plot.LogTicks puts
// no label, and a sweep of one size that is no power of two (3000 bytes)
// has no power of two on its axis: both axes were drawn without a number.
func TestBusBWAxesAreLabelled(t *testing.T) {
	for _, tc := range []struct {
		sizes string
		bw    float64
	}{{`min = "64M", max = "4G"`, 150}, {`min = "3000", max = "3000"`, 40}, {`min = "8", max = "1G"`, 1e-3}} {
		sp, err := space.Parse("p.toml", []byte("[campaign]\nsizes = { "+tc.sizes+", factor = 2 }\n[benchmark]\nbinary = \"x\"\n[[param]]\nname = \"NCCL_ALGO\"\nvalues = [\"Ring\", \"Tree\"]\n"))
		if err != nil {
			t.Fatal(err)
		}
		trial := func(n int, bw float64) store.Trial {
			tr := store.Trial{Number: n, State: store.Complete}
			if n == 2 {
				tr.Params, tr.Env = space.Assignment{"NCCL_ALGO": "Ring"}, []string{"NCCL_ALGO=Ring"}
			}
			for i, size := range sp.Sizes.List() {
				b := bw * (1 + 0.1*float64(i))
				m := nccltests.Measure{TimeUs: float64(size) / b / 1e3, AlgBW: b, BusBW: b}
				tr.Rows = append(tr.Rows, nccltests.Row{Size: size, OutOfPlace: m, InPlace: m})
			}
			tr.Scores = map[string]float64{"all": results.Scores(sp, tr.Rows, tr.Fingerprint.Ranks)[0]}
			return tr
		}
		trials := []store.Trial{trial(0, tc.bw), trial(1, tc.bw), trial(2, 1.3*tc.bw)}
		p, err := busBWPlot(sp, results.Of(sp, trials, nil), trials)
		if err != nil {
			t.Fatal(err)
		}
		widen(&p.X)
		widen(&p.Y)
		for name, a := range map[string]plot.Axis{"x": p.X, "y": p.Y} {
			var labels []string
			for _, tick := range a.Tick.Marker.Ticks(a.Min, a.Max) {
				if tick.Label != "" && tick.Value >= a.Min && tick.Value <= a.Max {
					labels = append(labels, tick.Label)
				}
			}
			if len(labels) == 0 || name == "y" && len(labels) < 2 {
				t.Errorf("sizes %s at %g GB/s: %s axis from %g to %g labelled %q", tc.sizes, tc.bw, name, a.Min, a.Max, labels)
			}
		}
	}
}

// TestBusBWLabelOfManyRuns: NCCL's defaults run once on each of up to 64
// groups (launcher.groups), and their legend entry named every trial,
// "mean of trials 0, 1, 2, ..., 63", wider than the plot.
func TestBusBWLabelOfManyRuns(t *testing.T) {
	sp, trial := sweep(t)
	var trials []store.Trial
	for n := range 64 {
		trials = append(trials, trial(n, 1, nil))
	}
	for _, n := range []int{70, 72, 73, 74, 80, 90, 91, 100} {
		trials = append(trials, trial(n, 1, nil))
	}
	label, _ := configLine(sp, trials, nil, sp.Campaign.Collective, nil)
	if utf8.RuneCountInString(label) > 60 || !strings.HasPrefix(label, "mean of 72 trials 0-63, 70, 72-74") {
		t.Errorf("label %q, want the 72 runs' numbers in ranges, and at most 60 characters", label)
	}
	for _, tc := range []struct {
		numbers []int
		want    string
	}{{[]int{3}, "trial 3"}, {[]int{1, 5}, "mean of trials 1, 5"}, {[]int{0, 1, 2}, "mean of trials 0-2"}} {
		trials = nil
		for _, n := range tc.numbers {
			trials = append(trials, trial(n, 1, nil))
		}
		if label, _ := configLine(sp, trials, nil, sp.Campaign.Collective, nil); label != tc.want {
			t.Errorf("trials %v: label %q, want %q", tc.numbers, label, tc.want)
		}
	}
}

// TestConvergenceOfALowerIsBetterMeasure: of a time (a command's goal =
// "min", a workload's seconds) the plotted ratio is NCCL defaults' time
// over the best, its score being the inverse; the axis called it the "best
// score relative to defaults", where 1.25 read as a best 25% slower.
func TestConvergenceOfALowerIsBetterMeasure(t *testing.T) {
	sp, err := space.Parse("c.toml", []byte("[benchmark]\nkind = \"command\"\ncommand = [\"train\"]\nmetric = { regex = 'ms: ([0-9.]+)', goal = \"min\", unit = \"ms\" }\n[[param]]\nname = \"NCCL_ALGO\"\nvalues = [\"default\", \"Ring\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	name := sp.Ranges[0].Name
	trials := []store.Trial{
		{Number: 0, State: store.Complete, Scores: map[string]float64{name: 1.0 / 10}},
		{Number: 1, State: store.Complete, Scores: map[string]float64{name: 1.0 / 10}},
		{Number: 2, State: store.Complete, Params: map[string]string{"NCCL_ALGO": "Ring"}, Scores: map[string]float64{name: 1.0 / 8}},
	}
	p, err := convergencePlot(sp, results.Of(sp, trials, nil), trials)
	if err != nil {
		t.Fatal(err)
	}
	if xy := convergence(sp, results.Of(sp, trials, nil), trials)[0]; math.Abs(xy[len(xy)-1].Y-1.25) > 1e-12 {
		t.Fatalf("convergence %v, want 10 ms / 8 ms = 1.25 at the end", xy)
	}
	label := p.Title.Text + " | " + p.Y.Label.Text
	if !strings.Contains(label, "NCCL defaults' value / best") || !strings.Contains(label, "lower is better") {
		t.Errorf("a time's convergence labelled %q: the ratio is NCCL defaults' time over the best's", label)
	}
}

// TestConvergenceLegendAboveTheLines: a best so far rises to the right, and
// the legend, at the top right, was drawn over the highest ranges' lines.
func TestConvergenceLegendAboveTheLines(t *testing.T) {
	sp, err := space.Parse("p.toml", []byte("[campaign]\nsizes = { min = \"1K\", max = \"1M\", factor = 4 }\n[[range]]\nname = \"a\"\nmin = \"1K\"\nmax = \"16K\"\n[[range]]\nname = \"b\"\nmin = \"16K\"\nmax = \"256K\"\n[[range]]\nname = \"c\"\nmin = \"256K\"\nmax = \"2M\"\n[benchmark]\nbinary = \"x\"\n[[param]]\nname = \"NCCL_ALGO\"\nvalues = [\"default\", \"Ring\", \"Tree\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	var trials []store.Trial
	for n := range 12 {
		tr := store.Trial{Number: n, State: store.Complete, Scores: map[string]float64{"a": 1, "b": 1, "c": 1}}
		if n >= 2 {
			tr.Params = map[string]string{"NCCL_ALGO": []string{"Ring", "Tree"}[n%2]}
			tr.Scores = map[string]float64{"a": 1 + 0.02*float64(n), "b": 1 + 0.05*float64(n), "c": 1 + 0.1*float64(n)}
		}
		trials = append(trials, tr)
	}
	p, err := convergencePlot(sp, results.Of(sp, trials, nil), trials)
	if err != nil {
		t.Fatal(err)
	}
	top := 0.0
	for _, xy := range convergence(sp, results.Of(sp, trials, nil), trials) {
		for _, pt := range xy {
			top = max(top, pt.Y)
		}
	}
	legend := p.Legend.Rectangle(draw.Canvas{}).Size().Y
	data := p.DataCanvas(draw.Canvas{Rectangle: vg.Rectangle{Max: vg.Point{X: width, Y: height}}}).Size().Y
	if free := (p.Y.Max - top) / (p.Y.Max - p.Y.Min) * float64(data); free < float64(legend) {
		t.Errorf("the highest line (%g) lies %.0f points below the axis's top (%g), under a legend %.0f points tall", top, free, p.Y.Max, legend)
	}
}

// TestConvergenceOfOneTrial: making room for the legend measured the plot
// with gonum's DataCanvas, which set the axis of the one ratio measured to
// 0..2 before widen could set it about the point.
func TestConvergenceOfOneTrial(t *testing.T) {
	sp, err := space.Parse("p.toml", []byte("[benchmark]\nkind = \"ddp\"\n[[param]]\nname = \"NCCL_ALGO\"\nvalues = [\"default\", \"Ring\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	trials := []store.Trial{{Number: 0, State: store.Complete, Scores: map[string]float64{sp.Ranges[0].Name: 10}}, {Number: 1, State: store.Running}}
	p, err := convergencePlot(sp, results.Of(sp, trials, nil), trials)
	if err != nil {
		t.Fatal(err)
	}
	widen(&p.Y)
	if !(p.Y.Min > 0.5 && p.Y.Max < 1.5) {
		t.Errorf("one ratio of 1 on an axis from %g to %g", p.Y.Min, p.Y.Max)
	}
}

// TestTrialTicksOfTrialZeroAlone: a plot of trial 0 alone (a campaign whose
// first trial is all that completed) has gonum's axis from -1 to 1, which
// was labelled with trial -1.
func TestTrialTicksOfTrialZeroAlone(t *testing.T) {
	for _, r := range [][2]float64{{-1, 1}, {-3, 40}} {
		for _, tick := range (intTicks{}).Ticks(r[0], r[1]) {
			if tick.Value < 0 {
				t.Errorf("%v: a tick at trial %v", r, tick.Value)
			}
		}
	}
}

// TestMeasuredLegendAboveThePoints: of a time, NCCL's defaults (trials 0
// and 1, at the left) are often the slowest, the highest points, and the
// legend at the top left was drawn over them.
func TestMeasuredLegendAboveThePoints(t *testing.T) {
	sp, err := space.Parse("c.toml", []byte("[benchmark]\nkind = \"command\"\ncommand = [\"train\"]\nmetric = { regex = 'ms: ([0-9.]+)', goal = \"min\", unit = \"ms\" }\n[[param]]\nname = \"NCCL_ALGO\"\nvalues = [\"default\", \"Ring\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	var trials []store.Trial
	for n, v := range []float64{10, 11, 8, 9, 8.5, 9.5, 8.2} {
		tr := store.Trial{Number: n, State: store.Complete, Scores: map[string]float64{sp.Ranges[0].Name: 1 / v}}
		if n >= 2 {
			tr.Params = map[string]string{"NCCL_ALGO": "Ring"}
		}
		trials = append(trials, tr)
	}
	p, err := measuredPlot(sp, trials)
	if err != nil {
		t.Fatal(err)
	}
	legend := p.Legend.Rectangle(draw.Canvas{}).Size().Y
	data := p.DataCanvas(draw.Canvas{Rectangle: vg.Rectangle{Max: vg.Point{X: width, Y: height}}}).Size().Y
	if free := (p.Y.Max - 11) / (p.Y.Max - p.Y.Min) * float64(data); free < float64(legend) {
		t.Errorf("the defaults' 11 ms lie %.0f points below the axis's top (%g), under a legend %.0f points tall", free, p.Y.Max, legend)
	}
}

// TestBusBWLabelsOfAWorkload: a workload's range is its collective, which
// the line's prefix already names: the legend read "all_gather: all_gather:
// trial 2".
func TestBusBWLabelsOfAWorkload(t *testing.T) {
	sp, err := space.Parse("w.toml", []byte("[benchmark]\nbinary = \"x\"\ngpus = 16\n[[workload]]\ncollective = \"all_reduce\"\nsize = \"1M\"\ncount = 10\nranks = 16\n"+
		"[[workload]]\ncollective = \"all_gather\"\nsize = \"1M\"\ncount = 10\nranks = 16\n[[param]]\nname = \"NCCL_NET_GDR_LEVEL\"\nvalues = [\"default\", \"SYS\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	trial := func(n int, bw float64, params map[string]string) store.Trial {
		tr := store.Trial{Number: n, State: store.Complete, Params: params}
		for _, coll := range sp.Collectives() {
			for _, size := range sp.Sweep(coll).List() {
				m := nccltests.Measure{TimeUs: float64(size) / bw / 1e3, AlgBW: bw, BusBW: bw}
				tr.Rows = append(tr.Rows, nccltests.Row{Collective: coll, Size: size, OutOfPlace: m, InPlace: m})
			}
		}
		tr.Scores = map[string]float64{}
		for i, s := range results.Scores(sp, tr.Rows, tr.Fingerprint.Ranks) {
			tr.Scores[sp.Ranges[i].Name] = s
		}
		return tr
	}
	sys := map[string]string{"NCCL_NET_GDR_LEVEL": "SYS"}
	trials := []store.Trial{trial(0, 10, nil), trial(1, 10, nil), trial(2, 20, sys)}
	p, err := busBWPlot(sp, results.Of(sp, trials, nil), trials)
	if err != nil {
		t.Fatal(err)
	}
	// The legend's entries are gonum's own, unexported: read, not set.
	entries := reflect.ValueOf(p.Legend).FieldByName("entries")
	var labels []string
	for i := range entries.Len() {
		labels = append(labels, entries.Index(i).FieldByName("text").String())
	}
	if len(labels) != 4 {
		t.Fatalf("legend %q, want each collective's defaults and choice", labels)
	}
	for _, l := range labels {
		if strings.Count(l, "all_gather") > 1 || strings.Count(l, "all_reduce") > 1 {
			t.Errorf("legend entry %q names its collective twice", l)
		}
	}
}

// ringBeatsDefaults are three trials of sp, whose NCCL_ALGO offers Ring:
// NCCL's defaults twice, then Ring, faster at every size.
func ringBeatsDefaults(sp *space.Space) []store.Trial {
	var trials []store.Trial
	for n, slow := range []float64{1.5, 1.4, 1} {
		tr := store.Trial{Number: n, State: store.Complete}
		if n == 2 {
			tr.Params, tr.Env = map[string]string{"NCCL_ALGO": "Ring"}, []string{"NCCL_ALGO=Ring"}
		}
		for _, size := range sp.Sizes.List() {
			m := nccltests.Measure{TimeUs: slow * (5 + float64(size)/2e4), AlgBW: 1 / slow, BusBW: 2 / slow}
			tr.Rows = append(tr.Rows, nccltests.Row{Size: size, OutOfPlace: m, InPlace: m})
		}
		tr.Scores = map[string]float64{}
		for i, s := range results.Scores(sp, tr.Rows, tr.Fingerprint.Ranks) {
			tr.Scores[sp.Ranges[i].Name] = s
		}
		trials = append(trials, tr)
	}
	return trials
}

// TestLegendOfALongRangeName: a range's name, as long as the space file
// takes it, is cut short in the legends; it ran past the plot's edge, the
// legend over the axis and its labels.
func TestLegendOfALongRangeName(t *testing.T) {
	name := strings.Repeat("r", 200)
	sp, err := space.Parse("p.toml", []byte("[campaign]\nsizes = { min = \"1K\", max = \"1M\", factor = 4 }\n[[range]]\nname = \""+name+"\"\nmin = \"1K\"\nmax = \"2M\"\n[benchmark]\nbinary = \"x\"\n[[param]]\nname = \"NCCL_ALGO\"\nvalues = [\"default\", \"Ring\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	trials := ringBeatsDefaults(sp)
	busbw, err := busBWPlot(sp, results.Of(sp, trials, nil), trials)
	if err != nil {
		t.Fatal(err)
	}
	conv, err := convergencePlot(sp, results.Of(sp, trials, nil), trials)
	if err != nil {
		t.Fatal(err)
	}
	for plotName, p := range map[string]*plot.Plot{"busbw": busbw, "convergence": conv} {
		if w := p.Legend.Rectangle(draw.Canvas{}).Size().X; w > width/2 {
			t.Errorf("%s's legend is %.0f points wide, of a plot %.0f wide", plotName, w, width)
		}
	}
}

// TestConvergenceWithoutTheDefaults: where no run of NCCL's defaults
// completed, there is nothing to divide by, and the plot says so; it was
// blank, on an axis from -1 to 1 of a ratio, which reads as the search's
// trials lost.
func TestConvergenceWithoutTheDefaults(t *testing.T) {
	sp, err := space.Parse("p.toml", []byte("[campaign]\nsizes = { min = \"1K\", max = \"1M\", factor = 4 }\n[benchmark]\nbinary = \"x\"\n[[param]]\nname = \"NCCL_ALGO\"\nvalues = [\"default\", \"Ring\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	trials := []store.Trial{{Number: 0, State: store.Failed}, {Number: 1, State: store.Failed},
		{Number: 2, State: store.Complete, Params: map[string]string{"NCCL_ALGO": "Ring"}, Scores: map[string]float64{"all": 1}}}
	p, err := convergencePlot(sp, results.Of(sp, trials, nil), trials)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.Title.Text, "no run of NCCL's defaults completed") {
		t.Errorf("title %q", p.Title.Text)
	}
}

// TestBusBWTicksReadAsNumbers: plot.LogTicks formats its labels with no
// precision given, which writes 10 and 100 GB/s as "1e+01" and "1e+02"
// beside "1" and "0.1" on one axis; each is written as the number it is.
func TestBusBWTicksReadAsNumbers(t *testing.T) {
	want := []string{"0.001", "0.01", "0.1", "1", "10", "100", "1000"}
	var got []string
	for _, tick := range (logTicks{}).Ticks(0.0005, 900) {
		if tick.Label != "" {
			got = append(got, tick.Label)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("labels %q, want %q", got, want)
	}
}

// TestConvergenceCombinesEachConfigurationsRuns: a configuration measured
// more than once scores the geometric mean of its runs, as the gain and the
// defaults' line do; the best so far took the luckier of NCCL's defaults'
// two runs, and a campaign that found nothing better than the defaults
// (table: gain none) ended 2% above them.
func TestConvergenceCombinesEachConfigurationsRuns(t *testing.T) {
	sp, err := space.Parse("p.toml", []byte("[benchmark]\nkind = \"ddp\"\n[[param]]\nname = \"NCCL_ALGO\"\nvalues = [\"default\", \"Ring\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	name := sp.Ranges[0].Name
	var trials []store.Trial
	for n, s := range []float64{100, 104, 101, 99} {
		tr := store.Trial{Number: n, State: store.Complete, Phase: store.Search, Scores: map[string]float64{name: s}}
		if n >= 2 {
			tr.Params = map[string]string{"NCCL_ALGO": "Ring"}
		}
		trials = append(trials, tr)
	}
	base := math.Sqrt(100 * 104)
	want := []float64{100 / base, 1, 1, 1}
	got := convergence(sp, results.Of(sp, trials, nil), trials)[0]
	if len(got) != len(want) {
		t.Fatalf("convergence %v, want %v", got, want)
	}
	for i, pt := range got {
		if math.Abs(pt.Y-want[i]) > 1e-12 {
			t.Errorf("trial %v at %v, want %v", pt.X, pt.Y, want[i])
		}
	}
}

// TestConvergenceLeavesOutWhatFailed: a configuration that failed in some
// trial by its settings (wrong data, a hang) is never chosen, as a job may
// fail with it however fast its other runs were; from its failure on it is
// no best so far either, which ended the plot above the table's gain.
func TestConvergenceLeavesOutWhatFailed(t *testing.T) {
	sp, err := space.Parse("p.toml", []byte("[benchmark]\nkind = \"ddp\"\n[[param]]\nname = \"NCCL_ALGO\"\nvalues = [\"default\", \"Ring\", \"Tree\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	name := sp.Ranges[0].Name
	ring, tree := map[string]string{"NCCL_ALGO": "Ring"}, map[string]string{"NCCL_ALGO": "Tree"}
	trials := []store.Trial{
		{Number: 0, State: store.Complete, Scores: map[string]float64{name: 100}},
		{Number: 1, State: store.Complete, Scores: map[string]float64{name: 100}},
		{Number: 2, State: store.Complete, Params: ring, Scores: map[string]float64{name: 150}},
		{Number: 3, State: store.Complete, Params: tree, Scores: map[string]float64{name: 120}},
		{Number: 4, State: store.Failed, Params: ring, FailureKind: "timeout"},
		{Number: 5, State: store.Complete, Params: ring, Scores: map[string]float64{name: 150}},
	}
	for i := range trials {
		trials[i].Phase = store.Search
	}
	want := []float64{1, 1, 1.5, 1.5, 1.2, 1.2}
	got := convergence(sp, results.Of(sp, trials, nil), trials)[0]
	if len(got) != len(want) {
		t.Fatalf("convergence %v, want %v", got, want)
	}
	for i, pt := range got {
		if math.Abs(pt.Y-want[i]) > 1e-12 {
			t.Errorf("trial %v at %v, want %v", pt.X, pt.Y, want[i])
		}
	}
	if ch := results.Of(sp, trials, nil)[0].Chosen(); ch == nil || ch.Number != 3 {
		t.Fatalf("the table chose %v, want trial 3: the test proves nothing", ch)
	}
}

// TestPlotsOfOneLargeValue: an axis whose points all hold one value of 2^53
// or more (a command's metric in FLOP/s that only NCCL's defaults measured)
// was widened by gonum by 1 either way, which such a value does not change:
// its tick marker was asked for ticks from the value to itself, and report
// panicked.
func TestPlotsOfOneLargeValue(t *testing.T) {
	sp, err := space.Parse("c.toml", []byte("[benchmark]\nkind = \"command\"\ncommand = [\"train\"]\nmetric = { regex = 'flops: ([0-9.e+]+)', goal = \"max\", unit = \"FLOP/s\" }\n[[param]]\nname = \"NCCL_ALGO\"\nvalues = [\"default\", \"Ring\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []float64{3e16, 1e300} {
		trials := []store.Trial{{Number: 0, State: store.Complete, Scores: map[string]float64{sp.Ranges[0].Name: v}}}
		func() {
			defer func() {
				if e := recover(); e != nil {
					t.Errorf("%g: %v", v, e)
				}
			}()
			if _, err := Write(sp, results.Of(sp, trials, nil), trials, t.TempDir(), ""); err != nil {
				t.Errorf("%g: %v", v, err)
			}
		}()
	}
}

// TestBusBWOfAnInfiniteBandwidth: a stored time so small that a size over
// it overflows to an infinite bandwidth (5e-324 µs, which a store holds as
// a finite time) was a point of busbw.png, which the plotter left out: a
// sweep of such rows drew nothing on log axes, and report panicked; beside
// other runs it hid their size's bandwidth. It is no measurement.
func TestBusBWOfAnInfiniteBandwidth(t *testing.T) {
	sp, trial := sweep(t)
	broken := trial(1, 1, nil)
	for i := range broken.Rows {
		broken.Rows[i].OutOfPlace.TimeUs, broken.Rows[i].InPlace.TimeUs = 5e-324, 5e-324
	}
	for name, trials := range map[string][]store.Trial{
		"alone":  {broken},
		"beside": {trial(0, 1, nil), broken},
	} {
		var p *plot.Plot
		func() {
			defer func() {
				if e := recover(); e != nil {
					t.Errorf("%s: %v", name, e)
				}
			}()
			var err error
			if p, err = busBWPlot(sp, results.Of(sp, trials, nil), trials); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if err := save(p, filepath.Join(t.TempDir(), "busbw.png")); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}()
		if name == "beside" {
			if env := envelope(sp, sp.Campaign.Collective, trials); len(env) != len(sp.Sizes.List()) {
				t.Errorf("beside: the best per size has %d of %d sizes: %v", len(env), len(sp.Sizes.List()), env)
			}
		}
	}
}

// TestLegendOfManyRanges: the legend of a space of 38 ranges, one line
// each, is taller than the plot: drawn over it, it hid the lines and ran
// over the axis's labels, and off the image. It goes below the plot, on an
// image taller by it, and a plot of few ranges keeps its size.
func TestLegendOfManyRanges(t *testing.T) {
	for _, n := range []int{3, 38} {
		// Of bytes (int8), whose every size of the sweep is whole elements:
		// a range below one float's 4 bytes measures nothing, and is refused.
		text := "[campaign]\nsizes = { min = \"1\", max = \"256G\", factor = 2 }\n[benchmark]\nbinary = \"x\"\nargs = [\"-d\", \"int8\"]\n[[param]]\nname = \"NCCL_ALGO\"\nvalues = [\"default\", \"Ring\"]\n"
		for r := range n {
			text += fmt.Sprintf("[[range]]\nname = \"r%d\"\nmin = \"%d\"\nmax = \"%d\"\n", r, int64(1)<<(r*38/n), int64(1)<<((r+1)*38/n))
		}
		sp, err := space.Parse("p.toml", []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		trials := ringBeatsDefaults(sp)
		dir := t.TempDir()
		plots, err := Write(sp, results.Of(sp, trials, nil), trials, dir, "")
		if err != nil {
			t.Fatal(err)
		}
		for name, path := range plots {
			p, err := busBWPlot(sp, results.Of(sp, trials, nil), trials)
			if name == "convergence" {
				p, err = convergencePlot(sp, results.Of(sp, trials, nil), trials)
			}
			if err != nil {
				t.Fatal(err)
			}
			img := decodePNG(t, path)
			legend := p.Legend.Rectangle(draw.Canvas{}).Size().Y
			got, plain := img.Bounds().Dy(), int(height.Dots(96)+0.5)
			switch {
			case n == 3 && got != plain:
				t.Errorf("%d ranges: %s is %d pixels tall, want %d", n, name, got, plain)
			case n > 3 && got < plain+int(legend.Dots(96)):
				t.Errorf("%d ranges: %s is %d pixels tall, no room below the plot for its legend of %.0f", n, name, got, legend.Dots(96))
			}
		}
	}
}

// TestPlotTextTheFontLacks: a metric's unit in Chinese, which the plots'
// font has no glyph for, vanished from measured.png's axis ("(lower is
// better)" alone) and convergence.png's title; a character the font
// lacks, or a control character of a stored name, is written escaped, as
// the terminal shows it, and one it has (µ) as it is.
func TestPlotTextTheFontLacks(t *testing.T) {
	for unit, want := range map[string]string{"毫秒": `\u6beb\u79d2`, "µs": "µs"} {
		sp, trials := commandCampaign(t, unit)
		measured, err := measuredPlot(sp, trials)
		if err != nil {
			t.Fatal(err)
		}
		conv, err := convergencePlot(sp, results.Of(sp, trials, nil), trials)
		if err != nil {
			t.Fatal(err)
		}
		if got := measured.Y.Label.Text; got != want+" (lower is better)" {
			t.Errorf("unit %s: measured.png's axis %q, want %q", unit, got, want+" (lower is better)")
		}
		if got := conv.Title.Text; !strings.Contains(got, "("+want+", lower is better)") {
			t.Errorf("unit %s: convergence.png's title %q, want the unit as %s", unit, got, want)
		}
	}
	if got, want := shorten("sm\x1b[2J", nameWidth), `sm\u001b[2J`; got != want {
		t.Errorf("a stored range name: %q, want %q", got, want)
	}
}

// TestShortenCutsNoEscapeApart: a label cut to its width ends with whole
// characters as drawn: a cut inside an escape ("\u4e…" of 中) named a
// character the label does not hold.
func TestShortenCutsNoEscapeApart(t *testing.T) {
	got := shorten(strings.Repeat("中", 10), 20)
	if want := strings.Repeat(`\u4e2d`, 3) + "…"; got != want {
		t.Errorf("shorten = %q, want %q", got, want)
	}
}

// TestBusBWDataReachesTheTitle: the data area of busbw.png starts right
// under its title and runs to the image's right edge. gonum lays out an axis
// label as if centred at the arithmetic middle of its axis's range, which
// on a log axis of bandwidths from 4e-4 to 400 GB/s (sizes from 8 B to 1G)
// lies near its top (its right end): the label's box stood out past the
// data area, which gonum shrank by as much, a blank band of some 40 points
// under the title (30 at the right).
func TestBusBWDataReachesTheTitle(t *testing.T) {
	sp, err := space.Parse("p.toml", []byte("[campaign]\nsizes = { min = \"8\", max = \"1G\", factor = 2 }\n[benchmark]\nbinary = \"x\"\n[[param]]\nname = \"NCCL_ALGO\"\nvalues = [\"Ring\", \"Tree\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	trial := func(n int, faster float64, params map[string]string) store.Trial {
		tr := store.Trial{Number: n, State: store.Complete, Params: params}
		for _, size := range sp.Sizes.List() {
			b := faster * 400 * float64(size) / (float64(size) + 1e7) // latency-bound below 10 MB
			m := nccltests.Measure{TimeUs: float64(size) / b / 1e3, AlgBW: b, BusBW: b}
			tr.Rows = append(tr.Rows, nccltests.Row{Size: size, OutOfPlace: m, InPlace: m})
		}
		tr.Scores = map[string]float64{"all": results.Scores(sp, tr.Rows, 0)[0]}
		return tr
	}
	trials := []store.Trial{trial(0, 1, nil), trial(1, 1, nil), trial(2, 1.3, map[string]string{"NCCL_ALGO": "Ring"})}
	path := filepath.Join(t.TempDir(), "busbw.png")
	if err := BusBW(sp, results.Of(sp, trials, nil), trials, path); err != nil {
		t.Fatal(err)
	}
	img := decodePNG(t, path)
	// The y axis is the longest vertical run of dark pixels in the image's
	// left quarter; the x axis the longest horizontal one in its lowest quarter.
	dark := func(x, y int) bool {
		r, g, b, _ := img.At(x, y).RGBA()
		return r+g+b < 3*0xc000 // the axes' lines of half a point are grey where they fall between pixels
	}
	b := img.Bounds()
	longest := func(lines, along int, at func(line, i int) bool) (start, end int) {
		for l := range lines {
			for i := 0; i < along; {
				j := i
				for j < along && at(l, j) {
					j++
				}
				if j-i > end-start {
					start, end = i, j
				}
				i = j + 1
			}
		}
		return start, end
	}
	top, _ := longest(b.Dx()/4, b.Dy(), func(x, y int) bool { return dark(x, y) })
	_, right := longest(b.Dy()/4, b.Dx(), func(y, x int) bool { return dark(x, b.Dy()-1-y) })
	// The title is 13 points high: 18 pixels at 96 per inch.
	if top > 30 {
		t.Errorf("the data area starts %d pixels from the image's top, under a title of 18", top)
	}
	if gap := b.Dx() - right; gap > 30 {
		t.Errorf("the data area ends %d pixels from the image's right edge", gap)
	}
}

// TestConvergenceTitleOfAUnitInParentheses: a unit that is a word in
// parentheses, a workload of weights' "(relative)" or a command's unnamed
// "(metric)", was set in the title's own: "((relative), lower is better)".
func TestConvergenceTitleOfAUnitInParentheses(t *testing.T) {
	sp, trials := commandCampaign(t, "")
	conv, err := convergencePlot(sp, results.Of(sp, trials, nil), trials)
	if err != nil {
		t.Fatal(err)
	}
	if got := conv.Title.Text; !strings.HasSuffix(got, " (metric, lower is better)") {
		t.Errorf("convergence.png's title %q, want it to end (metric, lower is better)", got)
	}
}

// decodePNG reads the PNG image at path, failing t where it cannot.
func decodePNG(t *testing.T, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return img
}
