package main

import (
	"os"
	"runtime/pprof"

	"github.com/urfave/cli/v2"
)

// cpuProfileFlag is sim experiment's and sim report's --cpuprofile.
var cpuProfileFlag = &cli.StringFlag{Name: "cpuprofile", Usage: "write a CPU profile of the runs to `FILE` (go tool pprof)"}

// startCPUProfile starts the CPU profile --cpuprofile names, if any; the
// returned func stops it.
func startCPUProfile(c *cli.Context) (func(), error) {
	name := c.String(cpuProfileFlag.Name)
	if name == "" {
		return func() {}, nil
	}
	f, err := os.Create(name)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
