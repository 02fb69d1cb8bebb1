package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCompletionBash sources `batchctl completion bash` in a real bash and
// completes "batchctl re" and "batchctl status --js": the script asks the
// real binary for the words.
func TestCompletionBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash on this machine")
	}
	_, batchctl := binaries(t)
	script, err := exec.Command(batchctl, "completion", "bash").Output()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "batchctl.bash")
	if err := os.WriteFile(path, script, 0o600); err != nil {
		t.Fatal(err)
	}
	complete := func(words ...string) string {
		t.Helper()
		prog := `source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _batchctl_complete; echo "${COMPREPLY[*]}"`
		cmd := exec.Command(bash, append([]string{"-c", prog, "bash", path}, words...)...)
		cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(batchctl)+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("complete %q: %v", words, err)
		}
		return strings.TrimSpace(string(out))
	}
	if got := complete("batchctl", "re"); got != "request retry release" {
		t.Errorf("batchctl re<TAB>: %q, want request retry release", got)
	}
	if got := complete("batchctl", "req"); got != "request" {
		t.Errorf("batchctl req<TAB>: %q, want request", got)
	}
	if got := complete("batchctl", "status", "--js"); got != "--json" {
		t.Errorf("batchctl status --js<TAB>: %q, want --json", got)
	}
	for _, sh := range []string{"zsh", "fish"} {
		if out, err := exec.Command(batchctl, "completion", sh).Output(); err != nil || !strings.Contains(string(out), "batchctl") {
			t.Errorf("completion %s: %v\n%s", sh, err, out)
		}
	}
	if err := exec.Command(batchctl, "completion", "tcsh").Run(); err == nil {
		t.Errorf("completion tcsh: no error")
	}
}

// TestCompletionTabCreatesNothing presses Tab twice in a real interactive
// bash and zsh (in tmux) after `batchctl disclose --` and after `disclose
// --request -- sh`, with a server and a token at hand: completion must
// never run the command, so the server has no task set afterwards.
// Completion still works in that shell (`batchctl req` Tab gives request).
func TestCompletionTabCreatesNothing(t *testing.T) {
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		t.Skip("no tmux on this machine (.ci/setup installs it)")
	}
	c := startServer(t)
	for _, sh := range []string{"bash", "zsh"} {
		t.Run(sh, func(t *testing.T) {
			path, err := exec.LookPath(sh)
			if err != nil {
				t.Skipf("no %s on this machine", sh)
			}
			tabCreatesNothing(t, c, tmux, sh, path)
		})
	}
}

// tabCreatesNothing is TestCompletionTabCreatesNothing in one shell.
func tabCreatesNothing(t *testing.T, c *cluster, tmux, sh, shell string) {
	dir := t.TempDir()
	script, err := exec.Command(c.batchctl, "completion", sh).Output()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "batchctl."+sh), script, 0o600); err != nil {
		t.Fatal(err)
	}
	env := fmt.Sprintf("export PATH=%q:\"$PATH\" BATCH_SERVER=%q BATCH_TOKEN=%q BATCH_CONFIG=/dev/null\n",
		filepath.Dir(c.batchctl), c.url(), c.adminToken())
	start := shell + " --noprofile --rcfile " + filepath.Join(dir, "rc") + " -i"
	rcFile, rc := filepath.Join(dir, "rc"), "PS1='$ '\n"+env+fmt.Sprintf("source %q\n", filepath.Join(dir, "batchctl."+sh))
	if sh == "zsh" {
		rcFile = filepath.Join(dir, ".zshrc")
		rc = "PROMPT='$ '\nunsetopt BEEP\n" + env + "autoload -Uz compinit && compinit -u\n" + fmt.Sprintf("source %q\n", filepath.Join(dir, "batchctl."+sh))
		start = "env ZDOTDIR=" + dir + " " + shell + " -i"
	}
	if err := os.WriteFile(rcFile, []byte(rc), 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "tmux.sock")
	tm := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(tmux, append([]string{"-S", sock}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %q: %v\n%s", args, err, out)
		}
		return string(out)
	}
	tm("new-session", "-d", "-x", "200", "-y", "50", "-c", dir, start)
	t.Cleanup(func() { _ = exec.Command(tmux, "-S", sock, "kill-server").Run() })
	// Keys are read in order: once the marker's echo shows, the shell has
	// run every completion asked for before it.
	marks := 0
	settle := func() {
		t.Helper()
		marks++
		mark := fmt.Sprintf("settled-%d", marks)
		tm("send-keys", "C-u", "echo "+mark, "Enter")
		waitFor(t, patience, mark, func() bool {
			return strings.Count(tm("capture-pane", "-p", "-S", "-200"), mark) >= 2
		})
	}
	settle()
	for _, line := range []string{"batchctl disclose -- ", "batchctl disclose --request -- sh ", "batchctl disclose --request -- sh -"} {
		tm("send-keys", line, "Tab", "Tab")
		settle()
	}
	tm("send-keys", "batchctl req", "Tab")
	waitFor(t, patience, "batchctl req<TAB> to complete", func() bool {
		return strings.Contains(tm("capture-pane", "-p"), "$ batchctl request")
	})
	settle()
	var sets struct {
		Sets []json.RawMessage `json:"sets"`
	}
	c.ctlJSON(&sets, "status")
	if len(sets.Sets) != 0 {
		t.Errorf("Tab in %s made %d task sets: %s", sh, len(sets.Sets), sets.Sets)
	}
}
