package server

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"

	"batchd/proto/batch/v1/batchv1connect"
	"batchd/sched"
	"batchd/store"
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
// Internal without detail. Handlers return domain errors (sched codes) and
// never call it: the interceptor maps what a unary call or a stream
// returns, and LocalTransport what the handlers return to the embedded
// worker.
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

// Caller is who calls: a user's name and role (store.RoleUser,
// store.RoleAdmin or store.RoleWorker).
type Caller struct {
	Name string
	Role string
	// Pilot is, for a pilot's token, the one worker name the caller may
	// speak for ("" for any other caller).
	Pilot sched.WorkerID
	// token is the bearer token the call came with (memory only, never
	// logged), so that a long stream can check it again (stillValid).
	token string
}

// localWorkerUser is the identity of the embedded worker slots' in-memory
// token. It is not a valid user name, so no stored user can take it.
const localWorkerUser = "(local-worker)"

// bearer returns the token of an "Authorization: Bearer TOKEN" header.
func bearer(h http.Header) (string, bool) {
	v := h.Get("Authorization")
	scheme, token, ok := strings.Cut(v, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// identify is the one function that decides who calls (authenticate calls
// it before the request's body is read): it authenticates
// the bearer token (Unauthenticated when missing, unknown or revoked),
// checks that the caller's role may call the procedure (PermissionDenied),
// applies the caller's request rate limit (ResourceExhausted) and puts the
// caller into the context.
func (s *Server) identify(ctx context.Context, procedure string, h http.Header) (context.Context, error) {
	token, ok := bearer(h)
	if !ok {
		return ctx, connect.NewError(connect.CodeUnauthenticated, errors.New("no token: send Authorization: Bearer TOKEN (batchctl finds the local admin token in the data directory)"))
	}
	var c Caller
	if subtle.ConstantTimeCompare([]byte(store.HashToken(token)), []byte(s.localWorkerHash)) == 1 {
		c = Caller{Name: localWorkerUser, Role: store.RoleWorker}
	} else {
		u, err := s.db.Authenticate(ctx, token)
		if err != nil {
			if sched.ErrorCode(err) == sched.EUNAUTHENTICATED {
				return ctx, connect.NewError(connect.CodeUnauthenticated, errors.New("unknown or revoked token"))
			}
			return ctx, s.connectError(ctx, err)
		}
		c = Caller{Name: u.Name, Role: u.Role, Pilot: u.Worker, token: token}
	}
	ctx = context.WithValue(ctx, callerKey{}, c)
	if err := allowed(c, procedure); err != nil {
		return ctx, err
	}
	if c.Role != store.RoleWorker && !s.limits.allow(c.Name, s.now()) {
		return ctx, connect.NewError(connect.CodeResourceExhausted,
			fmt.Errorf("request rate cap reached: at most %g calls a second (burst %d) per user; slow down", s.limits.rate, s.limits.burst))
	}
	return ctx, nil
}

// stillValid checks again, for a stream that has been open a while, that
// the caller's token is neither revoked nor its user (Unauthenticated
// otherwise), so that revoking a user also ends its open watches and
// assignment streams before they send anything more. The embedded worker's
// token lives only in this process and cannot be revoked.
func (s *Server) stillValid(ctx context.Context) error {
	c := CallerFrom(ctx)
	if c.Name == localWorkerUser {
		return nil
	}
	if _, err := s.db.Authenticate(ctx, c.token); err != nil {
		if sched.ErrorCode(err) == sched.EUNAUTHENTICATED {
			return connect.NewError(connect.CodeUnauthenticated, errors.New("token revoked while the stream was open"))
		}
		return s.connectError(ctx, err)
	}
	return nil
}

// allowed says whether a role may call a procedure: workers only the
// worker service; users and admins everything else, the user service
// (except WhoAmI) for admins only.
func allowed(c Caller, procedure string) error {
	service := strings.TrimPrefix(procedure, "/")
	service, method, _ := strings.Cut(service, "/")
	switch {
	case service == batchv1connect.UserServiceName && method == "WhoAmI":
		return nil
	case service == batchv1connect.WorkerServiceName:
		if c.Role != store.RoleWorker {
			return connect.NewError(connect.CodePermissionDenied, errors.New("the worker service needs a worker token"))
		}
		if c.Pilot != "" && !pilotMethods[method] {
			return connect.NewError(connect.CodePermissionDenied, errors.New("a pilot's token may only run its own worker"))
		}
	case c.Role == store.RoleWorker:
		return connect.NewError(connect.CodePermissionDenied, errors.New("a worker token may call only the worker service"))
	case service == batchv1connect.UserServiceName && method != "WhoAmI" && c.Role != store.RoleAdmin:
		return connect.NewError(connect.CodePermissionDenied, errors.New("managing users needs an admin token"))
	}
	return nil
}

// pilotMethods are what a pilot's token may call: its own worker's
// protocol, not a pool's (ReportPilots, MintWorkerToken).
var pilotMethods = map[string]bool{"Register": true, "Assignments": true, "Heartbeat": true, "ReportFinished": true, "ReportFinishedMany": true,
	"ReportOutput": true}

// callerFrom returns the name of the caller that identify put into ctx.
func callerFrom(ctx context.Context) string {
	return CallerFrom(ctx).Name
}

// CallerFrom returns the caller that identify put into ctx (zero outside
// a call).
func CallerFrom(ctx context.Context) Caller {
	c, _ := ctx.Value(callerKey{}).(Caller)
	return c
}

// isAdmin says whether the caller in ctx is an admin.
func isAdmin(ctx context.Context) bool { return CallerFrom(ctx).Role == store.RoleAdmin }

// ownerFor returns the owner whose set id the caller in ctx may act on: the
// caller, or for an admin the set's owner (ENOTFOUND when there is no such
// set, the same answer a user gets for another user's set).
func (s *Server) ownerFor(ctx context.Context, id sched.SetID) (string, error) {
	c := CallerFrom(ctx)
	if c.Role != store.RoleAdmin || id == 0 {
		return c.Name, nil
	}
	if owner, ok := s.owners.get(id); ok {
		return owner, nil
	}
	owner, err := s.db.SetOwner(ctx, id)
	if err == nil {
		s.owners.put(id, owner)
	}
	return owner, err
}

// ownerCache remembers the owners of sets an admin named lately: a set's
// owner never changes and sets are never deleted, so an entry never goes
// stale; the cache forgets everything when it holds maxOwners.
type ownerCache struct {
	mu sync.Mutex
	m  map[sched.SetID]string
}

const maxOwners = 1 << 16

func (c *ownerCache) get(id sched.SetID) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	o, ok := c.m[id]
	return o, ok
}

func (c *ownerCache) put(id sched.SetID, owner string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxOwners {
		c.m = make(map[sched.SetID]string)
	}
	c.m[id] = owner
}

// interceptor logs every call with log/slog. The caller is normally in the
// context already (authenticate put it there before the body was read, or
// an in-process transport did); the interceptor identifies the others.
type interceptor struct{ s *Server }

// identify identifies the caller unless the context has one already, whose
// role it checks again for the procedure.
func (i interceptor) identify(ctx context.Context, procedure string, h http.Header) (context.Context, error) {
	if c := CallerFrom(ctx); c.Name != "" {
		return ctx, allowed(c, procedure)
	}
	return i.s.identify(ctx, procedure, h)
}

// WrapUnary identifies the caller if need be, maps the handler's error to
// a Connect error (connectError) and logs the call.
func (i interceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		start := time.Now()
		ctx, err := i.identify(ctx, req.Spec().Procedure, req.Header())
		if err != nil {
			i.logCall(ctx, req.Spec().Procedure, start, err)
			return nil, err
		}
		if _, ok := ctx.Value(gateTurnKey{}).(func()); !ok && CallerFrom(ctx).Role != store.RoleWorker && !apiWriteProcedures[req.Spec().Procedure] {
			// A call that came some other way takes its turn here.
			release, err := i.s.gate.apiCall(ctx)
			if err != nil {
				i.logCall(ctx, req.Spec().Procedure, start, err)
				return nil, err
			}
			defer release()
		}
		res, err := next(ctx, req)
		err = i.s.connectError(ctx, err)
		i.logCall(ctx, req.Spec().Procedure, start, err)
		return res, err
	}
}

