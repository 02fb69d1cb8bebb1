package e2e

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// netns is a small network the test makes: the server's namespace holds a
// bridge with its address, and each worker's namespace one end of a veth
// pair whose other end is a port of that bridge. No address is on any
// interface of the host's own namespace; deleting the namespaces removes
// everything.
type netns struct {
	t      *testing.T
	prefix string            // of the namespaces' names
	subnet string            // "10.211.N", a /24 inside the namespaces only
	wrap   map[string]string // namespace suffix -> dir of wrapper scripts
}

// newNetns makes the server's namespace ("s") and one per worker name. It
// skips when not root or without `ip netns`, except under CI=true, where
// it fails instead.
func newNetns(t *testing.T, workers ...string) *netns {
	t.Helper()
	need := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true: "+format, args...)
		}
		t.Skipf(format, args...)
	}
	if os.Geteuid() != 0 {
		need("network namespaces need root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		need("no ip command (iproute2): %v", err)
	}
	var b [2]byte
	_, _ = rand.Read(b[:])
	n := &netns{t: t, prefix: "bd" + hex.EncodeToString(b[:]) + "-", subnet: fmt.Sprintf("10.211.%d", b[0]), wrap: map[string]string{}}
	all := append([]string{"s"}, workers...)
	for _, ns := range all {
		if out, err := exec.Command("ip", "netns", "add", n.name(ns)).CombinedOutput(); err != nil {
			need("ip netns add: %v: %s", err, out)
		}
		name := n.name(ns)
		t.Cleanup(func() {
			if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
				t.Errorf("ip netns del %s: %v: %s", name, err, out)
			}
		})
	}
	n.ip("s", "link", "add", "br0", "type", "bridge")
	n.ip("s", "addr", "add", n.subnet+".1/24", "dev", "br0")
	for _, ns := range all {
		n.ip(ns, "link", "set", "lo", "up")
	}
	n.ip("s", "link", "set", "br0", "up")
	for i, w := range workers {
		n.ip("s", "link", "add", "v"+w, "type", "veth", "peer", "name", "eth0", "netns", n.name(w))
		n.ip("s", "link", "set", "v"+w, "master", "br0")
		n.ip("s", "link", "set", "v"+w, "up")
		n.ip(w, "addr", "add", fmt.Sprintf("%s.%d/24", n.subnet, i+2), "dev", "eth0")
		n.ip(w, "link", "set", "eth0", "up")
	}
	return n
}

func (n *netns) name(ns string) string { return n.prefix + ns }

// ip runs `ip -n NS args...` and fails the test if it fails.
func (n *netns) ip(ns string, args ...string) {
	n.t.Helper()
	all := append([]string{"-n", n.name(ns)}, args...)
	if out, err := exec.Command("ip", all...).CombinedOutput(); err != nil {
		n.t.Fatalf("ip %s: %v: %s", strings.Join(all, " "), err, out)
	}
}

// in returns a script that runs bin inside namespace ns (with BATCHD_NS
// set to ns in its environment), for startProc and the cluster's commands:
// `ip netns exec` execs the program, so the script's pid is the program's.
func (n *netns) in(ns, bin string) string {
	n.t.Helper()
	dir := n.wrap[ns]
	if dir == "" {
		dir = n.t.TempDir()
		n.wrap[ns] = dir
	}
	path := filepath.Join(dir, filepath.Base(bin))
	script := fmt.Sprintf("#!/bin/sh\nexec ip netns exec %s env BATCHD_NS=%s %s \"$@\"\n", n.name(ns), ns, bin)
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		n.t.Fatal(err)
	}
	return path
}

// cut takes worker ns's link down at the bridge: its packets are dropped
// from then on, as with a pulled cable; up brings it back.
func (n *netns) cut(ns string) { n.ip("s", "link", "set", "v"+ns, "down") }
func (n *netns) up(ns string)  { n.ip("s", "link", "set", "v"+ns, "up") }

