// Package report draws a campaign's results as PNG plots: what each trial
// measured (bus bandwidth over message size, or for a benchmark of one
// objective its value per trial), and how the search converged.
package report

import (
	"fmt"
	"image/color"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/nccltune/nccltune/internal/atomicfile"
	"github.com/nccltune/nccltune/results"
	"github.com/nccltune/nccltune/space"
	"github.com/nccltune/nccltune/store"
)

var palette = []color.Color{
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
	color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}, color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
}

const width, height = 9 * vg.Inch, 5.5 * vg.Inch

// Write draws every plot of a campaign into dir and returns their paths by
// name: what the trials measured (busbw.png over message sizes for a
// benchmark that sweeps them, measured.png per trial for one that measures
// one objective) and convergence.png of the search's trials. None may
// replace the file storeFile, the store they are read from.
func Write(sp *space.Space, choices []results.RangeResult, trials []store.Trial, dir, storeFile string) (map[string]string, error) {
	plots := map[string]string{"convergence": filepath.Join(dir, "convergence.png")}
	if sp.Benchmark.Sweeps() {
		plots["busbw"] = filepath.Join(dir, "busbw.png")
	} else {
		plots["measured"] = filepath.Join(dir, "measured.png")
	}
	for _, path := range plots {
		if atomicfile.Replaces(path, storeFile) {
			return nil, fmt.Errorf("%s is the store %s: refusing to write over it; write the plots into another folder", path, storeFile)
		}
	}
	if path, ok := plots["busbw"]; ok {
		if err := BusBW(sp, choices, trials, path); err != nil {
			return nil, fmt.Errorf("busbw plot: %w", err)
		}
	} else if err := Measured(sp, trials, plots["measured"]); err != nil {
		return nil, fmt.Errorf("measured plot: %w", err)
	}
	if err := Convergence(sp, choices, trials, plots["convergence"]); err != nil {
		return nil, fmt.Errorf("convergence plot: %w", err)
	}
	return plots, nil
}

// BusBW plots bus bandwidth against message size (both log scales), per
// collective the trials measured: NCCL's defaults, the chosen configuration
// of each range over that range, and, for one collective, the best any
// completed trial reached at each size.
func BusBW(sp *space.Space, choices []results.RangeResult, trials []store.Trial, path string) error {
	p, err := busBWPlot(sp, choices, trials)
	if err != nil {
		return err
	}
	return save(p, path)
}

// busBWPlot is BusBW's plot, not yet saved.
func busBWPlot(sp *space.Space, choices []results.RangeResult, trials []store.Trial) (*plot.Plot, error) {
	colls := sp.Collectives()
	bw := bandwidth(sp, trials)
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s %s: NCCL defaults vs tuned", strings.Join(colls, ", "), bw)
	if len(sp.Simulator) > 0 {
		p.Title.Text += " (simulated cluster)"
	}
	p.X.Label.Text, p.Y.Label.Text = "message size (bytes)", bw+" (GB/s)"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = sizeTicks{}, logTicks{}
	p.Legend.Top, p.Legend.Left = true, true

	line, drawn := 0, 0
	// counted adds a line and counts its points.
	counted := func(p *plot.Plot, label string, xy plotter.XYs, s style) error {
		drawn += len(xy)
		return addLine(p, label, xy, s)
	}
	for _, coll := range colls {
		prefix := ""
		if len(colls) > 1 {
			prefix = coll + ": "
		} else if err := counted(p, "best of any trial, per size", envelope(sp, coll, trials), style{color.Gray{Y: 0xa0}, dashes[1], draw.CircleGlyph{}}); err != nil {
			return nil, err
		}
		if runs, xy := configLine(sp, trials, nil, coll, nil); xy != nil {
			if err := counted(p, prefix+"NCCL defaults ("+runs+")", xy, lineStyle(line)); err != nil {
				return nil, err
			}
			line++
		}
		for _, r := range choices {
			ch := r.Chosen()
			if r.Range.Collective != coll || ch == nil || sp.IsDefaults(ch.Params) {
				continue
			}
			runs, xy := configLine(sp, trials, ch.Params, coll, &r.Range)
			label := prefix + shorten(r.Range.Name, nameWidth) + ": " + runs
			if r.Range.Name == coll && prefix != "" {
				label = prefix + "tuned (" + runs + ")" // a workload's range, which the prefix names
			}
			if err := counted(p, label, xy, lineStyle(line)); err != nil {
				return nil, err
			}
			line++
		}
	}
	if drawn == 0 {
		// Nothing positive to draw (a single GPU moves no bytes): a log axis
		// has no range then, so the empty plot gets linear ones.
		p.Title.Text += ": no positive " + bw + " measured"
		p.X.Scale, p.Y.Scale = plot.LinearScale{}, plot.LinearScale{}
		p.X.Tick.Marker, p.Y.Tick.Marker = plot.DefaultTicks{}, plot.DefaultTicks{}
	}
	return p, nil
}

