package space

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

const warmSpace = `
[benchmark]
binary = "all_reduce_perf"
[fixed]
NCCL_NVLS_ENABLE = 0
[[param]]
name = "NCCL_ALGO"
values = ["default", "Ring", "Tree"]
[[param]]
name = "NCCL_PROTO"
values = ["default", "LL", "Simple"]
[[param]]
name = "NCCL_BUFFSIZE"
values = ["default", "4M", "16M"]
[[param]]
name = "NCCL_MIN_CTAS"
min = 1
max = 16
[[param]]
name = "NCCL_NET_GDR_LEVEL"
values = ["default", "PHB", "SYS"]
[[param]]
name = "NCCL_IB_GID_INDEX"
min = 0
max = 3
[[param]]
name = "NCCL_IB_QPS_PER_CONNECTION"
min = 1
max = 8
[[param]]
name = "NCCL_SOCKET_NTHREADS"
min = 1
max = 16
`

// TestWarmStartFollowsTheFabric: each remedy is tried only where NCCL's log
// shows its problem (all of them when nothing was logged), each idea on top,
// the socket ones only over sockets (the wider pipeline with and without the
// ring there), restricted to what the space offers.
func TestWarmStartFollowsTheFabric(t *testing.T) {
	sp, err := Parse("warm.toml", []byte(warmSpace))
	if err != nil {
		t.Fatal(err)
	}
	// NCCL_MIN_CTAS=32 is outside this space's 1..16, so "more channels" comes
	// out as the remedies alone, and the bandwidth idea without it.
	ideas := []string{"NCCL_ALGO=Ring NCCL_BUFFSIZE=16777216", "NCCL_ALGO=Ring", "NCCL_ALGO=Tree NCCL_PROTO=LL"}
	socketIdeas := []string{"NCCL_SOCKET_NTHREADS=4", "NCCL_ALGO=Ring NCCL_BUFFSIZE=16777216 NCCL_SOCKET_NTHREADS=4",
		"NCCL_SOCKET_NTHREADS=2", "NCCL_ALGO=Ring NCCL_BUFFSIZE=16777216 NCCL_SOCKET_NTHREADS=2",
		"NCCL_BUFFSIZE=16777216 NCCL_SOCKET_NTHREADS=4", "NCCL_BUFFSIZE=16777216 NCCL_SOCKET_NTHREADS=2"}
	for _, tc := range []struct {
		name    string
		fabric  Fabric
		remedy  string // the settings every configuration carries
		sockets bool   // the socket ideas apply
	}{
		{"one node", Fabric{Known: true}, "", false},
		{"InfiniBand with GDR", Fabric{Known: true, Network: "IB", GDR: true}, "", false},
		{"InfiniBand without GDR", Fabric{Known: true, Network: "IB"}, "NCCL_NET_GDR_LEVEL=SYS", false},
		{"RoCE", Fabric{Known: true, Network: "IB", RoCE: true, GDR: true}, "NCCL_IB_GID_INDEX=3 NCCL_IB_QPS_PER_CONNECTION=4", false},
		{"sockets", Fabric{Known: true, Network: "Socket"}, "", true},
		{"nothing logged", Fabric{}, "NCCL_IB_GID_INDEX=3 NCCL_IB_QPS_PER_CONNECTION=4 NCCL_NET_GDR_LEVEL=SYS", true},
	} {
		var got []string
		for _, a := range sp.WarmStart(tc.fabric) {
			if err := sp.Check(a); err != nil {
				t.Errorf("%s: %v is not a legal configuration: %v", tc.name, a, err)
			}
			got = append(got, strings.Join(slices.DeleteFunc(sp.Env(a), func(kv string) bool { return kv == "NCCL_NVLS_ENABLE=0" }), " "))
		}
		var want []string
		if tc.remedy != "" {
			want = append(want, tc.remedy)
		}
		all := ideas
		if tc.sockets {
			all = append(slices.Clone(ideas), socketIdeas...)
		}
		for _, idea := range all {
			want = append(want, strings.Join(slices.Sorted(slices.Values(strings.Fields(tc.remedy+" "+idea))), " "))
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, want)
		}
	}
}

// TestWarmStartRespectsTheSpace: a categorical parameter without "default"
// that no idea sets drops the configuration; a constraint drops it too.
func TestWarmStartRespectsTheSpace(t *testing.T) {
	src := strings.Replace(warmSpace, `values = ["default", "LL", "Simple"]`, `values = ["LL", "Simple"]`, 1)
	sp, err := Parse("warm.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range sp.WarmStart(Fabric{Known: true}) {
		if a["NCCL_PROTO"] != "LL" {
			t.Errorf("%v leaves NCCL_PROTO, which has no default here, unset", a)
		}
	}
	sp, err = Parse("warm.toml", []byte(strings.Replace(warmSpace, "NCCL_NVLS_ENABLE = 0", "NCCL_NVLS_ENABLE = 0\nNCCL_NSOCKS_PERTHREAD = 32", 1)))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range sp.WarmStart(Fabric{Known: true, Network: "Socket"}) {
		if a["NCCL_SOCKET_NTHREADS"] == "4" {
			t.Errorf("%v: 4 threads x 32 sockets exceeds NCCL's 64", a)
		}
	}
}

