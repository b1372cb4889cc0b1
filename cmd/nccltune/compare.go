package main

import (
	"errors"
	"fmt"
	"math"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/nccltune/nccltune/export"
	"github.com/nccltune/nccltune/internal/text"
	"github.com/nccltune/nccltune/results"
	"github.com/nccltune/nccltune/space"
	"github.com/nccltune/nccltune/tuner"
)

func compareCommand() *cli.Command {
	return &cli.Command{
		Name:      "compare",
		Usage:     "run two env files against each other and say which is faster per size range",
		ArgsUsage: "A.env B.env",
		Description: "Measures both settings interleaved (A B, B A, ...) for --rounds rounds with the benchmark,\n" +
			"launcher and size ranges of --space (or of the stored campaign), and prints per range the\n" +
			"gain of B over A with a 95% confidence interval. The files are read like nccltune's env and\n" +
			"dotenv exports; the space's pinned variables apply beneath them. A plugin format's env file\n" +
			"(nccl-plugin.env, nccl-tuner.env) runs as the job would: with the plugin and its rules, which\n" +
			"must be where it names them on every node. Nothing is stored.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "space", Usage: "space `FILE` giving the benchmark, launcher and ranges"},
			storeFlag, campaignFlag,
			&cli.IntFlag{Name: "rounds", Value: tuner.DefaultRounds, Usage: fmt.Sprintf("interleaved rounds (2 to %d)", tuner.MaxRounds)},
			&cli.BoolFlag{Name: "json", Usage: "print JSON for scripts"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 2 {
				return usageError{fmt.Errorf("compare needs two env files, after the flags: nccltune compare [flags] A.env B.env")}
			}
			if err := tuner.CheckRounds(c.Int("rounds")); err != nil {
				return usageError{fmt.Errorf("--rounds: %w", err)}
			}
			// Each names the benchmark to compare on; the campaign's was left
			// unread without a word.
			if c.IsSet("space") && (c.IsSet("store") || c.IsSet("campaign")) {
				return usageError{errors.New("--space, or --store and --campaign: give one, the benchmark, launcher and ranges to compare on")}
			}
			a, errA := interruptible(c.Context, func() ([]string, error) { return export.ReadEnvFile(c.Args().Get(0)) })
			b, errB := interruptible(c.Context, func() ([]string, error) { return export.ReadEnvFile(c.Args().Get(1)) })
			if err := errors.Join(errA, errB); err != nil {
				return err
			}
			sp, err := compareSpace(c)
			if err != nil {
				return err
			}
			res, err := (&tuner.Tuner{Space: sp}).Compare(c.Context, a, b, c.Int("rounds"))
			if err != nil {
				return err
			}
			failed := failedRun(res)
			if c.Bool("json") {
				// The means as the table prints them, in the benchmark's unit: a
				// time's score is its inverse, which a script would misread.
				type row struct {
					Range               string
					MeanA, MeanB        *float64
					Unit                string
					LowerIsBetter       bool
					Gain, CILow, CIHigh *float64
					Verdict             string
				}
				var rows []row
				for _, r := range res {
					m := sp.Measure(r.Range)
					rows = append(rows, row{r.Range.Name, results.Finite(m.Value(r.MeanA)), results.Finite(m.Value(r.MeanB)), m.Unit, m.Inverse,
						results.Finite(r.Gain), results.Finite(r.CILow), results.Finite(r.CIHigh), r.Verdict})
				}
				return errors.Join(writeJSON(os.Stdout, rows), failed)
			}
			// A failed run's verdict quotes the benchmark's output: escaped, as
			// status's table, its tab and line feed too, which the table
			// would read as the end of its cell and of its line.
			tw := newTable(terminal{os.Stdout})
			m := sp.Measure(sp.Ranges[0])
			row(tw, "range", "sizes", "A "+m.String(), "B "+m.String(), "B vs A (95% CI)", "verdict", "")
			for _, r := range res {
				ci := "-"
				if results.Finite(r.Gain) != nil {
					ci = fmt.Sprintf("%+.1f%% (%+.1f%%..%+.1f%%)", text.Bounded(100*r.Gain), text.Bounded(100*r.CILow), text.Bounded(100*r.CIHigh))
				}
				row(tw, r.Range.Name, sizes(sp, r.Range), figureOf(m, r.MeanA), figureOf(m, r.MeanB), ci, r.Verdict, "")
			}
			return errors.Join(tw.Flush(), failed)
		},
	}
}

// failedRun is why a comparison has no verdict, a run of it having failed
// or measured nothing of a range (its means are NaN), or nil: the command
// fails, after its table says why.
func failedRun(res []tuner.Comparison) error {
	for _, r := range res {
		if math.IsNaN(r.MeanA) {
			return errors.New(r.Verdict)
		}
	}
	return nil
}

// compareSpace is --space, or the stored campaign's space where it starts
// no program (startsNothing).
func compareSpace(c *cli.Context) (*space.Space, error) {
	if c.String("space") != "" {
		return loadSpaceFile(c.Context, c.String("space"))
	}
	st, err := openExisting(c.String("store"))
	if err != nil {
		return nil, fmt.Errorf("give --space, or a store holding a campaign: %w", err)
	}
	defer st.Close()
	l, err := load(st, c.String("campaign"), space.Parse)
	if err != nil {
		return nil, err
	}
	// compare reads the space file alone: with --store, it is a usage error.
	if err := startsNothing(l, "compare on the space file the campaign ran with, --space FILE in place of --store and --campaign"); err != nil {
		return nil, err
	}
	return l.space, nil
}
