package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/schollz/progressbar/v3"
	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"

	"github.com/nccltune/nccltune/examples"
	"github.com/nccltune/nccltune/internal/text"
	"github.com/nccltune/nccltune/space"
	"github.com/nccltune/nccltune/store"
	"github.com/nccltune/nccltune/tuner"
)

// validateFlags control the validation that follows a campaign.
var validateFlags = []cli.Flag{
	&cli.BoolFlag{Name: "no-simplify", Usage: "skip trying each range's choice without each of its settings once the budget is spent"},
	&cli.BoolFlag{Name: "no-validate", Usage: "skip validating the result once the budget is spent"},
	&cli.IntFlag{Name: "validate-rounds", Value: tuner.DefaultRounds, Usage: fmt.Sprintf("interleaved rounds of validation (2 to %d)", tuner.MaxRounds)},
}

// searchFlags override a campaign's search settings, for run and resume alike.
var searchFlags = []cli.Flag{
	storeFlag,
	&cli.IntFlag{Name: "trials", Usage: "trial budget, including trials 0 and 1 (NCCL's defaults)", DefaultText: "the space file's campaign.trials; resume: the stored budget"},
	&cli.Int64Flag{Name: "seed", Usage: "search seed", DefaultText: "the space file's campaign.seed; resume: the stored seed"},
	&cli.StringFlag{Name: "sampler", Usage: strings.Join(space.Samplers, ", "), DefaultText: "the space file's campaign.sampler, else tpe-gp; resume: the stored sampler"},
	&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no progress output"},
}

func runCommand() *cli.Command {
	return &cli.Command{
		Name:  "run",
		Usage: "run (or resume) a tuning campaign",
		Description: "Loads the space file, then runs trials until the budget is spent (or, with\n" +
			"patience, until every size range has settled). Trials 0 and 1 measure NCCL's defaults;\n" +
			"their difference sets the iteration count. The space's [[try_first]] configurations\n" +
			"and the warm start's known-good ones (chosen by what NCCL logged about the fabric)\n" +
			"follow, then the sampler's proposals. If the store already holds the campaign, it\n" +
			"resumes: finished trials are kept and told to the sampler, an interrupted trial is run\n" +
			"again. The space file's trials, seed and sampler apply; the flags override them.",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "space", Usage: "search space `FILE` (TOML); without it, the built-in example " + examples.Default + " (a simulated cluster)"},
			&cli.BoolFlag{Name: "allow-space-change", Usage: "if the stored campaign ran with a different space, continue as a new campaign NAME-2 in the same store"},
		}, append(searchFlags, validateFlags...)...),
		Action: func(c *cli.Context) error {
			if err := checkFlags(c); err != nil {
				return err
			}
			sp, err := loadSpace(c.Context, c.String("space"))
			if err != nil {
				return err
			}
			return runCampaign(c, sp, tuner.Options{AllowSpaceChange: c.Bool("allow-space-change")})
		},
	}
}

func resumeCommand() *cli.Command {
	return &cli.Command{
		Name:  "resume",
		Usage: "resume a campaign from its store (and its space file, if it starts a program)",
		Description: "Continues the campaign with the space, budget, seed and sampler stored with it, and\n" +
			"simplifies and validates it as the run that started it asked (--no-simplify, --no-validate,\n" +
			"--validate-rounds); the flags override all but the space. Finished trials are kept, an\n" +
			"interrupted one runs again.\n" +
			"A campaign whose space starts a program (a benchmark binary, a launcher) needs --space FILE,\n" +
			"the file it ran with: nccltune never starts a program that only the store names.\n" +
			"A campaign of campaign.scales resumes the scales: each goes on where it stopped.",
		Flags: append(append([]cli.Flag{campaignFlag, ownSpaceFlag}, searchFlags...), validateFlags...),
		Action: func(c *cli.Context) error {
			if err := checkFlags(c); err != nil {
				return err
			}
			// A writer, which upgrades an older store's schema: a reader
			// refuses it, and says resume upgrades it.
			st, err := openExistingWriter(c.String("store"))
			if err != nil {
				return err
			}
			l, err := load(st, c.String("campaign"), space.Parse)
			if err == nil && l.camp.Scale > 0 && !c.IsSet("space") {
				// Each scale's stored copy lists its own run's scales.
				l.family.Campaign.Scales, err = storedScales(st, l.family)
			}
			st.Close()
			if err != nil {
				return err
			}
			sp, err := ownSpace(c, l)
			if err != nil {
				return err
			}
			if l.camp.Scale == 0 {
				sp.Campaign.Name = l.camp.Name // NAME-2 of run --allow-space-change runs a space named NAME
			}
			// A campaign of campaign.scales resumes with the scales after it.
			return runCampaign(c, sp, tuner.Options{KeepSettings: true})
		},
	}
}

