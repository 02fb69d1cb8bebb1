package main

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"batchd/sched/sim"
)

// plotFigure draws f with gonum/plot and writes dir/ID.svg and dir/ID.png;
// it returns the file names written.
func plotFigure(f sim.Figure, dir string) ([]string, error) {
	p := plot.New()
	p.Title.Text = f.Title
	p.Title.TextStyle.Font.Size = vg.Points(11)
	p.X.Label.Text = f.XLabel
	p.Y.Label.Text = f.YLabel
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	if f.LogY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	if f.LogX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	switch f.Kind {
	case sim.FigureBars:
		if err := addBars(p, f); err != nil {
			return nil, err
		}
	default:
		if err := addLines(p, f); err != nil {
			return nil, err
		}
	}
	if !f.LogY {
		// Headroom for the legend, which sits at the top.
		top := math.Inf(-1)
		for _, s := range f.Series {
			for j, y := range s.Y {
				if s.YHi != nil && !math.IsNaN(s.YHi[j]) {
					y = math.Max(y, s.YHi[j])
				}
				if !math.IsNaN(y) && !math.IsInf(y, 0) {
					top = math.Max(top, y)
				}
			}
		}
		if top > 0 {
			p.Y.Max = math.Max(p.Y.Max, top*(1+0.09*float64(len(f.Series)+1)))
		}
	}
	var out []string
	for _, ext := range []string{"svg", "png"} {
		name := filepath.Join(dir, f.ID+"."+ext)
		if err := p.Save(7*vg.Inch, 4.2*vg.Inch, name); err != nil {
			return nil, fmt.Errorf("save %s: %w", name, err)
		}
		out = append(out, name)
	}
	return out, nil
}

func seriesColor(i int) color.Color { return plotutil.Color(i) }

func addLines(p *plot.Plot, f sim.Figure) error {
	for i, s := range f.Series {
		pts := make(plotter.XYs, 0, len(s.X))
		for j := range s.X {
			if math.IsNaN(s.Y[j]) || math.IsInf(s.X[j], 0) || (f.LogY && s.Y[j] <= 0) || (f.LogX && s.X[j] <= 0) {
				continue
			}
			pts = append(pts, plotter.XY{X: s.X[j], Y: s.Y[j]})
		}
		if len(pts) == 0 {
			continue
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		l.Color = seriesColor(i)
		l.Width = vg.Points(1.5)
		l.Dashes = plotutil.Dashes(i)
		if f.Kind == sim.FigureCumulative {
			l.StepStyle = plotter.PostStep
		}
		p.Add(l)
		p.Legend.Add(s.Name, l)
		if f.Kind == sim.FigureLines && len(pts) <= 40 {
			sc, err := plotter.NewScatter(pts)
			if err != nil {
				return err
			}
			sc.Color = seriesColor(i)
			sc.Shape = plotutil.Shape(i)
			p.Add(sc)
		}
		if s.YLo != nil && !f.LogY && len(pts) == len(s.X) && len(pts) <= 40 {
			eb := make(errPoints, len(pts))
			for j := range pts {
				eb[j] = errPoint{pts[j].X, pts[j].Y, finite(s.Y[j] - s.YLo[j]), finite(s.YHi[j] - s.Y[j])}
			}
			e, err := plotter.NewYErrorBars(eb)
			if err != nil {
				return err
			}
			e.Color = seriesColor(i)
			p.Add(e)
		}
	}
	return nil
}

func addBars(p *plot.Plot, f sim.Figure) error {
	n := len(f.Series)
	w := vg.Points(float64(min(60, 360/max(1, n*len(f.Categories)))))
	for i, s := range f.Series {
		vals := make(plotter.Values, len(s.Y))
		for j, y := range s.Y {
			if math.IsNaN(y) {
				y = 0
			}
			vals[j] = y
		}
		b, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return err
		}
		b.Color = seriesColor(i)
		b.LineStyle.Width = vg.Length(0)
		b.Offset = w * vg.Length(float64(i)-float64(n-1)/2)
		p.Add(b)
		p.Legend.Add(s.Name, b)
		if s.YLo != nil {
			eb := make(errPoints, len(s.Y))
			for j := range s.Y {
				eb[j] = errPoint{float64(j), vals[j], finite(s.Y[j] - s.YLo[j]), finite(s.YHi[j] - s.Y[j])}
			}
			e, err := plotter.NewYErrorBars(eb)
			if err != nil {
				return err
			}
			e.LineStyle.Width = vg.Points(1)
			// Shift the error bars over their bar.
			p.Add(shifted{e, b.Offset})
		}
	}
	p.NominalX(f.Categories...)
	p.X.Tick.Label.Rotation = 0
	if len(f.Categories) > 4 && len(f.Categories[0]) > 6 {
		p.X.Tick.Label.Rotation = math.Pi / 8
		p.X.Tick.Label.XAlign = draw.XRight
	}
	return nil
}

// errPoint is a point with lower and upper error lengths.
type errPoint struct{ x, y, lo, hi float64 }

// errPoints implements plotter.XYer and plotter.YErrorer.
type errPoints []errPoint

func (e errPoints) Len() int                        { return len(e) }
func (e errPoints) XY(i int) (float64, float64)     { return e[i].x, e[i].y }
func (e errPoints) YError(i int) (float64, float64) { return e[i].lo, e[i].hi }

// shifted draws a plotter moved right by off (for error bars over grouped
// bars).
type shifted struct {
	*plotter.YErrorBars
	off vg.Length
}

func (s shifted) Plot(c draw.Canvas, p *plot.Plot) {
	c.Rectangle.Min.X += s.off
	c.Rectangle.Max.X += s.off
	s.YErrorBars.Plot(c, p)
}

// finite returns x, or 0 for NaN and infinities (an error bar that cannot
// be drawn).
func finite(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	return x
}