// Measured plots what each completed trial measured, per range, as the
// benchmark measures it (the DDP step's steps per second, the user's metric
// in its unit), against the trial number, on linear axes: a benchmark of
// one objective has no message sizes to plot over.
func Measured(sp *space.Space, trials []store.Trial, path string) error {
	p, err := measuredPlot(sp, trials)
	if err != nil {
		return err
	}
	return save(p, path)
}

// measuredPlot is Measured's plot, not yet saved.
func measuredPlot(sp *space.Space, trials []store.Trial) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "what each trial measured: NCCL defaults vs the search"
	m := sp.Measure(sp.Ranges[0])
	p.X.Label.Text, p.Y.Label.Text = "trial", shorten(m.Unit, 40)
	if m.Inverse {
		p.Y.Label.Text += " (lower is better)"
	}
	p.X.Tick.Marker = intTicks{}
	p.Legend.Top, p.Legend.Left = true, true
	for i, r := range sp.Ranges {
		m := sp.Measure(r)
		var defaults, searched plotter.XYs
		for _, t := range trials {
			s, ok := t.Scores[r.Name]
			if !ok || t.State != store.Complete {
				continue
			}
			xy := plotter.XY{X: float64(t.Number), Y: m.Value(s)}
			if sp.IsDefaults(t.Params) {
				defaults = append(defaults, xy)
			} else {
				searched = append(searched, xy)
			}
		}
		prefix := ""
		if len(sp.Ranges) > 1 {
			prefix = shorten(r.Name, nameWidth) + ": "
		}
		for _, set := range []struct {
			label string
			xy    plotter.XYs
			c     color.Color
		}{{prefix + "NCCL defaults", defaults, color.Gray{Y: 0x60}}, {prefix + "trials", searched, palette[i%len(palette)]}} {
			xy := finite(set.xy)
			if len(xy) == 0 {
				continue
			}
			pts, err := plotter.NewScatter(xy)
			if err != nil {
				return nil, err
			}
			pts.Color, pts.Radius, pts.Shape = set.c, vg.Points(2.5), draw.CircleGlyph{}
			p.Add(pts)
			p.Legend.Add(set.label, pts)
		}
	}
	// NCCL's defaults, at the left, are often the slowest: the legend, at
	// the top left, was drawn over them.
	roomForLegend(p)
	return p, nil
}

// bandwidth is what BusBW plots: "bus bandwidth", or "algorithm bandwidth"
// where every completed trial's rows are of one rank, whose bus bandwidth
// nccl-tests reports as 0 (results.AlgorithmBandwidth).
func bandwidth(sp *space.Space, trials []store.Trial) string {
	oneRank := false
	for _, t := range trials {
		for _, coll := range sp.Collectives() {
			if rows := results.RowsOf(t.Rows, coll, sp.Campaign.Collective); t.State == store.Complete && len(rows) > 0 {
				if !results.AlgorithmBandwidth(rows, t.Fingerprint.Ranks) {
					return "bus bandwidth"
				}
				oneRank = true
			}
		}
	}
	if oneRank {
		return "algorithm bandwidth (one rank)"
	}
	return "bus bandwidth"
}

