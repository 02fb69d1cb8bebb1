package main

import (
	"os"
	"os/signal"
	"syscall"
	"time"
)

// A task must not run while its copy is suspended. The server suspends a
// copy by stopping its process group (SIGSTOP) and resumes it with
// SIGCONT; the worker then reports the run time without the stop, and the
// simulator holds a suspended copy's work where it was. A task that slept
// its draw on the wall clock would go on "running" while stopped: resumed
// after its draw had passed, it ended at once, having run less than its
// draw, so the live server gained from every suspension what neither the
// replay nor real work gains.

// runTick is how often sleepRunning looks at the clock: a stop costs the
// task up to one tick of run time it is not credited (it runs that much
// longer than its draw).
const runTick = 20 * time.Millisecond

// contGrace is how long sleepRunning waits, after a wake-up far later than
// its tick, for the SIGCONT that would say the process was stopped
// meanwhile (the signal and the timer race once the process runs again).
const contGrace = 50 * time.Millisecond

// sleepRunning returns once the process has run (not been stopped) for d,
// calling report with the fraction run every step of run time.
func sleepRunning(d, step time.Duration, report func(frac float64)) error {
	cont := make(chan os.Signal, 1)
	signal.Notify(cont, syscall.SIGCONT)
	defer signal.Stop(cont)
	var ran time.Duration
	next := step
	last := time.Now()
	for ran < d {
		time.Sleep(min(runTick, d-ran))
		now := time.Now()
		dt := now.Sub(last)
		stopped := false
		select {
		case <-cont:
			stopped = true
		default:
			if dt > runTick+contGrace {
				select {
				case <-cont:
					stopped = true
				case <-time.After(contGrace):
				}
			}
		}
		// A stop between the last look and this one: none of the interval
		// counts (the stop came within a tick of the last look).
		if !stopped {
			ran += dt
		}
		last = now
		if ran >= next || ran >= d {
			report(min(1, float64(ran)/float64(d)))
			next = (ran/step + 1) * step
		}
	}
	return nil
}
