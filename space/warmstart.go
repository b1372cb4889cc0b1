package space

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/nccltune/nccltune/internal/text"
)

// Fabric is what NCCL reported about the network when it ran with its
// defaults (the tuner reads it from NCCL's log), so that only the remedies
// that apply are tried.
type Fabric struct {
	Known   bool   // false: nothing was reported, so every remedy is tried
	Network string // "" (a single node), "IB", "Socket" or a plugin's name
	RoCE    bool   // the IB verbs ports have an Ethernet link layer
	GDR     bool   // GPUDirect RDMA was in use
}

// tip is a set of values practitioners try (NCCL's env.rst, NIC vendors'
// guides), and the fabrics it is for.
type tip struct {
	vars    map[string]string
	applies func(Fabric) bool
}

func always(Fabric) bool      { return true }
func onSockets(f Fabric) bool { return f.Network == "Socket" }

// remedies are the usual cures for NCCL's silent slow paths: where one
// applies, every configuration of the warm start carries it.
var remedies = []tip{{
	// GPUDirect RDMA also where the NIC sits behind the CPU's root complex,
	// which NCCL's default level (PXB) leaves to host-memory staging.
	map[string]string{"NCCL_NET_GDR_LEVEL": "SYS"},
	func(f Fabric) bool { return f.Network == "IB" && !f.GDR },
}, {
	// The RoCE v2 over IPv4 entry of an NVIDIA NIC's usual GID table
	// (show_gids), and several queue pairs per connection so that ECMP spreads
	// a connection over the fabric's paths instead of hashing it onto one.
	map[string]string{"NCCL_IB_GID_INDEX": "3", "NCCL_IB_QPS_PER_CONNECTION": "4"},
	func(f Fabric) bool { return f.RoCE },
}}

// sockets spreads the socket transport over more threads and connections:
// env.rst, "for generic 100G networks, this value can be manually set to 4"
// (both). It buys bandwidth at some latency, so it is an idea, not a remedy.
// fewerThreads is NCCL's own choice where it recognises the NIC as AWS's
// ENA (net_socket.cc: 2 threads of 8 sockets): as many connections on
// fewer threads, less latency for the same bandwidth.
var (
	sockets      = map[string]string{"NCCL_SOCKET_NTHREADS": "4", "NCCL_NSOCKS_PERTHREAD": "4"}
	fewerThreads = map[string]string{"NCCL_SOCKET_NTHREADS": "2", "NCCL_NSOCKS_PERTHREAD": "8"}
)

// wider is for large messages: bigger pipeline buffers and every channel;
// bandwidth is that on the bandwidth-optimal ring.
var (
	wider     = map[string]string{"NCCL_BUFFSIZE": "16M", "NCCL_MIN_CTAS": "32"}
	bandwidth = union(wider, map[string]string{"NCCL_ALGO": "Ring"})
)

// ideas are what experts try on top of the remedies, one idea each, those
// that only add bandwidth first, overrides of NCCL's per-size choices after.
var ideas = []tip{
	{map[string]string{}, always}, // the remedies alone: NCCL still chooses algorithm and protocol per size
	// More channels: more SMs moving data in parallel, for bandwidth-bound sizes.
	{map[string]string{"NCCL_MIN_CTAS": "32"}, always},
	{bandwidth, always},
	// The ring at every size, the most common override: NCCL's model often
	// overrates the tree across nodes.
	{map[string]string{"NCCL_ALGO": "Ring"}, always},
	// Small messages: the latency-optimal tree and the LL protocol.
	{map[string]string{"NCCL_ALGO": "Tree", "NCCL_PROTO": "LL"}, always},
	{sockets, onSockets},
	{union(sockets, bandwidth), onSockets},
	{fewerThreads, onSockets},
	{union(fewerThreads, bandwidth), onSockets},
	// The same with NCCL still choosing the algorithm per size: on sockets
	// the ring pinned at every size costs some sizes what the wider
	// pipeline buys (measured on both TCP scenarios, README).
	{union(sockets, wider), onSockets},
	{union(fewerThreads, wider), onSockets},
}

// union is a's values and b's, b's where both have one.
func union(a, b map[string]string) map[string]string {
	out := maps.Clone(a)
	maps.Copy(out, b)
	return out
}