// TestNetnsPartition runs the server and two `batchd worker`s in three
// network namespaces, cuts one worker's link, and checks the lease rules
// docs/design.md states ("Leases: at most one running copy"):
//
//  1. a workload runs across both workers;
//  2. a cut shorter than the lease loses nothing: the copies that finished
//     during it keep their results (one copy per task);
//  3. with --no-speculation and a cut longer than the lease plus its
//     margin, the cut worker's copies stop at the lease's end and run
//     again elsewhere, never at the same time as their re-runs (each copy
//     writes timestamps to a file while it runs); results the cut worker
//     held from before the lease's end are kept when it returns, and their
//     re-runs killed;
//
// and that every requested task is billed once.
func TestNetnsPartition(t *testing.T) {
	batchd, batchctl := binaries(t)
	n := newNetns(t, "a", "b")
	const lease = 8 * time.Second // heartbeats every 1.6 s; the server gives up after 10 s
	c := &cluster{t: t, batchd: n.in("s", batchd), batchctl: n.in("s", batchctl), data: filepath.Join(t.TempDir(), "data"),
		addr: n.subnet + ".1:0"}
	c.start("--slots", "0", "--lease", lease.String(), "--lease-margin", "2s")
	workers := map[string]*proc{}
	for _, w := range []string{"a", "b"} {
		workers[w] = startProc(t, "batchd worker "+w, n.in(w, batchd), "worker", "--server", c.url(), "--token-file", tokenFile(t, c.workerToken()), "--isolation", "none",
			"--name", w, "--slots", "4", "--state-dir", filepath.Join(t.TempDir(), w))
	}
	waitFor(t, patience, "two workers up", func() bool {
		var cl struct {
			Workers []struct {
				ID    string `json:"id"`
				State string `json:"state"`
			} `json:"workers"`
		}
		c.ctlJSON(&cl, "cluster")
		up := 0
		for _, w := range cl.Workers {
			if w.State == "up" && workers[w.ID] != nil {
				up++
			}
		}
		return up == 2
	})
	var sets []int64

	// 1. A workload across both workers.
	{
		d := discloseN(t, c, 16, `sleep 0.2; echo "$BATCH_TASK_INDEX"`)
		sets = append(sets, d.Set.ID)
		st := waitFinished(t, c, d.Set.ID, 16)
		on := map[string]int{}
		for _, task := range st.Tasks {
			on[winner(t, task).Worker]++
		}
		if on["a"] == 0 || on["b"] == 0 {
			t.Errorf("winning copies by worker %v: want both workers used", on)
		}
	}

	// 2. A cut shorter than the lease: the copies finish during it, and
	// their results, delivered once the link is back, are the tasks'.
	{
		dir := t.TempDir()
		gate := filepath.Join(dir, "go")
		d := discloseN(t, c, 8, `while [ ! -e `+gate+` ]; do sleep 0.05; done; echo "$BATCH_COPY_ID"`, "--no-speculation")
		sets = append(sets, d.Set.ID)
		onA := waitRunning(t, c, d.Set.ID, 8, "a")
		n.cut("a")
		touch(t, gate)
		time.Sleep(lease / 2) // the cut: shorter than the lease
		n.up("a")
		st := waitFinished(t, c, d.Set.ID, 8)
		for _, task := range st.Tasks {
			w := winner(t, task)
			if first, ok := onA[task.Index]; ok && (len(task.Copies) != 1 || w.ID != first) {
				t.Errorf("short cut: task %d ran copies %+v, want only worker a's copy %d, kept", task.Index, task.Copies, first)
			}
		}
	}

	// 3. --no-speculation and a cut longer than the lease and its margin.
	{
		dir := t.TempDir()
		gate := filepath.Join(dir, "go")
		// Each copy writes a timestamp every 0.1 s while it runs, to
		// DIR/INDEX.COPY. A first copy on worker b (whose eth0 has the
		// subnet's .3: a task's environment is built from scratch, so it
		// learns its worker from the network, not from the worker's
		// environment) ends at the gate; on
		// worker a the first two to start do too (their results are held
		// through the cut), the others run 15 s (stopped by the lease).
		// A re-run of a task whose first copy ended at the gate runs
		// 60 s (it is to be killed by the late result), else 3 s.
		script := `d=` + dir + `; i=$BATCH_TASK_INDEX; f=$d/$i.$BATCH_COPY_ID
stamp() { date +%s.%N >> $f; }
if ls $d/$i.* >/dev/null 2>&1; then
  if [ -e $d/$i.quick ]; then n=600; else n=30; fi
elif ip -o -4 addr show dev eth0 | grep -q " ` + n.subnet + `.3/" || mkdir $d/quick1 2>/dev/null || mkdir $d/quick2 2>/dev/null; then
  touch $d/$i.quick; stamp
  while [ ! -e $d/go ]; do sleep 0.1; stamp; done
  echo "$BATCH_COPY_ID"; exit 0
else n=150; fi
stamp; k=0; while [ $k -lt $n ]; do sleep 0.1; stamp; k=$((k+1)); done
echo "$BATCH_COPY_ID"`
		task := filepath.Join(dir, "task.sh")
		if err := os.WriteFile(task, []byte(script+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		d := discloseN(t, c, 8, "sh "+task, "--no-speculation")
		sets = append(sets, d.Set.ID)
		onA := waitRunning(t, c, d.Set.ID, 8, "a")
		n.cut("a")
		touch(t, gate)
		// Past the lease and its margin the server runs a's tasks again
		// on b: wait until each has a copy there.
		waitFor(t, patience, "worker a's tasks re-run on b", func() bool {
			var st jsonStatus
			c.ctlJSON(&st, "status", fmt.Sprint(d.Set.ID))
			for _, task := range st.Tasks {
				if _, ok := onA[task.Index]; ok && !slices.ContainsFunc(task.Copies, func(cp jsonCopy) bool { return cp.Worker == "b" }) {
					return false
				}
			}
			return true
		})
		n.up("a")
		st := waitFinished(t, c, d.Set.ID, 8)
		quick, long := 0, 0
		for _, task := range st.Tasks {
			first, ok := onA[task.Index]
			if !ok {
				continue
			}
			w := winner(t, task)
			if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("%d.quick", task.Index))); err == nil {
				// Its result was held through the cut: kept, and the re-run killed.
				quick++
				if w.ID != first {
					t.Errorf("task %d: winner %+v, want worker a's held result (copy %d)", task.Index, w, first)
				}
				for _, cp := range task.Copies {
					if cp.ID != first && cp.State != "killed" {
						t.Errorf("task %d: re-run %+v, want killed by the late result", task.Index, cp)
					}
				}
			} else {
				// Stopped at the lease's end: lost, and run again elsewhere.
				long++
				if w.ID == first || !slices.Contains(task.Copies, jsonCopy{ID: first, Worker: "a", State: "lost"}) {
					t.Errorf("task %d: winner %+v, copies %+v: want a re-run to win and a's copy %d lost", task.Index, w, task.Copies, first)
				}
			}
			checkNoOverlap(t, dir, task)
		}
		if quick != 2 || long != 2 {
			t.Errorf("worker a held %d quick and %d long copies, want 2 and 2", quick, long)
		}
		for _, task := range st.Tasks {
			if _, ok := onA[task.Index]; !ok {
				checkNoOverlap(t, dir, task)
			}
		}
	}

	// Every requested task is billed once, for its winning copy.
	var b jsonBill
	c.ctlJSON(&b, "bill")
	lines := billByTask(b)
	total := 0
	for _, set := range sets {
		var st jsonStatus
		c.ctlJSON(&st, "status", fmt.Sprint(set))
		for _, task := range st.Tasks {
			total++
			if got := lines[ref{set, task.Index}]; got != 1 {
				t.Errorf("task %d/%d billed %d times, want once", set, task.Index, got)
			}
		}
	}
	if len(b.Lines) != total {
		t.Errorf("%d bill lines for %d requested tasks", len(b.Lines), total)
	}
}

