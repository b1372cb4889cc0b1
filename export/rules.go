package export

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/nccltune/nccltune/internal/text"
	"github.com/nccltune/nccltune/plugin"
	"github.com/nccltune/nccltune/results"
	"github.com/nccltune/nccltune/runner/nccllog"
	"github.com/nccltune/nccltune/space"
)

// rule is one rule of a tuner plugin: a collective over the sizes [min, max]
// (inclusive; max -1: no bound), set to an algorithm and protocol ("": NCCL's
// own) and a channel count (0: NCCL's own).
type rule struct {
	coll        string // the plugins' name: allreduce, allgather, ...
	min, max    int64
	algo, proto string // the plugins' tokens: ring, nvls_tree, ll128, ...
	channels    int
	from        string // the ranges it serves, for a comment
	note        string // or, for a rule that serves none, why it is there
}

// The plugins' tokens of NCCL's algorithms and protocols (ring, nvls_tree,
// ll128, ...), by their folded names: nccltune's plugin and NVIDIA's example
// read the same ones (plugin.Algorithms).
var (
	algoTokens  = tokens(plugin.Algorithms)
	protoTokens = tokens(plugin.Protocols)
	// The plugins' collectives, from nccl-tests' and NCCL's names.
	collTokens = map[string]string{"all_reduce": "allreduce", "all_gather": "allgather", "reduce_scatter": "reducescatter", "broadcast": "broadcast",
		"reduce": "reduce", "alltoall": "alltoall", "sendrecv": "sendrecv", "allreduce": "allreduce", "allgather": "allgather", "reducescatter": "reducescatter"}
	// NVIDIA's example plugin knows only these collectives.
	exampleColls = []string{"allreduce", "allgather", "reducescatter", "broadcast", "reduce"}
)

// fold is how a name of NCCL's compares, whoever spells it: NCCL_ALGO and
// NCCL_PROTO (Tree, CollNetDirect, NVLSTree, Simple), NCCL's TUNING log
// (ncclAlgoToString, ncclProtoToString: TREE, COLLNET_DIRECT, NVLS_TREE,
// SIMPLE) and the plugins (collnet_direct, nvls_tree, simple) differ only in
// case and in '_' (and '-').
func fold(name string) string {
	return strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(name))
}

// tokens maps the folded names of a plugin's tokens to them.
func tokens(names []string) map[string]string {
	m := map[string]string{}
	for _, n := range names {
		m[fold(n)] = n
	}
	return m
}

// token is the plugins' name for value, or false for a name they do not know.
func token(tokens map[string]string, value string) (string, bool) {
	t, ok := tokens[fold(value)]
	return t, ok
}

// setFor is what NCCL_ALGO or NCCL_PROTO (value, "" or "default" when
// unset) sets for collective coll: one name (a token), nothing ("", true),
// or a choice among several that NCCL makes per size (false). As NCCL's
// parseList reads it, each part replaces what the parts before it set for
// its collectives: the last part that names coll holds, or else the first
// part, where it names no collective (only the first may: see space's canonicalList).
func setFor(tokens map[string]string, value, coll string) (string, bool) {
	if value == "" || value == space.Unset {
		return "", true
	}
	part, ok := partFor(value, coll)
	if !ok {
		return "", true // set for other collectives only
	}
	return token(tokens, part)
}

// partFor is the list of NCCL_ALGO or NCCL_PROTO (value) that NCCL applies
// to collective coll, in the plugins' name (allreduce): of the last part
// that names coll, or else of the first part, where it names none; false
// where no part applies to coll.
func partFor(value, coll string) (string, bool) {
	part, ok := "", false
	for _, p := range strings.Split(value, ";") {
		if c, rest, named := strings.Cut(p, ":"); !named {
			part, ok = p, true
		} else if collTokens[strings.ToLower(c)] == coll {
			part, ok = rest, true
		}
	}
	return part, ok
}

