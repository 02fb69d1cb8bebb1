package sched

import "testing"

// hopperShares runs two 3-task jobs on 8 free slots under hopper+grass with
// V = 1.5·T and no fairness floor (S = 8 < ΣV = 9: the smaller-first
// branch), and returns the starts of each job at t = 0, originals and
// speculative copies apart.
func hopperShares(t *testing.T, cfg Config) (orig, spec [3]int) {
	t.Helper()
	cfg.Speculation, cfg.VirtualFactor, cfg.Epsilon = SpecHopperGRASS, 1.5, 1
	b := setup(t, cfg)
	b.apply(Event{Kind: EventWorkerUp, Worker: "w1", Slots: 4})
	b.apply(Event{Kind: EventWorkerUp, Worker: "w2", Slots: 4})
	for _, set := range []SetID{1, 2} {
		b.apply(Event{Kind: EventDisclosed, Set: set, Owner: "u", Tasks: tasksWithEstimate(3, 10)})
		b.apply(Event{Kind: EventRequested, Set: set})
	}
	for _, d := range b.s.Decide(0) {
		if d.Kind != DecisionStart {
			continue
		}
		if d.Speculative {
			spec[d.Task.Set]++
		} else {
			orig[d.Task.Set]++
		}
	}
	return orig, spec
}

// Hopper's shares filled by cloning: the first job gets its desired
// allocation ⌈4.5⌉ = 5 (two clones beside its three tasks) and the second
// the 3 slots left; with ⌊V⌋ each gets 4, one clone each. Filled by GRASS,
// no task straggles at t = 0 and no copy starts.
func TestHopperCloneShares(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name       string
		cfg        Config
		orig, spec [3]int
	}{
		{"clone, ⌈V⌉", Config{HopperClone: true}, [3]int{0, 3, 3}, [3]int{0, 2, 0}},
		{"clone, ⌊V⌋", Config{HopperClone: true, VirtualFloor: true}, [3]int{0, 3, 3}, [3]int{0, 1, 1}},
		{"GRASS, ⌈V⌉", Config{}, [3]int{0, 3, 3}, [3]int{}},
	} {
		orig, spec := hopperShares(t, c.cfg)
		if orig != c.orig || spec != c.spec {
			t.Errorf("%s: originals %v, copies %v; want %v, %v", c.name, orig, spec, c.orig, c.spec)
		}
	}
}

// desiredRound: ⌈c·T⌉ by default, ⌊c·T⌋ with floorV, never below T.
func TestDesiredRound(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		c          float64
		n, up, low int
	}{{1.5, 3, 5, 4}, {1.5886, 1, 2, 1}, {2, 4, 8, 8}, {1, 7, 7, 7}} {
		if got := desiredRound(c.c, c.n, false); got != c.up {
			t.Errorf("⌈%g·%d⌉ = %d, want %d", c.c, c.n, got, c.up)
		}
		if got := desiredRound(c.c, c.n, true); got != c.low {
			t.Errorf("⌊%g·%d⌋ = %d, want %d", c.c, c.n, got, c.low)
		}
	}
}
