package server

import (
	"testing"

	"batchd/sched"
)

// A followed copy's buffer takes what continues each stream: a repeat is
// skipped, a gap refused (the worker sends again from the size it is
// answered), and nothing past the cap is kept, as in the stored output.
func TestLiveBufAdd(t *testing.T) {
	t.Parallel()
	b := &liveBuf{changed: make(chan struct{})}
	const cap = 8
	for _, tc := range []struct {
		name string
		off  int64
		p    string
		cut  bool
		want string
		grew bool
	}{
		{"first", 0, "abc", false, "abc", true},
		{"repeat", 0, "abc", false, "abc", false},
		{"overlap", 1, "bcde", false, "abcde", true},
		{"gap", 7, "x", false, "abcde", false},
		{"past cap", 5, "fghij", true, "abcdefgh", true},
		{"full", 8, "k", true, "abcdefgh", false},
	} {
		if grew := b.add(0, tc.off, []byte(tc.p), tc.cut, cap); string(b.out[0]) != tc.want || grew != tc.grew {
			t.Errorf("%s: add(%d, %q) held %q grew %v; want %q %v", tc.name, tc.off, tc.p, b.out[0], grew, tc.want, tc.grew)
		}
	}
	if !b.cut[0] || b.cut[1] || len(b.out[1]) != 0 {
		t.Errorf("cut %v, stderr %q: want stdout cut, stderr untouched", b.cut, b.out[1])
	}
}

// A buffer opened at a copy's start for a waiting follower that never
// took it is dropped when the follower leaves; one a follower reads stays
// until it lets go.
func TestLiveHubUnwaitDropsUntaken(t *testing.T) {
	t.Parallel()
	h := newLiveHub(1 << 20)
	ref := sched.TaskRef{Set: 1, Index: 0}
	if h.startFollowed(ref, 1, "w") {
		t.Fatal("a start with nobody waiting asks for output")
	}
	h.wait(ref)
	if !h.startFollowed(ref, 1, "w") || !h.startFollowed(ref, 2, "w") {
		t.Fatal("a start with a follower waiting does not ask for output")
	}
	b, order := h.subscribe(ref, sched.LiveCopy{Copy: 2, Worker: "w"})
	if order {
		t.Fatal("subscribing to a buffer opened at the start orders a follow")
	}
	h.unwait(ref)
	if h.get(1) != nil || h.get(2) != b {
		t.Fatalf("after unwait: copy 1 %v, copy 2 %v; want only copy 2's", h.get(1), h.get(2))
	}
	if !h.unsubscribe(b) || h.get(2) != nil || h.active.Load() != 0 {
		t.Fatalf("after unsubscribe: copy 2 %v, active %d", h.get(2), h.active.Load())
	}
}
