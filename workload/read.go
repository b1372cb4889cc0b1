// Package workload reads what a training job communicates from its NCCL
// log (NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL): how often one rank calls
// each collective at each message size, in the sizes of the nccl-tests
// benchmark that measures that collective.
package workload

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/nccltune/nccltune/internal/text"
	"github.com/nccltune/nccltune/runner/mpitag"
	"github.com/nccltune/nccltune/space"
)

// Entry is one collective at one size, as a campaign measures it.
type Entry struct {
	Collective string // nccl-tests name: all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall, sendrecv
	Bytes      int64  // the nccl-tests size (see ops)
	Count      int64  // calls by one rank
	Ranks      int    // the communicator's rank count ([nranks=] of the COLL line); 0 if unknown
}

// Workload is what one job communicates.
type Workload struct {
	Entries     []Entry // sorted by collective, size, ranks
	NCCLVersion string  // "2.28.3"; empty if no version line was logged
	Source      Source
	// left are Source's Unmeasured, Empty and Oversize per communicator
	// size, for Keep.
	left map[int]*left
}

// left counts, by name, calls of one communicator size that the entries
// leave out or measure at another size.
type left struct{ unmeasured, empty, oversize map[string]int64 }

func newLeft() *left { return &left{map[string]int64{}, map[string]int64{}, map[string]int64{}} }

// Keep keeps the calls of communicators of ranks ranks only (a campaign
// measures one size), and Source says what it leaves out of those alone.
// Where there are none it says which sizes there are, and keeps all.
func (w *Workload) Keep(ranks int) error {
	if !slices.ContainsFunc(w.Entries, func(e Entry) bool { return e.Ranks == ranks }) {
		return fmt.Errorf("no calls on communicators of %s; the log's are on communicators of %s ranks",
			text.Count(ranks, "rank", "ranks"), strings.Join(w.CommSizes(), ", "))
	}
	w.Entries = slices.DeleteFunc(w.Entries, func(e Entry) bool { return e.Ranks != ranks })
	w.Source.Comms = slices.DeleteFunc(w.Source.Comms, func(c Comms) bool { return c.Ranks != ranks })
	l := cmp.Or(w.left[ranks], newLeft())
	w.Source.Unmeasured, w.Source.Empty, w.Source.Oversize = l.unmeasured, l.empty, l.oversize
	return nil
}

// CommSizes are the communicator sizes of the entries, each with its calls:
// "8 (120 calls)".
func (w *Workload) CommSizes() []string {
	calls := map[int]int64{}
	for _, e := range w.Entries {
		calls[e.Ranks] += e.Count
	}
	var out []string
	for _, n := range slices.Sorted(maps.Keys(calls)) {
		out = append(out, fmt.Sprintf("%d (%s)", n, text.Count(calls[n], "call", "calls")))
	}
	return out
}

// Source says what the log held and whose calls were counted.
type Source struct {
	File      string // the log's name, for WriteTOML's header; Read leaves it empty
	Lines     int64  // lines read
	Calls     int64  // COLL lines read, every process's
	Malformed int64  // COLL lines that could not be read
	// FirstMalformed is the first of them, "line N: text".
	FirstMalformed string
	Skipped        int64 // lines (or their CR-ended parts: see line) neither COLL nor version lines
	Processes      int   // processes that logged calls
	// Comms says, per communicator size, whose calls were counted.
	Comms []Comms
	// Unmeasured counts the calls (of the processes counted) that no
	// benchmark of nccltune's measures, by NCCL's name: Gather, Scatter, ...
	Unmeasured map[string]int64
	// Empty counts the calls (of the processes counted) that moved no byte
	// (count 0), by nccl-tests name: they cost a launch, but have no size a
	// campaign can measure, so they are left out.
	Empty map[string]int64
	// Oversize counts the calls (of the processes counted) larger than
	// space.MaxSize, by nccl-tests name: see add.
	Oversize map[string]int64
}

