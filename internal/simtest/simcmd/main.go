// Command simcmd is the simulated cluster alone (nccltune sim's), for the
// tests that launch it thousands of times: see simtest.Simulator.
package main

import (
	"os"

	"github.com/nccltune/nccltune/runner/sim"
)

func main() { sim.Exit(os.Args[1:]) }