// jobRules are the rules that reproduce the job's choice in every range, and
// the job's environment (jobBase's, what the space pins included): the
// algorithm and protocol its configuration set, or, where it left them to NCCL
// or to a choice NCCL makes per size, what NCCL decided per size under it
// (recorded by validation). explicit is for NVIDIA's example plugin, which
// needs an algorithm, a protocol and a channel count in every rule, and every
// size covered (elsewhere it runs one channel): then every rule comes from
// NCCL's decisions, also in the ranges where NCCL's own choice stands.
func (e Export) jobRules(explicit bool) ([]rule, []string, error) {
	sp := e.Space
	if !measured(e.Job.Ranges) {
		return nil, nil, errors.New("no completed trial measured any range; nothing to export")
	}
	kept := e.defaultsStand()
	base, err := e.jobBase()
	if err != nil {
		return nil, nil, err
	}
	// What the rules take over are the per-size variables the search set;
	// what the space pins (NCCL_PROTO=^LL128) held in every trial and holds
	// in the job. env, without either, is what the ranges' choices must share.
	env := results.JobEnv(sp, base)
	var rules []rule
	var errs []error
	for _, r := range e.Job.Ranges {
		if r.Best == nil {
			errs = append(errs, fmt.Errorf("range %s: no completed trial measured it", r.Range.Name))
			continue
		}
		a, err := e.settings(r.Best)
		if err != nil {
			errs = append(errs, fmt.Errorf("range %s: %w", r.Range.Name, err))
			continue
		}
		switch {
		case kept || !e.Job.Uses(r):
			// NCCL's own choice stands here, under the job's environment.
			if a = base; !explicit {
				continue
			}
		case !slices.Equal(results.JobEnv(sp, a), env):
			// Only where NCCL's defaults failed in the search (see
			// results.Job.EnvTrial): its choice under the job's environment
			// was never measured.
			errs = append(errs, fmt.Errorf("range %s: its choice, trial %d, sets job-wide variables otherwise than trial %d, whose environment the job takes, and one job holds one environment; with NCCL's defaults unmeasured in the search the campaign cannot choose one for the ranges together: export each range's own file (--format env)",
				r.Range.Name, r.Best.Number, e.Job.EnvTrial().Number))
			continue
		}
		coll, vars := collTokens[r.Range.Collective], space.EnvMap(sp.Env(a))
		if explicit && !slices.Contains(exampleColls, coll) {
			continue // NCCL asks no plugin about it (sendrecv, alltoall): it runs as NCCL decides under env
		}
		algo, okA := setFor(algoTokens, vars["NCCL_ALGO"], coll)
		proto, okP := setFor(protoTokens, vars["NCCL_PROTO"], coll)
		if okA && okP && !explicit && sp.Benchmark.Sweeps() {
			if algo != "" || proto != "" {
				rules = append(rules, rule{coll: coll, min: r.Range.Min, max: upTo(r.Range), algo: algo, proto: proto, from: r.Range.Name})
			}
			continue
		}
		decided, err := e.decided(r.Range, a)
		if err != nil {
			errs = append(errs, fmt.Errorf("range %s: %w", r.Range.Name, err))
			continue
		}
		if !explicit {
			for i := range decided {
				decided[i].channels = 0 // NCCL's own count, as measured
			}
		}
		rules = append(rules, decided...)
	}
	return merged(rules), sp.Env(base), errors.Join(errs...)
}

// defaultsStand reports whether the job's environment and rules are NCCL's
// defaults (with what [fixed] pins): a workload's job, judged as a whole,
// that validation rejected, as in the job file (results.Job.Exported); or a
// job that uses no range's choice, whose environment no verdict judged on
// its own.
func (e Export) defaultsStand() bool {
	return e.Job.DefaultsKept() || e.Job.Validation == nil && !slices.ContainsFunc(e.Job.Ranges, e.Job.Uses)
}

// jobBase is the job's environment as an assignment, without the per-size
// settings a plugin's rules make: none where NCCL's defaults stand, else
// the settings of the trial that lends the job its environment
// (results.Job.EnvTrial, never a rejected range's), checked as every
// export's are.
func (e Export) jobBase() (space.Assignment, error) {
	t := e.Job.EnvTrial()
	if e.defaultsStand() || t == nil {
		return space.Assignment{}, nil
	}
	a, err := e.settings(t)
	if err != nil {
		return nil, fmt.Errorf("the job's environment: %w", err)
	}
	return results.WithoutPerSize(e.Space, a), nil
}

// jobSettings are the settings (NAME=value) of the job's environment
// beyond what [fixed] pins: none where it is NCCL's defaults'.
func (e Export) jobSettings() []string {
	base, err := e.jobBase()
	if err != nil {
		return nil // refused by jobRules, which writes no file
	}
	pinned := results.JobEnv(e.Space, space.Assignment{})
	return slices.DeleteFunc(results.JobEnv(e.Space, base), func(kv string) bool { return slices.Contains(pinned, kv) })
}

// measured reports whether a completed trial measured any of the ranges.
func measured(rs []results.RangeResult) bool {
	return slices.ContainsFunc(rs, func(r results.RangeResult) bool { return r.Best != nil })
}

// merged joins each rule to the one before where they follow on and choose alike.
func merged(rules []rule) []rule {
	var out []rule
	for _, r := range rules {
		if n := len(out); n > 0 && sameChoice(out[n-1], r) && out[n-1].max != -1 && out[n-1].max+1 == r.min {
			out[n-1].max = r.max
			switch prev := &out[n-1]; {
			case prev.note != "" || r.note != "":
				if a, b := prev.about(), r.about(); a != b {
					prev.note = a + "; " + b
				}
			case !slices.Contains(strings.Split(prev.from, ", "), r.from): // range names hold no ", " (space.FileWord)
				prev.from += ", " + r.from
			}
			continue
		}
		out = append(out, r)
	}
	return out
}

