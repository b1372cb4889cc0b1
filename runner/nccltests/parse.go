// Package nccltests reads the text that the nccl-tests benchmarks (all_reduce_perf
// and its siblings) print: the result table, the average bus bandwidth and the
// failure lines. It never fails on unexpected text; it reports what it found.
package nccltests

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/nccltune/nccltune/internal/text"
	"github.com/nccltune/nccltune/space"
)

// Measure is one half of a result row: out-of-place or in-place.
type Measure struct {
	TimeUs float64 // microseconds per operation
	AlgBW  float64 // GB/s
	BusBW  float64 // GB/s
	// Wrong counts wrong elements; -1 when not checked ("N/A" with -c 0).
	// Versions before 2.11 print the largest error instead (an "error" column
	// such as 2e-07); it counts as one wrong result when it exceeds nccl-tests'
	// own tolerance for the data type.
	Wrong int64
}

// Row is one message size of the sweep.
type Row struct {
	Collective string // nccl-tests' name, set by whoever knows which benchmark printed it
	Size       int64  // bytes
	Count      int64  // elements
	Type       string
	Redop      string
	Root       int // -1 where the collective has none, or the column is absent (older versions)
	OutOfPlace Measure
	InPlace    Measure
}

// Wrong is the number of wrong elements in the row, counting both halves.
func (r Row) Wrong() int64 { return max(r.OutOfPlace.Wrong, 0) + max(r.InPlace.Wrong, 0) }

// TimeUs is the time of one operation: the mean of the two halves, or the
// out-of-place half alone where in place is no mode of the collective.
func (r Row) TimeUs() float64 {
	if InPlaceUnsupported(r.Collective) {
		return r.OutOfPlace.TimeUs
	}
	return (r.OutOfPlace.TimeUs + r.InPlace.TimeUs) / 2
}

// InPlaceUnsupported reports whether nccl-tests runs collective in place
// without supporting it there: alltoall's and sendrecv's InitData set
// reportErrors to 0 for the in-place run (N/A in its #wrong column since
// 2.13.1; before, a column nccl-tests itself counted as no error), and one
// rank's in-place run copies nothing (7,453 GB/s against 1,175 out of place,
// alltoall at 8 MB on one H200): its results are no verdict, its time no
// measure of the collective.
func InPlaceUnsupported(collective string) bool {
	return collective == "alltoall" || collective == "sendrecv"
}

// Report is what one benchmark run printed.
type Report struct {
	Version     string // "2.19.6", when the header says
	Rows        []Row
	AvgBusBW    float64 // "# Avg bus bandwidth", NaN when absent
	OutOfBounds int64   // "# Out of bounds values", -1 when absent
	// Devices are the header's "Rank N ... on HOST device D [BUS] GPU NAME" lines.
	Devices []Device
	// Failures are the benchmark's own error lines ("Test NCCL failure ...",
	// "NCCL WARN ...", "Test CUDA failure ..."), in order of appearance.
	Failures []string
	// Aborted is the first line nccl-tests prints only as it stops on an
	// error (its CUDACHECK, NCCLCHECK and TESTCHECK: "Test NCCL failure
	// common.cu:1005 ..."; "Invalid number of GPUs"), or the dynamic
	// loader's as it could not start it, wherever it comes:
	// after a full table it is the teardown that failed. "" if none.
	// NCCL's WARN lines are not among them: NCCL warns of much that does
	// no harm.
	Aborted string
	// Ignored is the first line where nccl-tests says it ran on without an
	// option's value ("invalid type bf16, defaulting to float ..", "Option
	// -G (CUDA graph) not supported ... Ignoring", "blocking mode (-z 3) is
	// incompatible with CUDA graph mode (-G). Disabling.", "... (-V) ...
	// Using default value 16."): what it measured is not what its
	// arguments ask. "" if none.
	Ignored string
	// Cut is where nccl-tests says it cut the sweep short, to buffers the
	// GPU's memory holds ("# Reducing maxBytes to 42949672960 due to
	// memory limitation"). "" if it did not.
	Cut string
}

