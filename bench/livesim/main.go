// Command livesim drives a real batchd server (real processes: `batchd
// serve`, two `batchd worker`s, tasks that are child processes) with a
// simulator workload at a scale the machine holds, and prints the live
// metrics beside the simulator's for the same workload. bench/livesim.sh builds and runs it.
//
// Every task is `livesim task`: it takes the next copy number of its task
// (an O_EXCL file per copy), draws its run time from Pareto(β, scale) keyed
// by (seed, job, task, copy number), runs that long (time stopped does
// not count: runclock.go) and writes its progress to $BATCH_PROGRESS_FILE
// as it goes. After each live run the
// driver reads what the server's store recorded (store.ExportTrace, the
// same path as `batchd sim replay`) and replays it with the real scheduler
// in virtual time under the same configuration, every copy drawing its run
// time from the same function: the simulator's figure for the very
// requests the live server saw, without the live server's dispatch and
// report latency, fork costs and progress polling, then with them
// (replay.go). The verdict is a paired test over seeds (paired.go).
//
// With -keep DIR each live run's record is saved; `livesim report -keep
// DIR` replays saved records and prints the tables again without running
// servers (record.go), -ablations adding the live model with each of its
// parts taken out (ablation.go).
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"batchd/client"
	"batchd/sched"
	"batchd/sched/sim"
	"batchd/store"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "report" {
		if err := report(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "livesim report:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "jobs" {
		if err := jobs(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "livesim jobs:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "copies" {
		if err := copies(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "livesim copies:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "task" {
		if err := task(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "livesim task:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "livesim:", err)
		os.Exit(1)
	}
}

// draw is the run time of copy k of task idx of job key under seed: a
// Pareto(beta, scale) draw, capped at limit so that one run stays minutes.
func draw(seed int64, key string, idx int32, k int, beta, scale, limit float64) float64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s/%d/%d", seed, key, idx, k)
	r := rand.New(rand.NewPCG(h.Sum64(), 0x9e3779b97f4a7c15))
	u := 1 - r.Float64() // (0, 1]
	return math.Min(scale*math.Pow(u, -1/beta), limit)
}

// task is one copy: claim a copy number, run the drawn time, report
// progress every step.
func task(args []string) error {
	fs := flag.NewFlagSet("task", flag.ContinueOnError)
	dir := fs.String("dir", "", "directory of copy claims")
	seed := fs.Int64("seed", 1, "seed")
	key := fs.String("key", "", "job key")
	beta := fs.Float64("beta", 1.259, "Pareto shape")
	scale := fs.Float64("scale", 0.3, "Pareto scale, s")
	limit := fs.Float64("cap", 60, "longest run, s")
	step := fs.Duration("step", 250*time.Millisecond, "progress step")
	if err := fs.Parse(args); err != nil {
		return err
	}
	idx, err := strconv.Atoi(os.Getenv("BATCH_TASK_INDEX"))
	if err != nil {
		return fmt.Errorf("BATCH_TASK_INDEX: %w", err)
	}
	k := 0
	for ; ; k++ {
		f, err := os.OpenFile(filepath.Join(*dir, fmt.Sprintf("%s-%d-%d", *key, idx, k)), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err == nil {
			f.Close()
			break
		}
		if !errors.Is(err, os.ErrExist) {
			return err
		}
	}
	d := time.Duration(draw(*seed, *key, int32(idx), k, *beta, *scale, *limit) * float64(time.Second))
	prog := os.Getenv("BATCH_PROGRESS_FILE")
	return sleepRunning(d, *step, func(frac float64) {
		if prog == "" {
			return
		}
		if f, err := os.OpenFile(prog, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
			fmt.Fprintf(f, "%.4f\n", frac)
			f.Close()
		}
	})
}

type opts struct {
	batchd, self       string
	slots, workers     int
	beta, scale, limit float64
	util               float64
	jobMax             int
	arrivals           time.Duration
	users, setMax      int
	think, changeMax   float64
	step               time.Duration
	policy             string
	seeds              int
	firstSeed          int64
	modes, workloads   []string
	parallel           bool
	verbose            bool
}

// outcome is one live run and its replay.
type outcome struct {
	workload, mode string
	seed           int64
	live, sim      sim.Result
	simLat         sim.Result // the replay with the recorded latency and overhead added to every copy
	simLive        sim.Result // and with the live server's latency rule and progress reports (replay.go)
	latQ90         float64    // 90th percentile of the recorded latencies
	latency        float64
	overhead       float64 // median of a winning copy's recorded run time minus its draw
	liveBeta       float64
	liveSpec       int64
	wall           time.Duration
}

func run(args []string) error {
	var o opts
	fs := flag.NewFlagSet("livesim", flag.ContinueOnError)
	fs.StringVar(&o.batchd, "batchd", "batchd", "the batchd binary")
	fs.IntVar(&o.slots, "slots", 16, "slots in all")
	fs.IntVar(&o.workers, "workers", 2, "workers the slots are split over")
	fs.Float64Var(&o.beta, "beta", 1.259, "Pareto shape of copy run times")
	fs.Float64Var(&o.scale, "scale", 0.3, "Pareto scale (shortest copy), s")
	fs.Float64Var(&o.limit, "cap", 60, "longest copy, s (live and simulated alike)")
	fs.Float64Var(&o.util, "util", 0.6, "cluster: offered load of original copies")
	fs.IntVar(&o.jobMax, "job-max", 24, "largest job (tasks); sizes ~ bounded Pareto α 0.5 on [1, job-max] as in the simulator")
	fs.DurationVar(&o.arrivals, "arrivals", 45*time.Second, "how long new work arrives (then the run drains)")
	fs.IntVar(&o.users, "users", 8, "mixed: closed-loop users")
	fs.IntVar(&o.setMax, "set-max", 4, "mixed: jobs per set ~ U{1..set-max}")
	fs.Float64Var(&o.think, "think", 6, "mixed: mean think time, s")
	fs.Float64Var(&o.changeMax, "change-max", 0.2, "mixed: change probability ~ U(0, change-max)")
	fs.DurationVar(&o.step, "step", 250*time.Millisecond, "a task writes its progress this often")
	fs.StringVar(&o.policy, "policy", "srpt×fcfs", "queue policy")
	fs.IntVar(&o.seeds, "seeds", 3, "seeds (95% CI over them)")
	fs.Int64Var(&o.firstSeed, "seed", 1, "first seed")
	modes := fs.String("modes", "none,best-effort-late,grass,hopper+grass", "speculation modes")
	wls := fs.String("workloads", "cluster,mixed", "workloads")
	fs.BoolVar(&o.parallel, "parallel", true, "run the modes of one seed at once (one server each)")
	fs.BoolVar(&o.verbose, "v", false, "log each run")
	keep := fs.String("keep", "", "save each live run's record (trace, keys, live metrics) in this directory, for `livesim report`")
	progress := fs.String("progress", defaultProgress, progressHelp)
	if err := fs.Parse(args); err != nil {
		return err
	}
	o.modes, o.workloads = strings.Split(*modes, ","), strings.Split(*wls, ",")
	self, err := os.Executable()
	if err != nil {
		return err
	}
	o.self = self
	pm, err := parseProgressModel(*progress)
	if err != nil {
		return err
	}
	ctx := context.Background()
	var all []outcome
	for _, wl := range o.workloads {
		if wl != "cluster" && wl != "mixed" {
			return fmt.Errorf("unknown workload %q (cluster or mixed)", wl)
		}
		for s := range o.seeds {
			seed := o.firstSeed + int64(s)
			recs := make([]record, len(o.modes))
			errs := make([]error, len(o.modes))
			var wg sync.WaitGroup
			for i, m := range o.modes {
				wg.Add(1)
				f := func() {
					defer wg.Done()
					recs[i], errs[i] = liveRun(ctx, o, wl, m, seed)
				}
				if o.parallel {
					go f()
				} else {
					f()
				}
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				return err
			}
			for _, rec := range recs {
				if *keep != "" {
					if err := saveRecord(*keep, rec); err != nil {
						return err
					}
				}
				r, err := replayRun(ctx, rec, pm)
				if err != nil {
					return err
				}
				logOutcome(r)
				all = append(all, r)
			}
		}
	}
	printTable(tableOf(record{Slots: o.slots, Workers: o.workers, Policy: o.policy, Beta: o.beta, Scale: o.scale, Limit: o.limit, Arrivals: o.arrivals},
		o.workloads, o.modes, pm), all)
	return nil
}

// liveRun runs one workload under one speculation mode on a fresh server
// and returns what its store recorded.
func liveRun(ctx context.Context, o opts, wl, mode string, seed int64) (record, error) {
	rec := record{Workload: wl, Mode: mode, Seed: seed, Beta: o.beta, Scale: o.scale, Limit: o.limit,
		Slots: o.slots, Workers: o.workers, Policy: o.policy, Arrivals: o.arrivals}
	t0 := time.Now()
	dir, err := os.MkdirTemp("", "livesim-")
	if err != nil {
		return rec, err
	}
	defer os.RemoveAll(dir)
	data, claims := filepath.Join(dir, "data"), filepath.Join(dir, "claims")
	if err := os.MkdirAll(claims, 0o700); err != nil {
		return rec, err
	}
	srv, url, err := startServe(o.batchd, data, mode, o.policy)
	if err != nil {
		return rec, err
	}
	defer stopProc(srv)
	tok, err := os.ReadFile(filepath.Join(data, "admin.token"))
	if err != nil {
		return rec, err
	}
	wtok, err := exec.Command(o.batchd, "user", "add", "--data", data, "--worker", "livesim-workers").Output()
	if err != nil {
		return rec, fmt.Errorf("batchd user add --worker: %w", err)
	}
	per := o.slots / o.workers
	for w := range o.workers {
		n := per
		if w == o.workers-1 {
			n = o.slots - per*(o.workers-1)
		}
		wp := exec.Command(o.batchd, "worker", "--server", url, "--token", strings.TrimSpace(string(wtok)), "--name", fmt.Sprintf("w%d", w),
			"--slots", fmt.Sprint(n), "--state-dir", filepath.Join(dir, fmt.Sprintf("w%d", w)),
			// The tasks claim their copy numbers in a directory of the
			// run: they must see the file system as it is.
			"--isolation", "none")
		wp.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := wp.Start(); err != nil {
			return rec, err
		}
		defer stopProc(wp)
	}
	cl := client.New(client.Config{Server: url, HTTPClient: client.WithToken(&http.Client{}, strings.TrimSpace(string(tok))), RetryFor: time.Minute})
	for deadline := time.Now().Add(time.Minute); ; {
		info, err := cl.GetCluster(ctx)
		if err == nil && int(info.Slots) == o.slots {
			break
		}
		if time.Now().After(deadline) {
			return rec, fmt.Errorf("workers did not register: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	keys := &keyMap{m: map[sched.SetID]string{}}
	argv := func(key string) []string {
		return []string{o.self, "task", "--dir", claims, "--seed", fmt.Sprint(seed), "--key", key, "--beta", fmt.Sprint(o.beta),
			"--scale", fmt.Sprint(o.scale), "--cap", fmt.Sprint(o.limit), "--step", o.step.String()}
	}
	stopLag := make(chan struct{})
	lagPoints := pollLag(ctx, cl, 200*time.Millisecond, stopLag)
	switch wl {
	case "cluster":
		err = driveCluster(ctx, o, cl, seed, argv, keys)
	case "mixed":
		err = driveMixed(ctx, o, cl, seed, argv, keys)
	}
	close(stopLag)
	rec.Lag = lagPoints()
	if err != nil {
		return rec, err
	}
	info, err := cl.GetCluster(ctx)
	if err != nil {
		return rec, err
	}
	rec.LiveBeta, rec.LiveSpec = info.Metrics.Beta, info.Metrics.SpeculativeCopiesStarted
	stopProc(srv)

	db := store.NewDB(filepath.Join(data, "batchd.db"))
	if err := db.Open(); err != nil {
		return rec, err
	}
	rec.Trace, err = db.ExportTrace(ctx, time.Time{}, time.Time{})
	db.Close()
	if err == nil {
		rec.Latencies, rec.LatencyAt, rec.LatencySuspended, err = latencies(ctx, filepath.Join(data, "batchd.db"))
	}
	if err == nil {
		rec.Suspended, err = suspensions(ctx, filepath.Join(data, "batchd.db"))
	}
	if err == nil {
		rec.Copies, err = copyRows(ctx, filepath.Join(data, "batchd.db"))
	}
	rec.Keys = keys.m
	rec.Wall = time.Since(t0)
	return rec, err
}

// keyMap maps each set to its job key as the drivers disclose them (the
// mixed users disclose at once).
type keyMap struct {
	mu sync.Mutex
	m  map[sched.SetID]string
}

func (k *keyMap) put(s sched.SetID, key string) { k.mu.Lock(); k.m[s] = key; k.mu.Unlock() }

// overhead is the median, over winning copies, of the run time the worker
// reported minus the copy's draw (the task process's start, its sleeps'
// slack): time a live copy runs that its draw does not have. A copy's
// draw index is its position among the task's recorded copies.
func overhead(tr *sched.Trace, d func(sched.SetID, int32, int) float64) float64 {
	var xs []float64
	for _, st := range tr.Sets {
		for _, tk := range st.Tasks {
			for k, c := range tk.Copies {
				if c > 0 {
					xs = append(xs, c-d(st.ID, tk.Index, k))
				}
			}
		}
	}
	if len(xs) == 0 {
		return math.NaN()
	}
	slices.Sort(xs)
	return xs[len(xs)/2]
}

// jobSize is the simulator's job size: floor of a bounded Pareto (α 0.5)
// on [1, max+1).
func jobSize(r *rand.Rand, maxN int) int {
	lo, hi, a := 1.0, float64(maxN)+1, 0.5
	u := r.Float64()
	la, ha := math.Pow(lo, a), math.Pow(hi, a)
	return min(max(int(math.Pow(-(u*ha-u*la-ha)/(ha*la), -1/a)), 1), maxN)
}

func meanJobSize(maxN int) float64 {
	lo, hi, a := 1.0, float64(maxN)+1, 0.5
	cdf := func(x float64) float64 { return (1 - math.Pow(lo/x, a)) / (1 - math.Pow(lo/hi, a)) }
	s := 0.0
	for i := 1; i <= maxN; i++ {
		s += float64(i) * (cdf(float64(i+1)) - cdf(float64(i)))
	}
	return s
}

// driveCluster: jobs arrive Poisson at the rate that offers util of the
// slots in original copies (Pareto mean, capped), each disclosed and
// requested whole; then it waits until every job finished.
func driveCluster(ctx context.Context, o opts, cl *client.Client, seed int64, argv func(string) []string, keys *keyMap) error {
	r := rand.New(rand.NewPCG(uint64(seed), 2))
	meanCopy := o.scale * o.beta / (o.beta - 1)
	rate := o.util * float64(o.slots) / (meanJobSize(o.jobMax) * meanCopy)
	start := time.Now()
	at := 0.0
	var sets []sched.SetID
	var sizes []int
	for j := 0; ; j++ {
		at += r.ExpFloat64() / rate
		if at > o.arrivals.Seconds() {
			break
		}
		n := jobSize(r, o.jobMax)
		time.Sleep(time.Until(start.Add(time.Duration(at * float64(time.Second)))))
		key := fmt.Sprintf("j%d", j)
		specs := make([]sched.TaskSpec, n)
		for i := range specs {
			specs[i] = sched.TaskSpec{Argv: argv(key)}
		}
		res, err := cl.Disclose(ctx, client.DiscloseInput{Name: key, Tasks: specs, Request: true})
		if err != nil {
			return err
		}
		keys.put(res.Set.ID, key)
		sets, sizes = append(sets, res.Set.ID), append(sizes, n)
	}
	for i, s := range sets {
		if err := waitDone(ctx, cl, s, 0, int32(sizes[i])); err != nil {
			return err
		}
	}
	return nil
}

// driveMixed: closed-loop batchactive users (the simulator's mixed
// workload): each discloses a set of jobs, requests them one at a time,
// thinks (exponential) after each completes, and with its change
// probability cancels the rest and discloses a new set.
func driveMixed(ctx context.Context, o opts, cl *client.Client, seed int64, argv func(string) []string, keys *keyMap) error {
	end := time.Now().Add(o.arrivals)
	var wg sync.WaitGroup
	errs := make([]error, o.users)
	for u := range o.users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(seed), uint64(100+u)))
			change := r.Float64() * o.changeMax
			setSize := 1 + r.IntN(o.setMax)
			var set sched.SetID
			var groups [][2]int32 // [first, end) per job
			next := 0
			for ns := 0; time.Now().Before(end); {
				if set == 0 || next >= len(groups) || r.Float64() < change {
					if set != 0 && next < len(groups) {
						if _, err := cl.CancelAll(ctx, set); err != nil {
							errs[u] = err
							return
						}
					}
					key := fmt.Sprintf("u%d-s%d", u, ns)
					ns++
					var specs []sched.TaskSpec
					groups = groups[:0]
					for range setSize {
						n := jobSize(r, o.jobMax)
						groups = append(groups, [2]int32{int32(len(specs)), int32(len(specs) + n)})
						for range n {
							specs = append(specs, sched.TaskSpec{Argv: argv(key)})
						}
					}
					res, err := cl.Disclose(ctx, client.DiscloseInput{Name: key, Tasks: specs})
					if err != nil {
						errs[u] = err
						return
					}
					set, next = res.Set.ID, 0
					keys.put(set, key)
				}
				g := groups[next]
				next++
				idx := make([]int32, 0, g[1]-g[0])
				for i := g[0]; i < g[1]; i++ {
					idx = append(idx, i)
				}
				if _, err := cl.Request(ctx, set, idx); err != nil {
					errs[u] = err
					return
				}
				if err := waitDone(ctx, cl, set, g[0], g[1]); err != nil {
					errs[u] = err
					return
				}
				time.Sleep(time.Duration(r.ExpFloat64() * o.think * float64(time.Second)))
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// waitDone polls until tasks [first, end) of set are finished.
func waitDone(ctx context.Context, cl *client.Client, set sched.SetID, first, end int32) error {
	for {
		done := true
		tok := ""
		for {
			p, err := cl.GetTaskSet(ctx, client.GetTaskSetInput{Set: set, PageSize: 1000, PageToken: tok})
			if err != nil {
				return err
			}
			for _, t := range p.Tasks {
				if t.Index < first || t.Index >= end {
					continue
				}
				if t.State != sched.TaskFinished {
					done = false
				} else if t.ExitCode != 0 || t.TimedOut {
					// A task that fails ends before its draw: the run
					// would measure nothing.
					return fmt.Errorf("set %d task %d failed (exit code %d, %s)", set, t.Index, t.ExitCode, t.FailReason)
				}
			}
			if tok = p.NextPageToken; tok == "" || !done {
				break
			}
		}
		if done {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func startServe(batchd, data, mode, policy string) (*exec.Cmd, string, error) {
	cmd := exec.Command(batchd, "serve", "--listen", "127.0.0.1:0", "--data", data, "--slots", "0", "--speculation", mode, "--policy", policy, "--log-level", "warn",
		"--share-unisolated-workers")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, "", err
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	pw.Close()
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		sent := false
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "batchd serving on "); ok && !sent {
				found <- strings.Fields(rest)[0]
				sent = true
			}
		}
		if !sent {
			close(found)
		}
	}()
	select {
	case url, ok := <-found:
		if !ok {
			return nil, "", fmt.Errorf("batchd serve exited before serving")
		}
		return cmd, url, nil
	case <-time.After(time.Minute):
		stopProc(cmd)
		return nil, "", fmt.Errorf("batchd serve not serving after a minute")
	}
}

func stopProc(c *exec.Cmd) {
	if c == nil || c.Process == nil || c.ProcessState != nil {
		return
	}
	_ = c.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = c.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		<-done
	}
}
