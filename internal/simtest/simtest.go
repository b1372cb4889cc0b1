// Package simtest lets a package's test binary stand in for nccltune's
// simulated cluster, so that tests start it as a real process, through the
// same launchers and parsers as real nccl-tests.
package simtest

import (
	"os"
	"testing"

	"github.com/nccltune/nccltune/runner/sim"
)

// Env marks a child process that must act as the simulator.
const Env = "NCCLTUNE_TEST_BE_SIM"

// Main is a TestMain: in a child started by the tests it runs the simulator
// on its arguments; otherwise it runs the tests, whose children inherit Env.
func Main(m *testing.M) {
	if os.Getenv(Env) == "1" {
		sim.Exit(os.Args[1:])
	}
	os.Setenv(Env, "1")
	os.Exit(m.Run())
}