// apiWriteProcedures are the API calls that take no apiGate turn: they
// queue in the API lane (apiWrite), which carries them out in batches
// under the server's lock, and would otherwise hold a turn while they
// wait for it.
var apiWriteProcedures = map[string]bool{
	batchv1connect.TaskSetServiceDiscloseProcedure:             true,
	batchv1connect.TaskSetServiceRequestProcedure:              true,
	batchv1connect.TaskSetServiceCancelProcedure:               true,
	batchv1connect.TaskSetControlServiceHoldTasksProcedure:     true,
	batchv1connect.TaskSetControlServiceReleaseTasksProcedure:  true,
	batchv1connect.TaskSetControlServiceUpdateTaskSetProcedure: true,
}

// WrapStreamingClient leaves client streams alone (server-side interceptor).
func (i interceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

// WrapStreamingHandler identifies the caller if need be, maps the
// handler's error to a Connect error (connectError) and logs the stream
// when it ends.
func (i interceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		start := time.Now()
		ctx, err := i.identify(ctx, conn.Spec().Procedure, conn.RequestHeader())
		if err != nil {
			i.logCall(ctx, conn.Spec().Procedure, start, err)
			return err
		}
		err = i.s.connectError(ctx, next(ctx, conn))
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
		} else if errors.Is(err, errMalformed) {
			level = slog.LevelDebug // guardEnvelopes warns once per peer
		}
	}
	attrs := []any{"procedure", proc, "user", callerFrom(ctx), "duration", time.Since(start)}
	if err != nil {
		attrs = append(attrs, "code", connect.CodeOf(err).String(), "err", err.Error())
	}
	i.s.log.Log(ctx, level, "rpc", attrs...)
}

// recoverPanic turns a handler's panic into an Internal error and logs it.
func (s *Server) recoverPanic(ctx context.Context, spec connect.Spec, _ http.Header, p any) error {
	s.log.ErrorContext(ctx, "panic in handler", "procedure", spec.Procedure, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
	return connect.NewError(connect.CodeInternal, errors.New("internal error"))
}
