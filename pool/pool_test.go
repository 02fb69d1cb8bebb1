package pool

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "batchd/proto/batch/v1"
)

// engine is an Engine that keeps pilots in memory, for the pool's sizing
// logic; the real Slurm is in e2e/slurm_test.go.
type engine struct {
	pilots    []Pilot
	submitted []PilotSpec
	cancelled []string
	fail      error
	next      int
	badParts  []string // partitions sbatch refuses
	refused   int      // submissions refused for their partition
}

func (e *engine) Name() string                { return "test" }
func (e *engine) WorkerName(id string) string { return "test-" + id }
func (e *engine) List(context.Context) ([]Pilot, error) {
	return slices.Clone(e.pilots), nil
}

func (e *engine) Submit(ctx context.Context, s PilotSpec) (string, error) {
	if e.fail != nil {
		return "", e.fail
	}
	if s.Partition != "" && slices.Contains(e.badParts, s.Partition) {
		e.refused++
		return "", errors.New("sbatch: error: invalid partition specified: " + s.Partition)
	}
	e.next++
	id := string(rune('a' + e.next))
	if s.Mint != nil { // as Slurm does, once the id names the worker
		if err := s.Mint(ctx, e.WorkerName(id)); err != nil {
			return "", err
		}
	}
	e.submitted = append(e.submitted, s)
	e.pilots = append(e.pilots, Pilot{ID: id, State: Pending, Raw: "PENDING", Class: s.Class, Slots: s.Slots, Submitted: time.Unix(int64(e.next), 0),
		Partition: s.Partition})
	return id, nil
}

func (e *engine) Cancel(_ context.Context, ids []string) error {
	e.cancelled = append(e.cancelled, ids...)
	for i := range e.pilots {
		if slices.Contains(ids, e.pilots[i].ID) {
			e.pilots[i].State, e.pilots[i].Raw = Ended, "CANCELLED"
		}
	}
	return nil
}

// server answers fixed queue lengths and workers.
type server struct {
	requested, disclosed int64
	up                   []string
	workers              []*batchv1.PoolWorker // listed after up
	lease                float64
	registered           []string
	longest              float64 // longest queued expected run time, s
	gpus                 int32   // most GPUs a queued task asks for
	reports              []*batchv1.ReportPilotsRequest
	parts                []*batchv1.PartitionQueue // queued work per partition (nil: an older server's answer)
	minted               []*batchv1.MintWorkerTokenRequest
}

func (s *server) MintWorkerToken(_ context.Context, req *batchv1.MintWorkerTokenRequest) (*batchv1.MintWorkerTokenResponse, error) {
	s.minted = append(s.minted, req)
	return &batchv1.MintWorkerTokenResponse{Token: "bdp_" + req.Worker}, nil
}

func (s *server) ReportPilots(_ context.Context, req *batchv1.ReportPilotsRequest) (*batchv1.ReportPilotsResponse, error) {
	s.reports = append(s.reports, req)
	out := &batchv1.ReportPilotsResponse{QueuedRequested: s.requested, QueuedDisclosed: s.disclosed}
	for _, n := range s.up {
		out.Workers = append(out.Workers, &batchv1.PoolWorker{Name: n, Slots: 2})
	}
	out.Workers = append(out.Workers, s.workers...)
	out.LeaseSeconds = s.lease
	out.Registered = s.registered
	out.LongestQueuedSeconds = s.longest
	out.MostQueuedGpus = s.gpus
	out.PartitionQueues = s.parts
	return out, nil
}

