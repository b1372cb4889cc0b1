package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/nccltune/nccltune/export"
	"github.com/nccltune/nccltune/internal/text"
	"github.com/nccltune/nccltune/plugin"
	"github.com/nccltune/nccltune/results"
	"github.com/nccltune/nccltune/runner"
	"github.com/nccltune/nccltune/runner/sim"
	"github.com/nccltune/nccltune/space"
	"github.com/nccltune/nccltune/store"
	"github.com/nccltune/nccltune/tuner"
)

// loaded is a campaign read back from a store, with its space re-parsed from
// the copy kept in the store (the file on disk may have changed since).
type loaded struct {
	camp  store.Campaign
	space *space.Space
	// family is the space as stored: space's own, or for a campaign of
	// campaign.scales the space of them all.
	family  *space.Space
	trials  []store.Trial
	vals    []store.Validation
	runs    []store.ValidationRun // of every validation, a stopped one's too
	results []results.RangeResult
	// flags are the --store and --campaign that read it, where not the
	// defaults, for the commands nccltune suggests (command).
	flags []string
	// writer is the store's last writer, nil where none recorded itself.
	writer *store.Writer
}

// command is the nccltune command name that goes on with l's campaign: with
// the flags that read it, and --space FILE where its space starts a
// program, which nccltune starts only from the user's own file.
func (l *loaded) command(name string) string {
	cmd := shellJoin(append([]string{"nccltune", name}, l.flags...))
	if len(l.family.Programs()) > 0 {
		cmd += " --space FILE"
	}
	return cmd
}

// spaceParser reads a campaign's stored space: space.Parse for a command
// that runs the campaign's programs, readStored for one that reads results.
type spaceParser func(filename string, data []byte) (*space.Space, error)

// readStored is space.ParseStored with the checks the stored copy fails
// told, not fatal: results measured under a check added since stay readable.
func readStored(filename string, data []byte) (*space.Space, error) {
	sp, checks, err := space.ParseStored(filename, data)
	if err == nil && checks != nil {
		fmt.Fprintf(terminal{os.Stderr}, "nccltune: %s fails checks added since it ran; its results are read as stored (to run it on: nccltune run --space FILE, with a space file that passes them):\n%v\n", filename, checks)
	}
	return sp, err
}

// notFound names the campaigns the store holds, the ones that a family of
// campaign.scales ran as (NAME@8n) first among them.
func notFound(st *store.Store, name string, err error) error {
	all, lerr := st.Campaigns()
	if lerr != nil || len(all) == 0 {
		return err
	}
	var names, scales []string
	for _, c := range all {
		names = append(names, text.Graphic(c.Name, ""))
		if strings.HasPrefix(c.Name, name+"@") {
			scales = append(scales, text.Graphic(c.Name, ""))
		}
	}
	if len(scales) > 0 {
		return fmt.Errorf("%w: each of campaign.scales is a campaign of its own: --campaign %s", err, strings.Join(scales, ", "))
	}
	return fmt.Errorf("%w; the store holds %s", err, strings.Join(names, ", "))
}

func load(st *store.Store, name string, parse spaceParser) (*loaded, error) {
	var camp store.Campaign
	var err error
	if name != "" {
		camp, err = st.Campaign(name)
		if errors.Is(err, store.ErrNotFound) {
			err = notFound(st, name, err)
		}
	} else {
		var all []store.Campaign
		if all, err = st.Campaigns(); err == nil && len(all) == 0 {
			return nil, fmt.Errorf("store %s holds no campaign; start one with `nccltune run --space FILE`", st.Path())
		} else if err == nil {
			camp = all[len(all)-1]
		}
	}
	if err != nil {
		return nil, err
	}
	family, err := parse(camp.Name+" (as stored)", camp.Space)
	if err != nil {
		return nil, err
	}
	// The stored copy is the first run's; a later run or resume may have
	// run the campaign with another patience and timeout, which status
	// reports and resume keeps.
	if camp.Latest != nil {
		family.Campaign.Patience, family.Benchmark.Timeout = camp.Latest.Patience, camp.Latest.Timeout
	}
	sp := family
	if camp.Scale > 0 {
		sp = family.AtScale(camp.Scale)
	}
	trials, err := st.Trials(camp.ID)
	if err != nil {
		return nil, err
	}
	vals, err := st.Validations(camp.ID)
	if err != nil {
		return nil, err
	}
	runs, err := st.AllValidationRuns(camp.ID)
	if err != nil {
		return nil, err
	}
	vals = results.WithHeld(sp, trials, vals, runs)
	var flags []string
	if st.Path() != storeFlag.Value {
		flags = append(flags, "--store", st.Path())
	}
	if name != "" {
		flags = append(flags, "--campaign", name)
	}
	l := &loaded{camp: camp, space: sp, family: family, trials: trials, vals: vals, runs: runs, results: results.Of(sp, trials, vals), flags: flags}
	if w, ok := st.LastWriter(); ok {
		l.writer = &w
	}
	return l, nil
}

