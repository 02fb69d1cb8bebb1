package main

import (
	"math"
	"testing"
)

// One slot. Task a is requested at 10 and starts 0.2 s later with the
// slot free (a request-opened stretch of 0.2 slot-s). Task b is requested
// at 10.5 while a runs; a is killed at 11 and b starts at 11.3 (a
// kill-opened stretch of 0.3 slot-s). Task c waits behind b, which wins at
// 12; c starts at 12.1 (a win-opened stretch of 0.1 slot-s).
func TestIdleCausesSplitsByTheOpeningEvent(t *testing.T) {
	m := map[taskKey][]cpEnd{
		{1, 0}: {{start: 0.2, end: 1, how: "killed", req: 10}},
		{2, 0}: {{start: 0.8, end: 1.5, how: "won", req: 10.5}},
		{3, 0}: {{start: 1.1, end: 2, how: "won", req: 11}},
	}
	got := idleCauses(m, 1)
	want := map[string]float64{"request": 0.2, "end:killed": 0.3, "end:won": 0.1}
	for k, w := range want {
		if math.Abs(got[k]-w) > 1e-9 {
			t.Errorf("%s: %.3f slot-s, want %.3f (all: %v)", k, got[k], w, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("causes %v, want only %v", got, want)
	}
}
