package sched

import (
	"path"
	"strings"
)

// Limits of TaskSpec.Keep.
const (
	// MaxKeepPatterns is the most keep patterns a task may give.
	MaxKeepPatterns = 32
	// MaxKeepPatternBytes is the longest keep pattern.
	MaxKeepPatternBytes = 256
	// MaxKeptFiles is the most files one copy's patterns may match; the
	// rest are listed once, as not kept.
	MaxKeptFiles = 1000
	// MaxKeptPathBytes is the longest path of a kept file (PATH_MAX).
	MaxKeptPathBytes = 4096
	// MaxKeptListBytes bounds the list of one copy's kept files, paths and
	// reasons together, without contents (KeptListBytes counts an entry).
	MaxKeptListBytes = 1 << 20
)

// KeptListBytes is what one entry counts against MaxKeptListBytes.
func KeptListBytes(f KeptFile) int { return len(f.Path) + len(f.NotKept) + 64 }

// KeptFile is a file an attempt left that matched its keep patterns.
type KeptFile struct {
	// Path is relative to the copy's scratch directory, "/"-separated.
	Path string
	Size int64
	// Mode holds the permission bits (0644, 0755, ...).
	Mode uint32
	// NotKept says why the file was not kept; "" when it was.
	NotKept string
}

// Kept reports whether the file's content was kept.
func (f KeptFile) Kept() bool { return f.NotKept == "" }

// CheckKeepPattern checks one keep pattern: a glob (path.Match syntax)
// relative to the copy's scratch directory. EINVALID when it is empty,
// absolute, names "." or "..", has an empty component ("a//b") or a NUL
// byte, uses "**", is longer than MaxKeepPatternBytes, or is not a valid
// pattern.
func CheckKeepPattern(p string) error {
	switch {
	case p == "":
		return Errorf(EINVALID, "keep pattern is empty: give a file name or a glob such as 'out/*.csv'")
	case len(p) > MaxKeepPatternBytes:
		return Errorf(EINVALID, "keep pattern %.40q... is %d bytes; the limit is %d", p, len(p), MaxKeepPatternBytes)
	case strings.IndexByte(p, 0) >= 0:
		return Errorf(EINVALID, "keep pattern %q holds a NUL byte", p)
	case strings.HasPrefix(p, "/"):
		return Errorf(EINVALID, "keep pattern %q is absolute: patterns are relative to the task's scratch directory", p)
	}
	for _, c := range strings.Split(p, "/") {
		switch {
		case c == "":
			return Errorf(EINVALID, "keep pattern %q has an empty path component", p)
		case c == "." || c == "..":
			return Errorf(EINVALID, "keep pattern %q names %q: patterns stay inside the task's scratch directory", p, c)
		case strings.Contains(c, "**"):
			return Errorf(EINVALID, "keep pattern %q: ** is not supported; give one pattern per directory level (e.g. 'out/*/*.csv')", p)
		}
		if _, err := path.Match(c, ""); err != nil {
			return Errorf(EINVALID, "keep pattern %q is not a valid glob: %v", p, err)
		}
	}
	return nil
}

// CheckKeep checks a task's keep patterns (CheckKeepPattern each, at most
// MaxKeepPatterns).
func CheckKeep(patterns []string) error {
	if len(patterns) > MaxKeepPatterns {
		return Errorf(EINVALID, "%d keep patterns; the limit is %d: keep a directory's files with one glob", len(patterns), MaxKeepPatterns)
	}
	for _, p := range patterns {
		if err := CheckKeepPattern(p); err != nil {
			return err
		}
	}
	return nil
}

// ValidKeptPath reports whether p may name a kept file: relative,
// "/"-separated, no empty, "." or ".." component, no NUL, at most
// MaxKeptPathBytes. A client writes kept files under a directory of its
// choosing by this path, so a path that is not valid must never be
// written.
func ValidKeptPath(p string) bool {
	if p == "" || len(p) > MaxKeptPathBytes || strings.IndexByte(p, 0) >= 0 || strings.HasPrefix(p, "/") {
		return false
	}
	for _, c := range strings.Split(p, "/") {
		if c == "" || c == "." || c == ".." {
			return false
		}
	}
	return true
}
