package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"batchd/client"
	"batchd/sched"
)

// warnUnknownRoute says on standard error that a new set is routed to a
// pool or partition no worker has registered under: it was accepted
// (pools come and go), but nothing runs it until such a worker comes.
func warnUnknownRoute(c *cli.Context, res client.DiscloseResult) {
	if !res.UnknownRoute {
		return
	}
	fmt.Fprintf(c.App.ErrWriter, "batchctl: warning: no worker has registered in %s yet; set %d waits until one does\n", res.Set.Route, res.Set.ID)
}

// routeText is a set's route for a table's cell ("-": anywhere).
func routeText(r sched.Route) string {
	switch {
	case r.IsZero():
		return "-"
	case r.Partition == "":
		return r.Pool
	case r.Pool == "":
		return ":" + r.Partition
	}
	return r.Pool + ":" + r.Partition
}
