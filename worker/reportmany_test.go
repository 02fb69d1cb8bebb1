package worker

import (
	"context"
	"errors"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	batchv1 "batchd/proto/batch/v1"
)

// ReportFinishedMany answers each report as ReportFinished would, after
// the gate (when set) lets the call through; with noMany it answers
// Unimplemented, as a server from before it.
func (f *fakeServer) ReportFinishedMany(ctx context.Context, req *batchv1.ReportFinishedManyRequest) (*batchv1.ReportFinishedManyResponse, error) {
	f.mu.Lock()
	f.manyCalls++
	noMany, gate := f.noMany, f.manyGate
	f.mu.Unlock()
	f.bump()
	if noMany {
		return nil, connect.NewError(connect.CodeUnimplemented, errors.New("no ReportFinishedMany"))
	}
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f.mu.Lock()
	f.manySizes = append(f.manySizes, len(req.Reports))
	known := f.known[req.WorkerId]
	f.mu.Unlock()
	if !known {
		return nil, connect.NewError(connect.CodeNotFound, errors.New("unknown worker"))
	}
	resp := &batchv1.ReportFinishedManyResponse{}
	for _, r := range req.Reports {
		r = proto.CloneOf(r)
		r.WorkerId = req.WorkerId
		out, err := f.ReportFinished(ctx, r)
		if err != nil {
			resp.Results = append(resp.Results, &batchv1.ReportResult{Code: uint32(connect.CodeOf(err)), Message: err.Error()})
			continue
		}
		resp.Results = append(resp.Results, &batchv1.ReportResult{Outcome: out.Outcome})
	}
	return resp, nil
}

// The ends that come while a ReportFinishedMany call is out go together in
// the next call, each answered on its own: a refused one is dropped, the
// others are delivered once.
func TestReportsManyInOneCall(t *testing.T) {
	gate := make(chan struct{})
	b := setupWith(t, func(f *fakeServer) {
		f.manyGate = gate
		f.refuse[3] = connect.CodeInvalidArgument
	}, func(c *Config) { c.BenchNoExec = true; c.Slots = 5 })
	f := b.srv
	f.startCopy(1, 0, sh("true"))
	f.waitFor("the first call", func() bool { return f.manyCalls == 1 })
	for id := int64(2); id <= 5; id++ {
		f.startCopy(id, int32(id-1), sh("true"))
	}
	eventually(t, "four ends queued behind the first call", func() bool {
		b.a.reports.mu.Lock()
		defer b.a.reports.mu.Unlock()
		return len(b.a.reports.queue) == 4
	})
	close(gate)
	for id := int64(1); id <= 5; id++ {
		f.report(id)
	}
	f.waitFor("two calls answered", func() bool { return len(f.manySizes) == 2 })
	f.mu.Lock()
	sizes, calls := f.manySizes, f.manyCalls
	f.mu.Unlock()
	if calls != 2 || sizes[0] != 1 || sizes[1] != 4 {
		t.Fatalf("calls %d of sizes %v, want 2 of [1 4]", calls, sizes)
	}
	eventually(t, "every copy forgotten", func() bool {
		b.a.mu.Lock()
		defer b.a.mu.Unlock()
		return len(b.a.copies) == 0
	})
	for id := int64(1); id <= 5; id++ {
		if n := f.reportCount(id); n != 1 {
			t.Errorf("copy %d reported %d times, want once (copy 3 refused for good)", id, n)
		}
	}
}

// A server without ReportFinishedMany gets every end through
// ReportFinished, after one Unimplemented.
func TestReportsAloneWithoutMany(t *testing.T) {
	b := setupWith(t, func(f *fakeServer) { f.noMany = true }, func(c *Config) { c.BenchNoExec = true })
	f := b.srv
	for id := int64(1); id <= 3; id++ {
		f.startCopy(id, int32(id-1), sh("true"))
		if r := f.report(id); r.ExitCode != 0 {
			t.Fatalf("copy %d: exit %d", id, r.ExitCode)
		}
	}
	f.mu.Lock()
	calls := f.manyCalls
	f.mu.Unlock()
	if calls != 1 {
		t.Fatalf("%d ReportFinishedMany calls, want 1 (then none)", calls)
	}
	for id := int64(1); id <= 3; id++ {
		if n := f.reportCount(id); n != 1 {
			t.Errorf("copy %d reported %d times, want once", id, n)
		}
	}
}
