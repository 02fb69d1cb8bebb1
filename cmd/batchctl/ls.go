package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"batchd/client"
	"batchd/sched"
)

// This file is `batchctl ls`: finding task sets, finished ones included
// (sacct's history), by name, state, owner, time and label.

func lsCommand() *cli.Command {
	return &cli.Command{
		Name:  "ls",
		Usage: "find task sets by name, state, time and label, finished ones too (like sacct)",
		Description: `Lists task sets, newest first. As sacct does, it shows by default the sets
created since midnight (local time) in every state, and the sets created
before that which are still open (waiting, queued or running); --since
moves that start (open sets are always shown), --until bounds it, and
--all-time drops both. Filters combine (all must hold):

   --name GLOB      the set's name matches GLOB (* ? [...]; case-sensitive)
   --state STATES   comma-separated: waiting (for --after dependencies),
                    queued, running, done, failed (a requested task failed),
                    canceled; also open (waiting,queued,running), ended
                    (done,failed,canceled), and Slurm's pending, completed
                    and cancelled
   --label K=V      carries label K=V (disclose --label; repeatable)
   --user NAME      admins: NAME's sets; --all-users: everyone's

A page holds --limit sets (default 100); --page TOKEN continues where the
last page ended, --all lists every page.

Examples:

   batchctl ls
   batchctl ls --state failed --since 7d
   batchctl ls --name 'render-*' --state open
   batchctl ls --label project=ray --all-time --all
   batchctl ls --all-users --state running          # admins`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "name", Usage: "sets whose name matches `GLOB`"},
			&cli.StringFlag{Name: "state", Usage: "sets in these `STATES`, comma-separated (waiting, queued, running, done, failed, canceled, open, ended)"},
			&cli.StringSliceFlag{Name: "label", Usage: "sets with label `KEY=VALUE` (repeatable: all must hold)"},
			&cli.StringFlag{Name: "since", Usage: "sets created from this date, time or duration ago (default: midnight today; open sets are always listed)"},
			&cli.StringFlag{Name: "until", Usage: "sets created before this date, time or duration ago"},
			&cli.BoolFlag{Name: "all-time", Usage: "no time bound: every set, however old"},
			&cli.StringFlag{Name: "user", Usage: "admins: the sets of user `NAME`"},
			&cli.BoolFlag{Name: "all-users", Usage: "admins: every user's sets"},
			&cli.IntFlag{Name: "limit", Usage: "at most `N` sets", Value: 100},
			&cli.BoolFlag{Name: "all", Usage: "every page, however many sets"},
			&cli.StringFlag{Name: "page", Usage: "continue a listing from `TOKEN`"},
			jsonFlag(),
		},
		Action: ls,
	}
}

