package main

import (
	"fmt"
	"strconv"

	"github.com/urfave/cli/v2"

	"batchd/store"
)

// billCommand is `batchd bill correct`: the operator's correction path.
// The ledger is never edited; a correction is a new line naming the line it
// amends, priced at the prices given here.
func billCommand() *cli.Command {
	return &cli.Command{
		Name:  "bill",
		Usage: "ledger administration on the data directory (corrections)",
		Subcommands: []*cli.Command{{
			Name:      "correct",
			Usage:     "append a correction line to the ledger",
			ArgsUsage: "LINE",
			Description: "Appends a line of kind \"correction\" for the owner, task and copy of ledger line LINE,\n" +
				"adding --slot-seconds and --cpu-seconds (negative to take off) at the given prices.\n" +
				"Nothing is ever edited: batchctl bill shows both lines and sums them.\n\n" +
				"   batchd bill correct --slot-seconds -12.5 --note 'clock skew on worker a' 42",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "data", Value: "./batchd-data", EnvVars: []string{"BATCHD_DATA"}, Usage: "the server's data `DIR`"},
				&cli.Float64Flag{Name: "slot-seconds", Usage: "slot-seconds to add (negative: to take off)"},
				&cli.Float64Flag{Name: "cpu-seconds", Usage: "CPU seconds to add (negative: to take off)"},
				&cli.StringFlag{Name: "note", Usage: "why (required; shown on the bill)", Required: true},
				&cli.Float64Flag{Name: "price-slot-second", Value: 1, EnvVars: []string{"BATCHD_PRICE_SLOT_SECOND"}, Usage: "price per slot-second (as batchd serve)"},
				&cli.Float64Flag{Name: "price-cpu-second", Value: 0, EnvVars: []string{"BATCHD_PRICE_CPU_SECOND"}, Usage: "price per CPU second (as batchd serve)"},
			},
			Action: func(c *cli.Context) error {
				if c.NArg() != 1 {
					return fmt.Errorf("usage: batchd bill correct [flags] LINE")
				}
				line, err := strconv.ParseInt(c.Args().First(), 10, 64)
				if err != nil || line <= 0 {
					return fmt.Errorf("bad line %q: want the line's number (batchctl bill --lines)", c.Args().First())
				}
				db, err := openData(c)
				if err != nil {
					return err
				}
				defer db.Close()
				db.Prices = store.Prices{SlotSecond: c.Float64("price-slot-second"), CPUSecond: c.Float64("price-cpu-second")}
				b, err := db.CorrectBill(c.Context, store.CorrectInput{Line: line, SlotSeconds: c.Float64("slot-seconds"),
					CPUSeconds: c.Float64("cpu-seconds"), Note: c.String("note")})
				if err != nil {
					return err
				}
				fmt.Fprintf(c.App.Writer, "line %d corrects line %d of %s (task %d/%d): %+g slot-seconds, %+g CPU seconds, amount %+g\n",
					b.ID, b.Corrects, b.Owner, b.Task.Set, b.Task.Index, b.SlotSeconds, b.CPUSeconds, b.Amount)
				return nil
			},
		}},
	}
}
