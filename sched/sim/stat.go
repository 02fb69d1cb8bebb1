// Small statistics the experiments' reports share.

package sim

import (
	"math"
	"sort"
)

// scalePct turns a summary of fractions into percentages.
func scalePct(s Summary) Summary {
	s.Mean *= 100
	s.HalfWidth *= 100
	s.Min *= 100
	s.Max *= 100
	return s
}

// fracBelow is the fraction of xs below t.
func fracBelow(xs []float64, t float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	n := 0
	for _, x := range xs {
		if x < t {
			n++
		}
	}
	return float64(n) / float64(len(xs))
}

// ratio is an improvement factor base/ours (lower is better for both).
func ratio(base, ours float64) float64 {
	if ours <= 0 {
		if base <= 0 {
			return 1
		}
		return math.Inf(1)
	}
	return base / ours
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func fracAtLeast(xs []float64, t float64) float64 {
	n := 0
	for _, x := range xs {
		if x >= t {
			n++
		}
	}
	return 100 * float64(n) / float64(len(xs))
}

// cumulative turns improvement factors into Petrou's cumulative curve:
// the fraction of points that improved by at least x.
func cumulative(name string, r []float64) Series {
	xs := append([]float64(nil), r...)
	sort.Float64s(xs)
	s := Series{Name: name}
	n := len(xs)
	for i, x := range xs {
		if math.IsInf(x, 1) || (i+1 < n && xs[i+1] == x) {
			continue
		}
		// Fraction ≥ x counts x itself: points i' with xs[i'] >= x.
		j := sort.SearchFloat64s(xs, x)
		s.X, s.Y = append(s.X, x), append(s.Y, float64(n-j)/float64(n))
	}
	return s
}

func binMean(js []JobResult, lo, hi int32) float64 {
	s, n := 0.0, 0
	for _, j := range js {
		if j.Tasks >= lo && j.Tasks <= hi {
			s += j.Response
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return s / float64(n)
}

func binCount(js []JobResult, lo, hi int32) int {
	n := 0
	for _, j := range js {
		if j.Tasks >= lo && j.Tasks <= hi {
			n++
		}
	}
	return n
}

// jobGains matches jobs of two runs by set and request and returns the
// per-job reduction in response time, in percent.
func jobGains(base, ours []JobResult) []float64 {
	type k struct{ s, g int32 }
	b := make(map[k]float64, len(base))
	for _, j := range base {
		b[k{j.Set, j.Group}] = j.Response
	}
	var out []float64
	for _, j := range ours {
		if x, ok := b[k{j.Set, j.Group}]; ok && x > 0 {
			out = append(out, 100*(1-j.Response/x))
		}
	}
	return out
}

func seq(a, b, step float64) []float64 {
	var out []float64
	for x := a; x <= b+1e-9; x += step {
		out = append(out, x)
	}
	return out
}

func id(v float64) float64 { return v }
