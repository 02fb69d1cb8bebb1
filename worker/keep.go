// Kept files: the files a copy leaves in its scratch directory that match
// its task's keep patterns, collected once the copy has ended and sent
// with its result.

package worker

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"unicode/utf8"

	batchv1 "batchd/proto/batch/v1"
	"batchd/sched"
)

// defaultKeepCap is the most bytes of kept files per copy until the server
// says otherwise (RegisterResponse.keep_cap_bytes).
const defaultKeepCap = 16 << 20

// keepScanBudget bounds the directory entries one copy's patterns may make
// the worker look at: a task that leaves millions of files in a directory
// a pattern names costs the worker a bounded listing, not a stall.
const keepScanBudget = 100_000

// keepRules says which files of a copy may be kept.
type keepRules struct {
	// cap is the most bytes kept, all files together.
	cap int64
	// uid is the uid the copy ran as, when it is not the worker's own:
	// only files it owns are kept. -1: the copy ran as the worker's uid;
	// then only files with one link are kept (a hard link to a file
	// elsewhere is refused).
	uid int
}

// keepFound is one match of a pattern before it is read.
type keepFound struct {
	path    string // relative, "/"-separated
	notKept string // already refused (not a regular file, a symlink, ...)
	size    int64
	mode    uint32
}

// keepWalk is one copy's pattern expansion: the matches found so far, by
// path, and the directory entries it may still look at.
type keepWalk struct {
	found  map[string]keepFound
	budget int
	// listBytes counts the list's bytes (sched.MaxKeptListBytes; room is
	// left for the entries keepResult adds).
	listBytes int
	// over: more than sched.MaxKeptFiles matched, or the scan budget ran
	// out; the pattern that hit it.
	over, overWhy string
}

// add records a match (the first word on a path wins: a path two patterns
// match is listed once).
func (w *keepWalk) add(f keepFound) bool {
	if !utf8.ValidString(f.path) {
		// The report's strings must be UTF-8: name it as well as it can be.
		f = keepFound{path: strings.ToValidUTF8(f.path, "?"), notKept: "the name is not valid UTF-8: rename it to keep it"}
	}
	if _, ok := w.found[f.path]; ok {
		return true
	}
	n := sched.KeptListBytes(sched.KeptFile{Path: f.path, NotKept: f.notKept})
	if len(w.found) >= sched.MaxKeptFiles || w.listBytes+n > sched.MaxKeptListBytes-64<<10 {
		return false
	}
	w.found[f.path] = f
	w.listBytes += n
	return true
}

// sorted returns the matches in path order.
func (w *keepWalk) sorted() []keepFound {
	out := make([]keepFound, 0, len(w.found))
	for _, f := range w.found {
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b keepFound) int { return strings.Compare(a.path, b.path) })
	return out
}

// keepResult turns the files read into the report's entries, in path
// order, with a last entry for what was left out when too much matched,
// and one per pattern that matched nothing (so that a task that wrote its
// file elsewhere learns it from its result, not from a missing file).
func keepResult(files []*batchv1.KeptFileContent, w *keepWalk, patterns []string, matched map[string]bool) []*batchv1.KeptFileContent {
	for _, p := range patterns {
		if !matched[p] {
			files = append(files, &batchv1.KeptFileContent{File: &batchv1.KeptFile{Path: p,
				NotKept: "nothing matched this pattern in the task's scratch directory"}})
		}
	}
	if w.over != "" {
		files = append(files, &batchv1.KeptFileContent{File: &batchv1.KeptFile{Path: w.over, NotKept: w.overWhy}})
	}
	return files
}

// keepMatch reports whether name matches one pattern component (patterns
// are checked at disclose, so a bad one matches nothing).
func keepMatch(pattern, name string) bool {
	ok, err := path.Match(pattern, name)
	return err == nil && ok
}

// hasMeta reports whether a pattern component is a glob rather than a
// name.
func hasMeta(c string) bool { return strings.ContainsAny(c, `*?[\`) }

// capMessage says why a file over the cap is not kept.
func capMessage(size, room, limit int64) string {
	if size > limit {
		return fmt.Sprintf("%d bytes: bigger than the %s kept per task (batchd serve --keep-max-task)", size, sizeText(limit))
	}
	return fmt.Sprintf("%d bytes: over the %s kept per task, %s of it taken by the files before it", size, sizeText(limit), sizeText(limit-room))
}

// sizeText formats n bytes for a person: B, KiB, MiB or GiB.
func sizeText(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}
