package runner

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/nccltune/nccltune/runner/nccllog"
	"github.com/nccltune/nccltune/runner/nccltests"
	"github.com/nccltune/nccltune/space"
)

// NCCLTests runs one of nccl-tests' *_perf binaries, or a program that takes
// their flags and prints their table: nccltune's simulated cluster.
type NCCLTests struct {
	// Program is what comes before the binary: nothing for nccl-tests itself,
	// the simulator's command and scenario flags for the simulated cluster.
	Program []string
	// LabelFlag, if set, passes the plan's label to Program (the simulator's -run).
	LabelFlag  string
	Binary     string // the *_perf binary (a path, or the simulator's benchmark name)
	Collective string // nccl-tests' name: all_reduce, all_gather, ...
	GPUs       int    // -g
	Check      bool   // -c 1: results verified
	Args       []string
	// NodeNetGBs is what one node's network ports carry each way, GB/s,
	// where known (the simulated cluster's scenario); 0: see plausible.
	NodeNetGBs float64
	// Ranks is how many ranks each launch runs, where the space says
	// (space.LaunchRanks; nccl-tests' threads, -t, are counted here); 0:
	// unknown. The output's own rank count decides which bounds its numbers
	// are held to, so a table must name as many ranks as were launched.
	Ranks int
}

// For is the benchmark of collective coll: nccl-tests' binary of it, named
// as this one is (all_reduce_perf, all_reduce_perf_mpi, ...) and beside it
// (or on the PATH, as this one is), with the same settings. Whichever
// collective this one measures, the result runs coll's own binary.
func (b NCCLTests) For(coll string) (Benchmark, error) {
	dir, base := filepath.Split(b.Binary)
	_, rest, ok := perfName(base)
	if !ok {
		return nil, fmt.Errorf("benchmark %s is not one of nccl-tests' *_perf binaries, beside which %s_perf would be", b.Binary, coll)
	}
	c := b
	c.Collective, c.Binary = coll, dir+coll+"_perf"+rest
	if b.Program == nil { // nccl-tests itself, not the simulator
		path, err := exec.LookPath(c.Binary)
		if err != nil {
			return nil, fmt.Errorf("benchmark of %s: %w", coll, err)
		}
		c.Binary = path
	}
	return c, nil
}

// perfName reads the name of one of nccl-tests' binaries: the collective it
// measures, and what follows "<collective>_perf" (a build's suffix, "_mpi").
func perfName(base string) (coll, rest string, ok bool) {
	for _, c := range space.Collectives {
		if r, found := strings.CutPrefix(base, c+"_perf"); found {
			return c, r, true
		}
	}
	return "", "", false
}

// Command is the sweep's command line: -b -e -f -g -n -w -c, then the extra arguments.
func (b NCCLTests) Command(p Plan) []string {
	argv := append([]string{}, b.Program...)
	if b.LabelFlag != "" && p.Label != "" {
		argv = append(argv, b.LabelFlag+"="+p.Label)
	}
	check := map[bool]string{false: "0", true: "1"}[b.Check]
	argv = append(argv, b.Binary,
		"-b", strconv.FormatInt(p.Sizes.Min, 10), "-e", strconv.FormatInt(p.Sizes.Max, 10),
		"-f", strconv.Itoa(p.Sizes.Factor), "-g", strconv.Itoa(b.GPUs),
		"-n", strconv.Itoa(p.Iters), "-w", strconv.Itoa(p.Warmup), "-c", check)
	return append(argv, b.Args...)
}

