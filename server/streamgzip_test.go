package server_test

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"io"
	"net/http"
	"testing"

	"google.golang.org/protobuf/proto"

	batchv1 "batchd/proto/batch/v1"
)

// A browser's watch (Accept-Encoding: gzip, no Connect-Accept-Encoding)
// gets its stream gzipped at the HTTP level: the snapshot arrives whole
// and a later change arrives while the stream stays open (each flush
// flushes the compressor). A client that negotiates Connect's own
// compression gets no HTTP-level encoding.
func TestWatchGzipForBrowsers(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	set := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(2000)})).TaskSet
	body, err := proto.Marshal(&batchv1.WatchTaskSetRequest{SetId: set.Id})
	if err != nil {
		t.Fatal(err)
	}
	env := binary.BigEndian.AppendUint32([]byte{0}, uint32(len(body)))
	watch := func(connectGzip bool) *http.Response {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx(t), "POST", b.http.URL+"/batch.v1.TaskSetService/WatchTaskSet", bytes.NewReader(append(env, body...)))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/connect+proto")
		req.Header.Set("Accept-Encoding", "gzip, deflate, br")
		req.Header.Set("Authorization", "Bearer "+adminToken(t, b.dir))
		if connectGzip {
			req.Header.Set("Connect-Accept-Encoding", "gzip")
		}
		res, err := (&http.Client{Transport: &http.Transport{DisableCompression: true}}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { res.Body.Close() })
		return res
	}

	res := watch(false)
	if res.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("a browser's watch came back with Content-Encoding %q, want gzip", res.Header.Get("Content-Encoding"))
	}
	zr, err := gzip.NewReader(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	next := func() *batchv1.WatchTaskSetResponse {
		t.Helper()
		var head [5]byte
		if _, err := io.ReadFull(zr, head[:]); err != nil {
			t.Fatal(err)
		}
		msg := make([]byte, binary.BigEndian.Uint32(head[1:]))
		if _, err := io.ReadFull(zr, msg); err != nil {
			t.Fatal(err)
		}
		if head[0] != 0 {
			t.Fatalf("envelope flags %d (end of stream?): %s", head[0], msg)
		}
		m := &batchv1.WatchTaskSetResponse{}
		if err := proto.Unmarshal(msg, m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	n := 0
	for n < 2000 {
		m := next()
		if n == 0 && !m.Snapshot {
			t.Fatal("the first message is not the snapshot")
		}
		n += len(m.Tasks)
	}
	if n != 2000 {
		t.Fatalf("the snapshot held %d tasks, want 2000", n)
	}
	// A change while the stream is open reaches the reader: the compressor was flushed.
	must[*batchv1.CancelResponse](t)(b.tasks.Cancel(ctx(t), &batchv1.CancelRequest{SetId: set.Id, Indexes: []int32{7}}))
	for {
		m := next()
		if len(m.Tasks) == 1 && m.Tasks[0].Index == 7 && m.Tasks[0].State == batchv1.TaskState_TASK_STATE_CANCELED {
			break
		}
	}

	if got := watch(true).Header.Get("Content-Encoding"); got != "" {
		t.Errorf("a client negotiating Connect's compression got Content-Encoding %q", got)
	}
}
