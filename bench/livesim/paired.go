package main

import (
	"math"

	"batchd/sched/sim"
)

// paired is the paired test of live against simulated mean job time over
// seeds: per seed the ratio live/sim, summarised as the geometric mean
// ratio with its 95% interval (Student's t on the log ratios) and a
// two-sided sign test of "live is as often above sim as below".
type paired struct {
	N          int     // seeds with a finite, positive ratio
	Mean       float64 // exp of the mean log ratio (geometric mean)
	Lo, Hi     float64 // its 95% interval (NaN for N < 2)
	Above      int     // seeds with ratio > 1
	Below      int     // seeds with ratio < 1
	SignP      float64 // two-sided sign test p (ties dropped)
	Consistent bool    // the interval contains 1
}

// pairedTest tests the per-seed ratios rs (live/sim of the same seed).
func pairedTest(rs []float64) paired {
	var logs []float64
	var p paired
	for _, r := range rs {
		if !(r > 0) || math.IsInf(r, 0) {
			continue
		}
		logs = append(logs, math.Log(r))
		switch {
		case r > 1:
			p.Above++
		case r < 1:
			p.Below++
		}
	}
	p.N = len(logs)
	p.Mean, p.Lo, p.Hi, p.SignP = math.NaN(), math.NaN(), math.NaN(), math.NaN()
	if p.N == 0 {
		return p
	}
	s := sim.Summarize(logs)
	p.Mean = math.Exp(s.Mean)
	if p.N >= 2 {
		p.Lo, p.Hi = math.Exp(s.Mean-s.HalfWidth), math.Exp(s.Mean+s.HalfWidth)
		p.Consistent = p.Lo <= 1 && 1 <= p.Hi
	}
	p.SignP = signTest(p.Above, p.Below)
	return p
}

// signTest is the exact two-sided sign test's p for k successes against m
// failures under Binomial(k+m, 1/2): twice the smaller tail, at most 1.
func signTest(k, m int) float64 {
	n := k + m
	if n == 0 {
		return 1
	}
	lo := min(k, m)
	// P(X ≤ lo) = Σ_{i≤lo} C(n,i) / 2^n, summed in logs to stay finite.
	tail := 0.0
	for i := 0; i <= lo; i++ {
		tail += math.Exp(lchoose(n, i) - float64(n)*math.Ln2)
	}
	return math.Min(1, 2*tail)
}

func lchoose(n, k int) float64 {
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c
}