// envelope is the best bus bandwidth any completed trial reached at each size of a collective.
func envelope(sp *space.Space, coll string, trials []store.Trial) plotter.XYs {
	best := map[int64]float64{}
	for _, t := range trials {
		if t.State != store.Complete {
			continue
		}
		rows := results.RowsOf(t.Rows, coll, sp.Campaign.Collective)
		for i, bw := range results.BusBW(rows, t.Fingerprint.Ranks) {
			if measured(bw) {
				best[rows[i].Size] = math.Max(best[rows[i].Size], bw)
			}
		}
	}
	var xy plotter.XYs
	for _, size := range slices.Sorted(maps.Keys(best)) {
		xy = append(xy, plotter.XY{X: float64(size), Y: best[size]})
	}
	return xy
}

// measured reports whether bw, a bandwidth of a stored row, is one: positive,
// and finite (a stored time of 5e-324 µs overflows a size over it to an
// infinite one, which, as the best of a size or in a mean of its runs, left
// the size out of the plot, and where every size was so, the plot was of
// nothing on log axes, which panicked).
func measured(bw float64) bool { return bw > 0 && !math.IsInf(bw, 1) }

// Convergence plots, per range, the best score the search found so far
// relative to NCCL's defaults (the score of choices, as results.Of gives
// them, indexed like sp.Ranges), against the trial number, over the
// search's trials: the simplification's re-measure the choices, which is
// not search progress.
func Convergence(sp *space.Space, choices []results.RangeResult, trials []store.Trial, path string) error {
	p, err := convergencePlot(sp, choices, trials)
	if err != nil {
		return err
	}
	return save(p, path)
}

// convergencePlot is Convergence's plot, not yet saved. Of a measure where
// lower is better (a time) the ratio is NCCL defaults' value over the best,
// since a score is its inverse: labelled "best ... relative to defaults", a
// ratio of 1.3 read as a best 30% slower.
func convergencePlot(sp *space.Space, choices []results.RangeResult, trials []store.Trial) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "search convergence: best so far / NCCL defaults"
	p.X.Label.Text, p.Y.Label.Text = "trial", "best score relative to defaults"
	if m := sp.Measure(sp.Ranges[0]); m.Inverse {
		// A unit in parentheses of its own (a workload of weights'
		// "(relative)", a command's unnamed "(metric)") joins the title's.
		unit := shorten(m.Unit, 20)
		if inner, ok := strings.CutPrefix(unit, "("); ok && strings.HasSuffix(inner, ")") && !strings.ContainsAny(inner[:len(inner)-1], "()") {
			unit = inner[:len(inner)-1]
		}
		p.Title.Text = "search convergence: NCCL defaults / best so far (" + unit + ", lower is better)"
		p.Y.Label.Text = "NCCL defaults' value / best so far (higher is better)"
	}
	p.X.Tick.Marker = intTicks{}
	p.Legend.Top, p.Legend.Left = true, false
	drawn := false
	for i, xy := range convergence(sp, choices, trials) {
		if err := addLine(p, shorten(sp.Ranges[i].Name, nameWidth), xy, lineStyle(i)); err != nil {
			return nil, err
		}
		drawn = drawn || len(finite(xy)) > 0
	}
	if !drawn {
		// Nothing to divide by: the plot was blank, on gonum's axis of no
		// data, -1 to 1, which reads as a ratio the search lost.
		p.Title.Text += ": no run of NCCL's defaults completed, nothing to compare with"
	}
	roomForLegend(p)
	return p, nil
}

// roomForLegend raises the top of p's y axis so that its legend, at the top,
// lies above every point: a best so far rises to the right, where the
// legend of the ranges was drawn over the highest ones' lines, and a time
// measured is highest at NCCL's defaults, at the left.
func roomForLegend(p *plot.Plot) {
	if share := legendShare(p); p.Y.Max > p.Y.Min && share < maxLegendShare {
		p.Y.Max = p.Y.Min + (p.Y.Max-p.Y.Min)/(1-share)
	}
}

// maxLegendShare is the share of the data's height from which a legend
// goes below the plot (save): over the data, it would hide half of it.
const maxLegendShare = 0.5

