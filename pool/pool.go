// Package pool keeps an elastic pool of pilot workers in a cluster's batch
// system: as many `batchd worker` jobs as batchd's queues can use, no more.
//
// The pool is a client of two things: batchd's worker service (with a
// worker token; ReportPilots tells the server the pilots and answers the
// queue lengths and the workers up) and the batch system, through the
// small Engine interface below. Slurm is the one Engine built (Slurm, with
// sbatch, squeue and scancel); Kubernetes or HTCondor would each be one
// more implementation of Engine.
//
// Each round (every Config.Interval) the pool:
//   - lists its pilots (Engine.List) and reports them to the server;
//   - wants ceil(queued requested / slots) pilots for requested work and
//     ceil(min(queued disclosed, Config.Disclosed) / slots) for disclosed
//     work, over and above the pilots that are still coming (pending, or
//     started but not yet registered), up to Config.MaxPilots live pilots;
//   - submits what is missing (Engine.Submit), one class at a time, and
//     cancels pending pilots no longer wanted (Engine.Cancel), newest first;
//   - backs off (doubling from Config.BackoffMin to Config.BackoffMax)
//     after a failed submission or a pilot that ended without ever
//     registering, and says why (the batch system's reason).
//
// Pilots leave by themselves: each runs `batchd worker --idle-exit IDLE
// --hand-back`, so a pilot idle for Config.Idle drains and exits, and a
// pilot that the batch system preempts or cancels (SIGTERM, then SIGKILL
// after a grace) hands its running copies back to the server at once.
package pool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"batchd/internal/jitter"
	batchv1 "batchd/proto/batch/v1"
)

// Engine is a batch system that runs pilots. A pilot is one job running
// one `batchd worker` with a given number of slots. Implementations must
// be safe for use by one goroutine at a time (the pool's loop).
//
//   - Submit queues one pilot and returns the batch system's id for it. An
//     error carries the batch system's own words (Slurm: sbatch's message,
//     such as "invalid partition specified").
//   - List returns this pool's pilots that the batch system still knows:
//     pending, running and recently ended ones, each with its state, the
//     reason it waits or ended, its node, slots and times.
//   - Cancel ends the pilots with these ids (pending or running; a running
//     one gets the batch system's usual SIGTERM, then SIGKILL).
//   - WorkerName is the worker name the pilot with this id registers
//     under (Slurm: "slurm-" + job id), from which the pool tells which
//     pilots have registered.
type Engine interface {
	Name() string
	Submit(ctx context.Context, spec PilotSpec) (id string, err error)
	List(ctx context.Context) ([]Pilot, error)
	Cancel(ctx context.Context, ids []string) error
	WorkerName(id string) string
}

// Class is the work a pilot is submitted for.
type Class string

const (
	// Requested pilots run in the site's normal capacity (Slurm:
	// --partition).
	Requested Class = "requested"
	// Disclosed pilots may run in capacity the site can take back (Slurm:
	// --disclosed-partition, --disclosed-qos).
	Disclosed Class = "disclosed"
)

// PilotSpec is what the pool asks an Engine to run.
type PilotSpec struct {
	Class Class
	// Slots the worker offers; the engine asks the batch system for as
	// many CPUs.
	Slots int
	// Argv is the worker's command line without the worker name, which
	// only the engine knows (it derives it from the job id): the engine
	// appends --name WorkerName(id).
	Argv []string
	// Env holds variables the pilot must get, passed through its
	// environment. Never a token: Slurm keeps a job's environment where
	// its user reads it (the pool hands the token over in a file).
	Env map[string]string
	// Mint mints the pilot's own worker token (MintWorkerToken), which may
	// register only the named worker, and writes it into the token file
	// that Argv names. The engine calls it as soon as it knows the
	// pilot's worker name (Slurm: once sbatch has answered the job id);
	// the pilot may start before, and its worker waits for the file to be
	// filled (--token-wait). Nil: the file is written already.
	Mint func(ctx context.Context, worker string) error
	// Time is the pilot's time limit (0: the engine's own, Slurm.Time).
	Time time.Duration
	// GPUs the pilot asks for (Slurm: --gres=gpu:N; 0: none): the most
	// a queued task asks for, so that the pilot can run any of them. Its
	// worker offers what the batch system gives it (--gpus slurm).
	GPUs int
	// Partition is the partition the queued work it is for names ("":
	// the engine's own for Class; route.go).
	Partition string
}

