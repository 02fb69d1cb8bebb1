package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"batchd/client"
	"batchd/sched"
	"batchd/server"
	"batchd/worker"
)

// Tests that run the app are not parallel: urfave/cli v2 keeps the help
// and version flags in package variables that every run writes.

// env is a real server on 127.0.0.1:0 (temp data dir) with a real worker
// agent, and batchctl run in-process against it.
type env struct {
	t     *testing.T
	url   string
	data  string // the server's data directory (holds admin.token)
	token string // "" : batchctl finds admin.token through --data
	// config is the --config file ("": os.DevNull, an empty config, so
	// that the user's own config file is never read).
	config string
	srv    *server.Server
}

func newEnv(t *testing.T, slots int) *env {
	t.Helper()
	data := t.TempDir()
	// ShareUnisolated: its worker may report no isolation; these tests are
	// not about isolation (server/isolation_test.go is).
	srv, err := server.New(server.Config{Listen: "127.0.0.1:0", DataDir: data, ShareUnisolated: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	if slots > 0 {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = worker.Run(ctx, worker.Config{
				Server: srv.URL(), Name: "w", Slots: slots, StateDir: t.TempDir(),
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), DrainTimeout: time.Second,
				ClientOptions: []connect.ClientOption{connect.WithInterceptors(client.BearerInterceptor(srv.LocalWorkerToken()))},
			})
		}()
		t.Cleanup(func() { cancel(); <-done })
	}
	return &env{t: t, url: srv.URL(), data: data, srv: srv}
}

// run runs batchctl with args; it returns stdout, stderr and the exit status.
func (e *env) run(args ...string) (string, string, int) {
	e.t.Helper()
	ctx, cancel := context.WithCancel(e.t.Context())
	defer cancel()
	var stdout, stderr bytes.Buffer
	cfg := e.config
	if cfg == "" {
		cfg = os.DevNull
	}
	pre := []string{"batchctl", "--server", e.url, "--data", e.data, "--config", cfg}
	if e.token != "" {
		pre = append(pre, "--token", e.token)
	}
	code := run(ctx, append(pre, args...), &stdout, &stderr)
	return stdout.String(), stderr.String(), code
}

// ok runs batchctl and fails the test unless it exits 0.
func (e *env) ok(args ...string) string {
	e.t.Helper()
	out, errOut, code := e.run(args...)
	if code != 0 {
		e.t.Fatalf("batchctl %v: exit %d\nstdout: %s\nstderr: %s", args, code, out, errOut)
	}
	return out
}

func (e *env) json(v any, args ...string) {
	e.t.Helper()
	out := e.ok(append([]string{"--json"}, args...)...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		e.t.Fatalf("batchctl --json %v: %v\n%s", args, err, out)
	}
}

func TestRequestOneTaskExitsLikeIt(t *testing.T) {
	e := newEnv(t, 2)
	set := strings.TrimSpace(e.ok("disclose", "-q", "--", "sh", "-c", "echo hi; echo warn >&2; exit 7"))
	out, errOut, code := e.run("request", set+"/0")
	if code != 7 || out != "hi\n" || errOut != "warn\n" {
		t.Errorf("request = %q, %q, exit %d; want hi, warn, exit 7", out, errOut, code)
	}
	// The human disclose line names the set and its tasks.
	if got := e.ok("disclose", "--name", "pair", "--file", writeTemp(t, "echo a\necho b\n")); !strings.Contains(got, `"pair": disclosed tasks`) || !strings.Contains(got, "/0..1 (2 tasks)") {
		t.Errorf("disclose printed %q", got)
	}
}