// checkFlags refuses a flag value that no space makes good, before the
// space is read (and the built-in example announced).
func checkFlags(c *cli.Context) error {
	if s := c.String("sampler"); s != "" && !slices.Contains(space.Samplers, s) {
		return usageError{fmt.Errorf("--sampler must be one of %s", strings.Join(space.Samplers, ", "))}
	}
	if c.IsSet("trials") {
		// The bounds of every space; one of groups raises the least, which
		// runCampaign checks once the space is read.
		if err := new(space.Space).CheckTrials(c.Int("trials")); err != nil {
			return usageError{fmt.Errorf("--trials: %w", err)}
		}
	}
	if c.Bool("no-validate") && c.IsSet("validate-rounds") {
		// Rounds of a validation it skips, which would go unread.
		return usageError{errors.New("--validate-rounds with --no-validate: give one or the other")}
	}
	if err := tuner.CheckRounds(c.Int("validate-rounds")); err != nil {
		return usageError{fmt.Errorf("--validate-rounds: %w", err)}
	}
	return nil
}

// runCampaign runs the campaign of sp with the flags' overrides of o
// (checkFlags passed), then prints the status table.
func runCampaign(c *cli.Context, sp *space.Space, o tuner.Options) error {
	o.Trials, o.Sampler = c.Int("trials"), c.String("sampler")
	if c.IsSet("trials") {
		if err := sp.CheckTrials(o.Trials); err != nil {
			return usageError{fmt.Errorf("--trials: %w", err)}
		}
	}
	if c.IsSet("seed") {
		seed := c.Int64("seed")
		o.Seed = &seed
	}
	o.Simplify = !c.Bool("no-simplify")
	if !c.Bool("no-validate") {
		o.ValidateRounds = c.Int("validate-rounds")
	}
	// resume ends the campaign as the run that started it asked, as it
	// keeps its budget: a flag given overrides that, a default does not.
	if o.KeepSettings {
		if c.IsSet("no-simplify") {
			o.SimplifyOverride = &o.Simplify
		}
		if c.IsSet("no-validate") || c.IsSet("validate-rounds") {
			o.ValidateRoundsOverride = &o.ValidateRounds
		}
	}
	st, err := store.Open(c.String("store"))
	if err != nil {
		return err
	}
	defer st.Close()
	tu := &tuner.Tuner{Space: sp, Store: st}
	var log *progressLog
	if !c.Bool("quiet") {
		log = newProgressLog(os.Stderr, sp)
		tu.Progress, tu.OnValidationRun = log.trial, log.validation
		tu.OnScale = func(at *space.Space) {
			log.println(fmt.Sprintf("%s: campaign %q", text.Count(at.Campaign.Scale, "node", "nodes"), at.Campaign.Name))
		}
	}
	if tu.Finished(o) {
		fmt.Fprintf(terminal{os.Stderr}, "nccltune: campaign %q has run its budget (or stopped, as its status says) and been validated: nothing to run (--trials N extends it where configurations are left to try; `%s` measures its choices again)\n", sp.Campaign.Name, suggested(c, "validate"))
	}
	runErr := tu.Run(c.Context, o)
	log.clear() // the status table, or the error, on a line of its own
	if errors.Is(runErr, context.Canceled) {
		runErr = campaignStopped{runErr, suggested(c, "resume")}
	}
	runErr = goesOn(runErr, c, "resume")
	if flags := campaignFlags(c); len(flags) > 0 && (errors.Is(runErr, tuner.ErrAllFailed) || errors.Is(runErr, tuner.ErrAllFailing)) {
		// They name status and show, which without them read the default store.
		runErr = fmt.Errorf("%w%s%s", runErr, commandsNeed, shellJoin(flags))
	}
	if errors.Is(runErr, store.ErrLocked) || errors.Is(runErr, tuner.ErrSpaceChanged) {
		return runErr
	}
	for _, at := range scales(sp) {
		if name := tuner.CampaignName(st, at); name != "" {
			if err := printStatus(os.Stdout, st, name); err != nil && runErr == nil {
				return err
			}
		}
	}
	return runErr
}

