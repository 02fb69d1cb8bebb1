package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"batchd/client"
	"batchd/sched"
)

// followOutput prints a task's output while it runs (stdout to stdout,
// stderr to stderr, or only stderr to stdout with --stderr) and returns
// when the task ends. A change of the copy followed is said on stderr.
func followOutput(c *cli.Context, ref sched.TaskRef) error {
	if asJSON(c) || c.IsSet("attempt") {
		return usageErr("--follow prints the running attempt's streams as they come: without --json or --attempt")
	}
	onlyErr := c.Bool("stderr")
	cl := newClient(c)
	return cl.FollowOutput(c.Context, ref, client.FollowFrom{}, func(ch client.OutputChunk) error {
		if ch.Switched {
			fmt.Fprintf(c.App.ErrWriter, "batchctl: %s\n", ch.Marker)
		}
		if !onlyErr && len(ch.Stdout) > 0 {
			if _, err := c.App.Writer.Write(ch.Stdout); err != nil {
				return err
			}
		}
		if len(ch.Stderr) > 0 {
			w := c.App.ErrWriter
			if onlyErr {
				w = c.App.Writer
			}
			if _, err := w.Write(ch.Stderr); err != nil {
				return err
			}
		}
		if ch.Ended {
			switch {
			case ch.State == sched.TaskCanceled:
				fmt.Fprintf(c.App.ErrWriter, "batchctl: task %d/%d was canceled\n", ref.Set, ref.Index)
			case ch.StdoutTruncated || ch.StderrTruncated:
				fmt.Fprintf(c.App.ErrWriter, "batchctl: the output was cut at the server's cap\n")
			}
		}
		return nil
	})
}
