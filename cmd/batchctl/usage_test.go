package main

import (
	"strings"
	"testing"
)

// TestHelpCommandAndOneLineUsageErrors: `batchctl help [COMMAND]` shows the
// help; a mistyped flag gives one line naming it, a suggestion and where
// the flags are listed, not the whole help.
func TestHelpCommandAndOneLineUsageErrors(t *testing.T) {
	e := newEnv(t, 0)
	if out, errOut, code := e.run("help"); code != 0 || !strings.Contains(out, "batchctl talks to a batchd server") {
		t.Errorf("help: exit %d, stdout %.80q, stderr %q", code, out, errOut)
	}
	if out, _, code := e.run("help", "status"); code != 0 || !strings.Contains(out, "batchctl status -") {
		t.Errorf("help status: exit %d, stdout %.80q", code, out)
	}
	for _, args := range [][]string{{"disclose", "--requst", "--", "true"}, {"status", "--nope"}, {"--nope", "status"}, {"users", "list", "--nope"}} {
		out, errOut, code := e.run(args...)
		if code != exitInvalid || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "is not a flag of batchctl") || !strings.Contains(errOut, "--help") {
			t.Errorf("%v: exit %d, stdout %d bytes, stderr %q; want exit 1 and one line", args, code, len(out), errOut)
		}
	}
	if _, errOut, _ := e.run("disclose", "--requst", "--", "true"); !strings.Contains(errOut, "did you mean --request?") {
		t.Errorf("disclose --requst: %q, want a suggestion of --request", errOut)
	}
}

// TestDiscloseHelpSaysEachThingOnce: the --spec paragraph once, the array
// examples under --array, --cpus's default once.
func TestDiscloseHelpSaysEachThingOnce(t *testing.T) {
	e := newEnv(t, 0)
	out := e.ok("disclose", "--help")
	if n := strings.Count(out, "A --spec file is a list of tasks"); n != 1 {
		t.Errorf("the --spec paragraph %d times", n)
	}
	retries := out[strings.Index(out, "--retries N lets"):]
	retries = retries[:strings.Index(retries, "\n\n")]
	if strings.Contains(retries, "--array") {
		t.Errorf("array examples in the --retries paragraph:\n%s", retries)
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.Count(l, "(default") > 1 {
			t.Errorf("two defaults on one line: %s", l)
		}
	}
}

// TestFlagsAfterTheCommandRefused: `disclose echo hi --request` would store
// --request as an argument: it is refused with the line to type; after --
// such words are the task's.
func TestFlagsAfterTheCommandRefused(t *testing.T) {
	e := newEnv(t, 0)
	out, errOut, code := e.run("disclose", "echo", "hi", "--request")
	if code != exitInvalid || out != "" || !strings.Contains(errOut, "batchctl disclose --request -- echo hi") {
		t.Errorf("disclose echo hi --request: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	set := strings.TrimSpace(e.ok("disclose", "-q", "--", "echo", "hi", "--request"))
	var st struct {
		Tasks []taskView `json:"tasks"`
	}
	e.json(&st, "status", set)
	if got := strings.Join(st.Tasks[0].Spec.Argv, " "); got != "echo hi --request" {
		t.Errorf("after --: argv %q", got)
	}
}

// TestWrongTokenNamesServerAndSource: a token the server does not know
// gives one line naming the server and where the token came from.
func TestWrongTokenNamesServerAndSource(t *testing.T) {
	e := newEnv(t, 0)
	e.token = "bd_not_a_token"
	_, errOut, code := e.run("status")
	if code != exitAuth || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, e.url) || !strings.Contains(errOut, "--token") {
		t.Errorf("wrong token: exit %d, stderr %q; want exit %d, one line naming %s and --token", code, errOut, exitAuth, e.url)
	}
}

// TestDiscloseSetChangesTheCap: `disclose --set ID --max-running N` alone
// changes the set's cap, as its help says, and why then names it.
func TestDiscloseSetChangesTheCap(t *testing.T) {
	e := newEnv(t, 0)
	set := strings.TrimSpace(e.ok("disclose", "-q", "--request", "--file", writeTemp(t, "true\ntrue\ntrue\n")))
	out, errOut, code := e.run("disclose", "--set", set, "--max-running", "1")
	if code != 0 || !strings.Contains(out, "runs at most 1 at once") {
		t.Fatalf("disclose --set %s --max-running 1: exit %d, %q, %q", set, code, out, errOut)
	}
	var st struct {
		Set   setView    `json:"set"`
		Tasks []taskView `json:"tasks"`
	}
	e.json(&st, "status", set)
	if st.Set.MaxRunning != 1 || len(st.Tasks) != 3 {
		t.Errorf("after the change: cap %d, %d tasks; want 1 and 3", st.Set.MaxRunning, len(st.Tasks))
	}
	if out := e.ok("why", set+"/2"); !strings.Contains(out, "capped by --max-running") {
		t.Errorf("why %s/2 after the change:\n%s", set, out)
	}
	if _, _, code := e.run("disclose", "--max-running", "1"); code != exitInvalid {
		t.Errorf("--max-running without --set or tasks: exit %d, want %d", code, exitInvalid)
	}
}

// TestRangePastTheSetAgrees: output --tar/--dir, request and cancel of a
// range past a 4-task set's end all exit 2 (unknown task).
func TestRangePastTheSetAgrees(t *testing.T) {
	e := newEnv(t, 0)
	set := strings.TrimSpace(e.ok("disclose", "-q", "--file", writeTemp(t, "true\ntrue\ntrue\ntrue\n")))
	for _, args := range [][]string{
		{"output", set + "/0-99", "--tar", "--output", writeTemp(t, "")},
		{"output", set + "/0-99", "--dir", t.TempDir()},
		{"request", "--no-wait", set + "/0-99"},
		{"cancel", set + "/0-99"},
	} {
		if _, errOut, code := e.run(args...); code != exitNotFound {
			t.Errorf("%v: exit %d (%s), want %d", args, code, errOut, exitNotFound)
		}
	}
}
