package export

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nccltune/nccltune/plugin"
	"github.com/nccltune/nccltune/results"
	"github.com/nccltune/nccltune/runner"
	"github.com/nccltune/nccltune/runner/nccllog"
	"github.com/nccltune/nccltune/space"
	"github.com/nccltune/nccltune/store"
)

// decider is what NCCL decides for an all-reduce of size bytes.
type decider func(size int64) nccllog.Decision

// sweepCampaign is the export of an all-reduce campaign over the sweep
// 8..1G (factor 2) with ranges (TOML size pairs), measured on 2 nodes of 8
// GPUs. Trial 1 (NCCL_PROTO=Simple, NCCL_NET_GDR_LEVEL=SYS) won every range
// over NCCL's defaults (trial 0). Validation recorded what NCCL decided per
// size under trial 1's configuration (tuned, nil: nothing) and under the
// job's environment, trial 1's less NCCL_PROTO (alone, nil: nothing).
func sweepCampaign(t testing.TB, ranges [][2]string, tuned, alone decider) Export {
	t.Helper()
	var b strings.Builder
	b.WriteString("[campaign]\nname = \"sweep\"\nsizes = { min = \"8\", max = \"1G\", factor = 2 }\n")
	for i, r := range ranges {
		fmt.Fprintf(&b, "[[range]]\nname = \"r%d\"\nmin = %q\nmax = %q\n", i, r[0], r[1])
	}
	b.WriteString("[benchmark]\nbinary = \"x\"\ngpus = 16\n" +
		"[[param]]\nname = \"NCCL_PROTO\"\nvalues = [\"default\", \"LL\", \"Simple\"]\n" +
		"[[param]]\nname = \"NCCL_NET_GDR_LEVEL\"\nvalues = [\"default\", \"SYS\"]\n")
	sp, err := space.Parse("sweep.toml", []byte(b.String()))
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	scores := func(v float64) map[string]float64 {
		m := map[string]float64{}
		for _, r := range sp.Ranges {
			m[r.Name] = v
		}
		return m
	}
	trial := func(n int, score float64, a space.Assignment) store.Trial {
		return store.Trial{Number: n, State: store.Complete, Params: a, Env: sp.Env(a), Scores: scores(score)}
	}
	trials := []store.Trial{
		trial(0, 1, space.Assignment{"NCCL_PROTO": space.Unset, "NCCL_NET_GDR_LEVEL": space.Unset}),
		trial(1, 2, space.Assignment{"NCCL_PROTO": "Simple", "NCCL_NET_GDR_LEVEL": "SYS"}),
	}
	decisions := map[string][]nccllog.Decision{}
	for _, c := range []struct {
		a      space.Assignment
		decide decider
	}{{trials[1].Params, tuned}, {results.WithoutPerSize(sp, trials[1].Params), alone}} {
		if c.decide == nil {
			continue
		}
		var ds []nccllog.Decision
		for _, size := range sp.Sizes.List() {
			ds = append(ds, c.decide(size))
		}
		decisions[sp.Key(c.a)] = ds
	}
	fp := runner.Fingerprint{NCCL: "2.30.3", Nodes: 2, GPUsPerNode: 8, Ranks: 16, Network: "IB", GDR: true}
	return Export{Space: sp, Campaign: store.Campaign{Name: "sweep", SpaceHash: sp.Hash()}, Results: results.Of(sp, trials, nil),
		Job: results.JobOf(sp, trials, nil), Decisions: decisions, Fingerprint: fp, Now: time.Now()}
}

// decide is a decider of one choice for every size.
func decide(algo, proto string, channels int) decider {
	return func(size int64) nccllog.Decision {
		return nccllog.Decision{Op: "AllReduce", Bytes: size, Algo: algo, Proto: proto, Channels: channels}
	}
}

// csvRules writes the export's tuner-csv and returns its rules, each split
// into its fields.
func csvRules(t testing.TB, ex Export) ([][]string, error) {
	t.Helper()
	text, err := written(t, ex, "tuner-csv", "nccl_tuner.conf")
	if err != nil {
		return nil, err
	}
	return rulesOf(text, ","), nil
}

// written writes the export in format and returns the text of its file name.
func written(t testing.TB, ex Export, format, name string) (string, error) {
	t.Helper()
	dir := t.TempDir()
	if _, err := ex.Write(format, dir); err != nil {
		return "", err
	}
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data), nil
}

// TestEveryAlgorithmName: NCCL's TUNING log spells algorithms and protocols
// as ncclAlgoToString and ncclProtoToString do (COLLNET_DIRECT, NVLS_TREE,
// SIMPLE); NCCL_ALGO and older logs as CollNetDirect, CollnetChain,
// NVLSTree. Every spelling reaches the plugins as their token, and a name
// they do not know is refused, naming it, never left out.
func TestEveryAlgorithmName(t *testing.T) {
	spellings := []struct{ nccl, token string }{
		{"TREE", "tree"}, {"RING", "ring"}, {"COLLNET_DIRECT", "collnet_direct"}, {"COLLNET_CHAIN", "collnet_chain"},
		{"NVLS", "nvls"}, {"NVLS_TREE", "nvls_tree"}, {"PAT", "pat"},
		{"Tree", "tree"}, {"CollNetDirect", "collnet_direct"}, {"CollnetDirect", "collnet_direct"}, {"CollnetChain", "collnet_chain"},
		{"NVLSTree", "nvls_tree"}, {"nvls_tree", "nvls_tree"}, {"Ring", "ring"},
	}
	protos := []struct{ nccl, token string }{{"LL", "ll"}, {"LL128", "ll128"}, {"SIMPLE", "simple"}, {"Simple", "simple"}}
	// One size in 2 has its own spelling: 8, 32, 128, ... (the sizes between decide alike).
	var want [][]string
	byteAt := map[int64]int{}
	for i := range spellings {
		byteAt[8<<(2*i)] = i
	}
	ex := sweepCampaign(t, nil, func(size int64) nccllog.Decision {
		i := byteAt[size]
		if _, ok := byteAt[size]; !ok {
			i = byteAt[size/2]
		}
		return nccllog.Decision{Op: "AllReduce", Bytes: size, Algo: spellings[i].nccl, Proto: protos[i%len(protos)].nccl, Channels: i + 1}
	}, nil)
	for i, s := range spellings {
		lo, hi := fmt.Sprint(int64(8)<<(2*i)), fmt.Sprint(int64(8)<<(2*i+2)-1)
		if i == 0 {
			lo = "0"
		}
		if i == len(spellings)-1 {
			hi = "9223372036854775807"
		}
		want = append(want, []string{"allreduce", lo, hi, s.token, protos[i%len(protos)].token, fmt.Sprint(i + 1), "2", "16", "-1", "-1"})
	}
	got, err := csvRules(t, ex)
	if err != nil {
		t.Fatal(err)
	}
	if got = got[:min(len(got), len(want))]; !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("rules\n got %q\nwant %q", got, want)
	}

	for _, bad := range []struct{ algo, proto, want string }{
		{"Unknown", "SIMPLE", `algorithm "Unknown", which no tuner plugin knows`},
		{"RINGS", "LL", `algorithm "RINGS"`},
		{"COLLNET", "LL", `algorithm "COLLNET"`},
		{"RING", "LL256", `protocol "LL256", which no tuner plugin knows`},
		{"RING", "", `protocol ""`},
	} {
		ex := sweepCampaign(t, nil, func(size int64) nccllog.Decision {
			if size == 1<<20 {
				return nccllog.Decision{Op: "AllReduce", Bytes: size, Algo: bad.algo, Proto: bad.proto, Channels: 4}
			}
			return decide("RING", "SIMPLE", 8)(size)
		}, nil)
		if rules, err := csvRules(t, ex); err == nil || !strings.Contains(err.Error(), bad.want) || !strings.Contains(err.Error(), "1048576 bytes") {
			t.Errorf("%s/%s: %v, want an error with %q\n%q", bad.algo, bad.proto, err, bad.want, rules)
		}
	}
}