// legendShare is the share of p's data area's height that its legend
// takes, with a margin.
func legendShare(p *plot.Plot) float64 {
	legend := p.Legend.Rectangle(draw.Canvas{}).Size().Y
	// DataCanvas sets an axis of one value to gonum's range about it, 1
	// either way, which leaves one of 2^53 or more (a metric in FLOP/s) a
	// range from it to itself, where its ticks panic: widened first, and
	// measured on a copy, which DataCanvas changes.
	widen(&p.X)
	widen(&p.Y)
	bare, inner := unlabelled(p, draw.Canvas{Rectangle: vg.Rectangle{Max: vg.Point{X: width, Y: height}}})
	data := bare.DataCanvas(inner).Size().Y
	return float64(legend/data) + 0.02
}

// unlabelled is p without its axes' labels, and the part of c it is drawn
// in, less the labels' room, as drawPlot draws it. gonum lays out an axis's
// label as if centred at the arithmetic middle of the axis's range, which
// on a log axis lies near its end (200 of bandwidths from 4e-4 to 400
// GB/s): the label's box stood out past the data area, and gonum shrank the
// data area by as much, a blank band under the title (and at the right).
func unlabelled(p *plot.Plot, c draw.Canvas) (*plot.Plot, draw.Canvas) {
	bare := *p
	bare.X.Label.Text, bare.Y.Label.Text = "", ""
	return &bare, draw.Crop(c, labelRoom(p.Y, true), 0, labelRoom(p.X, false), 0)
}

// labelRoom is the room gonum gives an axis's label: its height, with the
// descent of the y axis's, which is drawn turned, and its padding.
func labelRoom(a plot.Axis, vertical bool) vg.Length {
	l := a.Label
	if l.Text == "" {
		return 0
	}
	room := l.TextStyle.Height(l.Text) + l.Padding
	if vertical {
		room += l.TextStyle.FontExtents().Descent
	}
	return room
}

// drawPlot draws p on c with its axes' labels centred on its data area (see
// unlabelled), where gonum draws them, in the room it gives them.
func drawPlot(p *plot.Plot, c draw.Canvas) {
	bare, inner := unlabelled(p, c)
	bare.Draw(inner)
	data := bare.DataCanvas(inner)
	if l := p.X.Label; l.Text != "" {
		c.FillText(l.TextStyle, vg.Point{X: data.Center().X, Y: c.Min.Y + l.TextStyle.FontExtents().Descent}, l.Text)
	}
	if l := p.Y.Label; l.Text != "" {
		turned := l.TextStyle
		turned.Rotation += math.Pi / 2
		c.FillText(turned, vg.Point{X: c.Min.X + l.TextStyle.Height(l.Text) - l.TextStyle.FontExtents().Descent, Y: data.Center().Y}, l.Text)
	}
}

// convergence is, per range, the best score so far relative to NCCL's
// defaults at each finished search trial (a failed one repeats the
// best before it); nil for a range without a measurement of the defaults.
// Before the range's first measurement there is no best to plot: a ratio of
// 0 there would read as a search 100% below the defaults. A configuration
// scores the geometric mean of its runs so far, as the gain combines them:
// the luckier of NCCL's defaults' two runs, taken alone, put a search that
// found nothing better than them above them. From a failure by its
// settings on, a configuration is no best, as results never chooses it:
// the plot ended above the table's gain. NCCL's defaults' score is
// choices', which the report has: computed again, it was a third of the
// plots' time (a model fitted on every trial).
func convergence(sp *space.Space, choices []results.RangeResult, trials []store.Trial) []plotter.XYs {
	out := make([]plotter.XYs, len(sp.Ranges))
	keys := make([]string, len(trials))
	for j, t := range trials {
		if t.Searched() && (t.State == store.Complete || t.State == store.Failed) {
			keys[j] = sp.Reading(t.Params)
		}
	}
	defaults := sp.Reading(nil)
	type runs struct {
		logSum float64
		n      int
		failed bool
	}
	for i, r := range sp.Ranges {
		// NCCL's defaults over all their runs (trials 0 and 1 at least), as the gain is computed.
		base := choices[i].DefaultScore
		if math.IsNaN(base) || base <= 0 {
			continue
		}
		configs := map[string]*runs{}
		best, leader := math.Inf(-1), "" // the highest mean log score so far, and whose
		// lead finds the best anew, where the leader fell or failed.
		lead := func() {
			best, leader = math.Inf(-1), ""
			for key, c := range configs {
				if m := c.logSum / float64(c.n); !c.failed && c.n > 0 && (m > best || m == best && key < leader) {
					best, leader = m, key
				}
			}
		}
		for j, t := range trials {
			if !t.Searched() || t.State != store.Complete && t.State != store.Failed {
				continue
			}
			c := configs[keys[j]]
			if c == nil {
				c = &runs{}
				configs[keys[j]] = c
			}
			s, ok := t.Scores[r.Name]
			switch {
			case results.FailedByItsSettings(t) && keys[j] != defaults:
				c.failed = true
				if keys[j] == leader {
					lead()
				}
			case t.State == store.Complete && ok && s > 0 && !math.IsInf(s, 1):
				c.logSum, c.n = c.logSum+math.Log(s), c.n+1
				switch m := c.logSum / float64(c.n); {
				case c.failed:
				case m >= best:
					best, leader = m, keys[j]
				case keys[j] == leader:
					lead() // the best, measured again, fell: another may lead now
				}
			}
			if !math.IsInf(best, -1) {
				out[i] = append(out[i], plotter.XY{X: float64(t.Number), Y: math.Exp(best) / base})
			}
		}
	}
	return out
}

