package workload

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"
	"unicode/utf8"

	"github.com/nccltune/nccltune/internal/text"
	"github.com/nccltune/nccltune/space"
)

// WriteTOML writes the workload as the [[workload]] tables of a space
// file, under comments that say where it came from.
func (w *Workload) WriteTOML(out io.Writer) error {
	bw := bufio.NewWriter(out)
	from := ""
	if w.Source.File != "" {
		from = " from " + printable(w.Source.File)
	}
	version := "NCCL version not logged"
	if w.NCCLVersion != "" {
		version = "NCCL " + w.NCCLVersion
	}
	var calls int64
	for _, e := range w.Entries {
		calls += e.Count
	}
	fmt.Fprintf(bw, "# written by nccltune profile%s (%s): %s, %s, %s\n", from, version,
		text.Count(len(w.Summary()), "collective", "collectives"), text.Count(len(w.Entries), "size", "sizes"), text.Count(calls, "call", "calls"))
	for _, c := range w.Source.Comms {
		fmt.Fprintf(bw, "# communicators of %s: %s, counted %s", text.Count(c.Ranks, "rank", "ranks"), text.Count(c.Processes, "process", "processes"), printable(c.Process))
		if c.Fewest < c.Calls {
			fmt.Fprintf(bw, " (%s; the fewest of any process %d)", text.Count(c.Calls, "call", "calls"), c.Fewest)
		}
		fmt.Fprintln(bw)
	}
	for _, line := range w.caveats() {
		fmt.Fprintf(bw, "# %s\n", line)
	}
	for _, e := range w.Entries {
		fmt.Fprintf(bw, "\n[[workload]]\ncollective = %q\nsize = %q\ncount = %d\n", e.Collective, space.FormatSize(e.Bytes), e.Count)
		if e.Ranks > 0 {
			fmt.Fprintf(bw, "ranks = %d\n", e.Ranks)
		}
	}
	return bw.Flush()
}

// caveats says, a line each, which calls of the log the workload leaves out
// or measures at another size than they moved.
func (w *Workload) caveats() []string {
	var out []string
	calls := func(m map[string]int64) string {
		var list []string
		for _, name := range slices.Sorted(maps.Keys(m)) {
			list = append(list, fmt.Sprintf("%s %d", printable(name), m[name]))
		}
		return strings.Join(list, ", ")
	}
	if len(w.Source.Unmeasured) > 0 {
		out = append(out, "left out, as no nccltune benchmark measures them: calls of "+calls(w.Source.Unmeasured))
	}
	if len(w.Source.Empty) > 0 {
		out = append(out, "left out, as they move no byte (count 0): calls of "+calls(w.Source.Empty))
	}
	if len(w.Source.Oversize) > 0 {
		out = append(out, fmt.Sprintf("measured at %s, the largest size a space takes, each as one call per %s it moves (rounded up): calls of %s",
			space.FormatSize(space.MaxSize), space.FormatSize(space.MaxSize), calls(w.Source.Oversize)))
	}
	for _, c := range w.Source.Comms {
		if c.Communicators > 1 {
			out = append(out, fmt.Sprintf("the counted process called on %d communicators of %s (tensor- and data-parallel groups of one size, say): their calls are added up, and a campaign measures them all on the one layout of ranks it launches, though the groups may span nodes differently",
				c.Communicators, text.Count(c.Ranks, "rank", "ranks")))
		}
	}
	if m := w.Source.Malformed; m > 0 {
		out = append(out, fmt.Sprintf("left out, as they could not be read: %s (the first: %s)", text.Count(m, "COLL line", "COLL lines"), printable(w.Source.FirstMalformed)))
	}
	return out
}

// printable returns s, quoted if it has characters a TOML comment cannot
// hold (the names come from the log): control characters, and bytes that
// are not UTF-8, which IndexFunc reads as U+FFFD, a printable rune, and a
// TOML file may not hold anywhere.
func printable(s string) string {
	if !utf8.ValidString(s) || strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		return strconv.Quote(s)
	}
	return s
}

// Share is one collective's part of a workload.
type Share struct {
	Collective string
	Calls      int64
	Bytes      float64 // the sum of size × count, in nccl-tests sizes
	Fraction   float64 // of the workload's bytes
}

// Summary returns each collective's share of the workload, largest first.
func (w *Workload) Summary() []Share {
	byName := map[string]*Share{}
	var total float64
	for _, e := range w.Entries {
		s := byName[e.Collective]
		if s == nil {
			s = &Share{Collective: e.Collective}
			byName[e.Collective] = s
		}
		b := float64(e.Bytes) * float64(e.Count)
		s.Calls += e.Count
		s.Bytes += b
		total += b
	}
	out := make([]Share, 0, len(byName))
	for _, s := range byName {
		if total > 0 {
			s.Fraction = s.Bytes / total
		}
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b Share) int {
		return cmp.Or(cmp.Compare(b.Bytes, a.Bytes), cmp.Compare(a.Collective, b.Collective))
	})
	return out
}

// WriteSummary writes Summary as a table, with a total.
func (w *Workload) WriteSummary(out io.Writer) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	const row = "%s\t%10s\t%12s\t%6s\n"
	fmt.Fprintf(tw, row, "collective", "calls", "bytes moved", "share")
	var calls int64
	var bytes float64
	for _, s := range w.Summary() {
		fmt.Fprintf(tw, row, s.Collective, strconv.FormatInt(s.Calls, 10), humanBytes(s.Bytes), fmt.Sprintf("%.1f%%", 100*s.Fraction))
		calls += s.Calls
		bytes += s.Bytes
	}
	fmt.Fprintf(tw, "%s\t%10d\t%12s\n", "total", calls, humanBytes(bytes))
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, line := range w.caveats() {
		if _, err := fmt.Fprintln(out, line); err != nil {
			return err
		}
	}
	return nil
}

// humanBytes writes n bytes in binary units: "75.0 GiB".
func humanBytes(n float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	i := 0
	for n >= 1024 && i < len(units)-1 {
		n /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%.0f B", n)
	}
	return fmt.Sprintf("%.1f %s", n, units[i])
}
