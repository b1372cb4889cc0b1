package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/nccltune/nccltune/export"
	"github.com/nccltune/nccltune/internal/text"
	"github.com/nccltune/nccltune/runner/nccltests"
	"github.com/nccltune/nccltune/store"
)

func showCommand() *cli.Command {
	return &cli.Command{
		Name:      "show",
		Usage:     "show one trial: its settings, command line, NCCL's confirmation and results",
		ArgsUsage: "TRIAL",
		Flags: []cli.Flag{storeFlag, campaignFlag,
			&cli.BoolFlag{Name: "output", Usage: "also print the benchmark's captured output"},
			&cli.BoolFlag{Name: "json", Usage: "print JSON for scripts"}},
		Action: func(c *cli.Context) error {
			n, err := strconv.Atoi(c.Args().First())
			if c.NArg() != 1 || err != nil || n < 0 {
				return usageError{fmt.Errorf("show needs one trial number, after the flags: nccltune show [--store FILE] TRIAL")}
			}
			var t store.Trial
			l, err := readCampaign(c, func(st *store.Store, l *loaded) (err error) {
				if t, err = latestAttempt(l.trials, n); err == nil && c.Bool("output") {
					t.Output, err = st.Output(t.ID)
				}
				return err
			})
			if err != nil {
				return err
			}
			if c.Bool("json") {
				// What the trial lacks (a failed one's rows and scores, the
				// nodes of a campaign of one group) is empty, not null.
				t.Rows, t.Nodes = list(t.Rows), list(t.Nodes)
				if t.Scores == nil {
					t.Scores = map[string]float64{}
				}
				shown := shownTrial{Trial: t}
				if c.Bool("output") {
					out := string(t.Output)
					shown.Output = &out
				}
				return writeJSON(os.Stdout, shown)
			}
			return printTrial(os.Stdout, l, t)
		},
	}
}

// shownTrial is a trial as show --json prints it: the captured output as
// text, which encoding/json would give as base64 ([]byte), and absent
// without --output.
type shownTrial struct {
	store.Trial
	Output *string `json:",omitempty"`
}

// latestAttempt returns trial n; an interrupted attempt is superseded by its re-run.
func latestAttempt(trials []store.Trial, n int) (store.Trial, error) {
	for i := len(trials) - 1; i >= 0; i-- {
		if trials[i].Number == n {
			return trials[i], nil
		}
	}
	return store.Trial{}, fmt.Errorf("no trial %d in this campaign", n)
}

