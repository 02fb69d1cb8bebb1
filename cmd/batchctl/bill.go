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

func billCommand() *cli.Command {
	return &cli.Command{
		Name:  "bill",
		Usage: "show what you pay for, and the work you got for free",
		Description: `You pay for requested tasks only: the slot-seconds and CPU seconds of the
copy that produced each result. Disclosed work you never requested, canceled
work and losing speculative copies are free. The scaled billed resources are
billed slot-seconds divided by the requested work (1.0 means you paid exactly
for what you asked for).

--since and --until take a date (2026-11-22), a time (2026-11-22T10:00:00Z)
or a duration back from now (24h, 90m, 7d).

Examples:

   batchctl bill
   batchctl bill --since 24h --lines
   batchctl bill --set 3 --json`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "since", Usage: "from this date, time or duration ago"},
			&cli.StringFlag{Name: "until", Usage: "up to this date, time or duration ago"},
			&cli.Int64Flag{Name: "set", Usage: "only task set `ID`"},
			&cli.BoolFlag{Name: "lines", Aliases: []string{"l"}, Usage: "list every bill line (always included with --json)"},
			jsonFlag(),
		},
		Action: bill,
	}
}

func bill(c *cli.Context) error {
	now := time.Now()
	since, err := parseWhen("since", c.String("since"), now)
	if err != nil {
		return err
	}
	until, err := parseWhen("until", c.String("until"), now)
	if err != nil {
		return err
	}
	jsonOut := asJSON(c)
	b, err := newClient(c).GetBill(c.Context, client.BillInput{
		Since: since, Until: until, Set: sched.SetID(c.Int64("set")), Lines: jsonOut || c.Bool("lines"),
	})
	if err != nil {
		return err
	}
	w := c.App.Writer
	if jsonOut {
		lines := []billLineView{}
		for _, l := range b.Lines {
			lines = append(lines, viewBillLine(l))
		}
		return writeJSON(w, struct {
			Totals billTotalsView `json:"totals"`
			Lines  []billLineView `json:"lines"`
		}{viewBillTotals(b.Totals), lines})
	}
	t := b.Totals
	tb := newTable(w, "", "slot-seconds", "cpu-seconds", "lines")
	rows := [][]any{
		{"billed (requested work)", secs(t.BilledSlotSeconds), secs(t.BilledCPUSeconds), t.Lines},
		{"free: executed, never requested", secs(t.ExecutedUnrequestedSlotSeconds), "", ""},
		{"free: speculative waste", secs(t.SpeculativeWasteSlotSeconds), "", ""},
		{"free: total", secs(t.FreeSlotSeconds), "", ""},
		{"requested work", secs(t.RequestedWorkSlotSeconds), "", ""},
	}
	for _, r := range rows {
		if err := tb.Append(r...); err != nil {
			return err
		}
	}
	if err := tb.Render(); err != nil {
		return err
	}
	fmt.Fprintf(w, "scaled billed resources: %.2f\n", t.ScaledBilledResources)
	if !c.Bool("lines") {
		return nil
	}
	lt := newTable(w, "line", "task", "set name", "copy", "slot-seconds", "cpu-seconds", "billed at", "reason")
	for _, l := range b.Lines {
		if err := lt.Append(l.ID, fmt.Sprintf("%d/%d", l.Task.Set, l.Task.Index), l.SetName, int64(l.Copy),
			secs(l.SlotSeconds), secs(l.CPUSeconds), when(l.BilledAt), l.Reason); err != nil {
			return err
		}
	}
	return lt.Render()
}

// parseWhen reads a date, an RFC 3339 time, or a duration back from now
// (with "d" for days). Empty means unbounded (the zero time).
func parseWhen(flag, s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.ParseFloat(days, 64); err == nil && n >= 0 {
			return now.Add(-time.Duration(n * 24 * float64(time.Hour))), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, usageErr("--%s %q: want a date (2026-11-22), a time (2026-11-22T10:00:00Z) or a duration ago (24h, 7d)", flag, s)
}