// about is a rule's comment: the ranges it serves, or why it is there.
func (r rule) about() string {
	if r.note != "" {
		return r.note
	}
	return "range " + r.from
}

// decided are the rules of NCCL's decisions under assignment a for the sizes
// of range rg: a rule per run of sizes decided alike, from one decided size
// to the next.
func (e Export) decided(rg space.Range, a space.Assignment) ([]rule, error) {
	ds, ok := e.decisions(a)
	switch {
	case !ok && e.validated():
		return nil, errors.New("the rules need NCCL's own per-size decisions under its configuration, and NCCL logged none when validation probed it (a communicator of one rank makes no decision)")
	case !ok:
		return nil, fmt.Errorf("the rules need NCCL's own per-size decisions under its configuration, which validation records: %w", ErrUnvalidated)
	}
	byColl, err := e.points(ds)
	if err != nil {
		return nil, err
	}
	var out []rule
	for _, coll := range slices.Sorted(maps.Keys(byColl)) {
		pts := byColl[coll]
		if e.Space.Benchmark.Sweeps() {
			if coll != collTokens[rg.Collective] {
				continue
			}
			pts = slices.DeleteFunc(pts, func(p point) bool { return !rg.Contains(p.size) })
		}
		out = append(out, spans(pts, rg.Min, upTo(rg), rule{from: rg.Name})...)
	}
	if len(out) == 0 {
		return nil, errors.New("NCCL's recorded decisions under its configuration hold none of its sizes")
	}
	return out, nil
}

// points are NCCL's decisions ds, checked, as rules per collective, each
// collective's by size, one per size.
func (e Export) points(ds []nccllog.Decision) (map[string][]point, error) {
	byColl := map[string][]point{}
	for _, d := range ds {
		p, ok, err := e.point(d)
		if err != nil {
			return nil, err
		}
		if ok {
			byColl[p.rule.coll] = append(byColl[p.rule.coll], p)
		}
	}
	for coll, pts := range byColl {
		slices.SortStableFunc(pts, func(x, y point) int { return cmp.Compare(x.size, y.size) })
		for i := 1; i < len(pts); i++ {
			if a, b := pts[i-1].rule, pts[i].rule; pts[i-1].size == pts[i].size && !sameChoice(a, b) {
				return nil, fmt.Errorf("NCCL's recorded decisions for %s of %d bytes disagree (%s/%s on %d channels, %s/%s on %d): NCCL logs one per size; the store was altered",
					coll, pts[i].size, a.algo, a.proto, a.channels, b.algo, b.proto, b.channels)
			}
		}
		byColl[coll] = slices.CompactFunc(pts, func(x, y point) bool { return x.size == y.size })
	}
	return byColl, nil
}

// spans are the rules of one collective's decided points, by size, over the
// sizes lo to hi (-1: no bound): each point's choice from its size up to the
// next point's, the first's from lo; one rule per run decided alike. Each
// rule says what it serves as like does.
func spans(pts []point, lo, hi int64, like rule) []rule {
	var out []rule
	for i, p := range pts {
		r := p.rule
		r.from, r.note = like.from, like.note
		r.min, r.max = p.size, hi
		if i == 0 {
			r.min = lo
		}
		if n := len(out); n > 0 && sameChoice(out[n-1], r) {
			continue // one rule for the run
		}
		if n := len(out); n > 0 {
			out[n-1].max = r.min - 1
		}
		out = append(out, r)
	}
	return out
}

const (
	// maxChannels is NCCL's MAXCHANNELS (src/include/device.h): no
	// operation runs on more channels, and the plugins take no more.
	maxChannels = 64
	// maxBytes bounds the sizes of NCCL's decisions and of the rules: far
	// above any real operation (1 PiB), far below what overflows.
	maxBytes = 1 << 50
	// maxRanks bounds a communicator's rank count, and so its node count.
	maxRanks = 1 << 22
)

// point is NCCL's decision for one collective and size, as a rule.
type point struct {
	size int64
	rule rule
}

