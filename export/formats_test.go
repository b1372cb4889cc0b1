package export

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nccltune/nccltune/plugin"
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

// pinned is an export of pinnedSpace's three ranges: trial 2 is best on small
// messages, trial 3 on the others, both with GPUDirect RDMA at every distance,
// as measured on two simulated nodes of eight GPUs; validation recorded what
// NCCL decided per size under each.
func pinned(t *testing.T) Export { return pinnedOf(t, pinnedSpace) }

// pinnedOf is pinned's export of another space of its ranges and params.
func pinnedOf(t *testing.T, text string) Export {
	t.Helper()
	sp, err := space.Parse("pinned.toml", []byte(text))
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
	decide := func(algo, proto string, channels int) (ds []nccllog.Decision) {
		for _, size := range sp.Sizes.List() {
			ds = append(ds, nccllog.Decision{Op: "AllReduce", Bytes: size, Algo: algo, Proto: proto, Channels: channels})
		}
		return ds
	}
	decisions := map[string][]nccllog.Decision{
		sp.Key(trials[1].Params): decide("TREE", "LL", 8),
		sp.Key(trials[2].Params): decide("RING", "LL128", 16),
	}
	camp := store.Campaign{Name: "pinned", SpaceHash: sp.Hash()}
	fp := runner.Fingerprint{NCCL: "2.28.3", Nodes: 2, GPUsPerNode: 8, Ranks: 16, Network: "IB", GDR: true}
	// Without trial 0 among them, each range's best trial is its choice.
	return Export{Space: sp, Campaign: camp, Results: results.Of(sp, trials[1:], nil), Job: results.JobOf(sp, trials, nil),
		Decisions: decisions, Fingerprint: fp, Plugin: "/opt/nccltune/" + plugin.LibraryName, Now: time.Now()}
}