// openCampaign opens the --store (which must exist) and loads its --campaign;
// the caller closes the store.
func openCampaign(c *cli.Context) (*store.Store, *loaded, error) {
	return openCampaignWith(c, openExisting, readStored)
}

// readCampaign loads the --store's --campaign, lets read (if not nil) take
// what else it needs of the store, and closes the store before the caller
// prints or writes: a reader that holds it open (a pager, a suspended
// shell) keeps a running campaign from checkpointing, whose log then grows
// with every trial until the reader leaves (store.LockWriter).
func readCampaign(c *cli.Context, read func(*store.Store, *loaded) error) (*loaded, error) {
	st, l, err := openCampaign(c)
	if err != nil {
		return nil, err
	}
	if read != nil {
		err = read(st, l)
	}
	if closeErr := st.Close(); err == nil {
		err = closeErr
	}
	return l, err
}

// openCampaignWith is openCampaign with the store opened by open.
func openCampaignWith(c *cli.Context, open func(string) (*store.Store, error), parse spaceParser) (*store.Store, *loaded, error) {
	st, err := open(c.String("store"))
	if err != nil {
		return nil, nil, err
	}
	l, err := load(st, c.String("campaign"), parse)
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return st, l, nil
}

// openExisting opens a store that must already exist, read-only (status,
// show, report and export never create one, nor write to it).
func openExisting(path string) (*store.Store, error) {
	if err := exists(path); err != nil {
		return nil, err
	}
	return store.OpenReader(path)
}

// openExistingWriter opens a store that must already exist, for writing.
func openExistingWriter(path string) (*store.Store, error) {
	if err := exists(path); err != nil {
		return nil, err
	}
	return store.Open(path)
}

// exists says what to do where the store is missing: the usual mistake is
// a command run before any campaign, or in another folder than the run's.
func exists(path string) error {
	_, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		run := "nccltune run"
		if path != storeFlag.Value {
			run = shellJoin([]string{"nccltune", "run", "--store", path}) // pastes as one path
		}
		return fmt.Errorf("no store %s: start a campaign with `%s`, or give the store a campaign wrote as --store FILE", path, run)
	}
	if err != nil {
		return fmt.Errorf("store %s: %w", path, err)
	}
	return nil
}

func statusCommand() *cli.Command {
	return &cli.Command{
		Name:  "status",
		Usage: "show a campaign's trials and the best configuration per size range",
		Flags: []cli.Flag{storeFlag, campaignFlag, &cli.BoolFlag{Name: "json", Usage: "print JSON for scripts"}},
		Action: func(c *cli.Context) error {
			l, err := readCampaign(c, nil)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return writeJSON(os.Stdout, statusJSON(l))
			}
			return printLoaded(os.Stdout, l)
		},
	}
}

func printStatus(out io.Writer, st *store.Store, name string) error {
	l, err := load(st, name, readStored)
	if err != nil {
		return err
	}
	return printLoaded(out, l)
}

// stoppedWhy says why the campaign ended short of its budget: its ranges
// settled (patience), or its trials all failed the same way; "" if neither.
func stoppedWhy(l *loaded) string {
	if err := tuner.StoppedFailing(l.trials, l.camp.Budget); err != nil {
		why := err.Error()
		if len(l.flags) > 0 { // the show it names, which without them reads another campaign
			why += commandsNeed + shellJoin(l.flags)
		}
		return why + ": fix what fails them, then `" + l.command("resume") + "`"
	}
	return l.camp.Stopped
}

