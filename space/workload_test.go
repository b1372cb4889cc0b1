package space

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

const workloadSpace = `[campaign]
trials = 20
[benchmark]
binary = "/opt/nccl-tests/build/all_reduce_perf"
gpus = 16
[[workload]]
collective = "all_reduce"
size = "25M"
count = 120
ranks = 16
[[workload]]
collective = "all_reduce"
size = "8"
count = 4000
[[workload]]
collective = "all_gather"
size = "64M"
count = 250
[[param]]
name = "NCCL_ALGO"
values = ["default", "Ring", "Tree"]
[[param]]
name = "NCCL_MIN_CTAS"
min = 1
max = 32
[[try_first]]
NCCL_ALGO = "Ring"
`

// TestWorkload: each collective of the workload is a range of its calls,
// swept over powers of two around them, and NCCL_ALGO is one param per
// collective, set in NCCL's per-collective syntax.
func TestWorkload(t *testing.T) {
	sp, err := Parse("w.toml", []byte(workloadSpace))
	if err != nil {
		t.Fatal(err)
	}
	if got := sp.Collectives(); !slices.Equal(got, []string{"all_gather", "all_reduce"}) {
		t.Errorf("collectives %v", got)
	}
	if r := sp.Ranges[1]; r.Name != "all_reduce" || len(r.Calls) != 2 || r.Calls[0].Count != 120 || !r.Contains(8) || !r.Contains(1<<40) {
		t.Errorf("range %+v", r)
	}
	if got := sp.Sweep("all_reduce"); got != (Sizes{Min: 8, Max: 32 << 20, Factor: 2}) {
		t.Errorf("all_reduce sweep %+v", got)
	}
	if got := sp.Sweep("all_gather"); got != (Sizes{Min: 64 << 20, Max: 64 << 20, Factor: 2}) {
		t.Errorf("all_gather sweep %+v", got)
	}
	var names []string
	for _, p := range sp.Params {
		names = append(names, p.Name)
	}
	if !slices.Equal(names, []string{"NCCL_ALGO[allgather]", "NCCL_ALGO[allreduce]", "NCCL_MIN_CTAS"}) {
		t.Errorf("params %v", names)
	}
	env := sp.Env(Assignment{"NCCL_ALGO[allgather]": "Ring", "NCCL_ALGO[allreduce]": "Tree", "NCCL_MIN_CTAS": "4"})
	if !slices.Equal(env, []string{"NCCL_ALGO=allgather:Ring;allreduce:Tree", "NCCL_MIN_CTAS=4"}) {
		t.Errorf("env %v", env)
	}
	if env := sp.Env(Assignment{"NCCL_ALGO[allgather]": Unset, "NCCL_ALGO[allreduce]": "Tree"}); !slices.Equal(env, []string{"NCCL_ALGO=allreduce:Tree"}) {
		t.Errorf("env %v", env)
	}
	if tf := sp.TryFirst[0]; tf["NCCL_ALGO[allgather]"] != "Ring" || tf["NCCL_ALGO[allreduce]"] != "Ring" {
		t.Errorf("try_first %v", tf)
	}
	for _, tc := range []struct{ old, new, want string }{
		{`[campaign]`, "[campaign]\ncollective = \"all_gather\"", "campaign.collective does not apply"},
		{`trials = 20`, "trials = 20\nsizes = { min = \"8\", max = \"1M\", factor = 2 }", "campaign.sizes does not apply"},
		{`count = 120`, "count = 120\nweight = 1.0", "needs count"},
		{`count = 4000`, "count = 4000\nranks = 8", "one communicator size"},
		// The trials run the communicator the calls were made on.
		{`gpus = 16`, `gpus = 8`, "w.toml:10: workload.ranks = 16, but each trial runs 8 ranks (launcher local, benchmark.gpus 8)"},
		{`gpus = 16`, `gpus = 1`, "w.toml:10: workload.ranks = 16, but each trial runs 1 rank (launcher local, benchmark.gpus 1)"},
		{`collective = "all_gather"`, `collective = "gather"`, `"gather" is not one of`},
		{`count = 250`, `weight = nan`, "not a finite number"},
		// Calls per job and relative shares are not one unit.
		{`count = 250`, `weight = 2.5`, "w.toml:16: workload: this entry has weight, an earlier one count"},
		{`size = "8"`, `size = "0"`, "workload.size must be 1 byte to 256G"},
		{`size = "8"`, `size = "257G"`, "w.toml:13: workload.size must be 1 byte to 256G"},
		{`count = 4000`, "count = 4000\nranks = 9223372036854775807", "workload.ranks must be 1 to 1048576"},
		{`min = 1`, "min = 1\nwhen = { NCCL_ALGO = \"Ring\" }", "sets per collective"},
	} {
		if _, err := Parse("w.toml", []byte(strings.Replace(workloadSpace, tc.old, tc.new, 1))); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v", tc.new, err)
		}
	}
	// Weights are relative shares; beyond these bounds a job's time (weight
	// x seconds per call, summed) overflowed to infinity or underflowed to 0,
	// and every trial failed as unparsable.
	weighted := strings.ReplaceAll(workloadSpace, "count = ", "weight = ")
	if _, err := Parse("w.toml", []byte(weighted)); err != nil {
		t.Fatalf("weights: %v", err)
	}
	for _, tc := range []struct{ old, new, want string }{
		{`weight = 120`, `weight = 1e308`, "w.toml:9: workload.weight 1e+308 must be within [1e-12, 1e+18]"},
		{`weight = 120`, `weight = 5e-324`, "workload.weight 5e-324 must be within [1e-12, 1e+18]"},
	} {
		if _, err := Parse("w.toml", []byte(strings.Replace(weighted, tc.old, tc.new, 1))); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v", tc.new, err)
		}
	}
}

