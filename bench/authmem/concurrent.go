package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// jsonTasks is a Connect JSON DiscloseRequest of n bytes made as it is
// read, so that the client holds none of it.
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

// concurrent sends n authenticated Connect JSON Disclose bodies of mb MB
// at once, none declaring its length (chunked), and returns the server's
// RSS before and its peak growth (MB), the request memory budget's peak
// in use (MB, from /metrics) and the answers' status codes by count.
func (s *server) concurrent(n, mb int) (base, growMB, peakInUse float64, statuses map[string]int, err error) {
	if base, err = s.resetPeak(); err != nil {
		return
	}
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	var mu sync.Mutex
	statuses = map[string]int{}
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			status := "error"
			defer func() { mu.Lock(); statuses[status]++; mu.Unlock() }()
			req, err := http.NewRequest(http.MethodPost, s.url+"/batch.v1.TaskSetService/Disclose", &jsonTasks{n: mb << 20})
			if err != nil {
				return
			}
			req.ContentLength = -1
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Connect-Protocol-Version", "1")
			req.Header.Set("Authorization", "Bearer "+s.token)
			res, err := hc.Do(req)
			if err != nil {
				status = "error: " + err.Error()
				return
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			status = res.Status
			if m := regexp.MustCompile(`"code":"([a-z_]+)"`).FindSubmatch(b); m != nil {
				status += " " + string(m[1])
			}
		}()
	}
	wg.Wait()
	_, hwm, err := s.status()
	if err != nil {
		return
	}
	peak, err := s.metric("batchd_request_memory_peak_bytes")
	if err != nil {
		peak, err = -1e6, nil // a server without the budget
	}
	return base, hwm - base, peak / 1e6, statuses, err
}

// metric reads one unlabelled metric from the server's /metrics.
func (s *server) metric(name string) (float64, error) {
	res, err := http.Get(s.url + "/metrics")
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return 0, err
	}
	m := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindSubmatch(b)
	if m == nil {
		return 0, fmt.Errorf("/metrics lacks %s", name)
	}
	return strconv.ParseFloat(string(m[1]), 64)
}