// TestTamperedDecisions: what the store says NCCL decided is checked before
// a rule is written: NCCL's channel counts (1 to MAXCHANNELS, 64), sizes it
// can log, names the plugins know, one decision per size, and node and rank
// counts a communicator can have. Each is refused with the reason, and no
// file is written.
func TestTamperedDecisions(t *testing.T) {
	at := func(size int64, d nccllog.Decision) func(*Export) {
		return func(ex *Export) {
			key := ex.Space.Key(space.Assignment(ex.Job.Ranges[0].Best.Params))
			for i := range ex.Decisions[key] {
				if ex.Decisions[key][i].Bytes == size {
					ex.Decisions[key][i] = d
				}
			}
		}
	}
	ring := func(bytes int64, channels int) nccllog.Decision {
		return nccllog.Decision{Op: "AllReduce", Bytes: bytes, Algo: "RING", Proto: "SIMPLE", Channels: channels}
	}
	cases := []struct {
		name   string
		tamper func(*Export)
		want   string
	}{
		{"negative channels", at(1024, ring(1024, -7)), "ran -7 channels, outside NCCL's 1 to 64"},
		{"no channels", at(1024, ring(1024, 0)), "ran 0 channels"},
		{"65 channels", at(1024, ring(1024, 65)), "ran 65 channels"},
		{"100000 channels", at(1024, ring(1024, 100000)), "ran 100000 channels"},
		{"negative size", at(1024, ring(-1024, 8)), "-1024 bytes: no size NCCL logs"},
		{"huge size", at(1024, ring(1<<62, 8)), "4611686018427387904 bytes: no size NCCL logs"},
		{"per-rank size that overflows", func(ex *Export) {
			ex.Decisions[ex.Space.Key(space.Assignment(ex.Job.Ranges[0].Best.Params))] = append(ex.Decisions[ex.Space.Key(space.Assignment(ex.Job.Ranges[0].Best.Params))],
				nccllog.Decision{Op: "AllGather", Bytes: 1 << 49, Algo: "RING", Proto: "SIMPLE", Channels: 8})
		}, "AllGather of 562949953421312 bytes: no size NCCL logs"},
		{"algorithm with a newline", at(1024, nccllog.Decision{Op: "AllReduce", Bytes: 1024, Algo: "tree\nexport X=1", Proto: "LL", Channels: 8}), `algorithm "tree\nexport X=1"`},
		{"protocol with a comma", at(1024, nccllog.Decision{Op: "AllReduce", Bytes: 1024, Algo: "TREE", Proto: "LL,1,2", Channels: 8}), `protocol "LL,1,2"`},
		{"two decisions for a size", func(ex *Export) {
			key := ex.Space.Key(space.Assignment(ex.Job.Ranges[0].Best.Params))
			ex.Decisions[key] = append(ex.Decisions[key], nccllog.Decision{Op: "AllReduce", Bytes: 1024, Algo: "TREE", Proto: "LL", Channels: 8})
		}, "decisions for allreduce of 1024 bytes disagree"},
		{"under the job's environment", func(ex *Export) { ex.Decisions[ex.Space.Key(ex.Job.Alone(ex.Space))][3].Channels = 999 },
			"under the job's environment: NCCL's recorded decision for AllReduce of 64 bytes ran 999 channels"},
		{"negative nodes", func(ex *Export) { ex.Fingerprint.Nodes = -2 }, "ran on -2 nodes and 16 ranks, which no communicator has"},
		{"more nodes than ranks", func(ex *Export) { ex.Fingerprint.Nodes = 32 }, "ran on 32 nodes and 16 ranks"},
		{"absurd ranks", func(ex *Export) { ex.Fingerprint.Ranks = 1 << 40 }, "ran on 2 nodes and 1099511627776 ranks"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ex := sweepCampaign(t, nil, decide("RING", "SIMPLE", 8), decide("RING", "LL", 8))
			tc.tamper(&ex)
			dir := t.TempDir()
			paths, err := ex.Write("tuner-csv", dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.ContainsAny(err.Error(), "\n\r") {
				t.Errorf("wrote %v, error %v; want one with %q", paths, err, tc.want)
			}
			if entries, _ := os.ReadDir(dir); len(entries) > 0 {
				t.Errorf("wrote %v", entries)
			}
		})
	}
}

// TestSlurmRefusesControlCharacters: the slurm renderer checks names and
// values itself, whatever let them through before it.
func TestSlurmRefusesControlCharacters(t *testing.T) {
	for _, v := range []string{"eth0\nexport X=1", "eth0\x1b[2J", "eth0\rx"} {
		ex := fixedExport(t, "NCCL_SOCKET_IFNAME", "eth0")
		ex.Space.Fixed["NCCL_SOCKET_IFNAME"] = v
		r := ex.Results[0]
		if f, err := ex.rangeFile("slurm", r, space.Assignment(r.Best.Params)); err == nil || !strings.Contains(err.Error(), "control character") {
			t.Errorf("%q: wrote %q, %v", v, f.text, err)
		}
	}
}

// TestCheckRules: the last check before any rule is written.
func TestCheckRules(t *testing.T) {
	ok := rule{coll: "allreduce", min: 0, max: 1023, algo: "ring", proto: "ll", channels: 8}
	with := func(f func(*rule)) []rule { r := ok; f(&r); return []rule{r} }
	if err := checkRules([]rule{ok, {coll: "allreduce", min: 1024, max: -1}, {coll: "allgather", min: 0, max: -1, channels: 64}}); err != nil {
		t.Errorf("good rules: %v", err)
	}
	for _, tc := range []struct {
		rules []rule
		want  string
	}{
		{with(func(r *rule) { r.coll = "allreduce\n" }), "collective"},
		{with(func(r *rule) { r.algo = "Ring" }), `algorithm "Ring"`},
		{with(func(r *rule) { r.proto = "ll;x" }), `protocol "ll;x"`},
		{with(func(r *rule) { r.min = -1 }), "sizes -1 to 1023"},
		{with(func(r *rule) { r.min, r.max = 10, 9 }), "sizes 10 to 9"},
		{with(func(r *rule) { r.max = -2 }), "sizes 0 to -2"},
		{with(func(r *rule) { r.channels = -7 }), "-7 channels"},
		{with(func(r *rule) { r.channels = 100000 }), "100000 channels"},
		{[]rule{ok, {coll: "allreduce", min: 1023, max: -1}}, "overlap"},
		{[]rule{{coll: "allreduce", min: 5, max: -1}, ok}, "overlap"},
	} {
		if err := checkRules(tc.rules); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error with %q", tc.rules, err, tc.want)
		}
	}
}

