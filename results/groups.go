package results

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/nccltune/nccltune/space"
	"github.com/nccltune/nccltune/store"
)

// GroupTolerance is how far below another group's a group's score of one
// configuration may be before the groups count as unlike: a range's score,
// averaged over its sizes, is known to about 1%, so 5% is no noise.
const GroupTolerance = 0.05

// GroupSpread is a group of nodes (launcher.groups) that measured a
// configuration, in one range, lower than another group did.
type GroupSpread struct {
	Group  int      `json:"group"`
	Nodes  []string `json:"nodes"`
	Range  string   `json:"range"`
	Config string   `json:"config"` // "NCCL's defaults", or the first trial of the configuration
	Below  float64  `json:"below"`  // how far below the best group's score, a fraction
	Best   int      `json:"best_group"`
	// BestNodes are the best group's nodes, where its trials recorded them.
	BestNodes []string `json:"best_nodes"`
}

// GroupSpreads finds, among the configurations measured on several groups
// (NCCL's defaults are, on every one), each group's largest shortfall
// beyond GroupTolerance: a slow node or link makes every trial on its group
// look worse, and trials on different groups are compared as if alike. A
// group is told apart by its nodes too: a campaign resumed in another
// allocation runs its groups on other nodes, whose runs are not the
// first nodes' measurements.
func GroupSpreads(sp *space.Space, trials []store.Trial) []GroupSpread {
	// A group on one set of nodes: its index, and its nodes joined.
	type unit struct {
		group int
		nodes string
	}
	// Each configuration's runs by unit: looked up per configuration, not
	// found among every configuration's, which took seconds on 10k trials.
	logs := map[string]map[unit][]map[string]float64{}
	first := map[string]int{}
	defaults := "" // NCCL's defaults' key, whichever trial first completed them
	nodes := map[unit][]string{}
	for _, t := range trials {
		if t.State != store.Complete {
			continue
		}
		config := sp.Reading(t.Params)
		if logs[config] == nil {
			logs[config] = map[unit][]map[string]float64{}
		}
		u := unit{t.Group, strings.Join(t.Nodes, ",")}
		logs[config][u] = append(logs[config][u], t.Scores)
		if n, ok := first[config]; !ok || t.Number < n {
			first[config] = t.Number
		}
		if sp.IsDefaults(t.Params) {
			defaults = config
		}
		if nodes[u] = t.Nodes; t.Nodes == nil {
			nodes[u] = []string{} // JSON's [] for none, never null
		}
	}
	before := func(a, b unit) bool { return a.group < b.group || a.group == b.group && a.nodes < b.nodes }
	worst := map[unit]GroupSpread{}
	// In the order of their first trials, so that of shortfalls alike the first is reported, every time.
	for _, config := range slices.SortedFunc(maps.Keys(first), func(a, b string) int { return cmp.Compare(first[a], first[b]) }) {
		number := first[config]
		for _, r := range sp.Ranges {
			means := map[unit]float64{}
			for u, runs := range logs[config] {
				sum, n := 0.0, 0
				for _, scores := range runs {
					if v := scores[r.Name]; isScore(v) {
						sum, n = sum+math.Log(v), n+1
					}
				}
				if n > 0 {
					means[u] = math.Exp(sum / float64(n))
				}
			}
			if len(means) < 2 {
				continue
			}
			var best unit
			found := false
			for u, m := range means {
				if !found || m > means[best] || m == means[best] && before(u, best) {
					best, found = u, true
				}
			}
			for u, m := range means {
				below := 1 - m/means[best]
				if below > GroupTolerance && below > worst[u].Below {
					name := "trial " + strconv.Itoa(number)
					if config == defaults {
						name = "NCCL's defaults"
					}
					worst[u] = GroupSpread{Group: u.group, Nodes: nodes[u], Range: r.Name, Config: name, Below: below, Best: best.group, BestNodes: nodes[best]}
				}
			}
		}
	}
	out := slices.Collect(maps.Values(worst))
	slices.SortFunc(out, func(a, b GroupSpread) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(strings.Join(a.Nodes, ","), strings.Join(b.Nodes, ",")))
	})
	return out
}
