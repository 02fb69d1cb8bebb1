package server

import (
	"sync"
	"time"
)

// Default abuse limits per user (Config fields; negative turns one off).
const (
	// DefaultMaxOpenSets is how many task sets with unfinished tasks one
	// user may hold.
	DefaultMaxOpenSets = 1000
	// DefaultMaxQueuedTasks is how many disclosed or requested, unfinished
	// tasks one user may hold.
	DefaultMaxQueuedTasks = 2_000_000
	// DefaultRequestRate is the calls a second one user may make on
	// average (a token bucket)...
	DefaultRequestRate = 1000.0
	// DefaultRequestBurst ...and at once.
	DefaultRequestBurst = 2000
)

// rateLimiter is a token bucket per user. Buckets that are full are
// forgotten now and then, so that it stays small.
type rateLimiter struct {
	rate  float64 // tokens a second; <= 0 means no limit
	burst int

	mu      sync.Mutex
	buckets map[string]*bucket
	swept   time.Time
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newRateLimiter(rate float64, burst int) *rateLimiter {
	if burst < 1 {
		burst = 1
	}
	return &rateLimiter{rate: rate, burst: burst, buckets: map[string]*bucket{}}
}

// allow takes one token of user's bucket at now and says whether there was
// one.
func (r *rateLimiter) allow(user string, now time.Time) bool {
	if r.rate <= 0 {
		return true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if now.Sub(r.swept) > time.Minute {
		for u, b := range r.buckets {
			if b.tokens+now.Sub(b.at).Seconds()*r.rate >= float64(r.burst) {
				delete(r.buckets, u)
			}
		}
		r.swept = now
	}
	b := r.buckets[user]
	if b == nil {
		b = &bucket{tokens: float64(r.burst), at: now}
		r.buckets[user] = b
	}
	if dt := now.Sub(b.at).Seconds(); dt > 0 {
		b.tokens = min(float64(r.burst), b.tokens+dt*r.rate)
		b.at = now
	}
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