// exampleMatch is the rule NVIDIA's example plugin applies to a collective
// of size bytes on a communicator of nodes and ranks: the first that matches
// (plugins/tuner/example/plugin.c, pluginGetCollInfo; -1 matches any count)
// and whose algorithm and protocol NCCL can run there (runs; nil: any);
// nil where none does, and the example then runs one channel.
func exampleMatch(t testing.TB, rules [][]string, coll string, size uint64, nodes, ranks int, runs ...func(algo, proto string) bool) []string {
	t.Helper()
	for _, r := range rules {
		var lo, hi uint64
		var n, k int
		if _, err := fmt.Sscan(r[1]+" "+r[2]+" "+r[6]+" "+r[7], &lo, &hi, &n, &k); err != nil || len(r) != 10 {
			t.Fatalf("rule %q: %v", r, err)
		}
		if r[0] == coll && lo <= size && size <= hi && (n == -1 || n == nodes) && (k == -1 || k == ranks) &&
			!slices.ContainsFunc(runs, func(can func(a, p string) bool) bool { return !can(r[3], r[4]) }) {
			return r
		}
	}
	return nil
}

// TestTunerCSVCoversEverySize is a property test over generated range
// layouts (ranges that touch or leave gaps, unaligned ends, one to four of
// them), with NCCL's decisions under the job's environment recorded or not:
// the example plugin's rules for the measured communicator reach from 0 to
// every size without a gap or an overlap, each size a range measured gets
// NCCL's decision under the range's choice, and each size outside them
// NCCL's decision under the job's environment where it was recorded.
func TestTunerCSVCoversEverySize(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 2))
	algos := []string{"TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT"}
	protos := []string{"LL", "LL128", "SIMPLE"}
	// decisions are NCCL's decisions for every size of the sweep, in runs.
	decisions := func() map[int64]nccllog.Decision {
		ds := map[int64]nccllog.Decision{}
		d := nccllog.Decision{Op: "AllReduce", Algo: "RING", Proto: "LL", Channels: 4}
		for size := int64(8); size <= 1<<30; size *= 2 {
			if rng.IntN(3) == 0 {
				d.Algo, d.Proto, d.Channels = algos[rng.IntN(len(algos))], protos[rng.IntN(len(protos))], 1+rng.IntN(64)
			}
			d.Bytes = size
			ds[size] = d
		}
		return ds
	}
	for iter := range 150 {
		exps := rng.Perm(28)[:2*(1+rng.IntN(4))]
		slices.Sort(exps)
		var ranges [][2]string
		var bounds [][2]int64 // [min, max)
		for i := 0; i < len(exps); i += 2 {
			lo, hi := int64(1)<<(exps[i]+3), int64(1)<<(exps[i+1]+3)
			if rng.IntN(3) == 0 {
				hi += rng.Int64N(hi) // an unaligned end, below the next range's start
			}
			if n := len(bounds); n > 0 && rng.IntN(3) == 0 {
				lo = bounds[n-1][1] // touching the range before
			}
			ranges, bounds = append(ranges, [2]string{fmt.Sprint(lo), fmt.Sprint(hi)}), append(bounds, [2]int64{lo, hi})
		}
		tuned, alone := decisions(), decisions()
		var aloneDecider decider
		if rng.IntN(4) > 0 {
			aloneDecider = func(size int64) nccllog.Decision { return alone[size] }
		} else {
			alone = nil
		}
		ex := sweepCampaign(t, ranges, func(size int64) nccllog.Decision { return tuned[size] }, aloneDecider)
		all, err := csvRules(t, ex)
		if err != nil {
			t.Fatalf("layout %d %q: %v", iter, ranges, err)
		}
		mine := slices.DeleteFunc(slices.Clone(all), func(r []string) bool { return r[6] != "2" || r[7] != "16" })
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("layout %d %q (decisions under the job's environment: %v): %s\nrules %q", iter, ranges, alone != nil, fmt.Sprintf(format, args...), all)
		}
		// Contiguous from 0 to the largest size, in order.
		next := "0"
		for _, r := range mine {
			if r[0] != "allreduce" || r[1] != next {
				fail("rule %q does not start at %s", r, next)
			}
			var hi uint64
			fmt.Sscan(r[2], &hi)
			next = fmt.Sprint(hi + 1)
		}
		if next != fmt.Sprint(uint64(math.MaxInt64)+1) {
			fail("the rules end below %d", int64(math.MaxInt64))
		}
		// Each size decided as NCCL decided it.
		for size := int64(8); size <= 1<<30; size *= 2 {
			want, ok := tuned[size], false
			for _, b := range bounds {
				ok = ok || size >= b[0] && size < b[1]
			}
			if !ok {
				if want, ok = alone[size]; !ok {
					continue
				}
			}
			got := exampleMatch(t, mine, "allreduce", uint64(size), 2, 16)
			if w := []string{strings.ToLower(want.Algo), strings.ToLower(want.Proto), fmt.Sprint(want.Channels)}; got == nil || !slices.Equal(got[3:6], w) {
				fail("size %d: rule %q, want %q", size, got, w)
			}
		}
	}
}

// TestOtherCommunicators: the example plugin runs one channel on every
// collective of a communicator that no rule matches; a tensor-parallel
// group, a DDP subgroup or another node count must still match a rule,
// after the measured communicator's, of NCCL's own choice as measured and
// NCCL's own channel count (0). Where NCCL cannot run that pair on the
// communicator, ring with its protocol, then ring/simple.
func TestOtherCommunicators(t *testing.T) {
	tuned := func(size int64) nccllog.Decision {
		if size < 1<<20 {
			return decide("TREE", "LL", 4)(size)
		}
		return decide("RING", "SIMPLE", 24)(size)
	}
	alone := func(size int64) nccllog.Decision {
		if size < 1<<16 {
			return decide("NVLS_TREE", "LL128", 8)(size)
		}
		return decide("COLLNET_DIRECT", "SIMPLE", 16)(size)
	}
	noNVLS := func(a, p string) bool { return a != "nvls_tree" }
	noCollnet := func(a, p string) bool { return a != "collnet_direct" }
	noLL128 := func(a, p string) bool { return p != "ll128" }
	for _, tc := range []struct {
		name  string
		alone decider
		runs  []func(a, p string) bool
		want  func(size int64) string // algorithm/protocol
	}{
		{"NCCL's choice under the job's environment", alone, nil, func(size int64) string {
			return map[bool]string{true: "nvls_tree/ll128", false: "collnet_direct/simple"}[size < 1<<16]
		}},
		{"the measured rules, where that was not recorded", nil, nil, func(size int64) string {
			return map[bool]string{true: "tree/ll", false: "ring/simple"}[size < 1<<20]
		}},
		{"ring with its protocol where NCCL cannot run the pair", alone, []func(a, p string) bool{noNVLS, noCollnet}, func(size int64) string {
			return map[bool]string{true: "ring/ll128", false: "ring/simple"}[size < 1<<16]
		}},
		{"then ring/simple", alone, []func(a, p string) bool{noNVLS, noCollnet, noLL128}, func(int64) string { return "ring/simple" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rules, err := csvRules(t, sweepCampaign(t, [][2]string{{"8", "64K"}, {"1M", "2G"}}, tuned, tc.alone))
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct{ nodes, ranks int }{{1, 8}, {1, 2}, {2, 8}, {4, 32}, {16, 128}} {
				for _, size := range []int64{0, 8, 4096, 1 << 16, 1 << 20, 1 << 30, math.MaxInt64} {
					r := exampleMatch(t, rules, "allreduce", uint64(size), c.nodes, c.ranks, tc.runs...)
					if r == nil || r[3]+"/"+r[4] != tc.want(size) || r[5] != "0" || r[6] != "-1" || r[7] != "-1" {
						t.Errorf("%d nodes, %d ranks, %d bytes: rule %q, want %s on NCCL's channels (0) for any communicator", c.nodes, c.ranks, size, r, tc.want(size))
					}
				}
			}
			// The measured communicator keeps its own rules: they come first.
			if r := exampleMatch(t, rules, "allreduce", 1<<20, 2, 16); r == nil || r[6] != "2" || r[3] != "ring" || r[5] != "24" {
				t.Errorf("the measured communicator: %q", r)
			}
		})
	}
}