// Device is one rank's GPU, from the header.
type Device struct {
	Rank int
	Host string
	GPU  string
}

// ErrNoResults means the output held no result row at all.
var ErrNoResults = errors.New("no result rows in the benchmark output")

var (
	versionRE  = regexp.MustCompile(`nccl-tests version (\S+)`)
	avgRE      = regexp.MustCompile(`^#\s*Avg bus bandwidth\s*:\s*(\S+)`)
	oobRE      = regexp.MustCompile(`^#\s*Out of bounds values\s*:\s*(\d+)`)
	cutRE      = regexp.MustCompile(`^#\s*Reducing maxBytes to \d+ due to memory limitation`)
	failureRE  = regexp.MustCompile(`Test (NCCL|CUDA) failure|Test failure|NCCL WARN|NCCL error|ncclInvalidUsage|ncclSystemError|ncclInternalError|ncclUnhandledCudaError|ncclRemoteError|unhandled (system|cuda) error|Invalid number of GPUs|Duplicate GPU detected`)
	maxFailure = 50
	abortRE    = regexp.MustCompile(`Test (NCCL |CUDA )?failure \S+:\d+|Invalid number of GPUs|error while loading shared libraries`)
	ignoredRE  = regexp.MustCompile(`^invalid (type|op) .*, defaulting to|^Option -\S+ .*\b(Ignoring|Defaulting to)\b|^[a-z][a-z_ -]* \(-[A-Za-z][^)]*\) .*(\. Disabling|Using default value \S+)\.$`)
	// Launchers may tag each line with its rank: Open MPI's --tag-output
	// ("[1,0]<stdout>:"), its --timestamp-output's time before the stream,
	// with or without the tag ("Sun Dec  6 14:45:56 2026<stdout>:", as
	// ctime writes it), srun --label ("0: ", " 0: " of ten tasks or
	// more, as wide as the largest id; "P1 0: " in a heterogeneous job),
	// and Hydra's -l (-prepend-rank: "[0] ", MPICH's and Intel MPI's).
	tagRE = regexp.MustCompile(`^(` + MPIRunTime + `?(?:\[\d+,\d+\])?<std(out|err)>:|` + SrunLabel + `|` + HydraLabel + `)`)
	// rankRE matches the header's device lines, one per rank.
	rankRE = regexp.MustCompile(`^#\s+Rank\s+(\d+) .*\bon\s+(\S+)\s+device\s+\d+\s+\[[^\]]*\]\s+(.*)$`)
	// pidRE finds a device line's process: "Pid 41234 on node-7".
	pidRE = regexp.MustCompile(`^#.*\bPid\s+(\d+)\s+on\s+(\S+)`)
	// recordRE is a record of NCCL's log after its host, the pid captured:
	// ":41234:41234 [0] NCCL INFO ", ":41234:41290 [0] ib_plugin.cc:452
	// (ncclIbAsyncThreadMain) NCCL WARN ", ":41234:41234 [0] 12.5 f:80 NCCL TRACE ".
	recordRE = regexp.MustCompile(`:(\d+):\d+ \[\d+\] (?:\S+ ){0,2}?NCCL (?:INFO|WARN|TRACE) `)
)

// SrunLabel is srun --label's label of a task's line, its group the task:
// "0: ", " 0: " of ten tasks or more (as wide as the largest id), "P1 0: "
// in a heterogeneous job.
const SrunLabel = `(?:P\d+ )? *(\d+): `

// HydraLabel is Hydra's -l (-prepend-rank) label of a rank's line, its
// group the rank: "[0] " (MPICH's and Intel MPI's mpiexec).
const HydraLabel = `\[(\d+)\] `