func newTestPool(t *testing.T, cfg Config, e *engine, s *server) *Pool {
	t.Helper()
	cfg.Worker = []string{"batchd", "worker", "--server", "http://127.0.0.1:1"}
	cfg.TokenDir = t.TempDir()
	p, err := New(cfg, e, s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPoolSizesToTheQueue(t *testing.T) {
	e, s := &engine{}, &server{requested: 5, disclosed: 100}
	p := newTestPool(t, Config{Slots: 2, MaxPilots: 10, Disclosed: 4}, e, s)
	ctx := context.Background()
	if err := p.Round(ctx); err != nil {
		t.Fatal(err)
	}
	// 5 requested on 2 slots: 3 pilots; 4 of the disclosed: 2 pilots.
	var req, disc int
	for k, sp := range e.submitted {
		switch sp.Class {
		case Requested:
			req++
		case Disclosed:
			disc++
		}
		// Each pilot's own token, minted for its worker name.
		own := "bdp_test-" + string(rune('a'+k+1))
		if len(sp.Env) != 0 || slices.Contains(sp.Argv, own) || !slices.Contains(sp.Argv, "--remove-token-file") {
			t.Fatalf("the token must be in a file the worker removes, neither in Env nor in argv: %+v", sp)
		}
		i := slices.Index(sp.Argv, "--token-file")
		if i < 0 || i+1 >= len(sp.Argv) {
			t.Fatalf("no --token-file in %q", sp.Argv)
		}
		fi, err := os.Stat(sp.Argv[i+1])
		if b, rerr := os.ReadFile(sp.Argv[i+1]); err != nil || rerr != nil || string(b) != own || fi.Mode().Perm() != 0o600 {
			t.Fatalf("token file %s: %v %v, want 0600 with the token", sp.Argv[i+1], fi, err)
		}
		if !slices.Contains(sp.Argv, "--hand-back") || !slices.Contains(sp.Argv, "--idle-exit") || !slices.Contains(sp.Argv, "--token-wait") {
			t.Fatalf("pilot argv %v lacks --hand-back, --idle-exit or --token-wait", sp.Argv)
		}
	}
	if req != 3 || disc != 2 {
		t.Fatalf("submitted %d requested and %d disclosed pilots, want 3 and 2", req, disc)
	}
	if len(s.minted) != 5 || s.minted[0].TtlSeconds != DefaultTokenTTL.Seconds() {
		t.Fatalf("minted %v", s.minted)
	}
	// The next round submits nothing more: they are coming.
	if err := p.Round(ctx); err != nil {
		t.Fatal(err)
	}
	if len(e.submitted) != 5 {
		t.Fatalf("%d pilots after a second round, want still 5", len(e.submitted))
	}
	// The queue drains: pending pilots no longer needed are cancelled,
	// newest first; one requested pilot still has work.
	s.requested, s.disclosed = 1, 0
	if err := p.Round(ctx); err != nil {
		t.Fatal(err)
	}
	if len(e.cancelled) != 4 {
		t.Fatalf("cancelled %v, want 4 pilots", e.cancelled)
	}
	if slices.Contains(e.cancelled, "b") {
		t.Fatalf("cancelled %v: the oldest requested pilot (b) should stay", e.cancelled)
	}
	if len(s.reports) != 3 || len(s.reports[2].Pilots) != 5 {
		t.Fatalf("reports %v", s.reports)
	}
}

func TestPoolMaxPilotsAndRegistered(t *testing.T) {
	e, s := &engine{}, &server{requested: 100}
	p := newTestPool(t, Config{Slots: 1, MaxPilots: 3}, e, s)
	ctx := context.Background()
	_ = p.Round(ctx)
	if len(e.submitted) != 3 {
		t.Fatalf("%d pilots, want --max-pilots 3", len(e.submitted))
	}
	// They run and register: still busy, the queue still long, no room.
	for i := range e.pilots {
		e.pilots[i].State, e.pilots[i].Raw = Running, "RUNNING"
		s.up = append(s.up, e.WorkerName(e.pilots[i].ID))
	}
	_ = p.Round(ctx)
	if len(e.submitted) != 3 || len(e.cancelled) != 0 {
		t.Fatalf("submitted %d, cancelled %v with 3 running pilots at the max", len(e.submitted), e.cancelled)
	}
	// One leaves (idle exit): room for one more.
	e.pilots[0].State, e.pilots[0].Raw = Ended, "COMPLETED"
	_ = p.Round(ctx)
	if len(e.submitted) != 4 {
		t.Fatalf("%d pilots submitted, want a 4th after one left", len(e.submitted))
	}
	if p.lastErr != "" {
		t.Fatalf("a pilot that registered and left is no failure: %q", p.lastErr)
	}
}

// The pool remembers a pilot (registered, judged) while the batch system
// lists it, ended ones included, so that an ended pilot is judged once;
// it forgets the pilot when the batch system does.
func TestPoolForgetsPilotsNoLongerListed(t *testing.T) {
	e, s := &engine{}, &server{requested: 2}
	p := newTestPool(t, Config{Slots: 1, MaxPilots: 2}, e, s)
	ctx := context.Background()
	_ = p.Round(ctx)
	for i := range e.pilots {
		e.pilots[i].State, e.pilots[i].Raw = Running, "RUNNING"
		s.up = append(s.up, e.WorkerName(e.pilots[i].ID))
	}
	_ = p.Round(ctx)
	if len(p.registered) != 2 {
		t.Fatalf("registered %v, want the 2 running pilots", p.registered)
	}
	// Both end; one failed. The batch system lists them a while: each is
	// judged once, whatever the rounds.
	s.requested, s.up = 0, nil
	e.pilots[0].State, e.pilots[0].Raw = Ended, "COMPLETED"
	e.pilots[1].State, e.pilots[1].Raw, e.pilots[1].Failed, e.pilots[1].Reason = Ended, "NODE_FAIL", true, "NodeFail"
	_ = p.Round(ctx)
	first := p.notBefore
	_ = p.Round(ctx)
	if len(p.judged) != 2 || p.notBefore != first {
		t.Fatalf("judged %v, backoff until %v then %v: want each ended pilot judged once", p.judged, first, p.notBefore)
	}
	// The batch system forgets them: so does the pool.
	e.pilots = nil
	_ = p.Round(ctx)
	if len(p.registered) != 0 || len(p.judged) != 0 {
		t.Fatalf("registered %v, judged %v after the batch system forgot the pilots; want both empty", p.registered, p.judged)
	}
}

func TestPoolBacksOff(t *testing.T) {
	e, s := &engine{fail: errors.New("sbatch: error: invalid partition specified: nope")}, &server{requested: 10}
	p := newTestPool(t, Config{Slots: 1, MaxPilots: 5, BackoffMin: time.Hour}, e, s)
	clock := time.Unix(1000, 0)
	p.now = func() time.Time { return clock }
	ctx := context.Background()
	for range 5 {
		_ = p.Round(ctx)
	}
	if len(s.reports) != 5 || !strings.Contains(s.reports[4].LastError, "invalid partition") {
		t.Fatalf("the reports do not carry Slurm's reason: %+v", s.reports[len(s.reports)-1])
	}
	// Backing off, it tried once, not on every round.
	e.fail = nil
	_ = p.Round(ctx)
	if len(e.submitted) != 0 {
		t.Fatalf("submitted %d pilots while backing off", len(e.submitted))
	}
	clock = clock.Add(2 * time.Hour)
	_ = p.Round(ctx)
	if len(e.submitted) == 0 {
		t.Fatal("nothing submitted after the backoff")
	}
	// A pilot that ends without registering is a failure too.
	e.pilots = []Pilot{{ID: "z", State: Ended, Raw: "FAILED", Reason: "NonZeroExitCode", Failed: true, Started: clock}}
	_ = p.Round(ctx)
	if !strings.Contains(p.lastErr, "NonZeroExitCode") {
		t.Fatalf("last error %q, want the pilot's reason", p.lastErr)
	}
	// A pending pilot that cannot start is cancelled and said.
	e.pilots = []Pilot{{ID: "y", State: Pending, Raw: "PENDING", Reason: "PartitionDown", Failed: true}}
	_ = p.Round(ctx)
	if !slices.Contains(e.cancelled, "y") || !strings.Contains(p.lastErr, "PartitionDown") {
		t.Fatalf("cancelled %v, last error %q", e.cancelled, p.lastErr)
	}
}

// A pilot that runs but never registers (its node cannot reach the
// server) is cancelled after RegisterWait and counted as a failure.
func TestPoolCancelsUnregistered(t *testing.T) {
	e, s := &engine{}, &server{requested: 1}
	p := newTestPool(t, Config{Slots: 1, MaxPilots: 2, RegisterWait: time.Minute}, e, s)
	clock := time.Unix(1000, 0)
	p.now = func() time.Time { return clock }
	ctx := context.Background()
	_ = p.Round(ctx)
	e.pilots[0].State, e.pilots[0].Raw, e.pilots[0].Started = Running, "RUNNING", clock
	clock = clock.Add(30 * time.Second)
	_ = p.Round(ctx)
	if len(e.cancelled) != 0 || len(e.submitted) != 1 {
		t.Fatalf("within RegisterWait: cancelled %v, submitted %d", e.cancelled, len(e.submitted))
	}
	clock = clock.Add(time.Minute)
	_ = p.Round(ctx)
	if !slices.Contains(e.cancelled, e.pilots[0].ID) || !strings.Contains(p.lastErr, "never registered") {
		t.Fatalf("after RegisterWait: cancelled %v, last error %q", e.cancelled, p.lastErr)
	}
}

func TestSlurmParse(t *testing.T) {
	s := &Slurm{Pool: "p"}
	out := "12|PENDING|Priority||2|2026-11-24T10:53:05|N/A|high|batchd-p-requested\n" +
		"13|RUNNING|None|vm|2|2026-11-24T10:53:03|2026-11-24T10:53:05|low|batchd-p-disclosed\n" +
		"14|PENDING|PartitionDown||2|2026-11-24T10:53:05|N/A|high|batchd-p-requested\n" +
		"15|PREEMPTED|None|vm|2|2026-11-24T10:53:03|2026-11-24T10:53:05|low|batchd-p-disclosed\n" +
		"16|NODE_FAIL|None|vm|2|2026-11-24T10:53:03|2026-11-24T10:53:05|low|batchd-p-disclosed\n"
	ps := s.ParseSqueue(out)
	if len(ps) != 5 {
		t.Fatalf("parsed %d pilots", len(ps))
	}
	if p := ps[0]; p.State != Pending || p.Failed || p.Reason != "Priority" || p.Class != Requested || !p.Started.IsZero() || p.Slots != 2 {
		t.Fatalf("pending: %+v", p)
	}
	if p := ps[1]; p.State != Running || p.Node != "vm" || p.Class != Disclosed || p.Reason != "" || p.Started.IsZero() || p.Partition != "low" {
		t.Fatalf("running: %+v", p)
	}
	if p := ps[2]; !p.Failed || p.State != Pending {
		t.Fatalf("PartitionDown: %+v", p)
	}
	if p := ps[3]; p.State != Ended || p.Failed {
		t.Fatalf("preempted: %+v", p)
	}
	if p := ps[4]; p.State != Ended || !p.Failed {
		t.Fatalf("node fail: %+v", p)
	}
}

func TestSlurmSbatch(t *testing.T) {
	s := &Slurm{Pool: "p", Partition: "high", DisclosedPartition: "low", DisclosedQOS: "scavenger", Account: "lab",
		Time: "1:00:00", Mem: "2G", Args: []string{"--exclusive"}}
	req := s.SbatchArgs(PilotSpec{Class: Requested, Slots: 4})
	for _, want := range []string{"--parsable", "--job-name=batchd-p-requested", "--cpus-per-task=4", "--partition=high",
		"--account=lab", "--time=1:00:00", "--mem=2G", "--exclusive", "--export=ALL", "--signal=B:TERM@30"} {
		if !slices.Contains(req, want) {
			t.Errorf("requested pilot: %v lacks %s", req, want)
		}
	}
	disc := s.SbatchArgs(PilotSpec{Class: Disclosed, Slots: 1})
	for _, want := range []string{"--job-name=batchd-p-disclosed", "--partition=low", "--qos=scavenger"} {
		if !slices.Contains(disc, want) {
			t.Errorf("disclosed pilot: %v lacks %s", disc, want)
		}
	}
	script := s.Script([]string{"/opt/batch d/batchd", "worker", "--server", "http://h:1/x?a=b&c", "--idle-exit", "30s"})
	for _, want := range []string{
		`'/opt/batch d/batchd' worker --server 'http://h:1/x?a=b&c' --idle-exit 30s --name "slurm-$SLURM_JOB_ID" --ends-at slurm --memory slurm --gpus slurm --partition slurm &`,
		`'/opt/batch d/batchd' worker --kill-leftovers --name "slurm-$SLURM_JOB_ID"`,
	} {
		if !strings.Contains(script, want+"\n") {
			t.Errorf("script:\n%s\nwant the line\n%s", script, want)
		}
	}
	script = s.Script([]string{"batchd", "worker", "--state-dir", "/scratch/w"})
	if want := `batchd worker --kill-leftovers --state-dir /scratch/w` + "\n"; !strings.Contains(script, want) {
		t.Errorf("script:\n%s\nwant the line\n%s", script, want)
	}
}

// A pilot that ended without reading its token file (cancelled while
// pending) leaves none behind: the pool removes it; a live pilot's stays.
func TestTokenFilesOfEndedPilotsRemoved(t *testing.T) {
	e, s := &engine{}, &server{requested: 2}
	p := newTestPool(t, Config{Slots: 1, MaxPilots: 2}, e, s)
	ctx := context.Background()
	if err := p.Round(ctx); err != nil {
		t.Fatal(err)
	}
	if len(e.submitted) != 2 || len(e.pilots) != 2 {
		t.Fatalf("submitted %d pilots, listed %d; want 2", len(e.submitted), len(e.pilots))
	}
	file := func(i int) string {
		a := e.submitted[i].Argv
		return a[slices.Index(a, "--token-file")+1]
	}
	e.pilots[0].State = Ended
	if err := p.Round(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(file(0)); !os.IsNotExist(err) {
		t.Errorf("the ended pilot's token file is still there: %v", err)
	}
	if _, err := os.Stat(file(1)); err != nil {
		t.Errorf("the pending pilot's token file is gone: %v", err)
	}
}