// Read parses the table and judges it: the exit status by nccl-tests' own
// codes, then every row against the sweep asked for, the correctness check
// and what any hardware could measure.
func (b NCCLTests) Read(p Plan, out Output) (*Measurement, *Failure) {
	rep, parseErr := nccltests.Parse(bytes.NewReader(out.Text))
	if nccltests.InPlaceUnsupported(b.Collective) {
		// nccl-tests 2.9 to 2.13.0 printed this column (an error of 1e+00,
		// a count) but left it out of its own error count and exit status.
		for i := range rep.Rows {
			rep.Rows[i].InPlace.Wrong = -1
		}
	}
	if f := judge(out.Exit, rep, parseErr); f != nil {
		return nil, f
	}
	ranks := len(rep.Devices)
	if f := b.matchSweep(p.Sizes, rep.Rows, ranks); f != nil {
		if rep.Cut != "" {
			f.Reason += "; nccl-tests said: " + rep.Cut + " (a smaller sizes.max fits)"
		}
		return nil, f
	}
	if f := b.matchRanks(ranks); f != nil {
		return nil, f
	}
	for _, row := range rep.Rows {
		if f := matchCount(b.Collective, row, ranks); f != nil {
			return nil, f
		}
		if b.Check && (row.OutOfPlace.Wrong < 0 || row.InPlace.Wrong < 0 && !nccltests.InPlaceUnsupported(b.Collective)) {
			return nil, &Failure{FailWrong, fmt.Sprintf("#wrong is N/A at %d bytes: the results were not checked, though benchmark.check is on", row.Size)}
		}
		if f := plausible(b.Collective, row, ranks, out.Log, b.NodeNetGBs); f != nil {
			return nil, f
		}
	}
	for i := range rep.Rows {
		rep.Rows[i].Collective = b.Collective
	}
	// A table that names no rank (a wrapper's) ran the ranks launched,
	// where the space says: what its bus factor is of, in every use of it.
	m := &Measurement{Rows: rep.Rows, Ranks: cmp.Or(ranks, b.Ranks*threads(b.Args)), Hosts: hosts(rep.Devices)}
	if ranks > 0 {
		m.GPU = rep.Devices[0].GPU
	}
	return m, nil
}

// nccl-tests' exit codes (testResult_t in src/common.h).
var exitMeaning = map[int]struct {
	kind   FailureKind
	reason string
}{
	1: {FailExit, "nccl-tests internal error"},
	2: {FailNCCL, "CUDA error"},
	3: {FailNCCL, "NCCL error"},
	4: {FailTimeout, "nccl-tests' own timeout (-T)"},
	5: {FailLaunch, "not supported by this build or launch"},
	6: {FailLaunch, "invalid usage"},
	7: {FailWrong, "wrong data, or bus bandwidth under NCCL_TESTS_MIN_BW"},
}

// judge classifies an nccl-tests run from its exit and its parsed output
// (and the parser's error): nil if it measured, and found its results correct.
func judge(e Exit, rep *nccltests.Report, parseErr error) *Failure {
	detail := rep.Aborted
	if detail == "" && len(rep.Failures) > 0 {
		detail = rep.Failures[0]
	}
	wrong := slices.IndexFunc(rep.Rows, func(r nccltests.Row) bool { return r.Wrong() > 0 })
	if detail == "" && wrong >= 0 {
		// nccl-tests exits 7 where it found wrong data: its table says where.
		detail = wrongElements(rep.Rows[wrong])
	}
	f := exitFailure(e, detail, func(code int) *Failure {
		m, ok := exitMeaning[code]
		if !ok {
			return nil
		}
		return &Failure{m.kind, fmt.Sprintf("exit status %d (%s)", code, m.reason)}
	})
	switch {
	case f != nil:
		return f
	case parseErr != nil && detail != "":
		return &Failure{FailNCCL, detail}
	case parseErr != nil:
		return &Failure{FailUnparsable, parseErr.Error()}
	case rep.Aborted != "":
		// A wrapper that swallowed the exit status: the line says nccl-tests stopped on an error.
		return &Failure{FailNCCL, "nccl-tests stopped on an error, though the exit status was 0: " + rep.Aborted}
	case rep.Ignored != "":
		return &Failure{FailUnparsable, "nccl-tests did not measure what benchmark.args ask: " + rep.Ignored}
	}
	// A clean exit with a full table: NCCL WARN lines alone (often harmless) do not fail it.
	if wrong >= 0 {
		return &Failure{FailWrong, wrongElements(rep.Rows[wrong])}
	}
	if rep.OutOfBounds > 0 {
		return &Failure{FailWrong, fmt.Sprintf("%d out-of-bounds values", rep.OutOfBounds)}
	}
	return nil
}

// wrongElements says how many elements of row were wrong.
func wrongElements(row nccltests.Row) string {
	return fmt.Sprintf("%d wrong elements at %d bytes", row.Wrong(), row.Size)
}

// matchSweep checks the table size by size against the sweep asked for: a
// truncated table, a second table, a repeated or a foreign row fail the trial.
func (b NCCLTests) matchSweep(sweep space.Sizes, rows []nccltests.Row, ranks int) *Failure {
	want := sweep.List()
	if len(rows) != len(want) {
		return &Failure{FailUnparsable, fmt.Sprintf("output has %d rows, the sweep %s..%s x%d has %d sizes",
			len(rows), space.FormatSize(sweep.Min), space.FormatSize(sweep.Max), sweep.Factor, len(want))}
	}
	for i, row := range rows {
		exact, ok := nccltests.PrintedSizes(b.Collective, want[i], row.Type, ranks)
		switch {
		case ok && !slices.Contains(exact, row.Size):
			return &Failure{FailUnparsable, fmt.Sprintf("row %d has size %d; the sweep's size %d prints as %s", i+1, row.Size, want[i], orList(exact))}
		case row.Size > want[i] || i > 0 && row.Size < rows[i-1].Size:
			return &Failure{FailUnparsable, fmt.Sprintf("row %d has size %d, not the sweep's size %d", i+1, row.Size, want[i])}
		}
	}
	return nil
}