// MPIRunTime is the time that Open MPI's mpirun --timestamp-output puts
// before each line's stream or tag, as ctime writes it: "Sun Dec  6
// 14:45:56 2026".
const MPIRunTime = `(?:[A-Z][a-z]{2} [A-Z][a-z]{2} [ 0-9]\d \d\d:\d\d:\d\d \d{4})`

// changedColumns are the header's columns that nccl-tests' options add or
// rename (-S, -I, -C), with the option: with them, a row is not the one
// Parse reads, or (-C) its time is the CPU's, not the one the bandwidths
// are computed from.
var changedColumns = map[string]string{
	"timestamp": "-S (--report_timestamps)",
	"i_min":     "-I (--per_iter_timing)",
	"cputime":   "-C (--report_cputime)",
}

// Parse reads a benchmark's output. Lines that are not part of the table (MPI
// banners, NCCL INFO lines, warnings) are skipped. It returns ErrNoResults,
// together with whatever failures it saw, when no row could be read.
func Parse(r io.Reader) (*Report, error) {
	rep := &Report{AvgBusBW: math.NaN(), OutOfBounds: -1}
	var maxErrs [][2]float64 // per row, for the old "error" column; NaN where a count was printed
	ranks := 0
	// A "#wrong" column prints its count with %g: 1e+06 and more are counts
	// in e-notation, not an old-style error.
	countsWrong := false
	var formatErr error
	rows := splicer{hosts: map[string][]string{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	sc.Split(text.Lines(64 << 10)) // an over-long line is passed over, not the end of the table
	for sc.Scan() {
		line := rows.splice(strings.TrimSpace(tagRE.ReplaceAllString(sc.Text(), "")))
		if m := versionRE.FindStringSubmatch(line); m != nil && rep.Version == "" {
			rep.Version = m[1]
		}
		if abortRE.MatchString(line) && rep.Aborted == "" {
			rep.Aborted = line
		}
		if ignoredRE.MatchString(line) && rep.Ignored == "" {
			rep.Ignored = line
		}
		if failureRE.MatchString(line) {
			if len(rep.Failures) < maxFailure {
				rep.Failures = append(rep.Failures, line)
			}
			continue
		}
		if strings.HasPrefix(line, "#") {
			if err := checkHeader(line); err != nil && formatErr == nil {
				formatErr = err
			}
			if f := strings.Fields(line); len(f) > 2 && f[1] == "size" && f[2] == "count" {
				countsWrong = slices.Contains(f, "#wrong")
			}
			if cutRE.MatchString(line) && rep.Cut == "" {
				rep.Cut = line
			}
			if m := rankRE.FindStringSubmatch(line); m != nil {
				ranks++
				n, _ := strconv.Atoi(m[1])
				rep.Devices = append(rep.Devices, Device{Rank: n, Host: m[2], GPU: strings.TrimSpace(m[3])})
			}
			if m := avgRE.FindStringSubmatch(line); m != nil {
				if v, err := text.Decimal(m[1]); err == nil {
					rep.AvgBusBW = v
				}
			} else if m := oobRE.FindStringSubmatch(line); m != nil {
				rep.OutOfBounds, _ = strconv.ParseInt(m[1], 10, 64)
			}
			continue
		}
		if row, errs, ok := parseRow(strings.Fields(line)); ok {
			rep.Rows = append(rep.Rows, row)
			maxErrs = append(maxErrs, errs)
		}
	}
	for i := range rep.Rows {
		judgeErrors(&rep.Rows[i], maxErrs[i], ranks, countsWrong)
	}
	if err := sc.Err(); err != nil {
		return rep, err
	}
	if formatErr != nil {
		return rep, formatErr
	}
	if len(rep.Rows) == 0 {
		return rep, ErrNoResults
	}
	return rep, nil
}

// splicer puts together the rows that NCCL's log breaks. NCCL logs to the
// stdout nccl-tests prints to, through the same buffer: a record logged
// while a row is printed (with NCCL_DEBUG_SUBSYS=TUNING rank 0 logs every
// launch) comes between the row's parts, an INFO or TRACE record on the
// line of the part before it, a WARN record (which begins with a newline)
// on a line of its own, and the row goes on after the record's newline. A
// record begins with its process's host and pid, which the "# Rank" lines
// name, as do the records that begin a line: a row's start before a known
// host's record, or on the line before it, is a part of a row.
type splicer struct {
	hosts  map[string][]string // pid -> hosts
	part   string              // the row's parts so far
	broken bool                // a record followed them
}

const (
	maxPart      = 1 << 10 // a row is some 120 bytes
	maxPidsHosts = 16      // hosts kept per pid, each tried on each record
)

// splice returns line, after the row's parts that records broke off
// before it; of a line where a record follows a row's part, the record.
func (s *splicer) splice(line string) string {
	var records [][]int
	switch {
	case !strings.Contains(line, " NCCL "): // no record: no regexp's run
	case s.begins(line): // most of NCCL's lines, each a record of its own
		s.broken = s.part != ""
		return line
	default:
		records = recordRE.FindAllStringSubmatchIndex(line, -1)
	}
	s.learn(line, records)
	if i, ok := s.record(line, records); ok {
		base := s.part
		if !s.broken {
			base = "" // a row's start that ended its line goes on after a record, not before one
		}
		// The time NCCL_DEBUG_TIMESTAMP_LEVELS puts before the host ("[%F
		// %T] " by default) is no part of the row. One without brackets,
		// digits first ("%T "), is not cut off: glued to the row's last
		// field ("0" and "10:00:00"), it would put digits in it.
		if j := strings.LastIndexByte(line[:i], '['); j >= 0 && strings.HasSuffix(strings.TrimRight(line[j:i], " "), "]") {
			i = j
		}
		// A whole row too: another thread's record (a proxy's) may come
		// before its newline, which then ends an empty line.
		if part := base + line[:i]; i > 0 && (rowStart(part) || isRow(part)) {
			s.part, line = part+" ", line[i:]
		}
		s.broken = s.part != ""
		return line
	}
	if s.broken && !strings.HasPrefix(line, "#") {
		line = s.part + line
	}
	s.part, s.broken = "", false
	if rowStart(line) {
		s.part = line + " "
	}
	return line
}

// rowStart reports whether text is a row's start: the size, the count,
// the type and fewer fields than a row, all of a row's characters (not the
// time before a record).
func rowStart(text string) bool {
	if text == "" || text[0] < '0' || text[0] > '9' || len(text) > maxPart || strings.ContainsAny(text, "[]:") {
		return false
	}
	f := strings.Fields(text)
	if len(f) < 3 || len(f) >= 13 {
		return false
	}
	_, err1 := count(f[0])
	_, err2 := count(f[1])
	return err1 == nil && err2 == nil && isWord(f[2]) && !isRow(text)
}

// isRow reports whether text is a whole row.
func isRow(text string) bool {
	_, _, ok := parseRow(strings.Fields(text))
	return ok
}

// learn notes the host and pid of a "# Rank" line, or of a record that
// begins line (records are recordRE's matches in line).
func (s *splicer) learn(line string, records [][]int) {
	if strings.HasPrefix(line, "#") {
		if m := pidRE.FindStringSubmatch(line); m != nil {
			s.add(m[1], m[2])
		}
	} else if len(records) > 0 && records[0][0] > 0 && !strings.ContainsAny(line[:records[0][0]], " \t") {
		s.add(line[records[0][2]:records[0][3]], line[:records[0][0]])
	}
}

// begins reports whether line begins with a known process's "host:pid:".
func (s *splicer) begins(line string) bool {
	host, rest, ok1 := strings.Cut(line, ":")
	pid, _, ok2 := strings.Cut(rest, ":")
	return ok1 && ok2 && slices.Contains(s.hosts[pid], host)
}

// add notes that the process pid of host logs.
func (s *splicer) add(pid, host string) {
	if hosts := s.hosts[pid]; len(hosts) < maxPidsHosts && !slices.Contains(hosts, host) {
		s.hosts[pid] = append(hosts, host)
	}
}

// record is where in line a known process's record begins (its host), of
// records, recordRE's matches in line.
func (s *splicer) record(line string, records [][]int) (int, bool) {
	for _, loc := range records {
		at := -1
		for _, host := range s.hosts[line[loc[2]:loc[3]]] {
			if i := loc[0] - len(host); i >= 0 && line[i:loc[0]] == host && (at < 0 || i < at) {
				at = i
			}
		}
		if at >= 0 {
			return at, true
		}
	}
	return 0, false
}

// checkHeader refuses the table's column header ("# size count type ...")
// where it names a column that an option of nccl-tests adds or renames.
func checkHeader(line string) error {
	f := strings.Fields(line)
	if len(f) < 3 || f[1] != "size" || f[2] != "count" {
		return nil
	}
	for _, c := range f {
		if opt, ok := changedColumns[c]; ok {
			return fmt.Errorf("the table has a %s column, which nccl-tests prints with %s: nccltune reads the table without it", c, opt)
		}
	}
	return nil
}

// parseRow reads "size count type redop [root] time algbw busbw #wrong time
// algbw busbw #wrong". Versions before the root column print 12 fields; so do
// old rootful collectives without a redop ("size count type root ...").
func parseRow(f []string) (Row, [2]float64, bool) {
	var row Row
	var errs [2]float64
	var rest []string
	switch len(f) {
	case 13:
		root, err := integer(f[4])
		if err != nil || !isWord(f[3]) {
			return row, errs, false
		}
		row.Redop, row.Root, rest = f[3], root, f[5:]
	case 12:
		if root, err := integer(f[3]); err == nil {
			row.Redop, row.Root = "none", root
		} else if isWord(f[3]) {
			row.Redop, row.Root = f[3], -1
		} else {
			return row, errs, false
		}
		rest = f[4:]
	default:
		return row, errs, false
	}
	var err1, err2 error
	row.Size, err1 = count(f[0])
	row.Count, err2 = count(f[1])
	if err1 != nil || err2 != nil || !isWord(f[2]) {
		return row, errs, false
	}
	row.Type = f[2]
	var ok1, ok2 bool
	row.OutOfPlace, errs[0], ok1 = parseMeasure(rest[0:4])
	row.InPlace, errs[1], ok2 = parseMeasure(rest[4:8])
	return row, errs, ok1 && ok2
}

// parseMeasure reads time, algbw, busbw and the check column. It returns the
// check column as a maximum error when it is one (old versions), else NaN.
func parseMeasure(f []string) (Measure, float64, bool) {
	var m Measure
	vals := make([]float64, 3)
	for i := range vals {
		v, err := unsigned(f[i])
		if err != nil {
			return m, 0, false
		}
		vals[i] = v
	}
	m.TimeUs, m.AlgBW, m.BusBW = vals[0], vals[1], vals[2]
	w := f[3]
	if w == "N/A" {
		m.Wrong = -1
		return m, math.NaN(), true
	}
	if n, err := count(w); err == nil {
		m.Wrong = n
		return m, math.NaN(), true
	}
	v, err := unsigned(w)
	if err != nil {
		return m, 0, false
	}
	return m, v, true
}

// unsigned reads a time, a bandwidth or an error as nccl-tests prints
// them: a decimal number without a sign.
func unsigned(s string) (float64, error) {
	if strings.HasPrefix(s, "+") || strings.HasPrefix(s, "-") {
		return 0, strconv.ErrSyntax
	}
	return text.Decimal(s)
}

// count reads a count as printf's "%li" writes one: digits alone (no
// sign, which strconv.ParseInt would read).
func count(s string) (int64, error) {
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return 0, strconv.ErrSyntax
	}
	return strconv.ParseInt(s, 10, 64)
}

// integer reads an integer as printf's "%i" writes one: a count, or '-'
// and a count.
func integer(s string) (int, error) {
	n, err := count(strings.TrimPrefix(s, "-"))
	if err != nil || n > math.MaxInt32 {
		return 0, strconv.ErrSyntax
	}
	if strings.HasPrefix(s, "-") {
		n = -n
	}
	return int(n), nil
}

// tolerance is the largest error nccl-tests before 2.11 accepted per rank
// (DeltaMaxValue in its common.cu).
func tolerance(dataType string) float64 {
	switch dataType {
	case "half", "float16", "bfloat16":
		return 1e-2
	case "float", "float32":
		return 1e-5
	case "double", "float64":
		return 1e-12
	}
	return 0 // integers must be exact
}

// judgeErrors turns an old-style maximum error into a wrong count, with
// nccl-tests' own rule: wrong when above the type's tolerance x (ranks - 1);
// under a "#wrong" header, such a number is the count, in e-notation.
func judgeErrors(row *Row, errs [2]float64, ranks int, countsWrong bool) {
	limit := tolerance(row.Type) * float64(max(ranks-1, 1))
	for i, m := range []*Measure{&row.OutOfPlace, &row.InPlace} {
		switch {
		case math.IsNaN(errs[i]):
		case countsWrong:
			// Never fewer than printed: a fraction (no count) is rounded
			// up, not to 0, and a number past int64 held, not wrapped
			// negative (read as N/A).
			m.Wrong = int64(min(math.Ceil(errs[i]), 1<<62))
		default:
			m.Wrong = map[bool]int64{false: 0, true: 1}[errs[i] > limit]
		}
	}
}

// isWord accepts a type or redop name: a letter, then letters, digits or '_'.
func isWord(s string) bool {
	if s == "" || !(s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z') {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// PrintedSizes are the sizes nccl-tests prints for a requested size (-b,
// -e, the steps between), the current version's first: the element count
// it derives from it (its GetCollByteCount functions), times the element
// size. all_gather, reduce_scatter and alltoall split the count among the
// ranks and have rounded each rank's share down in turn to a multiple of
// 16 bytes (since 2.13.12), of 4 elements (all_gather and reduce_scatter,
// since September 2022) and of one element, so an older nccl-tests prints
// another size where the share is not a multiple of 16 bytes. It is false
// where the data type or the rank count it needs is unknown.
func PrintedSizes(coll string, size int64, dataType string, ranks int) ([]int64, bool) {
	elt, ok := space.ElementBytes[dataType]
	if !ok {
		return nil, false
	}
	count := size / elt
	if !countIsShare[coll] {
		return []int64{count * elt}, true
	}
	if ranks <= 0 {
		return nil, false
	}
	n := int64(ranks)
	shares := []int64{(count / n) &^ (16/elt - 1), count / n}
	if coll != "alltoall" {
		shares = append(shares, count/(4*n)*4)
	}
	var sizes []int64
	for _, share := range shares {
		if !slices.Contains(sizes, share*n*elt) {
			sizes = append(sizes, share*n*elt)
		}
	}
	return sizes, true
}

// PrintedSize is the size the current nccl-tests prints for a requested
// size (PrintedSizes' first).
func PrintedSize(coll string, size int64, dataType string, ranks int) (int64, bool) {
	sizes, ok := PrintedSizes(coll, size, dataType, ranks)
	if !ok {
		return 0, false
	}
	return sizes[0], true
}

// countIsShare tells, for each collective nccltune measures, whether
// nccl-tests' count column is each rank's share of the buffer (the size
// column being the whole of it) or the whole buffer's elements.
var countIsShare = map[string]bool{"all_reduce": false, "broadcast": false, "reduce": false, "sendrecv": false,
	"all_gather": true, "reduce_scatter": true, "alltoall": true}

// PrintedCount is the count nccl-tests prints beside a printed size: its
// GetCollByteCount's paramcount, where the size is max(sendcount,
// recvcount) elements of the type. That is the size's elements, or for
// all_gather, reduce_scatter and alltoall each rank's share of them, in
// every nccl-tests since its first (2017; the rounding of the share
// changed, this relation did not); -1 where no count prints the size. It is false where
// the collective, the data type or the rank count it needs is unknown.
func PrintedCount(coll string, size int64, dataType string, ranks int) (int64, bool) {
	elt, known := space.ElementBytes[dataType]
	share, measured := countIsShare[coll]
	switch {
	case !known || !measured || share && ranks <= 0:
		return 0, false
	case share:
		elt *= int64(ranks)
	}
	if size%elt != 0 {
		return -1, true
	}
	return size / elt, true
}

// FormatFloat writes v as nccl-tests (2.19.6) writes a time or a bandwidth
// in a column width characters wide (getFloatStr in its src/util.cu): two
// decimals where the digits before the point leave room, then one, then
// none, then an exponent, with one decimal in a column of 7 or more; cut to
// the column's width where even that is wider. The digits are counted
// before rounding, as getFloatStr does: 999.999 is 1000.00, wider than 6.
func FormatFloat(v float64, width int) string {
	power := 0
	for p := 1.0; v >= p && power <= width; p *= 10 {
		power++
	}
	switch {
	case power < width-2:
		return fmt.Sprintf("%*.2f", width, v)
	case power < width-1:
		return fmt.Sprintf("%*.1f", width, v)
	case power < width+1:
		return fmt.Sprintf("%*.0f", width, v)
	}
	digits := 0
	if width >= 7 {
		digits = 1
	}
	s := fmt.Sprintf("%*.*e", width, digits, v)
	return s[:min(len(s), width)]
}

// FormatWrong writes a #wrong column as nccl-tests does: the count as a
// double, with "%6g" (1e+06 from a million), or N/A where the results were
// not checked (n < 0), in a column of 7.
func FormatWrong(n int64) string {
	if n < 0 {
		return "    N/A"
	}
	return fmt.Sprintf("  %6s", strconv.FormatFloat(float64(n), 'g', 6, 64))
}

// FormatRow writes a row as nccl-tests (2.19.6) prints it: the size, the
// count, the type, the redop and the root, then the out-of-place and the
// in-place halves (writeBenchmarkLinePreamble and writeBenchmarkLineBody
// in its src/util.cu).
func FormatRow(r Row) string {
	s := fmt.Sprintf("%12d  %12d  %8s  %6s  %6d", r.Size, r.Count, r.Type, r.Redop, r.Root)
	for _, m := range []Measure{r.OutOfPlace, r.InPlace} {
		s += "  " + FormatFloat(m.TimeUs, 7) + "  " + FormatFloat(m.AlgBW, 6) + "  " + FormatFloat(m.BusBW, 6) + FormatWrong(m.Wrong)
	}
	return s
}

// BusFactor is nccl-tests' ratio of bus to algorithm bandwidth for
// collective coll over ranks ranks (its *GetBw functions): 0 for one rank
// of all_reduce, all_gather, reduce_scatter and alltoall. It is false where
// the rank count is unknown, or the collective is none of nccltune's.
func BusFactor(coll string, ranks int) (float64, bool) {
	if ranks <= 0 {
		return 0, false
	}
	n := float64(ranks)
	switch coll {
	case "all_reduce":
		return 2 * (n - 1) / n, true
	case "all_gather", "reduce_scatter", "alltoall":
		return (n - 1) / n, true
	case "broadcast", "reduce", "sendrecv":
		return 1, true
	}
	return 0, false
}