// TestTunerEnvLoadsThePlugin: sourcing nccl-tuner.env alone is enough: it
// names the example plugin's library (the path given, or "example", which
// NCCL opens as libnccl-tuner-example.so) and its rules.
func TestTunerEnvLoadsThePlugin(t *testing.T) {
	for _, tc := range []struct{ plugin, want string }{{"", "example"}, {"/opt/nccl/lib/libnccl-tuner-example.so", "/opt/nccl/lib/libnccl-tuner-example.so"}} {
		ex := sweepCampaign(t, nil, decide("RING", "SIMPLE", 8), nil)
		ex.Plugin = tc.plugin
		dir := t.TempDir()
		if _, err := ex.Write("tuner-csv", dir); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("sh", "-c", `. "$1" && printf '%s|%s' "$NCCL_TUNER_PLUGIN" "$NCCL_TUNER_CONFIG_FILE"`, "sh", filepath.Join(dir, "nccl-tuner.env")).Output()
		if want := tc.want + "|" + filepath.Join(dir, "nccl_tuner.conf"); err != nil || string(out) != want {
			t.Errorf("--plugin %q: sourced %q (%v), want %q", tc.plugin, out, err, want)
		}
	}
}

// pluginEnv writes the export's plugin format and returns its nccl-plugin.env.
func pluginEnv(t *testing.T, ex Export) string {
	t.Helper()
	env, err := written(t, ex, "plugin", "nccl-plugin.env")
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// TestPluginEnvNeedsATunedRange: where validation kept NCCL's defaults in
// every range, the plugin's job environment is NCCL's defaults: the best
// trial's job-wide settings (NCCL_NET_GDR_LEVEL=SYS) were judged only with
// the per-size choice that validation rejected, never on their own.
func TestPluginEnvNeedsATunedRange(t *testing.T) {
	ex := sweepCampaign(t, [][2]string{{"8", "64K"}, {"64K", "1G"}}, decide("RING", "SIMPLE", 8), decide("RING", "LL", 8))
	sp := ex.Space
	var trials []store.Trial
	for n, a := range []space.Assignment{{"NCCL_PROTO": space.Unset, "NCCL_NET_GDR_LEVEL": space.Unset}, {"NCCL_PROTO": "Simple", "NCCL_NET_GDR_LEVEL": "SYS"}} {
		trials = append(trials, store.Trial{Number: n, State: store.Complete, Params: a, Env: sp.Env(a), Scores: map[string]float64{"r0": float64(1 + n), "r1": float64(1 + n)}})
	}
	var vals []store.Validation
	for _, r := range sp.Ranges {
		vals = append(vals, store.Validation{Range: r.Name, Candidate: 1, Config: sp.Key(trials[1].Params), Verdict: "default", Reason: "no gain"})
	}
	ex.Results, ex.Job = results.Of(sp, trials, vals), results.JobOf(sp, trials, vals)
	env := pluginEnv(t, ex)
	if strings.Contains(env, "export NCCL_NET_GDR_LEVEL") {
		t.Errorf("no range was tuned, yet the plugin's environment sets the best trial's settings:\n%s", env)
	}
}

// TestPluginEnvOfAWorkloadJobValidatedWhole: a workload's job is judged as a
// whole; where that verdict kept its configuration, the plugin's job
// environment is the job's (NCCL_BUFFSIZE=16M), as the job file's is, even
// where no collective's own verdict was significant.
func TestPluginEnvOfAWorkloadJobValidatedWhole(t *testing.T) {
	ex := jobExport(t, jobSpace, map[string]string{"allgather": "Ring", "allreduce": "Tree"}, func(sp *space.Space, candidate string) []store.Validation {
		return []store.Validation{
			{Range: "all_gather", Candidate: 1, Config: candidate, Verdict: "default", Reason: "not significant"},
			{Range: "all_reduce", Candidate: 1, Config: candidate, Verdict: "default", Reason: "not significant"},
			{Range: results.JobRange, Candidate: -1, Config: candidate, Verdict: "tuned", Reason: "significant"},
		}
	})
	env := pluginEnv(t, ex)
	job, err := writeJob(t, ex)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(job, "NCCL_BUFFSIZE") || !strings.Contains(env, "NCCL_BUFFSIZE") {
		t.Errorf("the job, validated as a whole, sets NCCL_BUFFSIZE; the plugin's environment does not:\n%s\njob file:\n%s", env, job)
	}
}

// TestPluginOfAWorkloadJobRejectedWhole: where validation rejected a
// workload's job as a whole, the plugin formats export what the job file
// does, NCCL's defaults: no job environment (NCCL_BUFFSIZE=16M) and no
// rule, though one collective's own verdict was significant.
func TestPluginOfAWorkloadJobRejectedWhole(t *testing.T) {
	ex := jobExport(t, jobSpace, map[string]string{"allgather": "Ring", "allreduce": "Tree"}, func(sp *space.Space, candidate string) []store.Validation {
		return []store.Validation{
			{Range: "all_gather", Candidate: 1, Config: candidate, Verdict: "tuned", Reason: "significant"},
			{Range: "all_reduce", Candidate: 1, Config: candidate, Verdict: "default", Reason: "not significant"},
			{Range: results.JobRange, Candidate: -1, Config: candidate, Verdict: "default", Reason: "the job as a whole: not significant"},
		}
	})
	job, err := writeJob(t, ex)
	if err != nil {
		t.Fatal(err)
	}
	if env := pluginEnv(t, ex); strings.Contains(job, "export NCCL_BUFFSIZE") || strings.Contains(env, "export NCCL_BUFFSIZE") {
		t.Errorf("the job was rejected as a whole, yet an export sets its environment:\n%s\njob file:\n%s", env, job)
	}
	rules, _, err := ex.jobRules(false)
	if err != nil || len(rules) > 0 {
		t.Errorf("rules of a rejected job: %v, %v", rules, err)
	}
}

// TestPluginSaysWhatAWorkloadJobDoesPerRange: the rules file's header says
// per range what the plugin does there. A workload's job follows its own
// verdict, whatever a collective's said; the header gave the collective's:
// "validated" for all_gather where the job was rejected and no rule serves
// it, "validation kept NCCL's defaults" for all_reduce where the job was
// kept and its rule applies all_reduce's choice.
func TestPluginSaysWhatAWorkloadJobDoesPerRange(t *testing.T) {
	for _, job := range []string{"tuned", "default"} {
		ex := jobExport(t, jobSpace, map[string]string{"allgather": "Ring", "allreduce": "Tree"}, func(sp *space.Space, candidate string) []store.Validation {
			return []store.Validation{
				{Range: "all_gather", Candidate: 1, Config: candidate, Verdict: "tuned", Reason: "significant alone"},
				{Range: "all_reduce", Candidate: 1, Config: candidate, Verdict: "default", Reason: "not significant alone"},
				{Range: results.JobRange, Candidate: -1, Config: candidate, Verdict: job, Reason: "the job as a whole"},
			}
		})
		rules, err := written(t, ex, "plugin", "nccltune.rules")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(rules, "alone") || !strings.Contains(rules, "the job as a whole") {
			t.Errorf("the job %s as a whole: the rules file describes the collectives by their own verdicts:\n%s", job, rules)
		}
	}
}

// exampleRules reads a rules file as NVIDIA's example plugin does
// (loadConfig, plugins/tuner/example/plugin.c): fgets into 256 bytes, so that
// what a longer line leaves is read as a line of its own; a piece that
// starts with '#' or is empty is passed over, and one of 8 to 10 fields
// (strtok_r at ',', so empty fields vanish; each trimmed) is a rule.
func exampleRules(text string) [][]string {
	var out [][]string
	for len(text) > 0 {
		n := min(len(text), 255)
		if i := strings.IndexByte(text[:n], '\n'); i >= 0 {
			n = i + 1
		}
		piece := text[:n]
		text = text[n:]
		if piece[0] == '#' || piece[0] == '\n' {
			continue
		}
		piece, _, _ = strings.Cut(piece, "\n")
		var fields []string
		for _, f := range strings.Split(piece, ",") {
			if f != "" && len(fields) < 10 {
				fields = append(fields, strings.Trim(f, " \t"))
			}
		}
		if len(fields) >= 8 {
			out = append(out, fields)
		}
	}
	return out
}

// TestExampleReadsOnlyTheRules: NVIDIA's example plugin reads a line of 256
// bytes or more as several, the first a comment, the rest rules if they hold
// 8 fields: a header line of text from the store (a campaign's name) made
// a rule for every communicator (tree/LL on one channel, for allreduce of
// every size), and nccltune's own header's longest line was 317 bytes.
// What the example reads must be the rules written, no more.
func TestExampleReadsOnlyTheRules(t *testing.T) {
	ex := pinned(t)
	ex.Campaign.Name = strings.Repeat("x", 255-len(`# campaign "`)) + "allreduce,0,1099511627776,tree,ll,1,-1,-1"
	data, err := written(t, ex, "tuner-csv", "nccl_tuner.conf")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := exampleRules(data), rulesOf(data, ","); !reflect.DeepEqual(got, want) {
		t.Errorf("the example reads the rules\n%q\nnot those written\n%q", got, want)
	}
}

// rangesApart is the export of sweepCampaign's space with two ranges, where
// NCCL's defaults failed and each range was measured by one trial only, so
// that no environment measured both: trial 1 (NCCL_PROTO=Simple) measured
// range first, trial 2 (NCCL_PROTO=LL, NCCL_NET_GDR_LEVEL=SYS) the other;
// with verdicts (tuned or default) on trial 1 and trial 2.
func rangesApart(t *testing.T, first int, verdicts [2]string) Export {
	t.Helper()
	ex := sweepCampaign(t, [][2]string{{"8", "64K"}, {"64K", "1G"}}, nil, nil)
	sp := ex.Space
	trial := func(n int, state store.State, a space.Assignment, rg int) store.Trial {
		tr := store.Trial{Number: n, State: state, Params: a, Env: sp.Env(a)}
		if rg >= 0 {
			tr.Scores = map[string]float64{sp.Ranges[rg].Name: 2}
		}
		return tr
	}
	trials := []store.Trial{
		trial(0, store.Failed, space.Assignment{"NCCL_PROTO": space.Unset, "NCCL_NET_GDR_LEVEL": space.Unset}, -1),
		trial(1, store.Complete, space.Assignment{"NCCL_PROTO": "Simple", "NCCL_NET_GDR_LEVEL": space.Unset}, first),
		trial(2, store.Complete, space.Assignment{"NCCL_PROTO": "LL", "NCCL_NET_GDR_LEVEL": "SYS"}, 1-first),
	}
	var vals []store.Validation
	for i, v := range verdicts {
		vals = append(vals, store.Validation{Range: sp.Ranges[(first+i)%2].Name, Candidate: i + 1, Config: sp.Key(trials[i+1].Params), Verdict: v, Reason: v})
	}
	ex.Results, ex.Job = results.Of(sp, trials, vals), results.JobOf(sp, trials, vals)
	return ex
}

// TestPluginEnvNeverTakesARejectedRange: where no environment measured
// every range (here NCCL's defaults failed, and each trial measured one
// range), each range's choice is its own best trial, each with its own
// job-wide settings. The plugin's job environment is then that of a range
// whose choice validation kept, never that of a range whose choice it
// rejected (NCCL_NET_GDR_LEVEL=SYS here), whichever order the ranges come
// in: a rejected choice is never exported, and its range runs NCCL's own
// choice under the job's environment.
func TestPluginEnvNeverTakesARejectedRange(t *testing.T) {
	for kept := range 2 {
		ex := rangesApart(t, kept, [2]string{"tuned", "default"})
		sp := ex.Space
		rejected := sp.Ranges[1-kept].Name
		if env := pluginEnv(t, ex); strings.Contains(env, "export NCCL_NET_GDR_LEVEL") {
			t.Errorf("range %s's choice was rejected, yet the plugin's environment sets its NCCL_NET_GDR_LEVEL:\n%s", rejected, env)
		}
		if alone := ex.Job.Alone(sp); alone["NCCL_NET_GDR_LEVEL"] == "SYS" {
			t.Errorf("range %s's choice was rejected, yet the job's environment without the plugin is its own: %v", rejected, alone)
		}
		rules, _, err := ex.jobRules(false)
		if want := []rule{{coll: "allreduce", min: sp.Ranges[kept].Min, max: upTo(sp.Ranges[kept]), proto: "simple", from: sp.Ranges[kept].Name}}; err != nil || !reflect.DeepEqual(rules, want) {
			t.Errorf("rules %+v (%v), want only the kept range's %+v", rules, err, want)
		}
	}
}

// TestPluginRefusesChoicesOfTwoEnvironments: where two ranges' kept
// choices were measured under different job-wide settings (NCCL's defaults
// failed, each trial measured one range), one job cannot hold both: the
// plugin formats refuse, saying why and what to export instead, rather than
// apply one range's algorithm and protocol under an environment it never ran
// with.
func TestPluginRefusesChoicesOfTwoEnvironments(t *testing.T) {
	ex := rangesApart(t, 0, [2]string{"tuned", "tuned"})
	for _, format := range []string{"plugin", "tuner-csv"} {
		dir := t.TempDir()
		paths, err := ex.Write(format, dir)
		if err == nil || !strings.Contains(err.Error(), "range r1: its choice, trial 2, sets job-wide variables otherwise than trial 1") || !strings.Contains(err.Error(), "--format env") {
			t.Errorf("%s: wrote %v, error %v; want a refusal naming both trials", format, paths, err)
		}
		if entries, _ := os.ReadDir(dir); len(entries) > 0 {
			t.Errorf("%s: wrote %v", format, entries)
		}
	}
}

// TestTunerCSVOfRejectedChoicesIsNCCLsDefaults: where validation kept NCCL's
// defaults in every range, every rule of NVIDIA's example plugin is NCCL's
// own decision under NCCL's defaults: the sizes between the ranges and the
// other communicators' rules too, never NCCL's decisions under the rejected
// environment (NCCL_NET_GDR_LEVEL=SYS, tree/LL on 3 channels here).
func TestTunerCSVOfRejectedChoicesIsNCCLsDefaults(t *testing.T) {
	ex := sweepCampaign(t, [][2]string{{"8", "64K"}, {"1M", "1G"}}, decide("RING", "SIMPLE", 8), decide("TREE", "LL", 3))
	sp := ex.Space
	var defaults []nccllog.Decision
	for _, size := range sp.Sizes.List() {
		defaults = append(defaults, decide("RING", "LL128", 7)(size))
	}
	ex.Decisions[sp.Key(space.Assignment{})] = defaults
	trials := []store.Trial{
		{Number: 0, State: store.Complete, Params: space.Assignment{"NCCL_PROTO": space.Unset, "NCCL_NET_GDR_LEVEL": space.Unset}, Scores: map[string]float64{"r0": 1, "r1": 1}},
		{Number: 1, State: store.Complete, Params: space.Assignment{"NCCL_PROTO": "Simple", "NCCL_NET_GDR_LEVEL": "SYS"}, Scores: map[string]float64{"r0": 2, "r1": 2}},
	}
	var vals []store.Validation
	for i := range trials {
		trials[i].Env = sp.Env(trials[i].Params)
	}
	for _, r := range sp.Ranges {
		vals = append(vals, store.Validation{Range: r.Name, Candidate: 1, Config: sp.Key(trials[1].Params), Verdict: "default", Reason: "no gain"})
	}
	ex.Results, ex.Job = results.Of(sp, trials, vals), results.JobOf(sp, trials, vals)
	rules, err := csvRules(t, ex)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rules {
		if r[3] == "tree" || r[4] == "ll" || r[5] == "3" {
			t.Errorf("rule %q is NCCL's decision under the rejected environment", r)
		}
	}
}

// TestCompareReadsThePluginEnv: `nccltune compare` reads env files with
// ReadEnvFile, which took only the catalogue's variables and so refused
// nccl-plugin.env for its NCCLTUNE_RULES. It reads the file whole now, the
// plugin's library and rules with it, so that compare launches the job's
// environment as the plugin applies it; a relative rules path, which the
// benchmark's ranks would look for in their own directories, is refused.
func TestCompareReadsThePluginEnv(t *testing.T) {
	ex := sweepCampaign(t, nil, nil, nil)
	dir := t.TempDir()
	if _, err := ex.Write("plugin", dir); err != nil {
		t.Fatal(err)
	}
	env, err := ReadEnvFile(filepath.Join(dir, "nccl-plugin.env"))
	want := []string{"NCCL_NET_GDR_LEVEL=SYS", "NCCL_TUNER_PLUGIN=" + filepath.Join(dir, "libnccl-tuner-nccltune.so"), "NCCLTUNE_RULES=" + filepath.Join(dir, "nccltune.rules")}
	if err != nil || !slices.Equal(env, want) {
		t.Errorf("read %q, %v; want %q", env, err, want)
	}
	relative := filepath.Join(dir, "relative.env")
	os.WriteFile(relative, []byte("export NCCL_PROTO='Simple'\nexport NCCLTUNE_RULES='tuned/nccltune.rules'\n"), 0o644)
	if env, err := ReadEnvFile(relative); err == nil || !strings.Contains(err.Error(), "relative.env:2: NCCLTUNE_RULES=tuned/nccltune.rules: the plugin's rules file needs an absolute path") {
		t.Errorf("read %q, %v; want the relative path refused", env, err)
	}
}

// TestSetForReadsAsNCCLDoes: NCCL's parseList reads NCCL_ALGO and NCCL_PROTO
// part by part, a later part for a collective replacing an earlier one, so
// the rules must repeat the last part that names the collective, as the
// trials ran it.
func TestSetForReadsAsNCCLDoes(t *testing.T) {
	for _, c := range []struct {
		value, coll, want string
		one               bool
	}{
		{"Ring", "allreduce", "ring", true},
		{"Ring;allreduce:Tree", "allreduce", "tree", true},
		{"Ring;allreduce:Tree", "allgather", "ring", true},
		{"allreduce:Tree", "allgather", "", true},
		{"allreduce:Tree;allreduce:Ring", "allreduce", "ring", true},
		{"Tree;allreduce:Ring;allgather:Tree;allreduce:NVLS", "allreduce", "nvls", true},
		{"allreduce:Tree;allreduce:Ring,Tree", "allreduce", "", false},
	} {
		got, one := setFor(algoTokens, c.value, c.coll)
		if got != c.want || one != c.one {
			t.Errorf("setFor(%q, %s) = %q, %v; NCCL reads %q, %v", c.value, c.coll, got, one, c.want, c.one)
		}
	}
}

// TestPluginPathNCCLCanOpen: NCCL 2.26 and later copy NCCL_TUNER_PLUGIN into
// 255 bytes (openPluginLib, MAX_STR_LEN) and dlopen what is left: a longer
// path, ours by default (the absolute --out) or --plugin's, loads no plugin,
// and the job runs on NCCL's own choices while the export claims the rules.
// Such a path is refused, for both plugins; one of 254 bytes is written.
func TestPluginPathNCCLCanOpen(t *testing.T) {
	long := "/" + strings.Repeat("d", 254-1-len("/"+plugin.LibraryName)) + "/" + plugin.LibraryName
	for _, format := range []string{"plugin", "tuner-csv"} {
		for _, tc := range []struct {
			lib     string
			refused bool
		}{{long, false}, {"/x" + long, true}} {
			ex := sweepCampaign(t, nil, decide("RING", "SIMPLE", 8), decide("RING", "SIMPLE", 8))
			ex.Plugin = tc.lib
			_, err := ex.Write(format, t.TempDir())
			if tc.refused != (err != nil) || err != nil && !strings.Contains(err.Error(), "254 bytes") {
				t.Errorf("%s, --plugin of %d bytes: %v, want refused %v", format, len(tc.lib), err, tc.refused)
			}
		}
	}
	// Without --plugin, the library's path is the folder's, made absolute.
	dir := filepath.Join(t.TempDir(), strings.Repeat("d", 250))
	if _, err := sweepCampaign(t, nil, decide("RING", "SIMPLE", 8), nil).Write("plugin", dir); err == nil || !strings.Contains(err.Error(), "254 bytes") {
		t.Errorf("plugin written in a folder of %d bytes: %v, want refused", len(dir), err)
	}
}

// TestPluginPathIsAbsolute: NCCL dlopens NCCL_TUNER_PLUGIN as written, and
// dlopen reads a path with a '/' from the process's working directory, which
// is the rank's, not the one export ran in (the rules' path beside it is
// absolute for that reason): a relative --plugin is written absolute. A bare
// name, which the loader looks up on its search path, is written as it is.
func TestPluginPathIsAbsolute(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ format, env, lib, want string }{
		{"plugin", "nccl-plugin.env", "build/" + plugin.LibraryName, filepath.Join(wd, "build", plugin.LibraryName)},
		{"plugin", "nccl-plugin.env", "./" + plugin.LibraryName, filepath.Join(wd, plugin.LibraryName)},
		{"plugin", "nccl-plugin.env", "nccltune", "nccltune"},
		{"plugin", "nccl-plugin.env", plugin.LibraryName, plugin.LibraryName},
		{"tuner-csv", "nccl-tuner.env", "../lib/libnccl-tuner-example.so", filepath.Join(filepath.Dir(wd), "lib", "libnccl-tuner-example.so")},
		{"tuner-csv", "nccl-tuner.env", "example", "example"},
	} {
		ex := sweepCampaign(t, nil, decide("RING", "SIMPLE", 8), decide("RING", "SIMPLE", 8))
		ex.Plugin = tc.lib
		dir := t.TempDir()
		if _, err := ex.Write(tc.format, dir); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("sh", "-c", `cd / && . "$1" && printf %s "$NCCL_TUNER_PLUGIN"`, "sh", filepath.Join(dir, tc.env)).Output()
		if err != nil || string(out) != tc.want {
			t.Errorf("%s --plugin %s: NCCL_TUNER_PLUGIN=%q (%v), want %q", tc.format, tc.lib, out, err, tc.want)
		}
	}
}

