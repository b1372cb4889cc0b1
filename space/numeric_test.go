package space

import (
	"fmt"
	"strings"
	"testing"
)

// Spaces of each benchmark kind whose numbers the cases below set.
const (
	numNCCLTests = `[campaign]
trials = 10
[benchmark]
binary = "all_reduce_perf"
[[param]]
name = "NCCL_MIN_CTAS"
min = 1
max = 16
`
	numDDP = `[campaign]
trials = 10
[benchmark]
kind = "ddp"
[[param]]
name = "bucket_cap_mb"
min = 1
max = 100
`
	numCommand = `[campaign]
trials = 10
[benchmark]
kind = "command"
command = ["./train"]
metric = { regex = 'step ([0-9.]+)', goal = "min" }
[[param]]
name = "NCCL_MIN_CTAS"
min = 1
max = 16
`
	numWorkload = `[campaign]
trials = 10
[benchmark]
binary = "all_reduce_perf"
[[workload]]
collective = "all_reduce"
size = "1M"
count = 10
[[param]]
name = "NCCL_MIN_CTAS"
min = 1
max = 16
`
)

const maxInt64 = "9223372036854775807"

// TestEveryNumericKey sets each number of a space file negative, to zero,
// at its bound, past it and to int64's maximum: each is accepted where a
// run can mean it, and otherwise refused at load, at its line and naming its
// key, rather than wrapped, read as something else, or left to fail (or
// hang) every trial.
func TestEveryNumericKey(t *testing.T) {
	type value struct {
		v, want string // want "": accepted
		line    int    // where the error is, if not on the key's line
	}
	for _, tc := range []struct {
		base, old, new string // new, with %s for the value, replaces old in base
		values         []value
	}{
		{numNCCLTests, "trials = 10", "trials = %s", []value{
			{"-1", "campaign.trials: the trial budget must be at least", 0}, {"0", "campaign.trials = 0 is read as not set", 0}, {"65536", "", 0},
			{"65537", "campaign.trials: the trial budget must be at most 65536", 0}, {maxInt64, "at most 65536", 0}}},
		{numNCCLTests, "trials = 10", "trials = 10\nseed = %s", []value{{"-1", "", 0}, {"0", "", 0}, {maxInt64, "", 0}, {"-" + maxInt64, "", 0}}},
		{numNCCLTests, "trials = 10", "trials = 10\npatience = %s", []value{
			{"-1", "patience must be 0 (off) or at least 5", 0}, {"0", "", 0}, {"4", "at least 5", 0}, {"5", "", 0}, {maxInt64, "", 0}}},
		{numNCCLTests, "trials = 10", "trials = 10\nscales = [%s]", []value{
			{"-1", "campaign.scales must be node counts of 1 to 1048576", 0}, {"0", "node counts of 1 to 1048576", 0}, {maxInt64, "node counts of 1 to 1048576", 0}}},
		{numNCCLTests, "trials = 10", "trials = 10\nsizes = { min = %s }", []value{
			{"-1", `sizes.min: invalid size "-1"`, 0}, {"0", "1 <= min <= max", 0}, {"1", "", 0}, {`"128M"`, "", 0}, {`"256G"`, "1 <= min <= max", 0}}},
		{numNCCLTests, "trials = 10", "trials = 10\nsizes = { max = %s }", []value{
			{"-1", `sizes.max: invalid size "-1"`, 0}, {"0", "1 <= min <= max", 0}, {`"256G"`, "", 0},
			{`"257G"`, "sizes.max 257G is above 256G", 0}, {`"4096T"`, "sizes.max 4096T is above 256G", 0}, {maxInt64, "is too large", 0}}},
		{numNCCLTests, "trials = 10", "trials = 10\nsizes = { factor = %s }", []value{
			{"-1", "factor >= 2", 0}, {"0", "campaign.sizes.factor = 0 is read as not set", 0}, {"1", "factor >= 2", 0}, {"2", "", 0}, {"274877906944", "", 0},
			{"274877906945", "sizes.factor 274877906945 is above 274877906944", 0}, {maxInt64, "sizes.factor " + maxInt64 + " is above", 0}}},
		{numNCCLTests, "[[param]]", "[[range]]\nname = \"r\"\nmin = %s\nmax = \"1M\"\n[[param]]", []value{
			{"-1", `range.min: invalid size "-1"`, 0}, {"0", "", 0}, {`"2M"`, "range r: max must exceed min", 6}}},
		{numNCCLTests, "[[param]]", "[[range]]\nname = \"r\"\nmin = 0\nmax = %s\n[[param]]", []value{
			{"-1", `range.max: invalid size "-1"`, 0}, {"0", "range r: max must exceed min", 6},
			{`"4096T"`, "", 0}, // a range's upper edge is no buffer: "and above"
			{maxInt64, "is too large", 0}}},
		{numNCCLTests, `binary = "all_reduce_perf"`, "binary = \"all_reduce_perf\"\ngpus = %s", []value{
			{"-1", "benchmark.gpus must be 1 to 1048576", 0}, {"0", "benchmark.gpus must be 1 to 1048576", 0}, {"8", "", 0}, {"1048577", "must be 1 to 1048576", 0}, {maxInt64, "must be 1 to 1048576", 0}}},
		{numNCCLTests, `binary = "all_reduce_perf"`, "binary = \"all_reduce_perf\"\niters = %s", []value{
			{"-1", "benchmark.iters must be 1 to 10000000", 0}, {"0", "benchmark.iters must be 1 to 10000000", 0}, {"10000000", "", 0}, {"10000001", "must be 1 to 10000000", 0}, {maxInt64, "must be 1 to 10000000", 0}}},
		{numNCCLTests, `binary = "all_reduce_perf"`, "binary = \"all_reduce_perf\"\nwarmup = %s", []value{
			{"-1", "benchmark.warmup must be 0 to 10000000", 0}, {"0", "", 0}, {"10000001", "must be 0 to 10000000", 0}, {maxInt64, "must be 0 to 10000000", 0}}},
		{numNCCLTests, `binary = "all_reduce_perf"`, "binary = \"all_reduce_perf\"\nnoise_target = %s", []value{
			{"-1", "benchmark.noise_target must be within [0, 0.5)", 0}, {"0", "", 0}, {"0.49", "", 0}, {"0.5", "within [0, 0.5)", 0}, {"1e308", "within [0, 0.5)", 0}}},
		{numNCCLTests, `binary = "all_reduce_perf"`, "binary = \"all_reduce_perf\"\ntimeout = %q", []value{
			{"-1s", "not a positive duration", 0}, {"0s", "not a positive duration", 0}, {"1ns", "benchmark.timeout 1ns must be 1s to 24h0m0s", 0},
			{"999ms", "must be 1s to 24h0m0s", 0}, {"1s", "", 0}, {"24h", "", 0}, {"24h0m1s", "must be 1s to 24h0m0s", 0},
			{"2562047h", "must be 1s to 24h0m0s", 0}, {"9999999999h", "not a positive duration", 0}}},
		{numNCCLTests, "max = 16", "max = %s", []value{
			{"-1", "NCCL_MIN_CTAS: -1 is outside [1, 64]", 6}, {"64", "", 0}, {maxInt64, "is outside [1, 64]", 6}}},
		{numNCCLTests, `binary = "all_reduce_perf"`, "binary = \"all_reduce_perf\"\n[launcher]\nkind = \"mpirun\"\nnp = %s", []value{
			{"-1", "launcher.np must be 1 to 1048576", 0}, {"0", "launcher.np = 0 is read as not set", 0}, {"16", "", 0}, {"1048577", "launcher.np must be 1 to 1048576", 0}, {maxInt64, "launcher.np must be 1 to 1048576", 0}}},
		{numNCCLTests, `binary = "all_reduce_perf"`, "binary = \"all_reduce_perf\"\n[launcher]\nkind = \"srun\"\nntasks_per_node = 8\nnodes = %s", []value{
			{"-1", "launcher.nodes must be 1 to 1048576", 0}, {"0", "launcher.nodes = 0 is read as not set", 0}, {"131072", "", 0}, {"131073", "each trial would run 1048584 ranks", 5}, {maxInt64, "launcher.nodes must be 1 to 1048576", 0}}},
		{numNCCLTests, `binary = "all_reduce_perf"`, "binary = \"all_reduce_perf\"\n[launcher]\nkind = \"srun\"\nnodes = 2\nntasks_per_node = %s", []value{
			{"-1", "launcher.ntasks_per_node must be 1 to 1048576", 0}, {"0", "launcher.ntasks_per_node = 0 is read as not set", 0}, {"8", "", 0}, {maxInt64, "launcher.ntasks_per_node must be 1 to 1048576", 0}}},
		{numNCCLTests, `binary = "all_reduce_perf"`, "binary = \"all_reduce_perf\"\n[launcher]\nkind = \"srun\"\nnodes = 1\nntasks_per_node = 8\ngroups = %s", []value{
			{"-1", "launcher.groups must be 1 to 64", 0}, {"0", "launcher.groups must be 1 to 64", 0}, {"2", "", 0}, {"65", "launcher.groups must be 1 to 64", 0}, {maxInt64, "launcher.groups must be 1 to 64", 0}}},
		{numDDP, "max = 100", "max = 100\n[launcher]\nkind = \"torchrun\"\nnproc_per_node = %s", []value{
			{"-1", "launcher.nproc_per_node must be 1 to 1048576", 0}, {"0", "launcher.nproc_per_node = 0 is read as not set", 0}, {"8", "", 0}, {maxInt64, "launcher.nproc_per_node must be 1 to 1048576", 0}}},
		{numDDP, `kind = "ddp"`, "kind = \"ddp\"\nlayers = %s", []value{
			{"-1", "benchmark.layers must be 1 to 1024", 0}, {"0", "benchmark.layers = 0 is read as not set", 0}, {"1024", "", 0}, {"1025", "benchmark.layers must be 1 to 1024", 0}, {maxInt64, "must be 1 to 1024", 0}}},
		{numDDP, `kind = "ddp"`, "kind = \"ddp\"\nbatch = %s", []value{
			{"-1", "benchmark.batch must be 1 to 1048576", 0}, {"0", "benchmark.batch = 0 is read as not set", 0}, {"1048576", "", 0}, {"1048577", "benchmark.batch must be 1 to 1048576", 0}, {maxInt64, "must be 1 to 1048576", 0}}},
		{numDDP, `kind = "ddp"`, "kind = \"ddp\"\nmodel_params = %s", []value{
			{`"-1"`, `benchmark.model_params: invalid size "-1"`, 0}, {`"0"`, "benchmark.model_params must be 1 to 64G, not 0", 0}, {`"64G"`, "", 0},
			{`"65G"`, "benchmark.model_params must be 1 to 64G, not 65G", 0}, {`"4096T"`, "must be 1 to 64G", 0}, {`"` + maxInt64 + `"`, "is too large", 0}}},
		{numCommand, `goal = "min"`, `goal = "min", skip = %s`, []value{
			{"-1", "benchmark.metric.skip must be 0 to 10000000", 0}, {"0", "", 0}, {"10000000", "", 0},
			{"10000001", "benchmark.metric.skip must be 0 to 10000000", 0}, {maxInt64, "must be 0 to 10000000", 0}}},
		{numWorkload, `size = "1M"`, "size = %s", []value{
			{"-1", `workload.size: invalid size "-1"`, 0}, {"0", "workload.size must be 1 byte to 256G", 0}, {`"256G"`, "", 0},
			{`"257G"`, "workload.size must be 1 byte to 256G", 0}, {maxInt64, "is too large", 0}}},
		{numWorkload, "count = 10", "count = %s", []value{
			{"-1", "workload count and weight must be positive", 6}, {"0", "must be positive", 6}, {"1", "", 0}, {maxInt64, "", 0}}},
		{numWorkload, "count = 10", "weight = %s", []value{
			{"-1", "workload count and weight must be positive", 6}, {"0", "must be positive", 6}, {"1e-12", "", 0},
			{"1e-13", "workload.weight 1e-13 must be within", 0}, {"1e18", "", 0}, {"1e300", "workload.weight 1e+300 must be within", 0}}},
		{numWorkload, "count = 10", "count = 10\nranks = %s", []value{
			{"-1", "workload.ranks must be 1 to 1048576", 0}, {"0", "workload.ranks = 0 is read as not set", 0}, {"1", "", 0}, {maxInt64, "workload.ranks must be 1 to 1048576", 0}}},
	} {
		if !strings.Contains(tc.base, tc.old) {
			t.Fatalf("base lacks %q", tc.old)
		}
		at := strings.Index(tc.base, tc.old)
		for _, v := range tc.values {
			text := fmt.Sprintf(tc.new, v.v)
			src := tc.base[:at] + text + tc.base[at+len(tc.old):]
			// The key's line: the base's lines before it, and new's before the value.
			line := strings.Count(tc.base[:at], "\n") + strings.Count(tc.new[:strings.Index(tc.new, "%")], "\n") + 1
			if v.line != 0 {
				line = v.line
			}
			_, err := parseWithin(t, src)
			switch {
			case v.want == "" && err != nil:
				t.Errorf("%s refused: %v\n%s", text, err, src)
			case v.want == "":
			case err == nil:
				t.Errorf("%s accepted\n%s", text, src)
			case !strings.Contains(err.Error(), fmt.Sprintf("h.toml:%d: ", line)) || !strings.Contains(err.Error(), v.want):
				t.Errorf("%s: error %q\nlacks h.toml:%d: ... %s", text, err, line, v.want)
			}
		}
	}
}

