package main

import (
	"errors"

	"github.com/urfave/cli/v2"
)

// workerCommand is a placeholder until its owner lands the real command.
func workerCommand() *cli.Command {
	return &cli.Command{
		Name:   "worker",
		Action: func(*cli.Context) error { return errors.New("worker: not built yet") },
	}
}
