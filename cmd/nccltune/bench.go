package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/nccltune/nccltune/quality"
	"github.com/nccltune/nccltune/space"
	"github.com/nccltune/nccltune/tuner"
)

func benchCommand() *cli.Command {
	return &cli.Command{
		Name:  "bench",
		Usage: "measure nccltune itself",
		Subcommands: []*cli.Command{benchJobCommand(), benchGroupsCommand(), {
			Name:  "search",
			Usage: "search quality and campaign cost of each sampler on simulated clusters",
			Description: "For each scenario (one NVLink node; 2, 8 and 32 nodes over InfiniBand; GDR left off;\n" +
				"RoCE with a GID-index trap; TCP over 8x400G and over 2x100G) the space is enumerated\n" +
				"without noise to find each size range's true optimum. Each strategy then runs --seeds real\n" +
				"campaigns of --trials trials (the simulator in process) with --noise on every measurement,\n" +
				"each range choosing what `export` would. The\n" +
				"table gives the median regret of that choice (its true shortfall from the optimum) on\n" +
				"the worst range after 10/20/40/50/80/100 trials, the trials after which every range stays within 3%,\n" +
				"and the benchmark time 50 trials (and the whole campaign) would take on the hardware the\n" +
				"scenario models. Strategies: tpe-gp is nccltune's default campaign (the warm start, then a Gaussian\n" +
				"process, then it and TPE in turn), tpe-gp-cold the same without the warm start; tpe is TPE alone after the\n" +
				"warm start (tpe-cold without it); tpe-independent is goptuna's TPE, each setting modelled on its own, after the\n" +
				"warm start; random and grid are the textbook baselines and coordinate is coordinate descent\n" +
				"(AutoCCL's method), each from NCCL's defaults alone; gp is a Gaussian process after the warm start (gp-cold without it), and sparse a sparse\n" +
				"(horseshoe) regression over settings and pairs of settings with Thompson sampling, after the warm start.\n\n" +
				"Those scenarios' physics is what the warm start was written for. --landscapes N adds N\n" +
				"generated landscapes (landscape-1..N: 4 nodes x 8 GPUs over IB, where settings pay only as a\n" +
				"seeded random landscape of main effects, interactions, decoys and failing pairs says; see\n" +
				"`nccltune sim -h`, flag -landscape), one campaign per strategy on each, and a second table\n" +
				"gives per strategy the median and 90th percentile over them of the worst range's regret after\n" +
				"40 and 80 trials and of the trials until every range is within 3%, and the regret of that\n" +
				"range's best configuration tried (the search's part; --json gives it for every scenario); a\n" +
				"third says why the worst range is more than 3% off: the choice, terms (interactions, decoys)\n" +
				"no trial held, terms held but not by the best tried, or the rest. --scenarios \"\" leaves the\n" +
				"named scenarios out; --scenarios landscape-K runs one landscape with --seeds campaigns.\n\n" +
				"--smooth N adds as many of a second family, unlike the first in kind (smooth-1..N, the same\n" +
				"cluster and space, where the integers pay through smooth curves that peak anywhere in their\n" +
				"range and the categoricals shift them; see `nccltune sim -h`, flag -landscape_kind), graded\n" +
				"the same way, so that a search tuned on one family is checked on the other.",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "scenarios", Usage: "comma-separated scenario names (default: all; \"\": none, for --landscapes alone)"},
				&cli.IntFlag{Name: "landscapes", Value: defaultLandscapes, Usage: "also run `N` generated landscapes, one campaign per strategy each, and report the median and 90th percentile over them (0: none)"},
				&cli.IntFlag{Name: "smooth", Value: defaultLandscapes, Usage: "also run `N` generated smooth landscapes, as --landscapes (0: none)"},
				&cli.StringFlag{Name: "samplers", Value: "tpe-gp,tpe,coordinate,random,grid", Usage: "comma-separated: tpe-gp (nccltune's default: after the warm start a Gaussian process, then it and TPE in turn), tpe-gp-cold (the same alone), tpe (TPE after the warm start), tpe-cold (TPE alone), tpe-independent (goptuna's TPE, each setting on its own, after the warm start), random, grid (textbook baselines from NCCL's defaults alone), coordinate (coordinate descent from them, as AutoCCL), gp (a Gaussian process after the warm start), gp-cold (the same alone), sparse (a sparse regression over settings and pairs of them, after the warm start), random-warm"},
				&cli.IntFlag{Name: "seeds", Value: 10},
				&cli.IntFlag{Name: "trials", Value: 100},
				&cli.Float64Flag{Name: "noise", Value: 0.02, Usage: "relative standard deviation of each measurement"},
				&cli.BoolFlag{Name: "prune", Usage: "campaigns prune as with prune = true (a 2-iteration pass first)"},
				&cli.Float64Flag{Name: "noise-target", Value: space.DefaultNoiseTarget, Usage: "benchmark.noise_target of the campaigns (0: 20 iterations throughout)"},
				&cli.IntFlag{Name: "patience", Usage: "campaigns stop searching a range after `N` trials without a 1% gain, and stop when every range has (0: never)"},
				&cli.StringFlag{Name: "out", Value: ".", Usage: "`DIR` for search-quality.png"},
				&cli.BoolFlag{Name: "json", Usage: "print JSON for scripts"},
			},
			Action: benchSearch,
		}},
	}
}

