// Command nccltune tunes NCCL's environment variables for a cluster by running
// nccl-tests (or a simulated cluster) under a Bayesian search, and exports the
// best settings per message-size range as files to source.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nccltune/nccltune/internal/safego"
	"github.com/nccltune/nccltune/internal/text"
	"github.com/nccltune/nccltune/store"
	"github.com/urfave/cli/v2"
)

// Exit codes scripts can rely on.
const (
	exitOK          = 0
	exitFailure     = 1   // the command failed; the message says why
	exitUsage       = 2   // bad flags or arguments
	exitInternal    = 70  // a bug in nccltune (sysexits' EX_SOFTWARE); the message holds its trace
	exitInterrupted = 130 // stopped by SIGINT/SIGTERM/SIGHUP; finished trials are stored
)

func main() {
	os.Exit(run(os.Args))
}

// stopWait is how long a stop signal waits for nccltune to stop cleanly
// (a variable for the tests, which cannot wait a minute).
var stopWait = time.Minute

// stopSignals are the signals that stop nccltune cleanly: SIGINT, SIGTERM
// and SIGHUP (a closed terminal or ssh session), which killed nccltune as
// kill -9 does, its trial left running; not under nohup, which ignores it.
func stopSignals() []os.Signal {
	signals := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if !signal.Ignored(syscall.SIGHUP) {
		signals = append(signals, syscall.SIGHUP)
	}
	return signals
}

func run(args []string) int { return runApp(newApp(), args) }

// runApp runs app on args and returns the exit code. A panic, a bug of
// nccltune's, exits exitInternal with its trace: Go's runtime exits 2 on
// one, which scripts read as their own usage error. Deferred clean-ups (the
// store's lock, a trial's processes) have run by the time it is recovered.
func runApp(app *cli.App, args []string) (code int) {
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(os.Stderr, "nccltune: internal error (a bug: please report it with what follows): %v\n%s", p, debug.Stack())
			code = exitInternal
		}
	}()
	// The first stop signal cancels the campaign cleanly; the second, once
	// the handler is released, ends the process at once.
	ctx, stop := signal.NotifyContext(context.Background(), stopSignals()...)
	defer stop()
	returned := make(chan struct{})
	defer close(returned) // before stop, which cancels ctx too
	go func() {
		<-ctx.Done()
		select {
		case <-returned:
			return // no signal: runApp returned, and a test's process goes on
		default:
		}
		// A closed terminal sends SIGHUP twice (the shell's to its jobs,
		// then the kernel's to its foreground group as it exits): the
		// second is no second Ctrl-C, and must not end the stop it began.
		signal.Ignore(syscall.SIGHUP)
		stop()
		// Whatever nccltune is doing, a signal ends it: a clean stop ends the
		// running trials within their grace period; past stopWait it exits
		// (a trial's supervisor, through Pdeathsig, still ends its processes).
		time.Sleep(stopWait)
		fmt.Fprintf(os.Stderr, "nccltune: not stopped %s after the signal; exiting\n", stopWait)
		os.Exit(exitInterrupted)
	}()

	// urfave/cli prints help to app.Writer and drops its write errors: help
	// lost (a full disk) is the command's failure, as other output is.
	help := &stickyWriter{w: os.Stdout}
	app.Writer = help
	err := app.RunContext(ctx, args)
	if err == nil {
		err, _ = app.Metadata[noHelpTopic].(error)
	}
	if err == nil {
		err = help.err
	}
	// An error can quote the store (a campaign's name, its stored space's
	// lines): escaped like status's tables, so that it cannot drive the
	// terminal either.
	stderr := terminal{os.Stderr}
	var usage usageError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, context.Canceled):
		msg := "nccltune: interrupted"
		if stopped := (campaignStopped{}); errors.As(err, &stopped) {
			msg += "; finished trials are stored: the same `nccltune run` command, or `" + stopped.resume + "` (its stored budget), goes on"
		}
		fmt.Fprintln(os.Stderr, msg)
		return exitInterrupted
	case errors.As(err, &usage) || strings.HasPrefix(err.Error(), "Required flag"):
		fmt.Fprintln(stderr, "nccltune:", err)
		return exitUsage
	default:
		var code exitCode
		if errors.As(err, &code) { // said already
			return int(code)
		}
		msg := err.Error()
		switch {
		case store.NoRoom(err):
			msg += "; the disk may be full (or a quota or file-size limit reached): make room, and the same command goes on, the store as it was"
		case store.Busy(err):
			msg += "; another program holds the store locked (a sqlite3 shell with a transaction open?): once it lets go, the same command goes on, the store as it was"
		}
		if ctx.Err() != nil {
			// A stop signal came while the command failed on its own (a
			// store another program held, waited on past the signal):
			// scripts read the interruption, as after a clean stop.
			fmt.Fprintln(stderr, "nccltune: interrupted:", msg)
			return exitInterrupted
		}
		fmt.Fprintln(stderr, "nccltune:", msg)
		return exitFailure
	}
}