// TestPluginNeedsATunerInterfaceItExports: nccltune's plugin exports NCCL's
// tuner interfaces v4 to v6, which NCCL reads from 2.24; NCCL 2.19 to 2.23
// look for v2 and v3 only, find none, and run on their own choices. A
// campaign measured on such an NCCL gets no plugin rules, with the reason,
// rather than files its NCCL would ignore; an NCCL of unknown version is
// given the benefit of the doubt.
func TestPluginNeedsATunerInterfaceItExports(t *testing.T) {
	for _, tc := range []struct {
		nccl    string
		refused bool
	}{{"2.23.4+cuda12.6", true}, {"2.19.3", true}, {"2.24.3", false}, {"2.30.3", false}, {"", false}} {
		ex := sweepCampaign(t, nil, decide("RING", "SIMPLE", 8), decide("RING", "SIMPLE", 8))
		ex.Fingerprint.NCCL = tc.nccl
		_, err := ex.Write("plugin", t.TempDir())
		if tc.refused != (err != nil) || err != nil && !strings.Contains(err.Error(), "2.24") {
			t.Errorf("NCCL %q: %v, want refused %v", tc.nccl, err, tc.refused)
		}
	}
}

// TestPluginEnvKeepsWhatTheSpacePins: a per-size variable the space pins
// ([fixed] NCCL_PROTO = "^LL128", the usual workaround where LL128 corrupts
// data) held in every trial, and holds in the job: the plugin's env file
// sets it, so that sizes, collectives and communicators no rule covers, and
// the rules' own choices, never run what every measurement kept out. Only
// what the search varied is left to the rules.
func TestPluginEnvKeepsWhatTheSpacePins(t *testing.T) {
	ex := treeWon(t, "NCCL_PROTO = \"^LL128\"", []string{"NCCL_ALGO"}, decide("TREE", "SIMPLE", 8))
	for format, name := range map[string]string{"plugin": "nccl-plugin.env", "tuner-csv": "nccl-tuner.env"} {
		dir := t.TempDir()
		if _, err := ex.Write(format, dir); err != nil {
			t.Fatal(err)
		}
		env, err := ReadEnvFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(env, "NCCL_PROTO=^LL128") || slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "NCCL_ALGO=") }) {
			t.Errorf("%s: %q, want the pinned NCCL_PROTO=^LL128 and no NCCL_ALGO (the rules')", name, env)
		}
	}
}

