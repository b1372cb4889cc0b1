package runner

import (
	"math"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/nccltune/nccltune/runner/nccllog"
	"github.com/nccltune/nccltune/runner/nccltests"
	"github.com/nccltune/nccltune/space"
)

// hostileTables are outputs a broken or hostile benchmark prints after a
// clean exit; none may be taken for a measurement.
var hostileTables = []struct {
	name, out string
	kind      FailureKind
}{
	{"two tables", goodTable + goodTable, FailUnparsable},
	{"a row twice", goodTable + "        1024           256     float     sum      -1    20.50    0.05    0.09       0    19.93    0.05    0.09       0\n", FailUnparsable},
	{"a foreign size", strings.Replace(goodTable, "        1024           256", "        2048           512", 1), FailUnparsable},
	{"unchecked though check is on", strings.ReplaceAll(goodTable, "0.09       0", "0.09     N/A"), FailWrong},
	{"absurd bandwidth", "        1024           256     float     sum      -1     0.00001    999999999.0    999999999.0       0    0.00001    999999999.0    999999999.0       0\n", FailImplausible},
	{"busbw unrelated to algbw", "        1024           256     float     sum      -1    1.00    1.02    90.00       0    1.00    1.02    90.00       0\n", FailImplausible},
	// nccl-tests prints these only as it stops on an error (its teardown, after
	// the table): a wrapper that swallowed the exit status hides nothing.
	{"Test NCCL failure after the table", goodTable + "node1: Test NCCL failure common.cu:1786 'unhandled cuda error / '\n .. node1 pid 7: Test failure common.cu:1120\n", FailNCCL},
	{"Test CUDA failure after the table", goodTable + "[1,3]<stdout>:node2: Test CUDA failure common.cu:1795 'an illegal memory access was encountered'\n", FailNCCL},
	{"Test failure alone after the table", goodTable + " .. node1 pid 7: Test failure common.cu:891\n", FailNCCL},
	{"Test NCCL failure after 60 warnings", goodTable + strings.Repeat("node1:1:1 [0] NCCL WARN Could not find real path of /sys/class/net/ib0\n", 60) + "node1: Test NCCL failure common.cu:1786 'internal error'\n", FailNCCL},
	// nccl-tests prints a row's size and count from one element count.
	{"a count that is not the size's", strings.Replace(goodTable, "        1024           256", "        1024           255", 1), FailUnparsable},
	// nccl-tests -C prints the CPU's time to launch where the time was.
	{"CPU time in the time column", strings.ReplaceAll(goodTable, "    time", " cputime"), FailUnparsable},
	// nccl-tests runs on without an option's value it cannot take, measuring another thing than asked.
	{"a data type nccl-tests does not know", "invalid type bf16, defaulting to float .. \n" + goodTable, FailUnparsable},
	{"an op nccl-tests does not know", "invalid op avg, defaulting to sum .. \n" + goodTable, FailUnparsable},
	{"CUDA graphs this build cannot run", "Option -G (CUDA graph) not supported before NCCL 2.9 + CUDA 11.3. Ignoring\n" + goodTable, FailUnparsable},
	{"registration this NCCL cannot do", "Option -R 2 (symmetric) is not supported before NCCL 2.27. Defaulting to local registration\n" + goodTable, FailUnparsable},
	{"blocking mode with CUDA graphs", "blocking mode (-z 3) is incompatible with CUDA graph mode (-G). Disabling.\n" + goodTable, FailUnparsable},
	{"a device CTA count out of bounds", "device_cta_count (-V) must be positive and less than 128, got 200. Using default value 16.\n" + goodTable, FailUnparsable},
	{"a per-iteration skip without per-iteration timing", "per-iteration skip (-K) requires per-iteration timing (-I 1). Disabling.\n" + goodTable, FailUnparsable},
	// nccl-tests cuts the sweep to what the GPU's memory holds, and says so.
	{"a sweep cut for memory", "#\n# Reducing maxBytes to 1024 due to memory limitation\n" + goodTable, FailUnparsable},
	{"algbw unrelated to the time", "        1048576        262144     float     sum      -1    10.00    500.00    500.00       0    10.00    500.00    500.00       0\n", FailImplausible},
}

