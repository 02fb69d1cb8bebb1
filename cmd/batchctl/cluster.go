package main

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"batchd/client"
	"batchd/sched"
)

func clusterCommand() *cli.Command {
	return &cli.Command{
		Name:  "cluster",
		Usage: "show workers, slots, queues and live metrics",
		Description: `Shows the server's policy, its live workers (up or lease lapsed; --all: also those that
left, marked gone) and their slots, how each keeps tasks
apart (ISOLATION: uid, owner-uid or namespaces run anyone's tasks; none runs only
the tasks of the user in RUNS FOR, or anyone's when the server shares unisolated
workers, which the first lines then say), the pilots of
elastic pools (batchd pool slurm: job id, state, reason, node, slots, age), the queues of
requested and disclosed work, and the live metrics: visible response time and
slowdown, load, billed and free slot-seconds, speculation.

Example:

   batchctl cluster`,
		Flags: []cli.Flag{jsonFlag(),
			&cli.BoolFlag{Name: "all", Usage: "list every worker ever registered, those that left (gone) too, not only the live ones"}},
		Action: cluster,
	}
}

func cluster(c *cli.Context) error {
	get := newClient(c).GetCluster
	if c.Bool("all") {
		get = newClient(c).GetClusterAllWorkers
	}
	cl, err := get(c.Context)
	if err != nil {
		return err
	}
	v := viewCluster(cl)
	w := c.App.Writer
	if asJSON(c) {
		return writeJSON(w, v)
	}
	fmt.Fprintf(w, "batchd %s, policy %s, speculation %s, preemption %s, up since %s\n",
		v.Version, v.Policy, v.Speculation, v.Preemption, when(cl.StartedAt))
	if v.ShareUnisolated {
		fmt.Fprintln(w, "INSECURE: workers without isolation run any user's tasks (--share-unisolated-workers)")
	}
	fmt.Fprintf(w, "slots: %d busy of %d\n", v.BusySlots, v.Slots)
	t := newTable(c, "worker", "host", "slots", "busy", "memory", "suspend", "isolation", "runs for", "state", "last heartbeat", "pool")
	for _, x := range cl.Workers {
		mem := "-"
		if x.MemoryMB > 0 {
			mem = fmt.Sprintf("%d MiB", x.MemoryMB)
		}
		runsFor := "anyone"
		if x.BoundUser != "" {
			runsFor = x.BoundUser
		}
		if err := t.Append(string(x.ID), x.Hostname, x.Slots, x.BusySlots, mem, x.CanSuspend, isolationText(x.Isolation), runsFor,
			x.State, when(x.LastHeartbeat), routeText(x.Route)); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	if len(cl.Pilots) > 0 || len(cl.Pools) > 0 {
		if err := renderPilots(c, cl); err != nil {
			return err
		}
	}
	q, m := v.Queues, v.Metrics
	fmt.Fprintf(w, "queues: %d requested, %d disclosed waiting; %d running copies (%d speculative), %d suspended\n",
		q.Requested, q.Disclosed, q.RunningCopies, q.SpeculativeCopies, q.SuspendedCopies)
	mt := newTable(c, "metric", "value")
	rows := [][]any{
		{"finished tasks", m.FinishedTasks},
		{"tasks per hour", fmt.Sprintf("%.1f", m.TasksPerHour)},
		{"mean visible response", secs(m.MeanVisibleResponseSeconds)},
		{"mean visible slowdown", fmt.Sprintf("%.2f", m.MeanVisibleSlowdown)},
		{"load", fmt.Sprintf("%.2f", m.Load)},
		{"billed slot-seconds", secs(m.BilledSlotSeconds)},
	}
	rows = append(rows, freeRows(cl.Metrics.Free)...)
	rows = append(rows, [][]any{
		{"speculative copies started / won", fmt.Sprintf("%d / %d", m.SpeculativeCopiesStarted, m.SpeculativeCopiesWon)},
		{"beta (samples)", fmt.Sprintf("%.2f (%d)", m.Beta, m.BetaSamples)},
		{"scaled billed resources", fmt.Sprintf("%.2f", m.ScaledBilledResources)},
	}...)
	for _, r := range rows {
		if err := mt.Append(r...); err != nil {
			return err
		}
	}
	if err := mt.Render(); err != nil {
		return err
	}
	return renderShares(c, v.FairShare, v.Users)
}

// renderShares prints each user's fair-share standing: weight, slots held
// by requested copies, queued requested tasks, share of the slots and
// decayed usage.
func renderShares(c *cli.Context, on bool, us []shareView) error {
	if !on {
		fmt.Fprintln(c.App.Writer, "fair share: off (requested work in SRPT order across users)")
		return nil
	}
	if len(us) == 0 {
		return nil
	}
	fmt.Fprintln(c.App.Writer, "fair share between users (requested work):")
	t := newTable(c, "user", "weight", "held", "queued", "share", "usage")
	for _, u := range us {
		if err := t.Append(u.Name, fmt.Sprintf("%g", u.Weight), u.Held, u.Queued, fmt.Sprintf("%.2f", u.Share), secs(u.Usage)); err != nil {
			return err
		}
	}
	return t.Render()
}

// renderPilots prints the elastic pools and their pilots: job id, state,
// reason, node, slots and age (since start, or since submission while
// pending).
func renderPilots(c *cli.Context, cl client.Cluster) error {
	w := c.App.Writer
	for _, p := range cl.Pools {
		line := fmt.Sprintf("pool %s (%s), reported %s ago", p.Name, p.Engine, age(p.ReportedAt))
		if p.LastError != "" {
			line += "; backing off: " + p.LastError
		}
		fmt.Fprintln(w, line)
	}
	t := newTable(c, "pool", "pilot", "state", "reason", "node", "slots", "age", "worker")
	for _, p := range cl.Pilots {
		since := p.StartedAt
		if since.IsZero() {
			since = p.SubmittedAt
		}
		reason := p.Reason
		if reason == "" {
			reason = "-"
		}
		node := p.Node
		if node == "" {
			node = "-"
		}
		if err := t.Append(p.Pool, p.ID, p.State, reason, node, p.Slots, age(since), p.Worker); err != nil {
			return err
		}
	}
	return t.Render()
}

// age is how long ago t was, to the second ("-" when unknown).
func age(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return time.Since(t).Round(time.Second).String()
}

// isolationText is a worker's isolation as batchctl shows it ("none"
// when it reported none).
func isolationText(mech string) string { return sched.NormalIsolation(mech) }
