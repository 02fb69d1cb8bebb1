package server

import (
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	batchv1 "batchd/proto/batch/v1"
	"batchd/sched"
	"batchd/store"
)

// This file converts between protobuf messages and sched's domain records
// at the server's edge, and validates what users send.

func ts(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

var taskStateToProto = map[sched.TaskState]batchv1.TaskState{
	sched.TaskDisclosed: batchv1.TaskState_TASK_STATE_DISCLOSED,
	sched.TaskExecuted:  batchv1.TaskState_TASK_STATE_EXECUTED,
	sched.TaskRequested: batchv1.TaskState_TASK_STATE_REQUESTED,
	sched.TaskFinished:  batchv1.TaskState_TASK_STATE_FINISHED,
	sched.TaskCanceled:  batchv1.TaskState_TASK_STATE_CANCELED,
}

func taskStateFromProto(s batchv1.TaskState) (sched.TaskState, bool) {
	for k, v := range taskStateToProto {
		if v == s {
			return k, true
		}
	}
	return "", false
}

var copyStateToProto = map[sched.CopyState]batchv1.CopyState{
	sched.CopyRunning:   batchv1.CopyState_COPY_STATE_RUNNING,
	sched.CopySuspended: batchv1.CopyState_COPY_STATE_SUSPENDED,
	sched.CopyWon:       batchv1.CopyState_COPY_STATE_WON,
	sched.CopyKilled:    batchv1.CopyState_COPY_STATE_KILLED,
	sched.CopyLost:      batchv1.CopyState_COPY_STATE_LOST,
}

func specToProto(s sched.TaskSpec) *batchv1.TaskSpec {
	return &batchv1.TaskSpec{Argv: s.Argv, Env: s.Env, Dir: s.Dir, EstimateSeconds: s.EstimateSeconds,
		NoSpeculation: s.NoSpeculation, TimeoutSeconds: s.TimeoutSeconds, DeadlineSeconds: s.DeadlineSeconds,
		Cpus: s.Cpus, MemoryMb: s.MemoryMB, Gpus: s.GPUs, Keep: s.Keep}
}

// specFromProto validates one task's spec against the limits of
// store/limits.go.
func specFromProto(i int, p *batchv1.TaskSpec) (sched.TaskSpec, error) {
	if p == nil || len(p.Argv) == 0 {
		return sched.TaskSpec{}, sched.Errorf(sched.EINVALID, "task %d has an empty argv: give the command to run", i)
	}
	if p.Argv[0] == "" {
		return sched.TaskSpec{}, sched.Errorf(sched.EINVALID, "task %d: argv[0] (the command) is empty", i)
	}
	if len(p.Argv) > store.MaxArgs {
		return sched.TaskSpec{}, sched.Errorf(sched.ERESOURCEEXHAUSTED, "task %d has %d arguments; the limit is %d: pass long lists in a file", i, len(p.Argv), store.MaxArgs)
	}
	// A NUL byte cannot pass execve or chdir: such a task could only fail
	// (and be billed as exit 127), so it is refused here.
	size := len(p.Dir)
	if hasNUL(p.Dir) {
		return sched.TaskSpec{}, sched.Errorf(sched.EINVALID, "task %d: dir holds a NUL byte, which no path can", i)
	}
	for k, a := range p.Argv {
		if hasNUL(a) {
			return sched.TaskSpec{}, sched.Errorf(sched.EINVALID, "task %d: argv[%d] holds a NUL byte, which no argument can", i, k)
		}
		size += len(a) + 1
	}
	for k, v := range p.Env {
		if k == "" {
			return sched.TaskSpec{}, sched.Errorf(sched.EINVALID, "task %d has an environment variable with an empty name", i)
		}
		if hasNUL(k) || hasNUL(v) || strings.ContainsRune(k, '=') {
			return sched.TaskSpec{}, sched.Errorf(sched.EINVALID, "task %d: environment variable %q: names and values cannot hold a NUL byte, nor names an =", i, k)
		}
		size += len(k) + len(v) + 2
	}
	if size > store.MaxSpecBytes {
		return sched.TaskSpec{}, sched.Errorf(sched.ERESOURCEEXHAUSTED, "task %d: argv, env and dir take %d bytes; the limit is %d: pass large inputs in a file", i, size, store.MaxSpecBytes)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"estimate_seconds", p.EstimateSeconds}, {"timeout_seconds", p.TimeoutSeconds}, {"deadline_seconds", p.DeadlineSeconds}} {
		if !validSeconds(f.v) {
			return sched.TaskSpec{}, sched.Errorf(sched.EINVALID, "task %d: %s = %g must be seconds from 0 to %g", i, f.name, f.v, float64(store.MaxSeconds))
		}
	}
	if p.Cpus < 0 || p.Cpus > sched.MaxCpus {
		return sched.TaskSpec{}, sched.Errorf(sched.EINVALID, "task %d: cpus = %d must run from 0 to %d (slots of one worker)", i, p.Cpus, sched.MaxCpus)
	}
	if p.MemoryMb < 0 || p.MemoryMb > sched.MaxMemoryMB {
		return sched.TaskSpec{}, sched.Errorf(sched.EINVALID, "task %d: memory_mb = %d must run from 0 to %d", i, p.MemoryMb, sched.MaxMemoryMB)
	}
	if p.Gpus < 0 || p.Gpus > sched.MaxGPUs {
		return sched.TaskSpec{}, sched.Errorf(sched.EINVALID, "task %d: gpus = %d must run from 0 to %d", i, p.Gpus, sched.MaxGPUs)
	}
	if err := sched.CheckKeep(p.Keep); err != nil {
		return sched.TaskSpec{}, sched.Errorf(sched.EINVALID, "task %d: %s", i, sched.ErrorMessage(err))
	}
	return sched.TaskSpec{Argv: p.Argv, Env: p.Env, Dir: p.Dir, EstimateSeconds: p.EstimateSeconds,
		NoSpeculation: p.NoSpeculation, TimeoutSeconds: p.TimeoutSeconds, DeadlineSeconds: p.DeadlineSeconds,
		Cpus: p.Cpus, MemoryMB: p.MemoryMb, GPUs: p.Gpus, Keep: p.Keep}, nil
}

