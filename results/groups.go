package results

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"strconv"

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
}

// GroupSpreads finds, among the configurations measured on several groups
// (NCCL's defaults are, on every one), each group's largest shortfall
// beyond GroupTolerance: a slow node or link makes every trial on its group
// look worse, and trials on different groups are compared as if alike.
func GroupSpreads(sp *space.Space, trials []store.Trial) []GroupSpread {
	// Each configuration's runs by group: looked up per configuration, not
	// found among every configuration's, which took seconds on 10k trials.
	logs := map[string]map[int][]map[string]float64{}
	first := map[string]int{}
	defaults := "" // NCCL's defaults' key, whichever trial first completed them
	nodes := map[int][]string{}
	for _, t := range trials {
		if t.State != store.Complete {
			continue
		}
		config := sp.Reading(t.Params)
		if logs[config] == nil {
			logs[config] = map[int][]map[string]float64{}
		}
		logs[config][t.Group] = append(logs[config][t.Group], t.Scores)
		if n, ok := first[config]; !ok || t.Number < n {
			first[config] = t.Number
		}
		if sp.IsDefaults(t.Params) {
			defaults = config
		}
		if nodes[t.Group] = t.Nodes; t.Nodes == nil {
			nodes[t.Group] = []string{} // JSON's [] for none, never null
		}
	}
	worst := map[int]GroupSpread{}
	// In the order of their first trials, so that of shortfalls alike the first is reported, every time.
	for _, config := range slices.SortedFunc(maps.Keys(first), func(a, b string) int { return cmp.Compare(first[a], first[b]) }) {
		number := first[config]
		for _, r := range sp.Ranges {
			means := map[int]float64{}
			for group, runs := range logs[config] {
				sum, n := 0.0, 0
				for _, scores := range runs {
					if v := scores[r.Name]; isScore(v) {
						sum, n = sum+math.Log(v), n+1
					}
				}
				if n > 0 {
					means[group] = math.Exp(sum / float64(n))
				}
			}
			if len(means) < 2 {
				continue
			}
			best := -1
			for g, m := range means {
				if best < 0 || m > means[best] || m == means[best] && g < best {
					best = g
				}
			}
			for g, m := range means {
				below := 1 - m/means[best]
				if below > GroupTolerance && below > worst[g].Below {
					name := "trial " + strconv.Itoa(number)
					if config == defaults {
						name = "NCCL's defaults"
					}
					worst[g] = GroupSpread{Group: g, Nodes: nodes[g], Range: r.Name, Config: name, Below: below, Best: best}
				}
			}
		}
	}
	out := slices.Collect(maps.Values(worst))
	slices.SortFunc(out, func(a, b GroupSpread) int { return cmp.Compare(a.Group, b.Group) })
	return out
}