// point reads NCCL's decision d in the plugins' tokens, or false for an
// operation no plugin's rule can name. An algorithm or protocol the plugins
// do not know is an error, never left out: NCCL's TUNING log spells them as
// ncclAlgoToString and ncclProtoToString do (TREE, RING, COLLNET_DIRECT,
// COLLNET_CHAIN, NVLS, NVLS_TREE, PAT; LL, LL128, SIMPLE).
func (e Export) point(d nccllog.Decision) (point, bool, error) {
	coll, ok := collTokens[strings.ToLower(d.Op)]
	if !ok {
		return point{}, false, nil
	}
	size, ranks := d.Bytes, int64(1)
	if perRank(d) {
		// NCCL logs a rank's share; nccl-tests and the plugins, the whole.
		if ranks = int64(e.Fingerprint.Ranks); ranks < 1 {
			return point{}, false, fmt.Errorf("NCCL's recorded decision for %s of %d bytes gives a rank's share, and the campaign's rank count is unknown (its benchmark reported none), so the whole size a rule needs is not known; refusing to write it at another size", clean(d.Op), d.Bytes)
		}
	}
	algo, okA := token(algoTokens, d.Algo)
	proto, okP := token(protoTokens, d.Proto)
	switch {
	case size < 0 || size > maxBytes/ranks:
		return point{}, false, fmt.Errorf("NCCL's recorded decision for %s of %d bytes: no size NCCL logs (0 to %d bytes in all): the store was altered", clean(d.Op), d.Bytes, int64(maxBytes))
	case d.Channels < 1 || d.Channels > maxChannels:
		return point{}, false, fmt.Errorf("NCCL's recorded decision for %s of %d bytes ran %d channels, outside NCCL's 1 to %d (MAXCHANNELS): the store was altered", clean(d.Op), d.Bytes, d.Channels, maxChannels)
	case !okA:
		return point{}, false, fmt.Errorf("NCCL's recorded decision for %s of %d bytes names algorithm %q, which no tuner plugin knows (they know %s); refusing to leave that size out",
			clean(d.Op), d.Bytes, d.Algo, strings.Join(plugin.Algorithms, " "))
	case !okP:
		return point{}, false, fmt.Errorf("NCCL's recorded decision for %s of %d bytes names protocol %q, which no tuner plugin knows (they know %s); refusing to leave that size out",
			clean(d.Op), d.Bytes, d.Proto, strings.Join(plugin.Protocols, " "))
	}
	return point{size * ranks, rule{coll: coll, algo: algo, proto: proto, channels: d.Channels}}, true, nil
}

// validated reports whether the campaign's choices have been validated.
func (e Export) validated() bool {
	return slices.ContainsFunc(e.Job.Ranges, func(r results.RangeResult) bool { return r.Validation != nil })
}

// upTo is a range's largest size, -1 where it has no bound (a workload's collective).
func upTo(rg space.Range) int64 {
	if rg.Max == math.MaxInt64 {
		return -1
	}
	return rg.Max - 1
}

// perRank reports whether NCCL's log gives a rank's share of the operation's bytes.
func perRank(d nccllog.Decision) bool {
	switch strings.ToLower(d.Op) {
	case "allgather", "reducescatter", "alltoall":
		return true
	}
	return false
}

func sameChoice(a, b rule) bool {
	return a.coll == b.coll && a.algo == b.algo && a.proto == b.proto && a.channels == b.channels
}

// where, in the plugins' rules, is the node and rank count the campaign ran
// on, or any (-1) where it is not known; an error where the store gives
// counts no communicator has.
func (e Export) where() (nodes, ranks int, err error) {
	f := e.Fingerprint
	if f.Nodes < 0 || f.Ranks < 0 || f.Ranks > maxRanks || f.Nodes > 0 && f.Ranks > 0 && f.Nodes > f.Ranks {
		return 0, 0, fmt.Errorf("campaign %s ran on %d nodes and %d ranks, which no communicator has: the store was altered", clean(e.Campaign.Name), f.Nodes, f.Ranks)
	}
	nodes, ranks = -1, -1
	if f.Nodes > 0 {
		nodes = f.Nodes
	}
	if f.Ranks > 0 {
		ranks = f.Ranks
	}
	return nodes, ranks, nil
}

// checkRules checks rules before they are written, whatever they were made
// from: known collectives, algorithms and protocols, sizes in order from 0
// up (max -1: no bound), NCCL's channel counts (0: NCCL's own), and no two
// rules of a collective over one size.
func checkRules(rules []rule) error {
	for i, r := range rules {
		switch {
		case !slices.Contains(slices.Collect(maps.Values(collTokens)), r.coll):
			return fmt.Errorf("rule for collective %q, which no plugin knows", clean(r.coll))
		case r.algo != "" && !slices.Contains(plugin.Algorithms, r.algo), r.proto != "" && !slices.Contains(plugin.Protocols, r.proto):
			return fmt.Errorf("%s rule of algorithm %q and protocol %q, which no plugin knows", r.coll, clean(r.algo), clean(r.proto))
		case r.min < 0 || r.max != -1 && r.max < r.min:
			return fmt.Errorf("%s rule of sizes %d to %d, not a range of sizes from 0 up", r.coll, r.min, r.max)
		case r.channels < 0 || r.channels > maxChannels:
			return fmt.Errorf("%s rule of %d channels, outside NCCL's 1 to %d", r.coll, r.channels, maxChannels)
		}
		for _, o := range rules[:i] {
			if o.coll == r.coll && (o.max == -1 || r.min <= o.max) && (r.max == -1 || o.min <= r.max) {
				return fmt.Errorf("%s rules of sizes %d to %d and %d to %d overlap", r.coll, o.min, o.max, r.min, r.max)
			}
		}
	}
	return nil
}