type usageError struct{ error }

// exitCode ends nccltune with its code, the command having said why. Not
// urfave/cli's ExitCoder, which an exec.ExitError that a command's error
// wraps (a compiler's) also is: nccltune exited with that program's code,
// or 255 for a signal, codes it does not document.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit %d", int(e)) }

// noCommand is the usage error of a command name that names none.
func noCommand(name string) error {
	return usageError{fmt.Errorf("no command %q; see nccltune --help", name)}
}

// noHelpTopic is the app's Metadata key of the usage error of `nccltune -h
// ARG` where ARG is no command.
const noHelpTopic = "noHelpTopic"

// stickyWriter writes to w and keeps the first write error.
type stickyWriter struct {
	w   io.Writer
	err error
}

func (s *stickyWriter) Write(p []byte) (int, error) {
	n, err := s.w.Write(p)
	if err != nil && s.err == nil {
		s.err = err
	}
	return n, err
}

// campaignStopped is a campaign's interruption, which its stored trials
// let it go on from, by the resume command; compare, doctor and bench
// store nothing to go on from.
type campaignStopped struct {
	error
	resume string
}

func (e campaignStopped) Unwrap() error { return e.error }

// strict makes every command refuse what it would otherwise ignore: an
// argument to a command that takes none (`nccltune run space.toml` would run
// the built-in example, and flags after it would be dropped unread), an
// unknown subcommand (urfave/cli's exit 3 without a word), and an empty
// text flag, save emptySays (a script's unset "$SPACE": run would run the
// built-in example, the others do without a space, read the most recent
// campaign, write into the working folder or to standard output, name the
// default plugin, search with the space's sampler or compile with cc).
func strict(commands []*cli.Command, onUsageError cli.OnUsageErrorFunc, path ...string) {
	for _, c := range commands {
		c.OnUsageError = onUsageError
		for i, f := range c.Flags {
			switch f := f.(type) {
			case *cli.IntFlag:
				c.Flags[i] = decimalInt{f}
			case *cli.Int64Flag:
				c.Flags[i] = decimalInt64{f}
			}
		}
		switch {
		case len(c.Subcommands) > 0:
			under := append(slices.Clip(path), c.Name)
			strict(c.Subcommands, onUsageError, under...)
			c.Subcommands = append(c.Subcommands, helpCommand(under...))
			if c.Action == nil {
				c.Action = func(ctx *cli.Context) error {
					if ctx.Args().Present() {
						return usageError{fmt.Errorf("no command %q under %s; see %s --help", ctx.Args().First(), ctx.Command.HelpName, ctx.Command.HelpName)}
					}
					return cli.ShowSubcommandHelp(ctx)
				}
			}
		case !c.SkipFlagParsing:
			takesArgs := c.ArgsUsage != ""
			c.Before = func(ctx *cli.Context) error {
				for _, f := range ctx.Command.Flags {
					name := f.Names()[0]
					if _, text := f.(*cli.StringFlag); text && !emptySays[name] && ctx.IsSet(name) && ctx.String(name) == "" {
						return usageError{fmt.Errorf("--%s is empty; leave the flag out for its default", name)}
					}
				}
				if takesArgs || !ctx.Args().Present() {
					return nil
				}
				arg, hint := ctx.Args().First(), ""
				if strings.HasSuffix(arg, ".toml") && slices.ContainsFunc(ctx.Command.Flags, func(f cli.Flag) bool { return slices.Contains(f.Names(), "space") }) {
					hint = fmt.Sprintf("; did you mean --space %s?", shellJoin([]string{arg}))
				}
				return usageError{fmt.Errorf("%s takes no arguments, only flags, and %q is not a flag%s", ctx.Command.HelpName, arg, hint)}
			}
		}
	}
}

