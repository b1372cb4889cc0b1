package export

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

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
	dir := t.TempDir()
	if _, err := ex.Write("tuner-csv", dir); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(dir, "nccl_tuner.conf"))
	if err != nil {
		t.Fatal(err)
	}
	return rulesOf(string(data), ","), nil
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
