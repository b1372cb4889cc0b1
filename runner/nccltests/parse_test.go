package nccltests

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseGolden(t *testing.T) {
	f, err := os.Open("testdata/v2.18.3-2x8-ompi-warnings.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep, err := Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Version != "2.18.3" || len(rep.Rows) != 24 || rep.AvgBusBW != 17.8413 || rep.OutOfBounds != 0 || len(rep.Failures) != 0 {
		t.Fatalf("report = version %q, %d rows, avg %v, oob %d, failures %q", rep.Version, len(rep.Rows), rep.AvgBusBW, rep.OutOfBounds, rep.Failures)
	}
	if len(rep.Devices) != 16 || rep.Devices[15] != (Device{Rank: 15, Host: "R6KD-CX8aaS-GPU-15", GPU: "NVIDIA Graphics Device"}) {
		t.Errorf("devices = %+v", rep.Devices)
	}
	last := rep.Rows[23]
	want := Row{Size: 8589934592, Count: 2147483648, Type: "float", Redop: "sum", Root: -1,
		OutOfPlace: Measure{459108, 18.71, 35.08, 0}, InPlace: Measure{459602, 18.69, 35.04, 0}}
	if last != want {
		t.Errorf("last row = %+v\nwant %+v", last, want)
	}
}

const header = `# nccl-tests version 2.19.6 nccl-headers=22803 nccl-library=22803
# Collective test starting: all_gather_perf
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
`

