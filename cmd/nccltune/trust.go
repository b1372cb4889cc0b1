package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/nccltune/nccltune/space"
)

// ownSpaceFlag names the user's own space file, for the commands that launch
// trials of a stored campaign (validate, resume).
var ownSpaceFlag = &cli.StringFlag{Name: "space", Usage: "the space `FILE` the campaign ran with; needed when it starts a program (a benchmark binary, command, interpreter or launcher): nccltune never starts one that only the store names"}

// ownSpace is the space whose trials validate and resume launch: the user's
// --space file, which must measure what the stored campaign measured, or,
// without it, the store's copy when that starts no program but nccltune's
// own simulated cluster. A store can be edited by anyone who can write it;
// a program it names is not run (see the README's threat model).
func ownSpace(c *cli.Context, l *loaded) (*space.Space, error) {
	own, err := userSpace(c, l)
	if err != nil || own != nil {
		return own, err
	}
	if err := startsNothing(l, "give the space file the campaign ran with, --space FILE"); err != nil {
		return nil, err
	}
	return l.family, nil
}

// startsNothing refuses to launch the stored campaign's own space where it
// starts a program: what validate, resume and compare launch without the
// user's --space file. advice says how the command takes that file.
func startsNothing(l *loaded, advice string) error {
	if progs := l.family.Programs(); len(progs) > 0 {
		return fmt.Errorf("campaign %s: its stored space starts %s; nccltune does not start a program that only a store names (anyone who can write the store could have put it there): %s",
			l.camp.Name, strings.Join(progs, ", "), advice)
	}
	if rel := l.family.RelativePaths(); len(rel) > 0 {
		return fmt.Errorf("campaign %s: its stored space names %s, relative to the space file's directory, which the store does not record: %s",
			l.camp.Name, strings.Join(rel, ", "), advice)
	}
	return nil
}

// userSpace is the user's --space file (nil without one), which must be the
// space the stored campaign ran with.
func userSpace(c *cli.Context, l *loaded) (*space.Space, error) {
	path := c.String("space")
	if path == "" {
		return nil, nil
	}
	own, err := loadSpaceFile(c.Context, path)
	if err != nil {
		return nil, err
	}
	// The stored copy's relative paths are its file's directory's, which the
	// store does not record: the file given is that file, where it is now.
	stored, _, err := space.ParseStoredIn(own.Dir, l.camp.Name+" (as stored)", l.camp.Space)
	if err != nil {
		return nil, err
	}
	if diff := space.Diff(stored, own); len(diff) > 0 {
		return nil, fmt.Errorf("--space %s is not the space campaign %s ran with:\n  %s", path, l.camp.Name, strings.Join(diff, "\n  "))
	}
	return own, nil
}
