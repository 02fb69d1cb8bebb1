package sched

// indexedHeap is a binary min-heap by less whose items record their own
// position in it (at returns the item's position field, -1 when it is not
// in the heap), so that any item can leave or move in O(log n). The
// scheduler's queues are instances with a less of their own: queued tasks
// (taskHeap), sets with queued disclosed tasks (setHeap), workers
// (workerHeap) and preemptible copies (copyHeap).
//
// less must be a total order (ties broken by an id), so that the first
// item, and every decision made from it, depends only on the items and not
// on the order they were pushed in.
type indexedHeap[T comparable] struct {
	items []T
	less  func(a, b T) bool
	at    func(T) *int32
}

func (h *indexedHeap[T]) len() int { return len(h.items) }

// peek returns the first item, the zero T when the heap is empty.
func (h *indexedHeap[T]) peek() T {
	if len(h.items) == 0 {
		var zero T
		return zero
	}
	return h.items[0]
}

func (h *indexedHeap[T]) push(x T) {
	h.items = append(h.items, x)
	h.up(len(h.items) - 1)
}

// remove takes x out of the heap; it does nothing when x is not in it.
func (h *indexedHeap[T]) remove(x T) {
	i := int(*h.at(x))
	if i < 0 || i >= len(h.items) || h.items[i] != x {
		return
	}
	last := len(h.items) - 1
	if i != last {
		h.items[i] = h.items[last]
		*h.at(h.items[i]) = int32(i)
	}
	var zero T
	h.items[last] = zero
	h.items = h.items[:last]
	*h.at(x) = -1
	if i != last {
		h.fix(i)
	}
	// A queue that drained after a burst gives its memory back.
	if cap(h.items) > 64 && len(h.items) < cap(h.items)/4 {
		h.items = append([]T(nil), h.items...)
	}
}

// update restores the order after x's key changed; it does nothing when x
// is not in the heap.
func (h *indexedHeap[T]) update(x T) {
	if i := int(*h.at(x)); i >= 0 && i < len(h.items) && h.items[i] == x {
		h.fix(i)
	}
}

// fix moves the item at i down or up to its place.
func (h *indexedHeap[T]) fix(i int) {
	if !h.down(i) {
		h.up(i)
	}
}

// up moves the item at j up to its place. Like down, it carries the item
// through a hole rather than swapping at every level: the same result with
// one position write per level.
func (h *indexedHeap[T]) up(j int) {
	x := h.items[j]
	for j > 0 {
		i := (j - 1) / 2
		if !h.less(x, h.items[i]) {
			break
		}
		h.items[j] = h.items[i]
		*h.at(h.items[j]) = int32(j)
		j = i
	}
	h.items[j] = x
	*h.at(x) = int32(j)
}

// down moves the item at i0 down to its place and reports whether it moved.
func (h *indexedHeap[T]) down(i0 int) bool {
	i, n := i0, len(h.items)
	x := h.items[i0]
	for {
		j := 2*i + 1
		if j >= n {
			break
		}
		if r := j + 1; r < n && h.less(h.items[r], h.items[j]) {
			j = r
		}
		if !h.less(h.items[j], x) {
			break
		}
		h.items[i] = h.items[j]
		*h.at(h.items[i]) = int32(i)
		i = j
	}
	h.items[i] = x
	*h.at(x) = int32(i)
	return i > i0
}
