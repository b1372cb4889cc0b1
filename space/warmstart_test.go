package space

import (
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
// restricted to what the space offers.
func TestWarmStartFollowsTheFabric(t *testing.T) {
	sp, err := Parse("warm.toml", []byte(warmSpace))
	if err != nil {
		t.Fatal(err)
	}
	ideas := []string{"NCCL_ALGO=Ring NCCL_BUFFSIZE=16777216", "NCCL_ALGO=Ring", "NCCL_ALGO=Tree NCCL_PROTO=LL"}
	for _, tc := range []struct {
		name   string
		fabric Fabric
		remedy string // the settings every configuration carries
	}{
		{"one node", Fabric{Known: true}, ""},
		{"InfiniBand with GDR", Fabric{Known: true, Network: "IB", GDR: true}, ""},
		{"InfiniBand without GDR", Fabric{Known: true, Network: "IB"}, "NCCL_NET_GDR_LEVEL=SYS"},
		{"RoCE", Fabric{Known: true, Network: "IB", RoCE: true, GDR: true}, "NCCL_IB_GID_INDEX=3 NCCL_IB_QPS_PER_CONNECTION=4"},
		{"sockets", Fabric{Known: true, Network: "Socket"}, "NCCL_SOCKET_NTHREADS=4"},
		{"nothing logged", Fabric{}, "NCCL_IB_GID_INDEX=3 NCCL_IB_QPS_PER_CONNECTION=4 NCCL_NET_GDR_LEVEL=SYS NCCL_SOCKET_NTHREADS=4"},
	} {
		var got []string
		for _, a := range sp.WarmStart(tc.fabric) {
			if err := sp.Check(a); err != nil {
				t.Errorf("%s: %v is not a legal configuration: %v", tc.name, a, err)
			}
			got = append(got, strings.Join(slices.DeleteFunc(sp.Env(a), func(kv string) bool { return kv == "NCCL_NVLS_ENABLE=0" }), " "))
		}
		// NCCL_MIN_CTAS=32 is outside this space's 1..16, so "more channels"
		// comes out as the remedies alone, and the bandwidth idea without it.
		var want []string
		if tc.remedy != "" {
			want = append(want, tc.remedy)
		}
		for _, idea := range ideas {
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
