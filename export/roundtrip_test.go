package export

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nccltune/nccltune/plugin"
)

// pluginReads builds nccltune's plugin and the harness that drives it as
// NCCL does (plugin/test/harness.c), loads the rules file rules for a
// communicator of nodes and ranks, and asks it about an all-reduce of each
// of sizes. It returns the rules the plugin logged it kept, as it writes
// them, and per size the pair it lowered to cost 0 ("-" for none).
func pluginReads(t *testing.T, rules string, nodes, ranks int, coll int, sizes ...uint64) (kept, chosen []string) {
	t.Helper()
	cc := cmp.Or(strings.TrimSpace(os.Getenv("CC")), "cc")
	if _, err := exec.LookPath(strings.Fields(cc)[0]); err != nil {
		t.Skipf("no C compiler: %v", err)
	}
	dir := t.TempDir()
	lib, err := plugin.Build(filepath.Join(dir, "lib"), cc)
	if err != nil {
		t.Fatal(err)
	}
	harness := filepath.Join(dir, "harness")
	args := append(strings.Fields(cc)[1:], "-std=c11", "-pthread", "-o", harness, filepath.Join("..", "plugin", "test", "harness.c"), "-ldl")
	if out, err := exec.Command(strings.Fields(cc)[0], args...).CombinedOutput(); err != nil {
		t.Fatalf("building the harness: %v\n%s", err, out)
	}
	path := filepath.Join(dir, "nccltune.rules")
	if err := os.WriteFile(path, []byte(rules), 0o644); err != nil {
		t.Fatal(err)
	}
	// Every pair available at cost 1: the rule's pair is the one lowered to 0.
	var stdin strings.Builder
	for _, size := range sizes {
		fmt.Fprintf(&stdin, "%d %d 7 3%s\n", coll, size, strings.Repeat(" 1", 21))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, harness, lib, "6", fmt.Sprint(nodes), fmt.Sprint(ranks))
	cmd.Env = append(os.Environ(), plugin.RulesEnv+"="+path)
	cmd.Stdin = strings.NewReader(stdin.String())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("harness: %v\n%s", err, out)
	}
	ruleRE := regexp.MustCompile(`^log INFO \S+ nccltune: rule \d+ \(line \d+\): (.*)$`)
	queryRE := regexp.MustCompile(`^query rc=0 channels=\S+ changed=(.*)$`)
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "log WARN") {
			t.Errorf("the plugin refused the export's rules: %s\n%s", line, rules)
		}
		if m := ruleRE.FindStringSubmatch(line); m != nil {
			kept = append(kept, m[1])
		}
		if m := queryRE.FindStringSubmatch(line); m != nil {
			chosen = append(chosen, m[1])
		}
	}
	if len(chosen) != len(sizes) {
		t.Fatalf("%d answers to %d queries:\n%s", len(chosen), len(sizes), out)
	}
	return kept, chosen
}

// ruleLines are a rules file's rules, as written, less their comments.
func ruleLines(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n")[1:] {
		if line, _, _ = strings.Cut(line, "#"); strings.TrimSpace(line) != "" && line != "nccltune-rules 1" {
			out = append(out, strings.Join(strings.Fields(line), " "))
		}
	}
	return out
}

// TestPluginReadsWhatExportWrites: the rules file export writes is read by
// nccltune's plugin itself, whatever the store's words in its comments (a
// campaign's name of line breaks, a NUL, DEL, C1 controls, bytes that are
// not UTF-8, '#' and a header of its own), each rule as written, and each
// applied up to its bounds, the unbounded one up to the largest size NCCL
// can ask about.
func TestPluginReadsWhatExportWrites(t *testing.T) {
	const hostile = "x\nnccltune-rules 2\r\n\x00\x7f\u0085\xff\xfe # \t\x1b[2J allreduce 0 - * * ring ll 0"
	t.Run("sweep", func(t *testing.T) {
		ex := sweepCampaign(t, [][2]string{{"8", "64K"}, {"64K", "1G"}}, decide("TREE", "LL", 8), nil)
		ex.Campaign.Name = hostile
		text, err := written(t, ex, "plugin", "nccltune.rules")
		if err != nil {
			t.Fatal(err)
		}
		kept, chosen := pluginReads(t, text, 2, 16, 4, 0, 7, 8, 65535, 65536, 1<<30-1, 1<<30, math.MaxUint64)
		if want := ruleLines(text); !slices.Equal(kept, want) || len(want) == 0 {
			t.Errorf("the plugin kept %q, the file has %q:\n%s", kept, want, text)
		}
		// NCCL_PROTO=Simple, the algorithm NCCL's: every algorithm's simple is the cheapest, the first is lowered.
		if want := []string{"-", "-", "0/2:0", "0/2:0", "0/2:0", "0/2:0", "-", "-"}; !slices.Equal(chosen, want) {
			t.Errorf("chosen %q, want %q\n%s", chosen, want, text)
		}
	})
	t.Run("workload", func(t *testing.T) {
		ex := jobExport(t, jobSpace, map[string]string{"allgather": "Ring", "allreduce": "Tree"}, nil)
		ex.Campaign.Name = hostile
		ex.Fingerprint.Nodes, ex.Fingerprint.Ranks = 2, 16
		text, err := written(t, ex, "plugin", "nccltune.rules")
		if err != nil {
			t.Fatal(err)
		}
		kept, chosen := pluginReads(t, text, 2, 16, 4, 0, math.MaxInt64, math.MaxUint64)
		if want := ruleLines(text); !slices.Equal(kept, want) || len(want) == 0 {
			t.Errorf("the plugin kept %q, the file has %q:\n%s", kept, want, text)
		}
		if want := []string{"0/0:0", "0/0:0", "0/0:0"}; !slices.Equal(chosen, want) {
			t.Errorf("chosen %q, want %q\n%s", chosen, want, text)
		}
	})
}
