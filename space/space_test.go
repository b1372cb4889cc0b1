package space

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		bad  bool
	}{
		{"8", 8, false}, {"64K", 65536, false}, {"1M", 1 << 20, false}, {"8G", 8 << 30, false},
		{"4MiB", 4 << 20, false}, {"2kb", 2048, false}, {" 1 T ", 1 << 40, false},
		{"", 0, true}, {"-1", 0, true}, {"1.5M", 0, true}, {"12X", 0, true}, {"99999999999T", 0, true},
		{"8I", 0, true}, {"8IB", 0, true}, {"+8", 0, true}, {"8MM", 0, true}, {"M", 0, true}, {"8 8", 0, true},
		{"8B", 8, false}, {"8mb", 8 << 20, false}, {"8 Gi B", 0, true}, {"99999999999999999999", 0, true},
	} {
		got, err := ParseSize(tc.in)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d (error %v)", tc.in, got, err, tc.want, tc.bad)
		}
	}
	for _, n := range []int64{1, 8, 1000, 1024, 65536, 3 << 20, 8 << 30} {
		back, err := ParseSize(FormatSize(n))
		if err != nil || back != n {
			t.Errorf("FormatSize(%d) = %q does not read back", n, FormatSize(n))
		}
	}
}

func TestLoadValid(t *testing.T) {
	s, err := Load("testdata/valid.toml")
	if err != nil {
		t.Fatal(err)
	}
	if s.Campaign.Trials != 20 || s.Campaign.Seed != 7 || s.Campaign.Sampler != "tpe-gp" {
		t.Errorf("campaign = %+v", s.Campaign)
	}
	if got := s.Sizes.List(); len(got) != 14 || got[0] != 8 || got[13] != 512<<20 {
		t.Errorf("sizes = %v", got)
	}
	if s.Benchmark.GPUs != 8 || s.Benchmark.Timeout != 90*time.Second || !s.Benchmark.Check {
		t.Errorf("benchmark = %+v", s.Benchmark)
	}
	if s.Fixed["NCCL_NVLS_ENABLE"] != "0" {
		t.Errorf("fixed = %v", s.Fixed)
	}
	buf := s.Params[1]
	if buf.Min != 1<<20 || buf.Max != 16<<20 || !buf.Log {
		t.Errorf("NCCL_BUFFSIZE = %+v", buf)
	}
	if got := s.RangeOf("", 65536); got != 1 {
		t.Errorf("RangeOf(64K) = %d, want 1 (max is exclusive)", got)
	}
	nthreads := s.Params[3]
	if !slices.Equal(nthreads.Values, []string{"256", "512"}) {
		t.Errorf("NCCL_NTHREADS values = %v", nthreads.Values)
	}
	if !s.Active(nthreads, Assignment{"NCCL_ALGO": "default"}) || s.Active(nthreads, Assignment{"NCCL_ALGO": "Tree"}) {
		t.Error("condition on NCCL_ALGO not applied")
	}
	if !s.Active(s.Params[2], nil) {
		t.Error("condition on fixed NCCL_NET=IB should hold")
	}
	env := s.Env(Assignment{"NCCL_ALGO": "default", "NCCL_BUFFSIZE": "2097152"})
	want := []string{"NCCL_BUFFSIZE=2097152", "NCCL_NET=IB", "NCCL_NVLS_ENABLE=0"}
	if !slices.Equal(env, want) {
		t.Errorf("Env = %v, want %v", env, want)
	}
}

