package server

import (
	"bytes"
	"compress/gzip"
	"io"
	"runtime"
	"testing"

	"connectrpc.com/connect"
)

// compressMessage runs one message through c as Connect's pool does: a
// Reset to the sink, the write, Close, and a Reset to io.Discard when it
// goes back to the pool.
func compressMessage(t *testing.T, c connect.Compressor, msg []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	c.Reset(&out)
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c.Reset(io.Discard)
	return out.Bytes()
}

// TestKeptCompressorRoundTrip: each message decompresses to itself, one
// after another on the same compressor.
func TestKeptCompressorRoundTrip(t *testing.T) {
	c := newKeptCompressor()
	for i, msg := range [][]byte{bytes.Repeat([]byte("task 1 finished\n"), 2000), []byte("short"), {}} {
		z, err := gzip.NewReader(bytes.NewReader(compressMessage(t, c, msg)))
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		got, err := io.ReadAll(z)
		if err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("message %d: got %d bytes (err %v), want %d", i, len(got), err, len(msg))
		}
	}
	var w keptCompressor
	if _, err := w.Write([]byte("x")); err == nil {
		t.Fatal("a write before any Reset succeeded; it has no sink")
	}
}

// TestKeptCompressorSurvivesCollections: a message after garbage
// collections compresses without making a new gzip writer (about 1 MB),
// which a compressor Connect pooled in its sync.Pool did: the collector
// empties that pool.
func TestKeptCompressorSurvivesCollections(t *testing.T) {
	msg := bytes.Repeat([]byte("task 1 finished with output\n"), 1000)
	compressMessage(t, newKeptCompressor(), msg) // one writer made and kept
	for range 3 {
		runtime.GC()
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	compressMessage(t, newKeptCompressor(), msg) // as after Connect's pool was emptied
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 256<<10 {
		t.Fatalf("a message after collections allocated %d bytes; a kept writer needs no new one (a new one is about 1 MB)", got)
	}
}
