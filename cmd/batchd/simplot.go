package main

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"batchd/sched/sim"
)

// plotFigure draws f with gonum/plot and writes dir/ID.svg and dir/ID.png;
// it returns the file names written. The legend goes in a strip under the
// axes, never over the data; a long title is wrapped; linear axes tick at
// round values with only the decimals the step needs.
func plotFigure(f sim.Figure, dir string) ([]string, error) {
	p := plot.New()
	p.Title.Text = wrapTitle(f.Title, 78)
	p.Title.TextStyle.Font.Size = vg.Points(11)
	p.X.Label.Text = f.XLabel
	p.Y.Label.Text = f.YLabel
	p.Add(plotter.NewGrid())
	p.X.Tick.Marker = roundTicks{}
	p.Y.Tick.Marker = roundTicks{}
	if f.LogY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = logRoundTicks{}
	}
	if f.LogX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = logRoundTicks{}
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
	if f.Kind == sim.FigureCumulative {
		p.Y.Min, p.Y.Max = 0, 1
	} else if !f.LogY {
		// End the value axis on labelled ticks, so that no bar, curve or
		// error bar runs into the frame's edge.
		p.Y.Min, p.Y.Max = roundOut(p.Y.Min, p.Y.Max)
	}
	entries := len(f.Series)
	for _, m := range f.Marks {
		l, err := plotter.NewLine(plotter.XYs{{X: m.X, Y: p.Y.Min}, {X: m.X, Y: p.Y.Max}})
		if err != nil {
			return nil, err
		}
		l.Color = color.Gray{Y: 90}
		l.Width = vg.Points(1)
		l.Dashes = []vg.Length{vg.Points(2), vg.Points(3)}
		p.Add(l)
		p.Legend.Add(m.Label, l)
		entries++
	}
	leg := p.Legend
	leg.TextStyle.Font.Size = vg.Points(10)
	leg.Top, leg.Left = true, true
	p.Legend = plot.NewLegend() // drawn below, not over the data
	const width, height = 7 * vg.Inch, 4.2 * vg.Inch
	legH := vg.Points(14)*vg.Length(entries) + vg.Points(8)
	var out []string
	for _, ext := range []string{"svg", "png"} {
		name := filepath.Join(dir, f.ID+"."+ext)
		c, err := draw.NewFormattedCanvas(width, height+legH, ext)
		if err != nil {
			return nil, err
		}
		dc := draw.New(c)
		p.Draw(draw.Crop(dc, 0, 0, legH, 0))
		leg.Draw(draw.Crop(dc, vg.Points(48), 0, vg.Points(2), -(height + vg.Points(4))))
		if err := writeFile(name, func(w io.Writer) error { _, err := c.WriteTo(w); return err }); err != nil {
			return nil, fmt.Errorf("save %s: %w", name, err)
		}
		out = append(out, name)
	}
	return out, nil
}

// wrapTitle breaks a title longer than n runes at the space nearest its
// middle, so that it fits the figure.
func wrapTitle(t string, n int) string {
	r := []rune(t)
	if len(r) <= n {
		return t
	}
	mid, best := len(r)/2, -1
	for i, c := range r {
		if c == ' ' && (best < 0 || abs(i-mid) < abs(best-mid)) {
			best = i
		}
	}
	if best < 0 {
		return t
	}
	return string(r[:best]) + "\n" + string(r[best+1:])
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// logRoundTicks labels a log axis at 1, 2 and 5 × 10^k (only 10^k when
// that would be more than ten labels), with unlabelled minor ticks at the
// other integers × 10^k.
type logRoundTicks struct{}

func (logRoundTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(lo > 0) || !(hi > lo) || math.IsInf(hi, 0) {
		return nil
	}
	e0, e1 := int(math.Floor(math.Log10(lo))), int(math.Ceil(math.Log10(hi)))
	onlyDecades := 3*(e1-e0) > 10
	var ts []plot.Tick
	for e := e0; e <= e1; e++ {
		for m := 1; m <= 9; m++ {
			v := float64(m) * math.Pow(10, float64(e))
			if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || (!onlyDecades && (m == 2 || m == 5)) {
				t.Label = strconv.FormatFloat(v, 'g', -1, 64)
			}
			ts = append(ts, t)
		}
	}
	return ts
}

// roundTicks puts 4–8 major ticks on a linear axis at multiples of 1, 2,
// 2.5 or 5 × 10^k, labelled with as many decimals as the step needs.
type roundTicks struct{}

func (roundTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) || math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		return nil
	}
	step, dec := tickStep(hi-lo), 0
	e := math.Floor(math.Log10(step) + 1e-9)
	dec = -int(e)
	if math.Abs(step/math.Pow(10, e)-2.5) < 1e-9 {
		dec++ // 0.25, 2.5: one more decimal than the power of ten
	}
	dec = max(0, dec)
	var ts []plot.Tick
	for k := math.Ceil(lo/step - 1e-9); k*step <= hi+step*1e-9; k++ {
		v := k * step
		if math.Abs(v) < step*1e-9 {
			v = 0
		}
		ts = append(ts, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', dec, 64)})
		if h := v + step/2; h <= hi {
			ts = append(ts, plot.Tick{Value: h})
		}
	}
	return ts
}

// tickStep is roundTicks' step for an axis spanning span: 1, 2, 2.5, 5 or
// 10 × 10^k, at most 8 steps.
func tickStep(span float64) float64 {
	mag := math.Pow(10, math.Floor(math.Log10(span/6)))
	step := mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		step = m * mag
		if span/step <= 8 {
			break
		}
	}
	return step
}

// roundOut widens [lo, hi] to the round ticks just outside it (a bound
// already on a tick stays).
func roundOut(lo, hi float64) (float64, float64) {
	if !(hi > lo) || math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		return lo, hi
	}
	step := tickStep(hi - lo)
	return math.Floor(lo/step+1e-9) * step, math.Ceil(hi/step-1e-9) * step
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
	// Half a category of room on either side, so that the outer bars of a
	// group stay inside the frame.
	p.X.Min, p.X.Max = -0.5, float64(len(f.Categories))-0.5
	p.X.Tick.Label.Rotation = 0
	if len(f.Categories) > 4 && len(f.Categories[0]) > 6 {
		p.X.Tick.Label.Rotation = math.Pi / 8
		if len(f.Categories) > 8 {
			p.X.Tick.Label.Rotation = math.Pi / 5
		}
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