func TestLoadErrors(t *testing.T) {
	valid, err := os.ReadFile("testdata/valid.toml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		old, new  string
		wantInErr []string
	}{
		{"syntax", `trials = 20`, `trials = = 20`, []string{"bad.toml:4:"}},
		{"misspelt variable", `name = "NCCL_IB_QPS_PER_CONNECTION"`, `name = "NCCL_IB_GID_INDX"`,
			[]string{"bad.toml:38:", "did you mean NCCL_IB_GID_INDEX?"}},
		{"illegal value", `values = ["default", "Ring", "Tree"]`, `values = ["LL9"]`,
			[]string{"bad.toml:29:", `"LL9" is not one of Ring, Tree`}},
		{"illegal proto", `name = "NCCL_ALGO"
values = ["default", "Ring", "Tree"]`, `name = "NCCL_PROTO"
values = ["LL9"]`, []string{`NCCL_PROTO: "LL9" is not one of LL, LL128, Simple`}},
		{"removed variable", `NCCL_NET = "IB"`, "NCCL_NET = \"IB\"\nNCCL_LL_THRESHOLD = 0",
			[]string{"bad.toml:26:", "NCCL_LL_THRESHOLD is no longer read by NCCL (removed in NCCL 2.5"}},
		{"unknown key", `seed = 7`, `sed = 7`, []string{"bad.toml:5:", `unknown key "campaign.sed"; did you mean campaign.seed?`}},
		{"unknown table", `seed = 7`, "seed = 7\n[benchmrk]\nx = 1", []string{`unknown key "benchmrk"; did you mean benchmark?`}},
		{"unknown key of a table's table", `factor = 4 }`, `factor = 4, fator = 2 }`, []string{`unknown key "campaign.sizes.fator"; did you mean campaign.sizes.factor?`}},
		{"unknown key of an array's table", `seed = 7`, "seed = 7\n[[range]]\nnam = \"x\"", []string{`unknown key "range.nam"; did you mean range.name?`}},
		// TOML's keys are case-sensitive; the decoder matched a field in any
		// case, so that two spellings of one table (workload and Workload)
		// each filled it, in the order of a map's iteration.
		// A dotted key where a value is due: the decoder's error has no line.
		{"table for a value", `seed = 7`, `seed.x = 7`, []string{"bad.toml:5: campaign.seed: incompatible types"}},
		{"key in another case", `seed = 7`, `Seed = 7`, []string{"bad.toml:5:", `key "campaign.Seed": keys are case-sensitive; write seed`}},
		{"table in another case", `[fixed]`, "[Launcher]\nkind = \"local\"\n[fixed]", []string{"bad.toml:23:", `key "Launcher": keys are case-sensitive; write launcher`}},
		{"array's key in another case", `max = 8
when`, `MAX = 8
when`, []string{`key "param.MAX": keys are case-sensitive; write max`}},
		{"bad size", `max = "64K"`, `max = "64Q"`, []string{"bad.toml:11:", `invalid size "64Q"`}},
		{"overlap", `min = "64K"`, `min = "32K"`, []string{"overlaps another range"}},
		// It names the export's files, nccl-NAME.torchrun.sh the longest: export failed after the
		// campaign had run ("file name too long").
		{"range name past a file name", `name = "small"`, `name = "` + strings.Repeat("s", 239) + `"`,
			[]string{"bad.toml:9:", "is 239 characters long: it names the export's files (nccl-NAME.torchrun.sh)"}},
		{"condition order", `when = { NCCL_ALGO = ["Ring", "default"] }`, `when = { NCCL_PROTO = "LL" }`,
			[]string{"condition on NCCL_PROTO, which is neither an earlier param nor fixed"}},
		{"timeout", `timeout = "90s"`, `timeout = "soon"`, []string{"bad.toml:21:", "not a positive duration"}},
		{"out of range", `max = 8
when`, `max = 999
when`, []string{"NCCL_IB_QPS_PER_CONNECTION: 999 is outside [1, 128]"}},
		{"several at once", `collective = "all_reduce"`, `collective = "allreduce"
sampler = "annealing"`, []string{`unknown collective "allreduce"`, `unknown sampler "annealing"`}},
		{"launcher", `[fixed]`, "[launcher]\nkind = \"pbs\"\n[fixed]", []string{`launcher "pbs" is not supported`}},
		{"launcher setting of another kind", `[fixed]`, "[launcher]\nkind = \"local\"\nnp = 16\n[fixed]",
			[]string{`bad.toml:25: launcher.np does not apply to launcher "local"`}},
		{"no groups", `[fixed]`, "[launcher]\nkind = \"srun\"\nnodes = 2\ngroups = 0\n[fixed]", []string{"bad.toml:26: launcher.groups must be 1 to 64, not 0"}},
		{"groups without nodes", `[fixed]`, "[launcher]\nkind = \"srun\"\ngroups = 2\n[fixed]", []string{"launcher.groups = 2 needs launcher.nodes"}},
		{"groups without a hostfile", `[fixed]`, "[launcher]\nkind = \"mpirun\"\ngroups = 2\n[fixed]", []string{"launcher.groups = 2 needs launcher.hostfile"}},
		{"groups on one node", `[fixed]`, "[launcher]\ngroups = 2\n[fixed]", []string{"launcher local runs on this node only"}},
		{"groups beyond the budget", `[fixed]`, "[launcher]\nkind = \"srun\"\nnodes = 1\ngroups = 30\n[fixed]",
			[]string{"bad.toml:4: campaign.trials: the trial budget must be at least 31 (trials 0 to 29 measure NCCL's defaults, one on each group), not 20"}},
		{"budget beyond any store", `trials = 20`, `trials = 9223372036854775807`,
			[]string{"bad.toml:4: campaign.trials: the trial budget must be at most 65536, not 9223372036854775807"}},
		{"torchrun on nodes without a rendezvous", `[fixed]`, "[launcher]\nkind = \"torchrun\"\nnodes = 2\n[fixed]",
			[]string{"bad.toml:25: launcher.nodes = 2 needs launcher.rdzv_endpoint"}},
		// Nothing starts the other nodes' torchrun, nor hands their ranks the trial's variables.
		{"torchrun on nodes without their torchrun", `[fixed]`, "[launcher]\nkind = \"torchrun\"\nnodes = 2\nrdzv_endpoint = \"n1:29400\"\n[fixed]",
			[]string{"bad.toml:25: launcher.nodes = 2: torchrun starts this node's workers only"}},
		{"srun's ranks left to the allocation", `[fixed]`, "[launcher]\nkind = \"srun\"\nnodes = 2\n[fixed]",
			[]string{"bad.toml:24: launcher srun needs ntasks_per_node"}},
		{"srun's nodes and ranks left to the allocation", `[fixed]`, "[launcher]\nkind = \"srun\"\n[fixed]",
			[]string{"bad.toml:24: launcher srun needs ntasks_per_node"}},
		{"log scale of listed values", `values = ["default", "Ring", "Tree"]`, "values = [\"default\", \"Ring\", \"Tree\"]\nlog = true",
			[]string{"bad.toml:30: param NCCL_ALGO: log = true applies to a min/max range, not to listed values"}},
		{"mpi flavor", `[fixed]`, "[launcher]\nkind = \"mpirun\"\nflavor = \"lam\"\n[fixed]", []string{`flavor "lam" is not openmpi or mpich`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(string(valid), tc.old) {
				t.Fatalf("fixture lacks %q", tc.old)
			}
			bad := strings.Replace(string(valid), tc.old, tc.new, 1)
			path := filepath.Join(t.TempDir(), "bad.toml")
			if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load(path)
			if err == nil {
				t.Fatal("loaded without error")
			}
			for _, want := range tc.wantInErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q\ndoes not contain %q", err, want)
				}
			}
		})
	}
}

