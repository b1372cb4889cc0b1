package sim

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nccltune/nccltune/space"
)

// TestSpaceChecksTheScenario: a [simulator] table the simulator would refuse
// is refused when the space loads, each key at its line.
func TestSpaceChecksTheScenario(t *testing.T) {
	src := `[campaign]
trials = 10
sizes = { min = "8", max = "1M", factor = 4 }
[simulator]
nodes = 2
nosie = 0.02
fabrik = "ib"
noise = "lots"
[[param]]
name = "NCCL_ALGO"
values = ["default", "Ring", "Tree"]
`
	_, err := space.Parse("s.toml", []byte(src))
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{"s.toml:6:", "nosie", "s.toml:7:", "fabrik", "s.toml:8:", "noise"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q not in:\n%v", want, err)
		}
	}
}

// TestScenarioNumbers sets each number of the [simulator] table negative,
// to zero, past its bound and to int64's maximum: each is accepted where a
// cluster can mean it, and otherwise refused at load, naming it, rather
// than left to fail or hang every simulated run.
func TestScenarioNumbers(t *testing.T) {
	const maxInt64 = "9223372036854775807"
	for _, tc := range []struct {
		key, value string
		ok         bool
	}{
		{"nodes", "-1", false}, {"nodes", "0", false}, {"nodes", "2", true}, {"nodes", maxInt64, false},
		{"gpus_per_node", "-1", false}, {"gpus_per_node", "0", false}, {"gpus_per_node", "65536", false}, {"gpus_per_node", maxInt64, false},
		{"nics_per_node", "-1", false}, {"nics_per_node", "0", false}, {"nics_per_node", "64", true}, {"nics_per_node", "65", false}, {"nics_per_node", maxInt64, false},
		{"nic_gbps", "-1", false}, {"nic_gbps", "0", false}, {"nic_gbps", "800", true}, {"nic_gbps", "100001", false}, {"nic_gbps", "1e308", false},
		{"roce_gid", "-1", false}, {"roce_gid", "0", true}, {"roce_gid", maxInt64, false},
		{"gids", "-1", false}, {"gids", "0", false}, {"gids", "16", true},
		{"noise", "-1", false}, {"noise", "0", true}, {"noise", "0.6", false},
		{"seed", "-1", true}, {"seed", "0", true}, {"seed", maxInt64, true},
		{"landscape", "-1", false}, {"landscape", "0", true}, {"landscape", maxInt64, true},
		{"pace", "-1", false}, {"pace", "0", true}, {"pace", "2", false},
	} {
		src := "[campaign]\ntrials = 10\n[simulator]\nnodes = 2\nfabric = \"roce\"\n" + tc.key + " = " + tc.value + "\n[[param]]\nname = \"NCCL_ALGO\"\nvalues = [\"default\", \"Ring\"]\n"
		if tc.key == "nodes" {
			src = strings.Replace(src, "nodes = 2\n", "", 1)
		}
		_, err := space.Parse("s.toml", []byte(src))
		switch {
		case tc.ok && err != nil:
			t.Errorf("%s = %s refused: %v", tc.key, tc.value, err)
		case !tc.ok && err == nil:
			t.Errorf("%s = %s accepted", tc.key, tc.value)
		case !tc.ok && (!strings.HasPrefix(err.Error(), "s.toml:") || !strings.Contains(err.Error(), tc.key)):
			// The scenario's own checks are at the table's line, naming the key.
			t.Errorf("%s = %s: %v: no line, or not naming the key", tc.key, tc.value, err)
		}
	}
}

// TestSpaceChecksManyKeysPromptly: each key the simulator refuses is told
// at its line, and a table of tens of thousands of them loads promptly: the
// whole table was checked again after each, the square of its keys.
func TestSpaceChecksManyKeysPromptly(t *testing.T) {
	var src strings.Builder
	src.WriteString("[campaign]\ntrials = 10\n[simulator]\nnodes = 2\n")
	for i := range 30000 {
		fmt.Fprintf(&src, "k%d = 1\n", i)
	}
	src.WriteString("noise = \"lots\"\n[[param]]\nname = \"NCCL_ALGO\"\nvalues = [\"default\", \"Ring\"]\n")
	done := make(chan error, 1)
	go func() { _, err := space.Parse("s.toml", []byte(src.String())); done <- err }()
	select {
	case err := <-done:
		for _, want := range []string{"s.toml:5: simulator: flag provided but not defined: -k0\n", "s.toml:30004: simulator: flag provided but not defined: -k29999\n", "s.toml:30005: simulator: invalid value \"lots\" for flag -noise"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%q not in:\n%.300v", want, err)
			}
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the loader hangs on a [simulator] table of 30,000 unknown keys")
	}
}
