package sched

import (
	"fmt"
	"strconv"
	"strings"
)

// Policy names how the requested and disclosed classes are ordered
// (requested × disclosed), or a baseline from the papers.
type Policy string

const (
	PolicySRPTxFCFS Policy = "srpt×fcfs" // default
	PolicyFCFSxFCFS Policy = "fcfs×fcfs"
	PolicyBatchSRPT Policy = "batch-srpt" // one queue, disclosure = request
	// PolicyBatchSRPTTask is batch-srpt by task: one queue, the queued task
	// with the smallest estimate first across every set (batch-srpt orders
	// whole sets by their total work).
	PolicyBatchSRPTTask   Policy = "batch-srpt-task"
	PolicyBatchFCFS       Policy = "batch-fcfs"
	PolicyInteractiveSRPT Policy = "interactive-srpt" // disclosed work never runs
	PolicyInteractiveFCFS Policy = "interactive-fcfs"
)

// Policies lists every policy, default first.
var Policies = []Policy{PolicySRPTxFCFS, PolicyFCFSxFCFS, PolicyBatchSRPT, PolicyBatchFCFS, PolicyInteractiveSRPT, PolicyInteractiveFCFS, PolicyBatchSRPTTask}

// ParsePolicy accepts a policy's name or its ASCII spelling ("srpt-x-fcfs",
// "srpt_x_fcfs", "srptxfcfs", any case).
func ParsePolicy(s string) (Policy, error) {
	n := strings.ToLower(strings.TrimSpace(s))
	n = strings.NewReplacer("-x-", "×", "_x_", "×", "*", "×").Replace(n)
	switch n {
	case "srptxfcfs":
		n = string(PolicySRPTxFCFS)
	case "fcfsxfcfs":
		n = string(PolicyFCFSxFCFS)
	case "":
		return PolicySRPTxFCFS, nil
	}
	n = strings.ReplaceAll(n, "_", "-")
	for _, p := range Policies {
		if string(p) == n {
			return p, nil
		}
	}
	return "", Errorf(EINVALID, "unknown policy %q (want one of srpt×fcfs, fcfs×fcfs, batch-srpt, batch-fcfs, interactive-srpt, interactive-fcfs, batch-srpt-task; ASCII: srpt-x-fcfs)", s)
}

// Speculation names how stragglers get speculative copies.
type Speculation string

const (
	SpecHopperGRASS    Speculation = "hopper+grass" // default
	SpecBestEffortLATE Speculation = "best-effort-late"
	// SpecGRASS is GRASS without Hopper: jobs in the requested queue's
	// order each take what they want of the free slots (best effort, as
	// best-effort-late), but inside a job GRASS picks between a new task
	// and a speculative copy (Config.Grass). It isolates GRASS's gain over
	// LATE under the same job scheduler, as GRASS §6 measures it.
	SpecGRASS    Speculation = "grass"
	SpecBudgeted Speculation = "budgeted" // with Config.Budget reserved slots; spelled budgeted-N
	// SpecClone clones without waiting for a straggler: jobs in order take
	// free slots for their queued tasks, then for extra copies of their
	// running tasks, the task with the fewest live copies first (Dolly's
	// cloning; the model under which Hopper §4.1 derives the 2/β knee).
	// For the simulator's Fig. 3; not meant for a live cluster.
	SpecClone Speculation = "clone"
	SpecNone  Speculation = "none"
)

// ParseSpeculation accepts "hopper+grass", "grass", "best-effort-late",
// "none" and "budgeted-N"; it returns the mode and, for budgeted, N.
func ParseSpeculation(s string) (Speculation, int, error) {
	n := strings.ToLower(strings.TrimSpace(s))
	switch n {
	case "", "hopper+grass", "hopper-grass", "hopper":
		return SpecHopperGRASS, 0, nil
	case "best-effort-late", "late":
		return SpecBestEffortLATE, 0, nil
	case "grass", "best-effort-grass":
		return SpecGRASS, 0, nil
	case "clone":
		return SpecClone, 0, nil
	case "none", "off":
		return SpecNone, 0, nil
	}
	if rest, ok := strings.CutPrefix(n, "budgeted-"); ok {
		b, err := strconv.Atoi(rest)
		if err == nil && b >= 0 {
			return SpecBudgeted, b, nil
		}
	}
	return "", 0, Errorf(EINVALID, "unknown speculation mode %q (want hopper+grass, grass, best-effort-late, clone, budgeted-N or none)", s)
}

