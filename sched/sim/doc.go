// Package sim is batchd's discrete-event simulator: it drives the real
// scheduler (package sched) in virtual time with the workloads of the three
// papers behind batchd, and measures what DESIGN.md names (visible response
// time and slowdown, throughput, load, billed and wasted slot-seconds, job
// completion time).
//
// The simulator feeds the scheduler exactly the events the server does:
// EventWorkerUp for its simulated workers, EventDisclosed, EventRequested and
// EventCanceled from simulated users, EventCopyProgress and
// EventCopyFinished from simulated copies, and (with Params.WorkerMTBF)
// EventWorkerDown and EventWorkerUp from failing workers, whose live copies
// are lost. It calls Decide after every batch
// of simultaneous events and carries out the decisions in virtual time: a
// Start draws (or looks up) the copy's duration, a Suspend freezes the work
// done so far, a Resume continues it, a Kill ends it.
//
// Runs are deterministic for a seed. Random numbers are drawn from streams
// keyed by what they describe (a user, a job, the k-th copy of a task), so
// two policies run with the same seed see the same users, the same jobs and
// the same duration for the same copy: their difference is the policy's,
// not the dice's (common random numbers). Independent runs spread over all
// cores with RunAll.
package sim
