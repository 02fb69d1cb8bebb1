package pool

import (
	"context"
	"testing"
	"time"
)

// A pool that restarts finds its pilots in the batch system and learns
// from the server which of them served: a pilot that served and reached
// its time limit, before the restart or after it without the pool ever
// seeing its worker up, is no failure, and the pool does not back off;
// a pilot that started and ended without its worker ever registering
// still is.
func TestPoolRestartNoFalseFailure(t *testing.T) {
	e, s := &engine{}, &server{requested: 1}
	p := newTestPool(t, Config{Slots: 1, MaxPilots: 4}, e, s)
	now := time.Unix(10_000, 0)
	p.now = func() time.Time { return now }
	ctx := context.Background()
	e.pilots = []Pilot{
		{ID: "old", State: Ended, Raw: "TIMEOUT", Started: now.Add(-time.Hour)},
		{ID: "busy", State: Running, Raw: "RUNNING", Started: now.Add(-10 * time.Minute)},
	}
	s.registered = []string{"test-old", "test-busy"}
	if err := p.Round(ctx); err != nil {
		t.Fatal(err)
	}
	if !p.notBefore.IsZero() {
		t.Fatalf("backing off after the restart's first round: %q", p.lastErr)
	}
	// The busy pilot's worker served (the server says so) and it ends by
	// its time limit between two rounds: no failure.
	e.pilots[1].State, e.pilots[1].Raw = Ended, "TIMEOUT"
	if err := p.Round(ctx); err != nil {
		t.Fatal(err)
	}
	if !p.notBefore.IsZero() {
		t.Fatalf("a pilot that served counted as a failure: %q", p.lastErr)
	}
	// One that started and never registered is a failure.
	e.pilots = append(e.pilots, Pilot{ID: "broken", State: Ended, Raw: "FAILED", Started: now.Add(-time.Second)})
	if err := p.Round(ctx); err != nil {
		t.Fatal(err)
	}
	if p.notBefore.IsZero() {
		t.Fatalf("a pilot that never registered is no failure")
	}
}