// printLoaded prints a campaign already loaded: its trials, best configuration
// per range, validation and what to do next.
func printLoaded(out io.Writer, l *loaded) error {
	w := terminal{out}
	searched, simplifying := byPhase(l.trials)
	sum := results.Summarize(searched)
	fmt.Fprintf(w, "campaign %q: %d of %d trials finished (%d complete, ", l.camp.Name,
		sum.Finished(), l.camp.Budget, sum.ByState[store.Complete])
	if n := sum.ByState[store.Pruned]; n > 0 {
		fmt.Fprintf(w, "%d pruned, ", n)
	}
	fmt.Fprintf(w, "%d failed", sum.ByState[store.Failed])
	for i, k := range sum.FailureKinds() {
		sep := ", "
		if i == 0 {
			sep = ": "
		}
		fmt.Fprintf(w, "%s%d %s", sep, sum.Failures[k], text.Clean(k))
	}
	fmt.Fprintln(w, ")")
	if len(simplifying) > 0 {
		fmt.Fprintf(w, "then %s tried each range's choice without each of its settings\n", text.Count(len(simplifying), "trial", "trials"))
	}
	if simplificationUnfinished(l) {
		fmt.Fprintf(w, "the simplification has configurations left to run (it was stopped, or an older nccltune simplified by other rules): `%s` runs them (at most a fresh run of each range's choice and one without each of its settings), then validates the choices again where the campaign validates\n", l.command("resume"))
	}
	if why := stoppedWhy(l); why != "" {
		fmt.Fprintln(w, text.Clean(why))
	}
	if orphans := l.orphans(); len(orphans) > 0 {
		what := "trial " + strconv.Itoa(orphans[0])
		if len(orphans) > 1 {
			what = "trials " + strings.Trim(fmt.Sprint(orphans), "[]")
		}
		fmt.Fprintf(w, "warning: %s marked running, yet the nccltune that last wrote the store (pid %d on %s, since %s) is gone, killed (kill -9, a crash): `%s` marks such a trial interrupted and runs it again\n",
			what, l.writer.PID, text.Clean(l.writer.Host), text.Clean(l.writer.Since), l.command("resume"))
	}
	if l.camp.Stopped == "" {
		for r, at := range tuner.Settled(l.space, l.trials) {
			if at >= 0 {
				fmt.Fprintf(w, "range %s settled after trial %d: no gain of %.0f%% in %d trials; it is no longer searched\n",
					text.Clean(l.space.Ranges[r].Name), at, 100*results.MinGain, l.space.Campaign.Patience)
			}
		}
	}
	if _, why := tuner.Iterations(tuner.CountedSpace(l.camp, l.space), l.trials); why != "" {
		fmt.Fprintln(w, "iterations:", text.Clean(why))
	}
	if len(l.space.Simulator) > 0 {
		fmt.Fprintln(w, "measured on the simulated cluster (nccltune sim), not on hardware")
	}
	// The warnings count every completed trial, the simplification's too, as
	// status --json's trials do: each ran its settings, confirmed or not.
	all := results.Summarize(l.trials)
	if all.Silent > 0 {
		fmt.Fprintf(w, "warning: %d of %d completed trials printed no NCCL INFO lines, so their settings' effect was not confirmed (does the program log NCCL to a file, use gloo, or drop NCCL_DEBUG?); validation keeps NCCL's defaults for such a configuration\n",
			all.Silent, all.ByState[store.Complete])
	}
	if silent, complete := silentRuns(l.runs); silent > 0 {
		fmt.Fprintf(w, "warning: %d of %d completed validation runs printed no NCCL INFO lines, so they confirmed no setting (does the program log NCCL to a file, use gloo, or drop NCCL_DEBUG?); validation keeps NCCL's defaults for a configuration measured so\n",
			silent, complete)
	}
	// Names are checked against the catalogue, so not a misspelling: a
	// version that lacks the variable, or a path that never reads it.
	unreadWhy := "unknown to this NCCL version, or not used on the path NCCL took, as NCCL_IB_* over sockets?"
	if complete := all.ByState[store.Complete]; complete > 0 && all.OneRank == complete {
		fmt.Fprintln(w, "warning: every completed trial's NCCL communicator had one rank (nRanks 1): it sends nothing, so NCCL chooses no algorithm or protocol and a collective is a local copy; run the benchmark on 2 GPUs or more (benchmark.gpus, the launcher's ranks) to tune anything")
		unreadWhy = "a communicator of one rank sets up no algorithm, protocol or network transport, so NCCL need not read it"
	}
	for _, name := range slices.Sorted(maps.Keys(all.Unconfirmed)) {
		fmt.Fprintf(w, "warning: NCCL's log does not show it read %s in %d of %d completed trials (%s)\n",
			text.Clean(name), all.Unconfirmed[name], all.ByState[store.Complete], unreadWhy)
	}
	for _, kv := range slices.Sorted(maps.Keys(all.Inherited)) {
		name, value, _ := strings.Cut(kv, "=")
		searched := ""
		if slices.ContainsFunc(l.space.Params, func(p space.Param) bool { return p.Variable() == name }) {
			searched = fmt.Sprintf("; %s is searched, so its \"default\" here was %s, not NCCL's own", name, text.Clean(value))
		}
		fmt.Fprintf(w, "warning: NCCL read %s in %d of %d completed trials, which the campaign does not set (from NCCL_CONF_FILE, ~/.nccl.conf or /etc/nccl.conf, or the ranks' own environment): every configuration ran with it, NCCL's defaults included, and no export carries it%s\n",
			text.Clean(kv), all.Inherited[kv], all.ByState[store.Complete], searched)
	}
	envs := make([][]string, len(l.trials))
	for i, tr := range l.trials {
		envs[i] = tr.Env
	}
	ran := l.space.PinnedPathsRan(envs)
	for _, name := range slices.Sorted(maps.Keys(ran)) {
		fmt.Fprintf(w, "warning: %s named %d files over the campaign's trials (%s): a relative path is the space file's directory's, and the file was read in several (its folder moved, or copies of it ran the campaign); where those files differ, the trials measured different configurations: run the campaign anew, under another campaign.name or in another store\n",
			text.Clean(name), len(ran[name]), text.Clean(strings.Join(ran[name], ", ")))
	}
	tw := newTable(w)
	m := l.space.Measure(l.space.Ranges[0])
	row(tw, "range", "sizes", "default "+m.String(), "best "+m.String(), "gain", "validated gain (95% CI)", "trial", "chosen settings", "")
	prev := ""
	for i, r := range l.results {
		trial, settings := "-", "-"
		if ch := r.Chosen(); ch != nil {
			trial, settings = fmt.Sprint(ch.Number), chosenSettings(l.space, ch)
			// Adjacent ranges that chose the same settings are one range in effect.
			if key := strings.Join(append(slices.Clone(ch.Env), l.space.Args(space.Assignment(ch.Params))...), " "); i > 0 && key == prev {
				settings = "same as " + l.results[i-1].Range.Name
			} else {
				prev = key
			}
		} else {
			prev = ""
			if r.Best != nil {
				settings = "NCCL defaults" // validation kept them, though no trial of them completed
			}
		}
		row(tw, r.Range.Name, sizes(l.space, r.Range), figureOf(r.Measure, r.DefaultScore), figureOf(r.Measure, r.BestScore), gain(r), validated(r), trial, settings, "")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range l.results {
		switch v := r.Validation; {
		case v != nil && v.Verdict != "tuned":
			fmt.Fprintf(w, "%s: NCCL's defaults kept: %s\n", text.Clean(r.Range.Name), text.Clean(v.Reason))
		case v != nil && math.IsNaN(v.Gain):
			fmt.Fprintf(w, "%s: tuned settings kept: %s\n", text.Clean(r.Range.Name), text.Clean(v.Reason))
		}
	}
	for _, g := range results.GroupSpreads(l.space, l.trials) {
		fmt.Fprintf(w, "warning: group %d%s measured %s %.0f%% below group %d%s in range %s: a slow node or link? "+
			"Trials on different groups are compared as if alike; `nccltune doctor --space FILE` compares the groups' hardware\n",
			g.Group, nodeList(g.Nodes), text.Clean(g.Config), 100*g.Below, g.Best, nodeList(g.BestNodes), text.Clean(g.Range))
	}
	return nil
}

// nodeList names a group's nodes, where its trials recorded them.
func nodeList(nodes []string) string {
	if len(nodes) == 0 {
		return ""
	}
	return " (" + text.Clean(strings.Join(nodes, ",")) + ")"
}

// terminal writes text that came from the store (names, reasons, a
// benchmark's output) with every control character but newline and tab
// escaped, so that an altered store cannot drive the terminal.
type terminal struct{ w io.Writer }

func (t terminal) Write(p []byte) (int, error) {
	if _, err := io.WriteString(t.w, text.Graphic(string(p), "\n\t")); err != nil {
		return 0, err
	}
	return len(p), nil
}

// validated summarises a range's validation in a table cell.
func validated(r results.RangeResult) string {
	v := r.Validation
	switch {
	case v == nil:
		return "not validated"
	case math.IsNaN(v.Gain) && v.Verdict == "tuned":
		return "defaults failed" // no gain to measure; the reason says how
	case math.IsNaN(v.Gain):
		return "defaults kept"
	}
	cell := fmt.Sprintf("%+.1f%% (%+.1f%%..%+.1f%%)", text.Bounded(100*v.Gain), text.Bounded(100*v.CILow), text.Bounded(100*v.CIHigh))
	if v.Verdict != "tuned" {
		cell += " defaults kept"
	}
	return cell
}

// sizes shows a range's message sizes; a benchmark that does not sweep them has one objective.
func sizes(sp *space.Space, r space.Range) string {
	lo, hi, _ := sp.Bounds(r)
	switch {
	case len(r.Calls) > 0 && lo == hi:
		return "calls of " + lo
	case len(r.Calls) > 0:
		return "calls of " + lo + "-" + hi
	case !sp.Benchmark.Sweeps():
		return "whole run"
	}
	return lo + "-" + hi
}

// chosenSettings lists the searched variables a trial set, or says it is NCCL's defaults.
func chosenSettings(sp *space.Space, t *store.Trial) string {
	var parts []string
	for _, p := range sp.Params {
		if v, ok := t.Params[p.Name]; ok && v != space.Unset {
			parts = append(parts, strings.TrimPrefix(p.Name, "NCCL_")+"="+v)
		}
	}
	if len(parts) == 0 {
		return "NCCL defaults"
	}
	return strings.Join(parts, " ")
}

// score is a trial's score for a range; NaN where the trial did not measure
// it (its sweep left out a settled range).
func score(t store.Trial, rangeName string) float64 {
	if v, ok := t.Scores[rangeName]; ok {
		return v
	}
	return math.NaN()
}

// figureOf prints a score as measured (in m's unit) with three significant
// digits, so that the small-message range (hundredths of a GB/s) stays
// readable beside the large, whole from 100 to a million (285 GB/s, not
// 2.85e+02); "-" for none (a best of 0 is none yet: no trial has measured
// the range).
func figureOf(m space.Measure, score float64) string {
	switch v := m.Value(score); {
	case !(score > 0) || math.IsInf(v, 0):
		return "-"
	case v >= 100 && v < 1e6:
		return fmt.Sprintf("%.0f", v)
	default:
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
}

func gain(r results.RangeResult) string {
	switch {
	case math.IsNaN(r.Gain()):
		return "-"
	case !r.Tuned():
		return "none"
	}
	return fmt.Sprintf("%+.1f%%", text.Bounded(100*r.Gain()))
}

// simplificationUnfinished reports whether the campaign's simplification
// began and has configurations left to run, which a resume runs. Not while
// a raised budget's search has trials left to run: the simplification of
// its choices follows it as in any campaign, and the replay is not run.
func simplificationUnfinished(l *loaded) bool {
	searched, simplifying := byPhase(l.trials)
	searching := l.camp.Stopped == "" && results.Summarize(searched).Finished() < l.camp.Budget
	return l.camp.Simplify && len(simplifying) > 0 && !searching && !tuner.Simplified(l.space, l.trials)
}

// byPhase splits a campaign's trials into the search's, each of its rows
// (an interrupted one beside its run again), and the simplification's
// finished ones.
func byPhase(trials []store.Trial) (searched, simplifying []store.Trial) {
	for _, t := range trials {
		if t.Searched() {
			searched = append(searched, t)
		} else if t.State.Finished() {
			simplifying = append(simplifying, t)
		}
	}
	return searched, simplifying
}

// silentRuns counts the complete validation runs, and those of them that
// set NCCL variables and whose output had no NCCL INFO lines
// (store.InfoNone), as results.Summary counts trials.
func silentRuns(runs []store.ValidationRun) (silent, complete int) {
	for _, r := range runs {
		if r.State == store.Complete {
			complete++
			if r.Info == store.InfoNone && slices.ContainsFunc(r.Env, func(kv string) bool { return strings.HasPrefix(kv, "NCCL_") }) {
				silent++
			}
		}
	}
	return silent, complete
}

// orphans are the numbers of the trials marked running whose writer, a
// process of this host, is gone: a resume marks them interrupted and runs
// them again. Another host's writer cannot be asked.
func (l *loaded) orphans() []int {
	if l.writer == nil || l.writer.Runs == nil || *l.writer.Runs {
		return nil
	}
	var numbers []int
	for _, t := range l.trials {
		if t.State == store.Running {
			numbers = append(numbers, t.Number)
		}
	}
	return numbers
}

func statusJSON(l *loaded) map[string]any {
	sum := results.Summarize(l.trials)
	ranges := []results.RangeReport{}
	for _, r := range l.results {
		ranges = append(ranges, r.Report(l.space))
	}
	settled := map[string]int{}
	for r, at := range tuner.Settled(l.space, l.trials) {
		if at >= 0 {
			settled[l.space.Ranges[r].Name] = at
		}
	}
	out := map[string]any{
		"campaign":      l.camp.Name,
		"simulated":     len(l.space.Simulator) > 0,
		"budget":        l.camp.Budget,
		"stopped":       stoppedWhy(l),
		"settled":       settled,
		"trials":        map[string]any{"total": sum.Total, "by_state": sum.ByState, "failures": sum.Failures, "unconfirmed": sum.Unconfirmed, "no_nccl_log": sum.Silent, "one_rank": sum.OneRank, "inherited": sum.Inherited},
		"ranges":        ranges,
		"group_spreads": list(results.GroupSpreads(l.space, l.trials)),
	}
	out["writer"] = nil
	if w := l.writer; w != nil {
		out["writer"] = map[string]any{"pid": w.PID, "host": w.Host, "since": w.Since, "runs": w.Runs}
	}
	out["orphaned"] = list(l.orphans())
	silent, complete := silentRuns(l.runs)
	out["validation_runs"] = map[string]int{"complete": complete, "no_nccl_log": silent}
	// What the budget counts apart from what follows it: since a budget may
	// be raised after the simplification, their numbers do not tell.
	searched, simplifying := byPhase(l.trials)
	search := results.Summarize(searched)
	out["search"] = map[string]any{"total": search.Finished(), "by_state": search.ByState}
	out["simplification"] = len(simplifying)
	out["simplification_unfinished"] = simplificationUnfinished(l)
	// Only a benchmark with an iteration count has one to report (the user's command runs as written).
	if l.space.Benchmark.Uses("benchmark.iters") {
		iters, why := tuner.Iterations(tuner.CountedSpace(l.camp, l.space), l.trials)
		out["iterations"] = map[string]any{"count": iters, "reason": why}
	}
	return out
}

func exportCommand() *cli.Command {
	return &cli.Command{
		Name:  "export",
		Usage: "write the chosen settings of each size range, in a format launch scripts take",
		Description: "Per size range: env (default; nccl-RANGE.env of `export NCCL_X='value'` lines, safe to\n" +
			"source), dotenv (NAME=value for docker --env-file and Kubernetes; a value those and a shell\n" +
			"would read differently is refused), slurm (an srun --export= string), torchrun (a wrapper).\n" +
			"All ranges in one file: json. For one job that sends every size, with a tuner plugin that\n" +
			"chooses the algorithm and protocol per size: plugin (nccltune's own plugin: nccltune.rules and\n" +
			"nccl-plugin.env, the job's one environment) and tuner-csv (NCCL's example plugin:\n" +
			"nccl_tuner.conf and nccl-tuner.env). For a campaign with a [[workload]]: job (nccl-job.env,\n" +
			"the one configuration that minimises the job's predicted communication time, per-collective\n" +
			"algorithm and protocol included). For a campaign of campaign.scales, the plugin formats write\n" +
			"the rules of every node count in one file, and the job's environment for each (nccl-plugin-8n.env);\n" +
			"job writes each node count's own (nccl-job-8n.env).\n" +
			"Each file's header names the range, the campaign, what it\n" +
			"was measured on, and the gain. A range whose best did not beat NCCL's defaults (validated,\n" +
			"or by 1% unvalidated) gets only the pinned variables, and says so.",
		Flags: []cli.Flag{storeFlag, campaignFlag,
			&cli.StringFlag{Name: "space", Usage: "the space `FILE` the campaign ran with: only with it are pinned variables that load code or name files (NCCL_NET_PLUGIN, NCCL_TOPO_FILE, ...) written"},
			&cli.StringFlag{Name: "out", Value: ".", Usage: "output `DIR`"},
			&cli.StringFlag{Name: "format", Value: export.Formats[0], Usage: strings.Join(export.Formats, ", ")},
			&cli.StringFlag{Name: "plugin", Usage: "`PATH` of the tuner plugin the env file loads (NCCL_TUNER_PLUGIN): nccltune's for the plugin format (default: DIR/" + plugin.LibraryName + ", see `nccltune plugin build`), NVIDIA's example for tuner-csv (default: " + export.ExampleLibrary + ", which NCCL opens as libnccl-tuner-example.so from the library path)"}},
		Action: func(c *cli.Context) error {
			if !slices.Contains(export.Formats, c.String("format")) {
				return usageError{fmt.Errorf("--format must be one of %s", strings.Join(export.Formats, ", "))}
			}
			if f := c.String("format"); c.IsSet("plugin") && f != "plugin" && f != "tuner-csv" {
				// Dropped, it would leave the user believing the files load it.
				return usageError{fmt.Errorf("--plugin names the plugin of the plugin and tuner-csv formats' env files; the %s format loads none", f)}
			}
			var ex export.Export
			l, err := readCampaign(c, func(st *store.Store, l *loaded) (err error) {
				ex, err = exportOfCampaign(c, st, l)
				return err
			})
			if err != nil {
				return err
			}
			if len(ex.LeftOut) > 0 {
				fmt.Fprintf(terminal{os.Stderr}, "nccltune: leaving out %s, which load code or name files: a store is no authority on those; give the space file the campaign ran with (--space FILE) to write them\n",
					strings.Join(ex.LeftOut, ", "))
			}
			ex.Note = func(s string) { fmt.Fprintf(terminal{os.Stderr}, "nccltune: %s\n", s) }
			paths, err := ex.Write(c.String("format"), c.String("out"))
			if len(paths) > 0 {
				// The listing is output too: one lost (a full disk) fails the command.
				if _, werr := fmt.Println(strings.Join(paths, "\n")); werr != nil {
					err = errors.Join(err, werr)
				}
			}
			if validate := l.command("validate"); errors.Is(err, export.ErrUnvalidated) && validate != "nccltune validate" {
				// Without the flags that read the campaign, it validates another.
				err = fmt.Errorf("%w\n`nccltune validate` here is `%s`", err, validate)
			}
			if c.String("format") == "plugin" && c.String("plugin") == "" && len(paths) > 0 { // rules written
				if _, statErr := os.Stat(filepath.Join(c.String("out"), plugin.LibraryName)); statErr != nil {
					fmt.Fprintf(os.Stderr, "nccltune: build the plugin beside the rules: %s\n", shellJoin([]string{"nccltune", "plugin", "build", "--out", c.String("out")}))
				}
			}
			return err
		},
	}
}

// exportOfCampaign is what export writes of the loaded campaign l: its
// export and, for the plugin and job formats of a campaign of
// campaign.scales, every other node count's, since one rules file serves
// them all and each gets a job's environment.
func exportOfCampaign(c *cli.Context, st *store.Store, l *loaded) (export.Export, error) {
	own, err := userSpace(c, l)
	if err != nil {
		return export.Export{}, err
	}
	ex, err := exportOf(st, l, c.String("plugin"), own)
	if err != nil {
		return ex, err
	}
	if f := c.String("format"); l.camp.Scale > 0 && (f == "plugin" || f == "tuner-csv" || f == "job") {
		nodes, err := storedScales(st, l.family)
		if err != nil {
			return ex, err
		}
		for _, n := range nodes {
			if name := tuner.CampaignName(st, l.family.AtScale(n)); name != "" && name != l.camp.Name {
				other, err := load(st, name, readStored)
				if err != nil {
					return ex, err
				}
				x, err := exportOf(st, other, c.String("plugin"), own)
				if err != nil {
					return ex, err
				}
				ex.Scales = append(ex.Scales, x)
			}
		}
	}
	return ex, nil
}

// storedScales are the node counts of family's campaign.scales and of
// every other scale of family's space that the store holds a campaign of:
// the list is no part of a scale's space, so a run that added a node count
// ([2, 4], then [2, 4, 8]) kept the scales it ran, whose stored copies list
// the node counts of their own run alone.
func storedScales(st *store.Store, family *space.Space) ([]int, error) {
	all, err := st.Campaigns()
	if err != nil {
		return nil, err
	}
	nodes := slices.Clone(family.Campaign.Scales)
	for _, c := range all {
		if c.Scale > 0 && !slices.Contains(nodes, c.Scale) && tuner.CampaignName(st, family.AtScale(c.Scale)) != "" {
			nodes = append(nodes, c.Scale)
		}
	}
	slices.Sort(nodes)
	return nodes, nil
}

// exportOf is a loaded campaign's export.
// Without the user's own space file (own, nil if none) it writes none of the
// stored space's variables that load code or name files (space.Exportable):
// a store can be edited by anyone who can write it.
func exportOf(st *store.Store, l *loaded, pluginPath string, own *space.Space) (export.Export, error) {
	decisions, err := st.Decisions(l.camp.ID)
	if err != nil {
		return export.Export{}, err
	}
	sp, left := l.space.Exportable()
	if own != nil {
		sp, left = own, nil
		if l.camp.Scale > 0 {
			sp = own.AtScale(l.camp.Scale)
		}
	}
	// The store's validations and decisions are under the stored space's keys, as l.results are.
	return export.Export{Space: sp, Campaign: l.camp, Results: l.results, Job: results.JobOf(l.space, l.trials, l.vals),
		Decisions: decisions, Fingerprint: fingerprint(l.trials), Plugin: pluginPath, Validate: l.command("validate"), Now: time.Now(),
		LeftOut: left, Trusted: own != nil, Stored: l.space, Store: st.Path()}, nil
}

// fingerprint is what the campaign ran on, as its first completed trial recorded it.
func fingerprint(trials []store.Trial) runner.Fingerprint {
	for _, t := range trials {
		if t.State == store.Complete {
			return t.Fingerprint
		}
	}
	return runner.Fingerprint{}
}

func simCommand() *cli.Command {
	return &cli.Command{
		Name:            "sim",
		Usage:           "run the simulated cluster as an nccl-tests benchmark (for tests and demos)",
		UsageText:       sim.Usage,
		SkipFlagParsing: true,
		Action: func(c *cli.Context) error {
			// A stand-in for nccl-tests dies of the signals that end it, as
			// nccl-tests does: caught by nccltune's stop, a paced run went on
			// to its end and exited 0, a stopped benchmark read as one that ran.
			signal.Reset(os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
			// sim.Main drops write errors: output lost (a full disk) fails the command.
			out := &stickyWriter{w: os.Stdout}
			if code := sim.Main(c.Args().Slice(), os.Environ(), out, os.Stderr); code != 0 {
				return exitCode(code)
			}
			return out.err
		},
	}
}
