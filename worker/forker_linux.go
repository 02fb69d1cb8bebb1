//go:build linux

package worker

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
)

// A forker is a thread that lives in one index's cgroups (v1) and forks
// that index's copies, so that a copy is born in its cgroups without the
// forking thread moving in and out of them for every copy: with cgroup
// v1 each such move costs the worker tens of microseconds of CPU, which
// at a thousand copies a second was a fifth of its time.
//
// The thread stays locked to its goroutine for the agent's life: a copy's
// Pdeathsig fires when the thread that forked it exits, so the thread
// must outlive the copies it forked. New runtime threads are never cloned
// from a locked thread (the runtime asks its template thread), so none
// inherits the index's cgroups. The thread counts as one task in the
// index's pids cgroup: pids.max there is the copy's limit plus one.
type forker struct {
	jobs chan forkJob
}

// forkJob is a function run on a forker's thread; fit false says the
// thread is no longer fit to fork (it kept a copy's nice value or a
// cgroup): the forker then parks it for good and is replaced.
type forkJob struct {
	run  func() (fit bool)
	done chan struct{}
}

// errForkerGone says the forker stopped (the agent is closing).
var errForkerGone = errors.New("worker: the forking thread of this index is gone")

// forker returns index i's forker, starting one whose thread has joined
// the index's tracking cgroup. Only for cgroup v1.
func (cg *cgroups) forker(i int) (*forker, error) {
	cg.mu.Lock()
	defer cg.mu.Unlock()
	if f := cg.forkers[i]; f != nil {
		return f, nil
	}
	if cg.closed {
		return nil, errForkerGone
	}
	if cg.forkers == nil {
		cg.forkers = map[int]*forker{}
	}
	f := &forker{jobs: make(chan forkJob)}
	ready := make(chan error, 1)
	dir := cg.slotDir(cg.tracker(), i)
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, err
	}
	tasks := filepath.Join(dir, "tasks")
	go func() {
		runtime.LockOSThread() // never unlocked: see forker
		if err := os.WriteFile(tasks, []byte(strconv.Itoa(syscall.Gettid())), 0); err != nil {
			ready <- err
			return // ends the thread, which forked nothing
		}
		ready <- nil
		for j := range f.jobs {
			fit := j.run()
			close(j.done)
			if !fit {
				cg.mu.Lock()
				if cg.forkers[i] == f {
					delete(cg.forkers, i)
				}
				cg.mu.Unlock()
				select {} // the copies it forked keep their parent thread
			}
		}
		// Closed: the agent is done; its copies go with this thread.
	}()
	if err := <-ready; err != nil {
		return nil, err
	}
	cg.forkers[i] = f
	return f, nil
}

// onForker runs fn on index i's forker thread and waits for it.
func (cg *cgroups) onForker(i int, fn func() (fit bool)) error {
	f, err := cg.forker(i)
	if err != nil {
		return err
	}
	j := forkJob{run: fn, done: make(chan struct{})}
	f.jobs <- j
	<-j.done
	return nil
}

// stopForkers ends every forker's thread (at close).
func (cg *cgroups) stopForkers() {
	cg.mu.Lock()
	defer cg.mu.Unlock()
	cg.closed = true
	for i, f := range cg.forkers {
		close(f.jobs)
		delete(cg.forkers, i)
	}
}
