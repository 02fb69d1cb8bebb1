package client

import (
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	batchv1 "batchd/proto/batch/v1"
	"batchd/sched"
)

// This file converts between protobuf messages and sched domain records at
// the client's edge. The server has its own copy of this edge; neither leaks
// protobuf types past it.

var taskStates = []struct {
	sched sched.TaskState
	pb    batchv1.TaskState
}{
	{sched.TaskDisclosed, batchv1.TaskState_TASK_STATE_DISCLOSED},
	{sched.TaskExecuted, batchv1.TaskState_TASK_STATE_EXECUTED},
	{sched.TaskRequested, batchv1.TaskState_TASK_STATE_REQUESTED},
	{sched.TaskFinished, batchv1.TaskState_TASK_STATE_FINISHED},
	{sched.TaskCanceled, batchv1.TaskState_TASK_STATE_CANCELED},
}

var copyStates = []struct {
	sched sched.CopyState
	pb    batchv1.CopyState
}{
	{sched.CopyRunning, batchv1.CopyState_COPY_STATE_RUNNING},
	{sched.CopySuspended, batchv1.CopyState_COPY_STATE_SUSPENDED},
	{sched.CopyWon, batchv1.CopyState_COPY_STATE_WON},
	{sched.CopyKilled, batchv1.CopyState_COPY_STATE_KILLED},
	{sched.CopyLost, batchv1.CopyState_COPY_STATE_LOST},
}

// taskStateFromPB returns the domain state, "" for an unspecified one.
func taskStateFromPB(s batchv1.TaskState) sched.TaskState {
	for _, x := range taskStates {
		if x.pb == s {
			return x.sched
		}
	}
	return ""
}

// taskStateToPB returns the protobuf state, unspecified for an unknown one.
func taskStateToPB(s sched.TaskState) batchv1.TaskState {
	for _, x := range taskStates {
		if x.sched == s {
			return x.pb
		}
	}
	return batchv1.TaskState_TASK_STATE_UNSPECIFIED
}

func copyStateFromPB(s batchv1.CopyState) sched.CopyState {
	for _, x := range copyStates {
		if x.pb == s {
			return x.sched
		}
	}
	return ""
}

// timeFromPB returns the zero time for a nil timestamp.
func timeFromPB(ts *timestamppb.Timestamp) time.Time {
	if ts == nil {
		return time.Time{}
	}
	return ts.AsTime()
}

