package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"batchd/worker"
)

// isolationFlags are the flags of `batchd worker` and `batchd serve` that
// choose how tasks are kept from the worker, the server and each other.
func isolationFlags(envPrefix string) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "isolation", Value: string(worker.IsolationAuto), EnvVars: []string{envPrefix + "ISOLATION"},
			Usage: "how tasks are kept from the worker, the server and each other: auto (uid as root, else namespaces where the kernel allows them, else none), " +
				"uid (root: each running copy as its own uid of --slot-uids), owner-uid (root: as the Unix user named like the task's owner), " +
				"namespaces (user, mount and PID namespaces: the data and state directories hidden, /proc private, the rest read-only), " +
				"none (the tasks see all the worker sees: bound to one user)"},
		&cli.StringFlag{Name: "slot-uids", Value: worker.DefaultSlotUIDs.String(), EnvVars: []string{envPrefix + "SLOT_UIDS"},
			Usage: "`FIRST-LAST` uids (and gids) a root worker runs copies as, one per running copy; numbers need no account. Give each worker on a machine its own range"},
		&cli.IntFlag{Name: "max-procs", Value: worker.DefaultMaxProcs, EnvVars: []string{envPrefix + "MAX_PROCS"},
			Usage: "processes (threads included) one copy may hold, so that a fork bomb ends its own copy (-1: no limit)"},
	}
}

// isolationConfig reads the isolation flags into cfg.
func isolationConfig(c *cli.Context, cfg *worker.Config) error {
	iso, err := worker.ParseIsolation(c.String("isolation"))
	if err != nil {
		return fmt.Errorf("--isolation: %w", err)
	}
	uids, err := worker.ParseUIDRange(c.String("slot-uids"))
	if err != nil {
		return fmt.Errorf("--slot-uids: %w", err)
	}
	cfg.Isolation, cfg.SlotUIDs, cfg.MaxProcs = iso, uids, c.Int("max-procs")
	return nil
}

// workerToken finds the worker token: --token-fd, --token-file (removed
// after reading with --remove-token-file, waited for while empty with
// --token-wait), else, deprecated, --token or
// $BATCH_WORKER_TOKEN. The variable is cleared from this process's
// environment either way; a token that came in the environment or on the
// command line is said to be readable by others.
func workerToken(c *cli.Context, log *slog.Logger) (string, error) {
	envTok, inEnv := os.LookupEnv("BATCH_WORKER_TOKEN")
	os.Unsetenv("BATCH_WORKER_TOKEN")
	n := 0
	for _, f := range []string{"token-fd", "token-file", "token"} {
		if c.IsSet(f) {
			n++
		}
	}
	if n > 1 {
		return "", errors.New("give the token one way: --token-fd, --token-file or --token")
	}
	switch {
	case c.IsSet("token-fd"):
		return worker.TokenFromFD(c.Int("token-fd"))
	case c.IsSet("token-file"):
		return worker.WaitTokenFile(c.Context, c.String("token-file"), c.Bool("remove-token-file"), c.Duration("token-wait"))
	case c.IsSet("token"):
		log.Warn("DEPRECATED: --token puts the worker token on the command line, which every process of the machine may read (/proc/PID/cmdline); use --token-fd or --token-file")
		return strings.TrimSpace(c.String("token")), nil
	case inEnv:
		log.Warn("DEPRECATED: BATCH_WORKER_TOKEN in the environment stays readable in /proc/PID/environ for the worker's life; use --token-fd or --token-file")
		return strings.TrimSpace(envTok), nil
	}
	return "", nil
}