func printTrial(out io.Writer, l *loaded, t store.Trial) error {
	// Buffered, and the buffer's first write error sticks: a write that
	// failed (a full disk under show > file) is the command's error, and
	// its exit status 1, not lost.
	b := bufio.NewWriter(out)
	w := terminal{b}
	fmt.Fprintf(w, "trial %d of campaign %q: %s", t.Number, l.camp.Name, t.State)
	if t.FailureKind != "" {
		fmt.Fprintf(w, " (%s: %s)", text.Clean(t.FailureKind), text.Clean(t.FailureReason))
	}
	if !t.Finished.IsZero() {
		fmt.Fprintf(w, ", ran %s, exit code %d", t.Finished.Sub(t.Started).Round(1e6), t.ExitCode)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "settings: %s\n", text.Clean(chosenSettings(l.space, &t)))
	fmt.Fprintf(w, "environment: %s\n", text.Clean(strings.Join(t.Env, " ")))
	if l.space.Launcher.Groups > 1 {
		fmt.Fprintf(w, "group: %d%s\n", t.Group, nodeList(t.Nodes))
	}
	fmt.Fprintf(w, "command: %s\n", text.Clean(commandLine(l, t.Command)))
	log := t.NCCLLog
	switch {
	case !log.Debug:
		fmt.Fprintln(w, "NCCL log: no INFO lines, so nothing could be confirmed")
	default:
		unread := log.Unread(t.Env)
		confirmed := len(t.Env) - len(unread)
		fmt.Fprintf(w, "NCCL log: version %s, network %s, GPUDirect RDMA %s; %d of %d variables confirmed read",
			text.Clean(orDash(log.Version)), text.Clean(orDash(log.Network)), map[bool]string{true: "used", false: "not seen"}[log.GDR], confirmed, len(t.Env))
		if len(unread) > 0 {
			fmt.Fprintf(w, "; NOT confirmed: %s", text.Clean(strings.Join(unread, ", ")))
		}
		fmt.Fprintln(w)
		for _, name := range unread {
			if why, ok := log.Rejected[name]; ok {
				fmt.Fprintf(w, "  NCCL rejected %s: %s\n", text.Clean(name), text.Clean(why))
			}
		}
		if inherited := log.Inherited(t.Env); len(inherited) > 0 {
			fmt.Fprintf(w, "  NCCL also read, not set by the trial (a config file's or the ranks' own environment): %s\n", text.Clean(strings.Join(inherited, ", ")))
		}
		for _, n := range log.Notes {
			fmt.Fprintf(w, "  note: %s\n", text.Clean(n))
		}
	}
	if len(t.Scores) > 0 {
		fmt.Fprintf(w, "measured per range, %s:", l.space.Measure(l.space.Ranges[0]))
		for _, r := range l.space.Ranges {
			fmt.Fprintf(w, " %s %s", text.Clean(r.Name), figureOf(l.space.Measure(r), score(t, r.Name)))
		}
		fmt.Fprintln(w)
	}
	if len(t.Rows) > 0 {
		tw := newTable(w)
		// A workload's trial measures several collectives over the same
		// sizes: each row names its own, or they read as one sweep.
		many := len(l.space.Collectives()) > 1
		cells := func(collective string, rest ...string) []string {
			if many {
				return append([]string{collective}, rest...)
			}
			return rest
		}
		row(tw, cells("collective", "size", "time us", "algbw", "busbw", "#wrong", "in-place us", "busbw", "#wrong", "")...)
		for _, r := range t.Rows {
			row(tw, cells(r.Collective, strconv.FormatInt(r.Size, 10), measured(r.OutOfPlace.TimeUs), measured(r.OutOfPlace.AlgBW),
				measured(r.OutOfPlace.BusBW), wrong(r.OutOfPlace), measured(r.InPlace.TimeUs), measured(r.InPlace.BusBW), wrong(r.InPlace), "")...)
		}
		tw.Flush()
	}
	if len(t.Output) > 0 {
		fmt.Fprintf(w, "--- output ---\n%s", t.Output)
	}
	return b.Flush()
}

var plainArg = regexp.MustCompile(`^[A-Za-z0-9_./:=,+@%^-]+$`)

// shellJoin renders argv as a command a user can paste into a shell.
func shellJoin(argv []string) string {
	quoted := make([]string, len(argv))
	for i, a := range argv {
		if plainArg.MatchString(a) {
			quoted[i] = a
		} else {
			quoted[i] = export.ShellQuote(a)
		}
	}
	return strings.Join(quoted, " ")
}

// commandLine renders a trial's command to paste: a workload's trial runs
// one benchmark per collective, one after the other, which the stored
// command separates by "&&" (tuner's merged), an operator here, not an
// argument to quote.
func commandLine(l *loaded, argv []string) string {
	if len(l.space.Collectives()) < 2 {
		return shellJoin(argv)
	}
	var launches []string
	for len(argv) > 0 {
		i := slices.Index(argv, "&&")
		if i < 0 {
			i = len(argv)
		}
		launches, argv = append(launches, shellJoin(argv[:i])), argv[min(i+1, len(argv)):]
	}
	return strings.Join(launches, " && ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// measured is a time or bandwidth cell as nccl-tests prints it, in bounded width.
func measured(v float64) string { return fmt.Sprintf("%.2f", text.Bounded(v)) }

// wrong is a #wrong column as nccl-tests prints it: N/A where it did not check.
func wrong(m nccltests.Measure) string {
	if m.Wrong < 0 {
		return "N/A"
	}
	return strconv.FormatInt(m.Wrong, 10)
}