// State is a pilot's state, reduced from the batch system's.
type State int

const (
	// Pending: waiting for resources (or held, or never to start: see
	// Reason).
	Pending State = iota
	// Running: started (the worker may not have registered yet).
	Running
	// Ending: being cancelled, preempted or completing.
	Ending
	// Ended: finished, cancelled, preempted or failed.
	Ended
)

// Pilot is one pilot as the batch system sees it.
type Pilot struct {
	ID    string
	State State
	// Raw is the batch system's state name (Slurm: PENDING, RUNNING, ...).
	Raw string
	// Reason is why it waits or ended, in the batch system's words.
	Reason    string
	Node      string
	Slots     int
	Class     Class
	Partition string
	Submitted time.Time
	Started   time.Time
	// Failed: it ended in a way that says the pilot could not work (Slurm:
	// FAILED, NODE_FAIL, BOOT_FAIL, OUT_OF_MEMORY, or a pending reason that
	// will not clear).
	Failed bool
}

// Server is the part of batchd's worker service the pool uses
// (batchv1connect.WorkerServiceClient has it).
type Server interface {
	ReportPilots(ctx context.Context, req *batchv1.ReportPilotsRequest) (*batchv1.ReportPilotsResponse, error)
	MintWorkerToken(ctx context.Context, req *batchv1.MintWorkerTokenRequest) (*batchv1.MintWorkerTokenResponse, error)
}

// Config configures a pool. Zero values mean the documented defaults.
type Config struct {
	// Name names the pool on the server (default "slurm").
	Name string
	// Slots per pilot (default 1).
	Slots int
	// MaxPilots bounds the live pilots, pending and running (default 4).
	MaxPilots int
	// Disclosed is how many queued disclosed tasks the pool brings pilots
	// up for (default 0: requested work only).
	Disclosed int
	// Idle is how long a pilot stays without work before it leaves
	// (default 30 s); passed to the worker as --idle-exit.
	Idle time.Duration
	// Interval between rounds (default 2 s).
	Interval time.Duration
	// BackoffMin and BackoffMax bound the wait after a failure (default
	// 5 s and 5 min).
	BackoffMin, BackoffMax time.Duration
	// Worker is the pilot's command line up to the flags the pool adds
	// (--slots, --idle-exit, --hand-back; the engine adds --name), e.g.
	// ["/usr/local/bin/batchd", "worker", "--server", URL]. Required.
	Worker []string
	// Each pilot gets a token of its own, minted by the server for its
	// worker name only (MintWorkerToken), never the pool's: in a file of
	// its own (0600, in TokenDir) that its worker reads and removes before
	// it runs any task (--token-file PATH --remove-token-file), never in
	// an environment or on a command line, which Slurm keeps where the
	// job's user (whose tasks may run on the pilot) can read them. The
	// server revokes it when the pool reports the pilot ended.
	//
	// TokenTTL is how long a pilot's token lives from its submission
	// (default DefaultTokenTTL). A pilot that has not started by then
	// cannot register: it is cancelled after RegisterWait.
	TokenTTL time.Duration
	// TokenDir holds the pilots' token files (0700, created if needed):
	// a directory the pilots' nodes see at the same path, such as one in
	// the shared working directory. The workers hide it from their
	// tasks (--hide). Default: $TMPDIR/batchd-pilot-tokens-UID (one node).
	TokenDir string
	Logger   *slog.Logger
	// RequestTimeout bounds each call to the server and the engine
	// (default 30 s).
	RequestTimeout time.Duration
	// RegisterWait is how long a started pilot may take to register
	// before the pool cancels it as a failure (wrong server URL, a node
	// that cannot reach the server; default 2 min).
	RegisterWait time.Duration
	// SilentMargin is how much longer than the server's lease a running
	// pilot's registered worker may be silent before the pool cancels the
	// pilot (dead.go; default DefaultSilentMargin).
	SilentMargin time.Duration
	// TimeMax, when set, sizes each pilot's time limit from the queued
	// work (sizing.go): the longest expected run time of a queued task
	// plus TimeMargin (default DefaultTimeMargin), at least TimeMin and at
	// most TimeMax (TimeMax when nothing is known). Zero: the engine's own
	// limit (Slurm.Time).
	TimeMin, TimeMax, TimeMargin time.Duration
}

