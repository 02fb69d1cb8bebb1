package pool

import (
	"fmt"
	"time"
)

// DefaultTimeMargin is Config.TimeMargin's default: room above the
// longest queued task for the pilot's start, its worker's end margin (the
// worker takes no copy in its last 30 s) and the hand-back.
const DefaultTimeMargin = 2 * time.Minute

// pilotTime is the time limit of a pilot submitted now: the longest
// expected run time of a queued task plus margin, within [lo, hi]. With
// nothing known about the queued work (longest 0) it is hi: a task
// without an estimate may run until the pilot's end. hi 0 means no
// sizing: 0, and the engine's own limit applies.
func pilotTime(longest float64, margin, lo, hi time.Duration) time.Duration {
	if hi <= 0 {
		return 0
	}
	if longest <= 0 {
		return hi
	}
	// Seconds to a Duration, saturating instead of overflowing.
	want := hi
	if longest < hi.Seconds() {
		want = time.Duration(longest*float64(time.Second)) + margin
	}
	return min(max(want, lo), hi)
}

// slurmLimit formats d as Slurm's time limit, whole minutes rounded up
// ("M", or "D-HH:MM:00" from a day on).
func slurmLimit(d time.Duration) string {
	m := int64((d + time.Minute - 1) / time.Minute)
	m = max(m, 1)
	if m < 24*60 {
		return fmt.Sprint(m)
	}
	return fmt.Sprintf("%d-%02d:%02d:00", m/(24*60), m%(24*60)/60, m%60)
}
