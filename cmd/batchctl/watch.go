package main

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"batchd/client"
	"batchd/sched"
)

func watchCommand() *cli.Command {
	return &cli.Command{
		Name:      "watch",
		Usage:     "follow a task set's changes as they happen",
		ArgsUsage: "SET",
		Description: `Prints the set's counts, then one line per task change (state, copies,
exit status), until no requested task of the set is left unfinished, or
until Ctrl-C with --follow. With --json, prints one JSON object per line:
{"set": ..., "tasks": [...changed tasks], "snapshot": true|false}.

Examples:

   batchctl watch 3
   batchctl watch --follow --json 3 | jq .`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "keep watching after the requested tasks are done"},
			jsonFlag(),
		},
		Action: watch,
	}
}

func watch(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageErr("watch takes one set, e.g. batchctl watch 3")
	}
	sel, err := parseSel(c.Args().First())
	if err != nil {
		return err
	}
	if len(sel.Indexes) > 0 {
		return usageErr("watch takes a set (e.g. %d), not tasks", sel.Set)
	}
	w := c.App.Writer
	jsonOut := asJSON(c)
	enc := json.NewEncoder(w)
	type key struct {
		state  sched.TaskState
		copies string
	}
	seen := map[int32]key{}
	return newClient(c).Watch(c.Context, sel.Set, func(u client.WatchUpdate) error {
		if jsonOut {
			if err := enc.Encode(struct {
				Set      setView    `json:"set"`
				Tasks    []taskView `json:"tasks"`
				Snapshot bool       `json:"snapshot"`
			}{viewSet(u.Set), viewTasks(u.Tasks), u.Snapshot}); err != nil {
				return err
			}
		} else {
			now := time.Now().Format("15:04:05")
			n := u.Set.Counts
			if u.Snapshot {
				fmt.Fprintf(w, "%s set %d: %s, %d disclosed, %d executed, %d requested, %d finished, %d canceled, %d running\n",
					now, u.Set.ID, plural(n.Total, "task"), n.Disclosed, n.Executed, n.Requested, n.Finished, n.Canceled, n.Running)
			}
			for _, t := range u.Tasks {
				k := key{t.State, copiesText(t.Copies)}
				old, had := seen[t.Index]
				seen[t.Index] = k
				if u.Snapshot || (had && old == k) {
					continue
				}
				line := fmt.Sprintf("%s %d/%d %s", now, t.Set, t.Index, t.State)
				if k.copies != "-" {
					line += ", " + k.copies
				}
				if t.State == sched.TaskFinished {
					line += fmt.Sprintf(", exit %d, service %s, visible response %s", t.ExitCode, secs(t.ServiceSeconds), secs(t.VisibleResponseSeconds))
					if t.TimedOut {
						line += " (timed out)"
					}
				}
				fmt.Fprintln(w, line)
			}
		}
		if !c.Bool("follow") && u.Set.Counts.Requested == 0 {
			if !jsonOut {
				n := u.Set.Counts
				fmt.Fprintf(w, "set %d: no requested task left (%d finished, %d canceled, %d disclosed, %d executed)\n",
					u.Set.ID, n.Finished, n.Canceled, n.Disclosed, n.Executed)
			}
			return client.ErrStopWatch
		}
		return nil
	})
}
