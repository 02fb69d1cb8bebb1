package server

import (
	"compress/gzip"
	"net/http"
	"strings"
	"sync"
)

// gzipStreams compresses the HTTP body of Connect streaming responses
// (WatchTaskSet's snapshot above all: about 100 bytes a task, 10 MB for a
// set of 100,000) for clients that accept gzip at the HTTP level but not
// per message: browsers, whose connect-web sends no
// Connect-Accept-Encoding, while fetch decodes Content-Encoding itself.
// Clients that negotiate Connect's own compression (batchctl, the Go
// client) and gRPC are left alone. Each flush of the stream flushes the
// compressor first, so live updates are not held back.
func gzipStreams(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/connect+") ||
			r.Header.Get("Connect-Accept-Encoding") != "" || !acceptsGzip(r.Header.Get("Accept-Encoding")) {
			next.ServeHTTP(w, r)
			return
		}
		gw := &gzipWriter{ResponseWriter: w}
		defer gw.close()
		next.ServeHTTP(gw, r)
	})
}

// acceptsGzip says whether an Accept-Encoding header names gzip (without q=0).
func acceptsGzip(h string) bool {
	for _, part := range strings.Split(h, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(name), "gzip") {
			return strings.ReplaceAll(params, " ", "") != "q=0"
		}
	}
	return false
}

var gzipWriters = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	return w
}}

// gzipWriter compresses a response's body from its first write.
type gzipWriter struct {
	http.ResponseWriter
	gz          *gzip.Writer
	wroteHeader bool
	gzipped     bool // the header said gzip: the body must be
}

// WriteHeader sends the status once; a 200 is marked gzip-encoded (the
// body that follows is), any other status goes out as it is.
func (g *gzipWriter) WriteHeader(code int) {
	if g.wroteHeader {
		return
	}
	g.wroteHeader = true
	if code == http.StatusOK {
		g.gzipped = true
		h := g.ResponseWriter.Header()
		h.Del("Content-Length")
		h.Set("Content-Encoding", "gzip")
		h.Add("Vary", "Accept-Encoding")
	}
	g.ResponseWriter.WriteHeader(code)
}

func (g *gzipWriter) Write(p []byte) (int, error) {
	if !g.wroteHeader {
		g.WriteHeader(http.StatusOK)
	}
	if !g.gzipped {
		return g.ResponseWriter.Write(p)
	}
	if g.gz == nil {
		g.gz = gzipWriters.Get().(*gzip.Writer)
		g.gz.Reset(g.ResponseWriter)
	}
	return g.gz.Write(p)
}

// Flush sends what was written so far: the compressor's pending block, then the connection's buffer.
// A flush before any write (a stream that opens and waits, as FollowOutput
// does) sends the header, marked gzip, before anything else can.
func (g *gzipWriter) Flush() {
	if !g.wroteHeader {
		g.WriteHeader(http.StatusOK)
	}
	if g.gz != nil {
		_ = g.gz.Flush()
	}
	if f, ok := g.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection (deadlines).
func (g *gzipWriter) Unwrap() http.ResponseWriter { return g.ResponseWriter }

func (g *gzipWriter) close() {
	if g.gzipped && g.gz == nil { // a header marked gzip needs a gzip body, even an empty one
		g.gz = gzipWriters.Get().(*gzip.Writer)
		g.gz.Reset(g.ResponseWriter)
	}
	if g.gz == nil {
		return
	}
	_ = g.gz.Close()
	g.gz.Reset(nil)
	gzipWriters.Put(g.gz)
	g.gz = nil
}
