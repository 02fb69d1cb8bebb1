// Command batchd is the batchd server, worker agent and simulator.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"

	"batchd/cmd/internal/cliarg"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := runApp(ctx, newApp(os.Stdout, os.Stderr), os.Args)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "batchd:", cliarg.UnknownCommand(err.Error(), "batchd"))
		os.Exit(1)
	}
}

// runApp runs app with args, flags after a command's arguments moved in
// front of them (batchd user add NAME --worker).
func runApp(ctx context.Context, app *cli.App, args []string) error {
	return app.RunContext(ctx, cliarg.Reorder(app, args))
}

// newApp builds the command tree, writing to stdout and stderr, so tests can
// run it in-process and capture what it prints.
func newApp(stdout, stderr io.Writer) *cli.App {
	return &cli.App{
		Name:      "batchd",
		Usage:     "a grid batch service for speculative task sets",
		Version:   version,
		Writer:    stdout,
		ErrWriter: stderr,
		Description: "batchd runs tasks that users disclose, request and cancel. Requested work runs first\n" +
			"(SRPT), disclosed work fills idle slots (FCFS), stragglers get speculative copies\n" +
			"(Hopper + GRASS), and only requested work is billed.\n\n" +
			"Start a complete local service (server, one worker slot per CPU, SQLite in ./batchd-data):\n\n" +
			"    batchd serve",
		Commands: []*cli.Command{
			serveCommand(),
			workerCommand(),
			poolCommand(),
			simCommand(),
			userCommand(),
			billCommand(),
		},
		HideHelpCommand: true,
		Suggest:         true,
		// Errors go back to main, which prints them and exits 1.
		ExitErrHandler: func(*cli.Context, error) {},
	}
}