// TestTryFirst: the user's known-good configurations are read with NCCL's
// defaults filled in, and each mistake is reported at its line.
func TestTryFirst(t *testing.T) {
	sp, err := Parse("warm.toml", []byte(warmSpace+`
[[try_first]]
NCCL_ALGO = "Ring"
NCCL_BUFFSIZE = "16M"
NCCL_IB_QPS_PER_CONNECTION = 2
`))
	if err != nil {
		t.Fatal(err)
	}
	want := Assignment{"NCCL_ALGO": "Ring", "NCCL_PROTO": Unset, "NCCL_BUFFSIZE": "16777216", "NCCL_NET_GDR_LEVEL": Unset, "NCCL_IB_QPS_PER_CONNECTION": "2"}
	if len(sp.TryFirst) != 1 || !maps.Equal(sp.TryFirst[0], want) {
		t.Errorf("try_first = %v, want %v", sp.TryFirst, want)
	}
	lines := strings.Count(warmSpace, "\n") + 1
	for _, tc := range []struct {
		name, table, want string
	}{
		{"not searched", "NCCL_CROSS_NIC = 1", fmt.Sprintf("warm.toml:%d: try_first: NCCL_CROSS_NIC is not searched", lines+2)},
		{"misspelt", "NCCL_ALGOS = \"Ring\"", "try_first: NCCL_ALGOS is not searched"},
		{"not offered", "NCCL_BUFFSIZE = \"2M\"", fmt.Sprintf("warm.toml:%d: try_first: NCCL_BUFFSIZE = 2097152 is not among the values", lines+2)},
		{"illegal", "NCCL_PROTO = \"LL9\"", `try_first NCCL_PROTO: "LL9" is not one of`},
		{"out of range", "NCCL_IB_QPS_PER_CONNECTION = 9", "NCCL_IB_QPS_PER_CONNECTION = 9 is not among the values"},
	} {
		_, err := Parse("warm.toml", []byte(warmSpace+"\n[[try_first]]\n"+tc.table+"\n"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	// A set NCCL reads in any order is the value the space lists, as listed.
	sets := strings.Replace(warmSpace, `values = ["default", "LL", "Simple"]`, `values = ["default", "LL,Simple", "Simple"]`, 1)
	if sp, err := Parse("warm.toml", []byte(sets+"\n[[try_first]]\nNCCL_PROTO = \"simple,LL,LL\"\n")); err != nil || sp.TryFirst[0]["NCCL_PROTO"] != "LL,Simple" {
		t.Errorf("a listed set in another order: %v", err)
	}
	// A setting whose condition does not hold there is an error.
	cond := warmSpace + "[[param]]\nname = \"NCCL_NTHREADS\"\nvalues = [\"default\", \"256\"]\nwhen = { NCCL_PROTO = [\"Simple\"] }\n"
	if _, err := Parse("warm.toml", []byte(cond+"[[try_first]]\nNCCL_NTHREADS = 256\n")); err == nil || !strings.Contains(err.Error(), "NCCL_NTHREADS is inactive there") {
		t.Errorf("inactive: %v", err)
	}
	if sp, err := Parse("warm.toml", []byte(cond+"[[try_first]]\nNCCL_PROTO = \"Simple\"\nNCCL_NTHREADS = 256\n")); err != nil || sp.TryFirst[0]["NCCL_NTHREADS"] != "256" {
		t.Errorf("active: %v", err)
	}
	// A parameter without "default" needs a value; a constraint still holds.
	src := strings.Replace(warmSpace, `values = ["default", "LL", "Simple"]`, `values = ["LL", "Simple"]`, 1) +
		"[[try_first]]\nNCCL_ALGO = \"Tree\"\n"
	if _, err := Parse("warm.toml", []byte(src)); err == nil || !strings.Contains(err.Error(), `NCCL_PROTO has no "default" in this space`) {
		t.Errorf("missing value: %v", err)
	}
	src = strings.Replace(warmSpace, "NCCL_NVLS_ENABLE = 0", "NCCL_NVLS_ENABLE = 0\nNCCL_NSOCKS_PERTHREAD = 32", 1) +
		"[[try_first]]\nNCCL_SOCKET_NTHREADS = 4\n"
	if _, err := Parse("warm.toml", []byte(src)); err == nil || !strings.Contains(err.Error(), "exceeds") {
		t.Errorf("constraint: %v", err)
	}
}