// commandsNeed tells the flags that the commands a tuner error names
// (`nccltune status`, `nccltune show N`) need to read the same campaign.
const commandsNeed = "; the commands it names need "

// campaignFlags are the --store and --campaign given to c, which a command
// nccltune suggests needs to read the same campaign.
func campaignFlags(c *cli.Context) []string {
	var flags []string
	for _, name := range []string{"store", "campaign"} {
		if c.IsSet(name) {
			flags = append(flags, "--"+name, c.String(name))
		}
	}
	return flags
}

// suggested is the nccltune command that launches the campaign of c again
// (resume, validate): with its campaignFlags, and its --space, which a
// space that starts a program needs.
func suggested(c *cli.Context, command string) string {
	args := append([]string{"nccltune", command}, campaignFlags(c)...)
	if path := c.String("space"); path != "" {
		args = append(args, "--space", path)
	}
	return shellJoin(args)
}

// goesOn is err, where a node failed or the Slurm job's allocation ended,
// naming the command (resume, validate) that goes on: the tuner's error
// names none, and one without c's flags reads another store.
func goesOn(err error, c *cli.Context, command string) error {
	if errors.Is(err, tuner.ErrNodeFailed) || errors.Is(err, tuner.ErrAllocationEnded) {
		return fmt.Errorf("%w; in an allocation whose nodes are up, `%s` goes on", err, suggested(c, command))
	}
	return err
}

// loadSpaceFile loads the space file at path, unless a stop signal comes
// first (interruptible: a named pipe, --space <(cmd)).
func loadSpaceFile(ctx context.Context, path string) (*space.Space, error) {
	return interruptible(ctx, func() (*space.Space, error) { return space.Load(path) })
}

// scales are the spaces of the campaigns sp runs: its own, or one per
// node count of campaign.scales.
func scales(sp *space.Space) []*space.Space {
	if len(sp.Campaign.Scales) == 0 {
		return []*space.Space{sp}
	}
	var out []*space.Space
	for _, nodes := range sp.Campaign.Scales {
		out = append(out, sp.AtScale(nodes))
	}
	return out
}

func loadSpace(ctx context.Context, path string) (*space.Space, error) {
	if path != "" {
		return loadSpaceFile(ctx, path)
	}
	data, err := examples.Files.ReadFile(examples.Default)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "nccltune: no --space given; running the built-in example %s on the simulated cluster\n", examples.Default)
	return space.Parse("examples/"+examples.Default, data)
}

// progressLog is a campaign's progress on w: a bar on a terminal, one line
// per trial elsewhere (CI logs, files). Each line it writes clears the bar
// first: a search that stops short of its budget (patience, failures)
// leaves the bar unfinished, not cleared, and the next line (the
// simplification's first trial, a validation run, the status table)
// began where the bar ended.
type progressLog struct {
	w        *os.File
	sp       *space.Space
	tty      bool
	bar      *progressbar.ProgressBar
	campaign int64
}

func newProgressLog(w *os.File, sp *space.Space) *progressLog {
	// A dumb terminal (Emacs's shell, some CI consoles) may not return to
	// a line's start, and showed each redraw of the bar on a line of its own.
	return &progressLog{w: w, sp: sp, tty: isatty.IsTerminal(w.Fd()) && os.Getenv("TERM") != "dumb"}
}

// clear clears the bar, if one shows; the next trial draws it again.
func (l *progressLog) clear() {
	if l != nil && l.bar != nil {
		_ = l.bar.Clear()
	}
}

// println writes line on a line of its own.
func (l *progressLog) println(line string) {
	l.clear()
	fmt.Fprintln(l.w, line)
}

