package pool

import (
	"context"
	"slices"
	"testing"
	"time"

	batchv1 "batchd/proto/batch/v1"
)

// A running pilot whose worker registered and then fell silent past the
// lease and the margin is cancelled once (its allocation and its place
// under MaxPilots go back); one silent for less, one that never
// registered (RegisterWait judges those) and one whose worker is absent
// (it said goodbye and is leaving) are not; its end is no failure.
func TestSilentPilotCancelled(t *testing.T) {
	e, s := &engine{}, &server{requested: 1, lease: 15}
	p := newTestPool(t, Config{Slots: 1, MaxPilots: 4, SilentMargin: 5 * time.Second}, e, s)
	ctx := context.Background()
	now := time.Unix(1000, 0)
	p.now = func() time.Time { return now }
	e.pilots = []Pilot{
		{ID: "dead", State: Running, Raw: "RUNNING", Started: now.Add(-time.Minute)},
		{ID: "slow", State: Running, Raw: "RUNNING", Started: now.Add(-time.Minute)},
		{ID: "gone", State: Running, Raw: "RUNNING", Started: now.Add(-time.Minute)},
		{ID: "new", State: Running, Raw: "RUNNING", Started: now.Add(-time.Second)},
	}
	s.workers = []*batchv1.PoolWorker{
		{Name: "test-dead", State: "up", SilentSeconds: 1},
		{Name: "test-slow", State: "up", SilentSeconds: 1},
		{Name: "test-gone", State: "up", SilentSeconds: 1},
	}
	if err := p.Round(ctx); err != nil {
		t.Fatal(err)
	}
	if len(e.cancelled) != 0 {
		t.Fatalf("cancelled %v with every worker heard from", e.cancelled)
	}
	s.workers = []*batchv1.PoolWorker{
		{Name: "test-dead", State: "lease-lapsed", SilentSeconds: 21},
		{Name: "test-slow", State: "up", SilentSeconds: 19},
		{Name: "test-new", State: "lease-lapsed", SilentSeconds: 60}, // never registered while the pool looked
	}
	for range 2 {
		if err := p.Round(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(e.cancelled, []string{"dead"}) {
		t.Fatalf("cancelled %v, want [dead] once", e.cancelled)
	}
	if p.lastErr == "" {
		t.Errorf("the pool does not say why it cancelled the pilot")
	}
	e.pilots[0].Raw = "CANCELLED"
	p.notBefore = time.Time{}
	if err := p.Round(ctx); err != nil {
		t.Fatal(err)
	}
	if !p.notBefore.IsZero() {
		t.Errorf("the cancelled pilot's end counted as a failure: backing off until %v", p.notBefore)
	}
}
