package space

import (
	"slices"
	"strings"
	"testing"
)

const workloadSpace = `[campaign]
trials = 20
[benchmark]
binary = "/opt/nccl-tests/build/all_reduce_perf"
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
		{`collective = "all_gather"`, `collective = "gather"`, `"gather" is not one of`},
		{`count = 250`, `weight = nan`, "not a finite number"},
		// Calls per job and relative shares are not one unit.
		{`count = 250`, `weight = 2.5`, "w.toml:15: workload: this entry has weight, an earlier one count"},
		{`size = "8"`, `size = "0"`, "at least 1 byte"},
		{`min = 1`, "min = 1\nwhen = { NCCL_ALGO = \"Ring\" }", "sets per collective"},
	} {
		if _, err := Parse("w.toml", []byte(strings.Replace(workloadSpace, tc.old, tc.new, 1))); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v", tc.new, err)
		}
	}
}
