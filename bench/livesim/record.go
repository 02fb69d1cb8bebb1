package main

import (
	"context"
	"encoding/gob"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"batchd/sched"
)

// record is one live run as its store kept it: enough to replay it and
// measure it again without running the server (`livesim report`).
type record struct {
	Workload, Mode     string
	Seed               int64
	Beta, Scale, Limit float64 // the tasks' draws
	Slots, Workers     int
	Policy             string
	Arrivals           time.Duration
	LiveBeta           float64
	LiveSpec           int64
	Wall               time.Duration
	Keys               map[sched.SetID]string // set → job key of its draws
	// Latencies are the winning copies' decision-to-report times minus
	// their run times, and LatencyAt their decisions' times (Unix
	// seconds), in decision order (latency.go).
	Latencies, LatencyAt []float64
	// LatencySuspended are the same copies' seconds suspended on the
	// server's order (not part of their latencies).
	LatencySuspended []float64
	// Suspended are the copies the server suspended, with how long.
	Suspended []suspension
	// Copies are every copy the store recorded (copies.go).
	Copies []copyRow
	// Lag is the live scheduler's latency estimate as the server's metrics
	// gave it during the run, at each change.
	Lag   []lagPoint
	Trace *sched.Trace
}

func (r record) file() string { return fmt.Sprintf("%s-%s-%d.gob", r.Workload, r.Mode, r.Seed) }

// saveRecord writes rec into dir (gob: the trace's NaN run times of lost
// copies survive it; its CopyDuration func is not kept).
func saveRecord(dir string, rec record) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, rec.file()))
	if err != nil {
		return err
	}
	if err := gob.NewEncoder(f).Encode(rec); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// parseKept parses a command's flags, then its progress model (the
// -progress flag) and the records kept in its -keep directory.
func parseKept(fs *flag.FlagSet, args []string, progress, keep *string) (progressModel, []record, error) {
	if err := fs.Parse(args); err != nil {
		return progressModel{}, nil, err
	}
	pm, err := parseProgressModel(*progress)
	if err != nil {
		return progressModel{}, nil, err
	}
	recs, err := loadRecords(*keep)
	return pm, recs, err
}

// loadRecords reads every record in dir, ordered by workload, seed and
// mode name.
func loadRecords(dir string) ([]record, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.gob"))
	if err != nil {
		return nil, err
	}
	var recs []record
	for _, n := range names {
		f, err := os.Open(n)
		if err != nil {
			return nil, err
		}
		var r record
		err = gob.NewDecoder(f).Decode(&r)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		recs = append(recs, r)
	}
	slices.SortFunc(recs, func(a, b record) int {
		if c := strings.Compare(a.Workload, b.Workload); c != 0 {
			return c
		}
		if a.Seed != b.Seed {
			return int(a.Seed - b.Seed)
		}
		return strings.Compare(a.Mode, b.Mode)
	})
	return recs, nil
}

// report replays kept records (livesim report -keep DIR) and prints the
// table: the replay's model can change without running servers again.
func report(args []string) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	keep := fs.String("keep", "", "directory of records saved by `livesim -keep`")
	progress := fs.String("progress", defaultProgress, progressHelp)
	modes := fs.String("modes", "none,best-effort-late,grass,hopper+grass", "speculation modes, in table order")
	wls := fs.String("workloads", "cluster,mixed", "workloads, in table order")
	verbose := fs.Bool("v", false, "log each run")
	abl := fs.Bool("ablations", false, "also replay the speculative runs with each part of sim + live taken out")
	pm, recs, err := parseKept(fs, args, progress, keep)
	if err != nil {
		return err
	}
	if len(recs) == 0 {
		return fmt.Errorf("no records in %q", *keep)
	}
	var all []outcome
	for _, rec := range recs {
		r, err := replayRun(context.Background(), rec, pm)
		if err != nil {
			return fmt.Errorf("%s: %w", rec.file(), err)
		}
		if *verbose {
			logOutcome(r)
		}
		all = append(all, r)
	}
	printTable(tableOf(recs[0], strings.Split(*wls, ","), strings.Split(*modes, ","), pm), all)
	if *abl {
		return printAblations(recs, strings.Split(*wls, ","), pm)
	}
	return nil
}

// logOutcome prints one run's figures on stderr.
func logOutcome(r outcome) {
	fmt.Fprintf(os.Stderr, "%s seed %d %-16s live %6.2f s (%d jobs, β %.3f, %d spec.)  sim %6.2f s (%d jobs, β %.3f, %d spec.)  sim+overheads (latency %.3f s) %6.2f s (β %.3f, %d spec.)  sim+live (latency q90 %.3f s) %6.2f s (β %.3f, %d spec.)  overhead %.3f s  %s\n",
		r.workload, r.seed, r.mode, r.live.MeanVisibleResponse, r.live.Requests, r.liveBeta, r.liveSpec,
		r.sim.MeanVisibleResponse, r.sim.Requests, r.sim.Beta, r.sim.SpeculativeStarted, r.latency, r.simLat.MeanVisibleResponse, r.simLat.Beta, r.simLat.SpeculativeStarted,
		r.latQ90, r.simLive.MeanVisibleResponse, r.simLive.Beta, r.simLive.SpeculativeStarted, r.overhead, r.wall.Round(time.Second))
}
