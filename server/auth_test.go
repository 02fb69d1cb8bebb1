package server_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	batchv1 "batchd/proto/batch/v1"
	"batchd/proto/batch/v1/batchv1connect"
	"batchd/sched"
	"batchd/server"
	"batchd/store"
)

// clients are the generated clients of every service, for one token.
type clients struct {
	tasks   batchv1connect.TaskSetServiceClient
	workers batchv1connect.WorkerServiceClient
	billing batchv1connect.BillingServiceClient
	cluster batchv1connect.ClusterServiceClient
	users   batchv1connect.UserServiceClient
	control batchv1connect.TaskSetControlServiceClient
}

func (b *bundle) as(token string) clients {
	var opts []connect.ClientOption
	if token != "" {
		opts = append(opts, withToken(token))
	}
	hc, url := b.http.Client(), b.http.URL
	return clients{
		tasks:   batchv1connect.NewTaskSetServiceClient(hc, url, opts...),
		workers: batchv1connect.NewWorkerServiceClient(hc, url, opts...),
		billing: batchv1connect.NewBillingServiceClient(hc, url, opts...),
		cluster: batchv1connect.NewClusterServiceClient(hc, url, opts...),
		users:   batchv1connect.NewUserServiceClient(hc, url, opts...),
		control: batchv1connect.NewTaskSetControlServiceClient(hc, url, opts...),
	}
}

// addUser creates a user through the admin RPC and returns its token.
func (b *bundle) addUser(t *testing.T, name, role string) string {
	t.Helper()
	res, err := b.users.AddUser(ctx(t), &batchv1.AddUserRequest{Name: name, Role: role})
	if err != nil {
		t.Fatal(err)
	}
	if res.User.Name != name || res.User.Role != role || len(res.Token) < 30 {
		t.Fatalf("add user: %v", res)
	}
	return res.Token
}

const (
	ok     = connect.Code(0)
	unauth = connect.CodeUnauthenticated
	denied = connect.CodePermissionDenied
	nf     = connect.CodeNotFound
)

