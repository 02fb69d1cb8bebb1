// Command authmem measures what a big request costs batchd before and after
// authentication, against `batchd serve` as a child
// process, reading the child's VmRSS and VmHWM from /proc/PID/status (the
// peak is reset through /proc/PID/clear_refs before each measurement):
//
//  1. a JSON Disclose of -unauth-mb MB without an Authorization header over
//     HTTP/1.1: time to the answer and the server's peak RSS growth
//     (target: at most 10 ms and 1 MB);
//  2. an authenticated disclose of -tasks tasks of about -task-bytes bytes
//     each through client.Disclose (a DiscloseStream), the way batchctl
//     sends it: the bytes on the wire and the server's peak RSS growth
//     (target: at most twice the wire size);
//  3. -concurrent authenticated JSON Disclose bodies of -concurrent-mb MB
//     at once, none declaring its length: the server's peak RSS growth
//     against its request memory budget (-budget, passed as
//     --max-request-memory; target: at most the budget + 64 MB).
//
// Each run starts a fresh server on a loopback port with a temporary data
// directory and no worker slots:
//
//	go run ./bench/authmem -runs 3
//
// It prints one line per measurement and run, then min/median/max. It
// measures; it asserts nothing.
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"batchd/client"
	"batchd/sched"
)

func main() {
	runs := flag.Int("runs", 3, "fresh servers to measure")
	bin := flag.String("bin", "", "batchd binary (default: build ./cmd/batchd)")
	unauthMB := flag.Int("unauth-mb", 25, "size of the unauthenticated JSON Disclose, MB")
	tasks := flag.Int("tasks", 200_000, "tasks of the authenticated disclose")
	taskBytes := flag.Int("task-bytes", 500, "bytes of each task's argument")
	skipAuth := flag.Bool("skip-auth", false, "measure only the unauthenticated call")
	conc := flag.Int("concurrent", 40, "authenticated chunked bodies sent at once (0: none)")
	concMB := flag.Int("concurrent-mb", 25, "size of each of them, MB")
	budget := flag.String("budget", "512MiB", "the server's --max-request-memory (\"\": the flag not passed, for a server without it)")
	flag.Parse()
	if err := run(*runs, *bin, *unauthMB, *tasks, *taskBytes, *skipAuth, *conc, *concMB, *budget); err != nil {
		fmt.Fprintln(os.Stderr, "authmem:", err)
		os.Exit(1)
	}
}

func run(runs int, bin string, unauthMB, tasks, taskBytes int, skipAuth bool, conc, concMB int, budget string) error {
	tmp, err := os.MkdirTemp("", "authmem-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if bin == "" {
		bin = filepath.Join(tmp, "batchd")
		if out, err := exec.Command("go", "build", "-o", bin, "batchd/cmd/batchd").CombinedOutput(); err != nil {
			return fmt.Errorf("go build: %v\n%s", err, out)
		}
	}
	unauthBody := jsonDisclose(unauthMB * 1e6)
	specs := make([]sched.TaskSpec, tasks)
	arg := strings.Repeat("x", taskBytes)
	for i := range specs {
		specs[i] = sched.TaskSpec{Argv: []string{"echo", arg}}
	}
	var unauthMS, unauthMB2, authRatio, peakRatio, concGrow, concPeak []float64
	for r := 1; r <= runs; r++ {
		var args []string
		if budget != "" {
			args = []string{"--max-request-memory", budget}
		}
		srv, err := start(bin, filepath.Join(tmp, fmt.Sprint("data", r)), args...)
		if err != nil {
			return err
		}
		ms, grow, err := srv.unauthenticated(unauthBody)
		if err != nil {
			srv.stop()
			return err
		}
		fmt.Printf("run %d: unauthenticated %.1f MB JSON Disclose: answered in %.2f ms, peak RSS +%.2f MB\n", r, float64(len(unauthBody))/1e6, ms, grow)
		unauthMS, unauthMB2 = append(unauthMS, ms), append(unauthMB2, grow)
		if !skipAuth {
			wire, grow, base, peak, dur, err := srv.authenticated(specs)
			if err != nil {
				srv.stop()
				return err
			}
			fmt.Printf("run %d: authenticated disclose of %d tasks: %.1f MB on the wire in %.1f s; RSS %.1f MB before, peak %.1f MB (+%.1f MB = %.2f× the wire)\n",
				r, tasks, float64(wire)/1e6, dur.Seconds(), base, peak, grow, grow*1e6/float64(wire))
			authRatio = append(authRatio, grow*1e6/float64(wire))
			peakRatio = append(peakRatio, peak*1e6/float64(wire))
		}
		if conc > 0 {
			base, grow, peak, statuses, err := srv.concurrent(conc, concMB)
			if err != nil {
				srv.stop()
				return err
			}
			fmt.Printf("run %d: %d concurrent chunked %d MB Disclose bodies: RSS %.1f MB before, peak +%.1f MB; budget in use at most %.1f MB of %s; answers %v\n",
				r, conc, concMB, base, grow, peak, budget, statuses)
			concGrow, concPeak = append(concGrow, grow), append(concPeak, peak)
		}
		srv.stop()
	}
	summary := func(name string, v []float64) {
		if len(v) == 0 {
			return
		}
		slices.Sort(v)
		fmt.Printf("%s: min %.2f median %.2f max %.2f\n", name, v[0], v[len(v)/2], v[len(v)-1])
	}
	summary("unauthenticated answer, ms", unauthMS)
	summary("unauthenticated peak RSS growth, MB", unauthMB2)
	summary("authenticated peak RSS growth / wire bytes", authRatio)
	summary("authenticated peak RSS / wire bytes", peakRatio)
	summary("concurrent bodies: peak RSS growth, MB", concGrow)
	summary("concurrent bodies: budget in use at most, MB", concPeak)
	return nil
}

