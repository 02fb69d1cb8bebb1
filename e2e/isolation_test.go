//go:build linux

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// ptraceSource is a tiny attacker: PTRACE_ATTACH to the pid it is given.
const ptraceSource = `package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"syscall"
)

func main() {
	runtime.LockOSThread()
	pid, _ := strconv.Atoi(os.Args[1])
	if err := syscall.PtraceAttach(pid); err != nil {
		fmt.Println("ptrace denied:", err)
		os.Exit(1)
	}
	var ws syscall.WaitStatus
	syscall.Wait4(pid, &ws, 0, nil)
	syscall.PtraceDetach(pid)
	fmt.Println("attached")
}
`

// sharedDir makes a directory every uid may read (t.TempDir is 0700 to
// the test's user), outside /tmp (private to a namespaced copy).
func sharedDir(t *testing.T, owner int) string {
	t.Helper()
	dir, err := os.MkdirTemp("/var/tmp", "batchd-e2e-iso-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, owner, owner); err != nil {
		t.Fatal(err)
	}
	return dir
}

// ptraceBinary builds the attacker into a directory tasks can reach.
func ptraceBinary(t *testing.T) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), "main.go")
	if err := os.WriteFile(src, []byte(ptraceSource), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(sharedDir(t, os.Getuid()), "ptrace-attach")
	if out, err := exec.Command("go", "build", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("build the ptrace helper: %v\n%s", err, out)
	}
	return bin
}

// attackScript is user B's task. Each attack that works prints a line
// "LEAK <what>: <evidence>"; the tokens it finds are printed too (TOKEN
// lines), for the test to try against the API.
func attackScript(data string, server int, ptrace string) string {
	return fmt.Sprintf(`
D=%[1]s; S=%[2]d; P=%[3]s
leak() { echo "LEAK $1: $2"; }
echo "RUNS-AS $(id -u)"
x=$(cat $D/admin.token 2>/dev/null) && leak admin.token "$(echo $x | cut -c1-8)"
x=$(head -c 15 $D/batchd.db 2>/dev/null) && [ -n "$x" ] && leak batchd.db "$x"
ls $D/batchd.db-wal >/dev/null 2>&1 && leak wal "listed"
ls $D 2>/dev/null | grep -q batchd.db && leak data-dir "$(ls $D | tr '\n' ' ')"
echo pwned > $D/pwned 2>/dev/null && leak write-data "$D/pwned"
root=$(dirname "$HOME")
others=$(ls "$root" 2>/dev/null | grep -v "^$(basename $HOME)\$")
[ -n "$others" ] && leak scratch-root "$(echo $others)"
for d in $(ls -d $root/* 2>/dev/null) $(seq -f "$root/%%g" 1 16); do
  [ "$d" = "$HOME" ] && continue
  x=$(cat $d/secret 2>/dev/null) && leak other-scratch "$d: $x"
done
for p in $S $PPID; do
  x=$(tr '\0' '\n' < /proc/$p/environ 2>/dev/null) && [ -n "$x" ] && leak environ-$p "$(echo "$x" | grep -c .) variables" && echo "$x" | grep -o 'bd_[a-z0-9]*' | sed 's/^/TOKEN /'
  echo "$x" | grep -q E2E_CANARY && leak canary-$p "found"
done
kill -0 $S 2>/dev/null && leak signal-server "$S"
kill -CONT $S 2>/dev/null && leak sigcont-server "$S"
victim=""
for f in /proc/[0-9]*/cmdline; do
  p=$(basename $(dirname $f)); [ "$p" = $$ ] && continue
  tr '\0' ' ' < $f 2>/dev/null | grep -q 'victim-[m]arker' && victim=$p
done
[ -n "$victim" ] && echo "VICTIM $victim"
[ -n "$victim" ] && kill -0 $victim 2>/dev/null && leak signal-victim "$victim"
[ -n "$victim" ] && kill -CONT $victim 2>/dev/null && leak sigcont-victim "$victim"
$P $S >/dev/null 2>&1 && leak ptrace-server "$S"
[ -n "$victim" ] && $P $victim >/dev/null 2>&1 && leak ptrace-victim "$victim"
[ -n "$x" ] || true
cat $D/admin.token 2>/dev/null | sed 's/^/TOKEN /'
env | grep -o 'bd_[a-z0-9]*' | sed 's/^/TOKEN /'
echo attack-done
`, data, server, ptrace)
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

// leaks are the attacks that worked, by name.
func leaks(out string) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(l, "LEAK "); ok {
			k, v, _ := strings.Cut(rest, ": ")
			m[k] = v
		}
	}
	return m
}

