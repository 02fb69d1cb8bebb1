package jitter_test

import (
	"testing"
	"time"

	"batchd/internal/jitter"
)

// The ceiling doubles from Min to Max; each wait lies between half the
// ceiling and the ceiling; Reset starts again from Min.
func TestBackoffBounds(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    float64
		want []time.Duration
	}{
		{"low", 0, []time.Duration{100, 200, 400, 800, 1000, 1000}},
		{"high", 0.999999, []time.Duration{200, 400, 800, 1600, 2000, 2000}},
		{"middle", 0.5, []time.Duration{150, 300, 600, 1200, 1500, 1500}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := jitter.Backoff{Min: 200 * time.Millisecond, Max: 2 * time.Second, RandFunc: func() float64 { return tc.r }}
			for i, w := range tc.want {
				got, want := b.Next(), w*time.Millisecond
				if d := got - want; d < -time.Millisecond || d > time.Millisecond {
					t.Errorf("wait %d = %v, want %v", i, got, want)
				}
			}
			b.Reset()
			if got, want := b.Next(), tc.want[0]*time.Millisecond; got-want < -time.Millisecond || got-want > time.Millisecond {
				t.Errorf("after Reset: %v, want %v", got, want)
			}
		})
	}
}

// With the real random source, waits of one ceiling differ: two clients
// that lost the same server do not come back in step.
func TestBackoffJitters(t *testing.T) {
	seen := map[time.Duration]bool{}
	for range 50 {
		b := jitter.Backoff{Min: time.Second, Max: time.Second}
		d := b.Next()
		if d < 500*time.Millisecond || d > time.Second {
			t.Fatalf("wait %v outside [0.5 s, 1 s]", d)
		}
		seen[d] = true
	}
	if len(seen) < 40 {
		t.Errorf("%d distinct waits in 50, want them spread", len(seen))
	}
}
