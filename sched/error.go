package sched

import (
	"errors"
	"fmt"
)

// Error codes shared by every layer. store produces them, server maps them to
// Connect codes, client maps Connect codes back, and batchctl picks its exit
// status from them.
const (
	ECONFLICT           = "conflict"
	EFAILEDPRECONDITION = "failed_precondition"
	EINTERNAL           = "internal"
	EINVALID            = "invalid"
	ENOTFOUND           = "not_found"
	EPERMISSION         = "permission"
	EUNAUTHENTICATED    = "unauthenticated"
	ERESOURCEEXHAUSTED  = "resource_exhausted"
	EUNAVAILABLE        = "unavailable"
)

// Error is an error with a code and a message that is safe to show a person.
type Error struct {
	Code    string
	Message string
}

// Error implements the error interface.
func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// Errorf returns an *Error with the code and a formatted message.
func Errorf(code string, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the first *Error in err's chain, EINTERNAL for
// any other non-nil error, and "" for nil.
func ErrorCode(err error) string {
	var e *Error
	if err == nil {
		return ""
	} else if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the message of the first *Error in err's chain, and a
// generic text for any other error (its details are for the log only).
func ErrorMessage(err error) string {
	var e *Error
	if err == nil {
		return ""
	} else if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
}

// CheckNamedOrAll checks that a Request, Cancel or Retry names its tasks
// (n indexes) or sets all, and not both: an empty list never means the
// whole set, which a client that sent an empty list by mistake would be
// billed for.
func CheckNamedOrAll(n int, all bool) error {
	switch {
	case n > 0 && all:
		return Errorf(EINVALID, "name tasks or set all, not both")
	case n == 0 && !all:
		return Errorf(EINVALID, "no tasks named: name them in indexes, or set all for every task of the set")
	}
	return nil
}
