package sched

import (
	"math"
)

// betaWindow is how many recent finished-copy durations the Hill estimator
// looks at; betaRefit is how many new samples trigger a refit.
const (
	betaWindow = 1024
	betaRefit  = 16
)

// betaEstimator fits the Pareto shape β of copy durations online with the
// Hill estimator over the most recent betaWindow samples, and answers the
// prior until minSamples samples exist. Samples of copies that lost a race
// (killed after running ω) are right-censored: the copy would have run at
// least ω. They are kept in the ring as −ω, and the fit counts them in the
// tail's log-excesses but not as exceedances (the censored Hill estimator),
// so that speculation, which kills exactly the long copies, does not make
// the tail look lighter than it is. With lazy set (nothing decides by β:
// no speculation), the fit is computed only when β is read.
type betaEstimator struct {
	prior      float64
	minSamples int
	ring       []float64
	n          int // samples seen
	fit        float64
	sinceFit   int
	buf        []float64
	epoch      int  // bumped whenever value() may have changed
	lazy       bool // fit on read (value), not on add
	dirty      bool // a refit is due (lazy)
}

func (b *betaEstimator) init(prior float64, minSamples int) {
	b.prior, b.minSamples = prior, minSamples
	b.fit = prior
}

// add records a winning copy's duration d.
func (b *betaEstimator) add(d float64) {
	if !(d > 0) || math.IsInf(d, 0) {
		return
	}
	b.push(d)
}

// addCensored records that a copy was killed after running d: its duration
// is at least d.
func (b *betaEstimator) addCensored(d float64) {
	if !(d > 0) || math.IsInf(d, 0) {
		return
	}
	b.push(-d)
}

func (b *betaEstimator) push(x float64) {
	if len(b.ring) < betaWindow {
		b.ring = append(b.ring, x)
	} else {
		b.ring[b.n%betaWindow] = x
	}
	b.n++
	b.sinceFit++
	if b.lazy && b.n >= b.minSamples {
		// Fitted on read: every sample counts, not only those up to the
		// last multiple of betaRefit (a reader saw a fit of 36 of 48).
		b.sinceFit = 0
		b.epoch++
		b.dirty = true
		return
	}
	if b.n >= b.minSamples && (b.sinceFit >= betaRefit || b.n == b.minSamples) {
		b.sinceFit = 0
		b.epoch++
		if b.lazy {
			b.dirty = true
		} else {
			b.fit = Hill(b.ring, &b.buf)
		}
	}
}

func (b *betaEstimator) value() float64 {
	if b.n < b.minSamples {
		return b.prior
	}
	if b.dirty {
		b.fit = Hill(b.ring, &b.buf)
		b.dirty = false
	}
	return b.fit
}

// Hill estimates the Pareto tail index β of xs with the Hill estimator over
// the k = max(2, n/4) largest values: β = k_u / Σ ln(x_(i) / x_(k+1)), where
// a negative x stands for a right-censored sample of at least −x (it adds
// its log-excess but is not one of the k_u uncensored exceedances; with no
// censored sample k_u = k, the plain Hill estimator). The result is clamped
// to [1.05, 20] (β ≤ 1 has no mean, and a huge β means no tail worth
// speculating on). buf, when not nil, is reused as scratch. It costs O(n):
// the k largest are found by selection, not by sorting.
func Hill(xs []float64, buf *[]float64) float64 {
	var local []float64
	if buf == nil {
		buf = &local
	}
	a := append((*buf)[:0], xs...)
	*buf = a
	n := len(a)
	if n < 3 {
		return 20
	}
	k := max(2, n/4)
	if k >= n {
		k = n - 1
	}
	// After selection a[n-k-1] is the (k+1)-th largest by magnitude and
	// a[n-k:] holds the k largest.
	selectAbs(a, n-k-1)
	ref := math.Abs(a[n-k-1])
	if ref <= 0 {
		return 20
	}
	sum, ku := 0.0, 0
	for _, x := range a[n-k:] {
		if x > 0 {
			ku++
		}
		sum += math.Log(math.Abs(x) / ref)
	}
	if sum <= 0 {
		return 20
	}
	return min(20, max(1.05, float64(ku)/sum))
}

// selectAbs reorders a so that a[m] holds the element that would be there
// if a were sorted by magnitude, with smaller magnitudes before it and
// larger (or equal) after it (Hoare's selection, median-of-three pivots;
// deterministic).
func selectAbs(a []float64, m int) {
	lo, hi := 0, len(a)-1
	for lo < hi {
		mid := lo + (hi-lo)/2
		x, y, z := math.Abs(a[lo]), math.Abs(a[mid]), math.Abs(a[hi])
		p := y
		if (x <= y) == (y <= z) {
			p = y
		} else if (y <= x) == (x <= z) {
			p = x
		} else {
			p = z
		}
		i, j := lo, hi
		for i <= j {
			for math.Abs(a[i]) < p {
				i++
			}
			for math.Abs(a[j]) > p {
				j--
			}
			if i <= j {
				a[i], a[j] = a[j], a[i]
				i++
				j--
			}
		}
		switch {
		case m <= j:
			hi = j
		case m >= i:
			lo = i
		default:
			return
		}
	}
}

// tNew estimates how long a new copy of t would run: its own estimate, else
// the mean duration of finished copies of its set, else of its owner's
// sets, else of every set; ok is false when nothing is known.
func (s *Scheduler) tNew(t *task) (float64, bool) {
	if t.est > 0 {
		return t.est, true
	}
	st := t.set
	if st.durN > 0 {
		return st.durSum / float64(st.durN), true
	}
	if o := s.owners[st.owner]; o != nil && o.n > 0 {
		return o.sum / float64(o.n), true
	}
	if s.global.n > 0 {
		return s.global.sum / float64(s.global.n), true
	}
	return 0, false
}

// historyTNew is t_new of a task of st without an estimate: the mean
// winning-copy duration of st, else of its owner, else of everything.
func (s *Scheduler) historyTNew(st *set) (float64, bool) {
	if st.durN > 0 {
		return st.durSum / float64(st.durN), true
	}
	if o := s.owners[st.owner]; o != nil && o.n > 0 {
		return o.sum / float64(o.n), true
	}
	if s.global.n > 0 {
		return s.global.sum / float64(s.global.n), true
	}
	return 0, false
}

// tRem estimates how much longer running copy c needs at now: from its
// progress report when it sent one (ω·(1−p)/p after running ω), else from
// the Pareto tail (a copy that has run ω needs about ω/(β−1) more).
func (s *Scheduler) tRem(c *liveCopy, now Time) float64 {
	tn, ok := s.tNew(c.task)
	if !ok {
		tn = -1
	}
	return TRem(c.runTime(now), c.progress, s.beta.value(), tn)
}

// TRem is the remaining time of a copy that has run omega seconds, with
// progress p in (0,1] (anything else = no report), under Pareto shape beta,
// for a task whose new copy is expected to need tNew seconds (negative =
// unknown). With progress: ω·(1−p)/p. Without: the Pareto tail's mean
// residual life; with mean tNew the scale is x_m = tNew·(β−1)/β, and a
// copy that has run ω ≥ x_m needs ω/(β−1) more, one that has run less needs
// tNew − ω (the two meet at x_m).
func TRem(omega, p, beta, tNew float64) float64 {
	if p > 0 && p <= 1 {
		return omega * (1 - p) / p
	}
	if tNew > 0 {
		if xm := tNew * (beta - 1) / beta; omega < xm {
			return tNew - omega
		}
	}
	return omega / (beta - 1)
}