// Preemption names what happens to a running disclosed copy when requested
// work finds no free slot.
type Preemption string

const (
	PreemptSuspend Preemption = "suspend" // default; kill where a worker cannot suspend
	PreemptKill    Preemption = "kill"
	PreemptOff     Preemption = "off"
)

// ParsePreemption accepts "suspend", "kill" and "off".
func ParsePreemption(s string) (Preemption, error) {
	switch p := Preemption(strings.ToLower(strings.TrimSpace(s))); p {
	case "":
		return PreemptSuspend, nil
	case PreemptSuspend, PreemptKill, PreemptOff:
		return p, nil
	}
	return "", Errorf(EINVALID, "unknown preemption %q (want suspend, kill or off)", s)
}

// Config sets the scheduler's policies and parameters. The zero value of
// each field means its default.
type Config struct {
	Policy      Policy      // default srpt×fcfs
	Speculation Speculation // default hopper+grass
	Budget      int         // slots reserved for copies with SpecBudgeted
	Preemption  Preemption  // default suspend
	// PreemptRequested makes the SRPT policies preemptive inside the
	// requested class (Petrou §3.3: shortest remaining time): a queued
	// requested task that needs less than a running requested copy of a
	// later job has left suspends that copy (the one with the most work
	// left) when no slot is free; the copy resumes on its own worker once
	// no queued requested task would preempt it. Only with Preemption
	// suspend and workers that can suspend; ignored by the FCFS policies.
	PreemptRequested bool

	// Epsilon is Hopper's fairness knob: every job with unfinished requested
	// work gets at least (1-Epsilon)·S/N slots. Default 0.1; a negative
	// value means 0 (no fairness floor), 1 turns the floor off entirely.
	Epsilon float64
	// BetaPrior is the Pareto shape used until BetaMinSamples finished
	// copies exist (default 1.5).
	BetaPrior      float64
	BetaMinSamples int // default 20
	// MaxEarlyCopies bounds the copies of one task before a job's last wave
	// (GRASS Guidelines 1–2); default 2.
	MaxEarlyCopies int
	// GrassPerTask estimates a further copy of a task that already runs a
	// speculative copy from the task's own copies (at least what its best
	// copy takes in all) instead of from its job alone; see grasstask.go.
	// Off by default.
	GrassPerTask bool
	// LastWaveCopies bounds the live copies of one task in its job's last
	// wave, where GRASS lifts MaxEarlyCopies; 0 (default) or less: no bound.
	// With LastWaveShare it is the bound's floor instead.
	LastWaveCopies int
	// LastWaveShare bounds the live copies of one task in its job's last
	// wave by the job's share of the slots spread over its remaining
	// tasks, ⌈S/(N·R)⌉ (S slots, N requested jobs in flight, R the job's
	// unfinished tasks: GRASS's k = S_j/R in the last wave), and never
	// below LastWaveCopies (or MaxEarlyCopies when that is 0); see
	// grasstask.go. Off by default.
	LastWaveShare bool
	// Grass selects GRASS's rule inside a job's Hopper share (or, with
	// SpecGRASS, inside whatever the job gets): "switch"
	// (default: RAS while more than two waves of the job are queued, GS in
	// its last two), "gs" or "ras" alone (GRASS §6.3's ablation).
	Grass GrassMode
	// StragglerAfter is how long (seconds) a copy must run before it may be
	// speculated (Hopper's example: 2); default 0 = as soon as the
	// estimators say so.
	StragglerAfter float64
	// FirstCopyID is the first CopyID Decide hands out (the server sets it
	// to one past the largest id in its store). Default 1.
	FirstCopyID CopyID
	// Seed seeds the only randomness the scheduler uses.
	Seed int64
	// DisclosedFairShare splits the disclosed class between owners: the
	// next disclosed task comes from the owner with the fewest running
	// disclosed copies (FCFS among sets of equal standing), so that one
	// user who discloses a mountain of work cannot starve the disclosed
	// work of others (Petrou's footnote 3). Default false: plain FCFS, as
	// in the papers.
	DisclosedFairShare bool
	// FairShare splits the requested class between users (DESIGN.md,
	// scheduling order step 2; fairshare.go): while two or more users have
	// queued requested tasks, each slot goes to the one holding the fewest
	// slots per unit of weight, ties to the least decayed usage. With one
	// user it changes nothing. Default false: the papers' order, SRPT
	// across all users.
	FairShare bool
	// FairShareHalfLife is the half-life of usage in seconds; 0 means
	// DefaultFairShareHalfLife (an hour), a negative value no decay.
	FairShareHalfLife float64

	// SpecCap bounds the live speculative copies of best-effort-late to
	// this fraction of the slots (rounded up), as LATE does in Hadoop and
	// Spark (speculative cap, 10% there). 0 = no cap (the papers'
	// best-effort LATE).
	SpecCap float64
	// SlowTaskQuantile makes best-effort-late speculate only tasks whose
	// progress rate (progress ÷ run time of the task's best copy) is at or
	// below this quantile of the rates of the job's running tasks that
	// reported progress (LATE's SlowTaskThreshold, the 25th percentile: 0.25).
	// A task without a report is not slow yet. 0 = no threshold.
	SlowTaskQuantile float64
	// VirtualFactor, when positive, replaces Hopper's max(2/β, 1) in the
	// virtual size V = factor·T (hopper+grass). The cluster-node
	// experiment measures it against the paper's rule (sched/README.md);
	// default 0 = the paper's rule.
	VirtualFactor float64
	// VirtualFloor rounds a job's desired allocation down, ⌊V⌋ as
	// Hopper's Pseudocode 1 writes it, instead of up (⌈V⌉, the default;
	// see desired). Only with hopper+grass.
	VirtualFloor bool
	// HopperClone fills each job's Hopper share by cloning instead of
	// GRASS: its queued tasks first, then extra copies of its running
	// tasks, fewest live copies first, up to the share (the model of
	// Hopper §4.1's analysis). For the simulator; see hopperclone.go.
	HopperClone bool
}

// String names the configuration as "policy / speculation / preemption".
func (c Config) String() string {
	spec := string(c.Speculation)
	if c.Speculation == SpecBudgeted {
		spec = fmt.Sprintf("budgeted-%d", c.Budget)
	}
	if c.Grass == GrassGS || c.Grass == GrassRAS {
		spec += " (" + string(c.Grass) + " only)"
	}
	pre := string(c.Preemption)
	if c.PreemptRequested {
		pre += "+requested"
	}
	return fmt.Sprintf("%s / %s / %s", c.Policy, spec, pre)
}

// Stats is a snapshot of the scheduler's state for metrics.
type Stats struct {
	Slots, BusySlots         int
	QueuedRequested          int // requested tasks without a live copy
	QueuedDisclosed          int // disclosed tasks without a live copy
	RunningCopies            int
	SuspendedCopies          int
	SpeculativeCopies        int // live speculative copies
	SpeculativeStarted       int64
	SpeculativeWon           int64
	Beta                     float64
	BetaSamples              int
	RequestedJobs, Disclosed int // jobs (task sets) with queued or running work per class
	// Lag is the driver's latency the scheduler adds to a copy's start
	// decision (Scheduler.Lag; seconds, 0 without reported run times).
	Lag float64
}
