package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal: its controller, and the terminal a
// child writes to.
func openPTY(t *testing.T) (controller, terminal *os.File) {
	t.Helper()
	c, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skip("no pseudo-terminal:", err)
	}
	if err := unix.IoctlSetPointerInt(int(c.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Skip("no pseudo-terminal:", err)
	}
	n, err := unix.IoctlGetInt(int(c.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Skip("no pseudo-terminal:", err)
	}
	tty, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skip("no pseudo-terminal:", err)
	}
	t.Cleanup(func() { c.Close(); tty.Close() })
	return c, tty
}

// runOnTerminal runs nccltune with args in dir, its standard output and
// error the terminal tty whose controller is controller, TERM term, and
// returns what the terminal showed.
func runOnTerminal(dir string, controller, tty *os.File, term string, args ...string) (string, error) {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, tty, tty
	cmd.Env = append(os.Environ(), "TERM="+term)
	var out bytes.Buffer
	read := make(chan struct{})
	go func() { io.Copy(&out, controller); close(read) }()
	err := cmd.Run()
	tty.Close()
	<-read
	return out.String(), err
}

// TestProgressBarLeavesNoLineOnIt: on a terminal, what follows the
// progress bar starts on a line of its own. A campaign that stopped short
// of its budget (patience here) left the bar unfinished, so not cleared,
// and the next line (the simplification's first trial, a validation run,
// the status table) began where the bar ended: "(11/60) [0s:3s]simplifying".
func TestProgressBarLeavesNoLineOnIt(t *testing.T) {
	dir := t.TempDir()
	spaceFile := patientSpace(t, dir)
	barEnd := regexp.MustCompile(`\[\d+s:\d+s\] *[^\r\n ]`)
	for _, args := range [][]string{{"--no-simplify", "--no-validate"}, {"--no-validate"}, {"--no-simplify", "--validate-rounds", "2"}} {
		os.Remove(filepath.Join(dir, "nccltune.db"))
		controller, tty := openPTY(t)
		out, err := runOnTerminal(dir, controller, tty, "xterm", append([]string{"run", "--space", spaceFile}, args...)...) // a bar, wherever the test runs
		if err != nil {
			t.Fatalf("run %v: %v\n%s", args, err, out)
		}
		if !strings.Contains(out, "(1/60)") {
			t.Fatalf("run %v showed no bar:\n%q", args, out)
		}
		if m := barEnd.FindString(out); m != "" {
			t.Errorf("run %v: a line began on the bar: %q", args, m)
		}
	}
}

// TestProgressBarFitsTheTerminal: each line the bar draws over fits the
// terminal's width. The bar's line, each range's best and the counts, was
// longer than a narrow terminal (or than any, with long range names): it
// wrapped, and each redraw, which returns to the start of the last row
// only, left the rows above it on the screen, one more each trial.
func TestProgressBarFitsTheTerminal(t *testing.T) {
	dir := t.TempDir()
	wholeWords := regexp.MustCompile(`^best( [a-z]+ [0-9.]+)*( [a-z]+)?( GB/s| \.\.\.) +[0-9]+% \|`)
	for _, cols := range []uint16{10, 50, 60} {
		os.Remove(filepath.Join(dir, "nccltune.db"))
		controller, tty := openPTY(t)
		if err := unix.IoctlSetWinsize(int(tty.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: cols}); err != nil {
			t.Skip("no window size:", err)
		}
		out, err := runOnTerminal(dir, controller, tty, "xterm", "run", "--trials", "6", "--no-simplify", "--no-validate")
		if err != nil {
			t.Fatalf("run at %d columns: %v\n%s", cols, err, out)
		}
		if !strings.Contains(out, "(1/6)") {
			t.Fatalf("run at %d columns showed no progress:\n%q", cols, out)
		}
		if bar := strings.Contains(out, "| (1/6)"); bar != (cols > 10) { // room for the counts, or not
			t.Errorf("run at %d columns: bar shown %v:\n%q", cols, bar, out)
		}
		// The terminal ends each line with "\r\n".
		for _, line := range strings.Split(strings.ReplaceAll(out, "\r\n", "\n"), "\n") {
			drawn := strings.Split(line, "\r")
			for _, over := range drawn[:len(drawn)-1] { // each drawn over by the next
				if w := utf8.RuneCountInString(over); w > int(cols) {
					t.Errorf("at %d columns, %d drawn over: %q", cols, w, over)
				}
				// A description cut inside a number would show a smaller one.
				if strings.Contains(over, "| (") && !wholeWords.MatchString(over) {
					t.Errorf("at %d columns, the bar's description is cut inside a word: %q", cols, over)
				}
			}
		}
	}
}

// TestNoProgressBarOnADumbTerminal: a terminal that says it is dumb
// (TERM=dumb: Emacs's shell, some CI consoles), which may not return to a
// line's start, gets one line per trial, as a file does; it got the bar,
// each redraw its own line of bar there.
func TestNoProgressBarOnADumbTerminal(t *testing.T) {
	dir := t.TempDir()
	controller, tty := openPTY(t)
	got, err := runOnTerminal(dir, controller, tty, "dumb", "run", "--trials", "4", "--no-simplify", "--no-validate")
	if err != nil {
		t.Fatalf("run: %v\n%s", err, got)
	}
	if !strings.Contains(got, "trial 3 (4/4)") || strings.Contains(strings.ReplaceAll(got, "\r\n", "\n"), "\r") {
		t.Errorf("run on TERM=dumb:\n%q", got)
	}
}
