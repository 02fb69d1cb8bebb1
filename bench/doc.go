// Package bench holds batchd's end-to-end benchmarks, each beside a
// baseline measured in the same run:
//
//   - BenchmarkPipeline: tasks per second through disclose → dispatch → run
//     `true` → finish → bill with 64 slots and with 2, against fork/exec of
//     `true` on as many goroutines; the server's CPU per task (its children
//     excluded), the parent's side of a fork, and the difference. The
//     part of that difference which is the local slots' agent, not the
//     server, is worker.BenchmarkCopies: the agent alone on the same
//     slots with an in-process transport that answers at once.
//
//   - BenchmarkRequestToStart: request → copy start, idle and with every
//     slot busy with disclosed work (the suspend path), against a local
//     fork/exec of `date`.
//
//   - BenchmarkDispatchUnderLoad: 2,000 requested tasks alone and under 200
//     API clients (users: with a think time; saturating: without); the
//     API's latencies and lapsed leases.
//
//   - BenchmarkMillionQueued: RSS per queued task at 10⁶ queued, restart
//     time and RSS after a kill -9.
//
//     go test -run '^$' -bench 'Pipeline|RequestToStart' -benchtime 2000x -count 3 ./bench/
//     go test -run '^$' -bench DispatchUnderLoad -benchtime 3x -count 3 ./bench/
//     go test -run '^$' -bench MillionQueued -benchtime 1x -count 3 ./bench/
//     go test -run '^$' -bench 'Copies/' -benchtime 2000x -count 3 ./worker/
//
// bench/dispatch.sh runs them all and sums them up (min / median / max,
// bench/minmedmax.awk); bench/settings.sh alternates `batchd serve` flags
// (BATCHD_BENCH_SERVE_ARGS) on the pipeline and the users' load.
//
// (one op of BenchmarkPipeline is one task, of BenchmarkRequestToStart one
// request, of BenchmarkDispatchUnderLoad one pair of 2,000-task runs, of
// BenchmarkMillionQueued one queue, kill and restart)
//
// The benchmarks build the real batchd binary and start `batchd serve` as
// child processes on loopback ports with temporary data directories; with
// BATCHD_BENCH_CPU_PROFILE=PREFIX each server writes a CPU profile to
// PREFIX-SLOTS.pprof. bench/authmem measures the memory and time of hostile
// request sizes. (bench/sim* belongs to the simulator.)
package bench