func setToProto(s sched.TaskSet) *batchv1.TaskSet {
	c := s.Counts
	return &batchv1.TaskSet{Id: int64(s.ID), Name: s.Name, Owner: s.Owner, CreatedAt: ts(s.CreatedAt),
		Counts: &batchv1.TaskCounts{Disclosed: c.Disclosed, Executed: c.Executed, Requested: c.Requested,
			Finished: c.Finished, Canceled: c.Canceled, Running: c.Running, Total: c.Total, Held: c.Held},
		BilledSlotSeconds: s.BilledSlotSeconds, MeanVisibleResponseSeconds: s.MeanVisibleResponseSeconds, MaxRunning: s.MaxRunning,
		Retry: retryToProto(s.Retry), Stop: stopToProto(s.Stop), Stopped: stopFiredToProto(s.Stopped), TimeoutSeconds: s.TimeoutSeconds,
		State: setStateToProto[s.State], After: depsToProto(s.After), CanceledReason: s.CanceledReason, Labels: labelsToProto(s.Labels), Failed: s.Failed,
		Pool: s.Route.Pool, Partition: s.Route.Partition}
}

func retryToProto(p sched.RetryPolicy) *batchv1.RetryPolicy {
	if p.Retries == 0 && p.RetryOn() == "" {
		return nil
	}
	return &batchv1.RetryPolicy{Retries: p.Retries, ExitCodes: p.ExitCodes, Nonzero: p.NonZero, Timeout: p.Timeout, Lost: p.Lost}
}

func retryFromProto(p *batchv1.RetryPolicy) sched.RetryPolicy {
	if p == nil {
		return sched.RetryPolicy{}
	}
	return sched.RetryPolicy{Retries: p.Retries, ExitCodes: p.ExitCodes, NonZero: p.Nonzero, Timeout: p.Timeout, Lost: p.Lost}
}

// copyToProto converts a copy; with hide, how it ended stays hidden (a copy
// of an attempt that is not requested: its result is not readable yet).
func copyToProto(c sched.Copy, hide bool) *batchv1.Copy {
	p := &batchv1.Copy{Id: int64(c.ID), Worker: string(c.Slot.Worker), Slot: c.Slot.Slot, Speculative: c.Speculative,
		State: copyStateToProto[c.State], StartedAt: ts(c.StartedAt), EndedAt: ts(c.EndedAt), Progress: c.Progress,
		Attempt: c.Attempt, CpuSeconds: c.CPUSeconds, RunSeconds: c.RunSeconds}
	if !hide {
		p.ExitCode, p.Signal, p.TimedOut = c.ExitCode, c.Signal, c.TimedOut
	}
	return p
}

// attemptToProto converts an earlier attempt; with hide, the exit status
// of one that executed while disclosed stays hidden, as its output does.
func attemptToProto(a sched.Attempt, hide bool) *batchv1.Attempt {
	p := &batchv1.Attempt{Attempt: a.Attempt, State: taskStateToProto[a.State], Lost: a.State == sched.AttemptLost,
		RequestedAt: ts(a.RequestedAt), ExecutedAt: ts(a.ExecutedAt), FinishedAt: ts(a.FinishedAt), CanceledAt: ts(a.CanceledAt),
		ServiceSeconds: a.ServiceSeconds, WinCopy: int64(a.WinCopy), RetriedAt: ts(a.RetriedAt), RetriedBy: a.RetriedBy, HasOutput: a.HasOutput}
	if !hide {
		p.ExitCode, p.TimedOut = a.ExitCode, a.TimedOut
	}
	return p
}