// Comms describes the communicators of one size.
type Comms struct {
	Ranks     int
	Process   string // "host:pid [dev]": the process whose calls were counted
	Processes int    // processes that took part in communicators of this size
	Calls     int64  // the calls counted
	// Fewest is the fewest calls any of those processes made: below Calls,
	// the processes differ (pipeline stages do), or the log ends early.
	Fewest int64
	// Communicators is how many communicators of this size Process called
	// on. Above 1 (tensor- and data-parallel groups of one size), their
	// calls are added up, though the groups may span nodes differently.
	Communicators int
}

// ErrNoCalls says that the log has no COLL line at all.
var ErrNoCalls = errors.New("no NCCL COLL lines: run the job with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL; NCCL logs to standard output, not standard error, or to the file NCCL_DEBUG_FILE names")

// maxLine bounds the line buffer. NCCL's lines are under 1 KiB (its log
// buffer, src/debug.cc); longer ones are someone else's, skipped.
const maxLine = 64 << 10

// maxState bounds what Read keeps, whatever the input: processes, send/recv
// runs and (process, communicator size, collective, size) tallies: about
// 300 MiB held at the bound (BenchmarkReadBound), 500 MiB of heap with the
// garbage of reading. A job's log holds a few dozen per process, or
// thousands where sizes vary from call to call. (A variable, for the test
// of the bound.)
var maxState = 1 << 21

// Read reads an NCCL log, gzipped or not, line by line: every rank's
// output interleaved, or one rank's alone.
//
// Every process logs each call it makes, once per communicator it makes it
// on, so the calls of all ranks are the calls of one rank many times
// over. Read counts the calls of one process (host, pid and device) per
// communicator size: a rank takes part in several communicators (its
// tensor-parallel group, its data-parallel group, the world), each of a
// size, and its calls on all the communicators of a size are its workload
// at that size. Per size it counts the process that logged the most calls
// at that size (ties: the first by name). In a job whose ranks do the same
// at each size (data, tensor, expert and sequence parallelism) any process
// gives the same counts, so a log of all ranks gives what rank 0's log
// alone gives; where they differ (pipeline stages), it is the busiest, and
// Source.Comms shows the spread. (A process that drives several GPUs from
// one thread without switching device, as nccl-tests -g does, logs them
// all as one [dev]: their calls count as one rank's.)
func Read(r io.Reader) (*Workload, error) {
	br, gzipped, err := open(r)
	if err != nil {
		return nil, err
	}
	p := newParser()
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			var perr error
			if err, perr = p.long(br, line); perr != nil {
				return nil, perr
			}
		} else if len(line) > 0 {
			if perr := p.line(line); perr != nil {
				return nil, perr
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			if gzipped && errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, fmt.Errorf("line %d: the gzip stream ends early (truncated file?): %w", p.src.Lines, err)
			}
			return nil, fmt.Errorf("reading the log after line %d: %w", p.src.Lines, err)
		}
	}
	return p.workload()
}

// open returns a reader of the log, gunzipped if it starts with gzip's
// magic; a log packed otherwise is refused as such, not read as one of no
// NCCL line. It reads each rank's lines whole where mpirun --tag-output
// passed them on in chunks, other ranks' between them (mpitag).
func open(r io.Reader) (br *bufio.Reader, gzipped bool, err error) {
	br = bufio.NewReaderSize(r, maxLine)
	magic, err := br.Peek(10)
	if err != nil && err != io.EOF {
		return nil, false, fmt.Errorf("reading the log: %w", err)
	}
	if bytes.HasPrefix(magic, gzipMagic) {
		g := &gunzip{br: br, zr: new(gzip.Reader)}
		if err := g.reset(); err != nil {
			return nil, true, fmt.Errorf("reading the log's gzip header: %w", err)
		}
		return bufio.NewReaderSize(mpitag.NewReader(g), maxLine), true, nil
	}
	if what, undo := packedAs(magic); what != "" {
		return nil, false, fmt.Errorf("the log is %s, which profile does not read: %s LOG | nccltune profile -", what, undo)
	}
	return bufio.NewReaderSize(mpitag.NewReader(br), maxLine), false, nil
}

var gzipMagic = []byte{0x1f, 0x8b}

