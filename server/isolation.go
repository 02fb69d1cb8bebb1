package server

import (
	"context"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	batchv1 "batchd/proto/batch/v1"
	"batchd/sched"
)

// maxIsolationText bounds a worker's bound user and limits text.
const maxIsolationText = 200

// checkIsolation decides whether a worker may register with the isolation
// it reports: a known mechanism; and, without isolation, a bound user
// unless the server shares unisolated workers (Config.ShareUnisolated).
// The scheduler then gives a bound worker only its user's tasks.
func (s *Server) checkIsolation(id sched.WorkerID, req *batchv1.RegisterRequest) error {
	mech := sched.NormalIsolation(req.Isolation)
	if !sched.ValidIsolation(mech) {
		return sched.Errorf(sched.EINVALID, "unknown isolation %q: one of %s", req.Isolation, strings.Join(sched.Isolations, ", "))
	}
	if len(req.BoundUser) > maxIsolationText || len(req.Limits) > maxIsolationText {
		return sched.Errorf(sched.EINVALID, "bound_user and limits have at most %d bytes", maxIsolationText)
	}
	if !s.sharable(mech, req.BoundUser) {
		return sched.Errorf(sched.EFAILEDPRECONDITION, "worker %q runs tasks without isolation and is bound to no user: "+
			"any user's task there could read its token and the other tasks' files. Run it as root or where user namespaces work, "+
			"bind it to one user (batchd worker --isolation none --user NAME), or start the server with --share-unisolated-workers", id)
	}
	if !sched.Isolated(mech) && req.BoundUser == "" {
		s.log.Warn("worker without isolation shares any user's tasks (--share-unisolated-workers)", "worker", id)
	}
	return nil
}

// sharable reports whether a worker with isolation mech, bound to bound
// ("": to nobody), may run tasks here: it isolates them, it is bound, or
// the server shares unisolated workers.
func (s *Server) sharable(mech, bound string) bool {
	return sched.Isolated(sched.NormalIsolation(mech)) || bound != "" || s.cfg.ShareUnisolated
}

// isolationCollector exports batchd_worker_isolation{worker, mechanism,
// bound_user}: 1 for each worker up, labelled with how it isolates tasks.
type isolationCollector struct{ s *Server }

var isolationDesc = prometheus.NewDesc("batchd_worker_isolation",
	"Workers up, by how they keep tasks apart (uid, owner-uid, namespaces, none) and the one user they serve (\"\": anyone).",
	[]string{"worker", "mechanism", "bound_user"}, nil)

func (c isolationCollector) Describe(ch chan<- *prometheus.Desc) { ch <- isolationDesc }

func (c isolationCollector) Collect(ch chan<- prometheus.Metric) {
	ws, err := c.s.db.ListWorkers(context.Background())
	if err != nil {
		c.s.log.Warn("metrics: list workers", "err", err.Error())
		return
	}
	for _, w := range ws {
		if w.State == "up" {
			ch <- prometheus.MustNewConstMetric(isolationDesc, prometheus.GaugeValue, 1, string(w.ID), sched.NormalIsolation(w.Isolation), w.BoundUser)
		}
	}
}
