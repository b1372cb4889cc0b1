package main

import (
	"strings"
	"testing"
)

// TestHelpCommand: `nccltune help COMMAND [SUBCOMMAND]` is that command's
// --help, and an unknown topic is a usage error. urfave/cli's own help
// command listed no subcommands under `help bench`, gave bench's help for
// `help bench search`, and exited 3, no code the README documents, for
// `help bogus`; a command's own, `nccltune bench help serch`, still did
// (exit 0, with bench's help). `nccltune --help` and `nccltune -h` printed nothing and
// exited 2 ("flag: help requested"): the app's own help command kept
// urfave/cli from defining its --help flag.
func TestHelpCommand(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"help"}, 0, "COMMANDS:"},
		{[]string{"--help"}, 0, "COMMANDS:"},
		{[]string{"-h"}, 0, "COMMANDS:"},
		{[]string{"help", "--help"}, 0, "COMMANDS:"},
		{[]string{"help", "-h"}, 0, "COMMANDS:"},
		{[]string{"help", "run"}, 0, "--validate-rounds"},
		{[]string{"h", "status"}, 0, "nccltune status - "},
		{[]string{"help", "bench"}, 0, "groups"},
		{[]string{"help", "bench", "search"}, 0, "--samplers"},
		{[]string{"help", "plugin", "build"}, 0, "--cc"},
		{[]string{"help", "bogus"}, 2, `no command "bogus"`},
		{[]string{"help", "bench", "serch"}, 2, `no command "serch" under nccltune bench`},
		{[]string{"bench", "help"}, 0, "groups"},
		{[]string{"bench", "h", "search"}, 0, "--samplers"},
		{[]string{"plugin", "help", "build"}, 0, "--cc"},
		{[]string{"bench", "help", "serch"}, 2, `no command "serch" under nccltune bench`},
	} {
		code, out, errOut := nccltune(t, dir, tc.args...)
		if code != tc.code || !strings.Contains(out+errOut, tc.want) {
			t.Errorf("nccltune %v: exit %d, want %d and %q in\n%s%s", tc.args, code, tc.code, tc.want, out, errOut)
		}
	}
}

// TestSimHelpOnStandardOutput: `nccltune sim --help`, as every other
// command's, prints on standard output (`| less` showed nothing) and exits
// 0; a bad flag is still told on standard error.
func TestSimHelpOnStandardOutput(t *testing.T) {
	dir := t.TempDir()
	for _, flag := range []string{"-h", "--help"} {
		code, out, errOut := nccltune(t, dir, "sim", flag)
		if code != 0 || !strings.Contains(out, "-fabric") || errOut != "" {
			t.Errorf("nccltune sim %s: exit %d\nstdout %q\nstderr %q", flag, code, out, errOut)
		}
	}
	code, out, errOut := nccltune(t, dir, "sim", "-bogus", "all_reduce_perf")
	if code != 1 || out != "" || !strings.Contains(errOut, "-bogus") {
		t.Errorf("nccltune sim -bogus: exit %d\nstdout %q\nstderr %q", code, out, errOut)
	}
}

// TestHelpFlagBeforeArguments: `nccltune COMMAND -h ARG` shows the
// command's help and exits 0, as `COMMAND -h` does; urfave/cli took ARG for
// a help topic and exited 3, a code the README does not document, with
// "No help topic for 'ARG'" (show -h 5, compare --help a.env b.env).
func TestHelpFlagBeforeArguments(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"show", "-h", "5"}, "nccltune show - "},
		{[]string{"compare", "--help", "a.env", "b.env"}, "nccltune compare - "},
		{[]string{"profile", "-h", "job.log"}, "nccltune profile - "},
		{[]string{"status", "-h", "run"}, "nccltune status - "},
		{[]string{"bench", "search", "-h", "extra"}, "--samplers"},
		{[]string{"bench", "-h", "extra"}, "search"},
	} {
		code, out, errOut := nccltune(t, dir, tc.args...)
		if code != 0 || !strings.Contains(out, tc.want) {
			t.Errorf("nccltune %v: exit %d, want 0 and %q in\n%s%s", tc.args, code, tc.want, out, errOut)
		}
	}
}

// TestAppHelpFlagWithAnUnknownTopic: `nccltune -h TOPIC` where TOPIC is no
// command is the usage error `nccltune help TOPIC` gives (exit 2); it
// crashed on a nil pointer (the app's context has no parent command), a
// goroutine dump on standard error.
func TestAppHelpFlagWithAnUnknownTopic(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{{"-h", "serch"}, {"--help", "serch"}, {"help", "serch"}} {
		code, out, errOut := nccltune(t, dir, args...)
		if code != 2 || !strings.Contains(errOut, `no command "serch"`) || strings.Contains(errOut, "panic") {
			t.Errorf("nccltune %v: exit %d\nstdout %q\nstderr %q", args, code, out, errOut)
		}
	}
}

// TestIntegerFlagsAreDecimal: an integer flag is read in decimal, as the
// space file's integers are: Go's flag package read a leading 0 as octal
// (--rounds 01001 was 513 rounds, --trials 010 eight trials) and took 0x
// hexadecimal.
func TestIntegerFlagsAreDecimal(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"validate", "--store", "none.db", "--rounds", "01001"}, "not 1001"},
		{[]string{"validate", "--store", "none.db", "--rounds=01001"}, "not 1001"},
		{[]string{"run", "--trials", "0x10"}, `invalid value "0x10" for --trials`},
		{[]string{"bench", "job", "--seeds", "0_1"}, `invalid value "0_1" for --seeds`},
		{[]string{"run", "--trials", "99999999999999999999"}, "out of range"},
	} {
		code, out, errOut := nccltune(t, dir, tc.args...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("nccltune %v: exit %d, want 2 and %q\n%s%s", tc.args, code, tc.want, out, errOut)
		}
	}
}