// TestZeroIsNoSetting: a setting the loader reads as not set where it is
// "" (the zero of a string) is refused written out, at its line, as the
// numbers' 0 are above: launcher.kind = "" ran the local launcher, and an
// empty timeout the default 10 minutes.
func TestZeroIsNoSetting(t *testing.T) {
	for _, tc := range []struct{ base, old, new, want string }{
		{numNCCLTests, `binary = "all_reduce_perf"`, "binary = \"all_reduce_perf\"\n[launcher]\nkind = \"\"", `h.toml:6: launcher.kind = "" is read as not set`},
		{numNCCLTests, `binary = "all_reduce_perf"`, "binary = \"all_reduce_perf\"\ntimeout = \"\"", `h.toml:5: benchmark.timeout = "" is read as not set`},
		{numNCCLTests, `binary = "all_reduce_perf"`, "kind = \"\"\nbinary = \"all_reduce_perf\"", `h.toml:4: benchmark.kind = "" is read as not set`},
		{numNCCLTests, "trials = 10", "trials = 10\nname = \"\"", `h.toml:3: campaign.name = "" is read as not set`},
		{numNCCLTests, `binary = "all_reduce_perf"`, "binary = \"all_reduce_perf\"\n[launcher]\nkind = \"mpirun\"\nhostfile = \"\"", `h.toml:7: launcher.hostfile = "" is read as not set`},
		{numDDP, `kind = "ddp"`, "kind = \"ddp\"\nmodel_params = \"\"", `h.toml:5: benchmark.model_params = "" is read as not set`},
		{numDDP, `kind = "ddp"`, "kind = \"ddp\"\npython = \"\"", `h.toml:5: benchmark.python = "" is read as not set`},
		{numWorkload, "count = 10", "count = 10\n[[workload]]\ncollective = \"all_reduce\"\nsize = \"2M\"\ncount = 1\nranks = 0", `h.toml:13: workload.ranks = 0 is read as not set`},
	} {
		src := strings.Replace(tc.base, tc.old, tc.new, 1)
		if _, err := parseWithin(t, src); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %s", tc.new, err, tc.want)
		}
	}
	// Zeros that are values of their own.
	src := strings.Replace(numCommand, `goal = "min"`, `goal = "min", skip = 0, unit = ""`, 1)
	src = strings.Replace(src, "trials = 10", "trials = 10\nseed = 0\npatience = 0", 1)
	if _, err := parseWithin(t, src); err != nil {
		t.Errorf("refused: %v\n%s", err, src)
	}
}