func TestHostileBenchmarkOutput(t *testing.T) {
	for _, tc := range hostileTables {
		t.Run(tc.name, func(t *testing.T) {
			plan := Plan{Sizes: space.Sizes{Min: 1024, Max: 1024, Factor: 2}}
			switch tc.name {
			case "algbw unrelated to the time":
				plan.Sizes = space.Sizes{Min: 1 << 20, Max: 1 << 20, Factor: 2}
			case "a sweep cut for memory":
				plan.Sizes.Max = 2048
			}
			b := NCCLTests{Collective: "all_reduce", Check: true}
			m, f := b.Read(plan, Output{Text: []byte(tc.out), Log: nccllog.Log{Nodes: 2, Network: "IB"}})
			if tc.name == "a sweep cut for memory" && (f == nil || !strings.Contains(f.Reason, "Reducing maxBytes to 1024 due to memory limitation")) {
				t.Errorf("failure %v does not say why the sweep was cut", f)
			}
			if f == nil || f.Kind != tc.kind {
				t.Errorf("measurement %+v, failure %v; want %s", m, f, tc.kind)
			}
		})
	}
}

// TestSweepCutAboveItsSizes: nccl-tests' maxBytes cut for memory above the
// sweep's largest size (-e 1500 of sizes 1024 x2) cost it no row.
func TestSweepCutAboveItsSizes(t *testing.T) {
	out := "#\n# Reducing maxBytes to 1100 due to memory limitation\n" + goodTable
	plan := Plan{Sizes: space.Sizes{Min: 1024, Max: 1500, Factor: 2}}
	if _, f := (NCCLTests{Collective: "all_reduce", Check: true}).Read(plan, Output{Text: []byte(out)}); f != nil {
		t.Error(f)
	}
}

// FuzzRead: whatever a benchmark prints, its reader returns a failure or a
// measurement of finite, non-negative numbers; never a panic.
func FuzzRead(f *testing.F) {
	for _, tc := range hostileTables {
		f.Add(tc.out)
	}
	golden, _ := os.ReadFile("nccltests/testdata/v2.18.3-2x8-ompi-warnings.txt")
	f.Add(string(golden))
	f.Add(goodTable)
	f.Add(`NCCLTUNE_DDP {"rank": 0, "world": 1, "steps": 3, "step_ms_mean": 1e-320}`)
	f.Add(`iteration time: 1e400 ms` + "\n" + `{"ms": -0}`)
	sweep := Plan{Sizes: space.Sizes{Min: 1024, Max: 8 << 30, Factor: 2}, Iters: 20}
	user, _ := newUserCommand(space.BenchmarkSettings{Kind: space.Command, Command: []string{"x"}, Metric: space.Metric{Regex: `time: (\S+) ms`, Goal: "min"}}, space.LauncherSettings{})
	json, _ := newUserCommand(space.BenchmarkSettings{Kind: space.Command, Command: []string{"x"}, Metric: space.Metric{JSON: "ms", Goal: "max"}}, space.LauncherSettings{})
	readers := []Benchmark{NCCLTests{Collective: "all_reduce", Check: true}, NCCLTests{Collective: "all_gather"}, DDPStep{}, user, json}
	f.Fuzz(func(t *testing.T, out string) {
		for _, b := range readers {
			for _, plan := range []Plan{sweep, {Sizes: space.Sizes{Min: 1024, Max: 1024, Factor: 2}}} {
				m, fail := b.Read(plan, outputOf(b, []byte(out)))
				if (m == nil) == (fail == nil) {
					t.Fatalf("%T: measurement %v and failure %v", b, m, fail)
				}
				if m == nil {
					continue
				}
				if math.IsNaN(m.Value) || math.IsInf(m.Value, 0) || m.Value < 0 {
					t.Fatalf("%T: value %v", b, m.Value)
				}
				for _, r := range m.Rows {
					for _, x := range []float64{r.OutOfPlace.TimeUs, r.OutOfPlace.AlgBW, r.OutOfPlace.BusBW, r.InPlace.TimeUs, r.InPlace.AlgBW, r.InPlace.BusBW} {
						if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
							t.Fatalf("%T: row %+v", b, r)
						}
					}
				}
			}
		}
	})
}

