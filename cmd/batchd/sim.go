package main

import (
	"errors"

	"github.com/urfave/cli/v2"
)

// simCommand is a placeholder until its owner lands the real command.
func simCommand() *cli.Command {
	return &cli.Command{
		Name:   "sim",
		Action: func(*cli.Context) error { return errors.New("sim: not built yet") },
	}
}
