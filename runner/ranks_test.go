package runner

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/nccltune/nccltune/runner/nccllog"
	"github.com/nccltune/nccltune/runner/nccltests"
	"github.com/nccltune/nccltune/space"
)

// nccl-tests reads -t with getopt_long and strtol(v, NULL, 0): a run it
// starts with 2 threads must be held to the ranks of 2 threads, whichever
// spelling the space used, or every trial fails as unparsable.
func TestThreadsReadAsNCCLTestsDoes(t *testing.T) {
	for _, c := range []struct {
		args []string
		want int
	}{
		{nil, 1},
		{[]string{"-t", "2"}, 2},
		{[]string{"-t2"}, 2},
		{[]string{"--nthreads", "2"}, 2},
		{[]string{"--nthreads=2"}, 2},
		{[]string{"--nthread", "2"}, 2}, // getopt_long's unambiguous prefixes
		{[]string{"--nt=2"}, 2},
		{[]string{"-t", "010"}, 8}, // strtol's base 0: octal
		{[]string{"-t", "0x4"}, 4},
		{[]string{"-t", "2", "-t", "4"}, 4}, // the last one counts
		{[]string{"--n", "2"}, 0},           // ambiguous (--ngpus): nccl-tests runs nothing, and the space refuses it
		{[]string{"-d", "float"}, 1},
		{[]string{"-t"}, 0},
		{[]string{"-t", "two"}, 0},
		{[]string{"-t", "0b10"}, 0}, // Go reads it, strtol does not: unknown
		{[]string{"-t", "1_0"}, 0},
	} {
		if got := threads(c.args); got != c.want {
			t.Errorf("threads(%q) = %d, want %d", c.args, got, c.want)
		}
	}
	for _, args := range [][]string{{"--nthread", "2"}, {"--nt=2"}, {"-t", "02"}} {
		b := NCCLTests{Ranks: 8, Args: args}
		if f := b.matchRanks(16); f != nil {
			t.Errorf("8 ranks launched with %q, 16 named: %v", args, f)
		}
		if f := b.matchRanks(8); f == nil {
			t.Errorf("8 ranks launched with %q, 8 named: accepted", args)
		}
	}
}

// TestRanksBoundTheNumbers: the ranks a table names (its "# Rank" lines)
// decide which bounds its numbers are held to, so they must be the ranks
// launched: a header naming fewer, or more (threads), fails the trial; one
// naming none is held to several ranks' bounds; a real recording passes.
func TestRanksBoundTheNumbers(t *testing.T) {
	two, err := os.ReadFile("nccltests/testdata/v2.18.3-2x8-ompi-warnings.txt")
	if err != nil {
		t.Fatal(err)
	}
	one, err := os.ReadFile("nccltests/testdata/h200-nccl2.28.3-tests2.19.6/all_reduce_perf_512M.txt")
	if err != nil {
		t.Fatal(err)
	}
	rankLine := regexp.MustCompile(`(?m)^#\s+Rank\s+\d+ .*\n`)
	firstRankOnly := rankLine.ReplaceAllStringFunc(string(two), func(l string) string {
		if strings.Contains(l, "Rank  0 ") {
			return l
		}
		return ""
	})
	twoNodes := Plan{Sizes: space.Sizes{Min: 1 << 10, Max: 8 << 30, Factor: 2}, Iters: 20}
	oneGPU := Plan{Sizes: space.Sizes{Min: 8, Max: 512 << 20, Factor: 4}, Iters: 20, Warmup: 5}
	for _, tc := range []struct {
		name     string
		out      string
		plan     Plan
		ranks    int
		args     []string
		wantFail FailureKind // "": measured
	}{
		{"16 ranks launched, 16 named", string(two), twoNodes, 16, nil, ""},
		{"ranks unknown", string(two), twoNodes, 0, nil, ""},
		{"8 launched, 16 named", string(two), twoNodes, 8, nil, FailUnparsable},
		{"16 launched with 2 threads each, 16 named", string(two), twoNodes, 16, []string{"-t", "2"}, FailUnparsable},
		{"16 launched, one named (unbounded as one rank)", firstRankOnly, twoNodes, 16, nil, FailUnparsable},
		{"one GPU, one named", string(one), oneGPU, 1, nil, ""},
		{"one GPU's table naming none: held to several ranks", rankLine.ReplaceAllString(string(one), ""), oneGPU, 1, nil, FailImplausible},
	} {
		b := NCCLTests{Binary: "all_reduce_perf", Collective: "all_reduce", GPUs: 1, Check: true, Ranks: tc.ranks, Args: tc.args}
		out := []byte(tc.out)
		_, f := b.Read(tc.plan, Output{Text: out, Log: nccllog.Parse(out)})
		switch {
		case tc.wantFail == "" && f != nil:
			t.Errorf("%s: %v", tc.name, f)
		case tc.wantFail != "" && (f == nil || f.Kind != tc.wantFail):
			t.Errorf("%s: %v, want a failure %s", tc.name, f, tc.wantFail)
		}
	}
}