func TestNormalize(t *testing.T) {
	for _, tc := range []struct {
		name, value, want string
		bad               bool
	}{
		{"NCCL_ALGO", "ring,tree", "Ring,Tree", false},
		{"NCCL_ALGO", "^NVLS", "^NVLS", false},
		{"NCCL_ALGO", "AllReduce:tree,ring;allgather:^ring", "allreduce:Tree,Ring;allgather:^Ring", false},
		{"NCCL_ALGO", "allreduse:tree", "", true},
		{"NCCL_ALGO", "Ring;allreduce:Tree", "Ring;allreduce:Tree", false},
		{"NCCL_ALGO", "allreduce:Tree;Ring", "", true}, // NCCL refuses it: only the first part may name no collective
		{"NCCL_PROTO", "LL,LL9", "", true},
		{"NCCL_NET_GDR_LEVEL", "phb", "", true}, // NCCL ignores it
		{"NCCL_NET_GDR_LEVEL", "5", "5", false},
		{"NCCL_NET_GDR_LEVEL", "FAR", "", true},
		{"NCCL_NET_GDR_LEVEL", "+1", "", true}, // NCCL ignores it
		{"NCCL_IB_TIMEOUT", "010", "", true},   // octal 8 to NCCL
		{"NCCL_IB_TIMEOUT", "+07", "7", false},
		{"NCCL_BUFFSIZE", "8M", "8388608", false},
		{"NCCL_BUFFSIZE", "1", "", true},
		{"NCCL_IB_GID_INDEX", "-1", "-1", false},
		{"NCCL_CUMEM_ENABLE", "2", "", true},
		{"NCCL_SOCKET_IFNAME", "eth0\n", "", true},
		// A name with a blank matches no interface or adapter: NCCL
		// compares bytes, and Linux takes no blank in a name ("eth0,
		// eth1" ran on eth0 alone).
		{"NCCL_SOCKET_IFNAME", "eth0, eth1", "", true},
		{"NCCL_SOCKET_IFNAME", "^docker,lo", "^docker,lo", false},
		{"NCCL_IB_HCA", "=mlx5_0:1, mlx5_1:1", "", true},
		{"NCCL_IB_HCA", "=mlx5_0:1,mlx5_1:1", "=mlx5_0:1,mlx5_1:1", false},
		{"NCCL_NTHREADS", "300", "", true},
		// net_socket.cc: no helper threads, or no sockets of theirs, sends
		// on the control socket alone (AWS's default is 2 threads of 8).
		{"NCCL_SOCKET_NTHREADS", "0", "0", false},
		{"NCCL_NSOCKS_PERTHREAD", "0", "0", false},
		{"NCCL_SOCKET_NTHREADS", "-1", "", true},
		// getNthreads (tuning.cc) takes any multiple of the warp in [64, 512].
		{"NCCL_NTHREADS", "96", "96", false},
		{"NCCL_NTHREADS", "480", "480", false},
		{"NCCL_NTHREADS", "32", "", true},
		{"NCCL_NTHREADS", "544", "", true},
	} {
		v, err := Lookup(tc.name)
		if err != nil {
			t.Fatal(err)
		}
		got, err := v.Normalize(tc.value)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("%s=%q: got %q, %v; want %q (error %v)", tc.name, tc.value, got, err, tc.want, tc.bad)
		}
	}
	if _, err := Lookup("NCCL_MIN_NCHANELS"); err == nil || !strings.Contains(err.Error(), "NCCL_MIN_NCHANNELS") {
		t.Errorf("no suggestion for a misspelt name: %v", err)
	}
	if _, err := Lookup("NCCL_WHATEVER_COMPLETELY_ELSE"); err == nil || strings.Contains(err.Error(), "did you mean") {
		t.Errorf("far-off name should have no suggestion: %v", err)
	}
}

