package export

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nccltune/nccltune/results"
	"github.com/nccltune/nccltune/runner"
	"github.com/nccltune/nccltune/runner/nccllog"
	"github.com/nccltune/nccltune/space"
	"github.com/nccltune/nccltune/store"
)

const pinnedSpace = `
[campaign]
name = "pinned"
trials = 14
seed = 2
sizes = { min = "8", max = "256M", factor = 4 }
[[range]]
name = "small"
min = "8"
max = "64K"
[[range]]
name = "mid"
min = "64K"
max = "4M"
[[range]]
name = "large"
min = "4M"
max = "1G"
[benchmark]
gpus = 16
[simulator]
nodes = 2
fabric = "ib"
gpu_nic = "PHB"     # GDR off by default, so every trial that enables it beats the defaults
[fixed]
NCCL_NVLS_ENABLE = 0
NCCL_SOCKET_IFNAME = "=eth0,eth1"
[[param]]
name = "NCCL_ALGO"
values = ["Ring", "Tree"]
[[param]]
name = "NCCL_PROTO"
values = ["LL", "LL128", "Simple"]
[[param]]
name = "NCCL_NET_GDR_LEVEL"
values = ["PHB", "SYS"]
`

// pinned is an export of pinnedSpace's three ranges, each tuned to its own
// configuration, as measured on two simulated nodes of eight GPUs.
func pinned(t *testing.T) Export {
	t.Helper()
	sp, err := space.Parse("pinned.toml", []byte(pinnedSpace))
	if err != nil {
		t.Fatal(err)
	}
	trial := func(n int, scores map[string]float64, a space.Assignment) store.Trial {
		return store.Trial{Number: n, State: store.Complete, Params: a, Env: sp.Env(a), Scores: scores,
			NCCLLog: nccllog.Log{Debug: true, Channels: 16, Nodes: 2, Network: "IB"}}
	}
	trials := []store.Trial{
		trial(0, map[string]float64{"small": 1, "mid": 1, "large": 1}, space.Assignment{"NCCL_ALGO": "Ring", "NCCL_PROTO": "Simple", "NCCL_NET_GDR_LEVEL": "PHB"}),
		trial(2, map[string]float64{"small": 2, "mid": 1, "large": 1}, space.Assignment{"NCCL_ALGO": "Tree", "NCCL_PROTO": "LL", "NCCL_NET_GDR_LEVEL": "SYS"}),
		trial(3, map[string]float64{"small": 1, "mid": 2, "large": 2}, space.Assignment{"NCCL_ALGO": "Ring", "NCCL_PROTO": "LL128", "NCCL_NET_GDR_LEVEL": "SYS"}),
	}
	camp := store.Campaign{Name: "pinned", SpaceHash: sp.Hash()}
	fp := runner.Fingerprint{NCCL: "2.28.3", Nodes: 2, GPUsPerNode: 8, Ranks: 16, Network: "IB", GDR: true}
	// Without trial 0 among them, each range's best trial is its choice.
	return Export{Space: sp, Campaign: camp, Results: results.Of(sp, trials[1:], nil), Fingerprint: fp, Now: time.Now()}
}

func TestExportFormats(t *testing.T) {
	ex := pinned(t)
	if f := ex.Fingerprint; f.Nodes != 2 || f.GPUsPerNode != 8 || f.Ranks != 16 || f.Network != "IB" {
		t.Errorf("fingerprint = %+v", f)
	}
	dir := t.TempDir()
	for _, format := range Formats {
		paths, err := ex.Write(format, dir)
		if format == "slurm" {
			// NCCL_SOCKET_IFNAME=...,eth1 cannot pass through srun --export.
			if err == nil || !strings.Contains(err.Error(), "holds a comma") {
				t.Errorf("slurm: %v", err)
			}
			continue
		}
		if err != nil || len(paths) == 0 {
			t.Fatalf("%s: %v, %v", format, paths, err)
		}
		for _, p := range paths {
			data, _ := os.ReadFile(p)
			if format == "json" {
				if !strings.Contains(string(data), `"simulated": true`) || !strings.Contains(string(data), `"nodes": 2`) {
					t.Errorf("%s lacks its provenance:\n%s", p, data)
				}
				continue
			}
			if !strings.Contains(string(data), "MEASURED ON THE SIMULATED CLUSTER") || !strings.Contains(string(data), "2 node(s) x 8") {
				t.Errorf("%s lacks its provenance:\n%s", p, data)
			}
		}
	}
	var js exportJSON
	data, _ := os.ReadFile(filepath.Join(dir, "nccl-tuned.json"))
	if err := json.Unmarshal(data, &js); err != nil || len(js.Ranges) != 3 || js.Ranges[0].Env["NCCL_SOCKET_IFNAME"] != "=eth0,eth1" {
		t.Errorf("json: %v %+v", err, js)
	}
	dotenv, _ := os.ReadFile(filepath.Join(dir, "nccl-large.dotenv"))
	if !strings.Contains(string(dotenv), "\nNCCL_SOCKET_IFNAME==eth0,eth1\n") {
		t.Errorf("dotenv must hold values literally:\n%s", dotenv)
	}
	if fi, err := os.Stat(filepath.Join(dir, "nccl-large.torchrun.sh")); err != nil || fi.Mode()&0o111 == 0 {
		t.Errorf("torchrun wrapper not executable: %v", err)
	}

	conf, _ := os.ReadFile(filepath.Join(dir, "nccl_tuner.conf"))
	var rules [][]string
	for _, line := range strings.Split(string(conf), "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			rules = append(rules, strings.Split(line, ","))
		}
	}
	if len(rules) == 0 || len(rules) > 3 {
		t.Fatalf("tuner rules:\n%s", conf)
	}
	for i, r := range rules {
		if len(r) != 10 || r[0] != "allreduce" || r[5] == "-1" || r[5] == "0" || r[6] != "2" || r[7] != "16" {
			t.Errorf("rule %v", r)
		}
		if i > 0 && r[1] == rules[i-1][1] {
			t.Errorf("rules overlap: %v", rules)
		}
	}
	if rules[0][1] != "8" || rules[len(rules)-1][2] != "1073741823" {
		t.Errorf("rules must cover 8..1G-1 (inclusive bounds): %v", rules)
	}
}

func TestExportRefusesWhatItCannotClaim(t *testing.T) {
	sp, err := space.Load("../examples/sim-2node-ib.toml")
	if err != nil {
		t.Fatal(err)
	}
	ex := Export{Space: sp, Results: results.Of(sp, nil, nil), Now: time.Now()}
	for _, f := range Formats {
		if paths, err := ex.Write(f, t.TempDir()); err == nil || len(paths) != 0 {
			t.Errorf("%s: wrote %v from no trials (%v)", f, paths, err)
		}
	}
	// Only failed trials: still nothing to claim.
	failed := []store.Trial{{Number: 0, State: store.Failed}, {Number: 1, State: store.Failed}}
	ex.Results = results.Of(sp, failed, nil)
	if paths, err := ex.Write("env", t.TempDir()); err == nil || len(paths) != 0 {
		t.Errorf("wrote %v from failed trials", paths)
	}
}
