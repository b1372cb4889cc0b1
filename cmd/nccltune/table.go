package main

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/rivo/uniseg"

	"github.com/nccltune/nccltune/internal/text"
)

// table lines up tab-terminated cells in columns as text/tabwriter does
// (each column as wide as its widest cell, plus two spaces, over a block
// of consecutive lines that have it; what follows a line's last tab is
// not aligned), but measures a cell as wide as a terminal shows it:
// tabwriter counts runes, so a cell of characters two columns wide (a
// metric's unit in Chinese) or of a combining accent put the columns
// after it out of line.
type table struct {
	w    io.Writer
	left bool // cells aligned left; right otherwise
	buf  bytes.Buffer
}

// row writes cells as one line of a table on w, each escaped whole
// (text.Clean): a tab or a newline in a cell's text (a stored name, a
// node's output) split it into two cells or two lines. An empty last cell
// aligns the one before it.
func row(w io.Writer, cells ...string) {
	for i, c := range cells {
		cells[i] = text.Clean(c)
	}
	fmt.Fprintln(w, strings.Join(cells, "\t"))
}

// newTable is a table of right-aligned cells on w.
func newTable(w io.Writer) *table { return &table{w: w} }

func (t *table) Write(p []byte) (int, error) { return t.buf.Write(p) }

// Flush writes what was written since the last Flush, aligned.
func (t *table) Flush() error {
	lines := strings.SplitAfter(t.buf.String(), "\n")
	t.buf.Reset()
	cells := make([][]string, len(lines))
	for i, l := range lines {
		// Escaped as the terminal's writer would escape them after the
		// table (a control character as \u001b), so measured as shown.
		cells[i] = strings.Split(strings.TrimSuffix(l, "\n"), "\t")
		for c, cell := range cells[i] {
			cells[i][c] = text.Clean(cell)
		}
	}
	// widths[i][c]: column c's width in line i's block of it.
	widths := make([][]int, len(lines))
	for c, more := 0, true; more; c++ {
		more = false
		for i := 0; i < len(cells); {
			if c >= len(cells[i])-1 {
				i++
				continue
			}
			more = true
			end, width := i, 0
			for ; end < len(cells) && c < len(cells[end])-1; end++ {
				width = max(width, uniseg.StringWidth(cells[end][c])+2)
			}
			for ; i < end; i++ {
				widths[i] = append(widths[i], width)
			}
		}
	}
	var b strings.Builder
	for i, line := range cells {
		for c, cell := range line {
			if c == len(line)-1 {
				b.WriteString(cell)
				break
			}
			pad := strings.Repeat(" ", widths[i][c]-uniseg.StringWidth(cell))
			if t.left {
				b.WriteString(cell + pad)
			} else {
				b.WriteString(pad + cell)
			}
		}
		if strings.HasSuffix(lines[i], "\n") {
			b.WriteByte('\n')
		}
	}
	_, err := io.WriteString(t.w, b.String())
	return err
}