// verdicts says, per range, what the plugin does there.
func (e Export) verdicts() []string {
	var out []string
	for _, r := range e.Job.Ranges {
		out = append(out, fmt.Sprintf("%srange %s: %s", e.scale(), r.Range.Name, e.doesIn(r)))
	}
	return out
}

// doesIn says what the plugin does in range r: a workload's job, judged as a
// whole, follows the job's verdict, as the job file does, whatever the
// range's own said; a job of one collective's ranges, the range's. Where
// such a job does not take the range's choice (not tuned, or rejected)
// and its environment sets more than [fixed] pins, the range runs NCCL's
// own algorithm and protocol under that environment: not NCCL's defaults,
// which the range's verdict keeps, and a configuration that no verdict
// covers there, unless it is the very one validation rejected there.
func (e Export) doesIn(r results.RangeResult) string {
	j := e.Job
	sp := e.Space
	switch {
	case len(sp.Workload) == 0 && r.Best != nil && !e.defaultsStand() && !j.Uses(r):
		env := e.jobSettings()
		if len(env) == 0 {
			return r.Describe()
		}
		runs := fmt.Sprintf("NCCL's own algorithm and protocol under the job's environment (%s), which other ranges' choices need", strings.Join(env, " "))
		if v := r.Validation; v != nil && sp.Reading(results.WithoutPerSize(sp, r.Best.Params)) == sp.Reading(r.Best.Params) {
			return fmt.Sprintf("%s: trial %d's configuration, which validation rejected in this range (%s)", runs, r.Best.Number, v.Reason)
		}
		return fmt.Sprintf("%s, a configuration no verdict covers in this range; of the range alone: %s", runs, r.Describe())
	case len(sp.Workload) == 0 || r.Best == nil:
		return r.Describe()
	case j.DefaultsKept():
		return "the job's validation kept NCCL's defaults: " + j.Validation.Reason
	case !j.Uses(r):
		return "NCCL's own choice, which measured best under the job's environment"
	case j.Validation != nil:
		return fmt.Sprintf("trial %d's choice, in the job's configuration, which validation kept: %s", r.Best.Number, j.Validation.Reason)
	}
	return fmt.Sprintf("trial %d's choice, in the job's configuration, not validated", r.Best.Number)
}

// scale names the node count of a campaign of campaign.scales, as a prefix.
func (e Export) scale() string {
	if e.Campaign.Scale == 0 {
		return ""
	}
	return text.Count(e.Campaign.Scale, "node", "nodes") + ", "
}

// scaled are the campaigns whose rules one rules file holds: this one, and
// every other of campaign.scales, smallest first (each rule names its node
// and rank count, so they must be known); with the absolute path of dir, the
// files' folder, and what the plugin does in every range of them.
func (e Export) scaled(dir string) (all []Export, abs string, verdicts []string, err error) {
	all = append([]Export{e}, e.Scales...)
	slices.SortFunc(all, func(a, b Export) int { return a.Campaign.Scale - b.Campaign.Scale })
	seen := map[[2]int]string{} // a communicator's campaign: the plugins apply the first rule that matches
	for _, x := range all {
		nodes, ranks, err := x.where()
		if err != nil {
			return nil, "", nil, err
		}
		if len(all) > 1 && (nodes < 0 || ranks < 0) {
			return nil, "", nil, fmt.Errorf("campaign %s: NCCL's log gave no node and rank count, which the rules of several scales need", clean(x.Campaign.Name))
		}
		if other, ok := seen[[2]int{nodes, ranks}]; ok {
			return nil, "", nil, fmt.Errorf("campaigns %s and %s both ran on %s and %s, as NCCL logged them: the plugins apply the first rules for a communicator, and the second's would never apply (did the launcher give both scales the same nodes?)",
				other, clean(x.Campaign.Name), text.Count(nodes, "node", "nodes"), text.Count(ranks, "rank", "ranks"))
		}
		seen[[2]int{nodes, ranks}] = clean(x.Campaign.Name)
		verdicts = append(verdicts, x.verdicts()...)
	}
	abs, err = filepath.Abs(dir)
	return all, abs, verdicts, err
}

// jobBases are the names of the whole-job formats' env files, less
// jobEnvName's node count and extension.
var jobBases = map[string]string{"job": "nccl-job", "plugin": "nccl-plugin", "tuner-csv": "nccl-tuner"}

