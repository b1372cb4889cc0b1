// Package simtest holds test helpers: it lets a package's test binary stand
// in for nccltune's simulated cluster, so that tests start it as a real
// process, through the same launchers and parsers as real nccl-tests; and it
// says when a test needs Open MPI.
package simtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/nccltune/nccltune/runner/sim"
)

// Env marks a child process that must act as the simulator.
const Env = "NCCLTUNE_TEST_BE_SIM"

// Main is a TestMain: in a child started by the tests it runs the simulator
// on its arguments; otherwise it runs the tests, whose children inherit Env.
// A child given test flags is the test binary again (a fuzzing worker, a
// test that re-runs itself), not the simulator.
func Main(m *testing.M) {
	if os.Getenv(Env) == "1" && !slices.ContainsFunc(os.Args[1:], func(a string) bool { return strings.HasPrefix(a, "-test.") }) {
		sim.Exit(os.Args[1:])
	}
	os.Setenv(Env, "1")
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// built is Simulator's binary, and the folder it is in.
var built struct {
	once      sync.Once
	dir, path string
	err       error
}

// Simulator is a binary of the simulated cluster alone (simcmd), built once
// per test binary and removed as Main ends. It does what the test binary
// does as the simulator, and starts in a fraction of the time: the test
// binary initialises every package it links first (SQLite, the parsers'
// expressions), once per trial of a campaign.
func Simulator(t testing.TB) string {
	t.Helper()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "simtest"); built.err != nil {
			return
		}
		path := filepath.Join(built.dir, "sim")
		// go test puts its own go first in the PATH of the test binary.
		out, err := exec.Command("go", "build", "-o", path, "github.com/nccltune/nccltune/internal/simtest/simcmd").CombinedOutput()
		if err != nil {
			built.err = fmt.Errorf("building the simulator: %v\n%s", err, out)
			return
		}
		built.path = path
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.path
}

// RequireMPI skips the test without mpirun, except in CI, which must have it
// (.ci/run installs Open MPI); as root it allows mpirun to run as root.
func RequireMPI(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("mpirun"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("mpirun is missing in CI: .ci/run should install openmpi-bin")
		}
		t.Skip("mpirun not installed")
	}
	if os.Geteuid() == 0 {
		t.Setenv("OMPI_ALLOW_RUN_AS_ROOT", "1")
		t.Setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
	}
}

// PerfBinaries writes empty nccl-tests binaries of the collectives into a
// new folder, named <collective>_perf<suffix>, and returns the folder.
func PerfBinaries(t testing.TB, suffix string, colls ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, coll := range colls {
		if err := os.WriteFile(filepath.Join(dir, coll+"_perf"+suffix), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