// emptySays are the text flags whose empty value says something: doctor
// --python "" skips the framework check, bench search --scenarios "" runs
// the generated landscapes alone.
var emptySays = map[string]bool{"python": true, "scenarios": true}

// decimalInt and decimalInt64 read an integer flag in decimal, as the
// space file's integers are: Go's flag package, which urfave/cli parses
// with, reads a leading 0 as octal (--rounds 01001 was 513 rounds) and 0x
// as hexadecimal.
type decimalInt struct{ *cli.IntFlag }
type decimalInt64 struct{ *cli.Int64Flag }

func (f decimalInt) Apply(set *flag.FlagSet) error   { return decimalize(set, f.IntFlag) }
func (f decimalInt64) Apply(set *flag.FlagSet) error { return decimalize(set, f.Int64Flag) }

// decimalize applies f to set, each of its names then read by one decimal.
func decimalize(set *flag.FlagSet, f cli.Flag) error {
	if err := f.Apply(set); err != nil {
		return err
	}
	d := new(decimal)
	for _, name := range f.Names() {
		fl := set.Lookup(name)
		if err := d.Set(fl.Value.String()); err != nil { // the default
			return err
		}
		fl.Value = d
	}
	return nil
}

// decimal is a flag.Value of an integer written in decimal. urfave/cli
// reads the flag's value back from String.
type decimal int64

func (d *decimal) Set(s string) error {
	n, err := text.Integer(s)
	if err != nil {
		return err
	}
	*d = decimal(n)
	return nil
}

func (d *decimal) String() string { return strconv.FormatInt(int64(*d), 10) }

// writeJSON writes v as indented JSON, for --json, with no character
// that is not graphic raw in it (text.JSON): its strings quote stores and
// benchmarks' output, and scripts print them.
func writeJSON(w io.Writer, v any) error {
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := io.WriteString(w, text.JSON(buf.String()))
	return err
}

// interruptible is read's result, or ctx's error where a stop signal comes
// first: the read, left to itself as nccltune exits, may wait for good (a
// named pipe's opening waits for its writer, --space <(cmd) of a command
// that hangs; closing a file ends no read under way of a standard input
// the shell opened blocking), and a Ctrl-C must not wait out stopWait. A
// panic of read's is raised here, where runApp recovers it.
func interruptible[T any](ctx context.Context, read func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	panics := make(chan safego.Panic)
	safego.Go(panics, func() {
		v, err := read()
		done <- result{v, err}
	})
	select {
	case p := <-panics:
		panic(p)
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		var none T
		return none, ctx.Err()
	}
}

// list is s, or an empty list where s is nil: --json writes [] for none,
// never null, which a script iterating the list fails on.
func list[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func newApp() *cli.App {
	onUsageError := func(c *cli.Context, err error, _ bool) error { return usageError{flagHint(c, err)} }
	commands := []*cli.Command{runCommand(), resumeCommand(), validateCommand(), statusCommand(), showCommand(), reportCommand(), exportCommand(), compareCommand(), doctorCommand(), benchCommand(), profileCommand(), pluginCommand(), simCommand(), helpCommand()}
	strict(commands, onUsageError)
	return &cli.App{
		Name:  "nccltune",
		Usage: "tune NCCL's environment for your cluster, one message-size range at a time",
		Description: "Runs nccl-tests with configurations proposed by a Bayesian search (a Gaussian process,\n" +
			"then it and TPE in turn), keeps every trial in a SQLite store, and exports the best NCCL_*\n" +
			"settings per size range.\n\n" +
			"Exit codes: 0 success, 1 failure, 2 usage error, 70 internal error (a bug), 130 interrupted (resume with `run`).",
		HideVersion: true,
		// The help command above keeps urfave/cli from defining --help and
		// -h for the app itself; without them `nccltune --help` was an
		// unknown flag.
		Flags:        []cli.Flag{cli.HelpFlag},
		OnUsageError: onUsageError,
		// `COMMAND -h ARG`: urfave/cli takes ARG for a help topic, which it
		// looks for among the commands, and exited 3 without one. -h asks
		// for the command's own help. `nccltune -h ARG`, where ARG is no
		// command, is `nccltune help ARG`'s usage error, which run returns
		// (a CommandNotFound returns none).
		CommandNotFound: func(c *cli.Context, topic string) {
			if lineage := c.Lineage(); len(lineage) > 1 && lineage[1].Command != nil {
				_ = cli.ShowCommandHelp(lineage[1], c.Command.Name)
				return
			}
			c.App.Metadata[noHelpTopic] = noCommand(topic)
		},
		ExitErrHandler: func(*cli.Context, error) {},
		Commands:       commands,
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return noCommand(c.Args().First())
			}
			return cli.ShowAppHelp(c)
		},
	}
}

