// The two heaps of fair share: waiting users (fsBefore) and each user's
// jobs with queued tasks (jobBefore). Positions are kept one-based in the
// elements (fsUser.hpos, set.fpos), zero meaning "not there".

package sched

func (f *fairShare) swap(i, j int) {
	h := f.heap
	h[i], h[j] = h[j], h[i]
	h[i].hpos, h[j].hpos = i+1, j+1
}

func (f *fairShare) up(j int) {
	for j > 0 {
		i := (j - 1) / 2
		if !fsBefore(f.heap[j], f.heap[i]) {
			return
		}
		f.swap(i, j)
		j = i
	}
}

func (f *fairShare) down(i int) {
	n := len(f.heap)
	for {
		j := 2*i + 1
		if j >= n {
			return
		}
		if r := j + 1; r < n && fsBefore(f.heap[r], f.heap[j]) {
			j = r
		}
		if !fsBefore(f.heap[j], f.heap[i]) {
			return
		}
		f.swap(i, j)
		i = j
	}
}

func (f *fairShare) remove(u *fsUser) {
	i := u.hpos - 1
	if i < 0 || i >= len(f.heap) || f.heap[i] != u {
		return
	}
	last := len(f.heap) - 1
	if i != last {
		f.swap(i, last)
	}
	f.heap[last] = nil
	f.heap = f.heap[:last]
	u.hpos = 0
	if i != last {
		f.down(i)
		f.up(i)
	}
}

func jobHeapSwap(h []*set, i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].fpos, h[j].fpos = i+1, j+1
}

func jobHeapUp(h []*set, j int) {
	for j > 0 {
		i := (j - 1) / 2
		if !jobBefore(h[j], h[i]) {
			return
		}
		jobHeapSwap(h, i, j)
		j = i
	}
}

func jobHeapDown(h []*set, i int) {
	n := len(h)
	for {
		j := 2*i + 1
		if j >= n {
			return
		}
		if r := j + 1; r < n && jobBefore(h[r], h[j]) {
			j = r
		}
		if !jobBefore(h[j], h[i]) {
			return
		}
		jobHeapSwap(h, i, j)
		i = j
	}
}

func jobHeapRemove(hp *[]*set, st *set) {
	h := *hp
	i := st.fpos - 1
	if i < 0 || i >= len(h) || h[i] != st {
		return
	}
	last := len(h) - 1
	if i != last {
		jobHeapSwap(h, i, last)
	}
	h[last] = nil
	h = h[:last]
	*hp = h
	st.fpos = 0
	if i != last {
		jobHeapDown(h, i)
		jobHeapUp(h, i)
	}
}
