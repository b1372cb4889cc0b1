package quality

import (
	"fmt"
	"image/color"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/nccltune/nccltune/internal/atomicfile"
)

var colors = []color.Color{color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
	color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}, color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
	color.RGBA{R: 0xe3, G: 0x77, B: 0xc2, A: 0xff}, color.RGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff},
	color.RGBA{R: 0xbc, G: 0xbd, B: 0x22, A: 0xff}, color.RGBA{R: 0x17, G: 0xbe, B: 0xcf, A: 0xff},
	color.RGBA{A: 0xff}, color.RGBA{B: 0x80, A: 0xff}} // one per strategy of Strategies

// Plot draws, for each sampler, the median over the named scenarios of the
// worst range's median regret against the number of trials; and beside it,
// a panel per family of generated scenarios: the median (solid) and 90th
// percentile (dashed) over the family of the worst range's regret.
func Plot(results []Result, families []FamilyResults, trials int, path string) error {
	var panels []*plot.Plot
	if len(results) > 0 || len(families) == 0 {
		p, err := panel("search quality on the simulated cluster (median over scenarios)", results, trials, false)
		if err != nil {
			return err
		}
		panels = append(panels, p)
	}
	for _, f := range families {
		p, err := panel(fmt.Sprintf("on %d %s (median; dashed: 90th percentile)", len(f.Results)/len(samplersOf(f.Results)), f.Name), f.Results, trials, true)
		if err != nil {
			return err
		}
		panels = append(panels, p)
	}
	w, h := 9*vg.Inch*vg.Length(len(panels)), 5.5*vg.Inch
	img := vgimg.New(w, h)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: len(panels), PadX: vg.Inch / 4, PadLeft: vg.Inch / 8, PadRight: vg.Inch / 8, PadTop: vg.Inch / 8, PadBottom: vg.Inch / 8}
	canvases := plot.Align([][]*plot.Plot{panels}, tiles, dc)
	for i, p := range panels {
		p.Draw(canvases[0][i])
	}
	return atomicfile.WriteFrom(path, vgimg.PngCanvas{Canvas: img}, 0o666)
}

// FamilyResults are the campaigns on one family of generated scenarios,
// named as a plot's title says it ("generated landscapes").
type FamilyResults struct {
	Name    string
	Results []Result
}

func samplersOf(results []Result) []string {
	var samplers []string
	for _, r := range results {
		if !slices.Contains(samplers, r.Sampler) {
			samplers = append(samplers, r.Sampler)
		}
	}
	return samplers
}

// panel draws each sampler's worst-range regret against trials: the median
// over the results' scenarios, and with p90 their 90th percentile too.
func panel(title string, results []Result, trials int, p90 bool) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text, p.Y.Label.Text = "trials", "regret of the chosen configuration, worst range"
	p.Y.Tick.Marker = percentTicks{}
	for i, s := range samplersOf(results) {
		var med, high plotter.XYs
		for n := 1; n <= trials; n++ {
			var v []float64
			for _, r := range results {
				if r.Sampler == s {
					v = append(v, r.WorstMedianRegret(n))
				}
			}
			med = append(med, plotter.XY{X: float64(n), Y: Quantile(v, 0.5)})
			high = append(high, plotter.XY{X: float64(n), Y: Quantile(v, 0.9)})
		}
		l, err := plotter.NewLine(med)
		if err != nil {
			return nil, err
		}
		l.Color, l.Width = colors[i%len(colors)], vg.Points(1.8)
		p.Add(l)
		p.Legend.Add(s, l)
		if p90 {
			h, err := plotter.NewLine(high)
			if err != nil {
				return nil, err
			}
			h.Color, h.Width, h.Dashes = colors[i%len(colors)], vg.Points(1.2), []vg.Length{vg.Points(5), vg.Points(3)}
			p.Add(h)
		}
	}
	line, _ := plotter.NewLine(plotter.XYs{{X: 1, Y: 0.03}, {X: float64(trials), Y: 0.03}})
	line.Color, line.Dashes = color.Gray{Y: 0x90}, []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(line)
	p.Legend.Add("3%", line)
	p.Legend.Top = true
	return p, nil
}

type percentTicks struct{}

func (percentTicks) Ticks(min, max float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(min, max)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = fmt.Sprintf("%.0f%%", 100*ticks[i].Value)
		}
	}
	return ticks
}
