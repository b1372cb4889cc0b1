// Package mpitag joins the chunks of each rank's output that Open MPI's
// mpirun --tag-output passes on into that rank's lines, before anything
// reads them: a trial's output (runner), a job's NCCL log (workload).
package mpitag

import (
	"bytes"
	"io"
	"maps"
	"regexp"
	"slices"

	"github.com/nccltune/nccltune/runner/nccltests"
)

// Joiner joins each rank's chunks of output into its lines, where Open
// MPI's mpirun --tag-output tags them ("[1,0]<stdout>:", after
// --timestamp-output's time where given). Its mpirun 4.1 tags each chunk
// it reads of a rank's stdout or stderr, and again after each newline in
// it, not each line: a rank's line may come in several chunks, other
// ranks' chunks and lines between them, and a chunk may end without a
// newline. A rank's line is passed on when its newline comes (or a '\r',
// which ends a line for a progress bar's reader too: each of its values),
// whole, under its first chunk's tag, so that every reader of the output
// (a metric, nccl-tests' table, the DDP step's result, NCCL's log) reads it
// whole. Text outside a rank's chunk (untagged output, mpirun's own lines)
// passes on as it came. The zero Joiner is ready to use.
type Joiner struct {
	held    []byte           // the last write's end, which may begin a tag that the next one ends
	rank    string           // whose chunk the text now is ("[1,0]<stdout>"); "" outside one
	lines   map[string]*line // the ranks' unfinished lines
	pending int              // what they take (lineCost each)
	begun   int              // lines begun, which order them
}

// line is a rank's unfinished line.
type line struct {
	rank string // its key in Joiner.lines
	tag  []byte // its first chunk's
	text []byte
	// cut: it ran past MaxLine or MaxPending, and is dropped up to its
	// end (a newline, or a '\r' that more follows): no reader reads so
	// long a line, and one cut could be read as a shorter one ("ms: 1" of
	// "ms: 100").
	cut   bool
	begun int
}

const (
	// MaxLine bounds a rank's line: no reader reads a longer one.
	MaxLine = 64 << 10
	// MaxPending bounds what the ranks' unfinished lines hold together.
	MaxPending = 8 << 20
	// maxTag is longer than any tag nextTag reads: the time, and two
	// numbers of maxDigits (56 bytes).
	maxTag = 64
	// maxDigits bounds a tag's job and rank, which mpirun prints as
	// 32-bit unsigned numbers.
	maxDigits = 10
	// lineCost is what an unfinished line takes besides its text.
	lineCost = 64
)

// CutNote stands in the output for a rank's line that was cut. It holds no
// number, which a metric could read.
const CutNote = "[nccltune: this rank's line is left out, longer than a trial holds of one]"

// tagEnd is in each tag, and begins its end ("]<stdout>:").
var tagEnd = []byte("]<std")

// timeRE is --timestamp-output's time, as it begins a tag.
var timeRE = regexp.MustCompile(`^` + nccltests.MPIRunTime + `$`)

// timeLen is its length, as ctime writes it: "Sun Dec  6 14:45:56 2026".
const timeLen = 24

// Write passes p on to out, each rank's lines joined.
func (j *Joiner) Write(p []byte, out func([]byte)) {
	if len(j.held) > 0 {
		p = append(j.held, p...)
		j.held = nil
	}
	for len(p) > 0 {
		at, end, rank := nextTag(p)
		if at < 0 {
			// A tag that the next write ends begins past the last newline.
			n := min(len(p), maxTag-1, len(p)-1-bytes.LastIndexByte(p, '\n'))
			j.text(p[:len(p)-n], out)
			j.held = append([]byte(nil), p[len(p)-n:]...)
			return
		}
		j.text(p[:at], out)
		j.open(rank, p[at:end], out)
		p = p[end:]
	}
}

// nextTag finds the first whole tag in p, "[1,0]<stdout>:" after
// --timestamp-output's time where given: where it begins and ends, and the
// rank and stream it names ("[1,0]<stdout>"); at is -1 where p holds none.
// It reads a tag by hand, not by a regexp: mpirun tags every line.
func nextTag(p []byte) (at, end int, rank []byte) {
	for from := 0; ; from++ {
		i := bytes.Index(p[from:], tagEnd)
		if i < 0 {
			return -1, 0, nil
		}
		from += i
		end := from + len("]<stdout>:")
		if end > len(p) {
			return -1, 0, nil
		}
		if stream := string(p[from+len(tagEnd) : end]); stream != "out>:" && stream != "err>:" {
			continue
		}
		comma := digitsBefore(p, from)
		if comma <= 0 || comma == from || p[comma-1] != ',' {
			continue
		}
		open := digitsBefore(p, comma-1)
		if open <= 0 || open == comma-1 || p[open-1] != '[' {
			continue
		}
		at = open - 1
		if at >= timeLen && timeRE.Match(p[at-timeLen:at]) {
			at -= timeLen
		}
		return at, end, p[open-1 : end-1]
	}
}

