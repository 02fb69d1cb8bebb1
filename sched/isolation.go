package sched

// This file is task isolation as the scheduler sees it: which users'
// tasks a worker may run. A worker that isolates tasks (each slot its own
// uid, the task owner's own uid, or user, mount and PID namespaces) runs
// anyone's; a worker that does not runs only the tasks of its bound user,
// because a task there can read the worker's state, its token and the
// other copies' files. The server refuses a worker with neither unless it
// was started to share unisolated workers; such a worker is unbound here.

// The isolation mechanisms a worker may report.
const (
	// IsolationUID: each slot runs copies as its own unprivileged uid.
	IsolationUID = "uid"
	// IsolationOwnerUID: copies run as the Unix user named like the task's
	// owner.
	IsolationOwnerUID = "owner-uid"
	// IsolationNamespaces: copies run in unprivileged user, mount and PID
	// namespaces.
	IsolationNamespaces = "namespaces"
	// IsolationNone: copies run as the worker's own user, beside it.
	IsolationNone = "none"
)

// Isolations lists the mechanisms, strongest first.
var Isolations = []string{IsolationUID, IsolationOwnerUID, IsolationNamespaces, IsolationNone}

// NormalIsolation returns the mechanism a worker's report names: empty is
// IsolationNone; an unknown name is returned as it is (ValidIsolation
// refuses it).
func NormalIsolation(mech string) string {
	if mech == "" {
		return IsolationNone
	}
	return mech
}

// ValidIsolation reports whether mech is one of Isolations (or empty).
func ValidIsolation(mech string) bool {
	switch NormalIsolation(mech) {
	case IsolationUID, IsolationOwnerUID, IsolationNamespaces, IsolationNone:
		return true
	}
	return false
}

// Isolated reports whether mech keeps a task from the worker and from
// other users' tasks, so that the worker may run anyone's tasks.
func Isolated(mech string) bool {
	switch mech {
	case IsolationUID, IsolationOwnerUID, IsolationNamespaces:
		return true
	}
	return false
}
