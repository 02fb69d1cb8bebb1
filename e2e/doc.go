// Package e2e holds batchd's end-to-end tests. They build the real batchd and
// batchctl binaries into a temporary directory, start `batchd serve` (and
// `batchd worker`) as child processes on loopback ports with temporary data
// directories, and drive them through batchctl and grpcurl exactly as a
// person would. `go test -short` skips them.
package e2e
