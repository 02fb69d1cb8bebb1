package main

import (
	"encoding/csv"
	"fmt"
	"io"
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
copy that produced each result. The rest is free, in four parts: executed but
never requested; losing speculative copies; canceled; lost with a worker. The scaled billed resources are
billed slot-seconds divided by the requested work (1.0 means you paid exactly
for what you asked for).

--since and --until take a date (2026-11-22), a time (2026-11-22T10:00:00Z)
or a duration back from now (24h, 90m, 7d).

Examples:

   batchctl bill
   batchctl bill --since 24h --lines
   batchctl bill --set 3 --json
   batchctl bill --csv > bill.csv          # every line, for a spreadsheet
   batchctl bill --all --since 30d         # admins: everyone's, with per-user totals
   batchctl bill --owner alice             # admins: one user's

Each line carries the prices it was written with (per slot-second and per
CPU second, set by the server) and its amount. The ledger is never edited:
a correction is a further line (kind "correction") naming the line it
amends. Totals are also given per task set and per user.

A line bills the run time its worker reported, but never more than the
server saw the copy run (from the decision that started it to the report,
less the suspensions the server ordered, plus max(1 s, 1%)). With --lines,
the "reported" column shows a report that was cut to that; --json and --csv
carry reported_slot_seconds, reported_cpu_seconds and clamped.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "since", Usage: "from this date, time or duration ago"},
			&cli.StringFlag{Name: "until", Usage: "up to this date, time or duration ago"},
			&cli.Int64Flag{Name: "set", Usage: "only task set `ID`"},
			&cli.BoolFlag{Name: "lines", Aliases: []string{"l"}, Usage: "list every bill line (always included with --json)"},
			&cli.BoolFlag{Name: "csv", Usage: "print every bill line as CSV (header first)"},
			&cli.StringFlag{Name: "owner", Usage: "admins: the bill of user `NAME`"},
			&cli.BoolFlag{Name: "all", Usage: "admins: everyone's bill"},
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
	jsonOut, csvOut := asJSON(c), c.Bool("csv")
	if jsonOut && csvOut {
		return usageErr("--json and --csv exclude each other")
	}
	owner := c.String("owner")
	if c.Bool("all") {
		if owner != "" {
			return usageErr("--all and --owner exclude each other")
		}
		owner = "*"
	}
	b, err := newClient(c).GetBill(c.Context, client.BillInput{
		Since: since, Until: until, Set: sched.SetID(c.Int64("set")), Lines: jsonOut || csvOut || c.Bool("lines"), Owner: owner,
	})
	if err != nil {
		return err
	}
	w := c.App.Writer
	if csvOut {
		return writeBillCSV(w, b.Lines)
	}
	if jsonOut {
		lines := []billLineView{}
		for _, l := range b.Lines {
			lines = append(lines, viewBillLine(l))
		}
		return writeJSON(w, struct {
			Totals          billTotalsView  `json:"totals"`
			PriceSlotSecond float64         `json:"price_slot_second"`
			PriceCPUSecond  float64         `json:"price_cpu_second"`
			BySet           []billGroupView `json:"by_set"`
			ByOwner         []billGroupView `json:"by_owner"`
			Lines           []billLineView  `json:"lines"`
		}{viewBillTotals(b.Totals), b.PriceSlotSecond, b.PriceCPUSecond, viewBillGroups(b.BySet), viewBillGroups(b.ByOwner), lines})
	}
	t := b.Totals
	fmt.Fprintf(w, "prices: %g per slot-second, %g per CPU second; amount due: %s\n", b.PriceSlotSecond, b.PriceCPUSecond, money(t.Amount))
	tb := newTable(c, "", "slot-seconds", "cpu-seconds", "lines")
	rows := [][]any{{"billed (requested work)", secs(t.BilledSlotSeconds), secs(t.BilledCPUSeconds), t.Lines}}
	rows = append(rows, freeRows(t.Free, "", "")...)
	rows = append(rows, []any{"requested work", secs(t.RequestedWorkSlotSeconds), "", ""})
	for _, r := range rows {
		if err := tb.Append(r...); err != nil {
			return err
		}
	}
	if err := tb.Render(); err != nil {
		return err
	}
	fmt.Fprintf(w, "scaled billed resources: %.2f\n", t.ScaledBilledResources)
	if len(b.ByOwner) > 1 || owner == "*" {
		ot := newTable(c, "user", "lines", "slot-seconds", "cpu-seconds", "amount")
		for _, g := range b.ByOwner {
			if err := ot.Append(g.Owner, g.Lines, secs(g.SlotSeconds), secs(g.CPUSeconds), money(g.Amount)); err != nil {
				return err
			}
		}
		if err := ot.Render(); err != nil {
			return err
		}
	}
	if len(b.BySet) > 0 {
		st := newTable(c, "set", "set name", "user", "lines", "slot-seconds", "cpu-seconds", "amount")
		for _, g := range b.BySet {
			if err := st.Append(int64(g.Set), g.SetName, g.Owner, g.Lines, secs(g.SlotSeconds), secs(g.CPUSeconds), money(g.Amount)); err != nil {
				return err
			}
		}
		if err := st.Render(); err != nil {
			return err
		}
	}
	if !c.Bool("lines") {
		return nil
	}
	lt := newTable(c, "line", "task", "attempt", "set name", "copy", "slot-seconds", "reported", "cpu-seconds", "amount", "billed at", "reason")
	for _, l := range b.Lines {
		reason := l.Reason
		if l.Kind == sched.BillKindCorrection {
			reason = fmt.Sprintf("correction of line %d: %s", l.Corrects, l.Note)
		}
		reported := ""
		if l.Clamped {
			reported = secs(l.ReportedSlotSeconds) + " (cut)"
		}
		if err := lt.Append(l.ID, fmt.Sprintf("%d/%d", l.Task.Set, l.Task.Index), max(1, l.Attempt), l.SetName, int64(l.Copy),
			secs(l.SlotSeconds), reported, secs(l.CPUSeconds), money(l.Amount), when(l.BilledAt), reason); err != nil {
			return err
		}
	}
	return lt.Render()
}

// money formats an amount with four decimals.
func money(v float64) string { return strconv.FormatFloat(v, 'f', 4, 64) }

// writeBillCSV prints the bill lines as CSV, header first.
func writeBillCSV(w io.Writer, lines []sched.BillLine) error {
	cw := csv.NewWriter(w)
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	if err := cw.Write([]string{"line", "owner", "set", "index", "set_name", "copy", "slot_seconds", "cpu_seconds",
		"price_slot_second", "price_cpu_second", "amount", "billed_at", "reason", "kind", "corrects", "note",
		"reported_slot_seconds", "reported_cpu_seconds", "clamped", "attempt"}); err != nil {
		return err
	}
	for _, l := range lines {
		if err := cw.Write([]string{strconv.FormatInt(l.ID, 10), l.Owner, strconv.FormatInt(int64(l.Task.Set), 10),
			strconv.Itoa(int(l.Task.Index)), l.SetName, strconv.FormatInt(int64(l.Copy), 10), f(l.SlotSeconds), f(l.CPUSeconds),
			f(l.PriceSlotSecond), f(l.PriceCPUSecond), f(l.Amount), l.BilledAt.UTC().Format(time.RFC3339Nano), l.Reason, l.Kind,
			strconv.FormatInt(l.Corrects, 10), l.Note, f(l.ReportedSlotSeconds), f(l.ReportedCPUSeconds), strconv.FormatBool(l.Clamped),
			strconv.Itoa(int(max(1, l.Attempt)))}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
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
