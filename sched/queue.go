package sched

// This file holds the ordered structures the scheduler keeps between events,
// so that a decision costs O(log n) instead of a scan of every queued task:
// indexed heaps (heap.go) of tasks (one per set and class), of sets (the
// disclosed class, FCFS), of workers (most free slots first) and of
// preemptible copies (most recently started first), and a treap of jobs
// (the requested class, ordered by SRPT or FCFS key).

// taskHeap holds the queued tasks of one set and class, by the class's
// order (discLess, Scheduler.taskLess); task.qpos is the position.
type taskHeap = indexedHeap[*task]

func taskPos(t *task) *int32 { return &t.qpos }

// setHeap holds the sets with queued disclosed tasks, by (disclosure time,
// set id); set.dpos is the position.
type setHeap = indexedHeap[*set]

func setBefore(a, b *set) bool {
	if a.disclosedAt != b.disclosedAt {
		return a.disclosedAt < b.disclosedAt
	}
	return a.id < b.id
}

func setPos(s *set) *int32 { return &s.dpos }

// jobTree is a treap of the sets with unfinished requested work, ordered by
// (set.jkey, set.id). Priorities come from a hash of the set id, so the
// shape, like everything else, depends only on the events.
type jobTree struct {
	root *set
	n    int
}

func jobBefore(a, b *set) bool {
	if a.jkey != b.jkey {
		return a.jkey < b.jkey
	}
	return a.id < b.id
}

func treapPrio(id SetID) uint64 {
	z := uint64(id) + 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func (t *jobTree) insert(s *set) {
	s.jleft, s.jright = nil, nil
	s.jprio = treapPrio(s.id)
	t.root = treapInsert(t.root, s)
	s.inTree = true
	t.n++
}

func treapInsert(root, s *set) *set {
	if root == nil {
		return s
	}
	if jobBefore(s, root) {
		root.jleft = treapInsert(root.jleft, s)
		if root.jleft.jprio > root.jprio {
			l := root.jleft
			root.jleft, l.jright = l.jright, root
			return l
		}
	} else {
		root.jright = treapInsert(root.jright, s)
		if root.jright.jprio > root.jprio {
			r := root.jright
			root.jright, r.jleft = r.jleft, root
			return r
		}
	}
	return root
}

func (t *jobTree) remove(s *set) {
	if !s.inTree {
		return
	}
	t.root = treapRemove(t.root, s)
	s.inTree = false
	s.jleft, s.jright = nil, nil
	t.n--
}

func treapRemove(root, s *set) *set {
	if root == nil {
		return nil
	}
	if root == s {
		return treapMerge(root.jleft, root.jright)
	}
	if jobBefore(s, root) {
		root.jleft = treapRemove(root.jleft, s)
	} else {
		root.jright = treapRemove(root.jright, s)
	}
	return root
}

func treapMerge(a, b *set) *set {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	if a.jprio > b.jprio {
		a.jright = treapMerge(a.jright, b)
		return a
	}
	b.jleft = treapMerge(a, b.jleft)
	return b
}

// rekey moves s to its new key k.
func (t *jobTree) rekey(s *set, k float64) {
	if s.jkey == k {
		return
	}
	if !s.inTree {
		s.jkey = k
		return
	}
	t.remove(s)
	s.jkey = k
	t.insert(s)
}

// jobIter walks a jobTree in order without allocating after its first use.
type jobIter struct{ stack []*set }

func (it *jobIter) start(root *set) {
	it.stack = it.stack[:0]
	for n := root; n != nil; n = n.jleft {
		it.stack = append(it.stack, n)
	}
}

func (it *jobIter) next() *set {
	if len(it.stack) == 0 {
		return nil
	}
	n := it.stack[len(it.stack)-1]
	it.stack = it.stack[:len(it.stack)-1]
	for m := n.jright; m != nil; m = m.jleft {
		it.stack = append(it.stack, m)
	}
	return n
}

// workerHeap orders workers by free slots (most first), then id; worker.hpos
// is the position.
type workerHeap struct{ indexedHeap[*worker] }

func workerBefore(a, b *worker) bool {
	if a.free() != b.free() {
		return a.free() > b.free()
	}
	return a.id < b.id
}

func workerPos(w *worker) *int32 { return &w.hpos }

// best returns the worker with the most free slots that is not in avoid,
// or nil when every worker with a free slot is in avoid. It explores the
// heap best-first, so the answer is canonical (independent of the heap's
// shape) and the cost grows with len(avoid), not with the number of workers.
func (h *workerHeap) best(avoid []*worker) *worker {
	if len(h.items) == 0 || h.items[0].free() == 0 {
		return nil
	}
	if !containsWorker(avoid, h.items[0]) {
		return h.items[0]
	}
	frontier := make([]int, 0, 8)
	frontier = append(frontier, 0)
	for len(frontier) > 0 {
		bi := 0
		for k := 1; k < len(frontier); k++ {
			if workerBefore(h.items[frontier[k]], h.items[frontier[bi]]) {
				bi = k
			}
		}
		i := frontier[bi]
		frontier[bi] = frontier[len(frontier)-1]
		frontier = frontier[:len(frontier)-1]
		w := h.items[i]
		if w.free() == 0 {
			continue
		}
		if !containsWorker(avoid, w) {
			return w
		}
		for _, c := range [2]int{2*i + 1, 2*i + 2} {
			if c < len(h.items) {
				frontier = append(frontier, c)
			}
		}
	}
	return nil
}

func containsWorker(ws []*worker, w *worker) bool {
	for _, x := range ws {
		if x == w {
			return true
		}
	}
	return false
}

// int32Heap is a min-heap of free slot numbers.
type int32Heap []int32

func (h *int32Heap) push(v int32) {
	*h = append(*h, v)
	a := *h
	for j := len(a) - 1; j > 0; {
		i := (j - 1) / 2
		if a[i] <= a[j] {
			break
		}
		a[i], a[j] = a[j], a[i]
		j = i
	}
}

func (h *int32Heap) pop() int32 {
	a := *h
	v := a[0]
	last := len(a) - 1
	a[0] = a[last]
	a = a[:last]
	for i := 0; ; {
		j := 2*i + 1
		if j >= len(a) {
			break
		}
		if r := j + 1; r < len(a) && a[r] < a[j] {
			j = r
		}
		if a[i] <= a[j] {
			break
		}
		a[i], a[j] = a[j], a[i]
		i = j
	}
	*h = a
	return v
}

// removeValue deletes v if present (rare: a slot taken by an attached copy).
func (h *int32Heap) removeValue(v int32) bool {
	a := *h
	for i, x := range a {
		if x == v {
			a[i] = a[len(a)-1]
			a = a[:len(a)-1]
			*h = a
			h.rebuild()
			return true
		}
	}
	return false
}

func (h *int32Heap) rebuild() {
	a := *h
	*h = (*h)[:0]
	tmp := append([]int32(nil), a...)
	for _, v := range tmp {
		h.push(v)
	}
}

// copyHeap holds the preemptible copies (running copies of disclosed-class
// tasks), most recently started first: by effective start (the start time
// had it never been suspended, so the copy with the least work done comes
// first, and a restore that knows only run times orders them the same),
// then id; copy.ppos is the position.
type copyHeap = indexedHeap[*liveCopy]

func copyAfter(a, b *liveCopy) bool {
	ea, eb := a.started-a.runSoFar, b.started-b.runSoFar
	if ea != eb {
		return ea > eb
	}
	return a.id > b.id
}

func copyPos(c *liveCopy) *int32 { return &c.ppos }
