package e2e

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// grpcurlPath finds grpcurl on PATH. Without it the test is skipped, unless
// CI=true, where a missing tool is a failure.
func grpcurlPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("grpcurl")
	if err == nil {
		return p
	}
	msg := "grpcurl not on PATH; install it with: go install github.com/fullstorydev/grpcurl/cmd/grpcurl@v1.9.3"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// TestGrpcurlReflection lists and calls every service with grpcurl, a gRPC
// client that is not ours, using server reflection (no proto files).
func TestGrpcurlReflection(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: skipped with -short")
	}
	grpcurl := grpcurlPath(t)
	c := startServer(t, "--slots", "1")
	auth := "authorization: Bearer " + c.adminToken()
	call := func(args ...string) (string, int) {
		t.Helper()
		pre := []string{"-plaintext"}
		if args[0] != "-no-token" {
			pre = append(pre, "-H", auth)
		} else {
			args = args[1:]
		}
		cmd := exec.Command(grpcurl, append(pre, args...)...)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("grpcurl %v: %v", args, err)
		}
		return string(out), code
	}
	mustCall := func(args ...string) string {
		t.Helper()
		out, code := call(args...)
		if code != 0 {
			t.Fatalf("grpcurl %v: exit %d\n%s", args, code, out)
		}
		return out
	}

	list := mustCall(c.addr, "list")
	for _, svc := range []string{"batch.v1.TaskSetService", "batch.v1.WorkerService", "batch.v1.BillingService", "batch.v1.ClusterService"} {
		if !strings.Contains(list, svc) {
			t.Errorf("grpcurl list = %q, want %s", list, svc)
		}
	}
	if desc := mustCall(c.addr, "describe", "batch.v1.TaskSetService"); !strings.Contains(desc, "rpc Disclose") || !strings.Contains(desc, "stream .batch.v1.WatchTaskSetResponse") {
		t.Errorf("describe TaskSetService = %q", desc)
	}
	if out := mustCall(c.addr, "grpc.health.v1.Health/Check"); !strings.Contains(out, "SERVING") {
		t.Errorf("health = %q", out)
	}
	// Reflection and health are open; the services are not.
	if out, code := call("-no-token", c.addr, "list"); code != 0 || !strings.Contains(out, "batch.v1.UserService") {
		t.Errorf("list without a token: exit %d, %q", code, out)
	}
	if out, code := call("-no-token", "-d", `{}`, c.addr, "batch.v1.TaskSetService/ListTaskSets"); code == 0 || !strings.Contains(out, "Unauthenticated") {
		t.Errorf("ListTaskSets without a token: exit %d, %q", code, out)
	}

	// Disclose twice with one idempotency key: one set, the second answer a replay.
	req := `{"name": "grpcurl", "tasks": [{"argv": ["echo", "hi"]}], "request": true, "idempotencyKey": "grpcurl-1"}`
	var first, second struct {
		TaskSet struct {
			ID string `json:"id"`
		} `json:"taskSet"`
		Replayed bool `json:"replayed"`
	}
	for _, v := range []any{&first, &second} {
		out := mustCall("-d", req, c.addr, "batch.v1.TaskSetService/Disclose")
		if err := json.Unmarshal([]byte(out), v); err != nil {
			t.Fatalf("Disclose answer %q: %v", out, err)
		}
	}
	if first.TaskSet.ID == "" || first.TaskSet.ID != second.TaskSet.ID || first.Replayed || !second.Replayed {
		t.Errorf("disclose then replay = %+v, %+v; want one set, the second a replay", first, second)
	}
	if got, want := c.mustCtl("request", first.TaskSet.ID+"/0").stdout, "hi\n"; got != want {
		t.Errorf("the task disclosed over gRPC printed %q, want %q", got, want)
	}
	if out := mustCall("-d", `{"setId": "`+first.TaskSet.ID+`", "index": 0}`, c.addr, "batch.v1.TaskSetService/GetOutput"); !strings.Contains(out, `"stdout": "aGkK"`) {
		t.Errorf("GetOutput = %q, want stdout hi (base64 aGkK)", out)
	}
	// The server stream: the snapshot arrives, then the test ends the call
	// (no time limit decides whether it came).
	watch := exec.CommandContext(t.Context(), grpcurl, "-plaintext", "-H", auth, "-d", `{"setId": "`+first.TaskSet.ID+`"}`, c.addr, "batch.v1.TaskSetService/WatchTaskSet")
	watch.SysProcAttr = childAttr()
	stdout, err := watch.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	var seen strings.Builder
	sc := bufio.NewScanner(stdout)
	for sc.Scan() && !strings.Contains(seen.String(), `"snapshot": true`) {
		seen.WriteString(sc.Text() + "\n")
	}
	_ = watch.Process.Kill()
	_ = watch.Wait()
	if !strings.Contains(seen.String(), `"snapshot": true`) {
		t.Errorf("WatchTaskSet = %q, want a snapshot", seen.String())
	}
	if out := mustCall("-d", `{"includeLines": true}`, c.addr, "batch.v1.BillingService/GetBill"); !strings.Contains(out, `"lines"`) {
		t.Errorf("GetBill = %q", out)
	}
	waitFor(t, patience, "the embedded slot", func() bool {
		var cl struct {
			Slots int `json:"slots"`
		}
		c.ctlJSON(&cl, "cluster")
		return cl.Slots == 1
	})
	if out := mustCall(c.addr, "batch.v1.ClusterService/GetCluster"); !strings.Contains(out, `"slots": 1`) {
		t.Errorf("GetCluster = %q", out)
	}
	if out := mustCall("-d", `{}`, c.addr, "batch.v1.TaskSetService/ListTaskSets"); !strings.Contains(out, "grpcurl") {
		t.Errorf("ListTaskSets = %q", out)
	}
	if out, code := call("-d", `{"setId": "999999"}`, c.addr, "batch.v1.TaskSetService/GetTaskSet"); code == 0 || !strings.Contains(out, "NotFound") {
		t.Errorf("GetTaskSet of an unknown set: exit %d, %q; want NotFound", code, out)
	}
}
