package client

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"

	"connectrpc.com/connect"

	"batchd/sched"
)

// codes is the one table between sched error codes and Connect codes. The
// server reads it left to right; the client reads it right to left.
var codes = []struct {
	sched   string
	connect connect.Code
}{
	{sched.EINVALID, connect.CodeInvalidArgument},
	{sched.ENOTFOUND, connect.CodeNotFound},
	{sched.ECONFLICT, connect.CodeAlreadyExists},
	{sched.EFAILEDPRECONDITION, connect.CodeFailedPrecondition},
	{sched.EPERMISSION, connect.CodePermissionDenied},
	{sched.EUNAUTHENTICATED, connect.CodeUnauthenticated},
	{sched.ERESOURCEEXHAUSTED, connect.CodeResourceExhausted},
	{sched.EUNAVAILABLE, connect.CodeUnavailable},
	{sched.EINTERNAL, connect.CodeInternal},
}

// ConnectCode returns the Connect code for a sched error code, and
// CodeInternal for a code it does not know.
func ConnectCode(code string) connect.Code {
	for _, c := range codes {
		if c.sched == code {
			return c.connect
		}
	}
	return connect.CodeInternal
}

// SchedCode returns the sched error code for a Connect code. Codes that mean
// "the server could not be reached or did not answer in time" map to
// EUNAVAILABLE; a code with no entry maps to EINTERNAL.
func SchedCode(code connect.Code) string {
	switch code {
	case connect.CodeDeadlineExceeded, connect.CodeAborted:
		return sched.EUNAVAILABLE
	case connect.CodeOutOfRange:
		return sched.EINVALID
	}
	for _, c := range codes {
		if c.connect == code {
			return c.sched
		}
	}
	return sched.EINTERNAL
}

// fromConnect turns an error from a generated client into a *sched.Error
// with the server's message, so callers switch on sched.ErrorCode. A nil
// error stays nil; a context cancellation by the caller is returned as is.
func fromConnect(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	var ce *connect.Error
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) {
		msg := err.Error()
		if errors.As(err, &ce) {
			msg = ce.Message()
		}
		return &sched.Error{Code: sched.EUNAVAILABLE, Message: "server unavailable: " + msg}
	}
	if errors.As(err, &ce) {
		code := SchedCode(ce.Code())
		msg := ce.Message()
		if code == sched.EUNAVAILABLE && msg != "" {
			msg = "server unavailable: " + msg
		}
		if msg == "" {
			msg = ce.Code().String()
		}
		return &sched.Error{Code: code, Message: msg}
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return &sched.Error{Code: sched.EUNAVAILABLE, Message: "server unavailable: " + err.Error()}
	}
	return err
}

// retryable reports whether a failed call may be sent again: the server was
// unreachable or went away before answering.
func retryable(err error) bool {
	return sched.ErrorCode(err) == sched.EUNAVAILABLE
}
