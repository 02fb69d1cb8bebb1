package sched

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// This file holds stop rules: a set's rule that ends the set early, the
// moment one of its tasks ends in a way the rule names (the papers'
// "first result decides", without a round trip through the user). The
// rule is a domain record the store, server, client and simulator share;
// Check is the one place that decides whether a result fires it, and
// EventStopped (stop.go) is the scheduler's side of a fired rule.

// StopRule is a set's stop rule. A task result fires it when any part
// that is set holds; the rule fires at most once per set.
type StopRule struct {
	// OnSuccess fires on a task that exits 0 (without timing out).
	OnSuccess bool
	// OnExit fires on a task that exits with one of these codes (0 to
	// 255, without timing out), sorted.
	OnExit []int32
	// OnOutput fires on a task whose stdout matches this regular
	// expression (Go syntax), scanning its first StopScanBytes bytes.
	OnOutput string
	// After fires on the set's After-th successful task (0: off).
	After int32
}

// StopScanBytes bounds the part of a task's stdout a stop rule's
// OnOutput reads: a task that writes gigabytes costs the finish no more
// than this (Go's regexp runs in time linear in its input).
const StopScanBytes = 1 << 20

// MaxStopPattern bounds the length of StopRule.OnOutput.
const MaxStopPattern = 1024

// MaxStopAfter bounds StopRule.After.
const MaxStopAfter = 1 << 24

// IsZero reports whether the rule has no part set (no rule).
func (r StopRule) IsZero() bool {
	return !r.OnSuccess && len(r.OnExit) == 0 && r.OnOutput == "" && r.After == 0
}

// Validate checks the rule's parts. Errors: EINVALID naming the bad part.
func (r StopRule) Validate() error {
	for _, c := range r.OnExit {
		if c < 0 || c > 255 {
			return Errorf(EINVALID, "stop-on-exit %d: give exit codes 0 to 255", c)
		}
	}
	if r.After < 0 || r.After > MaxStopAfter {
		return Errorf(EINVALID, "stop-after %d: give a count of successes from 1 to %d", r.After, MaxStopAfter)
	}
	if len(r.OnOutput) > MaxStopPattern {
		return Errorf(EINVALID, "stop-on-output: the expression has %d bytes; the limit is %d", len(r.OnOutput), MaxStopPattern)
	}
	if r.OnOutput != "" {
		if _, err := regexp.Compile(r.OnOutput); err != nil {
			return Errorf(EINVALID, "stop-on-output %q is not a regular expression: %v", r.OnOutput, err)
		}
	}
	return nil
}

// ParseStopOnExit reads a comma-separated list of exit codes (0 to 255).
// Errors: EINVALID naming the bad item.
func ParseStopOnExit(s string) ([]int32, error) {
	var out []int32
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 || n > 255 {
			return nil, Errorf(EINVALID, "stop-on-exit %q: give exit codes 0 to 255, separated by commas", f)
		}
		if !slices.Contains(out, int32(n)) {
			out = append(out, int32(n))
		}
	}
	if len(out) == 0 {
		return nil, Errorf(EINVALID, "stop-on-exit: give at least one exit code")
	}
	slices.Sort(out)
	return out, nil
}

// ExitCodes is OnExit in ParseStopOnExit's form ("" when none).
func (r StopRule) ExitCodes() string {
	parts := make([]string, len(r.OnExit))
	for i, c := range r.OnExit {
		parts[i] = strconv.Itoa(int(c))
	}
	return strings.Join(parts, ",")
}

// String is the rule in words, as batchctl's flags spell it ("" when
// none).
func (r StopRule) String() string {
	var parts []string
	if r.OnSuccess {
		parts = append(parts, "on success")
	}
	if len(r.OnExit) > 0 {
		parts = append(parts, "on exit "+r.ExitCodes())
	}
	if r.OnOutput != "" {
		parts = append(parts, "on output "+strconv.Quote(r.OnOutput))
	}
	if r.After > 0 {
		parts = append(parts, "after "+strconv.Itoa(int(r.After))+" successes")
	}
	return strings.Join(parts, ", ")
}

// StopResult is what a stop rule looks at in one task's result.
type StopResult struct {
	ExitCode int32
	TimedOut bool
	// Stdout is the task's stdout (only its first StopScanBytes are read).
	Stdout []byte
	// Successes counts the set's successful results so far, this one
	// included when it is a success.
	Successes int64
}

// Success reports whether a result counts as a success: exit 0, in time.
func (r StopResult) Success() bool { return r.ExitCode == 0 && !r.TimedOut }

// Check says whether result res fires rule r, and why, in words ("exit
// 0", "output matched", "3 successes"). The rule's expression is compiled
// once per process (a shared cache) and must be valid (Validate); an
// invalid one never matches.
func (r StopRule) Check(res StopResult) (why string, fires bool) {
	switch {
	case r.OnSuccess && res.Success():
		return "exit 0", true
	case !res.TimedOut && slices.Contains(r.OnExit, res.ExitCode):
		return "exit " + strconv.Itoa(int(res.ExitCode)), true
	case r.After > 0 && res.Success() && res.Successes >= int64(r.After):
		return strconv.FormatInt(res.Successes, 10) + " successes", true
	}
	if r.OnOutput != "" {
		out := res.Stdout
		if len(out) > StopScanBytes {
			out = out[:StopScanBytes]
		}
		if re := stopRegexp(r.OnOutput); re != nil && re.Match(out) {
			return "output matched", true
		}
	}
	return "", false
}

// stopRegexps caches compiled stop expressions: each is compiled once,
// not once per finished task. Patterns are bounded (MaxStopPattern), and
// the cache holds at most maxStopRegexps of them.
var stopRegexps struct {
	sync.Mutex
	m map[string]*regexp.Regexp
}

const maxStopRegexps = 4096

// stopRegexp returns pattern compiled, nil when it does not compile.
func stopRegexp(pattern string) *regexp.Regexp {
	stopRegexps.Lock()
	defer stopRegexps.Unlock()
	if re, ok := stopRegexps.m[pattern]; ok {
		return re
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		re = nil
	}
	if stopRegexps.m == nil || len(stopRegexps.m) >= maxStopRegexps {
		stopRegexps.m = make(map[string]*regexp.Regexp)
	}
	stopRegexps.m[pattern] = re
	return re
}

// StopFired says which task fired a set's stop rule, when and why.
type StopFired struct {
	// Task is the task whose result fired the rule, Attempt its attempt.
	Task    TaskRef
	Attempt int32
	// At is when it fired.
	At time.Time
	// Why is Check's answer ("exit 0", "output matched", "3 successes").
	Why string
	// Canceled counts the tasks the rule canceled.
	Canceled int64
}