func TestExportFormats(t *testing.T) {
	ex := pinned(t)
	dir := t.TempDir()
	for _, format := range Formats {
		paths, err := ex.Write(format, dir)
		if format == "job" {
			if err == nil || !strings.Contains(err.Error(), "no [[workload]]") {
				t.Errorf("job without a workload: %v %v", paths, err)
			}
			continue
		}
		if format == "slurm" {
			// NCCL_SOCKET_IFNAME=...,eth1 cannot pass through srun --export.
			if err == nil || !strings.Contains(err.Error(), "which srun --export splits") {
				t.Errorf("slurm: %v", err)
			}
			continue
		}
		if format == "dotenv" {
			// NCCL_SOCKET_IFNAME==eth0,... sourced in zsh is a command's path.
			if err == nil || !strings.Contains(err.Error(), "zsh sourcing the file") {
				t.Errorf("dotenv: %v", err)
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
	if fi, err := os.Stat(filepath.Join(dir, "nccl-large.torchrun.sh")); err != nil || fi.Mode()&0o111 == 0 {
		t.Errorf("torchrun wrapper not executable: %v", err)
	}

	// NVIDIA's example plugin: every rule explicit, from NCCL's decisions, every size covered;
	// then, for other communicators, NCCL's choice as measured (no decisions under the job's
	// environment were recorded: the rules above) with NCCL's own channel count, and fallbacks.
	conf, _ := os.ReadFile(filepath.Join(dir, "nccl_tuner.conf"))
	if got, want := rulesOf(string(conf), ","), [][]string{
		{"allreduce", "0", "65535", "tree", "ll", "8", "2", "16", "-1", "-1"},
		{"allreduce", "65536", "9223372036854775807", "ring", "ll128", "16", "2", "16", "-1", "-1"},
		{"allreduce", "0", "65535", "tree", "ll", "0", "-1", "-1", "-1", "-1"},
		{"allreduce", "65536", "9223372036854775807", "ring", "ll128", "0", "-1", "-1", "-1", "-1"},
		{"allreduce", "0", "65535", "ring", "ll", "0", "-1", "-1", "-1", "-1"},
		{"allreduce", "0", "9223372036854775807", "ring", "simple", "0", "-1", "-1", "-1", "-1"},
	}; !reflect.DeepEqual(got, want) {
		t.Errorf("tuner-csv rules %q\nwant %q\n%s", got, want, conf)
	}
	// nccltune's own: the algorithm and protocol each range's choice set, NCCL's own channels.
	own, _ := os.ReadFile(filepath.Join(dir, "nccltune.rules"))
	if got, want := rulesOf(string(own), " "), [][]string{{"nccltune-rules", "1"},
		{"allreduce", "8", "65535", "2", "16", "tree", "ll", "0"},
		{"allreduce", "65536", "1073741823", "2", "16", "ring", "ll128", "0"},
	}; !reflect.DeepEqual(got, want) {
		t.Errorf("plugin rules %q\nwant %q\n%s", got, want, own)
	}
	// The one environment of the job: what the rules cannot set, and the plugin itself.
	for name, want := range map[string]string{"nccl-plugin.env": "NCCL_TUNER_PLUGIN='/opt/nccltune/libnccl-tuner-nccltune.so'", "nccl-tuner.env": "NCCL_TUNER_CONFIG_FILE="} {
		env, _ := os.ReadFile(filepath.Join(dir, name))
		if !strings.Contains(string(env), "export NCCL_NET_GDR_LEVEL='SYS'\n") || !strings.Contains(string(env), want) || strings.Contains(string(env), "export NCCL_ALGO") {
			t.Errorf("%s:\n%s", name, env)
		}
	}
}

// rulesOf is the rules of a plugin's file, each split into its fields.
func rulesOf(text, sep string) [][]string {
	var out [][]string
	for _, line := range strings.Split(text, "\n") {
		line, _, _ = strings.Cut(line, "#")
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		if sep == " " {
			out = append(out, strings.Fields(line))
		} else {
			out = append(out, strings.Split(line, sep))
		}
	}
	return out
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

// TestExportScales writes the tuner plugins' rules of a campaign of
// campaign.scales: one rules file, each scale's rules naming its node and
// rank count, and an environment per scale.
func TestExportScales(t *testing.T) {
	two, four := pinned(t), pinned(t)
	two.Campaign.Name, two.Campaign.Scale = "pinned@2n", 2
	four.Campaign.Name, four.Campaign.Scale = "pinned@4n", 4
	four.Fingerprint.Nodes, four.Fingerprint.Ranks = 4, 32
	four.Scales = []Export{two}
	dir := t.TempDir()
	paths, err := four.Write("plugin", dir)
	if err != nil || len(paths) != 3 {
		t.Fatalf("%v, %v", paths, err)
	}
	own, _ := os.ReadFile(filepath.Join(dir, "nccltune.rules"))
	if got, want := rulesOf(string(own), " "), [][]string{{"nccltune-rules", "1"},
		{"allreduce", "8", "65535", "2", "16", "tree", "ll", "0"},
		{"allreduce", "65536", "1073741823", "2", "16", "ring", "ll128", "0"},
		{"allreduce", "8", "65535", "4", "32", "tree", "ll", "0"},
		{"allreduce", "65536", "1073741823", "4", "32", "ring", "ll128", "0"},
	}; !reflect.DeepEqual(got, want) {
		t.Errorf("plugin rules %q\nwant %q\n%s", got, want, own)
	}
	for _, name := range []string{"nccl-plugin-2n.env", "nccl-plugin-4n.env"} {
		if env, err := os.ReadFile(filepath.Join(dir, name)); err != nil || !strings.Contains(string(env), "NCCLTUNE_RULES='"+filepath.Join(dir, "nccltune.rules")+"'") {
			t.Errorf("%s: %v\n%s", name, err, env)
		}
	}
	if _, err := four.Write("tuner-csv", t.TempDir()); err != nil {
		t.Errorf("tuner-csv: %v", err)
	}
	// A scale whose node count NCCL's log did not give would match every job.
	two.Fingerprint.Nodes = 0
	four.Scales = []Export{two}
	if _, err := four.Write("plugin", t.TempDir()); err == nil || !strings.Contains(err.Error(), "no node and rank count") {
		t.Errorf("a scale of unknown nodes: %v", err)
	}
}

// TestExportWithoutDecisions: the example plugin's rules need NCCL's
// decisions, which validation records; the error says whether it ran.
func TestExportWithoutDecisions(t *testing.T) {
	ex := pinned(t)
	ex.Decisions = nil
	if _, err := ex.Write("tuner-csv", t.TempDir()); err == nil || !strings.Contains(err.Error(), "run `nccltune validate`") {
		t.Errorf("not validated: %v", err)
	}
	for i := range ex.Job.Ranges {
		ex.Job.Ranges[i].Validation = &store.Validation{Verdict: "tuned"}
	}
	if _, err := ex.Write("tuner-csv", t.TempDir()); err == nil || !strings.Contains(err.Error(), "NCCL logged none when validation probed it") {
		t.Errorf("validated, no decisions: %v", err)
	}
}

// TestRejectedBestIsNotExportedWithoutADefaultsTrial: where validation
// rejected a range's best and no trial of NCCL's defaults completed in the
// search (the first trial failed, say), the range's files hold NCCL's
// defaults, what the header says, never the rejected configuration.
func TestRejectedBestIsNotExportedWithoutADefaultsTrial(t *testing.T) {
	ex := pinned(t)
	var trials []store.Trial
	for _, r := range ex.Results {
		if r.Best != nil && !slices.ContainsFunc(trials, func(t store.Trial) bool { return t.Number == r.Best.Number }) {
			trials = append(trials, *r.Best)
		}
	}
	large := slices.IndexFunc(ex.Results, func(r results.RangeResult) bool { return r.Range.Name == "large" })
	vals := []store.Validation{{Range: "large", Candidate: 3, Config: ex.Space.Key(ex.Results[large].Best.Params), Rounds: 5, Verdict: "default", Reason: "loses 5%"}}
	ex.Results = results.Of(ex.Space, trials, vals)
	if r := ex.Results[large]; r.Range.Name != "large" || r.Default != nil || r.Validation == nil || r.Tuned() {
		t.Fatalf("fixture: range %s, defaults %v, validation %v", r.Range.Name, r.Default, r.Validation)
	}
	dir := t.TempDir()
	if _, err := ex.Write("env", dir); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "nccl-large.env"))
	if got := exports(string(data)); !slices.Equal(got, []string{"NCCL_NVLS_ENABLE='0'", "NCCL_SOCKET_IFNAME='=eth0,eth1'"}) || !strings.Contains(string(data), "validation kept NCCL's defaults: loses 5%") {
		t.Errorf("a rejected best exported:\n%s", data)
	}
	if _, err := ex.Write("json", dir); err != nil {
		t.Fatal(err)
	}
	var out exportJSON
	data, _ = os.ReadFile(filepath.Join(dir, "nccl-tuned.json"))
	if err := json.Unmarshal(data, &out); err != nil || len(out.Ranges[large].Env) != 2 || out.Ranges[large].Env["NCCL_ALGO"] != "" || out.Ranges[large].Trial != nil {
		t.Errorf("json of a rejected best: %v %v", out.Ranges[large].Env, err)
	}
}

// TestTamperedRangeName: a stored space's range names are the store's word
// (space.ParseStored keeps a space whose checks fail, and a store's scores
// follow its names). One cannot name a file outside --out, whatever the
// format, nor end a rule's comment in the plugin's rules and add a rule.
func TestTamperedRangeName(t *testing.T) {
	names := []string{"../../PWNED", "x/../../../PWNED", "a/b", "/tmp/PWNED", "L\nbroadcast 0 - * * tree ll 1 #", "L\rbroadcast,0,9,tree,ll,1,-1,-1,-1,-1"}
	for _, name := range names {
		for _, format := range slices.DeleteFunc(slices.Clone(Formats), func(f string) bool { return f == "job" }) {
			ex := sweepCampaign(t, [][2]string{{"8", "1G"}}, decide("RING", "SIMPLE", 8), decide("RING", "LL", 8))
			ex.Space.Ranges[0].Name, ex.Results[0].Range.Name, ex.Job.Ranges[0].Range.Name = name, name, name
			parent := t.TempDir()
			dir := filepath.Join(parent, "a", "b", "out")
			paths, err := ex.Write(format, dir)
			filepath.WalkDir(parent, func(p string, d os.DirEntry, _ error) error {
				if !d.IsDir() && filepath.Dir(p) != dir {
					t.Errorf("%s, range %q: wrote %s, outside %s (%v)", format, name, p, dir, err)
				}
				return nil
			})
			for _, p := range paths {
				data, _ := os.ReadFile(p)
				for _, r := range rulesOf(string(data), " ") {
					if strings.HasPrefix(r[0], "broadcast") {
						t.Errorf("%s, range %q: %s holds a rule the store wrote:\n%s", format, name, p, data)
					}
				}
			}
		}
	}
}

// TestWholeSweepIsDescribedAsSwept: a space without ranges has one, the
// whole sweep, whose end is one byte past its largest size: the header said
// "up to (not including) 1073741825".
func TestWholeSweepIsDescribedAsSwept(t *testing.T) {
	sp, err := space.Parse("all.toml", []byte("[campaign]\nsizes = { min = \"8\", max = \"1G\", factor = 2 }\n[simulator]\nnodes = 1\n[[param]]\nname = \"NCCL_ALGO\"\nvalues = [\"default\", \"Ring\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := (Export{Space: sp}).measures(sp.Ranges[0]), `all_reduce messages of 8 to 1G bytes (range "all")`; got != want {
		t.Errorf("header: %q, want %q", got, want)
	}
}

// TestWorkloadRangeIsDescribedByItsCalls: a workload's range is one
// collective's calls, of no bounds of a sweep; its env file's header said
// every range was the first collective's "messages of 0 bytes up to (not
// including) 9223372036854775807".
func TestWorkloadRangeIsDescribedByItsCalls(t *testing.T) {
	sp, err := space.Load("../examples/sim-2node-ib-workload.toml")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"all_gather":     `the workload's all_gather calls of 256K to 64M bytes (range "all_gather")`,
		"all_reduce":     `the workload's all_reduce calls of 8 to 25M bytes (range "all_reduce")`,
		"reduce_scatter": `the workload's reduce_scatter calls of 64M bytes (range "reduce_scatter")`,
	}
	for _, r := range sp.Ranges {
		if got := (Export{Space: sp}).measures(r); got != want[r.Name] {
			t.Errorf("header: %q, want %q", got, want[r.Name])
		}
	}
}

// TestFilesUnsetWhatTheyLeaveToNCCL: every trial ran without the NCCL_*
// variables nccltune inherits, so a searched variable a choice leaves to
// NCCL was unset when measured. The job's shell may hold one (a module's, an
// earlier range's file's: NCCL_PROTO=LL from the small range's file), which
// the files left in place: the job ran what no trial measured. Sourced in
// every shell of sourcingShells, the env file leaves exactly what it sets;
// the torchrun wrapper and the Slurm file too, and compare reads it so.
func TestFilesUnsetWhatTheyLeaveToNCCL(t *testing.T) {
	ex := treeWon(t, "NCCL_NVLS_ENABLE = \"0\"", []string{"NCCL_ALGO", "NCCL_PROTO"}, nil)
	dir := t.TempDir()
	for _, format := range []string{"env", "torchrun", "slurm"} {
		if _, err := ex.Write(format, dir); err != nil {
			t.Fatal(err)
		}
	}
	want := "NCCL_ALGO=allreduce:Tree NCCL_NVLS_ENABLE=0" // for the collective measured (TestRangeFilesSetTheMeasuredCollectiveAlone)
	nccl := func(out []byte) string {
		var vars []string
		for _, kv := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(kv, "NCCL_") {
				vars = append(vars, kv)
			}
		}
		slices.Sort(vars)
		return strings.Join(vars, " ")
	}
	stale := []string{"NCCL_PROTO=LL", "NCCL_ALGO=Ring"}
	envFile := filepath.Join(dir, "nccl-all.env")
	// A fish user's universal variable (set -U) is theirs, in every session:
	// the file leaves it alone (here the only NCCL_PROTO, the environment's
	// erased first, which set -e would have erased instead).
	fishConfig := t.TempDir()
	universal := "set -eg NCCL_PROTO; set -U NCCL_PROTO Simple\n"
	for _, sh := range sourcingShells {
		if _, err := exec.LookPath(sh.argv[0]); err != nil {
			continue
		}
		cmd := exec.Command(sh.argv[0], append(sh.argv[1:], sh.source+"env\n", sh.argv[0], envFile)...)
		if sh.name == "fish" {
			cmd = exec.Command("fish", "-c", universal+sh.source+"env\nset -qU NCCL_PROTO; or echo NCCL_PROTO=erased\n", envFile)
		}
		cmd.Env = append(os.Environ(), append(stale, "XDG_CONFIG_HOME="+fishConfig)...)
		if out, err := cmd.Output(); err != nil || nccl(out) != want {
			t.Errorf("%s sourcing the env file: %q (%v), want %q", sh.name, nccl(out), err, want)
		}
	}
	if env, err := ReadEnvFile(envFile); err != nil || strings.Join(env, " ") != want {
		t.Errorf("ReadEnvFile = %q, %v, want %q", env, err, want)
	}
	// The wrapper runs torchrun, here a stand-in that prints its environment.
	bin := t.TempDir()
	os.WriteFile(filepath.Join(bin, "torchrun"), []byte("#!/bin/sh\nenv\n"), 0o755)
	cmd := exec.Command(filepath.Join(dir, "nccl-all.torchrun.sh"))
	cmd.Env = append(os.Environ(), append(stale, "PATH="+bin+":"+os.Getenv("PATH"))...)
	if out, err := cmd.Output(); err != nil || nccl(out) != want {
		t.Errorf("torchrun wrapper: %q (%v), want %q", nccl(out), err, want)
	}
	// srun --export=ALL,NCCL_ALGO=Tree,... passes on what else the batch script's shell holds.
	cmd = exec.Command("sh", "-c", `. "$1" && env`, "sh", filepath.Join(dir, "nccl-all.slurm"))
	cmd.Env = append(os.Environ(), stale...)
	if out, err := cmd.Output(); err != nil || strings.Contains(nccl(out), "NCCL_PROTO") {
		t.Errorf("Slurm file: %q (%v), want NCCL_PROTO unset", nccl(out), err)
	}
}

// TestPluginFormatsRefuseATunerOfTheSpace: a space that pins a tuner
// plugin, or its configuration file, ran every trial under it. A job loads
// one tuner plugin: the plugin formats, which set their own, refuse to write
// the variable twice, the second replacing the space's, where the export
// writes the space's (--space, trusted); from the store's space it is left
// out, and said so, as every variable that loads code or names a file.
func TestPluginFormatsRefuseATunerOfTheSpace(t *testing.T) {
	for _, tc := range []struct{ pin, refused, written string }{
		{`NCCL_TUNER_PLUGIN = "/opt/other/libnccl-tuner-other.so"`, "plugin tuner-csv", ""},
		// nccltune's plugin reads no NCCL_TUNER_CONFIG_FILE, and its file sets none.
		{`NCCL_TUNER_CONFIG_FILE = "/opt/other/tuner.conf"`, "tuner-csv", "plugin"},
	} {
		ex := pinnedOf(t, strings.Replace(pinnedSpace, "[fixed]\n", "[fixed]\n"+tc.pin+"\n", 1))
		stored := ex
		stored.Space, stored.LeftOut = ex.Space.Exportable()
		stored.Stored = ex.Space
		ex.Trusted = true
		name, _, _ := strings.Cut(tc.pin, " ")
		for _, format := range strings.Fields(tc.refused) {
			paths, err := ex.Write(format, t.TempDir())
			if err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "one tuner plugin") {
				t.Errorf("%s, %s: wrote %v, %v", tc.pin, format, paths, err)
			}
		}
		for _, format := range strings.Fields(tc.written) {
			if paths, err := ex.Write(format, t.TempDir()); err != nil {
				t.Errorf("%s, %s: %v, %v", tc.pin, format, paths, err)
			}
		}
		for _, format := range []string{"plugin", "tuner-csv"} {
			if paths, err := stored.Write(format, t.TempDir()); err != nil {
				t.Errorf("%s, from the store's space, %s: %v, %v", tc.pin, format, paths, err)
			}
		}
	}
}

