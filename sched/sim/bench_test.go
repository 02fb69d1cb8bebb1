package sim

import (
	"context"
	"testing"

	"batchd/sched"
)

// BenchmarkPetrouTable3 is one 16-day Petrou run at Table 3's point under
// srpt×fcfs (the target: well under a second).
func BenchmarkPetrouTable3(b *testing.B) {
	p := Defaults(WorkloadPetrou)
	p.Sched = sched.Config{Policy: sched.PolicySRPTxFCFS, Speculation: sched.SpecNone}
	benchRun(b, p)
}

// BenchmarkCluster10k is a 10,000-slot cluster at 80% utilisation for 10
// virtual minutes after a 5-minute warm-up, hopper+grass, with a 50 ms
// dispatch tick; the reported virtual-s/s is virtual seconds per wall
// second (the target: at least 100).
func BenchmarkCluster10k(b *testing.B) { benchCluster10k(b, 0.05) }

// BenchmarkCluster10kEveryEvent is BenchmarkCluster10k with Decide after
// every batch of simultaneous events (no dispatch tick).
func BenchmarkCluster10kEveryEvent(b *testing.B) { benchCluster10k(b, 0) }

func benchCluster10k(b *testing.B, tick float64) {
	p := Defaults(WorkloadCluster)
	p.Slots, p.Utilization, p.Warmup, p.Duration, p.Drain = 10000, 0.8, 300, 600, 0.001
	p.DecideEvery = tick // 50 ms: a dispatch tick, as a server's loop would have
	// The arrival rate comes from a pilot on 1,000 slots (the work per task
	// does not depend on the cluster's size), outside the timed loop.
	q := Defaults(WorkloadCluster)
	q.Warmup, q.Duration = 300, 900
	q, err := CalibrateWork(context.Background(), q)
	if err != nil {
		b.Fatal(err)
	}
	p.WorkPerTask = q.WorkPerTask
	p.Sched = sched.Config{Policy: sched.PolicySRPTxFCFS, Speculation: sched.SpecHopperGRASS}
	b.ResetTimer()
	benchRun(b, p)
}

func benchRun(b *testing.B, p Params) {
	var ev, virt, wall, load float64
	for i := 0; b.Loop(); i++ {
		p.Seed = int64(i + 1)
		r, err := Run(context.Background(), p)
		if err != nil {
			b.Fatal(err)
		}
		ev += float64(r.Events + r.Applied)
		virt += p.Warmup + p.Duration
		wall += r.WallSeconds
		load += r.Load
	}
	b.ReportMetric(ev/wall, "events/s")
	b.ReportMetric(virt/wall, "virtual-s/s")
	b.ReportMetric(load/float64(b.N), "load")
}

// BenchmarkPetrouHeavy is the sweep's busiest kind of point: 16 users,
// 20-second service and think times, sets of up to 19 tasks.
func BenchmarkPetrouHeavy(b *testing.B) {
	p := Defaults(WorkloadPetrou)
	p.Users, p.ServiceMean, p.ThinkMean, p.SetSizeMax, p.ChangeProbMax = 16, 20, 20, 19, 0.4
	p.Sched = sched.Config{Policy: sched.PolicySRPTxFCFS, Speculation: sched.SpecNone}
	benchRun(b, p)
}

// BenchmarkCluster10kShort is BenchmarkCluster10k over 2 virtual minutes,
// for profiling.
func BenchmarkCluster10kShort(b *testing.B) {
	p := Defaults(WorkloadCluster)
	p.Slots, p.Utilization, p.Warmup, p.Duration, p.Drain = 10000, 0.8, 0, 120, 0.001
	p.WorkPerTask, p.DecideEvery = 20, 0.05
	p.Sched = sched.Config{Policy: sched.PolicySRPTxFCFS, Speculation: sched.SpecHopperGRASS}
	benchRun(b, p)
}