// gunzip reads the members of a gzip file in turn, as gzip -d does, and
// ends at zero bytes after the last, which gzip -d ignores too: a file
// padded to a block (dd conv=sync, a tape) is whole. (gzip.Reader's own
// multistream reading takes them for a truncated or broken member.)
type gunzip struct {
	br *bufio.Reader
	zr *gzip.Reader
}

func (g *gunzip) Read(p []byte) (int, error) {
	for {
		n, err := g.zr.Read(p)
		if n > 0 || err != io.EOF {
			if err == io.EOF {
				err = nil // the next call starts the next member
			}
			return n, err
		}
		if err := g.next(); err != nil {
			return 0, err
		}
	}
}

// next starts the member that follows the one read, or returns io.EOF
// where only zero bytes, or none, follow.
func (g *gunzip) next() error {
	if magic, _ := g.br.Peek(len(gzipMagic)); bytes.Equal(magic, gzipMagic) {
		return g.reset()
	}
	for {
		b, err := g.br.ReadByte()
		switch {
		case err != nil:
			return err
		case b != 0:
			return errors.New("bytes after the gzip stream that are no gzip's (another file appended to it?)")
		}
	}
}

// reset starts reading a member at br, and that member alone.
func (g *gunzip) reset() error {
	if err := g.zr.Reset(g.br); err != nil {
		return err
	}
	g.zr.Multistream(false)
	return nil
}

// packedAs names what a log that starts with magic is packed with (gzip
// too, which open reads) and the command that unpacks it; "" for anything
// else.
func packedAs(magic []byte) (what, undo string) {
	// bzip2's "BZh" and block size could start a line of text: its first
	// block's magic (or the empty stream's end) follows them.
	bzip2 := len(magic) >= 10 && string(magic[:3]) == "BZh" && '1' <= magic[3] && magic[3] <= '9' &&
		(string(magic[4:10]) == "1AY&SY" || string(magic[4:10]) == "\x17rE8P\x90")
	switch {
	case bytes.HasPrefix(magic, []byte("\x1f\x8b\x08")): // and deflate, the only method gzip has
		return "gzip-compressed", "gzip -dc"
	case bytes.HasPrefix(magic, []byte("\x28\xb5\x2f\xfd")):
		return "zstd-compressed", "zstd -dc"
	case bytes.HasPrefix(magic, []byte("\xfd7zXZ\x00")):
		return "xz-compressed", "xz -dc"
	case bzip2:
		return "bzip2-compressed", "bzip2 -dc"
	case bytes.HasPrefix(magic, []byte("\x04\x22\x4d\x18")):
		return "lz4-compressed", "lz4 -dc"
	case bytes.HasPrefix(magic, []byte("PK\x03\x04")):
		return "a zip archive", "unzip -p"
	}
	return "", ""
}

// long reads a line longer than the buffer, of which part is the start,
// as line does a shorter one: its records, each as it ends at a CR (a log
// of CR line ends, a progress bar's updates), are read, and one longer than
// maxLine, no NCCL line, is skipped. readErr is what ended the line's
// reading, err the parser's.
func (p *parser) long(br *bufio.Reader, part []byte) (readErr, err error) {
	p.src.Lines++
	if err := p.packed(part); err != nil {
		return nil, err
	}
	readErr = bufio.ErrBufferFull // part does not end the line
	var rec []byte                // the record that the parts read end in, so far
	tooLong := false
	end := func(b []byte) error {
		rec = append(rec, b...)
		defer func() { rec, tooLong = rec[:0], false }()
		if tooLong || len(rec) > maxLine {
			p.src.Skipped++
			return nil
		}
		return p.record(rec)
	}
	for {
		ends := !errors.Is(readErr, bufio.ErrBufferFull)
		if ends {
			part = bytes.TrimRight(part, "\r\n")
		}
		for {
			i := bytes.IndexByte(part, '\r')
			if i < 0 {
				break
			}
			if err := end(part[:i]); err != nil {
				return nil, err
			}
			part = part[i+1:]
		}
		if ends {
			if len(rec) > 0 || len(part) > 0 || tooLong {
				err = end(part)
			}
			return readErr, err
		}
		if rec = append(rec, part...); len(rec) > maxLine {
			rec, tooLong = rec[:0], true
		}
		part, readErr = br.ReadSlice('\n')
	}
}