// Pool is an elastic pool; Run drives it.
type Pool struct {
	cfg Config
	eng Engine
	srv Server
	log *slog.Logger

	backoff   jitter.Backoff
	notBefore time.Time // no submission before this (backing off)
	lastErr   string
	// registered holds the pilots seen registered (by id), so that a pilot
	// that ended after working is not counted as a failure.
	registered map[string]bool
	// judged holds ended pilots already counted (failure or not).
	// Both forget a pilot once the batch system no longer lists it (Slurm
	// lists an ended job for a few minutes): a pool that runs for months
	// holds only the pilots of the last few minutes.
	judged map[string]bool
	// tokenFiles are the token files of pilots that may not have read
	// theirs yet, by pilot id.
	tokenFiles map[string]string
	// silenced holds the pilots cancelled for a silent worker (dead.go),
	// forgotten with judged.
	silenced map[string]bool
	// looked: the first round has run (restart.go).
	looked bool
	// longest is the longest expected run time of a queued task, seconds,
	// as the server last answered it (sizing.go).
	longest float64
	// gpus is the most GPUs a queued task asks for, as the server last
	// answered it.
	gpus int
	// badParts holds the partitions the batch system refused, until when
	// they are left alone (route.go).
	badParts map[string]time.Time
	now      func() time.Time
}

// DefaultTokenTTL is how long a pilot's token lives when Config.TokenTTL
// is zero.
const DefaultTokenTTL = 24 * time.Hour

