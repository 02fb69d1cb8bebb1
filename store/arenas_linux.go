//go:build linux && cgo

package store

/*
#include <malloc.h>
#include <stdlib.h>

// batchd_limit_arenas caps glibc's malloc arenas at n unless the
// environment already set MALLOC_ARENA_MAX; it returns the cap in force
// (0: glibc's own default, or a libc without arenas).
static int batchd_limit_arenas(int n) {
#ifdef M_ARENA_MAX
	const char *env = getenv("MALLOC_ARENA_MAX");
	if (env != NULL && *env != '\0') {
		return atoi(env);
	}
	if (mallopt(M_ARENA_MAX, n) == 1) {
		return n;
	}
#endif
	return 0;
}
*/
import "C"

// mallocArenas is how many malloc arenas SQLite's memory (page caches,
// prepared statements, sorts) may spread over. A cgo call runs on
// whichever OS thread its goroutine is on, and glibc gives each thread
// that finds the arenas busy an arena of its own, up to eight per core:
// as the Go runtime starts threads under load, SQLite's allocations
// spread over more arenas, each of which keeps its freed memory. In two
// 4-minute soaks side by side (load 35, 143 tasks/s each), the server's
// anonymous memory went from 45 MB in the middle third to 54 MB in the
// last with glibc's default, and from 33 to 34 MB with two arenas. SQLite
// takes a global mutex on every allocation anyway (its memory
// statistics), so more arenas buy no concurrency.
const mallocArenas = 2

// arenaCap is the arena cap in force (0: the C library's default).
var arenaCap = int(C.batchd_limit_arenas(C.int(mallocArenas)))