// FuzzParse: no input may crash the loader, and what it accepts is consistent.
func FuzzParse(f *testing.F) {
	valid, _ := os.ReadFile("testdata/valid.toml")
	f.Add(string(valid))
	f.Add("[campaign]\ntrials = 3\n[[param]]\nname = \"NCCL_ALGO\"\nvalues = [\"Ring\"]\nwhen = { NCCL_ALGO = [1, 2] }\n")
	f.Add("[[range]]\nname = \"x\"\nmin = \"8\"\nmax = \"8T\"\n[simulator]\nnodes = 2\n")
	f.Add(hostileBase)
	f.Add(strings.Replace(hostileBase, "factor = 4", "factor = 1", 1))
	f.Add(strings.Replace(hostileBase, `when = { NCCL_ALGO = "Ring" }`, `when = { NCCL_ALGO = [] }`, 1))
	f.Add(workloadSpace)
	f.Add("\ufeff" + strings.ReplaceAll(hostileBase, "\n", "\r\n"))
	f.Fuzz(func(t *testing.T, in string) {
		sp, err := Parse("fuzz.toml", []byte(in))
		if (sp == nil) == (err == nil) {
			t.Fatalf("space %v and error %v", sp, err)
		}
		if err != nil {
			// Every problem is told at its file:line, one to a line.
			for _, line := range strings.Split(err.Error(), "\n") {
				if !fileLineRE.MatchString(line) {
					t.Fatalf("an error without its file:line: %q", line)
				}
			}
			return
		}
		if len(sp.Params) == 0 || len(sp.Ranges) == 0 || len(sp.Sizes.List()) == 0 || sp.Campaign.Trials < MinTrials ||
			!(sp.Benchmark.NoiseTarget >= 0 && sp.Benchmark.NoiseTarget < 0.5) {
			t.Fatalf("accepted an unusable space: %+v", sp)
		}
		for _, p := range sp.Params {
			for _, c := range p.When {
				if len(c.In) == 0 {
					t.Fatalf("accepted a condition that never holds: %+v", c)
				}
			}
		}
		for _, p := range sp.Params {
			for _, v := range p.Values {
				if v == Unset {
					continue
				}
				// Written as NCCL is given it: normalized again, the same.
				if w, err := mustLookup(p.Variable()).Normalize(v); err != nil || w != v {
					t.Fatalf("accepted %s=%q: %q, %v", p.Name, v, w, err)
				}
			}
		}
		// What reaches a trial's environment is NAME=value, each one line
		// of what exec passes on; a configuration the space tries is one it offers.
		configs := append([]Assignment{nil}, sp.TryFirst...)
		for _, a := range configs {
			if err := sp.CheckOffered(a); err != nil {
				t.Fatalf("try_first %v: %v", a, err)
			}
			for _, kv := range sp.Env(a) {
				if !envRE.MatchString(kv) || len(kv)+1 > MaxArgStrlen {
					t.Fatalf("environment string %.200q", kv)
				}
			}
		}
		// The file read again is the same space, of the same hash.
		again, err := Parse("fuzz.toml", sp.Source)
		if err != nil || again.Hash() != sp.Hash() {
			t.Fatalf("read again: %v, hash %s for %s", err, again.Hash(), sp.Hash())
		}
	})
}

var (
	fileLineRE = regexp.MustCompile(`^fuzz\.toml:[0-9]+:`)
	envRE      = regexp.MustCompile(`^NCCL_[A-Z0-9_]+=[^\x00-\x1f\x7f]*$`)
)

func mustLookup(name string) Var {
	v, err := Lookup(name)
	if err != nil {
		panic(err)
	}
	return v
}

