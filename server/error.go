package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"

	"connectrpc.com/connect"

	"batchd/sched"
)

// codes maps sched error codes to Connect codes; the client package maps
// them back with the same table's inverse.
var codes = map[string]connect.Code{
	sched.ECONFLICT:           connect.CodeAlreadyExists,
	sched.EFAILEDPRECONDITION: connect.CodeFailedPrecondition,
	sched.EINTERNAL:           connect.CodeInternal,
	sched.EINVALID:            connect.CodeInvalidArgument,
	sched.ENOTFOUND:           connect.CodeNotFound,
	sched.EPERMISSION:         connect.CodePermissionDenied,
	sched.EUNAUTHENTICATED:    connect.CodeUnauthenticated,
	sched.ERESOURCEEXHAUSTED:  connect.CodeResourceExhausted,
	sched.EUNAVAILABLE:        connect.CodeUnavailable,
}

// connectError is the one place where errors become Connect errors: a coded
// error keeps its message; anything else is logged in full and sent as
// Internal without detail.
func (s *Server) connectError(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	var ce *connect.Error
	if errors.As(err, &ce) {
		return ce
	}
	if errors.Is(err, context.Canceled) {
		return connect.NewError(connect.CodeCanceled, errors.New("canceled"))
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return connect.NewError(connect.CodeDeadlineExceeded, errors.New("deadline exceeded"))
	}
	code := sched.ErrorCode(err)
	if code == sched.EINTERNAL {
		s.log.ErrorContext(ctx, "internal error", "err", err.Error())
		return connect.NewError(connect.CodeInternal, errors.New("internal error"))
	}
	c, ok := codes[code]
	if !ok {
		c = connect.CodeUnknown
	}
	return connect.NewError(c, errors.New(sched.ErrorMessage(err)))
}

type callerKey struct{}

// localUser is every caller's identity until users and tokens exist.
const localUser = "local"

// identify is the one function that decides who calls: it puts the caller
// into the context. Issue 6 (users, tokens) replaces only this.
func identify(ctx context.Context, _ http.Header) (context.Context, error) {
	return context.WithValue(ctx, callerKey{}, localUser), nil
}

// callerFrom returns the calling user that identify put into ctx.
func callerFrom(ctx context.Context) string {
	if u, ok := ctx.Value(callerKey{}).(string); ok {
		return u
	}
	return localUser
}

// interceptor identifies callers and logs every call with log/slog.
type interceptor struct{ log *slog.Logger }

// WrapUnary identifies the caller and logs the call.
func (i interceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		ctx, err := identify(ctx, req.Header())
		if err != nil {
			return nil, err
		}
		start := time.Now()
		res, err := next(ctx, req)
		i.logCall(ctx, req.Spec().Procedure, start, err)
		return res, err
	}
}

// WrapStreamingClient leaves client streams alone (server-side interceptor).
func (i interceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

// WrapStreamingHandler identifies the caller and logs the stream when it ends.
func (i interceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		ctx, err := identify(ctx, conn.RequestHeader())
		if err != nil {
			return err
		}
		start := time.Now()
		err = next(ctx, conn)
		i.logCall(ctx, conn.Spec().Procedure, start, err)
		return err
	}
}

func (i interceptor) logCall(ctx context.Context, proc string, start time.Time, err error) {
	level := slog.LevelDebug
	if err != nil {
		level = slog.LevelInfo
		if c := connect.CodeOf(err); c == connect.CodeInternal || c == connect.CodeUnknown {
			level = slog.LevelError
		}
	}
	attrs := []any{"procedure", proc, "user", callerFrom(ctx), "duration", time.Since(start)}
	if err != nil {
		attrs = append(attrs, "code", connect.CodeOf(err).String(), "err", err.Error())
	}
	i.log.Log(ctx, level, "rpc", attrs...)
}

// recoverPanic turns a handler's panic into an Internal error and logs it.
func (s *Server) recoverPanic(ctx context.Context, spec connect.Spec, _ http.Header, p any) error {
	s.log.ErrorContext(ctx, "panic in handler", "procedure", spec.Procedure, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
	return connect.NewError(connect.CodeInternal, errors.New("internal error"))
}
