package worker

import (
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// pathCacheTTL is how long a command name's place on PATH is remembered.
// Looking a name up stats every PATH directory before the one that has it
// (four for `true` with Debian's PATH): a tenth of a millisecond of the
// worker's CPU per copy, more than the rest of its bookkeeping. A program
// installed earlier on PATH is found within a second.
const pathCacheTTL = time.Second

// pathCache remembers exec.LookPath's answers for command names without a
// slash, as exec.Command would find them (the worker's PATH, not the
// copy's environment).
type pathCache struct {
	mu sync.Mutex
	m  map[string]pathEntry
}

type pathEntry struct {
	path string
	at   time.Time
}

// command is exec.Command(argv[0], argv[1:]...) with argv[0] looked up on
// PATH at most once per pathCacheTTL. The child still sees argv[0] as
// given. A name not found is looked up again each time, and exec.Command
// reports it as it always does.
func (pc *pathCache) command(now time.Time, argv []string) *exec.Cmd {
	name := argv[0]
	if strings.Contains(name, "/") {
		return exec.Command(name, argv[1:]...)
	}
	pc.mu.Lock()
	e, ok := pc.m[name]
	pc.mu.Unlock()
	if !ok || now.Sub(e.at) >= pathCacheTTL || now.Before(e.at) {
		cmd := exec.Command(name, argv[1:]...)
		if cmd.Err != nil {
			return cmd
		}
		pc.mu.Lock()
		if pc.m == nil {
			pc.m = map[string]pathEntry{}
		}
		if len(pc.m) >= 1024 { // many distinct names: start over rather than grow
			clear(pc.m)
		}
		pc.m[name] = pathEntry{path: cmd.Path, at: now}
		pc.mu.Unlock()
		return cmd
	}
	cmd := exec.Command(e.path, argv[1:]...)
	cmd.Args[0] = name
	return cmd
}

// devNull is /dev/null, opened once for the process: every copy's standard
// input. Left nil, exec would open and close it for each copy.
var devNull = sync.OnceValue(func() *os.File {
	f, err := os.Open(os.DevNull)
	if err != nil {
		return nil // exec opens it per copy, and reports why it cannot
	}
	return f
})
