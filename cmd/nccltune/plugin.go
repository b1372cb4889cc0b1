package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/nccltune/nccltune/plugin"
)

func pluginCommand() *cli.Command {
	return &cli.Command{
		Name:  "plugin",
		Usage: "nccltune's own NCCL tuner plugin",
		Subcommands: []*cli.Command{{
			Name:  "build",
			Usage: "build the plugin (a C shared library) with the system's C compiler",
			Description: "Writes the plugin's sources into --out and builds " + plugin.LibraryName + " there with\n" +
				"--cc alone; no make, NCCL or CUDA is needed (a file there that is not the plugin's, a project's\n" +
				"Makefile, is never replaced: the build is refused). Load it in a job with NCCL_TUNER_PLUGIN=PATH and\n" +
				plugin.RulesEnv + "=RULES, the file `nccltune export --format plugin` writes (its nccl-plugin.env\n" +
				"sets both). It exports NCCL's tuner interfaces v4 (NCCL 2.24-2.27), v5 (2.28, 2.29) and v6 (2.30).",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "out", Value: ".", Usage: "`DIR` for the sources and the library"},
				&cli.StringFlag{Name: "cc", Value: "cc", Usage: "C `COMPILER`"},
			},
			Action: func(c *cli.Context) error {
				lib, err := plugin.Build(c.String("out"), c.String("cc"))
				if err != nil {
					// Ctrl-C signals the compiler too, which then fails the
					// build, maybe before nccltune's own handler has run.
					if diedOfStop(err) {
						return context.Canceled
					}
					return cmp.Or(c.Context.Err(), err)
				}
				_, err = fmt.Println(lib) // a listing lost (a full disk) fails the command
				return err
			},
		}},
	}
}

// diedOfStop reports whether err is a program's death by a signal that
// stops nccltune (stopSignals): sent to the terminal's whole process
// group, it may end the program before it reaches nccltune.
func diedOfStop(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && slices.Contains(stopSignals(), os.Signal(ws.Signal()))
}
