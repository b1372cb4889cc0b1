package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/nccltune/nccltune/internal/text"
	"github.com/nccltune/nccltune/report"
	"github.com/nccltune/nccltune/results"
	"github.com/nccltune/nccltune/store"
)

func reportCommand() *cli.Command {
	return &cli.Command{
		Name:  "report",
		Usage: "summary table, parameter importance, and PNG plots of a campaign",
		Description: "Prints the per-range table (default vs tuned, gain, validated gain with its 95% CI,\n" +
			"trials) and which parameters matter most per range, and writes into --out busbw.png (bus\n" +
			"bandwidth over message size: defaults, tuned, and the best of any trial) or, for a benchmark\n" +
			"of one objective (ddp, command), measured.png (each trial's value in the benchmark's unit),\n" +
			"and convergence.png (best so far relative to the defaults, per trial of the search).",
		Flags: []cli.Flag{storeFlag, campaignFlag,
			&cli.StringFlag{Name: "out", Value: ".", Usage: "`DIR` for the plots"},
			&cli.BoolFlag{Name: "json", Usage: "print JSON for scripts"}},
		Action: func(c *cli.Context) error {
			l, err := readCampaign(c, nil)
			if err != nil {
				return err
			}
			if !slices.ContainsFunc(l.trials, func(t store.Trial) bool { return t.State == store.Complete }) {
				_ = printLoaded(os.Stderr, l)
				return errors.New("no completed trial: nothing to plot, and no tuned result to report")
			}
			if err := os.MkdirAll(c.String("out"), 0o755); err != nil {
				return err
			}
			plots, err := report.Write(l.space, l.results, l.trials, c.String("out"), c.String("store"))
			if err != nil {
				return err
			}
			imp := results.Importances(l.space, l.trials)
			if c.Bool("json") {
				out := statusJSON(l)
				byRange := map[string]results.RangeImportance{}
				for i, r := range l.space.Ranges {
					byRange[r.Name] = imp[i]
				}
				out["importance"], out["plots"] = byRange, plots
				if len(l.space.Workload) > 0 {
					out["job"] = jobJSON(jobTimesOf(l))
				}
				return writeJSON(os.Stdout, out)
			}
			// Names and reasons come from the store: escaped, as status's.
			w := terminal{os.Stdout}
			if err := printLoaded(w, l); err != nil {
				return err
			}
			if len(l.space.Workload) > 0 {
				printShares(w, l)
			}
			if err := printImportance(w, l, imp); err != nil {
				return err
			}
			_, err = fmt.Fprintf(w, "plots: %s\n", strings.Join(slices.Sorted(maps.Values(plots)), ", "))
			return err
		},
	}
}

// jobTimes is a workload's job as report shows it: per collective, and in
// all, its predicted time with NCCL's defaults and as exported.
type jobTimes struct {
	job                results.Job
	def, exported      []float64
	totalDef, totalExp float64
	relative           bool // of a workload of weights: times in a relative unit, not seconds
}

func jobTimesOf(l *loaded) jobTimes {
	j := jobTimes{job: results.JobOf(l.space, l.trials, l.vals), relative: l.space.Weighted}
	j.def, j.exported = j.job.Times()
	for i := range j.def {
		j.totalDef, j.totalExp = j.totalDef+j.def[i], j.totalExp+j.exported[i]
	}
	return j
}

// jobJSON is report --json's "job": the times in seconds, or in a relative
// unit where "relative" (a workload of weights), null where not measured,
// and the job's verdict (null where not validated).
func jobJSON(j jobTimes) map[string]any {
	collectives := []map[string]any{}
	for i, r := range j.job.Ranges {
		collectives = append(collectives, map[string]any{"collective": r.Range.Name,
			"default_s": results.Finite(j.def[i]), "exported_s": results.Finite(j.exported[i])})
	}
	var verdict map[string]any
	if v := j.job.Validation; v != nil {
		verdict = map[string]any{"verdict": v.Verdict, "reason": v.Reason, "defaults_exported": j.job.DefaultsKept()}
	}
	return map[string]any{"collectives": collectives, "default_s": results.Finite(j.totalDef),
		"exported_s": results.Finite(j.totalExp), "relative": j.relative, "validation": verdict}
}

