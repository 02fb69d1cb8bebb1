package pool

import (
	"cmp"
	"slices"
	"strings"
	"time"

	batchv1 "batchd/proto/batch/v1"
)

// This file is routing (sched/route.go) as a pool sees it. Its pilots
// register in the pool (--pool, the pool's name) and in their job's
// partition (--partition slurm). The server answers the queued work the
// pool may run, routed to it or to no pool, by the partition that work
// names (ReportPilotsResponse.partition_queues): the pool sizes its
// pilots per partition, and submits those for a named partition there;
// work that names none gets pilots in the pool's own partition for its
// class. Work routed to another pool brings no pilot up.
//
// A partition the batch system refuses (sbatch: "invalid partition
// specified") is said once and left alone for BackoffMax; the pool's
// other partitions go on (no backoff of the whole pool for it).

// partQueue is the queued work of one partition ("": none named).
type partQueue struct {
	partition            string
	requested, disclosed int64
}

// partQueues reads the server's answer: per partition, or, from an
// older server that does not split it, everything as work of no named
// partition.
func partQueues(resp *batchv1.ReportPilotsResponse) []partQueue {
	pqs := resp.GetPartitionQueues()
	if len(pqs) == 0 {
		return []partQueue{{"", resp.GetQueuedRequested(), resp.GetQueuedDisclosed()}}
	}
	out := make([]partQueue, 0, len(pqs))
	for _, q := range pqs {
		out = append(out, partQueue{q.GetPartition(), q.GetQueuedRequested(), q.GetQueuedDisclosed()})
	}
	slices.SortFunc(out, func(a, b partQueue) int { return cmp.Compare(a.partition, b.partition) })
	return out
}

// bucketOf assigns coming pilots to the partitions that want them: a
// pilot in a named partition serves that partition's work while it wants
// more, else the work that names none. It returns the bucket ("" or a
// partition) of each pilot, by id.
func bucketOf(pilots []Pilot, want map[Class]map[string]int) map[string]string {
	ps := slices.Clone(pilots)
	slices.SortFunc(ps, func(a, b Pilot) int { return cmp.Or(a.Submitted.Compare(b.Submitted), cmp.Compare(a.ID, b.ID)) })
	taken := map[Class]map[string]int{}
	out := make(map[string]string, len(ps))
	for _, pl := range ps {
		if taken[pl.Class] == nil {
			taken[pl.Class] = map[string]int{}
		}
		b := ""
		if pl.Partition != "" && taken[pl.Class][pl.Partition] < want[pl.Class][pl.Partition] {
			b = pl.Partition
		}
		taken[pl.Class][b]++
		out[pl.ID] = b
	}
	return out
}

// partitionRefused reports whether err, a failed submission to a named
// partition, is the batch system refusing the partition itself.
func partitionRefused(err error) bool {
	m := strings.ToLower(err.Error())
	return strings.Contains(m, "partition") && (strings.Contains(m, "invalid") || strings.Contains(m, "not available") ||
		strings.Contains(m, "unknown") || strings.Contains(m, "not exist"))
}

// refusePartition leaves partition alone until BackoffMax from now, and
// says so the first time.
func (p *Pool) refusePartition(partition string, err error) {
	if p.badParts == nil {
		p.badParts = map[string]time.Time{}
	}
	if _, seen := p.badParts[partition]; !seen {
		p.log.Warn("the batch system refuses a partition that queued work names; no pilots there", "partition", partition,
			"err", err, "retry_in", p.cfg.BackoffMax)
	}
	p.badParts[partition] = p.now().Add(p.cfg.BackoffMax)
}

// partitionOff reports whether partition was refused and its wait is not
// over.
func (p *Pool) partitionOff(partition string) bool {
	until, ok := p.badParts[partition]
	return ok && p.now().Before(until)
}