// TestIsolation calls every RPC as the owner of a task set, another user,
// an admin, a worker token, no token and a wrong token, and checks the
// Connect code of each: a user reaches only its own sets (another user's
// set is NotFound, as if it did not exist), an admin reaches every set,
// workers reach only the worker service and everyone else none of it.
func TestIsolation(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	owner := b.addUser(t, "alice", store.RoleUser)
	other := b.addUser(t, "bob", store.RoleUser)
	wtok := b.addUser(t, "wk", store.RoleWorker)
	callers := []struct {
		name  string
		token string
	}{
		{"owner", owner}, {"other", other}, {"admin", adminToken(t, b.dir)}, {"worker", wtok},
		{"none", ""}, {"wrong", "bd_" + "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"},
	}
	alice := b.as(owner)
	// Alice's set: task 0 finished (readable), the others disclosed.
	w, _ := b.worker(t, "w1", 1)
	set := must[*batchv1.DiscloseResponse](t)(alice.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Name: "mine", Tasks: echo(40)})).TaskSet
	must[*batchv1.RequestResponse](t)(alice.tasks.Request(ctx(t), &batchv1.RequestRequest{SetId: set.Id, Indexes: []int32{0}}))
	st := w.start()
	rep, err := b.workers.ReportFinished(ctx(t), &batchv1.ReportFinishedRequest{WorkerId: "w1", CopyId: st.CopyId, Stdout: []byte("secret"), RunSeconds: 1,
		Kept: []*batchv1.KeptFileContent{{File: &batchv1.KeptFile{Path: "k.txt", Size: 11}, Content: []byte("kept-secret")}}})
	if err != nil || rep.Outcome != batchv1.ReportOutcome_REPORT_OUTCOME_WON {
		t.Fatalf("report: %v, %v", rep, err)
	}
	// The worker wk has a worker of its own.
	must[*batchv1.RegisterResponse](t)(b.as(wtok).workers.Register(ctx(t), &batchv1.RegisterRequest{Isolation: "namespaces", Name: "wk-1", Slots: 0}))

	n := 0
	uniq := func() string { n++; return fmt.Sprintf("u%d", n) }
	idx := int32(1)
	nextIndex := func() int32 { idx++; return idx }
	type row struct {
		rpc  string
		call func(c clients, who string) error
		// want: owner, other, admin, worker; none and wrong are always
		// Unauthenticated.
		want [4]connect.Code
	}
	rows := []row{
		{"Disclose(append)", func(c clients, who string) error {
			_, err := c.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{SetId: set.Id, Tasks: echo(1)})
			return err
		}, [4]connect.Code{ok, nf, ok, denied}},
		{"Disclose(new)", func(c clients, who string) error {
			_, err := c.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1)})
			return err
		}, [4]connect.Code{ok, ok, ok, denied}},
		{"DiscloseStream(append)", func(c clients, who string) error {
			_, err := discloseStream(ctx(t), c.tasks, &batchv1.DiscloseStreamRequest{SetId: set.Id, Tasks: echo(1)})
			return err
		}, [4]connect.Code{ok, nf, ok, denied}},
		{"DiscloseStream(new)", func(c clients, who string) error {
			_, err := discloseStream(ctx(t), c.tasks, &batchv1.DiscloseStreamRequest{Tasks: echo(1)})
			return err
		}, [4]connect.Code{ok, ok, ok, denied}},
		{"Request", func(c clients, who string) error {
			_, err := c.tasks.Request(ctx(t), &batchv1.RequestRequest{SetId: set.Id, Indexes: []int32{nextIndex()}})
			return err
		}, [4]connect.Code{ok, nf, ok, denied}},
		{"Cancel", func(c clients, who string) error {
			_, err := c.tasks.Cancel(ctx(t), &batchv1.CancelRequest{SetId: set.Id, Indexes: []int32{nextIndex()}})
			return err
		}, [4]connect.Code{ok, nf, ok, denied}},
		{"GetTaskSet", func(c clients, who string) error {
			_, err := c.tasks.GetTaskSet(ctx(t), &batchv1.GetTaskSetRequest{SetId: set.Id})
			return err
		}, [4]connect.Code{ok, nf, ok, denied}},
		{"ListTaskSets", func(c clients, who string) error {
			res, err := c.tasks.ListTaskSets(ctx(t), &batchv1.ListTaskSetsRequest{})
			if err != nil {
				return err
			}
			for _, s := range res.TaskSets {
				if s.Id == set.Id && s.Owner != "alice" {
					return fmt.Errorf("set listed with owner %q", s.Owner)
				}
				if s.Id == set.Id && who != "owner" {
					return connect.NewError(connect.CodeDataLoss, fmt.Errorf("alice's set listed to another caller"))
				}
			}
			return nil
		}, [4]connect.Code{ok, ok, ok, denied}},
		{"ListTaskSets(all)", func(c clients, who string) error {
			res, err := c.tasks.ListTaskSets(ctx(t), &batchv1.ListTaskSetsRequest{AllOwners: true})
			if err != nil {
				return err
			}
			for _, s := range res.TaskSets {
				if s.Id == set.Id {
					return nil
				}
			}
			return fmt.Errorf("alice's set not in everyone's list")
		}, [4]connect.Code{denied, denied, ok, denied}},
		{"WatchTaskSet", func(c clients, who string) error {
			cctx, cancel := context.WithCancel(ctx(t))
			defer cancel()
			s, err := c.tasks.WatchTaskSet(cctx, &batchv1.WatchTaskSetRequest{SetId: set.Id})
			if err != nil {
				return err
			}
			defer s.Close()
			if !s.Receive() {
				return s.Err()
			}
			if s.Msg().TaskSet.Id != set.Id {
				return fmt.Errorf("watch sent set %d", s.Msg().TaskSet.Id)
			}
			return nil
		}, [4]connect.Code{ok, nf, ok, denied}},
		{"GetOutput", func(c clients, who string) error {
			res, err := c.tasks.GetOutput(ctx(t), &batchv1.GetOutputRequest{SetId: set.Id, Index: 0})
			if err == nil && string(res.Stdout) != "secret" {
				return fmt.Errorf("stdout %q", res.Stdout)
			}
			return err
		}, [4]connect.Code{ok, nf, ok, denied}},
		{"GetKeptFile", func(c clients, who string) error {
			res, err := c.tasks.GetKeptFile(ctx(t), &batchv1.GetKeptFileRequest{SetId: set.Id, Index: 0, Path: "k.txt"})
			if err == nil && string(res.Content) != "kept-secret" {
				return fmt.Errorf("content %q", res.Content)
			}
			return err
		}, [4]connect.Code{ok, nf, ok, denied}},
		{"FollowOutput", func(c clients, who string) error {
			cctx, cancel := context.WithCancel(ctx(t))
			defer cancel()
			s, err := c.tasks.FollowOutput(cctx, &batchv1.FollowOutputRequest{SetId: set.Id, Index: 0})
			if err != nil {
				return err
			}
			defer s.Close()
			for s.Receive() {
				if m := s.Msg(); m.Ended {
					if string(m.Stdout) != "secret" {
						return fmt.Errorf("followed %q", m.Stdout)
					}
					return nil
				}
			}
			return s.Err()
		}, [4]connect.Code{ok, nf, ok, denied}},
		{"Retry", func(c clients, who string) error {
			i := nextIndex()
			if _, err := b.tasks.Cancel(ctx(t), &batchv1.CancelRequest{SetId: set.Id, Indexes: []int32{i}}); err != nil {
				return connect.NewError(connect.CodeDataLoss, err)
			}
			_, err := c.tasks.Retry(ctx(t), &batchv1.RetryRequest{SetId: set.Id, Indexes: []int32{i}})
			return err
		}, [4]connect.Code{ok, nf, ok, denied}},
		{"HoldTasks", func(c clients, who string) error {
			_, err := c.control.HoldTasks(ctx(t), &batchv1.HoldTasksRequest{SetId: set.Id, Indexes: []int32{nextIndex()}})
			return err
		}, [4]connect.Code{ok, nf, ok, denied}},
		{"ReleaseTasks", func(c clients, who string) error {
			_, err := c.control.ReleaseTasks(ctx(t), &batchv1.ReleaseTasksRequest{SetId: set.Id, Indexes: []int32{nextIndex()}})
			return err
		}, [4]connect.Code{ok, nf, ok, denied}},
		{"UpdateTaskSet", func(c clients, who string) error {
			n := int32(100)
			_, err := c.control.UpdateTaskSet(ctx(t), &batchv1.UpdateTaskSetRequest{SetId: set.Id, MaxRunning: &n})
			return err
		}, [4]connect.Code{ok, nf, ok, denied}},
		{"GetTask", func(c clients, who string) error {
			res, err := c.tasks.GetTask(ctx(t), &batchv1.GetTaskRequest{SetId: set.Id, Index: 0})
			if err == nil && (res.Task.Index != 0 || len(res.Task.Copies) != 1) {
				return fmt.Errorf("task %v", res.Task)
			}
			return err
		}, [4]connect.Code{ok, nf, ok, denied}},
		{"GetOutputs", func(c clients, who string) error {
			res, err := c.tasks.GetOutputs(ctx(t), &batchv1.GetOutputsRequest{SetId: set.Id})
			if err == nil && (len(res.Outputs) == 0 || string(res.Outputs[0].Stdout) != "secret") {
				return fmt.Errorf("outputs %v", res.Outputs)
			}
			return err
		}, [4]connect.Code{ok, nf, ok, denied}},
		{"Why", func(c clients, who string) error {
			res, err := c.tasks.Why(ctx(t), &batchv1.WhyRequest{SetId: set.Id, Indexes: []int32{0}})
			if err == nil && (len(res.Tasks) != 1 || res.Tasks[0].Index != 0) {
				return fmt.Errorf("why answered %v", res.Tasks)
			}
			return err
		}, [4]connect.Code{ok, nf, ok, denied}},
		{"GetBill(owner)", func(c clients, who string) error {
			_, err := c.billing.GetBill(ctx(t), &batchv1.GetBillRequest{Owner: "alice", IncludeLines: true})
			return err
		}, [4]connect.Code{ok, denied, ok, denied}},
		{"GetBill(everyone)", func(c clients, who string) error {
			res, err := c.billing.GetBill(ctx(t), &batchv1.GetBillRequest{Owner: store.AllOwners, IncludeLines: true})
			if err == nil && len(res.ByOwner) == 0 {
				return fmt.Errorf("everyone's bill without owners: %v", res)
			}
			return err
		}, [4]connect.Code{denied, denied, ok, denied}},
		{"GetBill(set)", func(c clients, who string) error {
			res, err := c.billing.GetBill(ctx(t), &batchv1.GetBillRequest{SetId: set.Id, IncludeLines: true})
			if err == nil && (len(res.Lines) == 0 || res.Lines[0].Owner != "alice") {
				return fmt.Errorf("bill of the set: %v", res.Lines)
			}
			return err
		}, [4]connect.Code{ok, nf, ok, denied}},
		{"GetBill(mine)", func(c clients, who string) error {
			res, err := c.billing.GetBill(ctx(t), &batchv1.GetBillRequest{IncludeLines: true})
			if err != nil {
				return err
			}
			for _, l := range res.Lines {
				if l.SetId == set.Id && who != "owner" {
					return connect.NewError(connect.CodeDataLoss, fmt.Errorf("alice's line billed to another caller"))
				}
			}
			return nil
		}, [4]connect.Code{ok, ok, ok, denied}},
		{"GetCluster", func(c clients, who string) error {
			_, err := c.cluster.GetCluster(ctx(t), &batchv1.GetClusterRequest{})
			return err
		}, [4]connect.Code{ok, ok, ok, denied}},
		{"GetHistory", func(c clients, who string) error {
			_, err := c.cluster.GetHistory(ctx(t), &batchv1.GetHistoryRequest{SetId: set.Id})
			return err
		}, [4]connect.Code{ok, nf, ok, denied}},
		{"GetHistory(the cluster's)", func(c clients, who string) error {
			_, err := c.cluster.GetHistory(ctx(t), &batchv1.GetHistoryRequest{})
			return err
		}, [4]connect.Code{ok, ok, ok, denied}},
		{"Register", func(c clients, who string) error {
			_, err := c.workers.Register(ctx(t), &batchv1.RegisterRequest{Isolation: "namespaces", Name: "wk-1", Slots: 0})
			return err
		}, [4]connect.Code{denied, denied, denied, ok}},
		{"Register(another's name)", func(c clients, who string) error {
			_, err := c.workers.Register(ctx(t), &batchv1.RegisterRequest{Isolation: "namespaces", Name: "w1", Slots: 1})
			return err
		}, [4]connect.Code{denied, denied, denied, denied}},
		{"Assignments", func(c clients, who string) error {
			cctx, cancel := context.WithCancel(ctx(t))
			defer cancel()
			s, err := c.workers.Assignments(cctx, &batchv1.AssignmentsRequest{WorkerId: "wk-1"})
			if err != nil {
				return err
			}
			defer s.Close()
			// A refused stream ends with its error. An accepted one sends
			// its headers and stays open (nothing to send) until a second
			// stream for the same worker replaces it: then it ends
			// cleanly. No timer decides which is which.
			s.ResponseHeader() // waits for the headers
			again, err := c.workers.Assignments(cctx, &batchv1.AssignmentsRequest{WorkerId: "wk-1"})
			if err == nil {
				defer again.Close()
			}
			if s.Receive() {
				return fmt.Errorf("unexpected assignment %v", s.Msg())
			}
			return s.Err()
		}, [4]connect.Code{denied, denied, denied, ok}},
		{"Heartbeat", func(c clients, who string) error {
			_, err := c.workers.Heartbeat(ctx(t), &batchv1.HeartbeatRequest{WorkerId: "wk-1"})
			return err
		}, [4]connect.Code{denied, denied, denied, ok}},
		{"Heartbeat(forged)", func(c clients, who string) error {
			_, err := c.workers.Heartbeat(ctx(t), &batchv1.HeartbeatRequest{WorkerId: "w1"})
			return err
		}, [4]connect.Code{denied, denied, denied, denied}},
		{"ReportFinished(forged)", func(c clients, who string) error {
			_, err := c.workers.ReportFinished(ctx(t), &batchv1.ReportFinishedRequest{WorkerId: "w1", CopyId: st.CopyId, Stdout: []byte("forged")})
			return err
		}, [4]connect.Code{denied, denied, denied, denied}},
		{"ReportFinished(not held)", func(c clients, who string) error {
			_, err := c.workers.ReportFinished(ctx(t), &batchv1.ReportFinishedRequest{WorkerId: "wk-1", CopyId: st.CopyId, Stdout: []byte("forged")})
			return err
		}, [4]connect.Code{denied, denied, denied, denied}},
		{"ReportFinishedMany(forged)", func(c clients, who string) error {
			return manyErr(c.workers.ReportFinishedMany(ctx(t), &batchv1.ReportFinishedManyRequest{WorkerId: "w1",
				Reports: []*batchv1.ReportFinishedRequest{{CopyId: st.CopyId, Stdout: []byte("forged")}}}))
		}, [4]connect.Code{denied, denied, denied, denied}},
		{"ReportFinishedMany(not held)", func(c clients, who string) error {
			return manyErr(c.workers.ReportFinishedMany(ctx(t), &batchv1.ReportFinishedManyRequest{WorkerId: "wk-1",
				Reports: []*batchv1.ReportFinishedRequest{{CopyId: st.CopyId, Stdout: []byte("forged")}}}))
		}, [4]connect.Code{denied, denied, denied, denied}},
		{"ReportOutput", func(c clients, who string) error {
			res, err := c.workers.ReportOutput(ctx(t), &batchv1.ReportOutputRequest{WorkerId: "wk-1", CopyId: st.CopyId, Stdout: []byte("x")})
			if err == nil && !res.Stop {
				return fmt.Errorf("a push for a copy nobody follows: %v", res)
			}
			return err
		}, [4]connect.Code{denied, denied, denied, ok}},
		{"ReportOutput(forged)", func(c clients, who string) error {
			_, err := c.workers.ReportOutput(ctx(t), &batchv1.ReportOutputRequest{WorkerId: "w1", CopyId: st.CopyId, Stdout: []byte("forged")})
			return err
		}, [4]connect.Code{denied, denied, denied, denied}},
		{"ReportPilots", func(c clients, who string) error {
			_, err := c.workers.ReportPilots(ctx(t), &batchv1.ReportPilotsRequest{Pool: "p", Engine: "slurm"})
			return err
		}, [4]connect.Code{denied, denied, denied, ok}},
		{"MintWorkerToken", func(c clients, who string) error {
			_, err := c.workers.MintWorkerToken(ctx(t), &batchv1.MintWorkerTokenRequest{Worker: "pilot-" + uniq()})
			return err
		}, [4]connect.Code{denied, denied, denied, ok}},
		{"AddUser", func(c clients, who string) error {
			_, err := c.users.AddUser(ctx(t), &batchv1.AddUserRequest{Name: uniq()})
			return err
		}, [4]connect.Code{denied, denied, ok, denied}},
		{"ListUsers", func(c clients, who string) error {
			_, err := c.users.ListUsers(ctx(t), &batchv1.ListUsersRequest{})
			return err
		}, [4]connect.Code{denied, denied, ok, denied}},
		{"NewToken", func(c clients, who string) error {
			_, err := c.users.NewToken(ctx(t), &batchv1.NewTokenRequest{Name: "alice"})
			return err
		}, [4]connect.Code{denied, denied, ok, denied}},
		{"RevokeUser", func(c clients, who string) error {
			name := uniq()
			if _, err := b.users.AddUser(ctx(t), &batchv1.AddUserRequest{Name: name}); err != nil {
				return connect.NewError(connect.CodeDataLoss, err)
			}
			_, err := c.users.RevokeUser(ctx(t), &batchv1.RevokeUserRequest{Name: name})
			return err
		}, [4]connect.Code{denied, denied, ok, denied}},
		{"SetUserWeight", func(c clients, who string) error {
			_, err := c.users.SetUserWeight(ctx(t), &batchv1.SetUserWeightRequest{Name: "alice", Weight: 2})
			return err
		}, [4]connect.Code{denied, denied, ok, denied}},
		{"WhoAmI", func(c clients, who string) error {
			_, err := c.users.WhoAmI(ctx(t), &batchv1.WhoAmIRequest{})
			return err
		}, [4]connect.Code{ok, ok, ok, ok}},
	}
	// Every RPC of every service has a row: a new RPC fails this test until
	// its row says who may call it.
	covered := map[string]bool{}
	for _, r := range rows {
		name, _, _ := strings.Cut(r.rpc, "(")
		covered[name] = true
	}
	protoregistry.GlobalFiles.RangeFilesByPackage("batch.v1", func(fd protoreflect.FileDescriptor) bool {
		for i := 0; i < fd.Services().Len(); i++ {
			ms := fd.Services().Get(i).Methods()
			for j := 0; j < ms.Len(); j++ {
				if m := ms.Get(j); !covered[string(m.Name())] {
					t.Errorf("no isolation row for %s", m.FullName())
				}
			}
		}
		return true
	})
	for _, r := range rows {
		for i, cl := range callers {
			want := unauth
			if i < 4 {
				want = r.want[i]
			}
			t.Run(r.rpc+"/"+cl.name, func(t *testing.T) {
				err := r.call(b.as(cl.token), cl.name)
				if got := connect.CodeOf(err); (err == nil) != (want == ok) || (err != nil && got != want) {
					t.Fatalf("%s as %s: error %v (code %v), want %v", r.rpc, cl.name, err, got, want)
				}
			})
		}
	}
	// The forged report changed nothing: alice still reads her own output.
	out := must[*batchv1.GetOutputResponse](t)(alice.tasks.GetOutput(ctx(t), &batchv1.GetOutputRequest{SetId: set.Id, Index: 0}))
	if string(out.Stdout) != "secret" {
		t.Fatalf("stdout after forged reports %q", out.Stdout)
	}
}