// TestJSONNamesACollectiveOnlyWhereOneIsSwept: nccl-tuned.json's
// "collective" said all_reduce for a campaign of a training command, whose
// space names no collective, and all_gather, the first, for a workload's
// job of several: only a sweep of one collective's sizes has one.
func TestJSONNamesACollectiveOnlyWhereOneIsSwept(t *testing.T) {
	for file, want := range map[string]string{"sim-2node-ib.toml": "all_reduce", "command-megatron-gpt.toml": "", "sim-2node-ib-workload.toml": ""} {
		sp, err := space.Load("../examples/" + file)
		if err != nil {
			t.Fatal(err)
		}
		a, _, _ := sp.Complete(nil)
		scores := map[string]float64{}
		for _, r := range sp.Ranges {
			scores[r.Name] = 1
		}
		trials := []store.Trial{{Number: 0, State: store.Complete, Params: a, Env: sp.Env(a), Scores: scores}}
		paths, err := Export{Space: sp, Results: results.Of(sp, trials, nil), Now: time.Now()}.Write("json", t.TempDir())
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		data, _ := os.ReadFile(paths[0])
		var got struct {
			Collective *string `json:"collective"`
		}
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatal(err)
		}
		if want == "" && got.Collective != nil || want != "" && (got.Collective == nil || *got.Collective != want) {
			t.Errorf("%s: collective %v, want %q (none where empty)", file, got.Collective, want)
		}
	}
}

// TestFilesSayWhatTheyLeaveOut: exported from the store's space, a file
// holds none of the variables that load code or name files, though every
// trial ran with them (NCCL_TOPO_FILE, which cloud VMs need): said only on
// export's standard error, the file itself claimed the measured gain for
// settings short of them. Each file names them, never their values.
func TestFilesSayWhatTheyLeaveOut(t *testing.T) {
	ex := pinnedOf(t, strings.Replace(pinnedSpace, "[fixed]\n", "[fixed]\nNCCL_TOPO_FILE = \"/opt/topo.xml\"\n", 1))
	ex.Stored = ex.Space
	ex.Space, ex.LeftOut = ex.Space.Exportable()
	dir := t.TempDir()
	for _, format := range []string{"env", "torchrun", "json", "plugin", "tuner-csv"} {
		paths, err := ex.Write(format, dir)
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		for _, p := range paths {
			data, _ := os.ReadFile(p)
			if !strings.Contains(string(data), "NCCL_TOPO_FILE") || strings.Contains(string(data), "/opt/topo.xml") {
				t.Errorf("%s does not say it leaves NCCL_TOPO_FILE out:\n%s", filepath.Base(p), data)
			}
		}
	}
}

