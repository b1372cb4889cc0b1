package main

import (
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/urfave/cli/v2"

	"github.com/nccltune/nccltune/workload"
)

func profileCommand() *cli.Command {
	return &cli.Command{
		Name:      "profile",
		Usage:     "read a job's NCCL log and write its workload: the collectives, sizes and calls it made",
		ArgsUsage: "LOG",
		Description: "Run the job once with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL (every rank's log, or rank 0's;\n" +
			"gzip is read as it is; - reads standard input) and give its log: profile writes the [[workload]]\n" +
			"tables of a space file, per collective and message size the calls of one rank, and a summary of\n" +
			"each collective's share on standard error. With a workload, a campaign measures every\n" +
			"collective it names and scores a configuration by the job's predicted communication time.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "out", Usage: "write the [[workload]] tables to `FILE` (default: standard output)"},
			&cli.IntFlag{Name: "ranks", Usage: "keep the calls of communicators of `N` ranks only (a campaign measures one size)"},
			&cli.BoolFlag{Name: "json", Usage: "print the workload as JSON instead"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageError{fmt.Errorf("profile needs one log file (or - for standard input), after the flags")}
			}
			in := io.Reader(os.Stdin)
			if name := c.Args().First(); name != "-" {
				f, err := os.Open(name)
				if err != nil {
					return err
				}
				defer f.Close()
				in = f
			}
			w, err := workload.Read(in)
			if err != nil {
				return fmt.Errorf("%s: %w", c.Args().First(), err)
			}
			w.Source.File = c.Args().First()
			if n := c.Int("ranks"); n > 0 {
				w.Entries = slices.DeleteFunc(w.Entries, func(e workload.Entry) bool { return e.Ranks != n })
				if len(w.Entries) == 0 {
					return fmt.Errorf("%s: no calls on communicators of %d ranks", c.Args().First(), n)
				}
			}
			out := io.Writer(os.Stdout)
			if c.Bool("json") {
				return writeJSON(out, w)
			}
			if path := c.String("out"); path != "" {
				f, err := os.Create(path)
				if err != nil {
					return err
				}
				defer f.Close()
				out = f
			}
			if err := w.WriteTOML(out); err != nil {
				return err
			}
			return w.WriteSummary(os.Stderr)
		},
	}
}
