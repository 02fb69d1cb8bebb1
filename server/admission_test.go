package server_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	"batchd/client"
	"batchd/internal/promtext"
	"batchd/proto/batch/v1/batchv1connect"
	"batchd/sched"
	"batchd/server"
	"batchd/store"
)

// jsonTasks is an endless-looking Connect JSON DiscloseRequest of n
// bytes, made as it is read: the client holds none of it.
type jsonTasks struct {
	n, done int
	buf     bytes.Buffer
}

func (j *jsonTasks) Read(p []byte) (int, error) {
	if j.done >= j.n {
		return 0, io.EOF
	}
	if j.buf.Len() == 0 {
		if j.done == 0 {
			j.buf.WriteString(`{"name":"big","tasks":[`)
		}
		j.buf.WriteString(`{"argv":["echo","` + strings.Repeat("x", 480) + `"]},`)
	}
	k, _ := j.buf.Read(p[:min(len(p), j.n-j.done)])
	j.done += k
	return k, nil
}

// hungUp stands for a call whose connection the server closed while the
// client still sent the body.
const hungUp = connect.Code(1000)

// metricValue reads one unlabelled metric from the server's /metrics.
func metricValue(t *testing.T, url, name string) float64 {
	t.Helper()
	m, err := promtext.Read(url)
	if err != nil {
		t.Fatal(err)
	}
	v, ok := m[name]
	if !ok {
		t.Fatalf("/metrics lacks %s", name)
	}
	return v
}

// Forty authenticated 25 MB Disclose bodies at once, none declaring its
// length, from two users: each takes its share of the request memory
// budget (the procedure's read limit, as the body declares none) before
// the server reads any of it, so the memory they hold together never
// passes the budget. Each is refused (past the read limit, or not
// admitted in time), in the caller's protocol.
func TestRequestMemoryBudget(t *testing.T) {
	t.Parallel()
	const budget = 120 << 20
	srv, err := server.New(server.Config{Listen: "127.0.0.1:0", DataDir: t.TempDir(), TickInterval: -1, Logger: logger(),
		RequestRate: -1, MaxRequestMemory: budget})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	if got := metricValue(t, srv.URL(), "batchd_request_memory_budget_bytes"); got != budget {
		t.Fatalf("budget %g in /metrics, want %d", got, budget)
	}
	_, bob, err := srv.DB().AddUser(ctx(t), store.AddUserInput{Name: "bob", Role: store.RoleUser})
	if err != nil {
		t.Fatal(err)
	}
	tokens := []string{srv.AdminToken(), bob}
	hc := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 0, DisableKeepAlives: true}}
	var wg sync.WaitGroup
	codes := make(chan connect.Code, 40)
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, err := http.NewRequestWithContext(ctx(t), http.MethodPost, srv.URL()+batchv1connect.TaskSetServiceDiscloseProcedure,
				&jsonTasks{n: 25 << 20})
			if err != nil {
				t.Error(err)
				return
			}
			req.ContentLength = -1 // chunked
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Connect-Protocol-Version", "1")
			req.Header.Set("Authorization", "Bearer "+tokens[i%2])
			res, err := hc.Do(req)
			if err != nil {
				// The server answered without reading the body and
				// hung up while the client still sent it.
				codes <- hungUp
				return
			}
			defer res.Body.Close()
			code, err := wireCode(res)
			if err != nil {
				t.Error(err)
				return
			}
			codes <- code
		}()
	}
	wg.Wait()
	close(codes)
	n, refused := 0, 0
	for c := range codes {
		n++
		switch c {
		case connect.CodeResourceExhausted:
			refused++
		case hungUp:
		default:
			t.Errorf("code %v, want ResourceExhausted", c)
		}
	}
	if refused == 0 {
		t.Error("no call was refused with ResourceExhausted")
	}
	if n != 40 {
		t.Fatalf("%d answers, want 40", n)
	}
	peak := metricValue(t, srv.URL(), "batchd_request_memory_peak_bytes")
	if peak <= server.DiscloseRequestBytes || peak > budget {
		t.Fatalf("request bodies held at most %g bytes at once; want more than one body's read limit (%d) and at most the budget %d",
			peak, server.DiscloseRequestBytes, budget)
	}
	t.Logf("peak %g bytes of %d; %g waited, %g refused for the budget", peak, budget,
		metricValue(t, srv.URL(), "batchd_request_memory_waits_total"), metricValue(t, srv.URL(), "batchd_request_memory_refusals_total"))
	// A handler gives its share back just after its answer is sent.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		in := metricValue(t, srv.URL(), "batchd_request_memory_in_use_bytes")
		if in == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%g bytes still held after every call ended", in)
		}
	}
}

// A small request's share of the budget comes back once its body is
// read, not when its call ends: open watch streams, many more than the
// budget would hold for their whole life, neither wait nor are refused.
func TestWatchesHoldNoBudget(t *testing.T) {
	t.Parallel()
	const budget = 8 << 20 // one small request's share is about 3 MiB
	srv, err := server.New(server.Config{Listen: "127.0.0.1:0", DataDir: t.TempDir(), TickInterval: -1, Logger: logger(),
		RequestRate: -1, MaxRequestMemory: budget})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	_, tok, err := srv.DB().AddUser(ctx(t), store.AddUserInput{Name: "carol", Role: store.RoleUser})
	if err != nil {
		t.Fatal(err)
	}
	cl := client.New(client.Config{Server: srv.URL(), HTTPClient: client.WithToken(&http.Client{}, tok)})
	res, err := cl.Disclose(ctx(t), client.DiscloseInput{Name: "w", Tasks: []sched.TaskSpec{{Argv: []string{"true"}}}})
	if err != nil {
		t.Fatal(err)
	}
	// Connect streams whose request declares no length (as a client
	// of another language may send it): each is charged its
	// procedure's read limit, about 3 MiB, until its body is read.
	msg := fmt.Sprintf(`{"setId":"%d"}`, res.Set.ID)
	env := append([]byte{0, 0, 0, 0, byte(len(msg))}, msg...)
	hc := &http.Client{Transport: &http.Transport{}}
	for range 10 {
		req, err := http.NewRequestWithContext(ctx(t), http.MethodPost, srv.URL()+batchv1connect.TaskSetServiceWatchTaskSetProcedure,
			struct{ io.Reader }{bytes.NewReader(env)})
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/connect+json")
		req.Header.Set("Connect-Protocol-Version", "1")
		req.Header.Set("Authorization", "Bearer "+tok)
		r, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		var prefix [5]byte
		if _, err := io.ReadFull(r.Body, prefix[:]); err != nil || prefix[0] != 0 {
			t.Fatalf("watch %d: first message prefix %v, %v", r.StatusCode, prefix, err)
		}
	}
	if w := metricValue(t, srv.URL(), "batchd_request_memory_waits_total"); w != 0 {
		t.Fatalf("%g calls waited for the budget", w)
	}
}