func TestCheck(t *testing.T) {
	sp, err := Parse("c.toml", []byte("[benchmark]\nbinary = \"x\"\n[fixed]\nNCCL_MAX_CTAS = 8\n[[param]]\nname = \"NCCL_SOCKET_NTHREADS\"\nmin = 1\nmax = 16\n[[param]]\nname = \"NCCL_NSOCKS_PERTHREAD\"\nmin = 1\nmax = 16\n[[param]]\nname = \"NCCL_MIN_CTAS\"\nmin = 1\nmax = 32\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		a   Assignment
		bad bool
	}{
		{Assignment{"NCCL_SOCKET_NTHREADS": "8", "NCCL_NSOCKS_PERTHREAD": "8"}, false},
		{Assignment{"NCCL_SOCKET_NTHREADS": "8", "NCCL_NSOCKS_PERTHREAD": "9"}, true},
		{Assignment{"NCCL_MIN_CTAS": "8"}, false},
		{Assignment{"NCCL_MIN_CTAS": "9"}, true},
	} {
		if err := sp.Check(tc.a); (err != nil) != tc.bad {
			t.Errorf("Check(%v) = %v", tc.a, err)
		}
	}
}

// TestCheckChannelBounds: NCCL 2.28.9 runs NCCL_MIN_NCHANNELS above
// NCCL_MAX_NCHANNELS as written, the first channels duplicated up to the
// minimum ("We permit combining max, then min", connect.cc), which Check
// refused; NCCL_MIN_P2P_NCHANNELS above NCCL_MAX_P2P_NCHANNELS it does not
// (paths.cc takes the minimum over the maximum), which Check ran.
func TestCheckChannelBounds(t *testing.T) {
	sp, err := Parse("c.toml", []byte("[benchmark]\nbinary = \"x\"\n[[param]]\nname = \"NCCL_MIN_NCHANNELS\"\nmin = 1\nmax = 32\n[[param]]\nname = \"NCCL_MAX_NCHANNELS\"\nmin = 1\nmax = 32\n[[param]]\nname = \"NCCL_MIN_P2P_NCHANNELS\"\nmin = 1\nmax = 32\n[[param]]\nname = \"NCCL_MAX_P2P_NCHANNELS\"\nmin = 1\nmax = 32\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		a   Assignment
		bad bool
	}{
		{Assignment{"NCCL_MIN_NCHANNELS": "16", "NCCL_MAX_NCHANNELS": "4"}, false},
		{Assignment{"NCCL_MIN_P2P_NCHANNELS": "4", "NCCL_MAX_P2P_NCHANNELS": "4"}, false},
		{Assignment{"NCCL_MIN_P2P_NCHANNELS": "16", "NCCL_MAX_P2P_NCHANNELS": "4"}, true},
	} {
		if err := sp.Check(tc.a); (err != nil) != tc.bad {
			t.Errorf("Check(%v) = %v", tc.a, err)
		}
	}
}

// TestCheckP2PChunkAgainstBuffer: NCCL 2.28.9 cuts the P2P chunk to an
// eighth of NCCL_BUFFSIZE (4 MiB unless set) where it is larger
// (computeBuffSizes, init.cc): NCCL_P2P_NET_CHUNKSIZE = 1M ran as 512K.
func TestCheckP2PChunkAgainstBuffer(t *testing.T) {
	sp, err := Parse("c.toml", []byte("[benchmark]\nbinary = \"x\"\n[[param]]\nname = \"NCCL_P2P_NET_CHUNKSIZE\"\nvalues = [\"default\", \"512K\", \"1M\"]\n[[param]]\nname = \"NCCL_P2P_NVL_CHUNKSIZE\"\nvalues = [\"default\", \"1M\"]\n[[param]]\nname = \"NCCL_BUFFSIZE\"\nvalues = [\"default\", \"1M\", \"8M\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		a   Assignment
		bad bool
	}{
		{Assignment{"NCCL_P2P_NET_CHUNKSIZE": "524288"}, false},
		{Assignment{"NCCL_P2P_NET_CHUNKSIZE": "1048576"}, true},
		{Assignment{"NCCL_P2P_NET_CHUNKSIZE": "1048576", "NCCL_BUFFSIZE": "8388608"}, false},
		{Assignment{"NCCL_P2P_NVL_CHUNKSIZE": "1048576", "NCCL_BUFFSIZE": "8388608"}, false},
		{Assignment{"NCCL_P2P_NET_CHUNKSIZE": "524288", "NCCL_BUFFSIZE": "1048576"}, true},
	} {
		if err := sp.Check(tc.a); (err != nil) != tc.bad {
			t.Errorf("Check(%v) = %v", tc.a, err)
		}
	}
}

// TestCheckAlgorithmsNCCLImplements: NCCL implements Tree for all-reduce
// alone, broadcast and reduce as Ring alone, and any algorithm but Ring and
// Tree with the Simple protocol alone (generate.py); since 2.24 it fails
// each call a setting leaves none of them ("no algorithm/protocol
// available"; 2.19 to 2.23 ran Ring instead). Every trial of NCCL_ALGO =
// Tree on all_gather failed.
func TestCheckAlgorithmsNCCLImplements(t *testing.T) {
	load := func(coll, extra string) *Space {
		sp, err := Parse("c.toml", []byte("[campaign]\ncollective = \""+coll+"\"\n[benchmark]\nbinary = \"all_reduce_perf\"\n"+extra+"[[param]]\nname = \"NCCL_ALGO\"\nvalues = [\"default\", \"Tree\", \"Ring\"]\n[[param]]\nname = \"NCCL_PROTO\"\nvalues = [\"default\", \"LL\", \"Simple\"]\n"))
		if err != nil {
			t.Fatal(err)
		}
		return sp
	}
	allGather, allReduce := load("all_gather", ""), load("all_reduce", "")
	for _, tc := range []struct {
		sp  *Space
		a   Assignment
		bad bool
	}{
		{allGather, Assignment{"NCCL_ALGO": "Tree"}, true},
		{allGather, Assignment{"NCCL_ALGO": "Ring"}, false},
		{allReduce, Assignment{"NCCL_ALGO": "Tree"}, false},
		{allReduce, Assignment{"NCCL_ALGO": "PAT"}, true},
		{allReduce, Assignment{"NCCL_ALGO": "NVLS", "NCCL_PROTO": "LL"}, true},
		{allReduce, Assignment{"NCCL_ALGO": "NVLS", "NCCL_PROTO": "Simple"}, false},
		{allReduce, Assignment{"NCCL_ALGO": "NVLS,Ring", "NCCL_PROTO": "LL"}, false},
		{allGather, Assignment{"NCCL_ALGO": "allreduce:Tree"}, false},
		{allGather, Assignment{"NCCL_ALGO": "Ring;allgather:Tree"}, true},
		{allReduce, Assignment{"NCCL_PROTO": "LL"}, false},
	} {
		if err := tc.sp.Check(tc.a); (err != nil) != tc.bad {
			t.Errorf("%s: Check(%v) = %v", tc.sp.Campaign.Collective, tc.a, err)
		}
	}
	// DistributedDataParallel broadcasts the model's state as it is built.
	ddp, err := Parse("c.toml", []byte("[benchmark]\nkind = \"ddp\"\n[[param]]\nname = \"NCCL_ALGO\"\nvalues = [\"default\", \"Tree\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := ddp.Check(Assignment{"NCCL_ALGO": "Tree"}); err == nil || !strings.Contains(err.Error(), "broadcast") {
		t.Errorf("NCCL_ALGO = Tree for the DDP step: %v", err)
	}
	if _, err := Parse("c.toml", []byte("[campaign]\ncollective = \"broadcast\"\n[benchmark]\nbinary = \"all_reduce_perf\"\n[fixed]\nNCCL_ALGO = \"Tree\"\n[[param]]\nname = \"NCCL_MIN_CTAS\"\nvalues = [\"1\", \"2\"]\n")); err == nil || !strings.Contains(err.Error(), "broadcast") {
		t.Errorf("NCCL_ALGO = Tree pinned for broadcast_perf: %v", err)
	}
}

// TestKindSettings: a setting the benchmark's kind does not use is refused
// with its line, whichever kind and setting (none is silently ignored), and
// what a kind uses loads.
func TestKindSettings(t *testing.T) {
	kinds := map[string]string{
		Command: "kind = \"command\"\ncommand = [\"train\"]\nmetric = { regex = 'ms: ([0-9.]+)', goal = \"min\" }\n",
		DDP:     "kind = \"ddp\"\n",
	}
	for _, tc := range []struct {
		kind, campaign, extra string
		want                  string
	}{
		{Command, "collective = \"all_gather\"\n", "", "k.toml:3: campaign.collective does not apply to benchmark kind \"command\""},
		{Command, "sizes = { min = \"8\", max = \"1M\" }\n", "", "k.toml:3: campaign.sizes does not apply"},
		{Command, "objective = \"busbw\"\n", "", "k.toml:3: campaign.objective does not apply"},
		{Command, "prune = true\n", "", "k.toml:3: campaign.prune does not apply"},
		{Command, "", "[simulator]\nnodes = \"2\"\n", "[simulator] does not apply"},
		{Command, "", "[[range]]\nname = \"small\"\nmin = \"8\"\nmax = \"1K\"\n", "[[range]] does not apply"},
		{DDP, "collective = \"all_gather\"\n", "", "k.toml:3: campaign.collective does not apply to benchmark kind \"ddp\""},
		{DDP, "sizes = { min = \"8\", max = \"1M\" }\n", "", "k.toml:3: campaign.sizes does not apply"},
		{DDP, "", "[[workload]]\ncollective = \"all_reduce\"\nsize = \"1M\"\ncount = 1\n", "[[workload]] does not apply"},
		{DDP, "prune = true\n", "", ""},
	} {
		src := "[campaign]\ntrials = 5\n" + tc.campaign + "[benchmark]\n" + kinds[tc.kind] + tc.extra +
			"[[param]]\nname = \"NCCL_ALGO\"\nvalues = [\"default\", \"Ring\"]\n"
		_, err := Parse("k.toml", []byte(src))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s %q: %v", tc.kind, tc.campaign, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s %q%q: got %v, want %q", tc.kind, tc.campaign, tc.extra, err, tc.want)
		}
	}
}

// TestAlikeReadsAsNCCLDoes: NCCL reads NCCL_ALGO's and NCCL_PROTO's parts in
// turn (parseList), each replacing what the parts before it set for its
// collective: values that order a collective's parts otherwise are other
// settings, not one listed twice, and a part a later one replaces is none.
func TestAlikeReadsAsNCCLDoes(t *testing.T) {
	v, err := Lookup("NCCL_ALGO")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		a, b  string
		alike bool
	}{
		{"allreduce:Ring;broadcast:Tree", "broadcast:Tree;allreduce:Ring", true},
		{"Ring,Tree;allreduce:Tree", "Tree,Ring;allreduce:Tree", true},
		{"allreduce:Tree;allreduce:Ring", "allreduce:Ring;allreduce:Tree", false},
		{"allreduce:Tree;allreduce:Ring", "allreduce:Ring", true},
		{"allreduce:Tree;broadcast:Ring;allreduce:^Tree", "broadcast:Ring;allreduce:^Tree", true},
	} {
		if got := v.Alike(tc.a, tc.b); got != tc.alike {
			t.Errorf("Alike(%q, %q) = %v, NCCL reads them %s", tc.a, tc.b, got, map[bool]string{true: "alike", false: "differently"}[tc.alike])
		}
	}
}

// TestP2PChannelsAlikeAsNCCLRoundsThem: NCCL 2.28.9 rounds the P2P
// channel count it takes from NCCL_MIN_P2P_NCHANNELS and
// NCCL_MAX_P2P_NCHANNELS up to a power of two (ncclTopoComputeP2pChannels):
// 3 and 4, or 5 and 8, are one setting, whose trials are one configuration's.
func TestP2PChannelsAlikeAsNCCLRoundsThem(t *testing.T) {
	for _, name := range []string{"NCCL_MIN_P2P_NCHANNELS", "NCCL_MAX_P2P_NCHANNELS"} {
		v := mustLookup(name)
		for _, tc := range []struct {
			a, b  string
			alike bool
		}{{"3", "4", true}, {"5", "8", true}, {"8", "9", false}, {"33", "64", true}, {"1", "2", false}} {
			if got := v.Alike(tc.a, tc.b); got != tc.alike {
				t.Errorf("%s: Alike(%s, %s) = %v", name, tc.a, tc.b, got)
			}
		}
	}
	if _, err := Parse("p.toml", []byte("[benchmark]\nbinary = \"x\"\n[[param]]\nname = \"NCCL_MIN_P2P_NCHANNELS\"\nvalues = [\"3\", \"4\"]\n")); err == nil || !strings.Contains(err.Error(), "listed twice") {
		t.Errorf("3 and 4 listed as two values: %v", err)
	}
}

// TestListsAlikeAsNCCLEnablesThem: parseList sets, for each collective a
// part names (each, for one without a prefix), the names enabled: "^LL128"
// enables what "LL,Simple" does, and a part that sets a collective as the
// part before it did changes nothing, so that a failure under one is a
// failure under the other. A collective no part names keeps NCCL's own
// choice (LL128 where NCCL judges it fast), which no list is.
func TestListsAlikeAsNCCLEnablesThem(t *testing.T) {
	for _, tc := range []struct {
		name, a, b string
		alike      bool
	}{
		{"NCCL_PROTO", "^LL128", "LL,Simple", true},
		{"NCCL_PROTO", "^LL128;allreduce:LL128", "Simple,LL;allreduce:LL128", true},
		{"NCCL_PROTO", "LL,LL128,Simple", "^LL", false},
		{"NCCL_PROTO", "allreduce:LL,LL128,Simple", "LL,LL128,Simple", false},
		{"NCCL_ALGO", "Ring;allreduce:Ring", "Ring", true},
		{"NCCL_ALGO", "allreduce:Ring;broadcast:Ring;reduce:Ring;allgather:Ring;reducescatter:Ring", "Ring", true},
		{"NCCL_ALGO", "allreduce:Ring;broadcast:Ring", "Ring", false},
		{"NCCL_ALGO", "^Tree,CollnetDirect,CollnetChain,NVLS,NVLSTree,PAT", "Ring", true},
	} {
		v, _ := Lookup(tc.name)
		if got := v.Alike(tc.a, tc.b); got != tc.alike {
			t.Errorf("%s: Alike(%q, %q) = %v, NCCL reads them %s", tc.name, tc.a, tc.b, got, map[bool]string{true: "alike", false: "differently"}[tc.alike])
		}
	}
}

// TestLevelsAlikeAsNCCLReadsThem: NCCL reads a level's number into a C int
// (strtol's long cut to its low 32 bits) and any above 5 as 5, SYS
// (levelsOldToNew): a stored space's 7 (refused since) is SYS, and so
// 2^32 is LOC, so that a failure under one is a failure under the other.
func TestLevelsAlikeAsNCCLReadsThem(t *testing.T) {
	v, err := Lookup("NCCL_NET_GDR_LEVEL")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		a, b  string
		alike bool
	}{
		{"4", "SYS", true},
		{"5", "SYS", true},
		{"7", "SYS", true},
		{"7", "4", true},
		{"4294967296", "LOC", true},
		{"4294967297", "PIX", true},
		{"4294967297", "0", false},
		{"3", "SYS", false},
	} {
		if got := v.Alike(tc.a, tc.b); got != tc.alike {
			t.Errorf("Alike(%q, %q) = %v, NCCL reads them %s", tc.a, tc.b, got, map[bool]string{true: "alike", false: "differently"}[tc.alike])
		}
	}
}