// TestRecordedOutputIsPlausible: what nccl-tests prints on real hardware is
// never implausible, however it rounds: an in-place run on one H200 moves
// nothing, and its algbw of 1.22e6 GB/s prints as 1e+06.
func TestRecordedOutputIsPlausible(t *testing.T) {
	out, err := os.ReadFile("nccltests/testdata/h200-nccl2.28.3-tests2.19.6/all_reduce_perf_512M.txt")
	if err != nil {
		t.Fatal(err)
	}
	b := NCCLTests{Binary: "all_reduce_perf", Collective: "all_reduce", GPUs: 1, Check: true}
	plan := Plan{Sizes: space.Sizes{Min: 8, Max: 512 << 20, Factor: 4}, Iters: 20, Warmup: 5}
	m, f := b.Read(plan, Output{Text: out, Log: nccllog.Parse(out)})
	if f != nil || len(m.Rows) != 14 {
		t.Fatalf("%v", f)
	}
	for _, tc := range []struct {
		v     float64
		width int
		want  float64
	}{{2103.6, 6, 0.05}, {781585, 6, 0.5}, {1.22e6, 6, 0.5e6}, {255.21, 7, 0.005}, {12345678, 7, 0.05e7}} {
		if got := printed(tc.v, tc.width); math.Abs(got-tc.want) > 1e-9*tc.want {
			t.Errorf("printed(%g, %d) = %g, want %g", tc.v, tc.width, got, tc.want)
		}
	}
}

// TestCeilingKnowsTheFabric: a bus bandwidth beyond what the nodes' network
// carries fails the trial, whether the scenario or NCCL's log tells the
// network; what real fabrics measure passes.
func TestCeilingKnowsTheFabric(t *testing.T) {
	row := func(busbw float64, ranks int) nccltests.Row {
		const size = 1 << 30
		factor := 2 * float64(ranks-1) / float64(ranks)
		algbw := busbw / factor
		m := nccltests.Measure{TimeUs: size / algbw / 1e3, AlgBW: algbw, BusBW: busbw}
		return nccltests.Row{Size: size, Count: size / 4, Type: "float", Redop: "sum", OutOfPlace: m, InPlace: m}
	}
	ib2 := nccllog.Log{Nodes: 2, Ranks: 16, Network: "IB", NICs: 8}
	for _, tc := range []struct {
		name    string
		busbw   float64
		ranks   int
		log     nccllog.Log
		nodeNet float64
		ok      bool
	}{
		{"2 nodes, 8x400G scenario, measured", 370, 16, ib2, 400, true},
		{"2 nodes, 8x400G scenario, made up", 1219, 16, ib2, 400, false},
		{"2 nodes, one port in the log, made up", 1219, 16, nccllog.Log{Nodes: 2, Ranks: 16, Network: "IB", NICs: 1}, 0, false},
		{"2 nodes, eight ports in the log, 8x800G at line rate", 1400, 16, ib2, 0, true},
		{"2 nodes over sockets", 1219, 16, nccllog.Log{Nodes: 2, Ranks: 16, Network: "Socket"}, 0, false},
		{"one node of H200, NVLS", 480, 8, nccllog.Log{Nodes: 1, Ranks: 8}, 0, true},
		{"one node, beyond NVLink 5", 2500, 8, nccllog.Log{Nodes: 1, Ranks: 8}, 0, false},
	} {
		f := plausible("all_reduce", row(tc.busbw, tc.ranks), tc.ranks, tc.log, tc.nodeNet)
		if (f == nil) != tc.ok {
			t.Errorf("%s: %v", tc.name, f)
		}
	}
	if l := nccllog.Parse([]byte("h:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [RO]; OOB ib0:10.0.0.1<0>\n")); l.NICs != 2 {
		t.Errorf("NICs %d from a log naming 2", l.NICs)
	}
}

