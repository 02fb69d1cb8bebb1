package server

import (
	"fmt"
	"path/filepath"
	"strings"

	"batchd/sched"
	"batchd/store"
)

// taskDirs decides which working directories (TaskSpec.Dir, batchctl
// disclose --dir) a task may ask for. A task's directory must be
// absolute (batchctl makes a relative --dir absolute on the user's side);
// it must not be the server's data directory or under it (the database,
// the admin token and the local slots' state live there); and when the
// server has allowed roots (Config.TaskDirs, batchd serve --task-dirs), it
// must be one of them or under one. Paths are compared as written
// (cleaned) and, where they exist on the server's machine, with their
// symbolic links resolved, so that a link into the data directory is
// refused too. A remote worker's own state directory is its to refuse.
type taskDirs struct {
	deny  []string // cleaned, absolute, links resolved where they exist
	allow []string // empty: anywhere not denied
}

// newTaskDirs builds the rules from the data directory and the allowed
// roots (each absolute).
func newTaskDirs(dataDir string, allow []string) (taskDirs, error) {
	var d taskDirs
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return d, fmt.Errorf("data directory: %w", err)
	}
	d.deny = withResolved(nil, abs)
	for _, a := range allow {
		if !filepath.IsAbs(a) {
			return d, fmt.Errorf("task directory root %q is not absolute", a)
		}
		d.allow = withResolved(d.allow, filepath.Clean(a))
	}
	return d, nil
}

// withResolved appends p and, when it differs, p with its links resolved.
func withResolved(to []string, p string) []string {
	to = append(to, p)
	if r, err := filepath.EvalSymlinks(p); err == nil && r != p {
		to = append(to, r)
	}
	return to
}

// under reports whether p is root or inside it.
func under(p, root string) bool {
	if p == root || root == "/" {
		return true
	}
	return strings.HasPrefix(p, root+string(filepath.Separator))
}

// check refuses task i's dir (EINVALID) when it is relative, in the data
// directory or outside the allowed roots. "" (a scratch directory per
// copy) is always allowed.
func (d taskDirs) check(i int, dir string) error {
	if dir == "" {
		return nil
	}
	if !filepath.IsAbs(dir) {
		return sched.Errorf(sched.EINVALID, "task %d: --dir must be absolute, not %q (batchctl makes a relative --dir absolute)", i, dir)
	}
	paths := withResolved(nil, filepath.Clean(dir))
	for _, p := range paths {
		for _, deny := range d.deny {
			if under(p, deny) {
				return sched.Errorf(sched.EINVALID, "task %d: --dir %s is in the server's data directory, where no task may run", i, dir)
			}
		}
	}
	if len(d.allow) == 0 {
		return nil
	}
	for _, p := range paths {
		ok := false
		for _, a := range d.allow {
			ok = ok || under(p, a)
		}
		if !ok {
			return sched.Errorf(sched.EINVALID, "task %d: --dir %s is outside the directories tasks may use (%s)", i, dir, strings.Join(d.allow, ", "))
		}
	}
	return nil
}

// checkSpecs checks the dirs of specs and of arr's spec, each distinct
// dir once.
func (d taskDirs) checkSpecs(specs []sched.TaskSpec, arr *store.TaskArray) error {
	seen := map[string]bool{"": true}
	for i, s := range specs {
		if !seen[s.Dir] {
			if err := d.check(i, s.Dir); err != nil {
				return err
			}
			seen[s.Dir] = true
		}
	}
	if arr != nil {
		if err := d.check(0, arr.Spec.Dir); err != nil {
			return sched.Errorf(sched.EINVALID, "array: %s", sched.ErrorMessage(err))
		}
	}
	return nil
}
