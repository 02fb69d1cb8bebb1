// Command batchctl is the command-line client of batchd: it discloses task
// sets, requests and cancels tasks, waits for and prints their results, and
// reads the bill. Run `batchctl --help` for a tour.
package main

import (
	"context"
	"os"
)

func main() {
	ctx, cancel := withInterrupts(context.Background())
	code := run(ctx, os.Args, os.Stdout, os.Stderr)
	cancel()
	os.Exit(code)
}