// writableDir makes dir and checks that a file can be made in it: before
// hours of campaigns, whose results a bad --out would lose at their end.
func writableDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".nccltune-")
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(f.Name())
}

// maxBenchCount is the most --seeds, --landscapes or --smooth bench takes:
// more campaigns than any run finishes (2000000000 ran out of memory
// before the first).
const maxBenchCount = 10000

// checkCampaignFlags refuses, before any campaign runs, the bench flags
// that every campaign's space would refuse (the campaigns failed one by one,
// naming temporary space files): --noise past the simulator's [0, 0.5], a
// --trials budget below the command's minTrials (why says why, where it
// is not plain) or past space.MaxTrials, and where the command has them
// --noise-target past [0, 0.5) and --patience that is neither 0 nor at
// least 5; and counts below one seed or past maxBenchCount. Each names
// its flag and value: one message of every bound left the user to find
// which was wrong.
func checkCampaignFlags(c *cli.Context, minTrials int, why string) error {
	for _, f := range []struct {
		name string
		min  int
	}{{"seeds", 1}, {"landscapes", 0}, {"smooth", 0}} {
		if n := c.Int(f.name); n < f.min || n > maxBenchCount {
			return usageError{fmt.Errorf("--%s must be %d to %d, not %d", f.name, f.min, maxBenchCount, n)}
		}
	}
	if n := c.Int("trials"); n < minTrials || n > space.MaxTrials {
		return usageError{fmt.Errorf("--trials must be %d%s to %d, not %d", minTrials, why, space.MaxTrials, n)}
	}
	if n := c.Float64("noise"); !(n >= 0 && n <= 0.5) {
		return usageError{fmt.Errorf("--noise must be within [0, 0.5], not %g", n)}
	}
	if n := c.Float64("noise-target"); !(n >= 0 && n < 0.5) {
		return usageError{fmt.Errorf("--noise-target must be within [0, 0.5), not %g", n)}
	}
	if p := c.Int("patience"); p != 0 && p < 5 {
		return usageError{fmt.Errorf("--patience must be 0 (off) or at least 5 trials, not %d", p)}
	}
	return nil
}

// scenariosNamed are the scenarios of --scenarios' comma-separated names,
// an unknown or repeated one a usage error that names the flag.
func scenariosNamed(names string) ([]quality.Scenario, error) {
	s, err := quality.ScenariosNamed(strings.Split(names, ","))
	if err != nil {
		return nil, usageError{fmt.Errorf("--scenarios: %w", err)}
	}
	return s, nil
}