// discloseN discloses and requests n tasks, each the shell command line,
// with more batchctl disclose flags.
func discloseN(t *testing.T, c *cluster, n int, line string, flags ...string) jsonDisclose {
	t.Helper()
	file := filepath.Join(t.TempDir(), "tasks")
	if err := os.WriteFile(file, []byte(strings.Repeat(line+"\n", n)), 0o644); err != nil {
		t.Fatal(err)
	}
	var d jsonDisclose
	c.ctlJSON(&d, append([]string{"disclose", "--request", "--file", file}, flags...)...)
	if d.Count != int32(n) {
		t.Fatalf("disclosed %+v, want %d tasks", d, n)
	}
	return d
}

// waitFinished waits until set's want tasks are finished and returns its status.
func waitFinished(t *testing.T, c *cluster, set int64, want int64) jsonStatus {
	t.Helper()
	var st jsonStatus
	waitFor(t, patience, fmt.Sprintf("set %d finished", set), func() bool {
		c.ctlJSON(&st, "status", fmt.Sprint(set))
		return st.Set.Counts.Finished == want
	})
	return st
}

// waitRunning waits until want tasks of set run and returns the copies
// that run on worker w, by task index.
func waitRunning(t *testing.T, c *cluster, set int64, want int, w string) map[int32]int64 {
	t.Helper()
	on := map[int32]int64{}
	waitFor(t, patience, fmt.Sprintf("%d copies of set %d running", want, set), func() bool {
		var st jsonStatus
		c.ctlJSON(&st, "status", fmt.Sprint(set))
		clear(on)
		running := 0
		for _, task := range st.Tasks {
			for _, cp := range task.Copies {
				if cp.State == "running" {
					running++
					if cp.Worker == w {
						on[task.Index] = cp.ID
					}
				}
			}
		}
		return running == want
	})
	if len(on) == 0 {
		t.Fatalf("no copy of set %d runs on worker %s", set, w)
	}
	return on
}

