package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The binaries are built once per test run, on first use, into binDir.
var (
	binDir    string
	buildOnce sync.Once
	buildErr  error
)

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// binaries builds batchd and batchctl (once) and returns their paths. It
// skips the test in -short mode.
func binaries(t *testing.T) (batchd, batchctl string) {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test: skipped with -short")
	}
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "batchd-e2e-bin-")
		if buildErr != nil {
			return
		}
		for _, pkg := range []string{"batchd/cmd/batchd", "batchd/cmd/batchctl"} {
			cmd := exec.Command("go", "build", "-tags", "urfave_cli_no_docs", "-o", binDir, pkg) // as make build
			if out, err := cmd.CombinedOutput(); err != nil {
				buildErr = fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(binDir, "batchd"), filepath.Join(binDir, "batchctl")
}

// patience bounds a wait for something that must happen, so that a hang
// fails with a message before go test's -timeout; it is no measurement,
// and a machine at load 30 stays far inside it.
const patience = 3 * time.Minute

// syncBuffer is a bytes.Buffer safe for a child's output and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// proc is a batchd child process (server or worker).
type proc struct {
	name string
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
}

// startProc starts bin with args; the test's cleanup stops it and, when the
// test failed, prints its output.
func startProc(t *testing.T, name, bin string, args ...string) *proc {
	t.Helper()
	return startProcWith(t, name, nil, bin, args...)
}

// startProcWith is startProc with a hook that adjusts the command first.
func startProcWith(t *testing.T, name string, adjust func(*exec.Cmd), bin string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, cmd: exec.Command(bin, args...), out: &syncBuffer{}, done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	// The child dies with the test binary, however that ends (a -timeout
	// panic, a SIGKILL): no server or worker outlives a test run.
	p.cmd.SysProcAttr = childAttr()
	if adjust != nil {
		adjust(p.cmd)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.stop()
		if n := strings.Count(p.out.String(), "start on a busy slot"); n > 0 {
			// The worker's slot of a copy is the server's (its start's, or
			// its last resume's: a resumed copy may move), and the server
			// hands a slot on only once its copy ended, was killed or was
			// suspended there: a start on a busy slot is an order gone
			// wrong.
			t.Errorf("%s logged %d starts on a busy slot", name, n)
		}
		if t.Failed() {
			t.Logf("--- output of %s (%s):\n%s", name, strings.Join(args, " "), p.out.String())
		}
	})
	return p
}

// exited reports whether the process has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// kill sends SIGKILL and waits for the process to end.
func (p *proc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// stop sends SIGTERM, and SIGKILL if the process is still up a minute
// later (a graceful stop takes well under a second on an idle machine).
func (p *proc) stop() {
	if p.exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		p.kill()
	}
}

// cluster is a running batchd server and the batchctl that talks to it.
type cluster struct {
	t        *testing.T
	batchd   string
	batchctl string
	addr     string
	data     string
	server   *proc
	wtoken   string // worker token minted by workerToken
}

