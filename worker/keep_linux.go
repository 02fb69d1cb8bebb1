package worker

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"

	batchv1 "batchd/proto/batch/v1"
	"batchd/sched"
)

// The worker often runs as root and reads what a task, running as another
// uid, left behind: the task may have planted symlinks (to a token), hard
// links to other users' files, FIFOs (an open that never returns), sparse
// files of a terabyte, or directories named like the pattern. So every path
// is walked one component at a time from a descriptor of the scratch
// directory, each component opened with O_NOFOLLOW (a symlink anywhere on
// the way is refused, never followed; names come from the pattern, checked
// at disclose to hold no "..", or from the directory's own listing), files
// with O_NONBLOCK (a FIFO opens at once and is then refused as one), the
// type and owner checked on the open descriptor (fstat, so nothing can be
// swapped in between), and the content read with the cap enforced while
// reading, whatever the size said.

// openFlags open a matched entry without following it and without
// blocking: a symlink fails with ELOOP, a socket with ENXIO, a FIFO opens.
const openFlags = syscall.O_RDONLY | syscall.O_NOFOLLOW | syscall.O_NONBLOCK | syscall.O_NOCTTY | syscall.O_CLOEXEC

// collectKept expands the copy's keep patterns in its scratch directory
// and reads the regular files they match, in path order, under r. Every
// match comes back: kept with its content, or with the reason it was not.
func collectKept(scratch string, patterns []string, r keepRules) []*batchv1.KeptFileContent {
	root, err := syscall.Open(scratch, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		var out []*batchv1.KeptFileContent
		for _, p := range patterns {
			out = append(out, &batchv1.KeptFileContent{File: &batchv1.KeptFile{Path: p, NotKept: "scratch directory unreadable: " + err.Error()}})
		}
		return out
	}
	defer syscall.Close(root)
	w := &keepWalk{found: map[string]keepFound{}, budget: keepScanBudget}
	matched := map[string]bool{}
	for _, p := range patterns {
		if w.over != "" {
			break
		}
		matched[p] = w.expand(root, "", strings.Split(p, "/"), p) > 0
	}
	if w.over != "" {
		// The patterns after the one that hit the limit were not looked
		// at: the last entry says so, not "nothing matched".
		for _, p := range patterns {
			matched[p] = true
		}
	}
	var out []*batchv1.KeptFileContent
	room := r.cap
	for _, f := range w.sorted() {
		e := &batchv1.KeptFile{Path: f.path, Size: f.size, Mode: f.mode, NotKept: f.notKept}
		var content []byte
		if e.NotKept == "" {
			content, e.NotKept = readKept(root, f.path, room, r, e)
			room -= int64(len(content))
		}
		out = append(out, &batchv1.KeptFileContent{File: e, Content: content})
	}
	return keepResult(out, w, patterns, matched)
}

// expand adds the matches of pattern components comps under directory dir
// (at path prefix) to w and returns how many it added or found again.
func (w *keepWalk) expand(dir int, prefix string, comps []string, pattern string) int {
	c, last := comps[0], len(comps) == 1
	names := []string{c}
	if hasMeta(c) {
		names = w.list(dir, c, pattern)
	}
	n := 0
	for _, name := range names {
		rel := name
		if prefix != "" {
			rel = prefix + "/" + name
		}
		if len(rel) > sched.MaxKeptPathBytes {
			w.over = pattern
			w.overWhy = fmt.Sprintf("a path longer than %d bytes matched: it and the rest are not kept", sched.MaxKeptPathBytes)
			return n
		}
		var (
			found keepFound
			walk  = -1 // a directory to descend into
		)
		fd, err := syscall.Openat(dir, name, openFlags, 0)
		opened := err == nil
		var st syscall.Stat_t
		if opened {
			err = syscall.Fstat(fd, &st)
		}
		switch {
		case errors.Is(err, syscall.ENOENT) || (err != nil && !last && hasMeta(c)):
			// Not there (a name from the pattern), or gone since it was
			// listed; or not a directory a glob could mean.
		case errors.Is(err, syscall.ELOOP):
			found = keepFound{path: rel, notKept: "a symlink: only regular files are kept, and no link is followed"}
		case errors.Is(err, syscall.ENXIO):
			found = keepFound{path: rel, notKept: "a socket: only regular files are kept"}
		case err != nil:
			found = keepFound{path: rel, notKept: "cannot open: " + err.Error()}
		case !last && st.Mode&syscall.S_IFMT == syscall.S_IFDIR:
			walk = fd
		case !last && hasMeta(c):
			// A file where the glob wants a directory: not a match.
		case !last:
			found = keepFound{path: rel, notKept: "not a directory, but the pattern goes on below it"}
		default:
			found = entryFound(rel, &st)
		}
		if opened && fd != walk {
			syscall.Close(fd)
		}
		if walk >= 0 {
			n += w.expand(walk, rel, comps[1:], pattern)
			syscall.Close(walk)
		} else if found.path != "" {
			n++
			if !w.add(found) {
				w.over = pattern
				w.overWhy = fmt.Sprintf("more files matched than one result lists (%d): the rest are not kept", len(w.found))
			}
		}
		if w.over != "" {
			return n
		}
	}
	return n
}

