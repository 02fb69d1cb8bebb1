package main

import "testing"

func TestLatencyAt(t *testing.T) {
	f := latencyAt([]float64{1, 2, 3}, []float64{10, 20, 30})
	for _, c := range []struct{ t, want float64 }{{0, 1}, {10, 1}, {14, 1}, {16, 2}, {25, 2}, {26, 3}, {100, 3}} {
		if got := f(c.t); got != c.want {
			t.Errorf("latencyAt(%g) = %g, want %g", c.t, got, c.want)
		}
	}
	if latencyAt(nil, nil) != nil {
		t.Error("no samples: want no function")
	}
}
