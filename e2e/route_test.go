package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestRoutes runs three sets on two real workers in different pools: a
// set routed to pool a runs only on a's worker, one routed to pool b
// only on b's, and an unrouted set on both. A set routed to a pool no
// worker has registered in is accepted with a warning, waits, and
// `batchctl why` says why; it blocks neither of the others.
func TestRoutes(t *testing.T) {
	c := startServer(t, "--slots", "0", "--speculation", "none")
	c.startWorker("wa", 2, "--pool", "a")
	c.startWorker("wb", 2, "--pool", "b")
	waitFor(t, patience, "both workers to register", func() bool {
		var cl struct {
			Workers []struct {
				ID   string `json:"id"`
				Pool string `json:"pool"`
			} `json:"workers"`
		}
		c.ctlJSON(&cl, "cluster")
		pools := map[string]string{}
		for _, w := range cl.Workers {
			pools[w.ID] = w.Pool
		}
		return pools["wa"] == "a" && pools["wb"] == "b"
	})
	const n = 8
	tasks := writeFile(t, "tasks.txt", strings.Repeat("sleep 0.3\n", n))
	// Routed to a pool nobody registered in: accepted, with a warning.
	r := c.mustCtl("--json", "disclose", "--request", "--name", "nowhere", "--pool", "nowhere", "--", "true")
	if !strings.Contains(r.stderr, "warning") || !strings.Contains(r.stderr, "pool nowhere") {
		t.Errorf("disclose to an unknown pool: stderr %q, want a warning naming the pool", r.stderr)
	}
	var a, b, any jsonDisclose
	c.ctlJSON(&a, "disclose", "--request", "--name", "to-a", "--pool", "a", "--file", tasks)
	c.ctlJSON(&b, "disclose", "--request", "--name", "to-b", "--pool", "b", "--file", tasks)
	c.ctlJSON(&any, "disclose", "--request", "--name", "anywhere", "--file", tasks)
	if r := c.mustCtl("disclose", "--request", "--pool", "a", "--", "true"); strings.Contains(r.stderr, "warning") {
		t.Errorf("disclose to a known pool warned: %q", r.stderr)
	}
	waitFor(t, patience, "the routed and unrouted sets to finish", func() bool {
		return setFinished(c, a.Set.ID, n) && setFinished(c, b.Set.ID, n) && setFinished(c, any.Set.ID, n)
	})
	ranOn := func(set int64) map[string]int {
		var st jsonStatus
		c.ctlJSON(&st, "status", fmt.Sprint(set))
		out := map[string]int{}
		for _, tk := range st.Tasks {
			for _, cp := range tk.Copies {
				out[cp.Worker]++
			}
		}
		return out
	}
	if got := ranOn(a.Set.ID); got["wa"] != n || len(got) != 1 {
		t.Errorf("set routed to pool a ran on %v, want all %d copies on wa", got, n)
	}
	if got := ranOn(b.Set.ID); got["wb"] != n || len(got) != 1 {
		t.Errorf("set routed to pool b ran on %v, want all %d copies on wb", got, n)
	}
	if got := ranOn(any.Set.ID); got["wa"] == 0 || got["wb"] == 0 || got["wa"]+got["wb"] != n {
		t.Errorf("unrouted set ran on %v, want its %d copies on both workers", got, n)
	}
	var nowhere jsonDisclose
	if err := json.Unmarshal([]byte(r.stdout), &nowhere); err != nil {
		t.Fatal(err)
	}
	why := c.mustCtl("why", fmt.Sprintf("%d/0", nowhere.Set.ID))
	if !strings.Contains(why.stdout, "waits for a worker in pool nowhere (none registered)") {
		t.Errorf("why: %q, want it to say the set waits for a worker in pool nowhere", why.stdout)
	}
	if st := c.mustCtl("status", fmt.Sprint(a.Set.ID)); !strings.Contains(st.stdout, "in pool a") {
		t.Errorf("status of the set routed to a does not name the pool:\n%s", st.stdout)
	}
}
