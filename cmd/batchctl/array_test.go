package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// TestSpecFileArrayAndShell: a --spec file's shell runs its array and its
// "command" tasks; --shell on the command line wins over it; tasks and an
// array together, or argv and command together, are refused.
func TestSpecFileArrayAndShell(t *testing.T) {
	e := newEnv(t, 0)
	tasks := func(set string) []taskView {
		var st struct {
			Tasks []taskView `json:"tasks"`
		}
		if err := json.Unmarshal([]byte(e.ok("--json", "status", set)), &st); err != nil {
			t.Fatal(err)
		}
		return st.Tasks
	}
	arr := writeTemp(t, `{"name": "study", "shell": "bash", "array": {"range": "4-8:4", "command": "echo $BATCH_ARRAY_VALUE", "estimate_seconds": 7}}`)
	set := strings.TrimSpace(e.ok("disclose", "-q", "--spec", arr))
	got := tasks(set)
	if len(got) != 2 {
		t.Fatalf("spec array 4-8:4: %d tasks, want 2", len(got))
	}
	for i, v := range []string{"4", "8"} {
		sp := got[i].Spec
		if strings.Join(sp.Argv, " ") != "bash -c echo $BATCH_ARRAY_VALUE" || sp.Env["BATCH_ARRAY_VALUE"] != v || sp.EstimateSeconds != 7 {
			t.Errorf("task %d: %+v, want bash -c, value %s, estimate 7", i, sp, v)
		}
	}
	cmds := writeTemp(t, `{"shell": "bash", "tasks": [{"command": "echo a"}, {"argv": ["echo", "b"]}]}`)
	set = strings.TrimSpace(e.ok("disclose", "-q", "--shell", "zsh", "--spec", cmds))
	got = tasks(set)
	if len(got) != 2 || strings.Join(got[0].Spec.Argv, " ") != "zsh -c echo a" || strings.Join(got[1].Spec.Argv, " ") != "echo b" {
		t.Errorf("spec tasks with --shell zsh: %+v", got)
	}
	lines := writeTemp(t, "echo one\necho two\n")
	set = strings.TrimSpace(e.ok("disclose", "-q", "--shell", "bash", "--file", lines))
	if got = tasks(set); len(got) != 2 || got[1].Spec.Argv[0] != "bash" {
		t.Errorf("--file with --shell bash: %+v", got)
	}
	set = strings.TrimSpace(e.ok("disclose", "-q", "--file", lines))
	if got = tasks(set); got[0].Spec.Argv[0] != "sh" {
		t.Errorf("--file runs with %q by default, want sh", got[0].Spec.Argv[0])
	}
	for _, bad := range []struct{ args []string }{
		{[]string{"--spec", writeTemp(t, `{"tasks": [{"command": "x"}], "array": {"range": "0-1", "command": "y"}}`)}},
		{[]string{"--spec", writeTemp(t, `{"tasks": [{"command": "x", "argv": ["y"]}]}`)}},
		{[]string{"--spec", writeTemp(t, `{"array": {"range": "3-1", "command": "y"}}`)}},
		{[]string{"--array", "0-1", "--file", lines, "--", "true"}},
		{[]string{"--shell", "", "--", "true"}},
	} {
		if _, stderr, code := e.run(append([]string{"disclose"}, bad.args...)...); code != exitInvalid {
			t.Errorf("disclose %v: exit %d (%s), want %d", bad.args, code, stderr, exitInvalid)
		}
	}
}

// TestArrayKeepsArgv: the words after -- of an array are the task's argv
// as given (quoting kept); one word is a shell line run by --shell.
func TestArrayKeepsArgv(t *testing.T) {
	e := newEnv(t, 2)
	for _, c := range []struct {
		args []string
		want []string // each task's output
	}{
		{[]string{"--array", "0-2", "--", "sh", "-c", "echo seed=$BATCH_ARRAY_VALUE"}, []string{"seed=0\n", "seed=1\n", "seed=2\n"}},
		{[]string{"--array", "0-1", "--", "printf", `%s|\n`, "a b"}, []string{"a b|\n", "a b|\n"}},
		{[]string{"--array", "3-4", "--", "echo v=$BATCH_ARRAY_VALUE"}, []string{"v=3\n", "v=4\n"}},
	} {
		set := strings.TrimSpace(e.ok(append([]string{"disclose", "-q", "--request"}, c.args...)...))
		for i, want := range c.want {
			ref := set + "/" + strconv.Itoa(i)
			out, errOut, code := e.run("request", ref)
			if code != 0 || out != want {
				t.Errorf("%v: request %s = %q (stderr %q), exit %d; want %q, exit 0", c.args, ref, out, errOut, code, want)
			}
		}
	}
}
