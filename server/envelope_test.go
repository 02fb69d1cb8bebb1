package server_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"connectrpc.com/connect"

	batchv1 "batchd/proto/batch/v1"
	"batchd/proto/batch/v1/batchv1connect"
	"batchd/server"
	"batchd/worker"
)

// records keeps every log record's level and message.
type records struct {
	mu   sync.Mutex
	list []slog.Record
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	r.list = append(r.list, rec.Clone())
	r.mu.Unlock()
	return nil
}
func (r *records) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *records) WithGroup(string) slog.Handler      { return r }

func (r *records) count(level slog.Level, msg string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, rec := range r.list {
		if rec.Level == level && (msg == "" || strings.Contains(rec.Message, msg)) {
			n++
		}
	}
	return n
}

// mangler is an http.RoundTripper that rewrites each request body (one
// or more enveloped messages) before it leaves the client.
type mangler struct {
	next   http.RoundTripper
	mangle func([]byte) []byte
}

func (m mangler) RoundTrip(r *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		return nil, err
	}
	body = m.mangle(body)
	r = r.Clone(r.Context())
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	r.GetBody = nil
	return m.next.RoundTrip(r)
}

// Malformed envelopes of streaming and gRPC calls are InvalidArgument, not
// Internal, Unknown or Unimplemented, and are logged at WARN once per peer,
// never at ERROR. Sent over a real listener.
func TestMalformedEnvelopes(t *testing.T) {
	t.Parallel()
	logs := &records{}
	srv, err := server.New(server.Config{Listen: "127.0.0.1:0", DataDir: t.TempDir(), TickInterval: -1, Logger: slog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	tok := withToken(srv.AdminToken())
	set := must[*batchv1.DiscloseResponse](t)(batchv1connect.NewTaskSetServiceClient(worker.NewHTTPClient(), srv.URL(), tok).
		Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1)})).TaskSet

	prefix := func(flags byte, n int) []byte {
		p := []byte{flags, 0, 0, 0, 0}
		binary.BigEndian.PutUint32(p[1:], uint32(n))
		return p
	}
	mangles := []struct {
		name string
		f    func([]byte) []byte
	}{
		{"Empty", func([]byte) []byte { return nil }},
		{"ShortPrefix", func(b []byte) []byte { return b[:3] }},
		{"ShortData", func(b []byte) []byte { return b[:len(b)-1] }},
		{"Promised", func(b []byte) []byte { return append(prefix(0, 1000), b[5:]...) }},
		{"EndStreamFlag", func(b []byte) []byte { b[0] = 0x02; return b }},
		{"TrailerFlag", func(b []byte) []byte { b[0] = 0x80; return b }},
		{"AllFlags", func(b []byte) []byte { b[0] = 0xff; return b }},
		{"CompressedFlag", func(b []byte) []byte { b[0] = 0x01; return b }},
		{"TwoMessages", func(b []byte) []byte { return append(append([]byte{}, b...), b...) }},
		{"TrailingByte", func(b []byte) []byte { return append(b, 0) }},
		{"EndStreamAfter", func(b []byte) []byte { return append(b, prefix(0x02, 2)...) }},
		{"Garbage", func(b []byte) []byte { return append(prefix(0, 3), 0xff, 0xff, 0xff) }},
	}
	protocols := []struct {
		name string
		opts []connect.ClientOption
	}{
		{"Connect", nil},
		{"GRPC", []connect.ClientOption{connect.WithGRPC()}},
		{"GRPCWeb", []connect.ClientOption{connect.WithGRPCWeb()}},
	}
	for _, p := range protocols {
		for _, m := range mangles {
			hc := &http.Client{Transport: mangler{next: worker.NewHTTPClient().Transport, mangle: m.f}}
			c := batchv1connect.NewTaskSetServiceClient(hc, srv.URL(), append(p.opts, tok)...)
			// The Connect protocol's unary calls carry no envelope.
			if p.name != "Connect" {
				_, err := c.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1)})
				if got := connect.CodeOf(err); got != connect.CodeInvalidArgument {
					t.Errorf("%s/Disclose/%s: got %v (code %v), want InvalidArgument", p.name, m.name, err, got)
				}
			}
			stream, err := c.WatchTaskSet(ctx(t), &batchv1.WatchTaskSetRequest{SetId: set.Id})
			if err == nil {
				for stream.Receive() {
					t.Errorf("%s/Watch/%s: got a message", p.name, m.name)
					break
				}
				err = stream.Err()
				stream.Close()
			}
			if got := connect.CodeOf(err); got != connect.CodeInvalidArgument {
				t.Errorf("%s/Watch/%s: got %v (code %v), want InvalidArgument", p.name, m.name, err, got)
			}
		}
	}
	if n := logs.count(slog.LevelError, ""); n != 0 {
		t.Errorf("%d records at ERROR, want none", n)
	}
	if n := logs.count(slog.LevelWarn, "malformed"); n != 1 {
		t.Errorf("%d WARN records of malformed requests from one peer, want 1", n)
	}
}
