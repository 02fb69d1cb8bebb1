package main

import (
	"errors"

	"github.com/urfave/cli/v2"
)

// serveCommand is a placeholder until its owner lands the real command.
func serveCommand() *cli.Command {
	return &cli.Command{
		Name:   "serve",
		Action: func(*cli.Context) error { return errors.New("serve: not built yet") },
	}
}
