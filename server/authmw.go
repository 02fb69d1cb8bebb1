package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"connectrpc.com/connect"

	"batchd/internal/wire"
	"batchd/proto/batch/v1/batchv1connect"
	"batchd/store"
)

// Read limits per procedure. A request is refused with ResourceExhausted
// before its body is read when its Content-Length says it is too big, and
// cut when it grows past its limit without one; a message that decompresses
// past its limit is refused before it is decoded.
const (
	// SmallRequestBytes bounds the request of every procedure not named
	// below: lookups, user management, heartbeats, watches.
	SmallRequestBytes = 1 << 20
	// DiscloseRequestBytes bounds a unary Disclose (the web page's small
	// sets); bigger sets go through DiscloseStream.
	DiscloseRequestBytes = 16 << 20
	// DiscloseChunkBytes bounds one message of a DiscloseStream.
	DiscloseChunkBytes = 8 << 20
	// DiscloseStreamBytes bounds a whole DiscloseStream (store.MaxTasksPerCall
	// also bounds its tasks).
	DiscloseStreamBytes = store.MaxRequestBytes
	// indexesRequestBytes fits store.MaxIndexesPerCall task indexes, also
	// in JSON ("999999," is 7 bytes).
	indexesRequestBytes = store.MaxIndexesPerCall*8 + SmallRequestBytes
	// envelopeSlack is what a body may carry beyond its message: the gRPC
	// envelope and the growth of an incompressible message under gzip.
	envelopeSlack = 64 << 10
)

// readLimit is how big one procedure's request may be: msg bytes per
// message (after decompression) and body bytes in all on the wire.
type readLimit struct {
	msg, body int64
	// hint ends the ResourceExhausted message (what to do instead).
	hint string
}

// readLimitTable returns the limits of the procedures that need more than
// SmallRequestBytes. A worker's report carries two output streams of up to
// OutputCap bytes and kept files of up to KeepMaxTask bytes (a third more
// in JSON's base64), and the list of those files.
func (s *Server) readLimitTable() map[string]readLimit {
	report := (2*s.cfg.OutputCap+s.cfg.KeepMaxTask)*4/3 + keptListBytes + SmallRequestBytes
	unary := func(n int64) readLimit { return readLimit{msg: n, body: n + envelopeSlack} }
	return map[string]readLimit{
		batchv1connect.TaskSetServiceDiscloseProcedure: {msg: DiscloseRequestBytes, body: DiscloseRequestBytes + envelopeSlack,
			hint: "send bigger sets with DiscloseStream (batchctl and the Go client do)"},
		batchv1connect.TaskSetServiceDiscloseStreamProcedure: {msg: DiscloseChunkBytes, body: DiscloseStreamBytes,
			hint: "disclose in several calls (append with set_id)"},
		batchv1connect.TaskSetServiceRequestProcedure:             unary(indexesRequestBytes),
		batchv1connect.TaskSetServiceCancelProcedure:              unary(indexesRequestBytes),
		batchv1connect.TaskSetControlServiceHoldTasksProcedure:    unary(indexesRequestBytes),
		batchv1connect.TaskSetControlServiceReleaseTasksProcedure: unary(indexesRequestBytes),
		batchv1connect.WorkerServiceReportFinishedProcedure:       unary(report),
		batchv1connect.WorkerServiceReportFinishedManyProcedure:   unary(wire.ReportManyBytes),
		batchv1connect.WorkerServiceRegisterProcedure:             unary(4 * SmallRequestBytes), // the copies still running
	}
}

// limitFor returns a procedure's read limit from limits.
func limitFor(limits map[string]readLimit, procedure string) readLimit {
	if l, ok := limits[procedure]; ok {
		return l
	}
	return readLimit{msg: SmallRequestBytes, body: SmallRequestBytes + envelopeSlack}
}

// authenticate wraps the service handlers: before anything reads a
// request's body it identifies the caller (token, role for the procedure,
// rate limit) and checks the request's declared size against the
// procedure's read limit, answering refusals in the request's own protocol
// (Connect, gRPC or gRPC-Web). A request that passes carries its Caller in
// its context and a body cut at the procedure's limit.
func (s *Server) authenticate(next http.Handler, limits map[string]readLimit) http.Handler {
	ew := connect.NewErrorWriter()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proc := r.URL.Path
		start := time.Now()
		ctx, err := s.identify(r.Context(), proc, r.Header)
		lim := limitFor(limits, proc)
		if err == nil && r.ContentLength > lim.body {
			err = tooBig(proc, r.ContentLength, lim)
		}
		if err != nil {
			interceptor{s}.logCall(ctx, proc, start, err)
			// The body stays unread; net/http closes the connection after
			// the answer when much of it is left.
			_ = ew.Write(w, r, err)
			return
		}
		body := http.MaxBytesReader(w, r.Body, lim.body)
		release, body, err := s.admit(ctx, body, r.ContentLength, lim)
		if err != nil {
			interceptor{s}.logCall(ctx, proc, start, err)
			_ = ew.Write(w, r, err)
			return
		}
		defer release()
		if s.procs != nil && CallerFrom(ctx).Role != store.RoleWorker {
			if watchProcedures[proc] {
				s.procs.touch()
			} else {
				defer s.procs.begin()()
			}
		}
		if !streamProcedures[proc] {
			switch {
			case CallerFrom(ctx).Role == store.RoleWorker:
				defer s.gate.workerCall()()
			case !apiWriteProcedures[proc]:
				// The API's turn (apigate.go), before the body is read:
				// reading and decoding it is CPU the dispatch path needs.
				turn, err := s.gate.apiCall(ctx)
				if err != nil {
					interceptor{s}.logCall(ctx, proc, start, err)
					_ = ew.Write(w, r, err)
					return
				}
				defer turn()
				ctx = context.WithValue(ctx, gateTurnKey{}, turn)
			}
		}
		r = r.WithContext(ctx)
		r.Body = body
		next.ServeHTTP(w, r)
	})
}

// tooBig is the ResourceExhausted answer to a request of n bytes past lim.
func tooBig(proc string, n int64, lim readLimit) error {
	msg := fmt.Sprintf("the request has %d bytes; %s takes at most %d", n, proc, lim.body)
	if lim.hint != "" {
		msg += ": " + lim.hint
	}
	return connect.NewError(connect.CodeResourceExhausted, errors.New(msg))
}