// printShares shows each collective's share of the job's predicted
// communication time, with NCCL's defaults and with the configuration
// `export --format job` writes (NCCL's defaults where validation rejected
// the job's).
func printShares(w io.Writer, l *loaded) {
	j := jobTimesOf(l)
	fmt.Fprintln(w, "the job's communication time, predicted from the workload's calls:")
	tw := newTable(w)
	unit := l.space.TimeUnit()
	row(tw, "collective", "NCCL defaults "+unit, "share", "exported "+unit, "share", "")
	for i, r := range j.job.Ranges {
		row(tw, r.Range.Name, figure(j.def[i], "%.4g"), figure(100*j.def[i]/j.totalDef, "%.0f%%"),
			figure(j.exported[i], "%.4g"), figure(100*j.exported[i]/j.totalExp, "%.0f%%"), "")
	}
	row(tw, "job", figure(j.totalDef, "%.4g"), "", figure(j.totalExp, "%.4g"), figure(j.totalDef/j.totalExp, "%.2fx as fast"), "")
	tw.Flush()
	switch v := j.job.Validation; {
	case v == nil:
		fmt.Fprintf(w, "the job's configuration is not validated: run `%s`\n", l.command("validate"))
	case j.job.DefaultsKept():
		fmt.Fprintf(w, "the job's validation kept NCCL's defaults (%s): they are exported\n", text.Clean(v.Reason))
	default:
		fmt.Fprintf(w, "the job's configuration is validated: %s\n", text.Clean(v.Reason))
	}
}

// figure formats v, or says it was not measured (never NaN).
func figure(v float64, format string) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "not measured"
	}
	return fmt.Sprintf(format, text.Bounded(v))
}

// leftOut labels, in the order printed, why parameters were not analysed.
var leftOut = []struct {
	status results.Status
	label  string
}{
	{results.TooFewTrials, "too few trials to test"},
	{results.NotVaried, "held at one value by every trial"},
	{results.Unread, "not read by NCCL, left out"},
	{results.Unconfirmed, "not confirmed by NCCL's log, left out"},
}

// printImportance writes what matters most per range, each range's on a
// line, after its name in a column as wide as the widest shows.
func printImportance(w io.Writer, l *loaded, imp []results.RangeImportance) error {
	fmt.Fprintf(w, "what matters most (share of the variance of log score explained, epsilon-squared; F-test p < %g, Bonferroni-corrected, on %d residual degrees of freedom or more):\n",
		results.Significance, results.MinResidualDF)
	tw := &table{w: w, left: true}
	for i, r := range l.space.Ranges {
		var parts, chance []string
		more := 0 // significant, past the four named
		left := map[results.Status][]string{}
		// Named beside the parameter it went with: its share may be theirs.
		// Varied only with it, not set with it: one of fewer values (Simple
		// with trees and PAT alike) is aliased too.
		aliases := map[string][]string{}
		for _, p := range imp[i].Params {
			if p.Status == results.Aliased {
				aliases[p.With] = append(aliases[p.With], strings.TrimPrefix(p.Param, "NCCL_"))
			}
		}
		for _, p := range imp[i].Params {
			name, also := strings.TrimPrefix(p.Param, "NCCL_"), ""
			if a := aliases[p.Param]; len(a) > 0 {
				also = " (or " + strings.Join(a, " or ") + ", which the trials varied only with it)"
			}
			switch {
			case p.Status == results.Aliased:
			case p.Status != results.Analysed:
				left[p.Status] = append(left[p.Status], name)
			case !p.Significant():
				chance = append(chance, name+also)
			case len(parts) < 4 && p.Share < 0.005:
				parts = append(parts, name+" <1%"+also)
			case len(parts) < 4:
				parts = append(parts, fmt.Sprintf("%s %.0f%%%s", name, 100*p.Share, also))
			default:
				more++
			}
		}
		if more > 0 {
			parts = append(parts, fmt.Sprintf("%d more significant (report --json)", more))
		}
		if len(chance) > 0 {
			parts = append(parts, "not significant: "+strings.Join(chance, " "))
		}
		for _, why := range leftOut {
			if names := left[why.status]; len(names) > 0 {
				parts = append(parts, why.label+": "+strings.Join(names, " "))
			}
		}
		row(tw, "  "+r.Name, strings.Join(parts, "; "))
	}
	return tw.Flush()
}