// TestReadingLeavesOutNCCLDefaults: a variable set to the value NCCL takes
// when it is unset runs as left out, in any spelling NCCL reads as that
// value; one whose default NCCL chooses by the system stays.
func TestReadingLeavesOutNCCLDefaults(t *testing.T) {
	for _, tc := range []struct {
		env, want []string
	}{
		{[]string{"NCCL_NET_GDR_LEVEL=SYS", "NCCL_IB_QPS_PER_CONNECTION=01"}, []string{"NCCL_NET_GDR_LEVEL=SYS"}},
		{[]string{"NCCL_IB_RETRY_CNT=7", "NCCL_CROSS_NIC=2"}, nil},
		{[]string{"NCCL_IB_RETRY_CNT=6", "NCCL_CROSS_NIC=1"}, []string{"NCCL_IB_RETRY_CNT=6", "NCCL_CROSS_NIC=1"}},
		{[]string{"NCCL_SOCKET_NTHREADS=1", "NCCL_IB_GID_INDEX=-1"}, []string{"NCCL_SOCKET_NTHREADS=1", "NCCL_IB_GID_INDEX=-1"}},
	} {
		if got := ReadingEnv(tc.env); !slices.Equal(got, tc.want) {
			t.Errorf("ReadingEnv(%q) = %q, want %q", tc.env, got, tc.want)
		}
	}
	// A parameter takes NCCL's default only where it offers it, and not as one collective's part.
	for _, tc := range []struct {
		p    Param
		want bool
	}{
		{Param{Name: "NCCL_IB_QPS_PER_CONNECTION", Min: 1, Max: 8}, true},
		{Param{Name: "NCCL_IB_QPS_PER_CONNECTION", Min: 2, Max: 8}, false},
		{Param{Name: "NCCL_CROSS_NIC", Values: []string{Unset, "2"}}, true},
		{Param{Name: "NCCL_CROSS_NIC", Values: []string{Unset, "1"}}, false},
		{Param{Name: "NCCL_SOCKET_NTHREADS", Min: 1, Max: 8}, false},
	} {
		if _, got := tc.p.NCCLDefault(); got != tc.want {
			t.Errorf("%+v takes NCCL's default: %v, want %v", tc.p, got, tc.want)
		}
	}
}