// tally is what the counts are kept by.
type tally struct {
	proc       int32
	nranks     int32
	collective string // nccl-tests name, or NCCL's for an unmeasured call
	measured   bool
	bytes      int64
}

// counts are a tally's calls. A sendrecv's Recv lines are counted apart:
// see sendrecv.
type counts struct{ calls, recvs int64 }

// n is the number of calls: a sendrecv, as nccl-tests' sendrecv_perf runs
// it, is one Send and one Recv by each rank, so a process that only sends
// or only receives (the ends of a pipeline) still makes one per message.
func (c counts) n() int64 { return max(c.calls, c.recvs) }

// parser holds what Read has seen so far.
type parser struct {
	src         Source
	version     string
	versionLine int64
	procs       map[string]int32
	procNames   []string
	tallies     map[tally]*counts
	oversize    map[tally]counts // the calls of a tally that were larger
	runs        map[runKey]*run
	calledOn    map[commKey]struct{} // the communicators each process called on
	unmeasured  map[string]string    // interned NCCL names
	key         []byte
}

func newParser() *parser {
	return &parser{
		procs:      map[string]int32{},
		tallies:    map[tally]*counts{},
		oversize:   map[tally]counts{},
		runs:       map[runKey]*run{},
		calledOn:   map[commKey]struct{}{},
		unmeasured: map[string]string{},
	}
}

// line reads one line of the log. A lone CR in it ends a record, as a
// terminal shows it: a log of CR line ends, or a progress bar's updates
// (stderr's, unbuffered, where 2>&1 mixes them in) before NCCL's line.
func (p *parser) line(b []byte) error {
	p.src.Lines++
	for rec := range bytes.SplitSeq(bytes.TrimRight(b, "\r\n"), []byte{'\r'}) {
		if err := p.record(rec); err != nil {
			return err
		}
	}
	return nil
}

// packed refuses a line or record not read as a call in which a packed
// stream starts: a packed log concatenated after a plain one (cat rank0.log
// rank1.log.gz), whose calls would be read as lines of junk and left out
// without a word. It starts the line, or lies inside it where the plain
// log's last line has no end (a job killed as it wrote). Only what is not
// plain text is searched: every packed stream has a control character or a
// byte past ASCII in its first bytes (bzip2's after its magic).
func (p *parser) packed(b []byte) error {
	if !slices.ContainsFunc(b, func(c byte) bool { return c < ' ' && c != '\t' && c != '\x1b' || c >= 0x80 }) {
		return nil
	}
	for i := range b {
		if what, undo := packedAs(b[i:]); what != "" {
			return fmt.Errorf("line %d: %s data starts here, inside a log of text (a packed log concatenated after a plain one?): unpack each packed log into the text: %s LOG",
				p.src.Lines, what, undo)
		}
	}
	return nil
}

// record reads one record of a line.
func (p *parser) record(b []byte) error {
	proc, dev, msg, isInfo, okProc := splitInfo(b)
	if !isInfo {
		// Up to 2.22, NCCL prints its version on stdout, alone.
		if i := bytes.Index(b, versionMark); i >= 0 {
			if v, ok := parseVersion(b[i:]); ok {
				return p.setVersion(v)
			}
		}
		p.src.Skipped++
		return p.packed(b)
	}
	if v, ok := parseVersion(msg); ok {
		return p.setVersion(v)
	}
	c, isCall, ok := parseCall(msg)
	switch {
	case !isCall:
		p.src.Skipped++
		return p.packed(b)
	case !ok || !okProc:
		p.src.Malformed++
		if p.src.FirstMalformed == "" {
			p.src.FirstMalformed = fmt.Sprintf("line %d: %.200s", p.src.Lines, b)
		}
		return p.packed(b)
	}
	p.src.Calls++
	id, err := p.process(proc, dev)
	if err != nil {
		return err
	}
	return p.count(id, c)
}

