package tuner

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/nccltune/nccltune/runner/ddp"
	"github.com/nccltune/nccltune/runner/nccllog"
	"github.com/nccltune/nccltune/runner/nccltests"
)

// Fingerprint says what a result was measured on; every exported file names it,
// since settings tuned for one fabric and scale may be wrong on another.
type Fingerprint struct {
	NCCL        string `json:"nccl_version,omitempty"`
	GPU         string `json:"gpu,omitempty"`
	Nodes       int    `json:"nodes"`
	GPUsPerNode int    `json:"gpus_per_node"`
	Ranks       int    `json:"ranks"`
	Network     string `json:"network,omitempty"`
	GDR         bool   `json:"gdr"`
}

// FingerprintOf reads a fingerprint from one trial's captured output.
func FingerprintOf(output []byte) Fingerprint {
	rep, _ := nccltests.Parse(bytes.NewReader(output))
	log := nccllog.Parse(output)
	f := Fingerprint{NCCL: log.Version, Network: log.Network, GDR: log.GDR, Ranks: len(rep.Devices)}
	var hosts []string
	for _, d := range rep.Devices {
		if !slices.Contains(hosts, d.Host) {
			hosts = append(hosts, d.Host)
		}
		if f.GPU == "" {
			f.GPU = d.GPU
		}
	}
	if r, err := ddp.Parse(output); err == nil && f.Ranks == 0 {
		f.Ranks = r.World // the DDP step names no hosts
	}
	f.Nodes = len(hosts)
	if f.Nodes > 0 {
		f.GPUsPerNode = f.Ranks / f.Nodes
	}
	return f
}

func (f Fingerprint) String() string {
	var parts []string
	if f.NCCL != "" {
		parts = append(parts, "NCCL "+f.NCCL)
	}
	switch {
	case f.Nodes > 0:
		parts = append(parts, fmt.Sprintf("%d node(s) x %d %s", f.Nodes, f.GPUsPerNode, orUnknown(f.GPU)))
	case f.Ranks > 0:
		parts = append(parts, fmt.Sprintf("%d ranks", f.Ranks))
	}
	if f.Network != "" {
		gdr := "off"
		if f.GDR {
			gdr = "on"
		}
		parts = append(parts, "under NCCL's defaults network "+f.Network+" with GPUDirect RDMA "+gdr)
	}
	if len(parts) == 0 {
		return "unknown (no trial output to read it from)"
	}
	return strings.Join(parts, ", ")
}

func orUnknown(s string) string {
	if s == "" {
		return "GPU(s)"
	}
	return s
}
