// Command batchctl is the command-line client of batchd: it discloses task
// sets, requests and cancels tasks, waits for and prints their results, and
// reads the bill. Run `batchctl --help` for a tour.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
