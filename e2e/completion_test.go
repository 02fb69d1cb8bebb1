package e2e

import (
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
	if got := complete("batchctl", "re"); got != "request retry" {
		t.Errorf("batchctl re<TAB>: %q, want request retry", got)
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