// TestOneRankIsACopy: one rank communicates nothing, but its out-of-place
// run copies the buffer in the GPU's memory, so it is held to the time
// floor and to a copy's bandwidth; in place, where nothing moves, any time
// is possible.
func TestOneRankIsACopy(t *testing.T) {
	const size = 64 << 20
	at := func(us float64) nccltests.Measure {
		return nccltests.Measure{TimeUs: us, AlgBW: size / us / 1e3, BusBW: 0}
	}
	real := at(size / 2105.0 / 1e3) // an H200 copied at 2105 GB/s
	for _, tc := range []struct {
		name           string
		outOf, inPlace nccltests.Measure
		ok             bool
	}{
		{"a real copy", real, at(0.6), true},
		{"in place at no time", real, at(0.001), true},
		{"a copy at 0.001 us", at(0.001), real, false},
		{"a copy beyond any GPU's memory", at(size / 20000.0 / 1e3), real, false},
	} {
		row := nccltests.Row{Size: size, Count: size / 4, Type: "float", Redop: "sum", OutOfPlace: tc.outOf, InPlace: tc.inPlace}
		if f := plausible("all_reduce", row, 1, nccllog.Log{}, 0); (f == nil) != tc.ok {
			t.Errorf("%s: %v", tc.name, f)
		}
	}
}

// TestSweepTakesEveryNCCLTestsRounding: all_gather, reduce_scatter and
// alltoall print the size of each rank's share times the ranks, a share
// nccl-tests has rounded down three ways in turn; a table of an older one
// is its sweep, not a foreign one.
func TestSweepTakesEveryNCCLTestsRounding(t *testing.T) {
	for _, tc := range []struct {
		coll, dataType string
		size           int64 // asked
		ranks          int
		printed        int64
		ok             bool
	}{
		{"all_gather", "float", 32, 8, 0, true},   // 16 bytes a share, since 2.13.12
		{"all_gather", "float", 32, 8, 32, true},  // an element, before September 2022
		{"all_gather", "float", 32, 8, 16, false}, // none
		{"all_gather", "half", 1024, 12, 960, true},
		{"all_gather", "half", 1024, 12, 1008, true},
		{"all_gather", "half", 1024, 12, 1000, false},
		{"reduce_scatter", "double", 1024, 12, 768, true}, // 4 elements, from September 2022 to 2.13.11
		{"alltoall", "double", 1024, 12, 960, true},
		{"alltoall", "double", 1024, 12, 768, false}, // alltoall never rounded to 4 elements
		{"all_reduce", "float", 1024, 12, 1024, true},
	} {
		b := NCCLTests{Collective: tc.coll}
		rows := []nccltests.Row{{Size: tc.printed, Type: tc.dataType}}
		if f := b.matchSweep(space.Sizes{Min: tc.size, Max: tc.size, Factor: 2}, rows, tc.ranks); (f == nil) != tc.ok {
			t.Errorf("%s of %d bytes of %s on %d ranks printed as %d: %v", tc.coll, tc.size, tc.dataType, tc.ranks, tc.printed, f)
		}
	}
}

// TestRanksOfATableNamingNone: a table without "# Rank" lines (a wrapper's)
// ran the ranks launched, nccl-tests' threads counted: the measurement says
// so, and its bus factor (results.BusBW) is that of those ranks in every
// use of the stored trial, not read off the rows of one run.
func TestRanksOfATableNamingNone(t *testing.T) {
	two, err := os.ReadFile("nccltests/testdata/v2.18.3-2x8-ompi-warnings.txt")
	if err != nil {
		t.Fatal(err)
	}
	out := regexp.MustCompile(`(?m)^#\s+Rank\s+\d+ .*\n`).ReplaceAll(two, nil)
	plan := Plan{Sizes: space.Sizes{Min: 1 << 10, Max: 8 << 30, Factor: 2}, Iters: 20}
	for _, tc := range []struct {
		launched int
		args     []string
		want     int
	}{
		{16, nil, 16},
		{8, []string{"-t", "2"}, 16},
		{0, nil, 0}, // the space does not say
	} {
		b := NCCLTests{Binary: "all_reduce_perf", Collective: "all_reduce", GPUs: 1, Check: true, Ranks: tc.launched, Args: tc.args}
		m, f := b.Read(plan, Output{Text: out, Log: nccllog.Parse(out)})
		if f != nil {
			t.Fatalf("%d launched, %q: %v", tc.launched, tc.args, f)
		}
		if m.Ranks != tc.want {
			t.Errorf("%d launched, %q: the measurement has %d ranks, want %d", tc.launched, tc.args, m.Ranks, tc.want)
		}
	}
}