func TestParseCases(t *testing.T) {
	for _, tc := range []struct {
		name     string
		in       string
		rows     int
		wrong    int64
		failures int
		noRows   bool
	}{
		{"interleaved INFO and tags", header +
			"[1,0]<stdout>:node1:12:12 [0] NCCL INFO Using network IB\n" +
			"[1,0]<stdout>:        1024           32     float    none      -1    20.50    0.05    0.04       0    19.93    0.05    0.05       0\n" +
			"0:         2048           64     float    none      -1    21.10    0.10    0.08       0    20.01    0.10    0.09       0\n", 2, 0, 0, false},
		// srun --label pads the task id to the width of the largest: " 0: " of 16 tasks.
		{"srun labels of many tasks", header +
			" 0:         1024           32     float    none      -1    20.50    0.05    0.04       0    19.93    0.05    0.05       0\n" +
			"  0:         2048           64     float    none      -1    21.10    0.10    0.08       0    20.01    0.10    0.09       0\n", 2, 0, 0, false},
		// MPICH's and Intel MPI's mpiexec -l (-prepend-rank) put "[rank] " before every line.
		{"Hydra's -prepend-rank", "[0] " + strings.ReplaceAll(strings.TrimSuffix(header, "\n"), "\n", "\n[0] ") + "\n" +
			"[0] node1:12:12 [0] NCCL INFO Using network IB\n" +
			"[0]         1024           32     float    none      -1    20.50    0.05    0.04       0    19.93    0.05    0.05       0\n" +
			"[12] node2:13:13 [4] NCCL INFO Using network IB\n" +
			"[0]         2048           64     float    none      -1    21.10    0.10    0.08       0    20.01    0.10    0.09       0\n", 2, 0, 0, false},
		{"older 12 columns, float error", "#  size count type redop time algbw busbw error time algbw busbw error\n" +
			"     8      2   float     sum    10.37    0.00    0.00  0e+00    10.16    0.00    0.00  0e+00\n" +
			"    16      4   float     sum    10.33    0.00    0.00  2e+00    10.11    0.00    0.00  0e+00\n", 2, 1, 0, false},
		{"unchecked N/A", header + "  1024  256  float  sum  -1  20.5  0.05  0.09  N/A  19.9  0.05  0.09  N/A\n", 1, 0, 0, false},
		{"wrong results", header + "  1024  256  float  sum  -1  20.5  0.05  0.09  3  19.9  0.05  0.09  0\n", 1, 3, 0, false},
		// %6g: a million wrong elements print as 1e+06 under "#wrong", a count, not an old-style error.
		{"a million wrong results", header + "  8388608  2097152  float  sum  -1  20.5  0.05  0.09  1e+06  19.9  0.05  0.09  1.23457e+06\n", 1, 2234570, 0, false},
		{"NCCL failure", header + "node1: Test NCCL failure common.cu:1005 'internal error - please report this issue to the NCCL developers / '\n" +
			" .. node1 pid 1234: Test failure common.cu:891\n", 0, 0, 2, true},
		{"truncated mid-row", header + "  1024  256  float  sum  -1  20.5  0.05  0.09  0  19.9  0.05  0.09  0\n  2048  512  float  sum  -1  21.5  0.0", 1, 0, 0, false},
		{"garbage", "\x00\x01 segmentation fault\n%%%% 12 13 14\n1 2 3 4 5 6 7 8 9 10 11 12 13\n", 0, 0, 0, true},
		{"empty", "", 0, 0, 0, true},
		// A line over the scanner's 4 MiB (a wrapper's progress bar, a dump)
		// is passed over: the rows before and after it are read.
		{"an over-long line before the table", strings.Repeat("x", 5<<20) + "\n" + header + "  1024  256  float  sum  -1  20.5  0.05  0.09  0  19.9  0.05  0.09  0\n", 1, 0, 0, false},
		{"an over-long line between rows", header + "  1024  256  float  sum  -1  20.5  0.05  0.09  0  19.9  0.05  0.09  0\n" + strings.Repeat("y", 5<<20) +
			"\n  2048  512  float  sum  -1  21.5  0.10  0.18  0  20.9  0.10  0.18  2\n", 2, 2, 0, false},
		{"an over-long unfinished last line", header + "  1024  256  float  sum  -1  20.5  0.05  0.09  0  19.9  0.05  0.09  0\n" + strings.Repeat("z", 5<<20), 1, 0, 0, false},
		// Cut at 64 KiB, this line would be a row of 13 fields: it is passed over whole.
		{"a row with a 14th field past 64 KiB", header + "  1024  256  float  sum  -1  20.5  0.05  0.09  0  19.9  0.05  0.09  0" + strings.Repeat(" ", 64<<10) + "7\n", 0, 0, 0, true},
		// Numbers are read as printf writes them: Go's own forms, infinities,
		// and numbers beyond a float64 are not, and such a line is no row.
		{"a hexadecimal float", header + "  1024  256  float  sum  -1  0x1p3  0.05  0.09  0  19.9  0.05  0.09  0\n", 0, 0, 0, true},
		{"underscores", header + "  1_024  256  float  sum  -1  20.5  0.05  0.09  0  19.9  0.05  0.09  0\n", 0, 0, 0, true},
		{"underscores in a float", header + "  1024  256  float  sum  -1  2_0.5  0.05  0.09  0  19.9  0.05  0.09  0\n", 0, 0, 0, true},
		{"a signed size", header + "  +1024  256  float  sum  -1  20.5  0.05  0.09  0  19.9  0.05  0.09  0\n", 0, 0, 0, true},
		{"a signed count of wrong elements", header + "  1024  256  float  sum  -1  20.5  0.05  0.09  +0  19.9  0.05  0.09  0\n", 0, 0, 0, true},
		{"Inf", header + "  1024  256  float  sum  -1  20.5  Inf  0.09  0  19.9  0.05  0.09  0\n", 0, 0, 0, true},
		{"an underflow read as 0", header + "  1024  256  float  sum  -1  1e-400  0.05  0.09  0  19.9  0.05  0.09  0\n", 0, 0, 0, true},
		{"negative numbers are not rows", header + "  1024  256  float  sum  -1  -20.5  0.05  0.09  0  19.9  0.05  0.09  0\n", 0, 0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := Parse(strings.NewReader(tc.in))
			if tc.noRows != errors.Is(err, ErrNoResults) {
				t.Fatalf("err = %v, want no-rows %v", err, tc.noRows)
			}
			var wrong int64
			for _, r := range rep.Rows {
				wrong += r.Wrong()
			}
			if len(rep.Rows) != tc.rows || wrong != tc.wrong || len(rep.Failures) != tc.failures {
				t.Errorf("got %d rows, %d wrong, failures %q; want %d, %d, %d", len(rep.Rows), wrong, rep.Failures, tc.rows, tc.wrong, tc.failures)
			}
			if !math.IsNaN(rep.AvgBusBW) {
				t.Errorf("AvgBusBW = %v without an average line", rep.AvgBusBW)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	golden, _ := os.ReadFile("testdata/v2.18.3-2x8-ompi-warnings.txt")
	f.Add(string(golden))
	f.Add(header + "  1024  256  float  sum  -1  20.5  0.05  0.09  N/A  19.9  0.05  0.09  1e+300\n")
	f.Fuzz(func(t *testing.T, in string) {
		rep, err := Parse(strings.NewReader(in))
		if err == nil && len(rep.Rows) == 0 {
			t.Fatal("no error without rows")
		}
		for _, r := range rep.Rows {
			if r.Size < 0 || r.Wrong() < 0 || r.OutOfPlace.TimeUs < 0 {
				t.Fatalf("impossible row %+v", r)
			}
		}
	})
}

// TestParseH200 reads the outputs captured on a real H200 (see the folder's README).
func TestParseH200(t *testing.T) {
	dir := "testdata/h200-nccl2.28.3-tests2.19.6/"
	for _, tc := range []struct {
		file      string
		rows      int
		redop     string
		unchecked bool
		failure   string
	}{
		{"all_reduce_perf.txt", 11, "sum", false, ""},
		{"all_gather_perf.txt", 11, "none", false, ""},
		{"reduce_scatter_perf.txt", 11, "sum", false, ""},
		{"broadcast_perf.txt", 11, "none", false, ""},
		{"reduce_perf.txt", 11, "sum", false, ""},
		{"alltoall_perf.txt", 11, "none", false, ""},
		{"sendrecv_perf.txt", 11, "sum", false, ""},
		{"mpirun_tagged.txt", 6, "sum", false, ""},
		{"nocheck.txt", 6, "sum", true, ""},
		{"ll9.txt", 6, "sum", false, ""},
		{"two_gpus_on_one.txt", 0, "", false, "Invalid number of GPUs: 2 requested but only 1 were found."},
		{"dup_gpu.txt", 0, "", false, "Invalid number of GPUs"},
	} {
		data, err := os.ReadFile(dir + tc.file)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := Parse(strings.NewReader(string(data)))
		if tc.rows == 0 {
			if !errors.Is(err, ErrNoResults) || len(rep.Failures) == 0 || rep.Failures[0] != tc.failure && !strings.HasPrefix(rep.Failures[0], tc.failure) {
				t.Errorf("%s: err %v, failures %q", tc.file, err, rep.Failures)
			}
			continue
		}
		if err != nil || len(rep.Rows) != tc.rows || rep.Version != "2.19.6" || len(rep.Failures) != 0 {
			t.Errorf("%s: %v, %d rows, version %q, failures %q", tc.file, err, len(rep.Rows), rep.Version, rep.Failures)
			continue
		}
		// all_gather and alltoall round sizes to a multiple of ranks x type size: 8 becomes 0.
		// The second row is 32 (-f 4) or 64 (-f 8).
		if r := rep.Rows[1]; r.Size != 32 && r.Size != 64 || r.Redop != tc.redop || (r.OutOfPlace.Wrong == -1) != tc.unchecked || r.OutOfPlace.TimeUs <= 0 {
			t.Errorf("%s: first row %+v", tc.file, r)
		}
	}
}

// TestParseOldVersions reads outputs of nccl-tests before 2.11 (an "error"
// column holding the largest error, no root column, and rootful collectives
// without a redop column), published in a user's report.
func TestParseOldVersions(t *testing.T) {
	for _, tc := range []struct {
		file  string
		redop string
		root  int
	}{
		{"testdata/v2.x-old-error-column-12xV100.txt", "sum", -1},
		{"testdata/v2.x-old-broadcast-no-redop.txt", "none", 0},
	} {
		data, err := os.ReadFile(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := Parse(strings.NewReader(string(data)))
		if err != nil || len(rep.Rows) != 31 {
			t.Fatalf("%s: %v, %d rows", tc.file, err, len(rep.Rows))
		}
		for _, r := range rep.Rows {
			// Errors of 2e-07 on float are rounding, well within nccl-tests' tolerance.
			if r.Wrong() != 0 || r.Redop != tc.redop || r.Root != tc.root {
				t.Fatalf("%s: row %+v", tc.file, r)
			}
		}
		// The same table with one error above tolerance is wrong.
		bad := string(data)
		bad = strings.Replace(bad, "127453   67.40  123.56  2e-07", "127453   67.40  123.56  3e-03", 1)
		bad = strings.Replace(bad, "70321  122.15  122.15  0e+00", "70321  122.15  122.15  3e-03", 1)
		rep, _ = Parse(strings.NewReader(bad))
		if last := rep.Rows[30]; last.Wrong() != 1 {
			t.Errorf("%s: an error of 3e-03 on float was not judged wrong: %+v", tc.file, last)
		}
	}
}

// TestParseRefusesChangedTables: a table that an option of nccl-tests
// changed (its header as nccl-tests 2.19 prints it) fails with the option's
// name, not as a table without rows, nor (-C) as one whose times are right.
func TestParseRefusesChangedTables(t *testing.T) {
	const row = "        1024           256     float     sum      -1    20.50    0.05    0.09       0    19.93    0.05    0.09       0"
	for _, tc := range []struct {
		name, header, row, want string
	}{
		{"-S", "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong           timestamp",
			row + "  2025-11-03 10:11:12", "a timestamp column, which nccl-tests prints with -S (--report_timestamps)"},
		{"-I", "#       size         count      type   redop    root     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%",
			"        1024           256     float     sum      -1    20.50    0.05    0.09       0    19.10    22.30    22.30     3.10    19.93    0.05    0.09       0    19.00    21.00    21.00     2.50",
			"-I (--per_iter_timing)"},
		{"-C", "#       size         count      type   redop    root  cputime   algbw   busbw  #wrong  cputime   algbw   busbw  #wrong", "[1,0]<stdout>:" + row, "a cputime column, which nccl-tests prints with -C (--report_cputime)"},
	} {
		rep, err := Parse(strings.NewReader(tc.header + "\n" + tc.row + "\n"))
		if err == nil || !strings.Contains(err.Error(), tc.want) || errors.Is(err, ErrNoResults) {
			t.Errorf("%s: %d rows, error %v; want %q", tc.name, len(rep.Rows), err, tc.want)
		}
	}
}

// TestPrintedCount: nccl-tests prints a row's size and count from one
// element count; every recorded row agrees.
func TestPrintedCount(t *testing.T) {
	for _, tc := range []struct {
		coll, dataType string
		size           int64
		ranks          int
		want           int64
		ok             bool
	}{
		{"all_reduce", "float", 1024, 0, 256, true},
		{"broadcast", "half", 1024, 8, 512, true},
		{"sendrecv", "double", 1024, 2, 128, true},
		{"all_gather", "float", 960, 12, 20, true}, // each rank's share
		{"alltoall", "bfloat16", 1024, 8, 64, true},
		{"reduce_scatter", "int8", 1000, 8, 125, true},
		{"all_reduce", "float", 1022, 1, -1, true}, // no count prints it
		{"all_gather", "float", 1024, 0, 0, false}, // the ranks unknown
		{"all_reduce", "char", 1024, 1, 0, false},  // the type unknown
		{"gather", "float", 1024, 8, 0, false},
	} {
		if got, ok := PrintedCount(tc.coll, tc.size, tc.dataType, tc.ranks); got != tc.want || ok != tc.ok {
			t.Errorf("PrintedCount(%s, %d, %s, %d) = %d, %v; want %d, %v", tc.coll, tc.size, tc.dataType, tc.ranks, got, ok, tc.want, tc.ok)
		}
	}
	files, _ := filepath.Glob("testdata/*/*_perf*.txt")
	files = append(files, "testdata/v2.18.3-2x8-ompi-warnings.txt", "testdata/v2.x-old-error-column-12xV100.txt", "testdata/v2.x-old-broadcast-no-redop.txt",
		"testdata/h200-nccl2.28.3-tests2.19.6/mpirun_tagged.txt", "testdata/h200-nccl2.28.3-tests2.19.6/ll9.txt", "testdata/h200-nccl2.28.3-tests2.19.6/nocheck.txt")
	rows := 0
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		coll := "all_reduce"
		for _, c := range []string{"all_gather", "reduce_scatter", "alltoall", "broadcast", "reduce_perf", "sendrecv"} {
			if strings.Contains(file, c) {
				coll = strings.TrimSuffix(c, "_perf")
			}
		}
		rep, _ := Parse(strings.NewReader(string(data)))
		for _, r := range rep.Rows {
			want, ok := PrintedCount(coll, r.Size, r.Type, len(rep.Devices))
			if !ok || r.Count != want {
				t.Errorf("%s: %s row %+v: count %d, %v", file, coll, r, want, ok)
			}
			rows++
		}
	}
	if rows < 190 {
		t.Errorf("%d rows read from %d files", rows, len(files))
	}
}

// TestWrongCountIsNeverLess: under a "#wrong" header, a number nccl-tests'
// %g could not print for a count (a fraction, or past int64) is still that
// many wrong results or more: rounded to 0, or wrapped negative, a wrong
// result read as none.
func TestWrongCountIsNeverLess(t *testing.T) {
	for _, w := range []string{"4e-01", "0.4", "1e+30", "9.3e+18"} {
		rep, err := Parse(strings.NewReader(header + "  1024  256  float  sum  -1  20.5  0.05  0.09  " + w + "  19.9  0.05  0.09  0\n"))
		if err != nil || len(rep.Rows) != 1 {
			t.Fatalf("%s: %v, %+v", w, err, rep)
		}
		if m := rep.Rows[0].OutOfPlace; m.Wrong < 1 {
			t.Errorf("#wrong %s read as %d wrong results", w, m.Wrong)
		}
	}
}

// NCCL logs to the stdout nccl-tests prints its table to, through the same
// buffer, and an INFO line has no newline before it: with
// NCCL_DEBUG_SUBSYS=TUNING (validation's probe) rank 0 logs every launch,
// in the middle of the row the launch measures.
func TestParseRowsNCCLLogsInto(t *testing.T) {
	// NCCL_DEBUG_TIMESTAMP_LEVELS=INFO puts the time before each record,
	// NCCL_DEBUG_TIMESTAMP_FORMAT's ("[%F %T] " by default).
	for _, time := range []string{"", "[2026-12-06 10:00:00] ", "[2026-12-06 10:00:00.123456] "} {
		tuning := func(host string) string {
			return time + host + ":41234:41234 [0] NCCL INFO AllReduce: 1048576 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..15}\n"
		}
		for _, host := range []string{"gpu-node-7", "7gpu", "e1"} { // a host may begin as a number's end does
			timed := "[2026-12-06 10:00:00] " + strings.TrimPrefix(tuning(host), time)
			in := header +
				"#  Rank  0 Group  0 Pid  41234 on " + host + " device  0 [0000:18:00] NVIDIA H200\n" +
				"#  Rank  1 Group  0 Pid  41235 on " + host + " device  1 [0000:2a:00] NVIDIA H200\n" +
				host + ":41234:41234 [0] NCCL INFO comm 0x55d0c1d0 rank 0 nranks 2 cudaDev 0 busId 18000 - Init COMPLETE\n" +
				"     1048576        262144     float     sum      -1" + tuning(host) + tuning(host) +
				"   12.34   84.97   84.97       0" + tuning(host) + tuning(host) +
				"   12.10   86.66   86.66       0\n" + timed +
				"     2097152        524288     float     sum      -1    20.00  104.86  104.86       0    20.00  104.86  104.86       0\n" +
				// Another thread's record (a proxy's) may come between the row and its newline.
				"     4194304       1048576     float     sum      -1    30.00  139.81  139.81       0    30.00  139.81  139.81       0" + tuning(host) + "\n"
			rep, err := Parse(strings.NewReader(in))
			if err != nil || len(rep.Rows) != 3 {
				t.Fatalf("time %q, host %s: %d rows, %v", time, host, len(rep.Rows), err)
			}
			want := Row{Size: 1048576, Count: 262144, Type: "float", Redop: "sum", Root: -1,
				OutOfPlace: Measure{12.34, 84.97, 84.97, 0}, InPlace: Measure{12.10, 86.66, 86.66, 0}}
			if rep.Rows[0] != want {
				t.Errorf("time %q, host %s: row = %+v\nwant %+v", time, host, rep.Rows[0], want)
			}
		}
	}
}

// A WARN record begins with a newline of its own, and the time by default
// (NCCL_DEBUG_TIMESTAMP_LEVELS): one logged as a row is printed (a proxy
// thread's "Got async event") leaves the row's start on a line alone.
func TestParseRowsNCCLWarnsInto(t *testing.T) {
	info := "node-7:41234:41234 [0] NCCL INFO AllReduce: 4096 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..0}\n"
	warn := "[2026-12-06 10:00:00] node-7:41234:41290 [0] ib_plugin.cc:452 (ncclIbAsyncThreadMain) NCCL WARN NET/IB : Got async event : GID table change\n"
	in := header +
		"#  Rank  0 Group  0 Pid  41234 on node-7 device  0 [0000:18:00] NVIDIA H200\n" +
		"     1048576        262144     float     sum      -1\n" + warn +
		"   12.34   84.97   84.97       0\n" + warn +
		"   12.10   86.66   86.66       0\n" +
		// A row's start that no record follows is no part of the next row.
		"     1048576        262144     float     sum      -1\n" +
		"     1048576        262144     float     sum      -1\n     4096  1024  float  sum  -1" + info + "   1.00  4.10  4.10  0   1.00  4.10  4.10  0\n" +
		"     2097152        524288     float     sum      -1    20.00  104.86  104.86       0    20.00  104.86  104.86       0\n"
	rep, err := Parse(strings.NewReader(in))
	if err != nil || len(rep.Rows) != 3 {
		t.Fatalf("%d rows, %v", len(rep.Rows), err)
	}
	want := Row{Size: 1048576, Count: 262144, Type: "float", Redop: "sum", Root: -1,
		OutOfPlace: Measure{12.34, 84.97, 84.97, 0}, InPlace: Measure{12.10, 86.66, 86.66, 0}}
	if rep.Rows[0] != want || rep.Rows[1].Size != 4096 || rep.Rows[2].Size != 2097152 || len(rep.Failures) != 2 {
		t.Errorf("rows = %+v, failures %q", rep.Rows, rep.Failures)
	}
}

// A time NCCL_DEBUG_TIMESTAMP_FORMAT writes without brackets, digits first
// ("%T.%3f "), cannot be told from the end of the row's part it is glued
// to ("0" and "10:00:00.123"): such a row is not read, never read with
// the time's digits in a field (10 wrong elements).
func TestParseRowsNCCLLogsUnbracketedTimes(t *testing.T) {
	for _, time := range []string{"10:00:00.123 ", "10:00:00 "} {
		info := time + "node-7:41234:41234 [0] NCCL INFO AllReduce: 1048576 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..15}\n"
		in := header +
			"#  Rank  0 Group  0 Pid  41234 on node-7 device  0 [0000:18:00] NVIDIA H200\n" +
			"     1048576        262144     float     sum      -1" + info +
			"   12.34   84.97   84.97       0" + info +
			"   12.10   86.66   86.66       0\n"
		rep, _ := Parse(strings.NewReader(in))
		for _, row := range rep.Rows {
			if row.Root != -1 || row.Wrong() != 0 {
				t.Errorf("time %q: row %+v", time, row)
			}
		}
	}
}

// TestFormatIsNCCLTests: FormatFloat and FormatWrong write every number of
// what nccl-tests 2.19.6 printed on an H200 as it printed it (1e+06 GB/s,
// 1124.2, 0.00, N/A), and the widest numbers as its getFloatStr does.
func TestFormatIsNCCLTests(t *testing.T) {
	files, _ := filepath.Glob("testdata/h200-nccl2.28.3-tests2.19.6/*.txt")
	lines := 0
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			row, _, ok := parseRow(strings.Fields(line))
			if !ok {
				continue
			}
			lines++
			if got := FormatRow(row); got != line {
				t.Errorf("%s:\n got %q\nwant %q", filepath.Base(name), got, line)
			}
		}
	}
	if lines < 50 {
		t.Fatalf("%d rows in the recordings", lines)
	}
	for _, tc := range []struct {
		v     float64
		width int
		want  string
	}{{12345678, 7, "1.2e+07"}, {1e100, 7, "1.0e+10"}, {9999999, 7, "9999999"}, {1234.567, 6, "1234.6"}, {12345.6, 6, " 12346"}, {1234567, 6, " 1e+06"},
		// getFloatStr picks the decimals by the digits before the point
		// before rounding: a value that rounds up to more is printed wider.
		{999.999, 6, "1000.00"}, {9999.96, 6, "10000.0"}, {999999.6, 6, "1000000"}, {9999.996, 7, "10000.00"}} {
		if got := FormatFloat(tc.v, tc.width); got != tc.want {
			t.Errorf("FormatFloat(%g, %d) = %q, want %q", tc.v, tc.width, got, tc.want)
		}
	}
	if got := FormatWrong(16048145); got != "  1.60481e+07" {
		t.Errorf("FormatWrong(16048145) = %q", got)
	}
}
