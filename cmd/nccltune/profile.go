package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/nccltune/nccltune/internal/atomicfile"
	"github.com/nccltune/nccltune/space"
	"github.com/nccltune/nccltune/workload"
)

func profileCommand() *cli.Command {
	return &cli.Command{
		Name:      "profile",
		Usage:     "read a job's NCCL log and write its workload: the collectives, sizes and calls it made",
		ArgsUsage: "LOG",
		Description: "Run the job once with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL and give its log: its standard\n" +
			"output, where NCCL logs, or the files NCCL_DEBUG_FILE=nccl.%h.%p.log names, one a process (every\n" +
			"rank's, or rank 0's; gzip is read as it is, zstd, xz, bzip2, lz4 and zip are not; - reads standard\n" +
			"input). profile writes the [[workload]] tables of a space file, per collective and message size\n" +
			"the calls of one rank, and a summary of each collective's share on standard error. With a\n" +
			"workload, a campaign measures every collective it names and scores a configuration by the\n" +
			"job's predicted communication time.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "out", Usage: "write the [[workload]] tables to `FILE` (default: standard output)"},
			&cli.IntFlag{Name: "ranks", Usage: "keep the calls of communicators of `N` ranks only (a campaign measures one size)"},
			&cli.BoolFlag{Name: "json", Usage: "print the workload as JSON instead"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageError{fmt.Errorf("profile needs one log file (or - for standard input), after the flags")}
			}
			if out := c.String("out"); out != "" && isLog(out, c.Args().First()) {
				return usageError{fmt.Errorf("--out %s is the log it reads, which the tables would replace", out)}
			}
			ranks := c.Int("ranks")
			if c.IsSet("ranks") && ranks < 1 {
				return usageError{fmt.Errorf("--ranks must be a communicator's rank count, 1 or more, not %d", ranks)}
			}
			// Of a log of many gigabytes, or of a pipe or terminal that waits.
			w, err := interruptible(c.Context, func() (*workload.Workload, error) { return readLog(c.Args().First()) })
			if err != nil {
				return err
			}
			w.Source.File = c.Args().First()
			if ranks > 0 {
				if err := w.Keep(ranks); err != nil {
					return fmt.Errorf("%s: %w", c.Args().First(), err)
				}
			} else if sizes := w.CommSizes(); len(sizes) > 1 && !c.Bool("json") {
				// A space's workload is of one communicator size: the tables would not load.
				return fmt.Errorf("%s: the job called collectives on communicators of %s ranks, and a campaign measures one size: profile again with --ranks N, one of them (--json shows them all)",
					c.Args().First(), strings.Join(sizes, ", "))
			}
			data, err := render(w, c.Bool("json"))
			if err != nil {
				return err
			}
			if err := writeOut(c.String("out"), data); err != nil {
				return err
			}
			if c.Bool("json") {
				return nil
			}
			return w.WriteSummary(os.Stderr)
		},
	}
}

// readLog reads the NCCL log file name, or standard input for "-".
func readLog(name string) (*workload.Workload, error) {
	in := os.Stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		in = f
	}
	w, err := workload.Read(in)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return w, nil
}

// isLog reports whether out is the regular file that log names (standard
// input for "-"), under another name or through a link.
func isLog(out, log string) bool {
	o, err := os.Stat(out)
	if err != nil || !o.Mode().IsRegular() {
		return false
	}
	var l os.FileInfo
	if log == "-" {
		l, err = os.Stdin.Stat()
	} else {
		l, err = os.Stat(log)
	}
	return err == nil && os.SameFile(o, l)
}

// render returns w as JSON, or as [[workload]] tables loaded first as a
// space would load them: they are for a space file, and tables it refused
// would be profile's bug, not the user's to find at the campaign's start.
func render(w *workload.Workload, asJSON bool) ([]byte, error) {
	var buf bytes.Buffer
	if asJSON {
		err := writeJSON(&buf, w)
		return buf.Bytes(), err
	}
	if err := w.WriteTOML(&buf); err != nil {
		return nil, err
	}
	if buf.Len() > space.MaxFile {
		return nil, fmt.Errorf("the tables of %d sizes would be %.1f MiB, over the %d MiB a space file may be: the job's calls vary in size from call to call (an alltoall of uneven splits?), which no campaign measures one by one; --json writes them all",
			len(w.Entries), float64(buf.Len())/(1<<20), space.MaxFile>>20)
	}
	if _, err := space.ParseWorkload("the [[workload]] tables", buf.Bytes()); err != nil {
		return nil, fmt.Errorf("bug: profile wrote [[workload]] tables that a space does not load (so it wrote none); please report it with the log:\n%w", err)
	}
	return buf.Bytes(), nil
}

// writeOut writes data to the file path, whole or not at all (a full disk
// leaves the old file, and profile fails), or to standard output without one.
func writeOut(path string, data []byte) error {
	if path == "" {
		_, err := os.Stdout.Write(data)
		return err
	}
	if err := atomicfile.Write(path, data, 0o666); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