func ls(c *cli.Context) error {
	if c.NArg() > 0 {
		return usageErr("ls takes no arguments: use status SET to show one set")
	}
	in, err := lsFilter(c, time.Now())
	if err != nil {
		return err
	}
	limit := c.Int("limit")
	if c.Bool("all") {
		limit = 0
	} else if limit <= 0 {
		return usageErr("--limit %d: want 1 or more (or --all)", limit)
	}
	cl := newClient(c)
	var sets []sched.TaskSet
	token := c.String("page")
	for limit == 0 || len(sets) < limit {
		in.PageToken, in.PageSize = token, 1000
		if limit > 0 {
			in.PageSize = int32(min(limit-len(sets), 1000))
		}
		page, err := cl.ListSets(c.Context, in)
		if err != nil {
			return err
		}
		sets = append(sets, page.Sets...)
		if token = page.NextPageToken; token == "" {
			break
		}
	}
	if asJSON(c) {
		views := []setView{}
		for _, s := range sets {
			views = append(views, viewSet(s))
		}
		return writeJSON(c.App.Writer, struct {
			Sets          []setView `json:"sets"`
			NextPageToken string    `json:"next_page_token"`
		}{views, token})
	}
	header := []any{"set", "name", "state", "created", "tasks", "running", "finished", "failed", "canceled", "billed", "after / labels", "pool"}
	if in.AllOwners || in.Owner != "" {
		header = append(header[:2:2], append([]any{"owner"}, header[2:]...)...)
	}
	t := newTable(c, header...)
	for _, s := range sets {
		n := s.Counts
		row := []any{strconv.FormatInt(int64(s.ID), 10), s.Name, setStateText(s), when(s.CreatedAt), n.Total, n.Running, n.Finished, s.Failed,
			n.Canceled, secs(s.BilledSlotSeconds), afterAndLabels(s), routeText(s.Route)}
		if len(header) > 12 {
			row = append(row[:2:2], append([]any{s.Owner}, row[2:]...)...)
		}
		if err := t.Append(row...); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	if token != "" {
		fmt.Fprintf(c.App.ErrWriter, "more: batchctl ls --page %s (same filters)\n", token)
	}
	return nil
}

// lsFilter reads ls's filters at now.
func lsFilter(c *cli.Context, now time.Time) (client.ListSetsInput, error) {
	in := client.ListSetsInput{NameGlob: c.String("name"), Owner: c.String("user"), AllOwners: c.Bool("all-users")}
	if in.AllOwners && in.Owner != "" {
		return in, usageErr("give --user or --all-users, not both")
	}
	var err error
	if in.States, err = parseSetStates(c.String("state")); err != nil {
		return in, err
	}
	if in.Labels, err = parseLabels(c.StringSlice("label")); err != nil {
		return in, err
	}
	if c.Bool("all-time") {
		if c.IsSet("since") || c.IsSet("until") {
			return in, usageErr("--all-time drops the time bounds: give it or --since/--until, not both")
		}
		return in, nil
	}
	y, m, d := now.Date()
	in.Since, in.IncludeOpen = time.Date(y, m, d, 0, 0, 0, 0, now.Location()), true
	if c.IsSet("since") {
		if in.Since, err = parseWhen("since", c.String("since"), now); err != nil {
			return in, err
		}
	}
	if in.Until, err = parseWhen("until", c.String("until"), now); err != nil {
		return in, err
	}
	return in, nil
}

// parseSetStates reads --state's list of set states.
func parseSetStates(s string) ([]sched.SetState, error) {
	var out []sched.SetState
	for _, w := range strings.Split(s, ",") {
		switch w = strings.ToLower(strings.TrimSpace(w)); w {
		case "":
		case "open":
			out = append(out, sched.SetWaiting, sched.SetQueued, sched.SetRunning)
		case "ended":
			out = append(out, sched.SetDone, sched.SetFailed, sched.SetCanceled)
		case "pending":
			out = append(out, sched.SetWaiting, sched.SetQueued)
		case "completed":
			out = append(out, sched.SetDone)
		case "cancelled":
			out = append(out, sched.SetCanceled)
		default:
			if !sched.SetState(w).Valid() {
				return nil, usageErr("--state %q: want waiting, queued, running, done, failed, canceled, open or ended", w)
			}
			out = append(out, sched.SetState(w))
		}
	}
	return out, nil
}

// parseLabels reads KEY=VALUE labels.
func parseLabels(ss []string) ([]sched.Label, error) {
	var out []sched.Label
	for _, s := range ss {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return nil, usageErr("label %q: want KEY=VALUE", s)
		}
		out = append(out, sched.Label{Key: k, Value: v})
	}
	return out, nil
}

// setStateText is a set's state for a table: with the reason the server
// canceled it.
func setStateText(s sched.TaskSet) string {
	if s.CanceledReason != "" {
		return string(s.State) + " (" + s.CanceledReason + ")"
	}
	return string(s.State)
}

// afterAndLabels is a set's dependencies and labels for a table cell.
func afterAndLabels(s sched.TaskSet) string {
	var parts []string
	if a := afterStrings(s.After); len(a) > 0 {
		parts = append(parts, "after "+strings.Join(a, ","))
	}
	for _, l := range s.Labels {
		parts = append(parts, l.Key+"="+l.Value)
	}
	return strings.Join(parts, " ")
}

func afterStrings(deps []sched.Dependency) []string {
	var out []string
	for _, d := range deps {
		out = append(out, d.String())
	}
	return out
}

func labelMap(ls []sched.Label) map[string]string {
	if len(ls) == 0 {
		return nil
	}
	m := make(map[string]string, len(ls))
	for _, l := range ls {
		m[l.Key] = l.Value
	}
	return m
}

// setStateLine is status's line on a set's state, dependencies and labels
// ("" when there is nothing to say beyond the counts).
func setStateLine(s sched.TaskSet) string {
	extra := afterAndLabels(s)
	if s.State == "" || (extra == "" && s.CanceledReason == "" && s.State != sched.SetWaiting) {
		return ""
	}
	line := "state: " + setStateText(s)
	if extra != "" {
		line += "; " + extra
	}
	return line
}