// strategies is --samplers' names, refusing one named twice: its campaigns
// would repeat the first's (the same seeds) and count twice in every median
// and percentile over them (ScenariosNamed refuses a scenario so).
func strategies(c *cli.Context) ([]string, error) {
	list := strings.Split(c.String("samplers"), ",")
	for i, name := range list {
		if slices.Contains(list[:i], name) {
			return nil, usageError{fmt.Errorf("--samplers: %q named twice", name)}
		}
	}
	if err := quality.CheckStrategies(list); err != nil {
		return nil, usageError{fmt.Errorf("--samplers: %w", err)}
	}
	return list, nil
}

// defaultLandscapes is how many generated landscapes `bench search` adds by default.
const defaultLandscapes = 50

// timedAt is the trial count whose benchmark time bench search reports
// beside the whole campaign's.
const timedAt = 50

// familyAt are the trial counts the landscapes' table reports regret at.
var familyAt = []int{40, 80}

func benchSearch(c *cli.Context) error {
	if err := checkCampaignFlags(c, 10, ""); err != nil {
		return err
	}
	samplers, err := strategies(c)
	if err != nil {
		return err
	}
	scenarios := quality.Scenarios
	if c.IsSet("scenarios") {
		scenarios = nil
		if c.String("scenarios") != "" {
			if scenarios, err = scenariosNamed(c.String("scenarios")); err != nil {
				return err
			}
		}
	}
	families := []family{
		{name: "generated landscapes", key: "landscapes", scenarios: quality.Landscapes(c.Int("landscapes")), diagnosed: true},
		{name: "generated smooth landscapes", key: "smooth", scenarios: quality.Smooths(c.Int("smooth"))},
	}
	if len(scenarios) == 0 && c.Int("landscapes")+c.Int("smooth") == 0 {
		return usageError{fmt.Errorf("nothing to run: no --scenarios, no --landscapes and no --smooth")}
	}
	if err := writableDir(c.String("out")); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	dir, err := os.MkdirTemp("", "nccltune-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	o := quality.Options{Samplers: samplers, Seeds: c.Int("seeds"),
		Trials: c.Int("trials"), Noise: c.Float64("noise"), Prune: c.Bool("prune"), Patience: c.Int("patience"), NoiseTarget: c.Float64("noise-target"), Dir: dir}
	res, _, err := quality.Measure(c.Context, scenarios, o, func(s string) { fmt.Fprintln(os.Stderr, s) })
	if err != nil {
		return err
	}
	var plotted []quality.FamilyResults
	for i := range families {
		f := &families[i]
		if len(f.scenarios) == 0 {
			continue
		}
		// One campaign per strategy on each: the landscapes vary more than the seeds.
		fo, done := o, 0
		fo.Seeds = 1
		f.results, _, err = quality.Measure(c.Context, f.scenarios, fo, func(string) {
			if done++; done%(10*len(samplers)) == 0 || done == len(f.scenarios)*len(samplers) {
				fmt.Fprintf(os.Stderr, "%s: %d of %d done\n", f.key, done/len(samplers), len(f.scenarios))
			}
		})
		if err != nil {
			return err
		}
		var at []int
		for _, n := range familyAt {
			if n <= o.Trials {
				at = append(at, n)
			}
		}
		f.summary = quality.Family(f.results, at)
		if !f.diagnosed {
			for i := range f.summary { // no miss is diagnosed there: none counted is not none
				f.summary[i].Misses = nil
			}
		}
		plotted = append(plotted, quality.FamilyResults{Name: f.name, Results: f.results})
	}
	png := filepath.Join(c.String("out"), "search-quality.png")
	if err := quality.Plot(res, plotted, o.Trials, png); err != nil {
		return err
	}
	at := []int{10, 20, 40, 50, 80, 100}
	if c.Bool("json") {
		rows := []map[string]any{}
		for _, r := range res {
			regret, tried, byRange := map[string]float64{}, map[string]float64{}, map[string]map[string]float64{}
			for _, n := range at {
				if n > o.Trials {
					continue
				}
				regret[fmt.Sprint(n)], tried[fmt.Sprint(n)] = r.WorstMedianRegret(n), r.WorstRangeTried(n)
				for i, name := range r.Ranges {
					if byRange[name] == nil {
						byRange[name] = map[string]float64{}
					}
					byRange[name][fmt.Sprint(n)] = r.MedianRegret(i, n)
				}
			}
			row := map[string]any{"scenario": r.Scenario, "sampler": r.Sampler, "worst_range_regret": regret, "worst_range_best_tried_regret": tried, "regret_by_range": byRange,
				"trials_to_3pct": r.TrialsToWithin(quality.Tolerance), "seconds_total": r.MedianSeconds(o.Trials)}
			if o.Trials >= timedAt {
				row["seconds_at_50"] = r.MedianSeconds(timedAt)
			}
			rows = append(rows, row)
		}
		out := map[string]any{"results": rows, "plot": png}
		for _, f := range families {
			if f.summary != nil {
				out[f.key] = map[string]any{"count": len(f.scenarios), "campaigns_each": 1, "trials": o.Trials, "summary": f.summary}
			}
		}
		return writeJSON(os.Stdout, out)
	}
	tw := newTable(os.Stdout)
	trialsTo := func(n float64) string {
		if n > float64(o.Trials) {
			return fmt.Sprintf(">%d", o.Trials)
		}
		return fmt.Sprintf("%.0f", n)
	}
	if len(res) > 0 {
		fmt.Fprintln(tw, "scenario\tsampler\tregret@10\t@20\t@40\t@50\t@80\t@100\ttrials to 3%\tbench s @50\tall\t")
		for _, r := range res {
			fmt.Fprintf(tw, "%s\t%s\t", r.Scenario, r.Sampler)
			for _, n := range at {
				if n <= o.Trials {
					fmt.Fprintf(tw, "%.1f%%\t", 100*r.WorstMedianRegret(n))
				} else {
					fmt.Fprint(tw, "-\t")
				}
			}
			at50 := "-" // not run so far
			if o.Trials >= timedAt {
				at50 = fmt.Sprintf("%.0f", r.MedianSeconds(timedAt))
			}
			fmt.Fprintf(tw, "%s\t%s\t%.0f\t\n", trialsTo(r.TrialsToWithin(quality.Tolerance)), at50, r.MedianSeconds(o.Trials))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	printed := len(res) > 0
	for _, f := range families {
		if f.summary == nil {
			continue
		}
		if printed {
			fmt.Println()
		}
		printed = true
		if err := printFamily(tw, f, trialsTo); err != nil {
			return err
		}
	}
	fmt.Println("plot:", png)
	return nil
}

// family is a family of generated scenarios, graded by the spread over them.
type family struct {
	name, key string // as its table's title says it; its key in --json
	scenarios []quality.Scenario
	diagnosed bool // its misses are diagnosed (why the worst range is off)
	results   []quality.Result
	summary   []quality.FamilyRow
}

// printFamily prints a family's table: per strategy, the median and 90th
// percentile over it of the worst range's regret and of the trials to 3%;
// and, where its misses are diagnosed, why.
func printFamily(tw *table, f family, trialsTo func(float64) string) error {
	fmt.Printf("%d %s, one campaign per strategy each: median and 90th percentile over them\n", len(f.scenarios), f.name)
	fmt.Fprintln(tw, "sampler\tregret@40 median\tp90\tregret@80 median\tp90\ttrials to 3% median\tp90\tbest tried@40\t@80\t")
	for _, row := range f.summary {
		fmt.Fprintf(tw, "%s\t", row.Sampler)
		for _, n := range familyAt {
			if r, ok := row.Regret[n]; ok {
				fmt.Fprintf(tw, "%.1f%%\t%.1f%%\t", 100*r.Median, 100*r.P90)
			} else {
				fmt.Fprint(tw, "-\t-\t")
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t", trialsTo(row.TrialsTo3.Median), trialsTo(row.TrialsTo3.P90))
		for _, n := range familyAt {
			if r, ok := row.Tried[n]; ok {
				fmt.Fprintf(tw, "%.1f%%\t", 100*r.Median)
			} else {
				fmt.Fprint(tw, "-\t")
			}
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil || !f.diagnosed {
		return err
	}
	fmt.Println("\nwhy the worst range is more than 3% off, over the landscapes: the choice passed over a configuration tried within 3%;")
	fmt.Println("every way within 3% (a set of interactions and decoys) holds a term no trial held; some way's terms were all held,")
	fmt.Println("but the best tried holds no way; or it holds one and misses on main effects and partial interactions")
	fmt.Fprint(tw, "sampler\t")
	for _, n := range familyAt {
		fmt.Fprintf(tw, "@%d choice\tunseen\tunkept\tpolish\t", n)
	}
	fmt.Fprintln(tw)
	for _, row := range f.summary {
		fmt.Fprintf(tw, "%s\t", row.Sampler)
		for _, n := range familyAt {
			for _, m := range quality.Misses {
				if misses, ok := row.Misses[n]; ok {
					fmt.Fprintf(tw, "%d\t", misses[m])
				} else {
					fmt.Fprint(tw, "-\t")
				}
			}
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

func benchJobCommand() *cli.Command {
	return &cli.Command{
		Name:  "job",
		Usage: "how close nccl-job.env comes to the best single configuration for a workload",
		Description: "Tunes the example workload (examples/sim-2node-ib-workload.toml: DDP's gradient all-reduces,\n" +
			"FSDP's all-gathers and reduce-scatters, tiny all-reduces) on simulated clusters, validates, and\n" +
			"scores the configuration `export --format job` would write by the simulator's noise-free\n" +
			"truth: the job's predicted communication time against NCCL's defaults and against the best\n" +
			"single configuration of the space, found by exhaustive search.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "scenarios", Value: strings.Join(quality.JobScenarios, ","), Usage: "comma-separated scenario names"},
			&cli.IntFlag{Name: "seeds", Value: 5},
			&cli.IntFlag{Name: "trials", Value: 60},
			&cli.IntFlag{Name: "rounds", Value: 5, Usage: "validation rounds"},
			&cli.Float64Flag{Name: "noise", Value: 0.02, Usage: "relative standard deviation of each measurement"},
			&cli.BoolFlag{Name: "json", Usage: "print JSON for scripts"},
		},
		Action: func(c *cli.Context) error {
			if err := checkCampaignFlags(c, space.MinTrials, ""); err != nil {
				return err
			}
			if err := tuner.CheckRounds(c.Int("rounds")); err != nil {
				return usageError{fmt.Errorf("--rounds: %w", err)}
			}
			// Every name before the first campaign, which an unknown one after it would waste.
			if _, err := scenariosNamed(c.String("scenarios")); err != nil {
				return err
			}
			scenarios := strings.Split(c.String("scenarios"), ",")
			dir, err := os.MkdirTemp("", "nccltune-bench-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(dir)
			o := quality.Options{Seeds: c.Int("seeds"), Trials: c.Int("trials"), Noise: c.Float64("noise"), NoiseTarget: space.DefaultNoiseTarget, Dir: dir}
			runs, err := quality.MeasureJob(c.Context, scenarios, o, c.Int("rounds"))
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return writeJSON(os.Stdout, runs)
			}
			tw := newTable(os.Stdout)
			fmt.Fprintln(tw, "scenario\tdefaults s\tbest s\tjob file s (median)\tregret median\tregret worst\tgain over defaults\t")
			for _, name := range scenarios {
				rs := runs[name]
				var exported, regret []float64
				for _, r := range rs {
					exported, regret = append(exported, r.Exported), append(regret, r.Regret())
				}
				slices.Sort(regret)
				med := quality.Median(exported)
				fmt.Fprintf(tw, "%s\t%.4g\t%.4g\t%.4g\t%.1f%%\t%.1f%%\t%+.1f%%\t\n", name, rs[0].Default, rs[0].Best, med,
					100*quality.Median(regret), 100*regret[len(regret)-1], 100*(rs[0].Default/med-1))
			}
			return tw.Flush()
		},
	}
}

func benchGroupsCommand() *cli.Command {
	return &cli.Command{
		Name:  "groups",
		Usage: "campaign wall time with trials on 1, 2, 4 groups of nodes at once (launcher.groups), at equal regret",
		Description: "Runs --seeds campaigns of --trials trials (the default search after the warm start) per scenario and group\n" +
			"count on the simulated cluster in process, each launch taking its modelled time x --pace of\n" +
			"real time, so that launches on groups overlap as they would on the hardware. The table gives,\n" +
			"per group count, the median worst-range regret at the end, the median wall time of the\n" +
			"campaign and its share of one group's, and the wall time until the median worst-range regret\n" +
			"first reaches what one group ends at, with its share of one group's (in seconds of the\n" +
			"modelled hardware).",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "scenarios", Value: strings.Join(quality.JobScenarios, ","), Usage: "comma-separated scenario names"},
			&cli.StringFlag{Name: "groups", Value: "1,2,4", Usage: "comma-separated group counts; the first is the reference"},
			&cli.IntFlag{Name: "seeds", Value: 5},
			&cli.IntFlag{Name: "trials", Value: 60},
			&cli.Float64Flag{Name: "noise", Value: 0.02, Usage: "relative standard deviation of each measurement"},
			&cli.Float64Flag{Name: "pace", Value: 0.02, Usage: "real seconds slept per modelled second of each launch"},
			&cli.BoolFlag{Name: "json", Usage: "print JSON for scripts"},
		},
		Action: func(c *cli.Context) error {
			var groups []int
			for _, g := range strings.Split(c.String("groups"), ",") {
				n, err := strconv.Atoi(g)
				if err != nil || n < 1 || n > space.MaxGroups {
					return usageError{fmt.Errorf("--groups: %q is not a group count of 1 to %d", g, space.MaxGroups)}
				}
				// Its campaigns would repeat the first's (the same seeds), a row each.
				if slices.Contains(groups, n) {
					return usageError{fmt.Errorf("--groups: %d named twice", n)}
				}
				groups = append(groups, n)
			}
			// NCCL's defaults run once on each group, then the search.
			largest := slices.Max(groups)
			if err := checkCampaignFlags(c, largest+2, fmt.Sprintf(" (2 more than the largest of --groups, %d)", largest)); err != nil {
				return err
			}
			if pace := c.Float64("pace"); !(pace > 0 && pace <= 1) {
				return usageError{fmt.Errorf("--pace must be within (0, 1], not %g", pace)}
			}
			scenarios, err := scenariosNamed(c.String("scenarios"))
			if err != nil {
				return err
			}
			dir, err := os.MkdirTemp("", "nccltune-bench-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(dir)
			o := quality.Options{Seeds: c.Int("seeds"), Trials: c.Int("trials"), Noise: c.Float64("noise"), NoiseTarget: space.DefaultNoiseTarget, Dir: dir}
			res, err := quality.MeasureGroups(c.Context, scenarios, groups, o, c.Float64("pace"))
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return writeJSON(os.Stdout, res)
			}
			tw := newTable(os.Stdout)
			fmt.Fprintln(tw, "scenario\tgroups\tregret at the end\twall s\tshare\twall s to one group's end regret\tshare\t")
			var ref quality.GroupsResult
			for _, r := range res {
				if r.Groups == groups[0] {
					ref = r
				}
				target := ref.MedianFinal()
				reach, base := r.WallToReach(target), ref.WallToReach(target)
				reached := fmt.Sprintf("%.0f\t%.0f%%", reach, 100*reach/base)
				if math.IsNaN(reach) {
					reached = "not reached\t-" // the median ended above the reference's, if only by a rounding
				}
				fmt.Fprintf(tw, "%s\t%d\t%.1f%%\t%.0f\t%.0f%%\t%s\t\n", r.Scenario, r.Groups, 100*r.MedianFinal(),
					r.MedianWall(), 100*r.MedianWall()/ref.MedianWall(), reached)
			}
			return tw.Flush()
		},
	}
}
