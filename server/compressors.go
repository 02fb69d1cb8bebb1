package server

import (
	"compress/gzip"
	"errors"
	"io"

	"connectrpc.com/connect"

	"batchd/internal/freelist"
)

// gzipCompressors are the gzip writers behind Connect's per-message
// compression, kept across garbage collections. Connect pools its
// compressors in a sync.Pool, which the collector empties; a watch sends
// a message of more than 16 KiB (compressed) every 100 ms under load, and
// found the pool emptied nearly every time: a new writer is about 1 MB,
// 22% of all the bytes the server allocated per task at 64 local slots.
// Connect now pools keptCompressors, a few bytes each, and each borrows
// a writer from here only between its Reset to a message's sink and its
// Close. Eight writers (about 8 MB, only once that many messages were
// compressed at once) cover the streams a busy server compresses at once;
// more are made and dropped.
var gzipCompressors = freelist.List[*gzip.Writer]{Max: 8, New: func() *gzip.Writer {
	w, _ := gzip.NewWriterLevel(io.Discard, gzip.BestSpeed)
	return w
}}

var errNoSink = errors.New("compressor written before its Reset to a sink")

// keptCompressor is a connect.Compressor over a writer from
// gzipCompressors, borrowed for one message.
type keptCompressor struct{ gz *gzip.Writer }

func newKeptCompressor() connect.Compressor { return &keptCompressor{} }

// Reset starts a message to w; Connect resets to io.Discard when it puts
// the compressor back in its pool, which gives the writer back.
func (c *keptCompressor) Reset(w io.Writer) {
	if w == io.Discard {
		c.release()
		return
	}
	if c.gz == nil {
		c.gz = gzipCompressors.Get()
	}
	c.gz.Reset(w)
}

func (c *keptCompressor) Write(p []byte) (int, error) {
	if c.gz == nil { // Connect resets it to the message's sink first
		return 0, errNoSink
	}
	return c.gz.Write(p)
}

// Close ends the message (the writer stays borrowed until the Reset that
// follows, as Connect reads nothing from it in between).
func (c *keptCompressor) Close() error {
	if c.gz == nil {
		return nil
	}
	return c.gz.Close()
}

func (c *keptCompressor) release() {
	if c.gz == nil {
		return
	}
	c.gz.Reset(io.Discard) // keeps no reference to the last sink
	gzipCompressors.Put(c.gz)
	c.gz = nil
}