// configLine is the bus bandwidth per size of collective coll (within a
// range, if given) of configuration a over all its completed runs, as
// results scores it and the gain combines them: NCCL's defaults (trial 0
// and those a campaign starts with), a choice re-measured by the
// simplification. One run alone (a cold first launch) skewed the line
// against the gain. It names the runs; the line is nil where none
// completed.
func configLine(sp *space.Space, trials []store.Trial, a space.Assignment, coll string, within *space.Range) (string, plotter.XYs) {
	key := sp.Reading(a)
	var runs []store.Trial
	for _, t := range trials {
		if t.State == store.Complete && sp.Reading(t.Params) == key {
			runs = append(runs, t)
		}
	}
	return runsLabel(runs), rowsXY(sp, runs, coll, within)
}

// runsLabel names runs of one configuration in a legend: their numbers,
// three or more consecutive ones as a range, and past the fourth part only how many.
// NCCL's defaults run on each of up to 64 groups, and naming every trial
// made an entry wider than the plot.
func runsLabel(runs []store.Trial) string {
	if len(runs) == 1 {
		return "trial " + strconv.Itoa(runs[0].Number)
	}
	var parts []string
	for i := 0; i < len(runs); {
		j := i
		for j+1 < len(runs) && runs[j+1].Number == runs[j].Number+1 {
			j++
		}
		if j < i+2 { // two are named each
			j = i
		}
		part := strconv.Itoa(runs[i].Number)
		if j > i {
			part += "-" + strconv.Itoa(runs[j].Number)
		}
		parts, i = append(parts, part), j+1
	}
	if len(parts) > 4 {
		return fmt.Sprintf("mean of %d trials %s, …", len(runs), strings.Join(parts[:4], ", "))
	}
	return "mean of trials " + strings.Join(parts, ", ")
}

// rowsXY is the bus bandwidth at each size of collective coll (within a
// range, if given) over runs of one configuration: at each size, the
// geometric mean of the runs that measured it, as results scores a
// configuration measured more than once.
func rowsXY(sp *space.Space, runs []store.Trial, coll string, within *space.Range) plotter.XYs {
	logSum, count := map[int64]float64{}, map[int64]float64{}
	for _, t := range runs {
		rows := results.RowsOf(t.Rows, coll, sp.Campaign.Collective)
		for i, bw := range results.BusBW(rows, t.Fingerprint.Ranks) {
			if size := rows[i].Size; measured(bw) && (within == nil || within.Contains(size)) {
				logSum[size] += math.Log(bw)
				count[size]++
			}
		}
	}
	var xy plotter.XYs
	for _, size := range slices.Sorted(maps.Keys(count)) {
		xy = append(xy, plotter.XY{X: float64(size), Y: math.Exp(logSum[size] / count[size])})
	}
	return xy
}