var tokenRE = regexp.MustCompile(`TOKEN (bd_[a-z0-9]+)`)

// attack runs the attack as user attacker while user victim's task runs,
// and returns what the attack printed and which tokens it found worked
// against the API.
func attack(t *testing.T, c *cluster, victim, attacker string, ptrace string) (out string, working []string) {
	t.Helper()
	as := func(tok string, args ...string) result {
		if tok == "" {
			return c.mustCtl(args...)
		}
		r := c.ctlAs(tok, args...)
		if r.code != 0 {
			t.Fatalf("batchctl %s: exit %d: %s", strings.Join(args, " "), r.code, r.stderr)
		}
		return r
	}
	var v jsonDisclose
	r := as(victim, "--json", "disclose", "--name", "victim", "--request", "--",
		"sh", "-c", `echo secretA > secret; sleep 600`, "victim-marker")
	if err := jsonUnmarshal(r.stdout, &v); err != nil {
		t.Fatal(err)
	}
	waitFor(t, patience, "the victim's task running", func() bool {
		var st jsonStatus
		r := as(victim, "--json", "status", strconv.FormatInt(v.Set.ID, 10))
		return jsonUnmarshal(r.stdout, &st) == nil && st.Set.Counts.Running > 0
	})
	var a jsonDisclose
	r = as(attacker, "--json", "disclose", "--name", "attack", "--", "sh", "-c",
		attackScript(c.data, c.server.cmd.Process.Pid, ptrace))
	if err := jsonUnmarshal(r.stdout, &a); err != nil {
		t.Fatal(err)
	}
	var req result
	if attacker == "" {
		req = c.ctl("request", fmt.Sprintf("%d/0", a.Set.ID))
	} else {
		req = c.ctlAs(attacker, "request", fmt.Sprintf("%d/0", a.Set.ID))
	}
	if !strings.Contains(req.stdout, "attack-done") {
		t.Fatalf("the attack did not run to its end: exit %d\nstdout %s\nstderr %s", req.code, req.stdout, req.stderr)
	}
	var found []string
	for _, m := range tokenRE.FindAllStringSubmatch(req.stdout, -1) {
		if !slices.Contains(found, m[1]) {
			found = append(found, m[1])
		}
	}
	for _, tok := range found {
		if c.ctlAs(tok, "status").code == 0 {
			working = append(working, tok[:8])
		}
	}
	as(victim, "cancel", strconv.FormatInt(v.Set.ID, 10))
	return req.stdout, working
}

// addUser adds a batchd user and returns its token; batchd user add runs
// as uid, the data directory's owner.
func addUser(t *testing.T, c *cluster, uid int, name string) string {
	t.Helper()
	cmd := exec.Command(c.batchd, "user", "add", "--data", c.data, name)
	if uid != 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), Groups: []uint32{}}}
	}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("batchd user add %s: %v", name, err)
	}
	return strings.TrimSpace(string(out))
}