// A revoked user's token fails on its very next call; tokens are stored
// hashed only; the admin token file is 0600.
func TestRevokeAndTokens(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	tok := b.addUser(t, "carol", store.RoleUser)
	carol := b.as(tok)
	who := must[*batchv1.WhoAmIResponse](t)(carol.users.WhoAmI(ctx(t), &batchv1.WhoAmIRequest{}))
	if who.Name != "carol" || who.Role != store.RoleUser {
		t.Fatalf("whoami: %v", who)
	}
	second := must[*batchv1.NewTokenResponse](t)(b.users.NewToken(ctx(t), &batchv1.NewTokenRequest{Name: "carol"})).Token
	if second == tok {
		t.Fatal("NewToken returned the same token")
	}
	must[*batchv1.RevokeUserResponse](t)(b.users.RevokeUser(ctx(t), &batchv1.RevokeUserRequest{Name: "carol"}))
	for _, tk := range []string{tok, second} {
		_, err := b.as(tk).tasks.ListTaskSets(ctx(t), &batchv1.ListTaskSetsRequest{})
		wantCode(t, err, connect.CodeUnauthenticated)
	}
	_, err := b.users.RevokeUser(ctx(t), &batchv1.RevokeUserRequest{Name: "admin"})
	wantCode(t, err, connect.CodeFailedPrecondition)
	_, err = b.users.AddUser(ctx(t), &batchv1.AddUserRequest{Name: "carol"})
	wantCode(t, err, connect.CodeAlreadyExists)
	_, err = b.users.AddUser(ctx(t), &batchv1.AddUserRequest{Name: "bad name"})
	wantCode(t, err, connect.CodeInvalidArgument)
	list := must[*batchv1.ListUsersResponse](t)(b.users.ListUsers(ctx(t), &batchv1.ListUsersRequest{}))
	if len(list.Users) != 2 || list.Users[1].Name != "carol" || list.Users[1].RevokedAt == nil || list.Users[1].Tokens != 0 {
		t.Fatalf("users: %v", list.Users)
	}
	fi, err := os.Stat(filepath.Join(b.dir, server.AdminTokenFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("admin token file: %v %v", fi, err)
	}
	// The database holds no token, only hashes.
	db, err := os.ReadFile(filepath.Join(b.dir, "batchd.db"))
	if err != nil {
		t.Fatal(err)
	}
	wal, _ := os.ReadFile(filepath.Join(b.dir, "batchd.db-wal"))
	for _, tk := range []string{tok, second, adminToken(t, b.dir)} {
		if containsBytes(db, tk) || containsBytes(wal, tk) {
			t.Fatalf("token %s… stored in the clear", tk[:6])
		}
		if !containsBytes(append(db, wal...), store.HashToken(tk)) {
			t.Fatalf("hash of token %s… not stored", tk[:6])
		}
	}
	// A second start creates no second admin and keeps the file.
	b.close()
	b2 := setup(t, options{dir: b.dir})
	if b2.srv.AdminToken() != "" {
		t.Fatal("second start minted another admin token")
	}
	must[*batchv1.WhoAmIResponse](t)(b2.users.WhoAmI(ctx(t), &batchv1.WhoAmIRequest{}))
}

func containsBytes(b []byte, s string) bool {
	return len(s) > 0 && len(b) >= len(s) && indexBytes(b, s) >= 0
}

func indexBytes(b []byte, s string) int {
	for i := 0; i+len(s) <= len(b); i++ {
		if string(b[i:i+len(s)]) == s {
			return i
		}
	}
	return -1
}

// The server shares the disclosed class between users: a user who
// disclosed a mountain of work first does not hold every slot against
// another user's later disclosure (with NoDisclosedFairShare it does: FCFS).
func TestDisclosedFairShareOn(t *testing.T) {
	t.Parallel()
	for _, fcfs := range []bool{false, true} {
		t.Run(fmt.Sprintf("FCFS=%v", fcfs), func(t *testing.T) {
			t.Parallel()
			b := setup(t, options{noFair: fcfs})
			w, _ := b.worker(t, "w", 2)
			hog := b.as(b.addUser(t, "hog", store.RoleUser))
			alice := b.as(b.addUser(t, "alice", store.RoleUser))
			hs := must[*batchv1.DiscloseResponse](t)(hog.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(20)})).TaskSet
			as := must[*batchv1.DiscloseResponse](t)(alice.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(3)})).TaskSet
			first := []*batchv1.StartCopy{w.start(), w.start()}
			for _, st := range first {
				if st.SetId != hs.Id {
					t.Fatalf("first starts: %v, want hog's (alone when they started)", first)
				}
			}
			// A slot frees up: fair share gives it to alice, who holds none;
			// FCFS to hog, who disclosed first.
			w.won(first[0].CopyId, "")
			want := as.Id
			if fcfs {
				want = hs.Id
			}
			if next := w.start(); next.SetId != want {
				t.Fatalf("after hog's copy ended: start of set %d, want set %d", next.SetId, want)
			}
		})
	}
}

