package store

import "runtime"

// ReadConns is the size of the store's reading pool. Each SQLite call
// runs on an OS thread of its own while it lasts (a cgo call), and the
// Go runtime keeps every thread it ever started: with the writer's and
// the checkpointer's connections, this bounds how many threads SQLite
// can hold at once, and how many page caches and statement caches the
// process keeps. Reads are CPU work (the database is memory-mapped), so
// more of them at once than twice the processors only wait for a
// processor, each holding a thread; four at least, so that a long read
// (a listing that walks a whole index) leaves room for short ones.
func ReadConns() int {
	return min(max(2*runtime.GOMAXPROCS(0), 4), 8)
}

// MaxConns is every SQLite connection the store keeps open at once: the
// reading pool, the writer's and the checkpointer's.
func MaxConns() int { return ReadConns() + 2 }