func (p *parser) setVersion(v string) error {
	switch p.version {
	case "":
		p.version, p.versionLine = v, p.src.Lines
	case v:
	default:
		return fmt.Errorf("mixed NCCL versions: %s (line %d) and %s (line %d); profile one job, with one NCCL, at a time",
			p.version, p.versionLine, v, p.src.Lines)
	}
	return nil
}

// process returns the index of the process "proc [dev]".
func (p *parser) process(proc, dev []byte) (int32, error) {
	p.key = append(append(append(append(p.key[:0], proc...), " ["...), dev...), ']')
	if id, ok := p.procs[string(p.key)]; ok {
		return id, nil
	}
	if err := p.grow(); err != nil {
		return 0, err
	}
	id := int32(len(p.procNames))
	name := string(p.key)
	p.procs[name] = id
	p.procNames = append(p.procNames, name)
	return id, nil
}

// lookup returns m[k], made if missing and there is room for it.
func lookup[K comparable, V any](p *parser, m map[K]*V, k K) (*V, error) {
	if v := m[k]; v != nil {
		return v, nil
	}
	if err := p.grow(); err != nil {
		return nil, err
	}
	v := new(V)
	m[k] = v
	return v, nil
}

// grow checks that there is room for one more thing to keep.
func (p *parser) grow() error {
	if len(p.procs)+len(p.tallies)+len(p.runs)+len(p.calledOn) < maxState {
		return nil
	}
	if len(p.procs) > 1 {
		// Each process's calls are kept until the end, when one process's
		// are counted per communicator size.
		return fmt.Errorf("line %d: over %d distinct processes, communicators and message sizes, of %d processes: give one process's log alone (rank 0's NCCL_DEBUG_FILE), whose calls are those counted",
			p.src.Lines, maxState, len(p.procs))
	}
	return fmt.Errorf("line %d: over %d distinct processes, communicators and message sizes: is this one job's NCCL log?", p.src.Lines, maxState)
}

// commKey is a communicator of one process, and its size.
type commKey struct {
	proc, nranks int32
	comm         uint64
}

// count counts one call of process id.
func (p *parser) count(id int32, c call) error {
	k := commKey{id, int32(c.nranks), c.comm}
	if _, ok := p.calledOn[k]; !ok {
		if err := p.grow(); err != nil {
			return err
		}
		p.calledOn[k] = struct{}{}
	}
	o, measured := ops[string(c.op)]
	if !measured {
		name, ok := p.unmeasured[string(c.op)]
		if !ok {
			if err := p.grow(); err != nil {
				return err
			}
			name = string(c.op)
			p.unmeasured[name] = name
		}
		if err := p.endRun(id, c.comm); err != nil {
			return err
		}
		return p.add(tally{proc: id, nranks: int32(c.nranks), collective: name}, 1, 0)
	}
	if c.dtype >= uint64(len(typeSizes)) {
		return fmt.Errorf("line %d: %s of unknown NCCL datatype %d (nccltune knows 0 to %d, NCCL 2.30's): a newer NCCL?",
			p.src.Lines, c.op, c.dtype, len(typeSizes)-1)
	}
	size := typeSizes[c.dtype]
	if o.perRank {
		size *= int64(c.nranks)
	}
	bytes := int64(c.count) * size // parseCall bounds count
	if o.p2p {
		return p.sendrecv(id, c, bytes)
	}
	if err := p.endRun(id, c.comm); err != nil {
		return err
	}
	return p.add(tally{proc: id, nranks: int32(c.nranks), collective: o.collective, measured: true, bytes: bytes}, 1, 0)
}

// add counts calls (and sendrecv Recvs) under t.
//
// nccl-tests allocates buffers of a size on each GPU, and a space takes
// sizes up to space.MaxSize, which no GPU holds twice; a larger call (of a
// hostile log, or a GPU to come) is counted as as many calls of
// space.MaxSize as it moves, rounded up: that far into the bandwidth-bound
// sizes a call's time grows with its bytes, so the job's predicted time
// stays about right. (The counts cannot overflow: at most 2^25 calls a line
// would take a log of 2^38 lines.)
func (p *parser) add(t tally, calls, recvs int64) error {
	n := int64(1)
	if t.bytes > space.MaxSize {
		n = (t.bytes-1)/space.MaxSize + 1
		t.bytes = space.MaxSize
	}
	c, err := lookup(p, p.tallies, t)
	if err != nil {
		return err
	}
	c.calls += n * calls
	c.recvs += n * recvs
	if n > 1 {
		o := p.oversize[t]
		p.oversize[t] = counts{o.calls + calls, o.recvs + recvs}
	}
	return nil
}