// New returns a pool of eng's pilots for the server srv.
func New(cfg Config, eng Engine, srv Server) (*Pool, error) {
	if len(cfg.Worker) == 0 {
		return nil, errors.New("pool: no worker command")
	}
	if cfg.Name == "" {
		cfg.Name = eng.Name()
	}
	if cfg.Slots <= 0 {
		cfg.Slots = 1
	}
	if cfg.MaxPilots <= 0 {
		cfg.MaxPilots = 4
	}
	if cfg.Disclosed < 0 {
		cfg.Disclosed = 0
	}
	if cfg.Idle <= 0 {
		cfg.Idle = 30 * time.Second
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 2 * time.Second
	}
	if cfg.BackoffMin <= 0 {
		cfg.BackoffMin = 5 * time.Second
	}
	if cfg.BackoffMax < cfg.BackoffMin {
		cfg.BackoffMax = max(5*time.Minute, cfg.BackoffMin)
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 30 * time.Second
	}
	if cfg.TokenDir == "" {
		cfg.TokenDir = filepath.Join(os.TempDir(), "batchd-pilot-tokens-"+strconv.Itoa(os.Getuid()))
	}
	if cfg.RegisterWait <= 0 {
		cfg.RegisterWait = 2 * time.Minute
	}
	if cfg.TokenTTL <= 0 {
		cfg.TokenTTL = DefaultTokenTTL
	}
	if cfg.SilentMargin <= 0 {
		cfg.SilentMargin = DefaultSilentMargin
	}
	if cfg.TimeMargin <= 0 {
		cfg.TimeMargin = DefaultTimeMargin
	}
	if cfg.TimeMax > 0 && cfg.TimeMin > cfg.TimeMax {
		return nil, fmt.Errorf("pool: the least pilot time %v is above the most %v", cfg.TimeMin, cfg.TimeMax)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	p := &Pool{cfg: cfg, eng: eng, srv: srv, log: cfg.Logger.With("pool", cfg.Name),
		registered: map[string]bool{}, judged: map[string]bool{}, tokenFiles: map[string]string{}, silenced: map[string]bool{}, now: time.Now}
	p.backoff.Min, p.backoff.Max = cfg.BackoffMin, cfg.BackoffMax
	return p, nil
}

// Run keeps the pool until ctx is done. It leaves the pilots running (they
// leave by themselves when idle) and returns nil; use CancelAll to end
// them.
func (p *Pool) Run(ctx context.Context) error {
	p.log.Info("pool started", "engine", p.eng.Name(), "slots", p.cfg.Slots, "max_pilots", p.cfg.MaxPilots,
		"disclosed", p.cfg.Disclosed, "idle", p.cfg.Idle)
	t := time.NewTicker(p.cfg.Interval)
	defer t.Stop()
	for {
		if err := p.Round(ctx); err != nil && ctx.Err() == nil {
			p.log.Warn("pool round failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// CancelAll cancels every live pilot of the pool.
func (p *Pool) CancelAll(ctx context.Context) error {
	pilots, err := p.eng.List(ctx)
	if err != nil {
		return err
	}
	var ids []string
	for _, pl := range pilots {
		if pl.State != Ended {
			ids = append(ids, pl.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	return p.eng.Cancel(ctx, ids)
}

// Plan is what one round decided.
type Plan struct {
	Submit map[Class]int
	// Partitions splits Submit by the partition the pilots are for ("":
	// the pool's own for the class; route.go).
	Partitions map[Class]map[string]int
	Cancel     []string
}

// Round runs one round: list, report, plan, submit and cancel.
func (p *Pool) Round(ctx context.Context) error {
	lctx, cancel := context.WithTimeout(ctx, p.cfg.RequestTimeout)
	pilots, err := p.eng.List(lctx)
	cancel()
	if err != nil {
		return fmt.Errorf("list pilots: %w", err)
	}
	req := &batchv1.ReportPilotsRequest{Pool: p.cfg.Name, Engine: p.eng.Name(), LastError: p.lastErr}
	for _, pl := range pilots {
		req.Pilots = append(req.Pilots, p.toProto(pl))
	}
	rctx, cancel := context.WithTimeout(ctx, p.cfg.RequestTimeout)
	resp, err := p.srv.ReportPilots(rctx, req)
	cancel()
	if err != nil {
		return fmt.Errorf("report pilots to the server: %w", err)
	}
	up, silent := liveWorkers(resp.GetWorkers())
	p.learnRegistered(pilots, resp.GetRegistered())
	p.firstLook(pilots)
	stuck := p.judge(pilots, up)
	dead := p.silentPilots(pilots, silent, time.Duration(resp.GetLeaseSeconds()*float64(time.Second)))
	p.dropTokens(pilots)
	p.longest, p.gpus = resp.GetLongestQueuedSeconds(), int(resp.GetMostQueuedGpus())
	plan := p.planQueues(pilots, up, partQueues(resp))
	plan.Cancel = append(plan.Cancel, stuck...)
	plan.Cancel = append(plan.Cancel, dead...)
	if len(plan.Cancel) > 0 {
		p.log.Info("cancelling pilots: pending ones no longer needed, stuck or silent ones", "pilots", plan.Cancel)
		cctx, cancel := context.WithTimeout(ctx, p.cfg.RequestTimeout)
		err := p.eng.Cancel(cctx, plan.Cancel)
		cancel()
		if err != nil {
			p.log.Warn("cancel failed", "pilots", plan.Cancel, "err", err)
		}
	}
	for _, class := range []Class{Requested, Disclosed} {
		parts := plan.Partitions[class]
		for _, part := range slices.Sorted(maps.Keys(parts)) {
			for range parts[part] {
				if p.now().Before(p.notBefore) {
					p.log.Debug("backing off", "until", p.notBefore, "last_error", p.lastErr)
					return nil
				}
				if err := p.submit(ctx, class, part); err != nil {
					if part != "" && partitionRefused(err) {
						break // said once; the other partitions go on
					}
					return nil // said and backed off
				}
			}
		}
	}
	return nil
}

// submit submits one pilot of class for the work of partition ("": the
// pool's own), backing off when that fails, or leaving a partition the
// batch system refuses alone (route.go).
func (p *Pool) submit(ctx context.Context, class Class, partition string) error {
	tokFile, err := p.tokenFile()
	if err != nil {
		p.fail(fmt.Sprintf("token file for a pilot: %v", err))
		return err
	}
	spec := PilotSpec{Class: class, Slots: p.cfg.Slots,
		Argv: append(slices.Clone(p.cfg.Worker), "--slots", fmt.Sprint(p.cfg.Slots), "--idle-exit", p.cfg.Idle.String(), "--hand-back",
			"--token-file", tokFile, "--remove-token-file", "--token-wait", p.cfg.RegisterWait.String(), "--hide", p.cfg.TokenDir, "--pool", p.cfg.Name),
		Partition: partition,
		Mint:      func(ctx context.Context, worker string) error { return p.mint(ctx, worker, tokFile) },
		Time:      pilotTime(p.longest, p.cfg.TimeMargin, p.cfg.TimeMin, p.cfg.TimeMax), GPUs: p.gpus}
	sctx, cancel := context.WithTimeout(ctx, p.cfg.RequestTimeout)
	id, err := p.eng.Submit(sctx, spec)
	cancel()
	if err != nil {
		os.Remove(tokFile)
		if partition != "" && partitionRefused(err) {
			p.refusePartition(partition, err)
			return err
		}
		p.fail(fmt.Sprintf("submit a %s pilot: %v", class, err))
		return err
	}
	p.tokenFiles[id] = tokFile
	p.log.Info("pilot submitted", "id", id, "class", class, "slots", p.cfg.Slots, "time", spec.Time, "gpus", spec.GPUs, "partition", partition)
	return nil
}

// tokenFile makes a new empty 0600 file in TokenDir for a pilot's token,
// named at random (the pilot's job id is not known before it is
// submitted); mint fills it.
func (p *Pool) tokenFile() (string, error) {
	if err := os.MkdirAll(p.cfg.TokenDir, 0o700); err != nil {
		return "", err
	}
	if err := os.Chmod(p.cfg.TokenDir, 0o700); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(p.cfg.TokenDir, "pilot-*.token") // 0600
	if err != nil {
		return "", err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// mint asks the server for the token of the pilot that registers as
// worker, which registers only that name and ends with the pilot or after
// TokenTTL, and writes it into the pilot's token file.
func (p *Pool) mint(ctx context.Context, worker, file string) error {
	res, err := p.srv.MintWorkerToken(ctx, &batchv1.MintWorkerTokenRequest{Worker: worker, TtlSeconds: p.cfg.TokenTTL.Seconds()})
	if err != nil {
		return fmt.Errorf("mint a token for pilot %s: %w", worker, err)
	}
	// The pilot may be reading the file already: it must see it empty or
	// whole, so the token goes into a new 0600 file renamed over it.
	f, err := os.CreateTemp(filepath.Dir(file), ".minting-*")
	if err != nil {
		return err
	}
	_, err = f.WriteString(res.GetToken())
	if err = errors.Join(err, f.Close()); err == nil {
		err = os.Rename(f.Name(), file)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// dropTokens removes the token files of pilots that ended or are gone
// (a pilot that ran removed its own; one cancelled while pending did not).
func (p *Pool) dropTokens(pilots []Pilot) {
	live := map[string]bool{}
	for _, pl := range pilots {
		if pl.State != Ended {
			live[pl.ID] = true
		}
	}
	for _, id := range slices.Sorted(maps.Keys(p.tokenFiles)) {
		if !live[id] {
			os.Remove(p.tokenFiles[id])
			delete(p.tokenFiles, id)
		}
	}
}

// fail records a failure and backs off.
func (p *Pool) fail(why string) {
	d := p.backoff.Next()
	p.notBefore = p.now().Add(d)
	p.lastErr = why
	p.log.Warn("pilot failure; backing off", "why", why, "retry_in", d.Round(time.Millisecond))
}

// judge learns which pilots registered and counts those that ended without
// ever registering, or that the batch system says failed, as failures. It
// returns the running pilots that did not register within RegisterWait:
// to be cancelled. It forgets the pilots the batch system no longer lists.
func (p *Pool) judge(pilots []Pilot, up map[string]bool) (stuck []string) {
	listed := make(map[string]bool, len(pilots))
	for _, pl := range pilots {
		listed[pl.ID] = true
		if up[p.eng.WorkerName(pl.ID)] {
			if !p.registered[pl.ID] {
				p.registered[pl.ID] = true
				// A pilot that works: the way is clear again.
				p.backoff.Reset()
				p.notBefore = time.Time{}
				p.lastErr = ""
			}
		}
		if p.judged[pl.ID] {
			continue
		}
		switch {
		case pl.State == Running && !p.registered[pl.ID] && !pl.Started.IsZero() && p.now().Sub(pl.Started) > p.cfg.RegisterWait:
			p.judged[pl.ID] = true
			stuck = append(stuck, pl.ID)
			p.fail(fmt.Sprintf("pilot %s started %s ago but its worker never registered (can its node reach the server? see its log)",
				pl.ID, p.now().Sub(pl.Started).Round(time.Second)))
		case pl.Failed && pl.State == Pending:
			p.judged[pl.ID] = true
			p.fail(fmt.Sprintf("pilot %s cannot start: %s", pl.ID, pl.Reason))
		case pl.State == Ended:
			p.judged[pl.ID] = true
			if pl.Failed || (!p.registered[pl.ID] && !pl.Started.IsZero() && pl.Raw != "CANCELLED" && pl.Raw != "PREEMPTED") {
				p.fail(fmt.Sprintf("pilot %s ended %s without serving: %s", pl.ID, pl.Raw, pl.Reason))
			}
		}
	}
	for id := range p.registered {
		if !listed[id] {
			delete(p.registered, id)
		}
	}
	for id := range p.judged {
		if !listed[id] {
			delete(p.judged, id)
		}
	}
	for id := range p.silenced {
		if !listed[id] {
			delete(p.silenced, id)
		}
	}
	return stuck
}

// planQueues decides what to submit and what to cancel, per class and
// per partition the queued work names (route.go). The disclosed pilots
// of all partitions together stay within Config.Disclosed's tasks.
func (p *Pool) planQueues(pilots []Pilot, up map[string]bool, queues []partQueue) Plan {
	slots := int64(p.cfg.Slots)
	want := map[Class]map[string]int{Requested: {}, Disclosed: {}}
	discLeft := int64(p.cfg.Disclosed)
	for _, q := range queues {
		if q.partition != "" && p.partitionOff(q.partition) {
			continue
		}
		if n := int((q.requested + slots - 1) / slots); n > 0 {
			want[Requested][q.partition] = n
		}
		d := min(q.disclosed, discLeft)
		discLeft -= d
		if n := int((d + slots - 1) / slots); n > 0 {
			want[Disclosed][q.partition] = n
		}
	}
	live := 0
	var comingPilots []Pilot
	var hopeless []string
	for _, pl := range pilots {
		if pl.State == Ended {
			continue
		}
		if pl.State == Pending && pl.Failed {
			// It will not start (the reason was said): make room.
			hopeless = append(hopeless, pl.ID)
			continue
		}
		live++
		if pl.State == Pending || (pl.State == Running && !up[p.eng.WorkerName(pl.ID)] && !p.registered[pl.ID]) {
			comingPilots = append(comingPilots, pl)
		}
	}
	bucket := bucketOf(comingPilots, want)
	type key struct {
		class Class
		part  string
	}
	coming := map[key]int{}
	pending := map[key][]Pilot{}
	for _, pl := range comingPilots {
		k := key{pl.Class, bucket[pl.ID]}
		coming[k]++
		if pl.State == Pending {
			pending[k] = append(pending[k], pl)
		}
	}
	out := Plan{Submit: map[Class]int{}, Partitions: map[Class]map[string]int{}, Cancel: hopeless}
	room := max(0, p.cfg.MaxPilots-live)
	for _, class := range []Class{Requested, Disclosed} {
		parts := map[string]bool{}
		for part := range want[class] {
			parts[part] = true
		}
		for k := range coming {
			if k.class == class {
				parts[k.part] = true
			}
		}
		for _, part := range slices.Sorted(maps.Keys(parts)) {
			k := key{class, part}
			if n := min(want[class][part]-coming[k], room); n > 0 {
				out.Submit[class] += n
				if out.Partitions[class] == nil {
					out.Partitions[class] = map[string]int{}
				}
				out.Partitions[class][part] = n
				room -= n
			}
			// Pending pilots beyond what the queue can use: cancel the newest.
			extra := coming[k] - want[class][part]
			ps := pending[k]
			slices.SortFunc(ps, func(a, b Pilot) int { return b.Submitted.Compare(a.Submitted) })
			for i := 0; i < extra && i < len(ps); i++ {
				out.Cancel = append(out.Cancel, ps[i].ID)
			}
		}
	}
	return out
}

func (p *Pool) toProto(pl Pilot) *batchv1.Pilot {
	out := &batchv1.Pilot{Id: pl.ID, State: pl.Raw, Reason: pl.Reason, Node: pl.Node, Slots: int32(pl.Slots),
		Worker: p.eng.WorkerName(pl.ID), Partition: pl.Partition, Class: string(pl.Class), Ended: pl.State == Ended}
	if !pl.Submitted.IsZero() {
		out.SubmittedAt = timestamppb.New(pl.Submitted)
	}
	if !pl.Started.IsZero() {
		out.StartedAt = timestamppb.New(pl.Started)
	}
	return out
}

// quoteArg quotes s for a POSIX shell.
func quoteArg(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@,+%", r))
	}) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
