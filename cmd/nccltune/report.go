package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/nccltune/nccltune/report"
	"github.com/nccltune/nccltune/results"
	"github.com/nccltune/nccltune/store"
)

func reportCommand() *cli.Command {
	return &cli.Command{
		Name:  "report",
		Usage: "summary table, parameter importance, and PNG plots of a campaign",
		Description: "Prints the per-range table (default vs tuned busbw, gain, validated gain with its 95% CI,\n" +
			"trials) and which parameters matter most per range, and writes busbw.png (bus bandwidth\n" +
			"over message size: defaults, tuned, and the best of any trial) and convergence.png (best\n" +
			"so far relative to the defaults, per trial) into --out.",
		Flags: []cli.Flag{storeFlag, campaignFlag,
			&cli.StringFlag{Name: "out", Value: ".", Usage: "`DIR` for the plots"},
			&cli.BoolFlag{Name: "json", Usage: "print JSON for scripts"}},
		Action: func(c *cli.Context) error {
			st, l, err := openCampaign(c)
			if err != nil {
				return err
			}
			defer st.Close()
			if !slices.ContainsFunc(l.trials, func(t store.Trial) bool { return t.State == store.Complete }) {
				_ = printStatus(os.Stderr, st, l.camp.Name)
				return errors.New("no completed trial: nothing to plot, and no tuned result to report")
			}
			if err := os.MkdirAll(c.String("out"), 0o755); err != nil {
				return err
			}
			plots := map[string]string{
				"busbw":       filepath.Join(c.String("out"), "busbw.png"),
				"convergence": filepath.Join(c.String("out"), "convergence.png"),
			}
			if err := report.BusBW(l.space, l.results, l.trials, plots["busbw"]); err != nil {
				return fmt.Errorf("busbw plot: %w", err)
			}
			if err := report.Convergence(l.space, l.trials, plots["convergence"]); err != nil {
				return fmt.Errorf("convergence plot: %w", err)
			}
			imp := results.Importances(l.space, l.trials)
			if c.Bool("json") {
				out := statusJSON(l)
				byRange := map[string][]results.Importance{}
				for i, r := range l.space.Ranges {
					byRange[r.Name] = imp[i]
				}
				out["importance"], out["plots"] = byRange, plots
				enc := json.NewEncoder(os.Stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(out)
			}
			if err := printStatus(os.Stdout, st, l.camp.Name); err != nil {
				return err
			}
			printImportance(os.Stdout, l, imp)
			fmt.Printf("plots: %s, %s\n", plots["busbw"], plots["convergence"])
			return nil
		},
	}
}

func printImportance(w io.Writer, l *loaded, imp [][]results.Importance) {
	fmt.Fprintln(w, "what matters most (share of the variance of log busbw explained, epsilon-squared):")
	for i, r := range l.space.Ranges {
		var parts []string
		for _, p := range imp[i] {
			if len(parts) == 4 {
				break
			}
			parts = append(parts, fmt.Sprintf("%s %.0f%%", strings.TrimPrefix(p.Param, "NCCL_"), 100*p.Share))
		}
		if len(parts) == 0 {
			parts = []string{"too few completed trials"}
		}
		fmt.Fprintf(w, "  %-8s %s\n", r.Name, strings.Join(parts, ", "))
	}
}