// orList writes sizes as "1008 or 960".
func orList(sizes []int64) string {
	s := make([]string, len(sizes))
	for i, n := range sizes {
		s[i] = strconv.FormatInt(n, 10)
	}
	return strings.Join(s, " or ")
}

// matchCount checks a row's count against its size, as nccl-tests prints
// both from one element count (nccltests.PrintedCount): a row where they
// disagree is not nccl-tests' own.
func matchCount(coll string, row nccltests.Row, ranks int) *Failure {
	want, ok := nccltests.PrintedCount(coll, row.Size, row.Type, ranks)
	if !ok || row.Count == want {
		return nil
	}
	return &Failure{FailUnparsable, fmt.Sprintf("the row of %d bytes has count %d, which is not %s's count of %d bytes of %s over %d rank(s)",
		row.Size, row.Count, coll, row.Size, row.Type, ranks)}
}

// matchRanks checks the ranks the table's header names (one "# Rank" line
// each) against the ranks launched: one rank is bounded only by a device
// copy and several by the fabric, so a table that names one rank of a launch
// of sixteen (or a rank twice) would escape the bounds of what ran. A header
// that names none (a wrapper's own table) is held to the bounds of several
// ranks, with the widest bus factor of any collective.
func (b NCCLTests) matchRanks(ranks int) *Failure {
	want := b.Ranks * threads(b.Args)
	if b.Ranks <= 0 || want <= 0 || ranks == want || ranks == 0 {
		return nil
	}
	return &Failure{FailUnparsable, fmt.Sprintf("the output names %d rank(s) (its \"# Rank\" lines); the launch runs %d", ranks, want)}
}

// threads is nccl-tests' thread count (-t, --nthreads) in its extra
// arguments, each thread driving -g GPUs as ranks of its own: 1 when
// unset, 0 when it cannot be read. It reads them as nccl-tests does
// (space.NCCLTestsOptions: "--nt" is --nthreads, "010" is 8).
func threads(args []string) int {
	opts, err := space.NCCLTestsOptions(args)
	if err != nil {
		return 0
	}
	n := 1
	for _, o := range opts {
		if o.Long != "nthreads" {
			continue
		}
		t, ok := o.Int()
		if !ok || t < 1 {
			return 0
		}
		n = t
	}
	return n
}

// Ceilings on a measured bus bandwidth (GB/s). Numbers above them are
// garbled or made up, not fast. The floor on a time is below any GPU kernel
// launch.
//
// One node: NVLink 5 (B200) moves 900 GB/s each way per GPU (H100/H200's
// NVLink 4: 450); with NVLS the switch reduces, so an all-reduce's busbw
// can reach 2(n-1)/n of the per-direction rate, under 1800 GB/s; above 2000
// nothing measures.
//
// Several nodes: whatever the algorithm, each node's ports carry at least
// S(N-1)/N of an all-reduce of S bytes each way (2S(N-1)/N as a ring or
// tree; S with in-network reduction), so busbw = algbw*2(n-1)/n stays under
// 2(n-1)/n times the node's network rate (a looser bound than every other
// collective needs), plus 20% for rounding and clock skew. The node's rate
// is the simulated scenario's where known; otherwise each port NCCL says
// it uses counts as 800 Gbit/s (100 GB/s, the fastest InfiniBand and
// Ethernet ports shipping, ConnectX-8), eight ports where the log does not
// list them. Over NCCL's socket transport busbw stays under 1000.
//
// One rank communicates nothing: its out-of-place run is a copy in the
// GPU's memory, which reads and writes each byte, so it moves at most half
// the memory's bandwidth (B200's 8 TB/s: 4000 GB/s; an H200 measured 2105);
// in place nothing moves, and any time is possible.
const (
	maxCopyGBs      = 10000
	maxBusBWOneNode = 2000
	maxBusBWSockets = 1000 // several nodes over NCCL's socket transport
	maxPortGBs      = 100
	defaultPorts    = 8
	netMargin       = 1.2
	minTimeUs       = 0.5
)