// TestInPlaceUncheckedCollectives: nccl-tests never reports alltoall's and
// sendrecv's in-place results (N/A in that #wrong column, checked or not),
// so their recorded runs measure with benchmark.check on; another
// collective's N/A still fails it.
func TestInPlaceUncheckedCollectives(t *testing.T) {
	plan := Plan{Sizes: space.Sizes{Min: 8, Max: 16 << 20, Factor: 4}}
	for _, collective := range []string{"alltoall", "sendrecv"} {
		out, err := os.ReadFile("nccltests/testdata/h200-nccl2.28.3-tests2.19.6/" + collective + "_perf.txt")
		if err != nil {
			t.Fatal(err)
		}
		b := NCCLTests{Collective: collective, Check: true}
		if m, f := b.Read(plan, Output{Text: out}); f != nil || len(m.Rows) != 11 {
			t.Errorf("%s: measurement %+v, failure %v", collective, m, f)
		}
		if collective != "sendrecv" {
			continue
		}
		// all_reduce prints sendrecv's sizes and counts: its in-place N/A is unchecked results.
		if _, f := (NCCLTests{Collective: "all_reduce", Check: true}).Read(plan, Output{Text: out}); f == nil || f.Kind != FailWrong {
			t.Errorf("all_reduce with sendrecv's N/A: failure %v; want one of kind wrong", f)
		}
	}
}

// TestInPlaceCountOfUnsupportedInPlace: nccl-tests from 2.9 (alltoall) and
// 2.10 (sendrecv) to 2.13.0 printed the in-place check column of these
// collectives, an old-style error (1e+00) or a #wrong count, but left it out
// of its own error count ("Out of bounds values : 0 OK", exit 0): they do not
// support in-place buffers, so the column is garbage, not wrong results.
func TestInPlaceCountOfUnsupportedInPlace(t *testing.T) {
	plan := Plan{Sizes: space.Sizes{Min: 8, Max: 16 << 20, Factor: 4}}
	inPlace := regexp.MustCompile(`(?m)N/A$`)
	oldRow := regexp.MustCompile(`(?m) 0(\s+\S+\s+\S+\s+\S+\s+)N/A$`)
	for _, collective := range []string{"alltoall", "sendrecv"} {
		out, err := os.ReadFile("nccltests/testdata/h200-nccl2.28.3-tests2.19.6/" + collective + "_perf.txt")
		if err != nil {
			t.Fatal(err)
		}
		counted := inPlace.ReplaceAllString(string(out), "2048") // 2.13.0: the count printed
		oldStyle := strings.Replace(oldRow.ReplaceAllString(string(out), " 0e+00${1}1e+00"), "#wrong", " error", -1)
		for name, text := range map[string]string{"#wrong count": counted, "old-style error": oldStyle} {
			b := NCCLTests{Collective: collective, Check: true}
			if m, f := b.Read(plan, Output{Text: []byte(text)}); f != nil || len(m.Rows) != 11 {
				t.Errorf("%s, in-place %s: measurement %+v, failure %v", collective, name, m, f)
			}
		}
		// Another collective's in-place count is still judged.
		if collective == "sendrecv" {
			if _, f := (NCCLTests{Collective: "all_reduce", Check: true}).Read(plan, Output{Text: []byte(counted)}); f == nil || f.Kind != FailWrong {
				t.Errorf("all_reduce with in-place wrong counts: failure %v; want one of kind wrong", f)
			}
		}
	}
}