// winner is the task's winning copy.
func winner(t *testing.T, task jsonTask) jsonCopy {
	t.Helper()
	for _, cp := range task.Copies {
		if cp.State == "won" {
			return cp
		}
	}
	t.Fatalf("task %d has no winning copy: %+v", task.Index, task.Copies)
	return jsonCopy{}
}

// checkNoOverlap reads the timestamps each copy of task wrote while it ran
// (DIR/INDEX.COPY) and fails when two copies' spans overlap.
func checkNoOverlap(t *testing.T, dir string, task jsonTask) {
	t.Helper()
	type span struct {
		copy       int64
		first, end float64
	}
	var spans []span
	for _, cp := range task.Copies {
		f, err := os.Open(filepath.Join(dir, fmt.Sprintf("%d.%d", task.Index, cp.ID)))
		if os.IsNotExist(err) {
			continue // killed before its first line
		} else if err != nil {
			t.Fatal(err)
		}
		s := span{copy: cp.ID, first: -1}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			v, err := strconv.ParseFloat(strings.TrimSpace(sc.Text()), 64)
			if err != nil {
				continue // a line cut by a kill
			}
			if s.first < 0 {
				s.first = v
			}
			s.end = v
		}
		f.Close()
		if s.first >= 0 {
			spans = append(spans, s)
		}
	}
	slices.SortFunc(spans, func(a, b span) int { return int(a.first*1e9 - b.first*1e9) })
	for i := 1; i < len(spans); i++ {
		if p, q := spans[i-1], spans[i]; q.first <= p.end {
			t.Errorf("task %d: copy %d ran %.3f..%.3f and copy %d from %.3f: %.3f s at once",
				task.Index, p.copy, p.first, p.end, q.copy, q.first, p.end-q.first)
		}
	}
}

func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}
