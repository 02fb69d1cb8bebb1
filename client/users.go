package client

// FromConnect maps an error of a generated Connect client (for example the
// UserService's) to a *sched.Error with the matching code, as every Client
// method does; nil stays nil.
func FromConnect(err error) error { return fromConnect(err) }