// Revoking a user also ends its open streams before they send anything
// more: a watch of the user's set and a worker token's assignment stream
// both end with Unauthenticated at their next message, and the start that
// was due to the revoked worker is not delivered.
func TestRevokeEndsOpenStreams(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	alice := b.as(b.addUser(t, "alice", store.RoleUser))
	wk := b.as(b.addUser(t, "wk", store.RoleWorker))
	must[*batchv1.RegisterResponse](t)(wk.workers.Register(ctx(t), &batchv1.RegisterRequest{Isolation: "namespaces", Name: "wk-1", Slots: 2}))
	sctx, cancel := context.WithCancel(ctx(t))
	defer cancel()
	assign, err := wk.workers.Assignments(sctx, &batchv1.AssignmentsRequest{WorkerId: "wk-1"})
	if err != nil {
		t.Fatal(err)
	}
	defer assign.Close()
	set := must[*batchv1.DiscloseResponse](t)(alice.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1)})).TaskSet
	if !assign.Receive() || assign.Msg().GetStart().GetSetId() != set.Id {
		t.Fatalf("first start before the revoke: %v %v", assign.Msg(), assign.Err())
	}
	watch, err := alice.tasks.WatchTaskSet(sctx, &batchv1.WatchTaskSetRequest{SetId: set.Id})
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close()
	if !watch.Receive() || !watch.Msg().Snapshot {
		t.Fatalf("snapshot: %v %v", watch.Msg(), watch.Err())
	}
	for _, name := range []string{"alice", "wk"} {
		must[*batchv1.RevokeUserResponse](t)(b.users.RevokeUser(ctx(t), &batchv1.RevokeUserRequest{Name: name}))
	}
	// The admin appends a task to alice's set: it changes the watched set
	// and is due to start on wk-1's free slot.
	must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{SetId: set.Id, Tasks: echo(1)}))
	if watch.Receive() {
		t.Fatalf("revoked user's watch sent %v", watch.Msg())
	}
	wantCode(t, watch.Err(), connect.CodeUnauthenticated)
	if assign.Receive() {
		t.Fatalf("revoked worker's stream sent %v", assign.Msg())
	}
	wantCode(t, assign.Err(), connect.CodeUnauthenticated)
}