// jobEnvName is a job's env file: one per node count where the rules serve several.
func jobEnvName(base string, x Export, scales int) string {
	if scales == 1 {
		return base + ".env"
	}
	return fmt.Sprintf("%s-%dn.env", base, x.Campaign.Scale)
}

// plugin writes nccltune's own plugin's rules and the job's environment,
// which loads the plugin with them; with campaign.scales, the rules of
// every node count and an environment for each.
func (e Export) plugin(dir string) ([]file, error) {
	all, abs, verdicts, err := e.scaled(dir)
	if err != nil {
		return nil, fmt.Errorf("plugin: %w", err)
	}
	for _, x := range all {
		// The interfaces the plugin exports (tuner_abi.h): NCCL before 2.24 looks for v3 and v2 only.
		if yes, known := nccllog.AtLeast(x.Fingerprint.NCCL, 2, 24); known && !yes {
			return nil, fmt.Errorf("plugin: %scampaign %s ran NCCL %s, which loads tuner plugins of interface v3 at most: nccltune's plugin exports v4 to v6, which NCCL reads from 2.24, and that NCCL would ignore it; export env files (--format env) instead",
				x.scale(), clean(x.Campaign.Name), clean(x.Fingerprint.NCCL))
		}
	}
	lib, err := libraryPath(cmp.Or(e.Plugin, filepath.Join(abs, plugin.LibraryName)))
	if err != nil {
		return nil, fmt.Errorf("plugin: %w", err)
	}
	orAny := func(n int) string {
		if n < 0 {
			return "*"
		}
		return strconv.Itoa(n)
	}
	var b strings.Builder
	b.WriteString(comment(append(e.header("nccltune: rules for nccltune's own tuner plugin (NCCL 2.24 and later: tuner ABI v4, v5, v6)"), verdicts...), "# "))
	b.WriteString(comment([]string{"sizes and collectives no rule covers keep NCCL's own choice", "collective min_bytes max_bytes nodes ranks algorithm protocol channels"}, "# "))
	b.WriteString("nccltune-rules 1\n")
	var files []file
	for _, x := range all {
		rules, env, err := x.jobRules(false)
		if err != nil {
			return nil, fmt.Errorf("plugin: %s%w", x.scale(), err)
		}
		if err := checkRules(rules); err != nil {
			return nil, fmt.Errorf("plugin: %s%w: refusing to write it", x.scale(), err)
		}
		nodes, ranks, _ := x.where() // checked by scaled
		for _, r := range rules {
			// The comment is cleaned: a range's name is the store's word, and a line break in it wrote a rule.
			max := strconv.FormatInt(r.max, 10)
			if r.max < 0 {
				max = "-"
			}
			fmt.Fprintf(&b, "%s %d %s %s %s %s %s %d # %s\n", r.coll, r.min, max, orAny(nodes), orAny(ranks),
				orStar(r.algo), orStar(r.proto), r.channels, clean(r.about()))
		}
		envFile, err := x.jobEnvFile(jobEnvName(jobBases["plugin"], x, len(all)), "nccltune's tuner plugin and its rules", env,
			[2]string{"NCCL_TUNER_PLUGIN", lib}, [2]string{plugin.RulesEnv, filepath.Join(abs, "nccltune.rules")})
		if err != nil {
			return nil, err
		}
		files = append(files, envFile)
	}
	return append([]file{{"nccltune.rules", b.String(), 0o644}}, files...), nil
}

func orStar(s string) string {
	if s == "" {
		return "*"
	}
	return s
}

// libraryPath is NCCL_TUNER_PLUGIN for the library lib: a path (one with a
// '/') made absolute, since NCCL dlopens it as written and dlopen reads a
// relative path from each rank's working directory, as the rules' path is;
// a bare name, which NCCL looks up on the loader's search path, as it is.
func libraryPath(lib string) (string, error) {
	if !strings.Contains(lib, "/") {
		return lib, nil
	}
	return filepath.Abs(lib)
}

// ExampleLibrary is NCCL_TUNER_PLUGIN for NVIDIA's example plugin where the
// export is given no path: NCCL then opens libnccl-tuner-example.so, what
// the example's Makefile builds, from the loader's search path.
const ExampleLibrary = "example"