func (l *progressLog) trial(p tuner.Progress) {
	if p.Trial.CampaignID != l.campaign { // the next of campaign.scales
		l.clear()
		l.campaign, l.bar = p.Trial.CampaignID, nil
	}
	if p.Note != "" {
		// A note may quote a benchmark's output (a failed warm-up's): each
		// of its lines is escaped, as a trial's failure is.
		for _, line := range strings.Split(p.Note, "\n") {
			l.println(text.Graphic(line, ""))
		}
	}
	desc, fits := l.fit(bestLine(l.sp, p), p.Budget)
	if !l.tty || p.Simplifying || !fits {
		l.println(trialLine(l.sp, p))
		return
	}
	if l.bar == nil { // the budget is known once the campaign is open
		l.bar = progressbar.NewOptions(p.Budget, progressbar.OptionSetWriter(l.w),
			progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true),
			progressbar.OptionClearOnFinish())
	}
	l.bar.Describe(desc)
	_ = l.bar.Set(p.Done)
}

// fit cuts desc, the bar's description, so that the bar's line fits the
// terminal; it reports false where not even the bar's counts do. A longer
// line wraps, and each redraw, which returns to the start of its last row
// only, left the rows above it on the screen, one more every trial.
func (l *progressLog) fit(desc string, budget int) (string, bool) {
	ws, err := unix.IoctlGetWinsize(int(l.w.Fd()), unix.TIOCGWINSZ)
	if err != nil || ws.Col == 0 {
		return desc, true
	}
	// What the bar writes after desc: " 42% |bar| (5/12) [1m5s:2m10s]",
	// the bar as narrow as it must be; the elapsed time with room to grow
	// before the next trial, the predicted one as long as 9999h59m59s.
	var elapsed time.Duration
	if l.bar != nil {
		elapsed = time.Duration(l.bar.State().SecondsSince) * time.Second
	}
	counts := len(fmt.Sprintf(" 100%% || (%d/%d) [%s:9999h59m59s]", budget, budget, elapsed)) + 2
	room := int(ws.Col) - counts
	const more = " ..."
	switch {
	case len(desc) <= room:
		return desc, true
	case room < len("best"+more):
		return "", false
	}
	// Cut between words: a number cut short reads as a smaller one.
	cut := text.Prefix(desc, room-len(more)+1)
	return cut[:strings.LastIndexByte(cut, ' ')] + more, true
}

func (l *progressLog) validation(r store.ValidationRun, done, total int) {
	status := "ok"
	if r.State != store.Complete {
		status = firstLine(r.Failure) // the benchmark's output: escaped, as a trial's
	}
	l.println(fmt.Sprintf("validation %d/%d: round %d, %s: %s", done, total, r.Round, r.Arm, status))
}

// bestLine is the bar's short description: each range's best so far.
func bestLine(sp *space.Space, p tuner.Progress) string {
	var b strings.Builder
	b.WriteString("best")
	for i, r := range sp.Ranges {
		fmt.Fprintf(&b, " %s %s", r.Name, figureOf(sp.Measure(r), p.Best[i]))
	}
	return b.String() + " " + sp.Measure(sp.Ranges[0]).String()
}

func trialLine(sp *space.Space, p tuner.Progress) string {
	var b strings.Builder
	if p.Simplifying {
		fmt.Fprintf(&b, "simplifying, trial %d (%s): ", p.Trial.Number, chosenSettings(sp, &p.Trial))
	} else {
		// The count of the budget, not the number: a budget raised after
		// the simplification numbers its trials on past the simplification's.
		fmt.Fprintf(&b, "trial %d (%d/%d): ", p.Trial.Number, p.Done, p.Budget)
	}
	if p.Trial.State != store.Complete {
		fmt.Fprintf(&b, "%s (%s)", p.Trial.FailureKind, firstLine(p.Trial.FailureReason))
		return b.String()
	}
	for i, r := range sp.Ranges {
		m := sp.Measure(r)
		fmt.Fprintf(&b, "%s %s (best %s) ", r.Name, figureOf(m, score(p.Trial, r.Name)), figureOf(m, p.Best[i]))
	}
	return strings.TrimSpace(b.String()) + " " + sp.Measure(sp.Ranges[0]).String()
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	s = text.Graphic(s, "")
	if len(s) > 100 {
		s = text.Prefix(s, 100) + "..."
	}
	return s
}
