package space

import (
	"maps"
	"slices"
	"strconv"
)

// fabricRemedies are the usual cures for NCCL's silent slow paths, each a
// value practitioners set first (NCCL's env.rst and NIC vendors' guides).
var fabricRemedies = map[string]string{
	// GPUDirect RDMA also where the NIC sits behind the CPU's root complex,
	// which NCCL's default level (PXB) leaves to host-memory staging.
	"NCCL_NET_GDR_LEVEL": "SYS",
	// The RoCE v2 over IPv4 entry of an NVIDIA NIC's usual GID table (show_gids).
	"NCCL_IB_GID_INDEX": "3",
	// Several queue pairs per connection, so that ECMP spreads a connection
	// over the fabric's paths instead of hashing it onto one.
	"NCCL_IB_QPS_PER_CONNECTION": "4",
	// env.rst: "for generic 100G networks, this value can be manually set to 4" (both).
	"NCCL_SOCKET_NTHREADS":  "4",
	"NCCL_NSOCKS_PERTHREAD": "4",
}

// regimes are what experts try per message-size regime, on top of the fabric remedies.
var regimes = []map[string]string{
	{}, // the remedies alone: NCCL still chooses algorithm and protocol per size
	// The ring at every size, the most common override: NCCL's model often
	// overrates the tree across nodes. NCCL still chooses the protocol.
	{"NCCL_ALGO": "Ring"},
	// Large messages: the bandwidth-optimal ring, the Simple protocol, bigger
	// pipeline buffers and every channel the hardware has.
	{"NCCL_ALGO": "Ring", "NCCL_PROTO": "Simple", "NCCL_BUFFSIZE": "16M", "NCCL_MIN_CTAS": "32"},
	// Small messages: the latency-optimal tree and the LL protocol.
	{"NCCL_ALGO": "Tree", "NCCL_PROTO": "LL"},
}

// WarmStart returns the known-good configurations to try right after NCCL's
// defaults, as in Optuna's enqueue_trial: the fabric remedies alone, and with
// each regime's settings, restricted to what the space searches (a value the
// space does not offer is left to NCCL). Configurations that come out the same
// or equal to the defaults, that the space's constraints reject, or that would
// leave a categorical parameter without "default" unset are dropped.
func (s *Space) WarmStart() []Assignment {
	var out []Assignment
	for _, regime := range regimes {
		want := maps.Clone(fabricRemedies)
		maps.Copy(want, regime)
		a, complete := Assignment{}, true
		for _, p := range s.Params {
			if !s.Active(p, a) {
				continue
			}
			if v, ok := s.offered(p, want[p.Name]); ok {
				a[p.Name] = v
			} else if slices.Contains(p.Values, Unset) {
				a[p.Name] = Unset
			} else if p.Categorical() {
				complete = false // the space wants a value here that no expert gave
			}
		}
		if !complete || len(s.Env(a)) == len(s.Env(nil)) || s.Check(a) != nil ||
			slices.ContainsFunc(out, func(b Assignment) bool { return maps.Equal(a, b) }) {
			continue
		}
		out = append(out, a)
	}
	return out
}

// offered returns value as p's space writes it, if p can take it.
func (s *Space) offered(p Param, value string) (string, bool) {
	if value == "" {
		return "", false
	}
	v, err := Lookup(p.Name)
	if err != nil {
		return "", false
	}
	if value, err = v.Normalize(value); err != nil {
		return "", false
	}
	if p.Categorical() {
		return value, slices.Contains(p.Values, value)
	}
	n, err := strconv.ParseInt(value, 10, 64)
	return value, err == nil && n >= p.Min && n <= p.Max
}