// tunerCSV writes the configuration of NCCL's example tuner plugin
// (NCCL_TUNER_CONFIG_FILE) and the job's environment. The example needs an
// algorithm, a protocol and a channel count in every rule and uses one
// channel wherever no rule matches: so every rule comes from NCCL's own
// decisions, and the rules cover every size, from 0 up.
func (e Export) tunerCSV(dir string) ([]file, error) {
	// NCCL asks no plugin about sendrecv and alltoall (jobRules gives them
	// no rule): a space of them alone would get a file of none.
	colls := e.Space.Collectives()
	if len(e.Space.AlgorithmCollectives()) == 0 && e.Space.Benchmark.Sweeps() {
		return nil, fmt.Errorf("tuner-csv: NCCL asks no tuner plugin about %s, which it runs as sends and receives: export its environment with --format job or env", strings.Join(colls, " or "))
	}
	all, abs, verdicts, err := e.scaled(dir)
	if err != nil {
		return nil, fmt.Errorf("tuner-csv: %w", err)
	}
	// NCCL loads "example" as libnccl-tuner-example.so from the loader's
	// path, the library the example's Makefile builds.
	lib, err := libraryPath(cmp.Or(e.Plugin, ExampleLibrary))
	if err != nil {
		return nil, fmt.Errorf("tuner-csv: %w", err)
	}
	var b strings.Builder
	b.WriteString(comment(append(e.header("nccltune: rules for NCCL's example tuner plugin (plugins/tuner/example, NCCL_TUNER_CONFIG_FILE)",
		"works with the example plugin of NCCL 2.30.3 and later: those of 2.27.5 to 2.29.x crash on the first matching rule (NVIDIA/nccl#1974); nccltune's own plugin (--format plugin) works with NCCL 2.24 and later",
		"the example runs ONE channel wherever no rule matches, and takes the first rule that matches, passing over one whose algorithm and protocol NCCL cannot run there",
		"so the rules for the communicator measured (its node and rank count) cover every size of the collectives below; then rules for every other communicator (-1: a tensor-parallel or DDP subgroup, another node count) give NCCL's own choice as measured, then ring with that protocol, then ring/simple, all with channels 0",
		"channels 0: NCCL's own count (the example hands 0 to NCCL, which keeps its own); the example's -1, documented as NCCL's default, runs one channel",
		"NCCL asks no tuner plugin about sendrecv and alltoall, which it runs as sends and receives: they run as NCCL decides"),
		verdicts...), "# "))
	b.WriteString(comment([]string{"colltype,minbytes,maxbytes,algorithm,protocol,channels,nNodes,nRanks,numPipeOps,regBuff"}, "# "))
	write := func(rules []rule, nodes, ranks int) {
		for _, r := range rules {
			max := r.max
			if max < 0 {
				max = math.MaxInt64
			}
			b.WriteString(comment([]string{r.about()}, "# "))
			fmt.Fprintf(&b, "%s,%d,%d,%s,%s,%d,%d,%d,-1,-1\n", r.coll, r.min, max, r.algo, r.proto, r.channels, nodes, ranks)
		}
	}
	var files []file
	var smallest []rule
	for _, x := range all {
		rules, env, err := x.jobRules(true)
		if err == nil {
			err = checkRules(rules)
		}
		if err == nil {
			rules, err = x.covering(rules)
		}
		if err == nil {
			err = checkRules(rules)
		}
		if err != nil {
			return nil, fmt.Errorf("tuner-csv: %s%w", x.scale(), err)
		}
		if smallest == nil {
			smallest = rules
		}
		nodes, ranks, _ := x.where() // checked by scaled
		write(rules, nodes, ranks)
		envFile, err := x.jobEnvFile(jobEnvName(jobBases["tuner-csv"], x, len(all)), "NCCL's example tuner plugin (of NCCL 2.30.3 or later) and its rules", env,
			[2]string{"NCCL_TUNER_PLUGIN", lib}, [2]string{"NCCL_TUNER_CONFIG_FILE", filepath.Join(abs, "nccl_tuner.conf")})
		if err != nil {
			return nil, err
		}
		files = append(files, envFile)
	}
	layers, err := all[0].others(smallest)
	for _, l := range layers {
		if err == nil {
			err = checkRules(l)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("tuner-csv: rules for other communicators: %w", err)
	}
	for _, l := range layers {
		write(l, -1, -1)
	}
	return append([]file{{"nccl_tuner.conf", b.String(), 0o644}}, files...), nil
}

// others are the example plugin's rules for every communicator but the
// ones measured (-1 nodes and ranks), after theirs, since the example takes
// the first rule that matches: a sub-communicator (a tensor-parallel group,
// a DDP subgroup) or another node count would match none and run one
// channel on every collective. Per size they give NCCL's own algorithm and
// protocol as measured (under the job's environment; covered, the measured
// communicator's rules, where validation did not record it), with channels
// 0: the example hands 0 to NCCL, which keeps its own count for the
// communicator. Where NCCL cannot run that pair there, the example passes
// to the next rule that matches: ring with the same protocol, then
// ring/simple, which NCCL runs for every collective the example knows.
func (e Export) others(covered []rule) (layers [3][]rule, err error) {
	alone, err := e.alone()
	if err != nil {
		return layers, err
	}
	for _, coll := range exampleColls {
		mine := slices.DeleteFunc(slices.Clone(covered), func(r rule) bool { return r.coll != coll })
		if len(mine) == 0 {
			continue
		}
		if pts := alone[coll]; len(pts) > 0 {
			mine = spans(pts, 0, -1, rule{})
		}
		var own, ring []rule
		for _, r := range mine {
			r.channels, r.note = 0, "other communicators: NCCL's own choice as measured, NCCL's own channel count"
			if own = append(own, r); r.algo != "ring" {
				r.algo, r.note = "ring", "other communicators, where NCCL cannot run the pair above: ring, its protocol"
				ring = append(ring, r)
			}
		}
		layers[0] = append(layers[0], merged(own)...)
		layers[1] = append(layers[1], merged(ring)...)
		layers[2] = append(layers[2], rule{coll: coll, min: 0, max: -1, algo: "ring", proto: "simple", note: "other communicators, the last resort: ring/simple"})
	}
	return layers, nil
}

// alone are NCCL's decisions under the job's environment as exported
// (jobBase: NCCL's defaults where they stand, never a rejected choice's
// environment; none where validation recorded none): what NCCL does where
// no rule steers it.
func (e Export) alone() (map[string][]point, error) {
	base, err := e.jobBase()
	if err != nil {
		return nil, err
	}
	ds, _ := e.decisions(base)
	pts, err := e.points(ds)
	if err != nil {
		return nil, fmt.Errorf("under the job's environment: %w", err)
	}
	return pts, nil
}

// covering are the rules of the collectives NVIDIA's example plugin knows,
// reaching over every size from 0 up: the example runs one channel wherever
// no rule matches. Sizes no range measured (below the first, between ranges
// that do not touch, above the last) take what NCCL decided for them under
// the job's environment, which validation records, from each decided size
// up to the next: what NCCL does there without a plugin. Where it decided
// none of them, the rule below them (above, for the smallest) reaches over.
func (e Export) covering(rules []rule) ([]rule, error) {
	alone, err := e.alone()
	if err != nil {
		return nil, err
	}
	const unmeasured = "sizes no range measured: NCCL's own choice under the job's environment"
	var colls []string
	for _, r := range rules {
		if slices.Contains(exampleColls, r.coll) && !slices.Contains(colls, r.coll) {
			colls = append(colls, r.coll)
		}
	}
	var out []rule
	for _, coll := range colls {
		rs := slices.DeleteFunc(slices.Clone(rules), func(r rule) bool { return r.coll != coll })
		slices.SortStableFunc(rs, func(a, b rule) int { return cmp.Compare(a.min, b.min) })
		var col []rule
		// fill covers the sizes lo to hi (-1: no bound), which no range measured.
		fill := func(lo, hi int64) {
			pts := slices.DeleteFunc(slices.Clone(alone[coll]), func(p point) bool { return p.size < lo || hi != -1 && p.size > hi })
			if len(pts) > 0 {
				col = append(col, spans(pts, lo, hi, rule{note: unmeasured})...)
			} else if n := len(col); n > 0 {
				col[n-1].max = hi
				col[n-1].note = col[n-1].about() + ", and the larger sizes beside it that no range measured (NCCL's log under the job's environment has none of them)"
			}
		}
		next := int64(0) // the smallest size not yet covered; -1: none
		for _, r := range rs {
			if r.min > next {
				if fill(next, r.min-1); len(col) == 0 {
					r.min = 0
					r.note = r.about() + ", and the smaller sizes that no range measured (NCCL's log under the job's environment has none of them)"
				}
			}
			col = append(col, r)
			if r.max == -1 {
				next = -1
				break
			}
			next = r.max + 1
		}
		if next != -1 {
			fill(next, -1)
		}
		out = append(out, merged(col)...)
	}
	return out, nil
}

// names reports whether the space pins or searches variable name.
func (e Export) names(name string) bool {
	_, pinned := e.Space.Fixed[name]
	return pinned || slices.ContainsFunc(e.Space.Params, func(p space.Param) bool { return p.Variable() == name })
}

// jobEnvFile is the env file of a job that runs with a tuner plugin: the
// job's environment, and the plugin's variables, which the space must not set.
func (e Export) jobEnvFile(name, what string, env []string, plugin ...[2]string) (file, error) {
	var b strings.Builder
	b.WriteString(comment(append(e.header("nccltune: the environment of one job, with "+what), "use: . ./"+name), "# "))
	env = slices.Clip(env) // the caller's, appended to
	for _, kv := range plugin {
		if e.names(kv[0]) {
			return file{}, fmt.Errorf("the campaign's space sets %s, which every trial ran with, and this file sets it for the tuner plugin it loads: one job loads one tuner plugin; export each range's env file instead (--format env)", kv[0])
		}
		env = append(env, kv[0]+"="+kv[1])
	}
	if err := e.writeSourced(&b, env); err != nil {
		return file{}, err
	}
	return file{name, b.String(), 0o644}, nil
}