// TestJSONNamesWhatARangeLeavesToNCCL: nccl-tuned.json gave each range's
// variables to set, and not the searched ones its choice leaves to NCCL,
// which every trial ran without: a script building a job's environment
// from it on top of a shell holding NCCL_PROTO=LL ran what no trial
// measured, where the env file unsets it. Its "unset" lists them.
func TestJSONNamesWhatARangeLeavesToNCCL(t *testing.T) {
	ex := treeWon(t, "NCCL_NVLS_ENABLE = \"0\"", []string{"NCCL_ALGO", "NCCL_PROTO"}, nil)
	dir := t.TempDir()
	if _, err := ex.Write("json", dir); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "nccl-tuned.json"))
	var out struct {
		Ranges []struct {
			Env   map[string]string
			Unset []string
		}
	}
	if err := json.Unmarshal(data, &out); err != nil || len(out.Ranges) != 1 {
		t.Fatalf("%v\n%s", err, data)
	}
	// A tuner plugin's variables and NCCL_CONF_FILE too, as TestFilesUnsetATunerPluginNoTrialRan and TestFilesUnsetAConfFileNoTrialRead.
	if r := out.Ranges[0]; r.Env["NCCL_ALGO"] != "allreduce:Tree" || !slices.Equal(r.Unset, []string{"NCCL_CONF_FILE", "NCCL_PROTO", "NCCL_TUNER_CONFIG_FILE", "NCCL_TUNER_PLUGIN"}) {
		t.Errorf("env %v, unset %q; want NCCL_PROTO unset", r.Env, r.Unset)
	}
}

// TestEveryFormatFailsForARangeNoTrialMeasured: a range no completed trial
// measured gets no settings, and the export fails naming it, whatever the
// format: json wrote the range with no variables to set and none to unset,
// which reads as NCCL's defaults measured best, and succeeded, where the
// env formats fail. The ranges measured are still written.
func TestEveryFormatFailsForARangeNoTrialMeasured(t *testing.T) {
	ex := pinned(t)
	mid := slices.IndexFunc(ex.Results, func(r results.RangeResult) bool { return r.Range.Name == "mid" })
	ex.Results[mid].Best = nil
	for _, format := range []string{"env", "json"} {
		paths, err := ex.Write(format, t.TempDir())
		if err == nil || !strings.Contains(err.Error(), "range mid: no completed trial measured it") || len(paths) == 0 {
			t.Errorf("%s: wrote %v, %v; want the others written and an error naming range mid", format, paths, err)
		}
	}
}

