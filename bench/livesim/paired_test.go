package main

import (
	"math"
	"testing"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func TestSignTest(t *testing.T) {
	for _, c := range []struct {
		k, m int
		p    float64
	}{
		{0, 0, 1},
		{5, 5, 1},               // 2·P(X≤5 | n=10) = 2·638/1024 > 1
		{10, 0, 2.0 / 1024},     // all above: 2·2^-10
		{0, 10, 2.0 / 1024},     // symmetric
		{8, 2, 2 * 56.0 / 1024}, // 2·(1+10+45)/1024 = 0.109
		{9, 1, 2 * 11.0 / 1024}, // 0.0215
		{6, 0, 2.0 / 64},        // 0.03125
	} {
		if got := signTest(c.k, c.m); !near(got, c.p, 1e-12) {
			t.Errorf("signTest(%d, %d) = %g, want %g", c.k, c.m, got, c.p)
		}
	}
}

func TestPairedTest(t *testing.T) {
	// log ratios ±d around log 1.05: geometric mean exactly 1.05.
	d := 0.02
	rs := []float64{1.05 * math.Exp(d), 1.05 * math.Exp(-d), 1.05 * math.Exp(d), 1.05 * math.Exp(-d)}
	p := pairedTest(rs)
	if p.N != 4 || !near(p.Mean, 1.05, 1e-12) || p.Above != 4 || p.Below != 0 {
		t.Fatalf("paired = %+v", p)
	}
	// sd of the logs: d·sqrt(4/3); half-width t(3)·sd/2.
	h := 3.182 * d * math.Sqrt(4.0/3) / 2
	if !near(p.Lo, 1.05*math.Exp(-h), 1e-9) || !near(p.Hi, 1.05*math.Exp(h), 1e-9) {
		t.Fatalf("interval [%g, %g], want [%g, %g]", p.Lo, p.Hi, 1.05*math.Exp(-h), 1.05*math.Exp(h))
	}
	if p.Consistent {
		t.Fatalf("interval [%g, %g] excludes 1 but is called consistent", p.Lo, p.Hi)
	}
	if !near(p.SignP, 2.0/16, 1e-12) {
		t.Fatalf("sign p = %g, want 0.125", p.SignP)
	}

	// Ratios straddling 1 symmetrically in logs: mean 1, consistent.
	q := pairedTest([]float64{1.1, 1 / 1.1, 1.2, 1 / 1.2, 1})
	if !near(q.Mean, 1, 1e-12) || !q.Consistent || q.Above != 2 || q.Below != 2 || q.SignP != 1 {
		t.Fatalf("symmetric: %+v", q)
	}
	if !(q.Lo < 1 && q.Hi > 1) {
		t.Fatalf("symmetric interval [%g, %g]", q.Lo, q.Hi)
	}

	// A ratio is a ratio: the log scale makes live/sim and sim/live
	// mirror images.
	inv := pairedTest([]float64{1 / (1.05 * math.Exp(d)), 1 / (1.05 * math.Exp(-d)), 1 / (1.05 * math.Exp(d)), 1 / (1.05 * math.Exp(-d))})
	if !near(inv.Mean*p.Mean, 1, 1e-12) || !near(inv.Lo*p.Hi, 1, 1e-9) || inv.Below != 4 {
		t.Fatalf("inverse: %+v against %+v", inv, p)
	}

	// Unusable ratios (a seed whose sim mean was 0 or NaN) are dropped,
	// and one seed has no interval and no verdict.
	one := pairedTest([]float64{math.NaN(), math.Inf(1), 0, 1.2})
	if one.N != 1 || !math.IsNaN(one.Lo) || one.Consistent || !near(one.Mean, 1.2, 1e-12) {
		t.Fatalf("one seed: %+v", one)
	}
}