// jsonDisclose is a Connect JSON DiscloseRequest of about n bytes.
func jsonDisclose(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"name":"big","tasks":[`)
	task := `{"argv":["echo","` + strings.Repeat("x", 480) + `"]}`
	for first := true; b.Len()+len(task)+3 < n; first = false {
		if !first {
			b.WriteByte(',')
		}
		b.WriteString(task)
	}
	b.WriteString(`]}`)
	for b.Len() < n {
		b.WriteByte(' ')
	}
	return b.Bytes()
}

// server is one `batchd serve` child.
type server struct {
	cmd   *exec.Cmd
	url   string
	token string
}

func start(bin, dir string, args ...string) (*server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, append([]string{"serve", "--listen", addr, "--data", dir, "--slots", "0", "--log-level", "error"}, args...)...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, url: "http://" + addr}
	for i := 0; ; i++ {
		res, err := http.Get(s.url + "/metrics")
		if err == nil {
			res.Body.Close()
			break
		}
		if i == 300 {
			s.stop()
			return nil, fmt.Errorf("server did not start: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	tok, err := os.ReadFile(filepath.Join(dir, "admin.token"))
	if err != nil {
		s.stop()
		return nil, err
	}
	s.token = strings.TrimSpace(string(tok))
	return s, nil
}

func (s *server) stop() {
	_ = s.cmd.Process.Signal(os.Interrupt)
	_ = s.cmd.Wait()
}

// status returns the server's VmRSS and VmHWM in MB.
func (s *server) status() (rss, hwm float64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
		if err != nil {
			return 0, 0, err
		}
		if name == "VmRSS" {
			rss = kb * 1024 / 1e6
		} else {
			hwm = kb * 1024 / 1e6
		}
	}
	return rss, hwm, sc.Err()
}

// resetPeak sets VmHWM back to VmRSS and returns it.
func (s *server) resetPeak() (float64, error) {
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", s.cmd.Process.Pid), []byte("5"), 0); err != nil {
		return 0, fmt.Errorf("reset the peak RSS: %w", err)
	}
	rss, _, err := s.status()
	return rss, err
}

// unauthenticated sends body as a Connect JSON Disclose without a token and
// returns the milliseconds to the answer and the server's peak RSS growth.
func (s *server) unauthenticated(body []byte) (ms, growMB float64, err error) {
	base, err := s.resetPeak()
	if err != nil {
		return 0, 0, err
	}
	req, err := http.NewRequest(http.MethodPost, s.url+"/batch.v1.TaskSetService/Disclose", bytes.NewReader(body))
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	hc := &http.Client{Transport: &http.Transport{}}
	t0 := time.Now()
	res, err := hc.Do(req)
	if err != nil {
		return 0, 0, err
	}
	ms = float64(time.Since(t0).Microseconds()) / 1000
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		return 0, 0, fmt.Errorf("unauthenticated call: %s %s", res.Status, b)
	}
	_, hwm, err := s.status()
	return ms, hwm - base, err
}

// countingTransport counts the request bytes it sends.
type countingTransport struct {
	n    atomic.Int64
	next http.RoundTripper
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		r.Body = countingBody{r.Body, &c.n}
	}
	return c.next.RoundTrip(r)
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// authenticated discloses specs through client.Disclose and returns the
// wire bytes, the server's peak RSS growth, its RSS before and at the peak
// (MB) and the call's duration.
func (s *server) authenticated(specs []sched.TaskSpec) (wire int64, growMB, base, peak float64, d time.Duration, err error) {
	ct := &countingTransport{next: &http.Transport{}}
	c := client.New(client.Config{Server: s.url, HTTPClient: client.WithToken(&http.Client{Transport: ct}, s.token)})
	if base, err = s.resetPeak(); err != nil {
		return
	}
	t0 := time.Now()
	res, err := c.Disclose(context.Background(), client.DiscloseInput{Name: "big", Tasks: specs})
	d = time.Since(t0)
	if err != nil {
		return
	}
	if int(res.Count) != len(specs) {
		err = fmt.Errorf("disclosed %d tasks of %d", res.Count, len(specs))
		return
	}
	_, peak, err = s.status()
	return ct.n.Load(), peak - base, base, peak, d, err
}