// helpCommand answers `nccltune [PATH] help [COMMAND [SUBCOMMAND]]` as
// `nccltune [PATH] COMMAND SUBCOMMAND --help`, so that both say the same:
// urfave/cli's own listed no subcommands under `help bench`, gave bench's
// help for `help bench search`, and exited 0 (`bench help serch`) or 3
// (`help serch`) for an unknown topic, where the app's usage error is 2.
func helpCommand(path ...string) *cli.Command {
	return &cli.Command{
		Name:            "help",
		Aliases:         []string{"h"},
		Usage:           "show the commands, or one command's help",
		ArgsUsage:       "[COMMAND [SUBCOMMAND]]",
		SkipFlagParsing: true,
		Action: func(c *cli.Context) error {
			args := append([]string{c.App.Name}, path...)
			if c.Args().Present() && !strings.HasPrefix(c.Args().First(), "-") { // not help -h
				args = append(args, c.Args().Slice()...)
			}
			return c.App.RunContext(c.Context, append(args, "--help"))
		},
	}
}

var storeFlag = &cli.StringFlag{Name: "store", Value: "nccltune.db", Usage: "SQLite trial store `FILE`"}
var campaignFlag = &cli.StringFlag{Name: "campaign", Usage: "campaign `NAME` in the store (default: the most recent)"}

// flagHint rewords urfave/cli's "flag provided but not defined: -trails"
// (one dash, whatever the user typed) to name the flag as the help does,
// the nearest one it knows, and where to see them all; an error of a flag's
// value names the flag as the help does too.
func flagHint(c *cli.Context, err error) error {
	if m := flagValueError.FindStringSubmatch(err.Error()); m != nil {
		return errors.New(m[1] + dashed(m[2]) + m[3])
	}
	name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
	if !ok || c == nil || c.Command == nil {
		return err
	}
	name = strings.TrimLeft(name, "-")
	msg := "unknown flag " + dashed(name)
	if c.Command.HelpName == "" || c.App != nil && c.Command.HelpName == c.App.Name { // before any command: nccltune --store x status
		if c.App != nil && !takenBy(c.App.Commands, name) { // nccltune --version
			return fmt.Errorf("%s: no command takes it (nccltune --help lists the commands)", msg)
		}
		return fmt.Errorf("%s: flags go after the command they belong to (nccltune COMMAND --help lists them)", msg)
	}
	var names []string
	for _, f := range c.Command.Flags {
		names = append(names, f.Names()...)
	}
	if best := text.Nearest(name, names); best != "" {
		msg += fmt.Sprintf("; did you mean %s?", dashed(best))
	}
	return fmt.Errorf("%s (%s --help lists them)", msg, c.Command.HelpName)
}

// takenBy reports whether one of commands, or of their subcommands, has
// the flag name.
func takenBy(commands []*cli.Command, name string) bool {
	return slices.ContainsFunc(commands, func(c *cli.Command) bool {
		return takenBy(c.Subcommands, name) || slices.ContainsFunc(c.Flags, func(f cli.Flag) bool { return slices.Contains(f.Names(), name) })
	})
}

// flagValueError matches Go's flag package's errors of a flag's bad or
// missing value, which name it with one dash (-trials) whatever the user
// typed: the flag's name, between what comes before and after it.
var flagValueError = regexp.MustCompile(`^(invalid (?:boolean )?value "(?:[^"\\]|\\.)*" for |flag needs an argument: )(?:flag )?-([^\s:]+)(.*)$`)

// dashed is a flag's name as the help writes it: -q, --quiet.
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}
