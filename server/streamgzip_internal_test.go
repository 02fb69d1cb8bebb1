package server

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// A stream that flushes before its first message (FollowOutput opens and
// waits for output) must still go out marked gzip, or a browser reads the
// compressed bytes as they are and gets nothing. An empty stream is a valid
// gzip body, and a refusal (not 200) goes out uncompressed.
func TestGzipStreamFlushFirst(t *testing.T) {
	h := gzipStreams(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/refused":
			w.WriteHeader(http.StatusUnsupportedMediaType)
			_, _ = io.WriteString(w, "no")
			return
		case "/flush-only":
			w.(http.Flusher).Flush()
		case "/flush-first":
			w.(http.Flusher).Flush()
			_, _ = io.WriteString(w, "line one\n")
			w.(http.Flusher).Flush()
		}
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	get := func(path string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.URL+path, nil)
		req.Header.Set("Content-Type", "application/connect+proto")
		req.Header.Set("Accept-Encoding", "gzip") // set by hand: the transport then leaves the body compressed
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, body
	}
	for _, path := range []string{"/flush-first", "/flush-only"} {
		resp, body := get(path)
		if resp.Header.Get("Content-Encoding") != "gzip" {
			t.Fatalf("%s: Content-Encoding %q, want gzip", path, resp.Header.Get("Content-Encoding"))
		}
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatalf("%s: body is not gzip: %v (%q)", path, err, body)
		}
		plain, err := io.ReadAll(zr)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if want := map[string]string{"/flush-first": "line one\n", "/flush-only": ""}[path]; string(plain) != want {
			t.Fatalf("%s: body %q, want %q", path, plain, want)
		}
	}
	resp, body := get("/refused")
	if resp.StatusCode != http.StatusUnsupportedMediaType || resp.Header.Get("Content-Encoding") != "" || string(body) != "no" {
		t.Fatalf("refused: %d %q %q", resp.StatusCode, resp.Header.Get("Content-Encoding"), body)
	}
}
