package store

/*
// From the SQLite library that go-sqlite3 compiles into the binary.
extern long long sqlite3_memory_used(void);
extern long long sqlite3_memory_highwater(int);
*/
import "C"

// SQLiteMemory returns the bytes SQLite has allocated now (page caches,
// prepared statements, sorts: every connection of the process) and the
// most it had allocated at once since the process started. It is part
// of the server's anonymous memory that the Go heap's figures do not
// show.
func SQLiteMemory() (inUse, highWater int64) {
	return int64(C.sqlite3_memory_used()), int64(C.sqlite3_memory_highwater(0))
}

// MallocArenas returns the cap on glibc's malloc arenas that the store
// set (or that MALLOC_ARENA_MAX set); 0 when none is in force.
func MallocArenas() int { return arenaCap }
