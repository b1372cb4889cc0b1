package quality

import (
	"fmt"
	"image/color"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Plot draws, for each sampler, the median over scenarios of the worst
// range's median regret against the number of trials.
func Plot(results []Result, trials int, path string) error {
	p := plot.New()
	p.Title.Text = "search quality on the simulated cluster (median over scenarios)"
	p.X.Label.Text, p.Y.Label.Text = "trials", "regret of the chosen configuration, worst range"
	p.Y.Tick.Marker = percentTicks{}
	colors := []color.Color{color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
		color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
		color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}} // one per strategy

	var samplers []string
	for _, r := range results {
		if !slices.Contains(samplers, r.Sampler) {
			samplers = append(samplers, r.Sampler)
		}
	}
	for i, s := range samplers {
		var xy plotter.XYs
		for n := 1; n <= trials; n++ {
			var v []float64
			for _, r := range results {
				if r.Sampler == s {
					v = append(v, r.WorstMedianRegret(n))
				}
			}
			xy = append(xy, plotter.XY{X: float64(n), Y: Median(v)})
		}
		l, err := plotter.NewLine(xy)
		if err != nil {
			return err
		}
		l.Color, l.Width = colors[i%len(colors)], vg.Points(1.8)
		p.Add(l)
		p.Legend.Add(s, l)
	}
	line, _ := plotter.NewLine(plotter.XYs{{X: 1, Y: 0.03}, {X: float64(trials), Y: 0.03}})
	line.Color, line.Dashes = color.Gray{Y: 0x90}, []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(line)
	p.Legend.Add("3%", line)
	p.Legend.Top = true
	return p.Save(9*vg.Inch, 5.5*vg.Inch, path)
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
