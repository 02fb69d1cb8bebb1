package sim

import "batchd/sched"

// heardTimes are the times a replay's scheduler hears of tk's disclosure
// and request. A live server stamps a request when its write begins and
// its scheduler hears of it once that write, and the others committed
// with it, have committed; with heard, the replay hears it then too
// (TraceTask.HeardAt), and a task disclosed by the same call that
// requested it is disclosed then as well: live, the scheduler heard of
// both at once, and could not start it as disclosed work in between.
func heardTimes(tk *sched.TraceTask, heard bool) (disc, req float64) {
	disc, req = tk.DisclosedAt, tk.RequestedAt
	if !heard || req <= 0 || tk.HeardAt <= req {
		return disc, req
	}
	if disc == req {
		disc = tk.HeardAt
	}
	return disc, tk.HeardAt
}
