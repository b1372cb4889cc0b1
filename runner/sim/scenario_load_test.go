package sim

import (
	"strings"
	"testing"

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