// workload chooses, per communicator size, the process to count, and
// returns its calls.
func (p *parser) workload() (*Workload, error) {
	for k, r := range p.runs {
		if err := p.flush(k, r); err != nil {
			return nil, err
		}
	}
	if p.src.Calls == 0 {
		if p.src.Malformed > 0 {
			return nil, fmt.Errorf("none of the %d NCCL COLL lines could be read, e.g. %s", p.src.Malformed, p.src.FirstMalformed)
		}
		return nil, ErrNoCalls
	}
	w := &Workload{NCCLVersion: p.version, Source: p.src, left: map[int]*left{}}
	w.Source.Processes = len(p.procNames)
	w.Source.Comms = p.comms()
	all := newLeft()
	counted := map[int32]int32{} // communicator size → the process counted
	for _, c := range w.Source.Comms {
		counted[int32(c.Ranks)] = p.procs[c.Process]
		w.left[c.Ranks] = newLeft()
	}
	for t, c := range p.tallies {
		if counted[t.nranks] != t.proc {
			continue
		}
		if t.measured && t.bytes > 0 {
			w.Entries = append(w.Entries, Entry{Collective: t.collective, Bytes: t.bytes, Count: c.n(), Ranks: int(t.nranks)})
		}
		o, oversize := p.oversize[t]
		for _, l := range []*left{all, w.left[int(t.nranks)]} {
			switch {
			case !t.measured:
				l.unmeasured[t.collective] += c.n()
			case t.bytes == 0:
				l.empty[t.collective] += c.n()
			case oversize:
				l.oversize[t.collective] += o.n()
			}
		}
	}
	w.Source.Unmeasured, w.Source.Empty, w.Source.Oversize = all.unmeasured, all.empty, all.oversize
	if len(w.Entries) == 0 {
		left := slices.Sorted(maps.Keys(w.Source.Unmeasured))
		for _, name := range slices.Sorted(maps.Keys(w.Source.Empty)) {
			left = append(left, name+" of 0 bytes")
		}
		return nil, fmt.Errorf("no call that nccltune can measure, only %s", strings.Join(left, ", "))
	}
	slices.SortFunc(w.Entries, func(a, b Entry) int {
		return cmp.Or(cmp.Compare(a.Collective, b.Collective), cmp.Compare(a.Bytes, b.Bytes), cmp.Compare(a.Ranks, b.Ranks))
	})
	return w, nil
}

// comms totals each process's calls per communicator size and picks the
// process to count for each: the most calls, ties to the first by name so
// that the choice does not depend on how the ranks' lines interleave.
func (p *parser) comms() []Comms {
	type key struct{ nranks, proc int32 }
	calls := map[key]int64{}
	for t, c := range p.tallies {
		calls[key{t.nranks, t.proc}] += c.n()
	}
	bySize := map[int32]*Comms{}
	for k, n := range calls {
		c := bySize[k.nranks]
		name := p.procNames[k.proc]
		if c == nil {
			c = &Comms{Ranks: int(k.nranks), Process: name, Calls: n, Fewest: n}
			bySize[k.nranks] = c
		} else if n > c.Calls || n == c.Calls && name < c.Process {
			c.Process, c.Calls = name, n
		}
		c.Processes++
		c.Fewest = min(c.Fewest, n)
	}
	for k := range p.calledOn {
		if c := bySize[k.nranks]; c.Process == p.procNames[k.proc] {
			c.Communicators++
		}
	}
	out := make([]Comms, 0, len(bySize))
	for _, size := range slices.Sorted(maps.Keys(bySize)) {
		out = append(out, *bySize[size])
	}
	return out
}
