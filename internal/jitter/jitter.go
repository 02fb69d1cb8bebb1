// Package jitter computes the waits between attempts of a call that may
// fail for a while (a server restarting, a network drop): exponential
// backoff with jitter, so that many clients that lost the same server do
// not all come back at the same instant.
//
// The client's call retries and watch reconnects and the worker agent's
// stream and report loops all use one Backoff each:
//
//	b := jitter.Backoff{Min: 200 * time.Millisecond, Max: 5 * time.Second}
//	for {
//		if err := call(); err == nil {
//			return
//		}
//		sleep(b.Next())
//	}
package jitter

import (
	"math/rand/v2"
	"time"
)

// Backoff is the state of one retry loop. The zero value is not usable:
// set Min and Max (Min > 0, Max >= Min). It is not safe for concurrent use.
type Backoff struct {
	// Min is the ceiling of the first wait; each wait doubles the ceiling,
	// up to Max.
	Min, Max time.Duration
	// RandFunc returns a number in [0, 1) (default math/rand/v2.Float64);
	// tests pin it.
	RandFunc func() float64

	ceil time.Duration // the ceiling of the last wait; 0 after Reset
}

// Next returns the wait before the next attempt: a random duration between
// half the ceiling and the ceiling ("equal jitter"), where the ceiling is
// Min on the first call after a Reset and doubles on each call up to Max.
// Half the ceiling is a floor, so a retry never comes back at once.
func (b *Backoff) Next() time.Duration {
	if b.ceil == 0 {
		b.ceil = b.Min
	} else {
		b.ceil = min(2*b.ceil, b.Max)
	}
	r := rand.Float64
	if b.RandFunc != nil {
		r = b.RandFunc
	}
	half := b.ceil / 2
	return half + time.Duration(r()*float64(b.ceil-half))
}

// Reset starts the waits again from Min (after a success).
func (b *Backoff) Reset() { b.ceil = 0 }
