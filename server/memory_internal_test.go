package server

import "testing"

// A forced collection only when the heap held is well above the live
// heap: by the floor, and by half the live heap.
func TestShouldTrim(t *testing.T) {
	for _, c := range []struct {
		held, live uint64
		want       bool
	}{
		{0, 0, false},
		{trimFloor - 1, 0, false},
		{trimFloor, 0, true},
		{3*trimFloor - 1, 2 * trimFloor, false}, // less than half of live above it
		{3 * trimFloor, trimFloor, true},
		{245 << 20, 110 << 20, true}, // after ten big discloses
		{20 << 20, 1 << 20, false},   // a small server: under the floor
	} {
		if got := shouldTrim(c.held, c.live); got != c.want {
			t.Errorf("shouldTrim(%d, %d) = %v, want %v", c.held, c.live, got, c.want)
		}
	}
}
