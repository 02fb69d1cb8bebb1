package main

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// Ctrl-C and SIGTERM cancel the context of a command that talks to the
// server, so that a waiting request says it was interrupted (its tasks
// stay requested) and exits with exitInterrupted. The handler is set up
// when the command makes its client, not at start: os/signal's watcher
// blocks a thread of its own, which `--version`, `--help` and completion
// would start (and pay for) for nothing.

// interruptsKey is the context key of the function that sets the handler up.
type interruptsKey struct{}

// withInterrupts returns ctx, cancelable, carrying a function that sets
// up the handler (once) to cancel it; main gives run this context.
func withInterrupts(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	watch := sync.OnceFunc(func() {
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
		go func() {
			<-ch
			cancel()
		}()
	})
	return context.WithValue(ctx, interruptsKey{}, watch), cancel
}

// watchInterrupts sets up the handler of ctx, if it has one (tests run
// the app with contexts of their own).
func watchInterrupts(ctx context.Context) {
	if watch, ok := ctx.Value(interruptsKey{}).(func()); ok {
		watch()
	}
}
