package server

import (
	"slices"
	"sync"

	"batchd/sched"
)

// broker tells WatchTaskSet streams which tasks changed. Changes to a
// subscriber accumulate until its stream takes them, so a burst (a whole-set
// cancel, many finishes) becomes one message, never one per task.
type broker struct {
	mu   sync.Mutex
	subs map[sched.SetID]map[*subscriber]struct{}
}

type subscriber struct {
	set     sched.SetID
	notify  chan struct{} // capacity 1
	mu      sync.Mutex
	all     bool
	changed map[int32]struct{}
}

// maxPendingIndexes is how many changed tasks a subscriber collects before
// it asks for the whole set instead.
const maxPendingIndexes = 20000

func newBroker() *broker {
	return &broker{subs: map[sched.SetID]map[*subscriber]struct{}{}}
}

func (b *broker) subscribe(set sched.SetID) *subscriber {
	sub := &subscriber{set: set, notify: make(chan struct{}, 1), changed: map[int32]struct{}{}}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.subs[set] == nil {
		b.subs[set] = map[*subscriber]struct{}{}
	}
	b.subs[set][sub] = struct{}{}
	return sub
}

func (b *broker) unsubscribe(sub *subscriber) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.subs[sub.set], sub)
	if len(b.subs[sub.set]) == 0 {
		delete(b.subs, sub.set)
	}
}

// publish says that the tasks idx of set changed (nil: any of them).
func (b *broker) publish(set sched.SetID, idx []int32) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for sub := range b.subs[set] {
		sub.add(idx, idx == nil)
	}
}

// publishRange says that count tasks from first changed.
func (b *broker) publishRange(set sched.SetID, first, count int32) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for sub := range b.subs[set] {
		if count > maxPendingIndexes {
			sub.add(nil, true)
			continue
		}
		idx := make([]int32, count)
		for i := range idx {
			idx[i] = first + int32(i)
		}
		sub.add(idx, false)
	}
}

func (sub *subscriber) add(idx []int32, all bool) {
	sub.mu.Lock()
	if all || sub.all || len(sub.changed)+len(idx) > maxPendingIndexes {
		sub.all = true
		clear(sub.changed)
	} else {
		for _, i := range idx {
			sub.changed[i] = struct{}{}
		}
	}
	sub.mu.Unlock()
	select {
	case sub.notify <- struct{}{}:
	default:
	}
}

// take returns and clears what changed: all, or the sorted indexes.
func (sub *subscriber) take() (bool, []int32) {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	if sub.all {
		sub.all = false
		return true, nil
	}
	idx := make([]int32, 0, len(sub.changed))
	for i := range sub.changed {
		idx = append(idx, i)
	}
	clear(sub.changed)
	slices.Sort(idx)
	return false, idx
}
