// Package bench holds batchd's pipeline benchmarks: tasks per second
// through disclose → dispatch → run `true` → finish → bill with 64 slots over
// loopback, and the time from request to copy start on an idle server, each
// beside a baseline measured in the same run (fork/exec of the same command
// without batchd). Run them with one command:
//
//	go test -run '^$' -bench . -benchtime 2000x ./bench/
//
// (one op of BenchmarkPipeline is one task, of BenchmarkRequestToStart one
// request; 2000x gives a stable rate and a meaningful p99)
//
// The benchmarks build the real batchd binary and start `batchd serve` as a
// child process on a loopback port with a temporary data directory.
// (bench/sim* belongs to the simulator and is not part of this package.)
package bench