// entryFound classifies a matched entry from its fstat.
func entryFound(rel string, st *syscall.Stat_t) keepFound {
	f := keepFound{path: rel, size: st.Size, mode: st.Mode & 0o7777}
	switch st.Mode & syscall.S_IFMT {
	case syscall.S_IFREG:
	case syscall.S_IFDIR:
		f.notKept = "a directory: keep its files with a pattern such as '" + rel + "/*'"
		f.size = 0
	case syscall.S_IFIFO:
		f.notKept = "a FIFO: only regular files are kept"
	default:
		f.notKept = "not a regular file: only regular files are kept"
	}
	return f
}

// list returns the names in dir that match glob c, in the order the
// directory gives them, taking them from w's scan budget.
func (w *keepWalk) list(dir int, c, pattern string) []string {
	// A descriptor of its own: reading the listing moves the offset.
	fd, err := syscall.Openat(dir, ".", syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer syscall.Close(fd)
	var names []string
	buf := make([]byte, 8<<10)
	for {
		n, err := syscall.ReadDirent(fd, buf)
		if err != nil || n <= 0 {
			return names
		}
		var batch []string
		_, _, batch = syscall.ParseDirent(buf[:n], -1, batch)
		for _, name := range batch {
			if w.budget <= 0 {
				w.over = pattern
				w.overWhy = fmt.Sprintf("the directories looked at hold more than %d entries: the rest are not kept", keepScanBudget)
				return names
			}
			w.budget--
			if keepMatch(c, name) {
				names = append(names, name)
			}
		}
	}
}

// readKept opens rel under root again, component by component without
// following links, checks that it is a regular file the task may hand
// over, and reads at most room bytes of it. It returns the content, or
// the reason it is not kept; e gets the size and mode seen on the open
// descriptor.
func readKept(root int, rel string, room int64, r keepRules, e *batchv1.KeptFile) ([]byte, string) {
	dir := root
	comps := strings.Split(rel, "/")
	for _, c := range comps[:len(comps)-1] {
		fd, err := syscall.Openat(dir, c, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
		if dir != root {
			syscall.Close(dir)
		}
		if err != nil {
			return nil, "changed while it was collected: " + err.Error()
		}
		dir = fd
	}
	fd, err := syscall.Openat(dir, comps[len(comps)-1], openFlags, 0)
	if dir != root {
		syscall.Close(dir)
	}
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, "a symlink: only regular files are kept, and no link is followed"
		}
		return nil, "changed while it was collected: " + err.Error()
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil, "cannot stat: " + err.Error()
	}
	e.Size, e.Mode = st.Size, st.Mode&0o7777
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return nil, entryFound(rel, &st).notKept
	}
	if r.uid >= 0 && int(st.Uid) != r.uid {
		return nil, fmt.Sprintf("owned by uid %d, not by the task (uid %d): only files the task made are kept", st.Uid, r.uid)
	}
	if r.uid < 0 && st.Nlink != 1 {
		return nil, fmt.Sprintf("has %d hard links: only files the task made are kept, not links to files elsewhere", st.Nlink)
	}
	if st.Size > room {
		return nil, capMessage(st.Size, room, r.cap)
	}
	// The size can change under the read (a process that escaped the
	// copy's group): read one byte past the room to see it.
	b, err := io.ReadAll(io.LimitReader(f, room+1))
	if err != nil {
		return nil, "read failed: " + err.Error()
	}
	if int64(len(b)) > room {
		return nil, capMessage(int64(len(b)), room, r.cap)
	}
	e.Size = int64(len(b))
	return b, ""
}

// lockScratch gives a copy's scratch directory to the worker (its uid,
// mode 0700) before the copy's uid goes to another copy, so that the
// other copy cannot plant files in it while it is collected.
func lockScratch(dir string) error {
	if err := os.Chown(dir, os.Getuid(), os.Getgid()); err != nil {
		return err
	}
	return os.Chmod(dir, 0o700)
}
