package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"batchd/client"
)

func cancelCommand() *cli.Command {
	return &cli.Command{
		Name:      "cancel",
		Usage:     "cancel every unfinished task of a set, or named tasks",
		ArgsUsage: "SET[/INDEX[,INDEX|LOW-HIGH...]]...",
		Description: `Cancel SET cancels every unfinished task of the set, requested ones
included, and the set takes no more tasks (disclose a new one). Cancel
SET/INDEX cancels named tasks. Copies are killed and the output of tasks that
ran while disclosed is dropped. A requested task whose copy was running is
stopped and billed for what it used; any other task is canceled and never
billed. Cancelling twice is harmless, and cancel says what it did.

Examples:

   batchctl cancel 3          # every unfinished task of set 3
   batchctl cancel 3/7,9-12   # named tasks`,
		Flags:  []cli.Flag{jsonFlag()},
		Action: cancel,
	}
}

func cancel(c *cli.Context) error {
	if !c.Args().Present() {
		return usageErr("cancel what? give task references like 3 or 3/0 (see batchctl cancel --help)")
	}
	sels, err := parseSels(c.Args().Slice())
	if err != nil {
		return err
	}
	cl := newClient(c)
	type view struct {
		Set             setView `json:"set"`
		Canceled        int32   `json:"canceled"`
		Stopped         int32   `json:"stopped"`
		AlreadyCanceled int32   `json:"already_canceled"`
		Unchanged       int32   `json:"unchanged"`
	}
	var out []view
	for _, sel := range sels {
		res, err := cancelSel(c, cl, sel)
		if err != nil {
			return err
		}
		out = append(out, view{viewSet(res.Set), res.Canceled, res.Stopped, res.AlreadyCanceled, res.Unchanged})
	}
	if asJSON(c) {
		return writeJSON(c.App.Writer, out)
	}
	for _, v := range out {
		parts := []string{fmt.Sprintf("canceled %d", v.Canceled)}
		if v.Stopped > 0 {
			parts = append(parts, fmt.Sprintf("stopped %d (billed for what they used)", v.Stopped))
		}
		if v.AlreadyCanceled > 0 {
			parts = append(parts, fmt.Sprintf("already canceled %d", v.AlreadyCanceled))
		}
		if v.Unchanged > 0 {
			parts = append(parts, fmt.Sprintf("left %d finished", v.Unchanged))
		}
		if _, err := fmt.Fprintf(c.App.Writer, "set %d: %s\n", v.Set.ID, strings.Join(parts, ", ")); err != nil {
			return err
		}
	}
	return nil
}

// cancelSel cancels the tasks sel names, or every unfinished one of its set.
func cancelSel(c *cli.Context, cl *client.Client, sel taskSel) (client.CancelResult, error) {
	if sel.All {
		return cl.CancelAll(c.Context, sel.Set)
	}
	return cl.Cancel(c.Context, sel.Set, sel.Indexes)
}