// TestReadingLeavesOutDDPDefaults: a DDP knob set to the value DDP (and
// the step script) takes when it is not given runs as left out: a
// configuration that differs from another only so is one configuration,
// to the samplers and to the simplification, which ran such a variant (a
// trial that could tell nothing).
func TestReadingLeavesOutDDPDefaults(t *testing.T) {
	sp, err := Parse("ddp.toml", []byte(`[campaign]
trials = 10
[benchmark]
kind = "ddp"
[[param]]
name = "bucket_cap_mb"
min = 1
max = 100
[[param]]
name = "gradient_as_bucket_view"
values = ["0", "1"]
[[param]]
name = "static_graph"
values = ["0", "1"]
`))
	if err != nil {
		t.Fatal(err)
	}
	defaults := Assignment{"bucket_cap_mb": "25", "gradient_as_bucket_view": "0", "static_graph": "0"}
	if got, want := sp.Reading(defaults), sp.Reading(nil); got != want {
		t.Errorf("DDP's defaults read %q, not as left out (%q)", got, want)
	}
	if got := sp.Reading(Assignment{"bucket_cap_mb": "26", "static_graph": "1"}); got != "--bucket-cap-mb=26 --static-graph=1" {
		t.Errorf("settings other than DDP's defaults read %q", got)
	}
	for _, p := range sp.Params {
		if _, known := p.NCCLDefault(); !known {
			t.Errorf("%s: its default unknown", p.Name)
		}
	}
}