// TestSweepOfPerRankCollectives: nccl-tests prints size 0, measuring
// nothing, for all_gather, reduce_scatter and alltoall below 16 bytes a
// rank; their sweep starts at a size it measures, over the ranks the trials
// run (or, where the launcher does not say, the workload's), and a tiny
// call's time is extrapolated from there.
func TestSweepOfPerRankCollectives(t *testing.T) {
	for _, tc := range []struct {
		name, launch string
		ranks        string
		want         map[string]Sizes
	}{
		{"local 16 GPUs", "[benchmark]\nbinary = \"all_reduce_perf\"\ngpus = 16", "ranks = 16",
			map[string]Sizes{"all_gather": {256, 256, 2}, "alltoall": {1024, 1024, 2}, "all_reduce": {8, 8, 2}, "reduce_scatter": {256, 512, 2}}},
		{"the workload's ranks", "[benchmark]\nbinary = \"all_reduce_perf\"\n[launcher]\nkind = \"srun\"\nntasks_per_node = 8", "ranks = 64",
			map[string]Sizes{"all_gather": {1024, 1024, 2}, "alltoall": {1024, 1024, 2}, "reduce_scatter": {1024, 1024, 2}}},
		{"the launcher's ranks", "[benchmark]\nbinary = \"all_reduce_perf\"\ngpus = 1\n[launcher]\nkind = \"mpirun\"\nnp = 32", "",
			map[string]Sizes{"all_gather": {512, 512, 2}, "reduce_scatter": {512, 512, 2}}},
	} {
		sp, err := Parse("w.toml", []byte(tc.launch+`
[[workload]]
collective = "all_gather"
size = "64"
count = 10
`+tc.ranks+`
[[workload]]
collective = "alltoall"
size = "1K"
count = 10
[[workload]]
collective = "all_reduce"
size = "8"
count = 10
[[workload]]
collective = "reduce_scatter"
size = "300"
count = 10
[[param]]
name = "NCCL_MIN_CTAS"
values = ["default", "4"]
`))
		if err != nil {
			t.Fatal(err)
		}
		for coll, want := range tc.want {
			if got := sp.Sweep(coll); got != want {
				t.Errorf("%s: %s sweep %+v, want %+v", tc.name, coll, got, want)
			}
		}
	}
}