// WarmStart returns the known-good configurations to try right after NCCL's
// defaults, as with Optuna's enqueue_trial: the remedies that apply to the
// fabric, alone and with each idea for it, restricted to what the space searches (a
// value the space does not offer is left to NCCL). Configurations that come
// out the same or equal to the defaults, that the space's constraints reject,
// or that would leave a categorical parameter without "default" unset are dropped.
func (s *Space) WarmStart(f Fabric) []Assignment {
	base := map[string]string{}
	for _, r := range remedies {
		if !f.Known || r.applies(f) {
			maps.Copy(base, r.vars)
		}
	}
	var out []Assignment
	for _, idea := range ideas {
		if f.Known && !idea.applies(f) {
			continue
		}
		want := union(base, idea.vars)
		values := map[string]string{}
		for _, p := range s.Params {
			if v, ok := s.offered(p, want[p.Variable()]); ok {
				values[p.Name] = v
			}
		}
		// A parameter that no expert gave a value and that has no "default" makes it incomplete.
		a, unset, _ := s.Complete(values)
		if len(unset) > 0 || len(s.Env(a)) == len(s.Env(nil)) || s.Check(a) != nil ||
			slices.ContainsFunc(out, func(b Assignment) bool { return maps.Equal(a, b) }) {
			continue
		}
		out = append(out, a)
	}
	return out
}

// Offers reports whether p can take the normalized value v.
func (p Param) Offers(v string) bool {
	if p.Categorical() {
		return slices.Contains(p.Values, v)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return err == nil && n >= p.Min && n <= p.Max
}

// ErrSplitOtherwise is a stored trial's part of NCCL_ALGO or NCCL_PROTO
// that the space's workload no longer gets: nccltune before 2026-12-06
// searched alltoall's and sendrecv's, which fail NCCL's init, and so split
// a workload of one other collective.
var ErrSplitOtherwise = errors.New("a part per collective that this nccltune no longer searches (NCCL takes none for alltoall or sendrecv): the campaign ran under an older nccltune; run it again")

// CheckOffered checks that an assignment, a stored trial's, sets only
// parameters the space searches, each to a value it offers: a store is no
// authority on what runs or is exported, and one edited could otherwise
// name any variable (NCCL_NET_PLUGIN, which loads code) or value.
func (s *Space) CheckOffered(a Assignment) error {
	for _, name := range slices.Sorted(maps.Keys(a)) { // one message for one store
		v := a[name]
		k := slices.IndexFunc(s.Params, func(p Param) bool { return p.Name == name })
		if variable, _, part := strings.Cut(name, "["); k < 0 && part && slices.Contains(PerCollective, variable) {
			return fmt.Errorf("sets %s, %w", text.Clean(name), ErrSplitOtherwise)
		}
		if k < 0 {
			return fmt.Errorf("sets %s, which the space does not search", text.Clean(name))
		}
		if v != Unset && !s.Params[k].Offers(v) && isPath(varPath(s.Params[k].Variable()), v) {
			return fmt.Errorf("sets %s=%s, %w", name, text.Clean(v), ErrPathElsewhere)
		}
		if v != Unset && !s.Params[k].Offers(v) {
			return fmt.Errorf("sets %s=%s, which the space does not offer", name, text.Clean(v))
		}
	}
	return nil
}

// offered returns value as p's space writes it, if p can take it.
func (s *Space) offered(p Param, value string) (string, bool) {
	if value == "" {
		return "", false
	}
	v, err := Lookup(p.Variable())
	if err != nil {
		return "", false
	}
	if value, err = v.Normalize(value); err != nil {
		return "", false
	}
	return p.listed(value)
}

// listed returns v as p lists it, if p offers it: a list NCCL reads as a
// set ("LL128,LL" of NCCL_PROTO) is the listed value in another order or
// with a repeat, which NCCL runs alike.
func (p Param) listed(v string) (string, bool) { return p.lister()(v) }

// lister is listed for many values: p's values indexed once, as a
// condition or the [[try_first]] tables may name hundreds of thousands.
func (p Param) lister() func(v string) (string, bool) {
	if !p.Categorical() {
		return func(v string) (string, bool) { return v, p.Offers(v) }
	}
	cat, _ := Lookup(p.Variable())
	exact, alike := map[string]bool{}, map[string]string{}
	for _, w := range p.Values {
		exact[w] = true
		if _, ok := alike[cat.reads(w)]; !ok {
			alike[cat.reads(w)] = w
		}
	}
	return func(v string) (string, bool) {
		if exact[v] {
			return v, true
		}
		w, ok := alike[cat.reads(v)]
		return w, ok
	}
}