// TestPerRankSizesNeedTheRankCount: NCCL's TUNING log gives an all-gather's
// and a reduce-scatter's bytes per rank, and the plugins compare the whole
// buffer (NCCL's nBytes for them is nRanks times the count). A campaign
// whose benchmark reported no rank count (the user's own command) cannot
// make the whole size of such a decision: its rules were written at the
// per-rank size, a factor of the rank count below the sizes NCCL asks
// about, so they steered other sizes than measured. They are refused.
func TestPerRankSizesNeedTheRankCount(t *testing.T) {
	sp, err := space.Parse("cmd.toml", []byte("[campaign]\nname = \"cmd\"\n[benchmark]\nkind = \"command\"\ncommand = [\"train\"]\n"+
		"metric = { regex = 'step ([0-9.]+) ms', goal = \"min\", unit = \"ms\" }\n"+
		"[[param]]\nname = \"NCCL_ALGO\"\nvalues = [\"default\", \"^NVLS\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	var scores func(float64) map[string]float64 = func(v float64) map[string]float64 {
		m := map[string]float64{}
		for _, r := range sp.Ranges {
			m[r.Name] = v
		}
		return m
	}
	trials := []store.Trial{
		{Number: 0, State: store.Complete, Params: space.Assignment{"NCCL_ALGO": space.Unset}, Env: sp.Env(space.Assignment{"NCCL_ALGO": space.Unset}), Scores: scores(1)},
		{Number: 1, State: store.Complete, Params: space.Assignment{"NCCL_ALGO": "^NVLS"}, Env: sp.Env(space.Assignment{"NCCL_ALGO": "^NVLS"}), Scores: scores(2)},
	}
	ds := []nccllog.Decision{
		{Op: "AllGather", Bytes: 1 << 20, Algo: "RING", Proto: "SIMPLE", Channels: 8},
		{Op: "AllGather", Bytes: 64 << 20, Algo: "PAT", Proto: "SIMPLE", Channels: 8},
		{Op: "AllReduce", Bytes: 1 << 20, Algo: "TREE", Proto: "LL128", Channels: 8},
	}
	for _, ranks := range []int{8, 0} {
		ex := Export{Space: sp, Campaign: store.Campaign{Name: "cmd", SpaceHash: sp.Hash()}, Results: results.Of(sp, trials, nil),
			Job: results.JobOf(sp, trials, nil), Decisions: map[string][]nccllog.Decision{sp.Key(trials[1].Params): ds},
			Fingerprint: runner.Fingerprint{NCCL: "2.28.3", Nodes: 1, Ranks: ranks}, Now: time.Now()}
		dir := t.TempDir()
		_, err := ex.Write("plugin", dir)
		text, _ := os.ReadFile(filepath.Join(dir, "nccltune.rules"))
		switch {
		case ranks > 0 && (err != nil || !strings.Contains(string(text), "\nallgather 0 536870911 1 8 ring simple 0 # range step\nallgather 536870912 - 1 8 pat simple 0")):
			t.Errorf("%d ranks: %v\n%s", ranks, err, text)
		case ranks == 0 && (err == nil || !strings.Contains(err.Error(), "rank count")):
			t.Errorf("no rank count: wrote the all-gather's rule at a rank's share of its size (%v)\n%s", err, text)
		}
	}
}

// treeWon is the export of an all-reduce campaign over 8..1M on 2 nodes of
// 8 GPUs, of a space pinning fixed (a [fixed] line) and searching params,
// each over "default" and one value (NCCL_ALGO's Tree, NCCL_PROTO's LL),
// in which NCCL_ALGO=Tree (trial 1) beat NCCL's defaults (trial 0), and
// NCCL decided under it as tuned says (nil: nothing recorded).
func treeWon(t *testing.T, fixed string, params []string, tuned decider) Export {
	t.Helper()
	text := "[campaign]\nname = \"won\"\nsizes = { min = \"8\", max = \"1M\", factor = 2 }\n[benchmark]\nbinary = \"x\"\ngpus = 16\n[fixed]\n" + fixed + "\n"
	defaults := space.Assignment{}
	for _, name := range params {
		text += fmt.Sprintf("[[param]]\nname = %q\nvalues = [\"default\", %q]\n", name, map[string]string{"NCCL_ALGO": "Tree", "NCCL_PROTO": "LL"}[name])
		defaults[name] = space.Unset
	}
	sp, err := space.Parse("won.toml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	tree := maps.Clone(defaults)
	tree["NCCL_ALGO"] = "Tree"
	var trials []store.Trial
	for n, a := range []space.Assignment{defaults, tree} {
		trials = append(trials, store.Trial{Number: n, State: store.Complete, Params: a, Env: sp.Env(a), Scores: map[string]float64{"all": float64(1 + n)}})
	}
	var ds []nccllog.Decision
	for _, size := range sp.Sizes.List() {
		if tuned == nil {
			break
		}
		ds = append(ds, tuned(size))
	}
	return Export{Space: sp, Campaign: store.Campaign{Name: "won", SpaceHash: sp.Hash()}, Results: results.Of(sp, trials, nil),
		Job: results.JobOf(sp, trials, nil), Decisions: map[string][]nccllog.Decision{sp.Key(tree): ds},
		Fingerprint: runner.Fingerprint{NCCL: "2.28.3", Nodes: 2, GPUsPerNode: 8, Ranks: 16}, Now: time.Now()}
}

// TestTunerCSVTellsWhatNCCLAsks: NCCL asks a tuner plugin about collectives
// only (ncclGetAlgoInfo); sendrecv and alltoall run as sends and receives,
// which no plugin steers, so the example cannot run them on one channel,
// and the file must not say it does.
func TestTunerCSVTellsWhatNCCLAsks(t *testing.T) {
	ex := sweepCampaign(t, [][2]string{{"8", "1G"}}, decide("RING", "SIMPLE", 8), decide("RING", "LL", 8))
	data, err := written(t, ex, "tuner-csv", "nccl_tuner.conf")
	if err != nil {
		t.Fatal(err)
	}
	head := strings.Join(strings.Fields(data), " ")
	if strings.Contains(head, "runs them on one channel") || !strings.Contains(head, "NCCL asks no tuner plugin about sendrecv and alltoall") {
		t.Errorf("the header misstates what NCCL asks the example about:\n%s", data)
	}
}

// TestDecisionsUnderAnotherSpelling: validation probed the choice as the
// trial chosen then spelled it (NCCL_PROTO=simple), and the results now
// represent it by another trial's spelling, which NCCL reads alike: the
// rules are NCCL's decisions under it, not refused as never probed.
func TestDecisionsUnderAnotherSpelling(t *testing.T) {
	ex := sweepCampaign(t, [][2]string{{"8", "2G"}}, decide("RING", "SIMPLE", 8), decide("TREE", "LL", 4))
	respell := map[string]string{
		ex.Space.Key(space.Assignment{"NCCL_PROTO": "Simple", "NCCL_NET_GDR_LEVEL": "SYS"}): "NCCL_NET_GDR_LEVEL=sys NCCL_PROTO=simple",
		ex.Space.Key(space.Assignment{"NCCL_NET_GDR_LEVEL": "SYS"}):                         "NCCL_NET_GDR_LEVEL=sys",
	}
	for key, other := range respell {
		if space.KeyReading(key) != space.KeyReading(other) {
			t.Fatalf("%q and %q read apart", key, other)
		}
		ds, ok := ex.Decisions[key]
		if !ok {
			t.Fatalf("no decisions under %q: %v", key, slices.Collect(maps.Keys(ex.Decisions)))
		}
		delete(ex.Decisions, key)
		ex.Decisions[other] = ds
	}
	for _, format := range []string{"tuner-csv", "plugin"} {
		if _, err := ex.Write(format, t.TempDir()); err != nil {
			t.Errorf("%s: %v", format, err)
		}
	}
}

// TestMergedNamesEveryRange: rules that follow on and choose alike are one
// rule, whose comment names every range it serves; a range whose name is
// part of another's ("r1" of "r10") was taken for one named already, and
// the comment left it out.
func TestMergedNamesEveryRange(t *testing.T) {
	rules := []rule{
		{coll: "allreduce", min: 0, max: 99, proto: "simple", from: "r10"},
		{coll: "allreduce", min: 100, max: 199, proto: "simple", from: "r1"},
		{coll: "allreduce", min: 200, max: 299, proto: "simple", from: "r1"},
		{coll: "allreduce", min: 300, max: -1, proto: "simple", from: "r0"},
	}
	if got := merged(rules); len(got) != 1 || got[0].max != -1 || got[0].about() != "range r10, r1, r0" {
		t.Errorf("merged: %+v, want one rule of 0 up for range r10, r1, r0", got)
	}
}

// TestPluginSaysWhatARejectedRangeRuns: a job of one collective's ranges
// holds one environment, here trial 1's NCCL_NET_GDR_LEVEL=SYS, which range
// r0's kept choice needs. Validation rejected trial 1's choice in range
// r1, which then runs NCCL's own algorithm and protocol under that
// environment: not NCCL's defaults, which its verdict keeps, and no
// configuration any verdict judged there. The plugins' files said "validation
// kept NCCL's defaults" of it; they say what it runs, and that no verdict
// covers it; or, where trial 1 set no algorithm or protocol, that it runs
// the very configuration validation rejected there.
func TestPluginSaysWhatARejectedRangeRuns(t *testing.T) {
	for _, tc := range []struct {
		proto string
		want  []string
	}{
		{"Simple", []string{"a configuration no verdict covers in this range", "validation kept NCCL's defaults: no gain"}},
		{space.Unset, []string{"trial 1's configuration, which validation rejected in this range (no gain)"}},
	} {
		pluginSays(t, tc.proto, tc.want)
	}
}

// pluginSays checks what the plugins' files say of range r1, where trial 1
// sets NCCL_PROTO proto and NCCL_NET_GDR_LEVEL=SYS (see
// TestPluginSaysWhatARejectedRangeRuns): each of want.
func pluginSays(t *testing.T, proto string, want []string) {
	t.Helper()
	ex := sweepCampaign(t, [][2]string{{"8", "64K"}, {"64K", "1G"}}, decide("RING", "SIMPLE", 8), decide("TREE", "LL", 3))
	sp := ex.Space
	trials := []store.Trial{
		{Number: 0, State: store.Complete, Params: space.Assignment{"NCCL_PROTO": space.Unset, "NCCL_NET_GDR_LEVEL": space.Unset}, Scores: map[string]float64{"r0": 1, "r1": 1}},
		{Number: 1, State: store.Complete, Params: space.Assignment{"NCCL_PROTO": proto, "NCCL_NET_GDR_LEVEL": "SYS"}, Scores: map[string]float64{"r0": 2, "r1": 2}},
	}
	for i := range trials {
		trials[i].Env = sp.Env(trials[i].Params)
	}
	vals := []store.Validation{{Range: "r0", Candidate: 1, Config: sp.Key(trials[1].Params), Verdict: "tuned", Reason: "gain +100%"},
		{Range: "r1", Candidate: 1, Config: sp.Key(trials[1].Params), Verdict: "default", Reason: "no gain"}}
	ex.Results, ex.Job = results.Of(sp, trials, vals), results.JobOf(sp, trials, vals)
	for _, f := range [][2]string{{"plugin", "nccltune.rules"}, {"tuner-csv", "nccl_tuner.conf"}} {
		text, err := written(t, ex, f[0], f[1])
		if err != nil {
			t.Fatalf("%s: %v", f[0], err)
		}
		// The header's lines wrap, each going on on comment lines of its own: read as one.
		_, line, _ := strings.Cut(strings.ReplaceAll(text, "\n# ", " "), "range r1: ")
		line, _, _ = strings.Cut(line, "\n")
		for _, w := range append(want, "NCCL's own algorithm and protocol under the job's environment (NCCL_NET_GDR_LEVEL=SYS)") {
			if !strings.Contains(line, w) {
				t.Errorf("NCCL_PROTO %s: %s: range r1 reads %q; want %q\n%s", proto, f[0], line, w, text)
			}
		}
	}
}
