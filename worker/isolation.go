// How copies are kept from the worker, the server and each other: the
// isolation mechanism, the copies' environment and the per-copy users.

package worker

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Isolation names how a worker keeps a task from the worker, the server
// and other users' tasks (RegisterRequest.isolation).
type Isolation string

const (
	// IsolationAuto picks the strongest mechanism this process can use:
	// IsolationUID when it runs as root, else IsolationNamespaces when the
	// kernel lets it create user namespaces, else IsolationNone.
	IsolationAuto Isolation = "auto"
	// IsolationUID runs each slot's copies as its own unprivileged uid
	// and gid (Config.SlotUIDs), with no supplementary group, in a scratch
	// directory that uid alone may enter. Needs root.
	IsolationUID Isolation = "uid"
	// IsolationOwnerUID runs copies as the Unix user named like the batchd
	// user who owns the task; a copy whose owner has no such account fails
	// to start. Needs root.
	IsolationOwnerUID Isolation = "owner-uid"
	// IsolationNamespaces runs each copy in new user, mount and PID
	// namespaces (package nsinit): the data directory, the worker's state
	// and the other copies' scratch directories are hidden under empty
	// tmpfs, /proc shows the copy's own processes only, and the rest of
	// the file system is read-only. Needs no privilege.
	IsolationNamespaces Isolation = "namespaces"
	// IsolationNone runs copies as the worker's own user, seeing what it
	// sees: such a worker is bound to one batchd user (Config.BoundUser).
	IsolationNone Isolation = "none"
)

// ParseIsolation reads a --isolation value ("" is auto).
func ParseIsolation(s string) (Isolation, error) {
	switch i := Isolation(s); i {
	case "":
		return IsolationAuto, nil
	case IsolationAuto, IsolationUID, IsolationOwnerUID, IsolationNamespaces, IsolationNone:
		return i, nil
	}
	return "", fmt.Errorf("isolation %q: give auto, uid, owner-uid, namespaces or none", s)
}

// UIDRange is a range of uids (and the gids of the same numbers) that a
// root worker runs its slots' copies as, one uid per running copy. The
// numbers need no /etc/passwd entry: the kernel checks numbers only.
type UIDRange struct {
	First, Count int
}

// DefaultSlotUIDs is the default UIDRange: 60000-60999, inside what
// Debian's adduser leaves to local use and away from dynamic system
// users.
var DefaultSlotUIDs = UIDRange{First: 60000, Count: 1000}

// ParseUIDRange reads FIRST-LAST (inclusive) or a single uid.
func ParseUIDRange(s string) (UIDRange, error) {
	a, b, isRange := strings.Cut(strings.TrimSpace(s), "-")
	first, err := strconv.Atoi(a)
	last := first
	if err == nil && isRange {
		last, err = strconv.Atoi(b)
	}
	if err != nil || first <= 0 || last < first {
		return UIDRange{}, fmt.Errorf("uid range %q: give FIRST-LAST, e.g. 60000-60999 (uid 0 is never one)", s)
	}
	return UIDRange{First: first, Count: last - first + 1}, nil
}

// String writes the range as ParseUIDRange reads it.
func (r UIDRange) String() string {
	return strconv.Itoa(r.First) + "-" + strconv.Itoa(r.First+r.Count-1)
}

// DefaultMaxProcs is the default per-copy process limit (Config.MaxProcs).
const DefaultMaxProcs = 4096

// envAllowed are the variables of the worker's own environment that copies
// get (besides the ones the worker sets): where programs are and how to
// write dates and text. Nothing else of the worker's or the server's
// environment reaches a task.
var envAllowed = []string{"PATH", "LANG", "LANGUAGE", "TZ", "TERM"}

// defaultPath is the PATH of copies when the worker has none.
const defaultPath = "/usr/local/bin:/usr/bin:/bin"

// secretEnv names the variables that hold tokens (client.WorkerTokenEnv
// and client.TokenEnv): never passed to a copy, even when Config.Env
// names them, since with the worker token a task could report, lose or
// forge every copy of its worker, whoever owns them.
var secretEnv = []string{"BATCH_WORKER_TOKEN", "BATCH_TOKEN"}

// baseEnv is what every copy's environment starts from: the allow-listed
// variables of inherited (the worker's environment), then extra
// (Config.Env) without the secretEnv variables.
func baseEnv(inherited, extra []string) []string {
	var out []string
	havePath := false
	for _, kv := range inherited {
		k, _, _ := strings.Cut(kv, "=")
		if slices.Contains(envAllowed, k) || strings.HasPrefix(k, "LC_") {
			out = append(out, kv)
			havePath = havePath || k == "PATH"
		}
	}
	if !havePath {
		out = append(out, "PATH="+defaultPath)
	}
	for _, kv := range extra {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(secretEnv, k) {
			out = append(out, kv)
		}
	}
	return out
}

// errIsolation marks a mechanism that cannot work here.
var errIsolation = errors.New("isolation unavailable")

// ChooseIsolation resolves want (auto or a named mechanism) against what
// this process can do, as Run does: a mechanism that cannot work here is
// an error. why says, for people, why auto chose what it did.
func ChooseIsolation(want Isolation) (got Isolation, why string, err error) {
	return chooseIsolation(want)
}

// chooseIsolation is ChooseIsolation.
func chooseIsolation(want Isolation) (got Isolation, why string, err error) {
	root := os.Geteuid() == 0
	switch want {
	case IsolationUID, IsolationOwnerUID:
		if !root {
			return "", "", fmt.Errorf("worker: isolation %s needs the worker to run as root (it switches to other uids): %w", want, errIsolation)
		}
		return want, "asked for", nil
	case IsolationNamespaces:
		if err := probeNamespaces(); err != nil {
			return "", "", fmt.Errorf("worker: isolation namespaces: %v: %w", err, errIsolation)
		}
		return want, "asked for", nil
	case IsolationNone:
		return want, "asked for", nil
	}
	if root {
		return IsolationUID, "running as root", nil
	}
	if err := probeNamespaces(); err != nil {
		return IsolationNone, "not root, and no user namespaces: " + err.Error(), nil
	}
	return IsolationNamespaces, "not root; user namespaces work", nil
}