// TestParseWorkload: [[workload]] tables alone, as profile writes them,
// load by the rules of a space, at their own lines.
func TestParseWorkload(t *testing.T) {
	const call = "[[workload]]\ncollective = \"all_reduce\"\nsize = %q\ncount = 3\nranks = %d\n"
	for _, tc := range []struct {
		name, data, want string
	}{
		{"one call", "# a comment\n" + fmt.Sprintf(call, "1", 1), ""},
		{"the most ranks and bytes", fmt.Sprintf(call, "256G", MaxRanks), ""},
		{"too large", fmt.Sprintf(call, "257G", 8), "w.toml:3: workload.size must be 1 byte to 256G"},
		{"too many ranks", fmt.Sprintf(call, "8", MaxRanks+1), "w.toml:5: workload.ranks must be 1 to 1048576"},
		{"two sizes", fmt.Sprintf(call, "8", 8) + fmt.Sprintf(call, "8", 16), "w.toml:10: workload.ranks 16: every entry must be of one communicator size"},
		{"no table", "# nothing\n", "w.toml: no [[workload]] table"},
	} {
		calls, err := ParseWorkload("w.toml", []byte(tc.data))
		switch {
		case tc.want == "" && (err != nil || len(calls) == 0):
			t.Errorf("%s: %v %v", tc.name, calls, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestTrialOfAnOlderSplit: a stored trial's part of NCCL_PROTO that the
// workload no longer gets (alltoall's, or all_reduce's beside alltoall
// alone: nccltune before 2026-12-06 made both) is told from an altered
// store, so that export says to run the campaign again.
func TestTrialOfAnOlderSplit(t *testing.T) {
	sp, err := Parse("w.toml", []byte(`[campaign]
[benchmark]
gpus = 16
[simulator]
nodes = 2
fabric = "ib"
[[workload]]
collective = "all_reduce"
size = "25M"
count = 100
[[workload]]
collective = "alltoall"
size = "16M"
count = 100
[[param]]
name = "NCCL_PROTO"
values = ["default", "LL128", "Simple"]
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []Assignment{
		{"NCCL_PROTO[allreduce]": "LL128", "NCCL_PROTO[alltoall]": Unset},
		{"NCCL_PROTO[alltoall]": "Simple"},
	} {
		if err := sp.CheckOffered(a); !errors.Is(err, ErrSplitOtherwise) {
			t.Errorf("%v: %v, want ErrSplitOtherwise", a, err)
		}
	}
	if err := sp.CheckOffered(Assignment{"NCCL_FOO": "1"}); err == nil || errors.Is(err, ErrSplitOtherwise) {
		t.Errorf("a variable no nccltune searched: %v", err)
	}
}

// TestWeightedRangesAreNotSeconds: a workload of weights (relative shares of
// the calls) predicts each range's time in a relative unit, as the job's
// (TimeUnit): its ranges' measure said "s", which status's best, report's
// ranges (--json's unit), show and the plots' axes then printed.
func TestWeightedRangesAreNotSeconds(t *testing.T) {
	for _, tc := range []struct{ text, unit string }{
		{workloadSpace, "s"},
		{strings.ReplaceAll(workloadSpace, "count = ", "weight = "), "(relative)"},
	} {
		sp, err := Parse("w.toml", []byte(tc.text))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range sp.Ranges {
			if m := sp.Measure(r); m.Unit != tc.unit || m.Unit != sp.TimeUnit() || !m.Inverse {
				t.Errorf("range %s of a space weighted %t: measure %+v, want unit %q", r.Name, sp.Weighted, m, tc.unit)
			}
		}
	}
}

// A stored trial's stray settings are told in the order of their names: in
// a map's order, one store's export failed with another message each time.
func TestCheckOfferedNamesTheFirstStray(t *testing.T) {
	sp, err := Parse("s.toml", []byte(hostileBase))
	if err != nil {
		t.Fatal(err)
	}
	a := Assignment{}
	for _, name := range []string{"NCCL_ZZ", "NCCL_YY", "NCCL_XX", "NCCL_AA", "NCCL_WW", "NCCL_VV"} {
		a[name] = "1"
	}
	for range 50 {
		if err := sp.CheckOffered(a); err == nil || err.Error() != "sets NCCL_AA, which the space does not search" {
			t.Fatalf("error %v", err)
		}
	}
}

// TestPerCollectivePartsNameNoCollective: a workload of several
// collectives sets NCCL_ALGO and NCCL_PROTO per collective, each param's
// value behind its collective's prefix; a value in NCCL's per-collective
// syntax itself made "allgather:allreduce:Tree", which NCCL refuses, or,
// where it named another collective ("Ring;allreduce:Tree" of all_gather's
// part), set that collective from another's part. Each is refused at its
// param's values.
func TestPerCollectivePartsNameNoCollective(t *testing.T) {
	for _, value := range []string{"allreduce:Tree", "Ring;allreduce:Tree", "allgather:^Tree"} {
		src := strings.Replace(workloadSpace, `values = ["default", "Ring", "Tree"]`, `values = ["default", "Ring", "`+value+`"]`, 1)
		src = strings.Replace(src, "[[try_first]]\nNCCL_ALGO = \"Ring\"\n", "", 1)
		_, err := Parse("w.toml", []byte(src))
		if err == nil || !strings.Contains(err.Error(), "w.toml:21: param NCCL_ALGO: value "+value+" names a collective") {
			t.Errorf("%s: %v", value, err)
		}
	}
	// Where the workload has one collective, NCCL_ALGO is the job's, set as
	// written.
	one := strings.Replace(workloadSpace, `collective = "all_gather"`, `collective = "all_reduce"`, 1)
	one = strings.Replace(one, `values = ["default", "Ring", "Tree"]`, `values = ["default", "Ring", "allreduce:Tree"]`, 1)
	if _, err := Parse("w.toml", []byte(one)); err != nil {
		t.Errorf("one collective: %v", err)
	}
}

// TestParamPartsOfCollectivesNotMeasured: nccl-tests measures the
// campaign's collective (a workload's collectives), so a value of
// NCCL_ALGO or NCCL_PROTO whose part names another ("allgather:Tree" in an
// all_reduce campaign) sets that collective untested: a trial of it
// measured NCCL's own choice, and a range's file exported the part into a
// job that calls all-gather. Such a value is refused; a command's or the
// DDP step's job calls what it calls, and [fixed] pins what the user asks
// for every trial and the job.
func TestParamPartsOfCollectivesNotMeasured(t *testing.T) {
	space := func(benchmark, values, fixed string) string {
		return "[campaign]\ncollective = \"all_reduce\"\n[benchmark]\n" + benchmark + "\n[fixed]\n" + fixed +
			"\n[[param]]\nname = \"NCCL_ALGO\"\nvalues = [" + values + "]\n"
	}
	const perf = `binary = "/opt/nccl-tests/build/all_reduce_perf"`
	for _, values := range []string{`"Ring", "allgather:Tree"`, `"Ring;allgather:Tree"`, `"allreduce:Ring;broadcast:Tree"`} {
		_, err := Parse("s.toml", []byte(space(perf, values, "")))
		if err == nil || !strings.Contains(err.Error(), "s.toml:9: param NCCL_ALGO: value ") || !strings.Contains(err.Error(), "which the campaign does not measure") {
			t.Errorf("%s: %v", values, err)
		}
	}
	// A workload of one collective with alltoall, which gets no part.
	one := strings.Replace(workloadSpace, `collective = "all_gather"`, `collective = "alltoall"`, 1)
	one = strings.Replace(one, `values = ["default", "Ring", "Tree"]`, `values = ["default", "Ring", "allgather:Tree"]`, 1)
	if _, err := Parse("w.toml", []byte(one)); err == nil || !strings.Contains(err.Error(), "which the campaign does not measure") {
		t.Errorf("a workload of all_reduce and alltoall: %v", err)
	}
	for _, tc := range []struct{ benchmark, values, fixed string }{
		{perf, `"Ring", "allreduce:Tree", "Ring;allreduce:Tree"`, ""},
		{perf, `"Ring"`, `NCCL_PROTO = "allgather:Simple"`},
		{"kind = \"command\"\ncommand = [\"/opt/train\"]\nmetric = { regex = 'step (\\d+) ms', goal = \"min\", unit = \"ms\" }", `"Ring", "allgather:Tree"`, ""},
	} {
		src := space(tc.benchmark, tc.values, tc.fixed)
		if !strings.Contains(tc.benchmark, "perf") {
			src = strings.Replace(src, "collective = \"all_reduce\"\n", "", 1) // a command's job calls what it calls
		}
		if _, err := Parse("s.toml", []byte(src)); err != nil {
			t.Errorf("%s with %s: %v", tc.values, tc.benchmark, err)
		}
	}
}
