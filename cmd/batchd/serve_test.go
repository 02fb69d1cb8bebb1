package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"connectrpc.com/connect"

	"batchd/client"
	batchv1 "batchd/proto/batch/v1"
	"batchd/proto/batch/v1/batchv1connect"
)

// TestServe runs `batchd serve` with one local slot on a loopback port,
// runs a requested task through it, and stops it as SIGTERM does (main's
// NotifyContext cancels the context): the command returns nil.
func TestServe(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	sctx, stop := context.WithCancel(ctx)
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- newApp(outW, io.Discard).RunContext(sctx, []string{"batchd", "serve",
			"--listen", "127.0.0.1:0", "--data", dir, "--slots", "1", "--output-cap", "1KiB", "--lease", "30s",
			"--share-unisolated-workers"}) // the local slot may report no isolation
		outW.Close()
	}()
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "batchd serving on "); ok {
				urls <- strings.Fields(rest)[0]
			}
		}
	}()
	var url string
	select {
	case url = <-urls:
	case err := <-done:
		t.Fatalf("serve returned early: %v", err)
	case <-ctx.Done():
		t.Fatal("serve did not start")
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("data dir: %v %v", fi, err)
	}

	// Over the network nothing works without a token; the first start
	// wrote the admin's token into the data directory, 0600.
	_, err := batchv1connect.NewTaskSetServiceClient(http.DefaultClient, url).ListTaskSets(ctx, &batchv1.ListTaskSetsRequest{})
	if connect.CodeOf(err) != connect.CodeUnauthenticated {
		t.Fatalf("no token: %v, want Unauthenticated", err)
	}
	tokPath := filepath.Join(dir, "admin.token")
	if fi, err := os.Stat(tokPath); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("admin token file: %v %v", fi, err)
	}
	tok, _, err := client.ResolveToken(client.TokenSource{DataDir: dir, ConfigFile: filepath.Join(t.TempDir(), "none"), Env: func(string) (string, bool) { return "", false }})
	if err != nil || !strings.HasPrefix(tok, "bd_") {
		t.Fatalf("token %q: %v", tok, err)
	}
	c := batchv1connect.NewTaskSetServiceClient(http.DefaultClient, url, connect.WithInterceptors(client.BearerInterceptor(tok)))
	// batchd user add works beside the running server; the new user's
	// token works at once and sees none of the admin's sets.
	var userOut bytes.Buffer
	if err := newApp(&userOut, io.Discard).RunContext(ctx, []string{"batchd", "user", "add", "--data", dir, "bob"}); err != nil {
		t.Fatal(err)
	}
	bob := batchv1connect.NewTaskSetServiceClient(http.DefaultClient, url, connect.WithInterceptors(client.BearerInterceptor(strings.TrimSpace(userOut.String()))))
	if _, err := bob.ListTaskSets(ctx, &batchv1.ListTaskSetsRequest{}); err != nil {
		t.Fatalf("bob: %v", err)
	}
	res, err := c.Disclose(ctx, &batchv1.DiscloseRequest{Request: true, Tasks: []*batchv1.TaskSpec{
		{Argv: []string{"sh", "-c", "head -c 5000 /dev/zero | tr '\\0' x; echo set=$BATCH_TASK_SET"}}}})
	if err != nil {
		t.Fatal(err)
	}
	stream, err := c.WatchTaskSet(ctx, &batchv1.WatchTaskSetRequest{SetId: res.TaskSet.Id})
	if err != nil {
		t.Fatal(err)
	}
	for stream.Receive() && stream.Msg().TaskSet.Counts.Finished < 1 {
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	stream.Close()
	out, err := c.GetOutput(ctx, &batchv1.GetOutputRequest{SetId: res.TaskSet.Id})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Stdout) != 1024 || !out.StdoutTruncated || !strings.HasPrefix(out.Worker, "local-") {
		t.Fatalf("output: %d bytes, truncated %v, worker %q", len(out.Stdout), out.StdoutTruncated, out.Worker)
	}
	if _, err := bob.GetOutput(ctx, &batchv1.GetOutputRequest{SetId: res.TaskSet.Id}); connect.CodeOf(err) != connect.CodeNotFound {
		t.Fatalf("bob reads the admin's output: %v, want NotFound", err)
	}
	// An operator's correction is a new ledger line, beside the running server.
	userOut.Reset()
	if err := newApp(&userOut, io.Discard).RunContext(ctx, []string{"batchd", "bill", "correct", "--data", dir,
		"--slot-seconds", "-0.5", "--note", "test", "1"}); err != nil || !strings.Contains(userOut.String(), "corrects line 1 of admin") {
		t.Fatalf("bill correct: %v %q", err, userOut.String())
	}
	billing := batchv1connect.NewBillingServiceClient(http.DefaultClient, url, connect.WithInterceptors(client.BearerInterceptor(tok)))
	bill, err := billing.GetBill(ctx, &batchv1.GetBillRequest{IncludeLines: true})
	if err != nil || len(bill.Lines) != 2 || bill.Lines[1].Kind != "correction" || bill.Lines[1].Corrects != 1 || bill.Lines[0].PriceSlotSecond != 1 {
		t.Fatalf("bill after correction: %v %v", bill, err)
	}
	userOut.Reset()
	if err := newApp(&userOut, io.Discard).RunContext(ctx, []string{"batchd", "user", "revoke", "--data", dir, "bob"}); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.ListTaskSets(ctx, &batchv1.ListTaskSetsRequest{}); connect.CodeOf(err) != connect.CodeUnauthenticated {
		t.Fatalf("revoked bob: %v, want Unauthenticated", err)
	}

	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("serve did not stop")
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"16MiB": 16 << 20, "512KiB": 512 << 10, "1000": 1000, "2G": 2 << 30, "3 MB": 3e6} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "lots", "0"} {
		if _, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) succeeded", in)
		}
	}
}
