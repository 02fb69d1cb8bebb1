package server

import (
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"batchd/sched"
)

// broker tells WatchTaskSet streams which tasks changed. Changes to a
// subscriber accumulate until its stream takes them, so a burst (a whole-set
// cancel, many finishes) becomes one message, never one per task.
type broker struct {
	mu   sync.Mutex
	subs map[sched.SetID]map[*subscriber]struct{}

	// opened counts watches by what they carry (watchTasks), sent the
	// tasks the watches' messages carried: what a watcher costs the
	// server, readable at any load.
	opened *prometheus.CounterVec
	sent   prometheus.Counter
}

// watchFilter is what a watch asked for (WatchTaskSetRequest).
type watchFilter struct {
	// only holds the watched indexes; nil: every task of the set.
	only map[int32]struct{}
	// summary: the messages carry no tasks, only the set's summary.
	summary bool
}

// kind names the filter in the watches metric: every, named or summary.
func (f watchFilter) kind() string {
	switch {
	case f.summary:
		return "summary"
	case f.only != nil:
		return "named"
	}
	return "every"
}

// indexes returns the watched indexes in order (nil: every task).
func (f watchFilter) indexes() []int32 {
	if f.only == nil {
		return nil
	}
	idx := make([]int32, 0, len(f.only))
	for i := range f.only {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	return idx
}

type subscriber struct {
	set     sched.SetID
	filter  watchFilter
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

// collectors registers the watch metrics; before it they count nothing.
func (b *broker) collectors() []prometheus.Collector {
	b.opened = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "batchd_watches_total",
		Help: "WatchTaskSet streams opened, by what their messages carry: every task, named tasks, or the set's summary only."},
		[]string{"tasks"})
	for _, k := range []string{"every", "named", "summary"} {
		b.opened.WithLabelValues(k) // every kind shows, from 0
	}
	b.sent = prometheus.NewCounter(prometheus.CounterOpts{Name: "batchd_watch_tasks_sent_total",
		Help: "Tasks sent in WatchTaskSet messages (snapshots included)."})
	return []prometheus.Collector{b.opened, b.sent}
}

// sentTasks counts n tasks sent to a watcher.
func (b *broker) sentTasks(n int) {
	if b.sent != nil && n > 0 {
		b.sent.Add(float64(n))
	}
}

// subscribe subscribes to every change of set.
func (b *broker) subscribe(set sched.SetID) *subscriber {
	return b.subscribeFilter(set, watchFilter{})
}

// subscribeFilter subscribes to the changes of set that f watches, and
// counts a watch of f's kind.
func (b *broker) subscribeFilter(set sched.SetID, f watchFilter) *subscriber {
	sub := &subscriber{set: set, filter: f, notify: make(chan struct{}, 1), changed: map[int32]struct{}{}}
	if b.opened != nil {
		b.opened.WithLabelValues(f.kind()).Inc()
	}
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
		switch {
		case sub.filter.summary && sub.filter.only == nil:
			sub.add(nil, true)
		case sub.filter.only != nil:
			var idx []int32
			if int(count) <= len(sub.filter.only) {
				for i := first; i < first+count; i++ {
					idx = append(idx, i) // add keeps the watched ones
				}
			} else {
				for i := range sub.filter.only {
					if i >= first && i < first+count {
						idx = append(idx, i)
					}
				}
			}
			sub.add(idx, false)
		case count > maxPendingIndexes:
			sub.add(nil, true)
		default:
			idx := make([]int32, count)
			for i := range idx {
				idx[i] = first + int32(i)
			}
			sub.add(idx, false)
		}
	}
}

// add records a change of the tasks idx (all: any task) and wakes the
// stream, unless the subscriber watches none of them.
func (sub *subscriber) add(idx []int32, all bool) {
	f := sub.filter
	if f.only != nil && !all {
		n := 0
		for _, i := range idx {
			if _, ok := f.only[i]; ok {
				n++
			}
		}
		if n == 0 {
			return
		}
		if n < len(idx) {
			kept := make([]int32, 0, n)
			for _, i := range idx {
				if _, ok := f.only[i]; ok {
					kept = append(kept, i)
				}
			}
			idx = kept
		}
	}
	sub.mu.Lock()
	if all || f.summary || sub.all || len(sub.changed)+len(idx) > maxPendingIndexes {
		// A summary watcher reads no task: that something changed is
		// all it needs to know.
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