// TestIsolationAttacks runs a real batchd serve with two users, A and B;
// while A's task runs, B's task tries to read the data directory
// (admin.token, batchd.db, the WAL) and A's scratch directory, to read the
// server's and its parent's environment, to signal the server and A's
// task, to ptrace them, to write into the data directory, and to use any
// token it found against the API. Under every mechanism this machine has
// (uid, owner-uid and namespaces as root; namespaces as an unprivileged
// user) each
// attack fails; with isolation off the same attacks work, so the test can
// fail.
func TestIsolationAttacks(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the attack suite runs as root (per-slot uids, and an unprivileged server made with setuid)")
	}
	binaries(t)
	ptrace := ptraceBinary(t)
	t.Setenv("BATCHD_E2E_CANARY", "E2E_CANARY_value")

	t.Run("none", func(t *testing.T) {
		// Without isolation the worker is bound to one user: the attacker
		// is that user, and what it reaches is what any task there would.
		c := startServer(t, "--slots", "2", "--isolation", "none", "--drain", "0s")
		out, working := attack(t, c, "", "", ptrace)
		got := leaks(out)
		for _, want := range []string{"admin.token", "batchd.db", "wal", "write-data", "other-scratch", "environ-" + strconv.Itoa(c.server.cmd.Process.Pid),
			"signal-server", "signal-victim", "sigcont-victim", "ptrace-server", "ptrace-victim"} {
			if _, ok := got[want]; !ok {
				t.Errorf("without isolation the attack %q failed; the suite cannot tell isolation from a broken attack\n%s", want, out)
			}
		}
		if len(working) == 0 {
			t.Errorf("without isolation no token the task found worked against the API\n%s", out)
		}
	})

	for _, tc := range []struct {
		name string
		args []string
		uid  int // the server's uid (0: root)
		// users A and B; with owner-uid, Unix users of those names run
		// their tasks (daemon: uid 1, nobody: 65534, on Debian).
		a, b string
	}{
		{"uid", []string{"--isolation", "uid", "--slot-uids", "62000-62015"}, 0, "alice", "bob"},
		{"owner-uid", []string{"--isolation", "owner-uid"}, 0, "daemon", "nobody"},
		{"namespaces-root", []string{"--isolation", "namespaces", "--slot-uids", "62100-62115"}, 0, "alice", "bob"},
		{"namespaces-unprivileged", []string{"--isolation", "namespaces"}, 65534, "alice", "bob"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := startServerAs(t, tc.uid, append([]string{"--slots", "2", "--drain", "0s"}, tc.args...)...)
			a, b := addUser(t, c, tc.uid, tc.a), addUser(t, c, tc.uid, tc.b)
			out, working := attack(t, c, a, b, ptrace)
			if (tc.name == "uid" || tc.name == "owner-uid") && !strings.Contains(out, "VICTIM ") {
				t.Errorf("uid: the attack did not find the victim's process (all of /proc is visible there), so it tried nothing against it\n%s", out)
			}
			if tc.name == "owner-uid" && !strings.Contains(out, "RUNS-AS 65534\n") {
				t.Errorf("owner-uid: bob's task did not run as the Unix user nobody (uid 65534)\n%s", out)
			}
			if got := leaks(out); len(got) > 0 {
				t.Errorf("%s: the attacks that worked: %v\n%s", tc.name, got, out)
			}
			if len(working) > 0 {
				t.Errorf("%s: the task found tokens that work against the API: %v", tc.name, working)
			}
			if _, err := os.Stat(filepath.Join(c.data, "pwned")); err == nil {
				t.Errorf("%s: the task wrote into the data directory", tc.name)
			}
		})
	}
}

// startServerAs is startServer with the server running as uid (and the gid
// of the same number) when uid is not 0: its binary and data directory
// are put where that uid reaches them.
func startServerAs(t *testing.T, uid int, args ...string) *cluster {
	t.Helper()
	if uid == 0 {
		return startServer(t, args...)
	}
	batchd, batchctl := binaries(t)
	dir := sharedDir(t, uid)
	bin := filepath.Join(dir, "batchd")
	b, err := os.ReadFile(batchd)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, batchd: bin, batchctl: batchctl, data: filepath.Join(dir, "data")}
	all := append([]string{"serve", "--listen", "127.0.0.1:0", "--data", c.data}, args...)
	c.server = startProcWith(t, "batchd serve (uid "+strconv.Itoa(uid)+")", func(cmd *exec.Cmd) {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), Groups: []uint32{}}
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "HOME="+dir, "TMPDIR=/tmp")
	}, bin, all...)
	c.addr = c.waitServing(c.server)
	return c
}