// timeToPB returns nil for the zero time.
func timeToPB(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

func specToPB(s sched.TaskSpec) *batchv1.TaskSpec {
	return &batchv1.TaskSpec{
		Argv:            s.Argv,
		Env:             s.Env,
		Dir:             s.Dir,
		EstimateSeconds: s.EstimateSeconds,
		NoSpeculation:   s.NoSpeculation,
		TimeoutSeconds:  s.TimeoutSeconds,
		DeadlineSeconds: s.DeadlineSeconds,
		Cpus:            s.Cpus,
		MemoryMb:        s.MemoryMB,
		Gpus:            s.GPUs,
		Keep:            s.Keep,
	}
}

func specFromPB(s *batchv1.TaskSpec) sched.TaskSpec {
	return sched.TaskSpec{
		Argv:            s.GetArgv(),
		Env:             s.GetEnv(),
		Dir:             s.GetDir(),
		EstimateSeconds: s.GetEstimateSeconds(),
		NoSpeculation:   s.GetNoSpeculation(),
		TimeoutSeconds:  s.GetTimeoutSeconds(),
		DeadlineSeconds: s.GetDeadlineSeconds(),
		Cpus:            s.GetCpus(),
		MemoryMB:        s.GetMemoryMb(),
		GPUs:            s.GetGpus(),
		Keep:            s.GetKeep(),
	}
}

func setFromPB(s *batchv1.TaskSet) sched.TaskSet {
	c := s.GetCounts()
	return sched.TaskSet{
		ID:             sched.SetID(s.GetId()),
		Name:           s.GetName(),
		Owner:          s.GetOwner(),
		CreatedAt:      timeFromPB(s.GetCreatedAt()),
		MaxRunning:     s.GetMaxRunning(),
		Retry:          retryFromPB(s.GetRetry()),
		Stop:           stopFromPB(s.GetStop()),
		Stopped:        stopFiredFromPB(sched.SetID(s.GetId()), s.GetStopped()),
		TimeoutSeconds: s.GetTimeoutSeconds(),
		Counts: sched.TaskCounts{
			Disclosed: c.GetDisclosed(),
			Executed:  c.GetExecuted(),
			Requested: c.GetRequested(),
			Finished:  c.GetFinished(),
			Canceled:  c.GetCanceled(),
			Running:   c.GetRunning(),
			Total:     c.GetTotal(),
			Held:      c.GetHeld(),
		},
		BilledSlotSeconds:          s.GetBilledSlotSeconds(),
		MeanVisibleResponseSeconds: s.GetMeanVisibleResponseSeconds(),
		State:                      setStateFromPB(s.GetState()),
		Failed:                     s.GetFailed(),
		Waiting:                    s.GetState() == batchv1.SetState_SET_STATE_WAITING,
		After:                      depsFromPB(s.GetAfter()),
		CanceledReason:             s.GetCanceledReason(),
		Labels:                     labelsFromPB(s.GetLabels()),
		Route:                      sched.Route{Pool: s.GetPool(), Partition: s.GetPartition()},
	}
}

func taskFromPB(t *batchv1.Task) sched.Task {
	task := sched.Task{
		Set:                    sched.SetID(t.GetSetId()),
		Index:                  t.GetIndex(),
		Spec:                   specFromPB(t.GetSpec()),
		State:                  taskStateFromPB(t.GetState()),
		DisclosedAt:            timeFromPB(t.GetDisclosedAt()),
		RequestedAt:            timeFromPB(t.GetRequestedAt()),
		ExecutedAt:             timeFromPB(t.GetExecutedAt()),
		FinishedAt:             timeFromPB(t.GetFinishedAt()),
		CanceledAt:             timeFromPB(t.GetCanceledAt()),
		VisibleResponseSeconds: t.GetVisibleResponseSeconds(),
		ServiceSeconds:         t.GetServiceSeconds(),
		ExitCode:               t.GetExitCode(),
		TimedOut:               t.GetTimedOut(),
		Progress:               t.GetProgress(),
		Attempt:                max(1, t.GetAttempt()),
		Held:                   t.GetHeld(),
		FailReason:             t.GetFailReason(),
	}
	for _, c := range t.GetCopies() {
		task.Copies = append(task.Copies, sched.Copy{
			ID:          sched.CopyID(c.GetId()),
			Task:        sched.TaskRef{Set: task.Set, Index: task.Index},
			Slot:        sched.SlotRef{Worker: sched.WorkerID(c.GetWorker()), Slot: c.GetSlot()},
			Speculative: c.GetSpeculative(),
			State:       copyStateFromPB(c.GetState()),
			StartedAt:   timeFromPB(c.GetStartedAt()),
			EndedAt:     timeFromPB(c.GetEndedAt()),
			Progress:    c.GetProgress(),
			Attempt:     max(1, c.GetAttempt()),
			ExitCode:    c.GetExitCode(),
			Signal:      c.GetSignal(),
			TimedOut:    c.GetTimedOut(),
			CPUSeconds:  c.GetCpuSeconds(),
			RunSeconds:  c.GetRunSeconds(),
		})
	}
	for _, a := range t.GetAttempts() {
		st := taskStateFromPB(a.GetState())
		if a.GetLost() {
			st = sched.AttemptLost
		}
		task.Attempts = append(task.Attempts, sched.Attempt{Attempt: a.GetAttempt(), State: st,
			RequestedAt: timeFromPB(a.GetRequestedAt()), ExecutedAt: timeFromPB(a.GetExecutedAt()),
			FinishedAt: timeFromPB(a.GetFinishedAt()), CanceledAt: timeFromPB(a.GetCanceledAt()),
			ExitCode: a.GetExitCode(), TimedOut: a.GetTimedOut(), ServiceSeconds: a.GetServiceSeconds(),
			WinCopy: sched.CopyID(a.GetWinCopy()), RetriedAt: timeFromPB(a.GetRetriedAt()), RetriedBy: a.GetRetriedBy(),
			HasOutput: a.GetHasOutput()})
	}
	return task
}

func retryToPB(p sched.RetryPolicy) *batchv1.RetryPolicy {
	if p.Retries == 0 && p.RetryOn() == "" {
		return nil
	}
	return &batchv1.RetryPolicy{Retries: p.Retries, ExitCodes: p.ExitCodes, Nonzero: p.NonZero, Timeout: p.Timeout, Lost: p.Lost}
}

func retryFromPB(p *batchv1.RetryPolicy) sched.RetryPolicy {
	if p == nil {
		return sched.RetryPolicy{}
	}
	return sched.RetryPolicy{Retries: p.GetRetries(), ExitCodes: p.GetExitCodes(), NonZero: p.GetNonzero(), Timeout: p.GetTimeout(), Lost: p.GetLost()}
}

func tasksFromPB(ts []*batchv1.Task) []sched.Task {
	out := make([]sched.Task, 0, len(ts))
	for _, t := range ts {
		out = append(out, taskFromPB(t))
	}
	return out
}

func billLineFromPB(l *batchv1.BillLine) sched.BillLine {
	return sched.BillLine{
		ID:          l.GetId(),
		Owner:       l.GetOwner(),
		Task:        sched.TaskRef{Set: sched.SetID(l.GetSetId()), Index: l.GetIndex()},
		SetName:     l.GetSetName(),
		Copy:        sched.CopyID(l.GetCopyId()),
		SlotSeconds: l.GetSlotSeconds(),
		CPUSeconds:  l.GetCpuSeconds(),
		BilledAt:    timeFromPB(l.GetBilledAt()),
		Reason:      l.GetReason(),

		Kind:            l.GetKind(),
		PriceSlotSecond: l.GetPriceSlotSecond(),
		PriceCPUSecond:  l.GetPriceCpuSecond(),
		Amount:          l.GetAmount(),
		Corrects:        l.GetCorrects(),
		Note:            l.GetNote(),

		ReportedSlotSeconds: l.GetReportedSlotSeconds(),
		ReportedCPUSeconds:  l.GetReportedCpuSeconds(),
		Clamped:             l.GetClamped(),
		Attempt:             l.GetAttempt(),
	}
}

func billGroupFromPB(g *batchv1.BillGroup) BillGroup {
	return BillGroup{Owner: g.GetOwner(), Set: sched.SetID(g.GetSetId()), SetName: g.GetSetName(), Lines: g.GetLines(),
		SlotSeconds: g.GetSlotSeconds(), CPUSeconds: g.GetCpuSeconds(), Amount: g.GetAmount()}
}

func freeWorkFromPB(f *batchv1.FreeWork) sched.FreeWork {
	return sched.FreeWork{ExecutedUnrequestedSlotSeconds: f.GetExecutedUnrequestedSlotSeconds(), SpeculativeLostSlotSeconds: f.GetSpeculativeLostSlotSeconds(),
		CanceledSlotSeconds: f.GetCanceledSlotSeconds(), LostWithWorkerSlotSeconds: f.GetLostWithWorkerSlotSeconds()}
}

func billTotalsFromPB(t *batchv1.BillTotals) sched.BillTotals {
	return sched.BillTotals{
		Lines:                    t.GetLines(),
		BilledSlotSeconds:        t.GetBilledSlotSeconds(),
		BilledCPUSeconds:         t.GetBilledCpuSeconds(),
		FreeSlotSeconds:          t.GetFreeSlotSeconds(),
		Free:                     freeWorkFromPB(t.GetFree()),
		RequestedWorkSlotSeconds: t.GetRequestedWorkSlotSeconds(),
		ScaledBilledResources:    t.GetScaledBilledResources(),
		Amount:                   t.GetAmount(),
	}
}

func workerFromPB(w *batchv1.Worker) sched.Worker {
	return sched.Worker{
		ID:            sched.WorkerID(w.GetId()),
		Name:          w.GetName(),
		Hostname:      w.GetHostname(),
		Slots:         w.GetSlots(),
		BusySlots:     w.GetBusySlots(),
		CanSuspend:    w.GetCanSuspend(),
		State:         w.GetState(),
		LastHeartbeat: timeFromPB(w.GetLastHeartbeat()),
		RegisteredAt:  timeFromPB(w.GetRegisteredAt()),
		EndsAt:        timeFromPB(w.GetEndsAt()),
		LeftAt:        timeFromPB(w.GetLeftAt()),
		MemoryMB:      w.GetMemoryMb(),
		GPUs:          w.GetGpus(),
		Isolation:     w.GetIsolation(),
		BoundUser:     w.GetBoundUser(),
		Limits:        w.GetLimits(),
		Route:         sched.Route{Pool: w.GetPool(), Partition: w.GetPartition()},
	}
}