// adminToken reads the token batchd serve wrote on first start.
func (c *cluster) adminToken() string {
	c.t.Helper()
	b, err := os.ReadFile(filepath.Join(c.data, "admin.token"))
	if err != nil {
		c.t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// workerToken mints (once per cluster) a worker token with batchd user add.
func (c *cluster) workerToken() string {
	c.t.Helper()
	if c.wtoken == "" {
		out, err := exec.Command(c.batchd, "user", "add", "--data", c.data, "--worker", "e2e-workers").Output()
		if err != nil {
			c.t.Fatalf("batchd user add --worker: %v", err)
		}
		c.wtoken = strings.TrimSpace(string(out))
	}
	return c.wtoken
}

// startServer starts `batchd serve` on a free loopback port with a new data
// directory and waits until it answers.
func startServer(t *testing.T, args ...string) *cluster {
	t.Helper()
	batchd, batchctl := binaries(t)
	c := &cluster{t: t, batchd: batchd, batchctl: batchctl, data: filepath.Join(t.TempDir(), "data")}
	c.start(args...)
	return c
}

// start (re)starts the server on c's data directory. The first start binds
// a port the kernel picks (127.0.0.1:0) and learns it from the server's
// "serving on" line, so no port is closed and then reused by guess; a
// restart binds the same address again, as an operator's restart does.
func (c *cluster) start(args ...string) {
	c.t.Helper()
	listen := c.addr
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	// --share-unisolated-workers: these tests' local slots and workers run
	// with --isolation none (withIsolation) and serve any user's tasks;
	// isolation_test.go tests the isolation.
	all := append([]string{"serve", "--listen", listen, "--data", c.data, "--share-unisolated-workers"}, withIsolation(args)...)
	c.server = startProc(c.t, "batchd serve", c.batchd, all...)
	// A restart's port can be taken for a moment: it is in the ephemeral
	// range, and a client that keeps dialling it while no server listens
	// can connect to itself (TCP's simultaneous open, source port =
	// destination port) or be given it as its own port. Such a socket
	// closes once the client sees garbage or gives up; an operator
	// would start again, and so does the restart, until patience runs out.
	deadline := time.Now().Add(patience)
	for c.addr != "" && time.Now().Before(deadline) {
		if addr, ok := c.serving(c.server); ok {
			c.addr = addr
			return
		}
		if !strings.Contains(c.server.out.String(), "address already in use") {
			break // another failure: waitServing reports it
		}
		time.Sleep(100 * time.Millisecond)
		c.server = startProc(c.t, "batchd serve", c.batchd, all...)
	}
	c.addr = c.waitServing(c.server)
}

// serving waits until p prints its "serving on" line (its address, true)
// or exits (false).
func (c *cluster) serving(p *proc) (string, bool) {
	deadline := time.Now().Add(patience)
	for time.Now().Before(deadline) {
		for _, line := range strings.Split(p.out.String(), "\n") {
			if rest, ok := strings.CutPrefix(line, "batchd serving on http://"); ok {
				return strings.Fields(rest)[0], true
			}
		}
		if p.exited() {
			return "", false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return "", false
}

func (c *cluster) url() string { return "http://" + c.addr }

// waitServing waits until the server prints the line `batchd serve` prints
// once it listens ("batchd serving on URL ..."), and returns its address.
// It fails when the process exits first. The line is in another process's
// output, so it polls: there is no clock to inject.
func (c *cluster) waitServing(p *proc) string {
	c.t.Helper()
	if addr, ok := c.serving(p); ok {
		return addr
	}
	if p.exited() {
		c.t.Fatalf("%s exited before it was serving:\n%s", p.name, p.out.String())
	}
	c.t.Fatalf("%s not serving after %v:\n%s", p.name, patience, p.out.String())
	return ""
}

// withIsolation adds --isolation none to args that name none: the tests
// of batchd's behaviour run tasks that write into the test's directories,
// as the test's user; isolation_test.go tests the isolation.
func withIsolation(args []string) []string {
	for _, a := range args {
		if a == "--isolation" || strings.HasPrefix(a, "--isolation=") {
			return args
		}
	}
	return append(append([]string(nil), args...), "--isolation", "none")
}

// tokenFile writes tok into a new 0600 file and returns its path.
func tokenFile(t *testing.T, tok string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "worker.token")
	if err := os.WriteFile(f, []byte(tok), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// startWorker starts `batchd worker` against the server (args are more
// flags).
func (c *cluster) startWorker(name string, slots int, args ...string) *proc {
	c.t.Helper()
	all := append([]string{"worker", "--server", c.url(), "--token-file", tokenFile(c.t, c.workerToken()), "--remove-token-file",
		"--name", name, "--slots", fmt.Sprint(slots), "--state-dir", filepath.Join(c.t.TempDir(), name)}, withIsolation(args)...)
	return startProc(c.t, "batchd worker "+name, c.batchd, all...)
}

// result is what one batchctl run printed and its exit status.
type result struct {
	stdout, stderr string
	code           int
}

// ctl runs batchctl with args against the server. It retries while the
// server is unreachable (so it rides out a restart, however slow).
func (c *cluster) ctl(args ...string) result {
	c.t.Helper()
	// batchctl finds the admin token in the data directory, as on the
	// server's own machine.
	return c.ctlAuth([]string{"--data", c.data}, args...)
}

// ctlAs is ctl with token (a user's) instead of the admin's.
func (c *cluster) ctlAs(token string, args ...string) result {
	c.t.Helper()
	return c.ctlAuth([]string{"--token", token, "--data", os.DevNull}, args...)
}

// ctlAuth is ctl with the flags auth that say who calls.
func (c *cluster) ctlAuth(auth []string, args ...string) result {
	c.t.Helper()
	ctx, cancel := context.WithCancel(c.t.Context())
	defer cancel()
	all := append(append([]string{"--server", c.url(), "--retry", patience.String(), "--config", os.DevNull}, auth...), args...)
	cmd := exec.CommandContext(ctx, c.batchctl, all...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		c.t.Fatalf("batchctl %s: %v", strings.Join(args, " "), err)
	}
	return r
}

// mustCtl runs batchctl and fails the test unless it exits 0.
func (c *cluster) mustCtl(args ...string) result {
	c.t.Helper()
	r := c.ctl(args...)
	if r.code != 0 {
		c.t.Fatalf("batchctl %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r
}

// ctlJSON runs batchctl --json args and decodes its stdout into v.
func (c *cluster) ctlJSON(v any, args ...string) {
	c.t.Helper()
	r := c.mustCtl(append([]string{"--json"}, args...)...)
	if err := json.Unmarshal([]byte(r.stdout), v); err != nil {
		c.t.Fatalf("batchctl --json %s: %v\n%s", strings.Join(args, " "), err, r.stdout)
	}
}

// waitFor polls cond every 100 ms until it holds or timeout passes. The
// state it polls lives in other processes, so there is no clock to inject.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// The JSON shapes batchctl prints (a subset of cmd/batchctl/view.go).

type jsonCounts struct {
	Disclosed, Executed, Requested, Finished, Canceled, Running, Total int64
}

type jsonSet struct {
	ID     int64      `json:"id"`
	Name   string     `json:"name"`
	Counts jsonCounts `json:"counts"`
}

type jsonCopy struct {
	ID     int64  `json:"id"`
	Worker string `json:"worker"`
	State  string `json:"state"`
}

type jsonTask struct {
	Set      int64      `json:"set"`
	Index    int32      `json:"index"`
	State    string     `json:"state"`
	ExitCode int32      `json:"exit_code"`
	Copies   []jsonCopy `json:"copies"`
}

type jsonDisclose struct {
	Set        jsonSet `json:"set"`
	FirstIndex int32   `json:"first_index"`
	Count      int32   `json:"count"`
}

type jsonStatus struct {
	Set           jsonSet    `json:"set"`
	Tasks         []jsonTask `json:"tasks"`
	NextPageToken string     `json:"next_page_token"`
}

type jsonOutput struct {
	State    string `json:"state"`
	ExitCode int32  `json:"exit_code"`
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	Copy     int64  `json:"copy"`
	Worker   string `json:"worker"`
}

type jsonBillLine struct {
	ID          int64   `json:"id"`
	Set         int64   `json:"set"`
	Index       int32   `json:"index"`
	Copy        int64   `json:"copy"`
	SlotSeconds float64 `json:"slot_seconds"`
	CPUSeconds  float64 `json:"cpu_seconds"`
	Reason      string  `json:"reason"`
}

type jsonBill struct {
	Totals struct {
		Lines             int64   `json:"lines"`
		BilledSlotSeconds float64 `json:"billed_slot_seconds"`
	} `json:"totals"`
	Lines []jsonBillLine `json:"lines"`
}

type jsonCancel struct {
	Set             jsonSet `json:"set"`
	Canceled        int32   `json:"canceled"`
	Stopped         int32   `json:"stopped"`
	AlreadyCanceled int32   `json:"already_canceled"`
	Unchanged       int32   `json:"unchanged"`
}

type ref struct {
	set   int64
	index int32
}

// billByTask counts bill lines per task.
func billByTask(b jsonBill) map[ref]int {
	m := map[ref]int{}
	for _, l := range b.Lines {
		m[ref{l.Set, l.Index}]++
	}
	return m
}
