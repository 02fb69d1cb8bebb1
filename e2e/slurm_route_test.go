package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestSlurmRoutedPartition runs a set routed to partition low through a
// pool whose own partition is the cluster's default (high), beside a set
// routed to another pool and one that names a partition Slurm does not
// have. The routed set gets its pilots in low, and their workers register
// in the pool and in low; the set routed elsewhere brings no pilot up;
// the unknown partition is said once in the pool's log and not retried
// round after round.
func TestSlurmRoutedPartition(t *testing.T) {
	s := startSlurm(t)
	c := startServer(t, "--slots", "0", "--speculation", "none")
	// Routed elsewhere first: from its first round on, the pool sees it.
	var other, bad, low jsonDisclose
	c.ctlJSON(&other, "disclose", "--request", "--name", "other-pool", "--pool", "other", "--", "true")
	c.ctlJSON(&bad, "disclose", "--request", "--name", "bad-partition", "--partition", "nope", "--", "true")
	pool := startPool(t, c, "rt", "--max-pilots", "2", "--idle", "30s")
	defer pool.stop()
	c.ctlJSON(&low, "disclose", "--request", "--name", "to-low", "--partition", "low", "--", "sh", "-c", "echo ran")
	waitFor(t, patience, "the set routed to partition low to finish on a pilot", func() bool { return setFinished(c, low.Set.ID, 1) })
	// A few more rounds (500 ms each) with the other sets still queued.
	time.Sleep(3 * time.Second)
	pilots := s.pilots("rt")
	if len(pilots) == 0 {
		t.Fatal("no pilot")
	}
	for _, p := range pilots {
		if p.partition != "low" {
			t.Errorf("pilot %s in partition %s, want low only (no pilot for work routed to another pool)", p.id, p.partition)
		}
	}
	var cl struct {
		Workers []struct {
			ID        string `json:"id"`
			Pool      string `json:"pool"`
			Partition string `json:"partition"`
		} `json:"workers"`
	}
	c.ctlJSON(&cl, "cluster", "--all")
	if len(cl.Workers) == 0 {
		t.Fatal("no worker registered")
	}
	for _, w := range cl.Workers {
		if w.Pool != "rt" || w.Partition != "low" {
			t.Errorf("worker %s registered in pool %q, partition %q; want rt and low", w.ID, w.Pool, w.Partition)
		}
	}
	for _, set := range []int64{other.Set.ID, bad.Set.ID} {
		if setFinished(c, set, 1) {
			t.Errorf("set %d, routed where the pool has no pilot, finished", set)
		}
	}
	if n := strings.Count(pool.out.String(), "refuses a partition"); n != 1 {
		t.Errorf("the pool said %d times that Slurm refuses partition nope, want once:\n%s", n, pool.out.String())
	}
}