// busCeiling is the most bus bandwidth (GB/s) the fabric NCCL reported can carry.
func busCeiling(ranks int, log nccllog.Log, nodeNet float64) (float64, string) {
	if log.Nodes <= 1 {
		return maxBusBWOneNode, "one node's NVLink"
	}
	if log.Network == "Socket" {
		return maxBusBWSockets, "NCCL's socket transport"
	}
	what := "the scenario's network"
	if nodeNet <= 0 {
		nodeNet = float64(maxPortGBs * defaultPorts)
		what = fmt.Sprintf("%d ports of 800 Gbit/s", defaultPorts)
		if log.NICs > 0 {
			nodeNet = float64(maxPortGBs * log.NICs)
			what = fmt.Sprintf("%d ports of at most 800 Gbit/s", log.NICs)
		}
	}
	n := float64(max(ranks, log.Ranks, 2))
	return netMargin * nodeNet * 2 * (n - 1) / n, what + " on " + strconv.Itoa(log.Nodes) + " nodes"
}

// plausible checks a row's numbers against each other and against what
// the fabric can carry. With one rank nothing is communicated: its
// out-of-place run is held to a device copy, its in-place one (where
// nothing moves) only to the table's own arithmetic.
func plausible(coll string, row nccltests.Row, ranks int, log nccllog.Log, nodeNet float64) *Failure {
	limit, fabric := busCeiling(ranks, log, nodeNet)
	factor, known := nccltests.BusFactor(coll, ranks)
	widest := factor
	if !known {
		widest = 2 // the largest bus factor of any collective
	}
	for _, m := range []struct {
		name string
		nccltests.Measure
	}{{"out-of-place", row.OutOfPlace}, {"in-place", row.InPlace}} {
		bad := func(format string, args ...any) *Failure {
			return &Failure{FailImplausible, fmt.Sprintf("%s at %d bytes: ", m.name, row.Size) + fmt.Sprintf(format, args...)}
		}
		// algbw is size/time, both rounded when printed: figures under 1 GB/s are too coarse to compare.
		if m.TimeUs > 0 && m.AlgBW >= 1 {
			want := float64(row.Size) / m.TimeUs / 1e3
			if math.Abs(m.AlgBW-want) > (0.02+printed(m.TimeUs, timeWidth)/m.TimeUs)*want+printed(m.AlgBW, bwWidth) {
				return bad("algbw %.4g GB/s, but %d bytes in %.4g us is %.4g GB/s", m.AlgBW, row.Size, m.TimeUs, want)
			}
		}
		switch {
		case m.AlgBW < 1:
		case known && math.Abs(m.BusBW-factor*m.AlgBW) > 0.03*m.AlgBW:
			return bad("busbw %.4g GB/s is not %s's bus factor %.3g times algbw %.4g GB/s for %d ranks", m.BusBW, coll, factor, m.AlgBW, ranks)
		case m.BusBW > 2*m.AlgBW*1.03:
			return bad("busbw %.4g GB/s is more than twice algbw %.4g GB/s, which no collective's bus factor allows", m.BusBW, m.AlgBW)
		}
		if row.Size == 0 || ranks == 1 && m.name == "in-place" {
			continue
		}
		if m.TimeUs < minTimeUs {
			return bad("%.3g us is faster than any GPU launches a kernel", m.TimeUs)
		}
		if ranks == 1 {
			if copied := float64(row.Size) / m.TimeUs / 1e3; copied > maxCopyGBs {
				return bad("one rank copied %d bytes at %.4g GB/s, beyond any GPU's memory (ceiling %d GB/s)", row.Size, copied, maxCopyGBs)
			}
			continue
		}
		if bus := float64(row.Size) / m.TimeUs / 1e3 * widest; bus > limit {
			return bad("%.4g GB/s of bus bandwidth is more than %s can carry (ceiling %.0f GB/s)", bus, fabric, limit)
		}
	}
	return nil
}

// The widths of nccl-tests' time and bandwidth columns.
const (
	timeWidth = 7
	bwWidth   = 6
)

// printed is the rounding of a number as nccl-tests prints it in a column
// of width characters (nccltests.FormatFloat): half its last digit, so
// that 1e+06 GB/s is anything from 500,000 to 1,500,000.
func printed(v float64, width int) float64 {
	mantissa, exp, _ := strings.Cut(strings.TrimSpace(nccltests.FormatFloat(v, width)), "e")
	_, decimals, _ := strings.Cut(mantissa, ".")
	e, _ := strconv.Atoi(exp) // 0 without an exponent
	return 0.5 * math.Pow(10, float64(e-len(decimals)))
}
