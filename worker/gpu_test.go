package worker

import (
	"slices"
	"testing"
)

// The pool gives each copy free devices, first ones first, never one a
// copy holds, and takes them back when the copy ends.
func TestGPUPool(t *testing.T) {
	t.Parallel()
	p := newGPUPool([]string{"2", "0", "", "2", "1"})
	if p.count() != 3 {
		t.Fatalf("count %d, want 3 (empty and duplicate dropped)", p.count())
	}
	a, err := p.take(1, 2)
	if err != nil || !slices.Equal(a, []string{"2", "0"}) {
		t.Fatalf("take(1, 2) = %v, %v; want [2 0]", a, err)
	}
	if _, err := p.take(2, 2); err == nil {
		t.Fatal("took 2 devices with 1 free")
	}
	b, err := p.take(3, 1)
	if err != nil || !slices.Equal(b, []string{"1"}) {
		t.Fatalf("take(3, 1) = %v, %v; want [1]", b, err)
	}
	p.give(1)
	p.give(1) // twice: nothing more
	c, err := p.take(4, 2)
	if err != nil || !slices.Equal(c, []string{"2", "0"}) {
		t.Fatalf("after give: take(4, 2) = %v, %v; want [2 0] in the given order", c, err)
	}
	if _, err := p.take(5, 1); err == nil {
		t.Fatal("took a device that copies 3 and 4 hold")
	}
}