// save writes p as a PNG at path, each axis whose points all hold one
// value widened around it first. The file is written whole or not at all:
// a report that fails (a full disk) or is killed leaves the plot before it.
func save(p *plot.Plot, path string) error {
	if legendShare(p) < maxLegendShare { // it widens the axes
		c := vgimg.New(width, height)
		drawPlot(p, draw.New(c))
		return atomicfile.WriteFrom(path, vgimg.PngCanvas{Canvas: c}, 0o666)
	}
	// A legend of many lines (a space of many ranges) would hide the data
	// and run over the axes, and past the image's foot: it goes below.
	legend := p.Legend
	legend.Top, legend.Left = true, true
	below := legend.Rectangle(draw.Canvas{}).Size().Y + 2*legend.TextStyle.Font.Size
	c := vgimg.New(width, height+below)
	dc := draw.New(c)
	bare := *p
	bare.Legend = plot.NewLegend()
	drawPlot(&bare, draw.Crop(dc, 0, 0, below, 0))
	legend.Draw(draw.Crop(dc, legend.TextStyle.Font.Size, 0, 0, -height-legend.TextStyle.Font.Size))
	return atomicfile.WriteFrom(path, vgimg.PngCanvas{Canvas: c}, 0o666)
}

// widen gives an axis whose points all hold one positive value (one size
// swept, one trial measured) a range around it: gonum's own, 1 either way,
// runs a log axis to 0 or below under a value of 1, where it panics, and
// sets a linear one about 0 under a tiny value, which then reads as 0. A
// value and its geometric mean over one run may differ in the last bit,
// a range with no tick in it: that is one value too.
func widen(a *plot.Axis) {
	if a.Min > 0 && a.Max <= a.Min*(1+1e-9) {
		a.Min, a.Max = a.Min/1.25, a.Max*1.25
	}
}

// style is how a line and its points are drawn.
type style struct {
	color  color.Color
	dashes []vg.Length
	glyph  draw.GlyphDrawer
}

// dashes and glyphs tell lines of one colour apart (a range of one size is
// a point, no line): the palette's colours repeat after six lines (ranges,
// collectives), and the seventh was drawn as the first, a range's choice
// as NCCL's defaults.
var (
	dashes = [][]vg.Length{nil, {vg.Points(4), vg.Points(3)}, {vg.Points(1.5), vg.Points(2.5)},
		{vg.Points(6), vg.Points(2.5), vg.Points(1.5), vg.Points(2.5)}}
	glyphs = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.BoxGlyph{}, draw.TriangleGlyph{}, draw.CrossGlyph{}}
)

// lineStyle is the style of a plot's n-th line: the palette's colours
// solid with circles, then dashed with squares, dotted with triangles,
// dash-dotted with crosses.
func lineStyle(n int) style {
	k := n / len(palette) % len(dashes)
	return style{palette[n%len(palette)], dashes[k], glyphs[k]}
}

// finite is xy without its points that are not finite. A store's scores
// need only be finite: a tampered one's 1e308, or a default of 5e-324,
// overflows a ratio or a time's inverse to infinity, a point the plotter
// refuses, and that failed the whole report. Such a point is left out.
func finite(xy plotter.XYs) plotter.XYs {
	return slices.DeleteFunc(slices.Clone(xy), func(pt plotter.XY) bool {
		return math.IsInf(pt.X, 0) || math.IsNaN(pt.X) || math.IsInf(pt.Y, 0) || math.IsNaN(pt.Y)
	})
}

func addLine(p *plot.Plot, label string, xy plotter.XYs, s style) error {
	xy = finite(xy)
	if len(xy) == 0 {
		return nil
	}
	l, err := plotter.NewLine(xy)
	if err != nil {
		return err
	}
	l.Color, l.Width, l.Dashes = s.color, vg.Points(1.6), s.dashes
	pts, err := plotter.NewScatter(xy)
	if err != nil {
		return err
	}
	pts.Color, pts.Radius, pts.Shape = s.color, vg.Points(1.8), s.glyph
	p.Add(l, pts)
	p.Legend.Add(label, l)
	return nil
}

// sizeTicks labels a log axis of bytes with powers of two in K/M/G.
type sizeTicks struct{}

