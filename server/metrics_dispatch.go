package server

import (
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"batchd/store"
)

// dispatchMetrics are the dispatch path's own counters: how much CPU the
// server spends per copy (its children excluded) and whether any lease
// lapsed. They are registered beside the cluster metrics.
type dispatchMetrics struct {
	copiesEnded atomic.Int64 // reports of a copy's end taken (not replays)
	// finishCommits counts the group commits of copies' ends
	// (finishBatch's transactions, committed or not): copiesEnded over it
	// is the number of ends a commit carries.
	finishCommits atomic.Int64
	// finishHeld counts the group commits of ends whose start was held
	// back for more ends (gatherRule).
	finishHeld  atomic.Int64
	leaseLapses atomic.Int64
	lateResults atomic.Int64 // results of lost copies kept (their re-runs killed)
	// heartbeatsDeferred counts registered workers' heartbeats answered
	// before their writes (heartbeatHeard), and heartbeatsCoalesced
	// those never written, a newer heartbeat of the same worker written
	// in their place (heartbeat_write.go).
	heartbeatsDeferred, heartbeatsCoalesced atomic.Int64
	// heartbeatPhase is how long each phase of a heartbeat took (the
	// phase* labels); set by collectors.
	heartbeatPhase *prometheus.HistogramVec
	// heartbeat is how long the server took to answer each heartbeat,
	// from its handler's start (the wait for the store's writer and its
	// write included); set by collectors.
	heartbeat prometheus.Histogram
}

// observeHeartbeat records a heartbeat answered now that began at start.
func (d *dispatchMetrics) observeHeartbeat(start time.Time) {
	if d.heartbeat != nil {
		d.heartbeat.Observe(time.Since(start).Seconds())
	}
}

// A heartbeat's phases, the label of batchd_heartbeat_phase_seconds.
const (
	phaseLock   = "lock"   // the wait for the server's lock (a worker not yet heard)
	phaseWriter = "writer" // the wait of a heartbeat's write for the store's writer
	phaseWrite  = "write"  // the store's transaction, all of it
	// The write's parts: BEGIN IMMEDIATE (SQLite's write lock), the
	// statements, and COMMIT.
	phaseBegin      = "begin"
	phaseStatements = "statements"
	phaseCommit     = "commit"
	// phaseApply is the wait of what an answered heartbeat found for the
	// server's lock, after the answer (applyHeartbeats).
	phaseApply = "apply"
)

// observeHeartbeatPhase records how long a heartbeat's phase took.
func (d *dispatchMetrics) observeHeartbeatPhase(phase string, took time.Duration) {
	if d.heartbeatPhase != nil {
		d.heartbeatPhase.WithLabelValues(phase).Observe(took.Seconds())
	}
}

// selfCPUSeconds is the user and system CPU time of this process, its
// threads included and its children (the copies) excluded.
func selfCPUSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}

// heartbeatBuckets are the heartbeat histograms' bounds: fine below
// 100 ms, the bound a heartbeat's answer is held to.
var heartbeatBuckets = []float64{.0005, .001, .002, .005, .01, .02, .03, .05, .075, .1, .15, .2, .5, 1, 2, 5}

func (d *dispatchMetrics) collectors(db *store.DB) []prometheus.Collector {
	d.heartbeat = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "batchd_heartbeat_seconds",
		Help:    "Time the server took to answer a worker's heartbeat, from its handler's start: the wait for the store's writer (at most 50 ms, then answered without it) and the store's write; a registered worker's heartbeat does not wait for the server's lock.",
		Buckets: heartbeatBuckets})
	d.heartbeatPhase = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "batchd_heartbeat_phase_seconds",
		Help:    "Time of each phase of a worker's heartbeat: writer (the wait for the store's writer), write (the store's transaction), apply (after the answer, the wait of what it found for the server's lock), lock (the wait for the server's lock of a worker not yet heard since the server started).",
		Buckets: heartbeatBuckets}, []string{"phase"})
	return []prometheus.Collector{
		d.heartbeat,
		d.heartbeatPhase,
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "batchd_heartbeats_deferred_total",
			Help: "Heartbeats answered before their writes, which did not end within 20 ms: heard and their lease renewed, their progress written later."},
			func() float64 { return float64(d.heartbeatsDeferred.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "batchd_heartbeats_coalesced_total",
			Help: "Heartbeats never written: a newer heartbeat of the same worker came while its write waited, and was written in its place."},
			func() float64 { return float64(d.heartbeatsCoalesced.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "batchd_store_write_transactions_total",
			Help: "Write transactions the store committed (one SQLite writer does them all, one at a time)."},
			func() float64 { n, _ := db.WriteStats(); return float64(n) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "batchd_store_write_busy_seconds_total",
			Help: "Seconds the single SQLite writer spent in write transactions: it is saturated when this grows as fast as the clock."},
			func() float64 { _, b := db.WriteStats(); return b }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "batchd_store_wal_checkpoints_total",
			Help: "WAL checkpoints the store's checkpointer ran beside the writer (PASSIVE, at most every 100 ms after commits)."},
			func() float64 { n, _, _, _ := db.CheckpointStats(); return float64(n) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "batchd_store_wal_checkpoint_failures_total",
			Help: "WAL checkpoints that failed; while they fail the WAL grows (the server logs the error)."},
			func() float64 { _, f, _, _ := db.CheckpointStats(); return float64(f) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "batchd_store_wal_pages",
			Help: "Pages in the SQLite WAL at the last checkpoint."},
			func() float64 { _, _, _, p := db.CheckpointStats(); return float64(p) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "batchd_copies_ended_total",
			Help: "Reports of a copy's end the server took (replays not counted)."},
			func() float64 { return float64(d.copiesEnded.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "batchd_finish_commits_total",
			Help: "Group commits of copies' ends (one transaction and one Decide each): batchd_copies_ended_total over it is the ends a commit carries."},
			func() float64 { return float64(d.finishCommits.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "batchd_finish_commits_held_total",
			Help: "Group commits of copies' ends held back, under load only, for more ends (at most 1 ms, or until 64 or every running copy's end is queued)."},
			func() float64 { return float64(d.finishHeld.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "batchd_finish_commits_from_memory_total",
			Help: "Group commits that wrote their copies' ends from the server's memory of the copies, without reading them first (store/finishknown.go)."},
			func() float64 { n, _ := db.FinishKnownStats(); return float64(n) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "batchd_finish_memory_stale_total",
			Help: "Group commits whose memory of a copy was stale (its task canceled or won, the copy killed or suspended since): rolled back and read instead."},
			func() float64 { _, n := db.FinishKnownStats(); return float64(n) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "batchd_lease_lapses_total",
			Help: "Workers whose lease lapsed (silent longer than the lease): their copies were lost."},
			func() float64 { return float64(d.leaseLapses.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "batchd_late_results_total",
			Help: "Results of copies lost with their worker's lease that came back while their task still wanted one: kept, and the re-runs killed."},
			func() float64 { return float64(d.lateResults.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "batchd_server_cpu_seconds_per_copy",
			Help: "CPU seconds of the server process (getrusage RUSAGE_SELF: its threads, including the embedded worker slots, not the copies it forks) per copy ended since it started."},
			func() float64 {
				n := d.copiesEnded.Load()
				if n == 0 {
					return 0
				}
				return selfCPUSeconds() / float64(n)
			}),
	}
}
