package sched

import (
	"math"
	"math/rand"
	"slices"
	"testing"
)

// hillSorted is the textbook Hill estimator by sorting (with censored
// samples as negative values), the reference for Hill's selection.
func hillSorted(xs []float64) float64 {
	a := slices.Clone(xs)
	slices.SortFunc(a, func(x, y float64) int {
		if math.Abs(x) < math.Abs(y) {
			return -1
		} else if math.Abs(x) > math.Abs(y) {
			return 1
		}
		return 0
	})
	n := len(a)
	k := min(max(2, n/4), n-1)
	ref := math.Abs(a[n-k-1])
	sum, ku := 0.0, 0
	for _, x := range a[n-k:] {
		if x > 0 {
			ku++
		}
		sum += math.Log(math.Abs(x) / ref)
	}
	return min(20, max(1.05, float64(ku)/sum))
}

func TestHillSelectMatchesSort(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewSource(7))
	for trial := range 200 {
		n := 3 + r.Intn(1100)
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = math.Pow(1-r.Float64(), -1/1.3)
			if trial%2 == 1 && r.Intn(3) == 0 {
				xs[i] = -xs[i] // censored: distinct magnitudes, no ties
			} else if r.Intn(10) == 0 {
				xs[i] = math.Round(xs[i]) + 1 // ties
			}
		}
		got, want := Hill(xs, nil), hillSorted(xs)
		if math.Abs(got-want) > 1e-9*want {
			t.Fatalf("trial %d (n=%d): Hill = %g, sorted reference %g", trial, n, got, want)
		}
	}
}

// TestHillCensored: speculation kills the long copies; fitting only the
// winners makes the tail look light, the censored estimator does not.
func TestHillCensored(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewSource(3))
	const beta = 1.259
	var winners, all []float64
	for range 20000 {
		d := math.Pow(1-r.Float64(), -1/beta)
		cut := 3 + 10*r.Float64() // a copy raced and won at cut
		if d > cut {
			all = append(all, -cut)
			winners = append(winners, cut*(0.5+r.Float64()))
			continue
		}
		all = append(all, d)
		winners = append(winners, d)
	}
	naive, cens := Hill(winners, nil), Hill(all, nil)
	if math.Abs(cens-beta) > 0.1 {
		t.Errorf("censored Hill = %.3f, want about %.3f", cens, beta)
	}
	if naive < beta+0.3 {
		t.Errorf("winners-only Hill = %.3f: expected it biased well above %.3f", naive, beta)
	}
}