// digitsBefore is where the digits that end p[:i] begin, of maxDigits at
// most: a longer number is no rank's or job's, and a tag of it would not fit
// in what Write holds of a write's end (maxTag), so that where a write was
// cut would decide whether it is a tag.
func digitsBefore(p []byte, i int) int {
	for end := i; i > 0 && end-i < maxDigits && p[i-1] >= '0' && p[i-1] <= '9'; {
		i--
	}
	return i
}

// open begins a chunk of rank's, tagged tag. A chunk that MaxPending
// leaves no room for passes on as it came.
func (j *Joiner) open(rank, tag []byte, out func([]byte)) {
	l := j.lines[string(rank)]
	if l == nil {
		if j.pending+len(tag)+lineCost > MaxPending {
			j.rank = ""
			out(tag)
			return
		}
		if j.lines == nil {
			j.lines = map[string]*line{}
		}
		l = &line{rank: string(rank), tag: slices.Clone(tag), begun: j.begun}
		j.lines[l.rank] = l
		j.begun++
		j.pending += len(tag) + lineCost
	}
	j.rank = l.rank
}

// text passes on b, text up to the next tag: the rank's chunk's, whose
// newline ends the rank's line and the chunk, or outside a chunk.
func (j *Joiner) text(b []byte, out func([]byte)) {
	for len(b) > 0 {
		if j.rank == "" {
			out(b)
			return
		}
		l := j.lines[j.rank]
		i := bytes.IndexByte(b, '\n') + 1
		if i == 0 {
			j.add(l, b, out)
			return
		}
		j.add(l, b[:i-1], out)
		j.pass(l, newline, out)
		delete(j.lines, j.rank)
		j.pending -= len(l.tag) + lineCost
		j.rank, b = "", b[i:]
	}
}

// add appends b, which holds no newline, to the rank's line. A '\r' ends
// it where more of the line follows, as it ends a line for a progress
// bar's reader: "\r\n" is one line's end.
func (j *Joiner) add(l *line, b []byte, out func([]byte)) {
	for len(b) > 0 {
		if n := len(l.text); n > 0 && l.text[n-1] == '\r' {
			j.pass(l, nil, out)
		}
		i := bytes.IndexByte(b, '\r') + 1
		if i == 0 {
			i = len(b)
		}
		switch {
		case l.cut:
		case len(l.text)+i > MaxLine || j.pending+i > MaxPending:
			l.cut = true
			j.pending -= len(l.text)
			l.text = nil
		default:
			l.text = append(l.text, b[:i]...)
			j.pending += i
		}
		if l.cut && b[i-1] == '\r' {
			// Its text is left out, not the '\r' that ends it: the values
			// after it are a progress bar's (lineCost holds it).
			l.text = append(l.text, '\r')
		}
		b = b[i:]
	}
}

// pass passes the rank's line on, or where it was cut a note that says so,
// then end, and empties it.
func (j *Joiner) pass(l *line, end []byte, out func([]byte)) {
	out(l.tag)
	if l.cut {
		out([]byte(CutNote))
	} else {
		j.pending -= len(l.text)
	}
	out(l.text) // a cut line's is the '\r' that ended it, if any
	out(end)
	l.text, l.cut = l.text[:0], false
}

var newline = []byte{'\n'}

// Flush passes on what the output left unfinished, the ranks' lines in
// the order they began, each ended: the output has ended.
func (j *Joiner) Flush(out func([]byte)) {
	held := j.held
	j.held = nil
	j.text(held, out)
	for _, l := range slices.SortedFunc(maps.Values(j.lines), func(a, b *line) int { return a.begun - b.begun }) {
		if len(l.text) > 0 || l.cut {
			j.pass(l, newline, out)
		}
	}
	*j = Joiner{}
}

// Reader reads another reader's output with each rank's lines joined.
type Reader struct {
	r      io.Reader
	j      Joiner
	in     []byte
	out    []byte // joined, from off on not yet read
	off    int
	err    error
	joined func([]byte)
}

// NewReader returns a Reader of r.
func NewReader(r io.Reader) *Reader {
	rd := &Reader{r: r, in: make([]byte, 32<<10)}
	rd.joined = func(b []byte) { rd.out = append(rd.out, b...) }
	return rd
}

func (r *Reader) Read(p []byte) (int, error) {
	for r.off == len(r.out) && r.err == nil {
		r.out, r.off = r.out[:0], 0
		n, err := r.r.Read(r.in)
		r.j.Write(r.in[:n], r.joined)
		if err == io.EOF {
			r.j.Flush(r.joined)
		}
		r.err = err
	}
	n := copy(p, r.out[r.off:])
	if r.off += n; n > 0 {
		return n, nil
	}
	return 0, r.err
}