// TestJSONHoldsAnyTextOfTheStore: a range's summary quotes what the store
// holds, a benchmark's failure among it, as it was; json.Marshal escapes C0
// control characters but writes DEL and the C1 ones (U+0085, U+009B, CSI
// to a terminal) raw, which Write refuses, so nccl-tuned.json was not
// written where every other format was. They are escaped, and read back.
func TestJSONHoldsAnyTextOfTheStore(t *testing.T) {
	sp, err := space.Parse("f.toml", []byte("[benchmark]\nbinary = \"x\"\n[[param]]\nname = \"NCCL_ALGO\"\nvalues = [\"default\", \"Ring\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	const reason = "rank 3: a\u0085b\x7fc\u009b31m\x1bd"
	def, ring := space.Assignment{"NCCL_ALGO": space.Unset}, space.Assignment{"NCCL_ALGO": "Ring"}
	trials := []store.Trial{
		{Number: 0, State: store.Failed, FailureKind: "exit", FailureReason: reason, Params: def, Env: sp.Env(def)},
		{Number: 1, State: store.Complete, Params: ring, Env: sp.Env(ring), Scores: map[string]float64{"all": 1}},
	}
	paths, err := Export{Space: sp, Results: results.Of(sp, trials, nil), Now: time.Now()}.Write("json", t.TempDir())
	if err != nil || len(paths) != 1 {
		t.Fatalf("wrote %v, %v", paths, err)
	}
	data, _ := os.ReadFile(paths[0])
	var got exportJSON
	if err := json.Unmarshal(data, &got); err != nil || len(got.Ranges) != 1 || !strings.Contains(got.Ranges[0].Summary, reason) {
		t.Errorf("%v: summary %q, want it to quote %q", err, got.Ranges[0].Summary, reason)
	}
}

// TestARangeWithNoFileLeavesNoOlderOne: a range that an export writes no
// file for kept the file an earlier export wrote, beside the fresh files of
// the other ranges, for a launch script to source as if it were this
// campaign's. The older file is removed where nccltune wrote it, and kept
// where it is someone else's.
func TestARangeWithNoFileLeavesNoOlderOne(t *testing.T) {
	plain := strings.Replace(pinnedSpace, `NCCL_SOCKET_IFNAME = "=eth0,eth1"`, "", 1) // a value every format takes
	for _, format := range []string{"env", "dotenv", "slurm", "torchrun"} {
		dir := t.TempDir()
		ex := pinnedOf(t, plain)
		if _, err := ex.Write(format, dir); err != nil {
			t.Fatal(err)
		}
		mid := slices.IndexFunc(ex.Results, func(r results.RangeResult) bool { return r.Range.Name == "mid" })
		old, _ := filepath.Glob(filepath.Join(dir, "nccl-mid.*"))
		if len(old) != 1 {
			t.Fatalf("%s: files of range mid %v", format, old)
		}
		ex.Results[mid].Best = nil
		paths, err := ex.Write(format, dir)
		if err == nil || !strings.Contains(err.Error(), "removed "+old[0]) || len(paths) == 0 {
			t.Errorf("%s: wrote %v, %v; want the others written and an error saying %s was removed", format, paths, err, old[0])
		}
		if _, statErr := os.Stat(old[0]); !errors.Is(statErr, os.ErrNotExist) {
			t.Errorf("%s: %s is still there (%v)", format, old[0], statErr)
		}
		// Nor where no range has a file.
		if _, err := pinnedOf(t, plain).Write(format, dir); err != nil { // mid's again
			t.Fatal(err)
		}
		for i := range ex.Results {
			ex.Results[i].Best = nil
		}
		if paths, err := ex.Write(format, dir); len(paths) > 0 || err == nil || !strings.Contains(err.Error(), "removed "+old[0]) {
			t.Errorf("%s, no range measured: wrote %v, %v; want nothing written and %s removed", format, paths, err, old[0])
		}
		// Someone else's file of that name is not ours to remove.
		if err := os.WriteFile(old[0], []byte("export NCCL_ALGO=Ring\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ex.Write(format, dir); err == nil || strings.Contains(err.Error(), "removed") {
			t.Errorf("%s: %v; want the range's error, nothing removed", format, err)
		}
		if _, statErr := os.Stat(old[0]); statErr != nil {
			t.Errorf("%s: a file nccltune did not write was removed: %v", format, statErr)
		}
	}
}

// TestStaleFileIsOnlyARegularFile: where a range with no file has its name
// taken by a link (the user's: a link of nccl-mid.env to the large range's
// file) or by something that is not a regular file (a FIFO, which opening
// to read waits on for ever), it is kept, and export does not wait.
func TestStaleFileIsOnlyARegularFile(t *testing.T) {
	plain := strings.Replace(pinnedSpace, `NCCL_SOCKET_IFNAME = "=eth0,eth1"`, "", 1)
	ex := pinnedOf(t, plain)
	mid := slices.IndexFunc(ex.Results, func(r results.RangeResult) bool { return r.Range.Name == "mid" })
	ex.Results[mid].Best = nil
	for _, place := range []func(path string) error{
		func(path string) error { return os.Symlink("nccl-large.env", path) },
		func(path string) error { return syscall.Mkfifo(path, 0o644) },
	} {
		dir := t.TempDir()
		path := filepath.Join(dir, "nccl-mid.env")
		if err := place(path); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			_, err := ex.Write("env", dir)
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || strings.Contains(err.Error(), "removed") {
				t.Errorf("%v; want the range's error, nothing removed", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("export waits on %s", path)
		}
		if _, err := os.Lstat(path); err != nil {
			t.Errorf("%s was removed: %v", path, err)
		}
	}
}

// TestARangeNoLongerInTheSpaceLeavesNoFile: a campaign run again with
// another space (--allow-space-change, campaign NAME-2), exported into the
// folder of the first's files, left the file of a range the new space no
// longer has, for a launch script to source as this campaign's choice. It
// is removed where nccltune wrote it, with a note and no error; a whole
// job's file and someone else's are kept.
func TestARangeNoLongerInTheSpaceLeavesNoFile(t *testing.T) {
	plain := strings.Replace(pinnedSpace, `NCCL_SOCKET_IFNAME = "=eth0,eth1"`, "", 1) // a value every format takes
	edited := strings.Replace(plain, "[[range]]\nname = \"mid\"\nmin = \"64K\"\nmax = \"4M\"\n", "", 1)
	edited = strings.Replace(edited, "min = \"4M\"", "min = \"64K\"", 1)
	for format, ext := range rangeExt {
		dir := t.TempDir()
		if _, err := pinnedOf(t, plain).Write(format, dir); err != nil {
			t.Fatal(err)
		}
		old := filepath.Join(dir, "nccl-mid"+ext)
		kept := map[string]string{
			filepath.Join(dir, "nccl-job"+ext):   "# " + rangeHeading + "one job of the workload of 2 entries\nexport NCCL_ALGO='Ring'\n",
			filepath.Join(dir, "nccl-other"+ext): "export NCCL_ALGO=Ring\n",
		}
		for path, text := range kept {
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		// An export that writes nothing removes no other campaign's file.
		failed := pinnedOf(t, edited)
		for i := range failed.Results {
			failed.Results[i].Best = nil
		}
		if _, err := failed.Write(format, dir); err == nil {
			t.Fatalf("%s: no range measured, and no error", format)
		}
		if _, err := os.Stat(old); err != nil {
			t.Errorf("%s: an export that wrote nothing removed %s: %v", format, old, err)
		}
		ex := pinnedOf(t, edited)
		var notes []string
		ex.Note = func(s string) { notes = append(notes, s) }
		paths, err := ex.Write(format, dir)
		if err != nil || len(paths) != 2 {
			t.Errorf("%s: wrote %v, %v", format, paths, err)
		}
		if _, statErr := os.Stat(old); !errors.Is(statErr, os.ErrNotExist) {
			t.Errorf("%s: %s, of a range the space has no more, is still there (%v)", format, old, statErr)
		}
		if len(notes) != 1 || !strings.Contains(notes[0], "removed "+old) {
			t.Errorf("%s: notes %q, want one saying %s was removed", format, notes, old)
		}
		for path := range kept {
			if _, statErr := os.Stat(path); statErr != nil {
				t.Errorf("%s: %s was removed: %v", format, path, statErr)
			}
		}
	}
}

// TestFilesUnsetATunerPluginNoTrialRan: every trial ran without a tuner
// plugin where the space sets none (nccltune drops the NCCL_* variables it
// inherits), and a plugin the job's shell loads (an earlier
// `. nccl-plugin.env`, a site's module) replaces per size the algorithm
// and protocol a range's file sets or leaves to NCCL. Every file that
// unsets unsets its variables; where the space pins one the file sets it,
// and where the export leaves it out (the store's space) it is the
// user's, and left alone.
func TestFilesUnsetATunerPluginNoTrialRan(t *testing.T) {
	stale := []string{"NCCL_TUNER_PLUGIN=/opt/x/" + plugin.LibraryName, "NCCL_TUNER_CONFIG_FILE=/opt/x/nccl_tuner.conf"}
	tuner := func(out []byte) (vars []string) {
		for _, kv := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(kv, "NCCL_TUNER_") {
				vars = append(vars, kv)
			}
		}
		slices.Sort(vars)
		return vars
	}
	sourced := func(ex Export, format, name string) []string {
		t.Helper()
		dir := t.TempDir()
		if _, err := ex.Write(format, dir); err != nil {
			t.Fatal(err)
		}
		script := `. "$1" && env`
		switch format {
		case "torchrun": // the wrapper runs torchrun, here a stand-in that prints its environment
			os.WriteFile(filepath.Join(dir, "torchrun"), []byte("#!/bin/sh\nenv\n"), 0o755)
			script = `PATH="$(dirname "$1"):$PATH" "$1"`
		case "plugin": // then a range's file
			if _, err := ex.Write("env", dir); err != nil {
				t.Fatal(err)
			}
			script = `. "$1" && . "$(dirname "$1")/nccl-all.env" && env`
		}
		cmd := exec.Command("sh", "-c", script, "sh", filepath.Join(dir, name))
		cmd.Env = append(os.Environ(), stale...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		return tuner(out)
	}
	ex := treeWon(t, "NCCL_NVLS_ENABLE = \"0\"", []string{"NCCL_ALGO"}, nil)
	for format, name := range map[string]string{"env": "nccl-all.env", "torchrun": "nccl-all.torchrun.sh", "slurm": "nccl-all.slurm", "plugin": "nccl-plugin.env"} {
		if got := sourced(ex, format, name); len(got) > 0 {
			t.Errorf("%s: the job's shell still holds %q", format, got)
		}
	}
	dir := t.TempDir()
	if _, err := ex.Write("json", dir); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "nccl-tuned.json"))
	var out struct{ Ranges []struct{ Unset []string } }
	if err := json.Unmarshal(data, &out); err != nil || len(out.Ranges) != 1 || !slices.Equal(out.Ranges[0].Unset, []string{"NCCL_CONF_FILE", "NCCL_TUNER_CONFIG_FILE", "NCCL_TUNER_PLUGIN"}) {
		t.Errorf("nccl-tuned.json: %v, %s; want both unset", err, data)
	}
	pinned := treeWon(t, "NCCL_TUNER_PLUGIN = \"/opt/y/libnccl-tuner-y.so\"", []string{"NCCL_ALGO"}, nil)
	pinned.Trusted = true
	if got := sourced(pinned, "env", "nccl-all.env"); !slices.Equal(got, []string{"NCCL_TUNER_PLUGIN=/opt/y/libnccl-tuner-y.so"}) {
		t.Errorf("pinned: the job's shell holds %q, want the space's plugin alone", got)
	}
	pinned.Space, pinned.LeftOut = pinned.Space.Exportable()
	pinned.Trusted = false
	if got := sourced(pinned, "env", "nccl-all.env"); !slices.Equal(got, stale[:1]) {
		t.Errorf("left out: the job's shell holds %q, want its own plugin and NCCL_TUNER_CONFIG_FILE unset", got)
	}
}

// TestANodeCountNoLongerScaledLeavesNoFile: the whole-job formats write an
// env file per node count of campaign.scales (nccl-plugin-4n.env), or one
// (nccl-plugin.env) where there is one. A campaign run again with other
// scales, exported into the first's folder, left the env files of the node
// counts it no longer has, each the environment of another campaign's job,
// for a launch script to source. They are removed where nccltune wrote
// them, with a note and no error.
func TestANodeCountNoLongerScaledLeavesNoFile(t *testing.T) {
	scaled := func(two, four Export) (Export, Export) {
		two.Campaign.Name, two.Campaign.Scale = "c@2n", 2
		four.Campaign.Name, four.Campaign.Scale = "c@4n", 4
		four.Fingerprint.Nodes, four.Fingerprint.Ranks = 4, 32
		return two, four
	}
	for format, base := range map[string]string{"plugin": "nccl-plugin", "tuner-csv": "nccl-tuner", "job": "nccl-job"} {
		var two, four Export
		if format == "job" {
			two, four = scaled(jobExport(t, jobSpace, nil, nil), jobExport(t, jobSpace, nil, nil))
		} else {
			two, four = scaled(pinned(t), pinned(t))
		}
		four.Scales = []Export{two}
		dir := t.TempDir()
		if _, err := four.Write(format, dir); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		theirs := filepath.Join(dir, base+"-8n.env")
		if err := os.WriteFile(theirs, []byte("export NCCL_ALGO=Ring\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		four.Scales = nil // one node count now: base.env
		var notes []string
		four.Note = func(s string) { notes = append(notes, s) }
		if paths, err := four.Write(format, dir); err != nil || !slices.Contains(paths, filepath.Join(dir, base+".env")) {
			t.Errorf("%s: wrote %v, %v", format, paths, err)
		}
		for _, n := range []string{"-2n", "-4n"} {
			old := filepath.Join(dir, base+n+".env")
			if _, err := os.Stat(old); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s: %s, of a node count no longer scaled, is still there (%v)", format, old, err)
			}
			if !slices.ContainsFunc(notes, func(s string) bool { return strings.Contains(s, "removed "+old) }) {
				t.Errorf("%s: notes %q, want one saying %s was removed", format, notes, old)
			}
		}
		if _, err := os.Stat(theirs); err != nil {
			t.Errorf("%s: %s, which nccltune did not write, was removed: %v", format, theirs, err)
		}
	}
}

// TestScalesOfOneCommunicator: the plugins keep, for a communicator, the
// rules of its node and rank count, and apply the first that matches. Two
// scales that NCCL's log says ran on the same counts (a launcher that gave
// the larger the smaller's nodes) wrote both into one file, where the
// second's never apply, to the job of its own node count nor any other;
// the export refuses them, naming both.
func TestScalesOfOneCommunicator(t *testing.T) {
	two, four := pinned(t), pinned(t)
	two.Campaign.Name, two.Campaign.Scale = "pinned@2n", 2
	four.Campaign.Name, four.Campaign.Scale = "pinned@4n", 4
	four.Scales = []Export{two} // both on 2 nodes of 16 ranks, as NCCL logged
	for _, format := range []string{"plugin", "tuner-csv"} {
		paths, err := four.Write(format, t.TempDir())
		if err == nil || !strings.Contains(err.Error(), "pinned@2n") || !strings.Contains(err.Error(), "pinned@4n") {
			t.Errorf("%s: wrote %v, %v; want both campaigns named", format, paths, err)
		}
	}
}

// TestFilesUnsetAConfFileNoTrialRead: NCCL reads NCCL_CONF_FILE, or else
// ~/.nccl.conf, into its environment, setting each variable the
// environment leaves unset: the very variables a file leaves to NCCL.
// Every trial ran without NCCL_CONF_FILE where the space sets none
// (nccltune drops the NCCL_* variables it inherits), so one in the job's
// shell (a site's module) would set what no trial ran; every file that
// unsets unsets it, and nccl-tuned.json lists it.
func TestFilesUnsetAConfFileNoTrialRead(t *testing.T) {
	ex := treeWon(t, "NCCL_NVLS_ENABLE = \"0\"", []string{"NCCL_ALGO", "NCCL_PROTO"}, nil)
	dir := t.TempDir()
	for _, format := range []string{"env", "slurm", "json"} {
		if _, err := ex.Write(format, dir); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"nccl-all.env", "nccl-all.slurm"} {
		cmd := exec.Command("sh", "-c", `. "$1" && printf %s "${NCCL_CONF_FILE-unset}"`, "sh", filepath.Join(dir, name))
		cmd.Env = append(os.Environ(), "NCCL_CONF_FILE=/opt/site/nccl.conf")
		if out, err := cmd.Output(); err != nil || string(out) != "unset" {
			t.Errorf("%s: NCCL_CONF_FILE %q (%v), want it unset", name, out, err)
		}
	}
	data, _ := os.ReadFile(filepath.Join(dir, "nccl-tuned.json"))
	var out struct{ Ranges []struct{ Unset []string } }
	if err := json.Unmarshal(data, &out); err != nil || len(out.Ranges) != 1 || !slices.Contains(out.Ranges[0].Unset, "NCCL_CONF_FILE") {
		t.Errorf("nccl-tuned.json: %v, %s; want NCCL_CONF_FILE unset", err, data)
	}
}

// TestOfFormat: the files an export may remove as an earlier one's are
// its format's, by name, never another's.
func TestOfFormat(t *testing.T) {
	for _, tc := range []struct {
		format, name, rangeName string
		ok                      bool
	}{
		{"plugin", "nccl-plugin.env", "", true}, {"plugin", "nccl-plugin-16n.env", "", true},
		{"plugin", "-4n.env", "", false}, {"plugin", "nccl-plugin-x.env", "", false}, {"plugin", "nccl-tuner.env", "", false},
		{"job", "nccl-job-2n.env", "", true}, {"tuner-csv", "nccl-tuner.env", "", true},
		{"env", "nccl-small.env", "small", true}, {"env", "nccl-job.env", "", false}, {"env", "nccl-small.dotenv", "", false},
		{"torchrun", "nccl-a_b.torchrun.sh", "a_b", true}, {"json", "nccl-tuned.json", "", false}, {"json", "nccl-x", "", false},
	} {
		if rangeName, ok := ofFormat(tc.format, tc.name); ok != tc.ok || ok && rangeName != tc.rangeName {
			t.Errorf("ofFormat(%q, %q) = %q, %v", tc.format, tc.name, rangeName, ok)
		}
	}
}

// TestACopyOfAnExportedFileIsKept: a user's copy of an exported file
// (cp nccl-mid.env nccl-mid-old.env, to compare against later) or a hard
// link to it starts as nccltune's files do and is named as a range's, but
// nccltune wrote no file of that name: an export into the folder keeps it.
func TestACopyOfAnExportedFileIsKept(t *testing.T) {
	plain := strings.Replace(pinnedSpace, `NCCL_SOCKET_IFNAME = "=eth0,eth1"`, "", 1) // a value every format takes
	for format, ext := range rangeExt {
		dir := t.TempDir()
		if _, err := pinnedOf(t, plain).Write(format, dir); err != nil {
			t.Fatal(err)
		}
		orig := filepath.Join(dir, "nccl-mid"+ext)
		data, err := os.ReadFile(orig)
		if err != nil {
			t.Fatal(err)
		}
		copied, linked := filepath.Join(dir, "nccl-mid-old"+ext), filepath.Join(dir, "nccl-mid-keep"+ext)
		if err := os.WriteFile(copied, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Link(orig, linked); err != nil {
			t.Fatal(err)
		}
		ex := pinnedOf(t, plain)
		ex.Note = func(s string) { t.Errorf("%s: %s", format, s) }
		if _, err := ex.Write(format, dir); err != nil {
			t.Errorf("%s: %v", format, err)
		}
		for _, path := range []string{copied, linked} {
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s: the user's %s was removed: %v", format, path, err)
			}
		}
	}
}

// TestConcurrentExportsOfOneCampaign: exports of one campaign into one
// folder at once (a script's and the user's) write the same files; none
// removes another's as an earlier export's, which it took a file for once
// the other had replaced it (another inode under its own name), and none
// fails for an earlier export's file that another removed first.
func TestConcurrentExportsOfOneCampaign(t *testing.T) {
	ex := pinnedOf(t, strings.Replace(pinnedSpace, `NCCL_SOCKET_IFNAME = "=eth0,eth1"`, "", 1))
	ex.Note = func(string) {}
	dir := t.TempDir()
	// Files of ranges the space has no more, which each export removes,
	// and some two at once: one that another removed first is gone, as asked.
	paths, err := ex.Write("env", dir)
	if err != nil {
		t.Fatal(err)
	}
	head, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	// Each as nccltune writes it: sealed, as written, for its own name.
	body := string(head[:bytes.LastIndex(head, []byte("\n"+sealPrefix))+1])
	for i := range 300 {
		name := fmt.Sprintf("nccl-gone%d.env", i)
		text := seal(strings.Replace(body, filepath.Base(paths[0]), name, 1))
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	errs := make(chan error, 100)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				if _, err := ex.Write("env", dir); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, r := range ex.Results {
		if _, err := os.Stat(filepath.Join(dir, "nccl-"+r.Range.Name+".env")); err != nil {
			t.Error(err)
		}
	}
}

// TestAnEditedFileIsKept: an earlier export's file that the user edited in
// place (a value changed by hand, a line added) was removed like any other
// once its range got no file, or left the space, or its node count left
// campaign.scales: the edits were lost. It is kept, and the export fails
// naming it, so that no script sources it unnoticed beside this export's
// files; a file as nccltune wrote it is still removed.
func TestAnEditedFileIsKept(t *testing.T) {
	plain := strings.Replace(pinnedSpace, `NCCL_SOCKET_IFNAME = "=eth0,eth1"`, "", 1) // a value every format takes
	edited := strings.Replace(plain, "[[range]]\nname = \"mid\"\nmin = \"64K\"\nmax = \"4M\"\n", "", 1)
	edited = strings.Replace(edited, "min = \"4M\"", "min = \"64K\"", 1)
	for format, ext := range rangeExt {
		for _, tc := range []struct {
			name   string
			export func() Export
		}{
			{"no file for the range", func() Export {
				ex := pinnedOf(t, plain)
				ex.Results[slices.IndexFunc(ex.Results, func(r results.RangeResult) bool { return r.Range.Name == "mid" })].Best = nil
				return ex
			}},
			{"the range left the space", func() Export { return pinnedOf(t, edited) }},
		} {
			dir := t.TempDir()
			if _, err := pinnedOf(t, plain).Write(format, dir); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "nccl-mid"+ext)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			mine := strings.Replace(string(data), "GDR_LEVEL", "GDR_READ", 1) // an edit of the user's
			if err := os.WriteFile(path, []byte(mine), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err = tc.export().Write(format, dir)
			if err == nil || !strings.Contains(err.Error(), "kept "+path+", an earlier export's file edited since") {
				t.Errorf("%s, %s: %v; want an error saying the edited %s is kept", format, tc.name, err, path)
			}
			if got, _ := os.ReadFile(path); string(got) != mine {
				t.Errorf("%s, %s: the edited file is now %q", format, tc.name, got)
			}
			// Edited back as it was, it is nccltune's again.
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			tc.export().Write(format, dir)
			if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s, %s: the file as nccltune wrote it is still there (%v)", format, tc.name, err)
			}
		}
	}
	// So is a whole job's file of a node count campaign.scales no longer
	// has, edited past its last line.
	for format, base := range map[string]string{"plugin": "nccl-plugin", "tuner-csv": "nccl-tuner", "job": "nccl-job"} {
		two, four := pinned(t), pinned(t)
		if format == "job" {
			two, four = jobExport(t, jobSpace, nil, nil), jobExport(t, jobSpace, nil, nil)
		}
		two.Campaign.Name, two.Campaign.Scale = "c@2n", 2
		four.Campaign.Name, four.Campaign.Scale = "c@4n", 4
		four.Fingerprint.Nodes, four.Fingerprint.Ranks = 4, 32
		four.Scales = []Export{two}
		dir := t.TempDir()
		if _, err := four.Write(format, dir); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		path := filepath.Join(dir, base+"-2n.env")
		f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString("export NCCL_MIN_CTAS='4'\n")
		f.Close()
		four.Scales = nil
		if _, err := four.Write(format, dir); err == nil || !strings.Contains(err.Error(), "kept "+path+", an earlier export's file edited since") {
			t.Errorf("%s: %v; want an error saying the edited %s is kept", format, err, path)
		}
		if _, err := os.Stat(path); err != nil {
			t.Errorf("%s: the edited %s was removed: %v", format, path, err)
		}
		if _, err := os.Stat(filepath.Join(dir, base+"-4n.env")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: the unedited %s-4n.env is still there (%v)", format, base, err)
		}
	}
}

// TestRangeFilesSetTheMeasuredCollectiveAlone: nccl-tests measured the
// campaign's collective alone, and NCCL applies a plain NCCL_ALGO or
// NCCL_PROTO to every collective: a range's file of an all_reduce campaign
// that chose Tree left a job's all-gathers and broadcasts (DDP's, as it
// builds the model) no algorithm ("no algorithm/protocol available for
// function Broadcast"). From NCCL 2.24, which reads NCCL's per-collective
// syntax, the searched value is set for the measured collective alone, as
// every shell sources it; on an older NCCL, which reads no prefix (and
// would run no algorithm at all), the value stays plain and the header
// says what it sets.
func TestRangeFilesSetTheMeasuredCollectiveAlone(t *testing.T) {
	for _, tc := range []struct{ nccl, want, head string }{
		{"2.28.3", "allreduce:Tree", "NCCL_ALGO is set for all_reduce alone, the collective measured"},
		{"2.18.3", "Tree", "NCCL_ALGO applies to every collective (NCCL 2.18.3 reads no per-collective value), and only all_reduce was measured"},
	} {
		ex := treeWon(t, "", []string{"NCCL_ALGO"}, nil)
		ex.Fingerprint.NCCL = tc.nccl
		dir := t.TempDir()
		for _, format := range []string{"env", "dotenv", "json", "slurm", "torchrun"} {
			if _, err := ex.Write(format, dir); err != nil {
				t.Fatalf("%s: %v", format, err)
			}
		}
		envFile := filepath.Join(dir, "nccl-all.env")
		for shell, out := range algoSourced(t, envFile, nil) {
			if out != tc.want {
				t.Errorf("NCCL %s: %s sourcing the env file: NCCL_ALGO %q, want %q", tc.nccl, shell, out, tc.want)
			}
		}
		text, _ := os.ReadFile(envFile)
		dotenv, _ := os.ReadFile(filepath.Join(dir, "nccl-all.dotenv"))
		slurm, _ := os.ReadFile(filepath.Join(dir, "nccl-all.slurm"))
		torchrun, _ := os.ReadFile(filepath.Join(dir, "nccl-all.torchrun.sh"))
		tuned, _ := os.ReadFile(filepath.Join(dir, "nccl-tuned.json"))
		if !strings.Contains(strings.Join(strings.Fields(strings.ReplaceAll(string(text), "\n# ", " ")), " "), tc.head) ||
			!strings.Contains(string(dotenv), "\nNCCL_ALGO="+tc.want+"\n") || !strings.Contains(string(slurm), ",NCCL_ALGO="+tc.want+"'") ||
			!strings.Contains(string(torchrun), " NCCL_ALGO='"+tc.want+"' ") || !strings.Contains(string(tuned), `"NCCL_ALGO": "`+tc.want+`"`) {
			t.Errorf("NCCL %s: want NCCL_ALGO %s, and %q in the header:\n%s\n%s\n%s\n%s\n%s", tc.nccl, tc.want, tc.head, text, dotenv, slurm, torchrun, tuned)
		}
	}
}

// TestScopedValueIsWhatNCCLAppliesToTheCollective: a searched value in
// NCCL's per-collective syntax ("Ring;allreduce:Tree": Ring for all, Tree
// for all-reduce, the last part naming a collective holding for it) is
// set for the collective measured as NCCL applies it there, one part: the
// parts joined by ';' made its dotenv file refused.
func TestScopedValueIsWhatNCCLAppliesToTheCollective(t *testing.T) {
	for value, want := range map[string]string{"Ring;allreduce:Tree": "allreduce:Tree", "allreduce:Ring,Tree": "allreduce:Ring,Tree", "^Tree": "allreduce:^Tree"} {
		src := "[campaign]\nname = \"s\"\nsizes = { min = \"8\", max = \"1M\", factor = 2 }\n[benchmark]\nbinary = \"x\"\ngpus = 16\n[[param]]\nname = \"NCCL_ALGO\"\nvalues = [\"default\", \"" + value + "\"]\n"
		sp, err := space.Parse("s.toml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		trials := []store.Trial{
			{Number: 0, State: store.Complete, Params: space.Assignment{"NCCL_ALGO": space.Unset}, Env: sp.Env(space.Assignment{"NCCL_ALGO": space.Unset}), Scores: map[string]float64{"all": 1}},
			{Number: 1, State: store.Complete, Params: space.Assignment{"NCCL_ALGO": value}, Env: sp.Env(space.Assignment{"NCCL_ALGO": value}), Scores: map[string]float64{"all": 2}},
		}
		ex := Export{Space: sp, Campaign: store.Campaign{Name: "s", SpaceHash: sp.Hash()}, Results: results.Of(sp, trials, nil),
			Fingerprint: runner.Fingerprint{NCCL: "2.28.3"}, Now: time.Now()}
		dir := t.TempDir()
		if _, err := ex.Write("dotenv", dir); err != nil {
			t.Errorf("%s: %v", value, err)
			continue
		}
		if text, _ := os.ReadFile(filepath.Join(dir, "nccl-all.dotenv")); !strings.Contains(string(text), "\nNCCL_ALGO="+want+"\n") {
			t.Errorf("%s: want NCCL_ALGO=%s in\n%s", value, want, text)
		}
	}
}

// TestRangeFilesOfACollectiveWithoutAlgorithms: NCCL runs alltoall and
// sendrecv with no algorithm or protocol of NCCL_ALGO and NCCL_PROTO (and
// takes no prefix of theirs), so a searched NCCL_ALGO played no part in
// such a range's score; set plainly in its files, as it was, it set every
// other collective of a job untested (Tree leaves a broadcast none). It is
// left out, the header saying so, as another collective's part is; the
// all_reduce range beside it still sets its own.
func TestRangeFilesOfACollectiveWithoutAlgorithms(t *testing.T) {
	workload := strings.Replace(jobSpace, `collective = "all_gather"`, `collective = "alltoall"`, 1)
	nccltests := "[campaign]\nname = \"job\"\ncollective = \"alltoall\"\nsizes = { min = \"8\", max = \"1M\", factor = 2 }\n[benchmark]\nbinary = \"x\"\ngpus = 16\n[[param]]\nname = \"NCCL_ALGO\"\nvalues = [\"default\", \"Tree\"]\n"
	for _, tc := range []struct {
		src, file string
		own       map[string]string // other ranges' files, and the NCCL_ALGO each sets
	}{
		{workload, "nccl-alltoall", map[string]string{"nccl-all_reduce": "allreduce:Tree"}},
		{nccltests, "nccl-all", nil},
	} {
		sp, err := space.Parse("job.toml", []byte(tc.src))
		if err != nil {
			t.Fatal(err)
		}
		scores := map[string]float64{}
		for _, r := range sp.Ranges {
			scores[r.Name] = 1
		}
		var trials []store.Trial
		for n, a := range []space.Assignment{{"NCCL_ALGO": space.Unset}, {"NCCL_ALGO": "Tree"}} {
			trials = append(trials, store.Trial{Number: n, State: store.Complete, Params: a, Env: sp.Env(a), Scores: maps.Clone(scores)})
			for k := range scores {
				scores[k] = 1.2
			}
		}
		ex := Export{Space: sp, Campaign: store.Campaign{Name: "job", SpaceHash: sp.Hash()}, Results: results.Of(sp, trials, nil),
			Job: results.JobOf(sp, trials, nil), Fingerprint: runner.Fingerprint{NCCL: "2.28.3"}, Now: time.Now()}
		dir := t.TempDir()
		for _, format := range []string{"env", "dotenv", "json", "slurm", "torchrun"} {
			if _, err := ex.Write(format, dir); err != nil {
				t.Fatalf("%s: %v", format, err)
			}
		}
		for _, ext := range []string{".env", ".dotenv", ".slurm", ".torchrun.sh"} {
			text, _ := os.ReadFile(filepath.Join(dir, tc.file+ext))
			if strings.Contains(string(text), "NCCL_ALGO=") || strings.Contains(string(text), "NCCL_ALGO='") ||
				!strings.Contains(strings.Join(strings.Fields(strings.ReplaceAll(string(text), "\n# ", " ")), " "), "left out of trial 1's settings: NCCL_ALGO") {
				t.Errorf("%s%s sets NCCL_ALGO, or does not say it is left out:\n%s", tc.file, ext, text)
			}
		}
		for name, want := range tc.own {
			if text, _ := os.ReadFile(filepath.Join(dir, name+".env")); !slices.Contains(exports(string(text)), "NCCL_ALGO='"+want+"'") {
				t.Errorf("%s.env: want NCCL_ALGO='%s':\n%s", name, want, text)
			}
		}
		var out struct {
			Ranges []rangeJSON `json:"ranges"`
		}
		data, _ := os.ReadFile(filepath.Join(dir, "nccl-tuned.json"))
		if err := json.Unmarshal(data, &out); err != nil {
			t.Fatalf("%v\n%s", err, data)
		}
		for _, r := range out.Ranges {
			if v := r.Env["NCCL_ALGO"]; v != tc.own["nccl-"+r.Name] {
				t.Errorf("nccl-tuned.json: range %s sets NCCL_ALGO=%q, want %q", r.Name, v, tc.own["nccl-"+r.Name])
			}
		}
	}
}
