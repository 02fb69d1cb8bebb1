// Package sched is batchd's scheduling core: a pure, deterministic
// scheduler for speculative task sets. Drivers (the server's dispatch loop
// and the simulator) feed it events with their times through
// (*Scheduler).Apply and carry out the decisions (*Scheduler).Decide
// returns: start a copy of a task on a slot, kill, suspend or resume a copy.
//
// Requested work always goes before disclosed work (Petrou et al.);
// requested slots are split between jobs by Hopper's virtual sizes with
// ε-fairness (Ren et al.); inside a job GRASS chooses between a new task and
// a speculative copy (Ananthanarayanan et al.). See README.md for the
// pipeline. The package also holds the domain records the other layers pass
// around (domain.go) and the error codes (error.go).
package sched
