package results

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/nccltune/nccltune/space"
	"github.com/nccltune/nccltune/store"
)

func TestGroupSpreads(t *testing.T) {
	sp := &space.Space{Ranges: []space.Range{{Name: "small", Min: 1, Max: 1 << 16}, {Name: "large", Min: 1 << 16, Max: 1 << 30}},
		Params: []space.Param{{Name: "NCCL_PROTO", Values: []string{"default", "LL", "Simple"}}}}
	run := func(n, group int, proto string, small, large float64) store.Trial {
		return store.Trial{Number: n, State: store.Complete, Group: group, Nodes: []string{"node" + string(rune('a'+group))},
			Params: map[string]string{"NCCL_PROTO": proto}, Scores: map[string]float64{"small": small, "large": large}}
	}
	trials := []store.Trial{
		// NCCL's defaults on four groups: group 2 is 12% short on large messages, group 3 2% (noise).
		run(0, 0, "default", 10, 100), run(1, 1, "default", 10.1, 101), run(2, 2, "default", 10, 88.9), run(3, 3, "default", 9.9, 99),
		// A configuration on two groups: group 1 is 6% short on small messages.
		run(4, 0, "LL", 20, 50), run(5, 1, "LL", 18.8, 50),
		// Measured on one group only: nothing to compare.
		run(6, 3, "Simple", 1, 1),
		// A failed run is no measurement.
		{Number: 7, State: store.Failed, Group: 0, Params: map[string]string{"NCCL_PROTO": "LL"}},
	}
	got := GroupSpreads(sp, trials)
	if len(got) != 2 {
		t.Fatalf("%d spreads, want 2: %+v", len(got), got)
	}
	if g := got[0]; g.Group != 1 || g.Range != "small" || g.Config != "trial 4" || g.Best != 0 || g.Below < 0.059 || g.Below > 0.061 {
		t.Errorf("group 1: %+v", g)
	}
	if g := got[1]; g.Group != 2 || g.Range != "large" || g.Config != "NCCL's defaults" || g.Best != 1 || g.Nodes[0] != "nodec" || g.Below < 0.11 {
		t.Errorf("group 2: %+v", g)
	}
	if len(GroupSpreads(sp, trials[:1])) != 0 {
		t.Error("one group's trials cannot spread")
	}
}

// TestGroupSpreadOfTheDefaultsWhereTrial0Failed: NCCL's defaults run first on
// every group; where trial 0 (group 0's) failed, the defaults measured on
// the others are still NCCL's defaults: they were named "trial 1", a
// configuration the search never proposed.
func TestGroupSpreadOfTheDefaultsWhereTrial0Failed(t *testing.T) {
	sp := &space.Space{Ranges: []space.Range{{Name: "all", Min: 1, Max: 1 << 30}},
		Params: []space.Param{{Name: "NCCL_PROTO", Values: []string{"default", "LL", "Simple"}}}}
	defaults := func(n int, score float64) store.Trial {
		return store.Trial{Number: n, State: store.Complete, Group: n, Params: map[string]string{"NCCL_PROTO": "default"}, Scores: map[string]float64{"all": score}}
	}
	trials := []store.Trial{{Number: 0, State: store.Failed, Group: 0}, defaults(1, 100), defaults(2, 80)}
	if got := GroupSpreads(sp, trials); len(got) != 1 || got[0].Config != "NCCL's defaults" {
		t.Errorf("spreads: %+v", got)
	}
}

// TestGroupSpreadJSONNodes: groups whose trials named no node (a local
// launcher, the simulated cluster) had "nodes": null in status --json,
// where every list is [] for none.
func TestGroupSpreadJSONNodes(t *testing.T) {
	sp := &space.Space{Ranges: []space.Range{{Name: "all", Min: 1, Max: 1 << 30}},
		Params: []space.Param{{Name: "NCCL_PROTO", Values: []string{"default", "LL", "Simple"}}}}
	trials := []store.Trial{
		{Number: 0, State: store.Complete, Group: 0, Params: map[string]string{"NCCL_PROTO": "default"}, Scores: map[string]float64{"all": 100}},
		{Number: 1, State: store.Complete, Group: 1, Params: map[string]string{"NCCL_PROTO": "default"}, Scores: map[string]float64{"all": 80}},
	}
	got, err := json.Marshal(GroupSpreads(sp, trials))
	if err != nil || !strings.Contains(string(got), `"nodes":[]`) {
		t.Errorf("JSON %s (%v), want \"nodes\":[]", got, err)
	}
}

// TestGroupSpreadsTied: two configurations measured 10% short on group 1,
// alike; and two ranges alike. The one reported is the first of each,
// every time, not whichever a map gave first.
func TestGroupSpreadsTied(t *testing.T) {
	sp := &space.Space{Ranges: []space.Range{{Name: "small", Min: 1, Max: 1 << 16}, {Name: "large", Min: 1 << 16, Max: 1 << 30}},
		Params: []space.Param{{Name: "NCCL_PROTO", Values: []string{"default", "LL", "Simple"}}}}
	run := func(n, group int, proto string, score float64) store.Trial {
		return store.Trial{Number: n, State: store.Complete, Group: group,
			Params: map[string]string{"NCCL_PROTO": proto}, Scores: map[string]float64{"small": score, "large": score}}
	}
	trials := []store.Trial{run(0, 0, "LL", 100), run(1, 1, "LL", 90), run(2, 0, "Simple", 100), run(3, 1, "Simple", 90)}
	for range 20 {
		if got := GroupSpreads(sp, trials); len(got) != 1 || got[0].Config != "trial 0" || got[0].Range != "small" {
			t.Fatalf("%+v, want trial 0's, in range small", got)
		}
	}
}

// TestGroupSpreadsOfNodesResumedElsewhere: a campaign resumed in another
// allocation runs its group 1 on other nodes; a shortfall measured on the
// group's first nodes was told with the nodes it ran on last, which had
// measured alike, and the two sets' runs were averaged as one group's.
func TestGroupSpreadsOfNodesResumedElsewhere(t *testing.T) {
	sp := &space.Space{Ranges: []space.Range{{Name: "all", Min: 1, Max: 1 << 30}},
		Params: []space.Param{{Name: "NCCL_PROTO", Values: []string{"default", "LL", "Simple"}}}}
	run := func(n, group int, node, proto string, score float64) store.Trial {
		return store.Trial{Number: n, State: store.Complete, Group: group, Nodes: []string{node},
			Params: map[string]string{"NCCL_PROTO": proto}, Scores: map[string]float64{"all": score}}
	}
	trials := []store.Trial{
		run(0, 0, "a", "default", 100), run(1, 1, "b", "default", 80), // b is slow
		run(2, 0, "a", "LL", 100), run(3, 1, "c", "LL", 100), // resumed: group 1 is c
		run(4, 0, "a", "Simple", 100), run(5, 1, "b", "Simple", 80), run(6, 1, "c", "Simple", 100),
	}
	got := GroupSpreads(sp, trials)
	if len(got) != 1 || got[0].Group != 1 || strings.Join(got[0].Nodes, ",") != "b" || got[0].Below < 0.19 {
		t.Errorf("spreads %+v, want group 1 on node b 20%% below", got)
	}
}