// The database and the token file are private whatever the umask and
// whatever was in the data directory before: batchd.db and its -wal and
// -shm files 0600, and a leftover admin.token.tmp with a looser mode is
// replaced, not reused.
func TestDataFilesPrivate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	stale := filepath.Join(dir, server.AdminTokenFile+".tmp")
	if err := os.WriteFile(stale, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(stale, 0o644); err != nil { // whatever the umask
		t.Fatal(err)
	}
	b := setup(t, options{dir: dir})
	must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1)}))
	for _, name := range []string{server.AdminTokenFile, "batchd.db", "batchd.db-wal", "batchd.db-shm"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != 0o600 {
			t.Errorf("%s: mode %v, want 0600", name, got)
		}
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the temporary token file is still there: %v", err)
	}
}

// Prices that are negative or not finite are refused at start.
func TestBadPricesRefused(t *testing.T) {
	t.Parallel()
	for _, p := range []store.Prices{{SlotSecond: -1}, {CPUSecond: math.NaN()}, {SlotSecond: math.Inf(1)}} {
		_, err := server.New(server.Config{DataDir: t.TempDir(), Prices: p, TickInterval: -1})
		if sched.ErrorCode(err) != sched.EINVALID {
			t.Errorf("prices %+v: error %v, want %s", p, err, sched.EINVALID)
		}
	}
}

// manyErr is a one-report ReportFinishedMany's error: the call's, or its
// report's own refusal.
func manyErr(res *batchv1.ReportFinishedManyResponse, err error) error {
	if err != nil {
		return err
	}
	if r := res.Results[0]; r.Code != 0 {
		return connect.NewError(connect.Code(r.Code), errors.New(r.Message))
	}
	return nil
}