// taskToProto converts a task; the exit status of a task that is not
// requested stays hidden (its output is not readable yet). Once the task
// is requested, the exit statuses of its earlier attempts show too, those
// that ran while it was disclosed included: the policy retried them for
// how they ended, which the user asked to pay for (their output stays
// unreadable: they were not billed).
func taskToProto(t sched.Task) *batchv1.Task {
	p := &batchv1.Task{SetId: int64(t.Set), Index: t.Index, Spec: specToProto(t.Spec), State: taskStateToProto[t.State],
		DisclosedAt: ts(t.DisclosedAt), RequestedAt: ts(t.RequestedAt), ExecutedAt: ts(t.ExecutedAt),
		FinishedAt: ts(t.FinishedAt), CanceledAt: ts(t.CanceledAt), VisibleResponseSeconds: t.VisibleResponseSeconds,
		ServiceSeconds: t.ServiceSeconds, Progress: t.Progress, Attempt: t.Attempt, Held: t.Held, FailReason: t.FailReason}
	if t.State == sched.TaskFinished {
		p.ExitCode, p.TimedOut = t.ExitCode, t.TimedOut
	}
	hidden := map[int32]bool{} // attempts whose results are not readable
	if t.State != sched.TaskFinished && t.State != sched.TaskCanceled {
		hidden[t.Attempt] = true
	}
	requested := t.State == sched.TaskRequested || t.State == sched.TaskFinished || !t.RequestedAt.IsZero()
	for _, a := range t.Attempts {
		if a.State == sched.TaskExecuted && !requested {
			hidden[a.Attempt] = true
		}
		p.Attempts = append(p.Attempts, attemptToProto(a, hidden[a.Attempt]))
	}
	for _, c := range t.Copies {
		p.Copies = append(p.Copies, copyToProto(c, hidden[c.Attempt]))
	}
	return p
}

func tasksToProto(ts []sched.Task) []*batchv1.Task {
	out := make([]*batchv1.Task, len(ts))
	for i, t := range ts {
		out[i] = taskToProto(t)
	}
	return out
}

func billLineToProto(b sched.BillLine) *batchv1.BillLine {
	return &batchv1.BillLine{Id: b.ID, Owner: b.Owner, SetId: int64(b.Task.Set), Index: b.Task.Index, CopyId: int64(b.Copy),
		SlotSeconds: b.SlotSeconds, CpuSeconds: b.CPUSeconds, BilledAt: ts(b.BilledAt), Reason: b.Reason, SetName: b.SetName,
		Kind: b.Kind, PriceSlotSecond: b.PriceSlotSecond, PriceCpuSecond: b.PriceCPUSecond, Amount: b.Amount, Corrects: b.Corrects, Note: b.Note,
		ReportedSlotSeconds: b.ReportedSlotSeconds, ReportedCpuSeconds: b.ReportedCPUSeconds, Clamped: b.Clamped, Attempt: b.Attempt}
}

func freeWorkToProto(f sched.FreeWork) *batchv1.FreeWork {
	return &batchv1.FreeWork{ExecutedUnrequestedSlotSeconds: f.ExecutedUnrequestedSlotSeconds, SpeculativeLostSlotSeconds: f.SpeculativeLostSlotSeconds,
		CanceledSlotSeconds: f.CanceledSlotSeconds, LostWithWorkerSlotSeconds: f.LostWithWorkerSlotSeconds}
}

func billGroupToProto(g store.BillGroup) *batchv1.BillGroup {
	return &batchv1.BillGroup{Owner: g.Owner, SetId: int64(g.Set), SetName: g.SetName, Lines: g.Lines,
		SlotSeconds: g.SlotSeconds, CpuSeconds: g.CPUSeconds, Amount: g.Amount}
}

func workerToProto(w sched.Worker) *batchv1.Worker {
	return &batchv1.Worker{Id: string(w.ID), Name: w.Name, Hostname: w.Hostname, Slots: w.Slots, BusySlots: w.BusySlots,
		CanSuspend: w.CanSuspend, State: w.State, LastHeartbeat: ts(w.LastHeartbeat), RegisteredAt: ts(w.RegisteredAt), MemoryMb: w.MemoryMB, Gpus: w.GPUs,
		Isolation: w.Isolation, BoundUser: w.BoundUser, Limits: w.Limits, EndsAt: ts(w.EndsAt), LeftAt: ts(w.LeftAt),
		Pool: w.Route.Pool, Partition: w.Route.Partition}
}

// seconds converts a time to the scheduler's clock (Unix seconds).
func seconds(t time.Time) sched.Time { return float64(t.UnixNano()) / 1e9 }

// hasNUL reports whether s holds a NUL byte.
func hasNUL(s string) bool { return strings.IndexByte(s, 0) >= 0 }