func TestRequestManyFailsWithFive(t *testing.T) {
	e := newEnv(t, 2)
	var d struct {
		Set struct {
			ID int64 `json:"id"`
		} `json:"set"`
	}
	e.json(&d, "disclose", "--file", writeTemp(t, "true\nexit 3\ntrue\n"))
	out, errOut, code := e.run("request", fmt.Sprint(d.Set.ID))
	if code != exitTasksFailed || !strings.Contains(errOut, "1 of 3 tasks failed") {
		t.Errorf("request of a set with a failing task: exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{"task", "state", fmt.Sprintf("%d/1", d.Set.ID), "finished"} {
		if !strings.Contains(out, want) {
			t.Errorf("table %q lacks %q", out, want)
		}
	}
	var many struct {
		Tasks []struct {
			Index    int32  `json:"index"`
			State    string `json:"state"`
			ExitCode int32  `json:"exit_code"`
		} `json:"tasks"`
		Failed int `json:"failed"`
	}
	stdout, _, code := e.run("--json", "request", fmt.Sprintf("%d/0-2", d.Set.ID))
	if err := json.Unmarshal([]byte(stdout), &many); err != nil || code != exitTasksFailed || many.Failed != 1 || len(many.Tasks) != 3 || many.Tasks[1].ExitCode != 3 {
		t.Errorf("request --json = %s (exit %d, %v)", stdout, code, err)
	}
}

func TestCancelSaysWhatItDid(t *testing.T) {
	e := newEnv(t, 1)
	set := strings.TrimSpace(e.ok("disclose", "-q", "--file", writeTemp(t, "sleep 30\nsleep 30\nsleep 30\n")))
	if got, want := e.ok("cancel", set), fmt.Sprintf("set %s: canceled 3\n", set); got != want {
		t.Errorf("cancel = %q, want %q", got, want)
	}
	if got, want := e.ok("cancel", set), fmt.Sprintf("set %s: canceled 0, already canceled 3\n", set); got != want {
		t.Errorf("second cancel = %q, want %q", got, want)
	}
	if _, errOut, code := e.run("request", set+"/1"); code != exitPrecondition || errOut == "" {
		t.Errorf("request of a canceled task: exit %d, stderr %q", code, errOut)
	}
	if _, _, code := e.run("status", "99999"); code != exitNotFound {
		t.Errorf("status of an unknown set: exit %d, want %d", code, exitNotFound)
	}
}

func TestTimeout(t *testing.T) {
	e := newEnv(t, 1)
	set := strings.TrimSpace(e.ok("disclose", "-q", "--timeout", "300ms", "--", "sleep", "30"))
	_, errOut, code := e.run("request", set+"/0")
	if code != 124 || !strings.Contains(errOut, "timed out") {
		t.Errorf("request of a task past its timeout: exit %d, stderr %q; want 124 and a message", code, errOut)
	}
}

func TestStatusWatchOutputBill(t *testing.T) {
	e := newEnv(t, 2)
	set := strings.TrimSpace(e.ok("disclose", "-q", "--name", "tour", "--request", "--file", writeTemp(t, "echo one\necho two\n")))
	if got := e.ok("watch", set); !strings.Contains(got, "no requested task left") {
		t.Errorf("watch printed %q", got)
	}
	var first struct {
		Set struct {
			ID int64 `json:"id"`
		} `json:"set"`
		Tasks    []json.RawMessage `json:"tasks"`
		Snapshot bool              `json:"snapshot"`
	}
	lines := strings.Split(strings.TrimSpace(e.ok("watch", "--json", set)), "\n")
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil || !first.Snapshot || len(first.Tasks) != 2 || fmt.Sprint(first.Set.ID) != set {
		t.Errorf("watch --json first line %q (%v), want a snapshot of both tasks", lines[0], err)
	}
	if got := e.ok("ls"); !strings.Contains(got, "tour") {
		t.Errorf("ls printed %q", got)
	}
	st := e.ok("status", "--state", "finished", set)
	for _, want := range []string{set + "/0", set + "/1", "echo one", "finished"} {
		if !strings.Contains(st, want) {
			t.Errorf("status %q lacks %q", st, want)
		}
	}
	if got, want := e.ok("output", set+"/1"), "two\n"; got != want {
		t.Errorf("output = %q, want %q", got, want)
	}
	var b struct {
		Totals struct {
			Lines int64 `json:"lines"`
		} `json:"totals"`
		Lines []struct {
			Set    int64  `json:"set"`
			Index  int32  `json:"index"`
			Reason string `json:"reason"`
		} `json:"lines"`
	}
	e.json(&b, "bill", "--since", "1h")
	if b.Totals.Lines != 2 || len(b.Lines) != 2 {
		t.Errorf("bill = %+v, want 2 lines", b)
	}
	if got := e.ok("bill", "--lines"); !strings.Contains(got, "billed (requested work)") || !strings.Contains(got, set+"/1") {
		t.Errorf("bill --lines printed %q", got)
	}
	// The worker "w" with its two slots, and the two finished tasks.
	got := e.ok("cluster")
	// The server shares unisolated workers (newEnv): the table says so,
	// and how its worker isolates tasks, for anyone's.
	for _, re := range []string{`slots: \d busy of 2\n`, `\| w +\| [^|]+\| 2 +\|`, `\| finished tasks +\| 2 +\|`,
		`INSECURE: workers without isolation run any user's tasks`, `\| (uid|namespaces|none) +\| anyone +\|`} {
		if !regexp.MustCompile(re).MatchString(got) {
			t.Errorf("cluster printed %q, want it to match %s", got, re)
		}
	}
}

func writeTemp(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "tasks.txt")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSpecFileAndAppend(t *testing.T) {
	e := newEnv(t, 0)
	spec := `{"name": "sweep", "tasks": [
	  {"argv": ["sh", "-c", "echo $P"], "env": {"P": "0.1"}, "estimate_seconds": 5, "timeout_seconds": 60},
	  {"argv": ["true"], "no_speculation": true, "dir": "/tmp"}]}`
	var d struct {
		Set struct {
			ID   int64  `json:"id"`
			Name string `json:"name"`
		} `json:"set"`
		FirstIndex int32 `json:"first_index"`
		Count      int32 `json:"count"`
	}
	e.json(&d, "disclose", "--env", "Q=2", "--spec", writeTemp(t, spec))
	if d.Set.Name != "sweep" || d.Count != 2 || d.FirstIndex != 0 {
		t.Fatalf("disclose --spec = %+v", d)
	}
	e.json(&d, "disclose", "--set", fmt.Sprint(d.Set.ID), "--estimate", "1m", "--", "echo", "more")
	if d.FirstIndex != 2 || d.Count != 1 {
		t.Fatalf("append = %+v, want task 2", d)
	}
	var st struct {
		Tasks []struct {
			Spec struct {
				Argv            []string          `json:"argv"`
				Env             map[string]string `json:"env"`
				Dir             string            `json:"dir"`
				EstimateSeconds float64           `json:"estimate_seconds"`
				NoSpeculation   bool              `json:"no_speculation"`
				TimeoutSeconds  float64           `json:"timeout_seconds"`
			} `json:"spec"`
		} `json:"tasks"`
	}
	e.json(&st, "status", fmt.Sprint(d.Set.ID))
	if len(st.Tasks) != 3 {
		t.Fatalf("status has %d tasks, want 3", len(st.Tasks))
	}
	t0, t1, t2 := st.Tasks[0].Spec, st.Tasks[1].Spec, st.Tasks[2].Spec
	if t0.Env["P"] != "0.1" || t0.Env["Q"] != "2" || t0.EstimateSeconds != 5 || t0.TimeoutSeconds != 60 {
		t.Errorf("task 0 spec = %+v", t0)
	}
	if !t1.NoSpeculation || t1.Dir != "/tmp" || t1.Env["Q"] != "2" {
		t.Errorf("task 1 spec = %+v", t1)
	}
	if t2.EstimateSeconds != 60 || strings.Join(t2.Argv, " ") != "echo more" {
		t.Errorf("task 2 spec = %+v", t2)
	}
	for _, bad := range []string{`{"tasks": [{"argv": ["true"], "bogus": 1}]}`, `[{"argv": ["true"], "bogus": 1}]`} {
		if _, errOut, code := e.run("disclose", "--spec", writeTemp(t, bad)); code != exitInvalid || !strings.Contains(errOut, "bogus") {
			t.Errorf("spec %s with an unknown field: exit %d, stderr %q", bad, code, errOut)
		}
	}
}

func TestProgressDraws(t *testing.T) {
	var buf bytes.Buffer
	p := newProgress(&buf, true)
	p.update(sched.TaskSet{ID: 4, Counts: sched.TaskCounts{Total: 10, Finished: 3, Running: 2, Requested: 5}}, 0, 0)
	p.stop()
	p.stop()
	got := buf.String()
	if !strings.Contains(got, "set 4: 3/10 done, 2 running, 3 waiting") || !strings.HasSuffix(got, "\r\033[K") {
		t.Errorf("progress drew %q", got)
	}
	var off bytes.Buffer
	q := newProgress(&off, false)
	q.update(sched.TaskSet{ID: 4}, 0, 0)
	q.stop()
	if off.Len() != 0 {
		t.Errorf("progress off drew %q", off.String())
	}
}

// TestRequestInterrupted cancels the context of a waiting request (as
// Ctrl-C does): batchctl exits 130 and says the task stays requested.
func TestRequestInterrupted(t *testing.T) {
	e := newEnv(t, 1)
	set := strings.TrimSpace(e.ok("disclose", "-q", "--", "sleep", "30"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cl := client.New(client.Config{Server: e.url, HTTPClient: client.WithToken(nil, e.srv.AdminToken())})
	go func() {
		// Interrupt once the request has landed: the task is requested.
		_ = cl.Watch(ctx, sched.SetID(mustAtoi(t, set)), func(u client.WatchUpdate) error {
			if u.Set.Counts.Requested > 0 {
				cancel()
				return client.ErrStopWatch
			}
			return nil
		})
	}()
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"batchctl", "--server", e.url, "--data", e.data, "--config", os.DevNull, "request", set + "/0"}, &stdout, &stderr)
	if code != exitInterrupted || !strings.Contains(stderr.String(), "stay requested") {
		t.Errorf("interrupted request: exit %d, stderr %q", code, stderr.String())
	}
	if got := e.ok("--json", "status", set); !strings.Contains(got, `"state": "requested"`) {
		t.Errorf("after the interrupt the task is not requested: %s", got)
	}
	e.ok("cancel", set+"/0")
}

func mustAtoi(t *testing.T, s string) int64 {
	t.Helper()
	var n int64
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestBigOutput reads an output larger than one GetOutput page (4 MiB).
func TestBigOutput(t *testing.T) {
	e := newEnv(t, 1)
	const n = 5_000_000
	set := strings.TrimSpace(e.ok("disclose", "-q", "--request", "--", "sh", "-c", fmt.Sprintf("head -c %d /dev/zero | tr '\\000' a; echo done >&2", n)))
	out, errOut, code := e.run("request", set+"/0")
	if code != 0 || len(out) != n || strings.Trim(out, "a") != "" || errOut != "done\n" {
		t.Errorf("request: exit %d, %d bytes of stdout (want %d), stderr %q", code, len(out), n, errOut)
	}
	var v struct {
		StdoutSize int64  `json:"stdout_size"`
		Stdout     string `json:"stdout"`
	}
	if err := json.Unmarshal([]byte(e.ok("output", "--json", set+"/0")), &v); err != nil || v.StdoutSize != n || len(v.Stdout) != n {
		t.Errorf("output --json: size %d, %d bytes, %v", v.StdoutSize, len(v.Stdout), err)
	}
}

// A relative --dir is made absolute here, from the current directory; a
// --dir in the server's data directory is refused (exit code of a usage
// error from the server: InvalidArgument).
func TestDiscloseDir(t *testing.T) {
	e := newEnv(t, 0)
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	set := strings.TrimSpace(e.ok("disclose", "-q", "--dir", "sub/dir", "--", "true"))
	var st struct {
		Tasks []struct {
			Spec struct {
				Dir string `json:"dir"`
			} `json:"spec"`
		} `json:"tasks"`
	}
	e.json(&st, "status", set)
	if len(st.Tasks) != 1 || st.Tasks[0].Spec.Dir != filepath.Join(wd, "sub", "dir") {
		t.Fatalf("tasks %+v, want dir %s", st.Tasks, filepath.Join(wd, "sub", "dir"))
	}
	_, stderr, code := e.run("disclose", "-q", "--dir", filepath.Join(e.data, "worker"), "--", "true")
	if code == 0 || !strings.Contains(stderr, "data directory") {
		t.Fatalf("--dir in the data directory: exit %d, %q", code, stderr)
	}
}