func (sizeTicks) Ticks(min, max float64) []plot.Tick {
	var ticks []plot.Tick
	for e := 0; e < 63; e++ {
		v := math.Ldexp(1, e)
		if v < min || v > max {
			continue
		}
		label := ""
		if e%4 == 0 || max/min < 1<<12 {
			label = space.FormatSize(int64(v))
		}
		ticks = append(ticks, plot.Tick{Value: v, Label: label})
	}
	if len(ticks) == 0 {
		// No power of two on the axis: one size swept (3000 bytes), which
		// widen centres on it. It was left with no label at all.
		v := math.Round(math.Sqrt(min * max))
		ticks = append(ticks, plot.Tick{Value: v, Label: space.FormatSize(int64(v))})
	}
	return ticks
}

// logTicks labels a log axis at powers of ten, and where fewer than two
// of those lie on it (bus bandwidths of 150 to 380 GB/s, a sweep of large
// messages alone), at plot.DefaultTicks' round values: plot.LogTicks
// labels only powers of ten, and such an axis had no number on it. Each
// label is the shortest that reads back as its value: plot.LogTicks' own
// precision, 0, wrote 10 as "1e+01".
type logTicks struct{}

func (logTicks) Ticks(min, max float64) []plot.Tick {
	ticks := plot.LogTicks{Prec: -1}.Ticks(min, max)
	if labelled(ticks, min, max) >= 2 {
		return ticks
	}
	return plot.DefaultTicks{}.Ticks(min, max)
}

// labelled counts the ticks with a label from min to max.
func labelled(ticks []plot.Tick, min, max float64) int {
	n := 0
	for _, t := range ticks {
		if t.Label != "" && t.Value >= min && t.Value <= max {
			n++
		}
	}
	return n
}

// nameWidth is as many characters of a range's name as a legend shows: a
// name as long as the space file takes ran past the plot's edge.
const nameWidth = 40

// shorten cuts a label from the space file (a command's metric unit) or the
// store (a range's name) to n runes, once drawable: the axis is as tall as
// the plot, and a label longer than it took the plot's whole height, which
// then drew no axis and no point. It cuts between characters as drawn, not
// inside an escape, which would name another character.
func shorten(s string, n int) string {
	var drawn []string
	width := 0
	for _, r := range s {
		drawn = append(drawn, drawable(r))
		width += utf8.RuneCountInString(drawn[len(drawn)-1])
	}
	if width <= n {
		return strings.Join(drawn, "")
	}
	var b strings.Builder
	width = 0
	for _, d := range drawn {
		if width += utf8.RuneCountInString(d); width > n-1 {
			break
		}
		b.WriteString(d)
	}
	return b.String() + "…"
}

// drawable is r, or where the plots' font has no glyph for it (a unit in
// Chinese, which vanished from the axis), or it is not graphic (a stored
// name's ESC), r escaped as \uXXXX, as the terminal shows the name.
func drawable(r rune) string {
	if g, err := plotFace.GlyphIndex(nil, r); err == nil && g != 0 && unicode.IsGraphic(r) {
		return string(r)
	}
	return fmt.Sprintf("\\u%04x", r)
}

// plotFace is the plots' font.
var plotFace = font.DefaultCache.Lookup(plot.DefaultFont, 12).Face

// intTicks labels an axis of counts (trial numbers) with whole numbers, at
// whole numbers: DefaultTicks puts a labelled tick at 2.5 between trials 0
// and 5, which "%.0f" labelled 2, half a trial off. None is below 0: gonum
// sets the axis of trial 0 alone from -1 to 1, and labelled trial -1.
type intTicks struct{}

func (intTicks) Ticks(min, max float64) []plot.Tick {
	min = math.Max(min, 0)
	if max-min <= 10 {
		var ticks []plot.Tick
		for v := math.Ceil(min); v <= max; v++ {
			ticks = append(ticks, plot.Tick{Value: v, Label: fmt.Sprintf("%.0f", v)})
		}
		return ticks
	}
	var ticks []plot.Tick
	for _, t := range (plot.DefaultTicks{}).Ticks(min, max) {
		if t.Value != math.Round(t.Value) {
			continue
		}
		if t.Label != "" {
			t.Label = fmt.Sprintf("%.0f", t.Value)
		}
		ticks = append(ticks, t)
	}
	return ticks
}