// TestReadingKeepsDefaultsAnotherSourceSets: NCCL_MIN_CTAS overrides the
// minCTAs an application gives its communicators (ncclConfig_t, which
// PyTorch's NCCLConfig and Megatron-LM's --nccl-communicator-config-path
// set; NCCL 2.18 to 2.29), so under a training command NCCL_MIN_CTAS=1 runs
// otherwise than leaving it out; and NCCL 2.18 takes 1 MiB buffers on an
// ARM CPU (Grace), where NCCL_BUFFSIZE=4M is no default. Neither is left out.
func TestReadingKeepsDefaultsAnotherSourceSets(t *testing.T) {
	env := []string{"NCCL_MIN_CTAS=01", "NCCL_BUFFSIZE=4M"}
	want := []string{"NCCL_MIN_CTAS=1", "NCCL_BUFFSIZE=4194304"}
	if got := ReadingEnv(env); !slices.Equal(got, want) {
		t.Errorf("ReadingEnv(%q) = %q, want %q", env, got, want)
	}
	for _, p := range []Param{{Name: "NCCL_MIN_CTAS", Min: 1, Max: 8}, {Name: "NCCL_BUFFSIZE", Values: []string{Unset, "4194304"}}} {
		if d, ok := p.NCCLDefault(); ok {
			t.Errorf("%s takes NCCL's default %s when unset, which another source sets", p.Name, d)
		}
	}
}

// TestREADMESpaceLoads: the README's space file, the one users copy first,
// loads. Its `when` once named NCCL_NET, which it neither searched nor pinned.
func TestREADMESpaceLoads(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "```toml\n[campaign]\n")
	block, _, closed := strings.Cut(block, "\n```")
	if !ok || !closed {
		t.Fatal("the README has no ```toml block of a whole space")
	}
	if _, err := Parse("README.md", []byte("[campaign]\n"+block)); err != nil {
		t.Error(err)
	}
}

// TestKeyReadingIsReading: a configuration's key, as a verdict stores it,
// reads as the configuration does, its options included.
func TestKeyReadingIsReading(t *testing.T) {
	sp, err := Parse("ddp.toml", []byte(`
[benchmark]
kind = "ddp"
[[param]]
name = "bucket_cap_mb"
min = 1
max = 64
[[param]]
name = "NCCL_CROSS_NIC"
values = ["default", "1", "2"]
[[param]]
name = "NCCL_PROTO"
values = ["default", "LL,Simple", "Simple"]
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []Assignment{nil, {"NCCL_CROSS_NIC": "2"}, {"NCCL_CROSS_NIC": "1", "bucket_cap_mb": "25", "NCCL_PROTO": "LL,Simple"}, {"bucket_cap_mb": "4", "NCCL_CROSS_NIC": "2"}} {
		if got, want := KeyReading(sp.Key(a)), sp.Reading(a); got != want {
			t.Errorf("%v: KeyReading(%q) = %q, want %q", a, sp.Key(a), got, want)
		}
	}
}

// TestKeyReadingIsReadingOfEveryAssignment: KeyReading(Key(a)) is
// Reading(a) for assignments drawn at random from spaces of DDP knobs
// (fixed at DDP's default and searched), per-collective parts, values NCCL
// takes unset, and fixed free text holding blanks and '='.
func TestKeyReadingIsReadingOfEveryAssignment(t *testing.T) {
	ddp := `
[benchmark]
kind = "ddp"
[fixed]
gradient_as_bucket_view = 0
[[param]]
name = "bucket_cap_mb"
values = ["default", "1", "25", "64"]
[[param]]
name = "static_graph"
values = ["default", "0", "1"]
[[param]]
name = "NCCL_IB_QPS_PER_CONNECTION"
values = ["default", "1", "4"]
[[param]]
name = "NCCL_PROTO"
values = ["default", "LL,Simple", "Simple"]
`
	workload := `
[benchmark]
binary = "all_reduce_perf"
[[workload]]
collective = "all_reduce"
size = "1M"
count = 10
[[workload]]
collective = "all_gather"
size = "1M"
count = 10
[[param]]
name = "NCCL_ALGO"
values = ["default", "Ring", "ring,Tree"]
[[param]]
name = "NCCL_NET"
values = ["default", "IB", "Socket"]
`
	rng := rand.New(rand.NewPCG(1, 2))
	for _, src := range []string{ddp, workload} {
		sp, err := Parse("k.toml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		for _, free := range []string{"", "AWS Libfabric", "a=b  c", " x", "y "} {
			if free != "" {
				sp.Fixed["NCCL_NET_PLUGIN"] = free
			}
			for range 50 {
				a := Assignment{}
				for _, p := range sp.Params {
					a[p.Name] = p.Values[rng.IntN(len(p.Values))]
				}
				if got, want := KeyReading(sp.Key(a)), sp.Reading(a); got != want {
					t.Errorf("%v, fixed %v: KeyReading(%q) = %q, want %q", a, sp.Fixed, sp.Key(a), got, want)
				}
			}
		}
	}
}

// Two spellings of one array of tables, [[workload]] and [[workloAd]]:
// the decoder filled the field from either, as a map's iteration fell, so
// the same file read as two spaces (found by FuzzParse).
func TestParseCaseVariantTablesRefused(t *testing.T) {
	src := workloadSpace + "\n[[Workload]]\ncollective = \"all_gather\"\nsize = \"1M\"\ncount = 3\n"
	for range 50 {
		if _, err := Parse("w.toml", []byte(src)); err == nil || !strings.Contains(err.Error(), `key "Workload": keys are case-sensitive; write workload`) {
			t.Fatalf("error %v", err)
		}
	}
}
