package worker

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"batchd/internal/forkbase"
	"batchd/internal/wire"
	batchv1 "batchd/proto/batch/v1"
)

// BenchmarkCopies measures what the agent alone spends on each copy of
// `true` while it keeps 64 (or 16) slots busy, the way the slots embedded
// in `batchd serve` are driven, but with a transport in process that
// answers at once: no store, no scheduler, no HTTP. One op is one copy.
// It reports the agent's CPU per copy (this process's, from getrusage:
// the copies' own CPU is not in it), the CPU the parent's side of a plain
// fork/exec/wait of `true` costs on as many goroutines in the same run
// (fork-parent-cpu-ms/copy, as BenchmarkPipeline in bench/ measures it),
// and the difference (supervision-cpu-ms/copy): the part of
// BenchmarkPipeline's bookkeeping that is the agent's, not the server's.
// BATCHD_BENCH_ISOLATION picks the isolation (default auto, as `batchd
// serve` does: uid as root).
func BenchmarkCopies(b *testing.B) {
	for _, n := range []int{64, 16} {
		b.Run(fmt.Sprintf("slots=%d", n), func(b *testing.B) { benchCopies(b, n) })
	}
}

func benchCopies(b *testing.B, slots int) {
	iso, _, err := ChooseIsolation(Isolation(cmp.Or(os.Getenv("BATCHD_BENCH_ISOLATION"), string(IsolationAuto))))
	if err != nil {
		b.Skip(err)
	}
	t := newCopiesTransport(b.N, slots)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{Transport: t, Name: "w-bench", Slots: slots, StateDir: b.TempDir(),
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Isolation: iso})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil && ctx.Err() == nil {
			b.Error(err)
		}
	}()
	select {
	case <-t.open:
	case err := <-done:
		b.Fatalf("the agent ended before it opened its stream: %v", err)
	}
	b.ResetTimer()
	cpu0 := forkbase.SelfCPU()
	start := time.Now()
	t.begin()
	<-t.done
	elapsed := time.Since(start)
	cpu := forkbase.SelfCPU() - cpu0
	b.StopTimer()
	if f := t.failure.Load(); f != nil {
		b.Fatal(*f)
	}
	base, parent, err := forkbase.Rate(min(b.N, 2000), slots)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "copies/s")
	b.ReportMetric(base, "baseline-copies/s")
	b.ReportMetric(cpu*1000/float64(b.N), "agent-cpu-ms/copy")
	b.ReportMetric(parent*1000, "fork-parent-cpu-ms/copy")
	b.ReportMetric((cpu/float64(b.N)-parent)*1000, "supervision-cpu-ms/copy")
}

// copiesTransport is a wire.Transport in process that keeps an agent's
// slots busy with copies of `true` until total have ended: each end's
// report starts the next copy on the slot it freed.
type copiesTransport struct {
	total, slots int
	spec         *batchv1.TaskSpec
	orders       chan *batchv1.AssignmentsResponse
	open         chan struct{} // closed when the agent's stream is open
	openOnce     sync.Once
	done         chan struct{} // closed when total copies have ended
	slotOf       []int32       // by copy id, written before its order is sent
	next         atomic.Int64  // the last copy id handed out
	ended        atomic.Int64
	failure      atomic.Pointer[string]
}

func newCopiesTransport(total, slots int) *copiesTransport {
	return &copiesTransport{total: total, slots: slots, spec: &batchv1.TaskSpec{Argv: []string{"true"}},
		orders: make(chan *batchv1.AssignmentsResponse, slots), open: make(chan struct{}),
		done: make(chan struct{}), slotOf: make([]int32, total+1)}
}

// begin fills every slot.
func (t *copiesTransport) begin() {
	for s := range min(t.slots, t.total) {
		t.start(int32(s))
	}
}

// start orders the next copy on slot s, if copies are left to start.
func (t *copiesTransport) start(s int32) {
	id := t.next.Add(1)
	if id > int64(t.total) {
		return
	}
	t.slotOf[id] = s
	t.orders <- &batchv1.AssignmentsResponse{Action: &batchv1.AssignmentsResponse_Start{Start: &batchv1.StartCopy{
		CopyId: id, Slot: s, SetId: 1, Index: int32(id), Spec: t.spec, Owner: "bench", Attempt: 1}}}
}

func (t *copiesTransport) Register(_ context.Context, req *batchv1.RegisterRequest) (*batchv1.RegisterResponse, error) {
	return &batchv1.RegisterResponse{WorkerId: req.Name, LeaseSeconds: 600, HeartbeatSeconds: 120, OutputCapBytes: 1 << 20}, nil
}

func (t *copiesTransport) Assignments(ctx context.Context, _ *batchv1.AssignmentsRequest) (wire.AssignmentStream, error) {
	t.openOnce.Do(func() { close(t.open) })
	return &copiesStream{t: t, ctx: ctx, closed: make(chan struct{})}, nil
}

func (t *copiesTransport) Heartbeat(context.Context, *batchv1.HeartbeatRequest) (*batchv1.HeartbeatResponse, error) {
	return &batchv1.HeartbeatResponse{}, nil
}

func (t *copiesTransport) ReportFinished(_ context.Context, req *batchv1.ReportFinishedRequest) (*batchv1.ReportFinishedResponse, error) {
	if req.GetExitCode() != 0 || req.GetStartError() != "" {
		msg := fmt.Sprintf("copy %d: exit %d, start error %q, stderr %q", req.GetCopyId(), req.GetExitCode(), req.GetStartError(), req.GetStderr())
		t.failure.CompareAndSwap(nil, &msg)
	}
	if id := req.GetCopyId(); id >= 1 && id <= int64(t.total) {
		t.start(t.slotOf[id])
	}
	if t.ended.Add(1) == int64(t.total) {
		close(t.done)
	}
	return &batchv1.ReportFinishedResponse{}, nil
}

func (t *copiesTransport) ReportOutput(context.Context, *batchv1.ReportOutputRequest) (*batchv1.ReportOutputResponse, error) {
	return &batchv1.ReportOutputResponse{}, nil
}

// copiesStream hands the transport's orders to the agent one by one.
type copiesStream struct {
	t         *copiesTransport
	ctx       context.Context
	msg       *batchv1.AssignmentsResponse
	closed    chan struct{}
	closeOnce sync.Once
}

func (s *copiesStream) Receive() bool {
	select {
	case s.msg = <-s.t.orders:
		return true
	case <-s.closed:
	case <-s.ctx.Done():
	}
	return false
}

func (s *copiesStream) Msg() *batchv1.AssignmentsResponse { return s.msg }
func (s *copiesStream) Err() error                        { return nil }
func (s *copiesStream) Close() error {
	s.closeOnce.Do(func() { close(s.closed) })
	return nil
}
