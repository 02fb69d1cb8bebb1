// The worker lane's costs to the rest of the server: how long heartbeats
// hold the server's lock (dispatch, reports and API writes wait that
// long behind them), and how long a worker waits for a report of its
// copies' ends to be answered.

package server

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// laneMetrics are the worker lane's histograms, registered beside the
// dispatch metrics. A nil histogram (before collectors) observes nothing.
type laneMetrics struct {
	// lockHeld is how long a heartbeat, or the apply of what answered
	// heartbeats found, held the server's lock.
	lockHeld prometheus.Histogram
	// report is how long a ReportFinished or ReportFinishedMany call
	// took, from its handler's start to its answer.
	report prometheus.Histogram
}

// observeLockHeld records that a heartbeat held the lock since got.
func (l *laneMetrics) observeLockHeld(got time.Time) {
	if l.lockHeld != nil {
		l.lockHeld.Observe(time.Since(got).Seconds())
	}
}

// observeReport records a report call answered now that began at start.
func (l *laneMetrics) observeReport(start time.Time) {
	if l.report != nil {
		l.report.Observe(time.Since(start).Seconds())
	}
}

func (l *laneMetrics) collectors() []prometheus.Collector {
	l.lockHeld = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "batchd_heartbeat_lock_held_seconds",
		Help:    "How long one heartbeat, or the apply of what answered heartbeats found, held the server's lock, while dispatch, reports and API writes waited for it.",
		Buckets: heartbeatBuckets})
	l.report = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "batchd_report_seconds",
		Help:    "Time the server took to answer a worker's report of its copies' ends (ReportFinished, ReportFinishedMany), from its handler's start: the wait for the group commit included.",
		Buckets: heartbeatBuckets})
	return []prometheus.Collector{l.lockHeld, l.report}
}
