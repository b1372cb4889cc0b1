package doctor

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// GPU is one line of nvidia-smi --query-gpu=index,name,pci.bus_id,memory.total,driver_version,mig.mode.current --format=csv.
type GPU struct {
	Index          int
	Name, BusID    string
	Memory, Driver string
	MIG            string // Enabled, Disabled, [N/A]; "" where not asked for
}

// ParseNvidiaSMI reads nvidia-smi's CSV query output (with or without its
// header). nvidia-smi quotes nothing and its fields hold no commas, so a line
// is its fields split at commas; a CSV reader would stop at a stray quote in
// one GPU's name and drop every GPU.
func ParseNvidiaSMI(out string) []GPU {
	var gpus []GPU
	for _, line := range strings.Split(out, "\n") {
		rec := strings.Split(line, ",")
		for i := range rec {
			rec[i] = strings.TrimSpace(rec[i])
		}
		if len(rec) < 5 {
			continue
		}
		i, err := strconv.Atoi(rec[0])
		if err != nil {
			continue // the header
		}
		g := GPU{Index: i, Name: rec[1], BusID: rec[2], Memory: rec[3], Driver: rec[4]}
		if len(rec) > 5 {
			g.MIG = rec[5]
		}
		gpus = append(gpus, g)
	}
	return gpus
}

// Port is one port of one HCA, from ibstat.
type Port struct {
	CA, State, Rate, LinkLayer string
	Num                        int
}

// Active reports whether the port is up.
func (p Port) Active() bool { return p.State == "Active" }

// ParseIbstat reads ibstat's output: "CA 'mlx5_0'" blocks with "Port N:" sections.
func ParseIbstat(out string) []Port {
	var ports []Port
	ca := ""
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(strings.TrimLeft(line, "│ \t"))
		switch {
		case strings.HasPrefix(line, "CA '"):
			ca = strings.Trim(strings.TrimPrefix(line, "CA "), "'")
		case strings.HasPrefix(line, "Port ") && strings.HasSuffix(line, ":"):
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(line, "Port "), ":"))
			ports = append(ports, Port{CA: ca, Num: n})
		case len(ports) > 0:
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			p := &ports[len(ports)-1]
			switch strings.TrimSpace(k) {
			case "State":
				p.State = strings.TrimSpace(v)
			case "Rate":
				p.Rate = strings.TrimSpace(v)
			case "Link layer":
				p.LinkLayer = strings.TrimSpace(v)
			}
		}
	}
	return ports
}

// ReadPorts reads the ports under root/sys/class/infiniband (root "" is the
// real one) as ibstat names their state and rate: "4: ACTIVE" is Active,
// "400 Gb/sec (4X NDR)" is 400. Like ibstat, it passes over devices that are
// no InfiniBand or RoCE HCA, switch or router (node_type 1 to 3): an iWARP
// RNIC (4) or a usNIC.
func ReadPorts(root string) []Port {
	var ports []Port
	dirs, _ := filepath.Glob(filepath.Join(root, "sys/class/infiniband/*/ports/*"))
	for _, dir := range dirs {
		num, err := strconv.Atoi(filepath.Base(dir))
		if err != nil || !ibType(filepath.Dir(filepath.Dir(dir))) {
			continue
		}
		attr := func(name string) string {
			data, _ := os.ReadFile(filepath.Join(dir, name))
			return strings.TrimSpace(string(data))
		}
		_, state, _ := strings.Cut(attr("state"), ": ")
		rate, _, _ := strings.Cut(attr("rate"), " ")
		if state != "" {
			state = state[:1] + strings.ToLower(state[1:])
		}
		ports = append(ports, Port{CA: filepath.Base(filepath.Dir(filepath.Dir(dir))), Num: num, State: state, Rate: rate, LinkLayer: attr("link_layer")})
	}
	return ports
}

// ibType reports whether the device at dev is of a type ibstat lists: its
// node_type ("1: CA") 1 to 3, or unread.
func ibType(dev string) bool {
	data, err := os.ReadFile(filepath.Join(dev, "node_type"))
	if err != nil {
		return true
	}
	n, _, _ := strings.Cut(strings.TrimSpace(string(data)), ":")
	t, err := strconv.Atoi(n)
	return err != nil || t >= 1 && t <= 3
}

// GID is one entry of a RoCE port's GID table, from sysfs.
type GID struct {
	CA    string
	Port  int
	Index int
	GID   string
	Type  string // "RoCE v2", "IB/RoCE v1"
}

// IPv4 reports whether the GID maps an IPv4 address (::ffff:a.b.c.d).
func (g GID) IPv4() bool { return strings.HasPrefix(g.GID, "0000:0000:0000:0000:0000:ffff:") }

// ReadGIDs reads the GID tables under root/sys/class/infiniband (root "" is the real one).
func ReadGIDs(root string) []GID {
	var out []GID
	ports, _ := filepath.Glob(filepath.Join(root, "sys/class/infiniband/*/ports/*"))
	for _, pdir := range ports {
		ca := filepath.Base(filepath.Dir(filepath.Dir(pdir)))
		port, _ := strconv.Atoi(filepath.Base(pdir))
		types, _ := filepath.Glob(filepath.Join(pdir, "gid_attrs/types/*"))
		for _, tpath := range types {
			idx, err := strconv.Atoi(filepath.Base(tpath))
			if err != nil {
				continue
			}
			typ, err1 := os.ReadFile(tpath)
			gid, err2 := os.ReadFile(filepath.Join(pdir, "gids", filepath.Base(tpath)))
			g := strings.TrimSpace(string(gid))
			if err1 != nil || err2 != nil || g == "" || strings.Trim(g, "0:") == "" {
				continue // unreadable or unused entry
			}
			out = append(out, GID{CA: ca, Port: port, Index: idx, GID: g, Type: strings.TrimSpace(string(typ))})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.CA != b.CA {
			return a.CA < b.CA
		}
		if a.Port != b.Port {
			return a.Port < b.Port
		}
		return a.Index < b.Index
	})
	return out
}

// GIDKind is what NCCL 2.21 and later look for in a RoCE port's GID table
// when NCCL_IB_GID_INDEX is unset: an address of a family
// (NCCL_IB_ADDR_FAMILY, AF_INET by default) and a RoCE version
// (NCCL_IB_ROCE_VERSION_NUM, 2 by default).
type GIDKind struct {
	IPv6    bool
	Version int
	// Range is NCCL_IB_ADDR_RANGE as NCCL reads it (ParseAddrRange): the
	// addresses to take a GID of; the zero AddrRange takes any.
	Range AddrRange
}

func (k GIDKind) String() string {
	family := "IPv4"
	if k.IPv6 {
		family = "IPv6"
	}
	if k.Range.Set() {
		family += " in " + k.Range.String()
	}
	return fmt.Sprintf("RoCE v%d with %s", k.Version, family)
}

// routable reports whether g is of k's RoCE version and no IPv6
// link-local GID (fe80::/64), which is no routable address.
func (k GIDKind) routable(g GID) bool {
	version := map[string]int{"RoCE v2": 2, "RoCE v1": 1, "IB/RoCE v1": 1}[g.Type]
	return version == k.Version && !strings.HasPrefix(g.GID, "fe80:0000:0000:0000:")
}

// matches reports whether g is of kind k: routable, of its family, in its range.
func (k GIDKind) matches(g GID) bool {
	if !k.routable(g) || g.IPv4() == k.IPv6 {
		return false
	}
	addr, err := netip.ParseAddr(g.GID)
	return !k.Range.Set() || err == nil && k.Range.Contains(addr.Unmap())
}

// AddrRange is NCCL_IB_ADDR_RANGE as NCCL reads it: an address and a mask
// length. The zero AddrRange, a range NCCL filters by nothing, holds every
// address.
type AddrRange struct {
	Addr netip.Addr
	Bits int // negative: NCCL compares no bit, and takes that for a mismatch
}

// Set reports whether NCCL filters by r.
func (r AddrRange) Set() bool { return r.Addr.IsValid() }

func (r AddrRange) String() string { return fmt.Sprintf("%s/%d", r.Addr, r.Bits) }

// Contains reports whether NCCL finds a (of r's family) in r.
func (r AddrRange) Contains(a netip.Addr) bool {
	switch {
	case !r.Set():
		return true
	case r.Bits < 0:
		return false
	}
	return netip.PrefixFrom(r.Addr, r.Bits).Contains(a)
}

// ParseAddrRange reads NCCL_IB_ADDR_RANGE as NCCL does: an address of the
// family asked for, a slash and a mask length, read as (int)strtol(mask,
// NULL, 10). NCCL filters by nothing it cannot read so (the zero AddrRange):
// no mask, an address of the other family, a mask beyond the address's
// bits, or one of 0 (no digits are 0).
func ParseAddrRange(v string, ipv6 bool) AddrRange {
	a, mask, found := strings.Cut(v, "/")
	addr, err := netip.ParseAddr(a)
	if !found || err != nil || addr.Is4() == ipv6 || addr.Zone() != "" { // inet_pton takes no zone
		return AddrRange{}
	}
	bits := strtolInt(mask)
	if bits == 0 || bits > addr.BitLen() {
		return AddrRange{}
	}
	return AddrRange{addr, bits}
}

// strtolInt is C's (int)strtol(s, NULL, 10): the digits after white space
// and a sign (0 where there are none), clamped to a long's range, then cut
// to an int's 32 bits.
func strtolInt(s string) int {
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	sign := ""
	if s != "" && (s[0] == '+' || s[0] == '-') {
		sign, s = s[:1], s[1:]
	}
	// Out of range, ParseInt returns the bound of the sign, as strtol does.
	n, _ := strconv.ParseInt(sign+s[:len(s)-len(strings.TrimLeft(s, "0123456789"))], 10, 64)
	return int(int32(n))
}

// SuggestGIDIndex picks the index of one port's GID table that NCCL picks
// itself: the first entry of kind k. ok is false where there is none: NCCL
// then falls back to another version, family or a link-local GID.
func SuggestGIDIndex(gids []GID, k GIDKind) (int, bool) {
	for _, g := range gids {
		if k.matches(g) {
			return g.Index, true
		}
	}
	return -1, false
}

// Modules reads /proc/modules (or lsmod's output) into the modules it
// lists, each true where it is loaded: /proc/modules's fifth field is its
// state, and one "Loading" or "Unloading" (rmmod waiting on its users, an
// exit that hangs) is not loaded yet or any more. lsmod's lines have no state.
func Modules(out string) map[string]bool {
	mods := map[string]bool{}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] != "Module" {
			mods[f[0]] = len(f) < 5 || f[4] == "Live"
		}
	}
	return mods
}

// MemlockLimits reads the soft and hard "Max locked memory" limits from
// /proc/self/limits ("unlimited" or bytes); ok is false when it has none.
func MemlockLimits(out string) (soft, hard string, ok bool) {
	for _, line := range strings.Split(out, "\n") {
		if rest, found := strings.CutPrefix(line, "Max locked memory"); found {
			if f := strings.Fields(rest); len(f) >= 2 {
				return f[0], f[1], true
			}
		}
	}
	return "", "", false
}

// OMPICUDA reads `ompi_info --parsable --all` and says whether Open MPI was
// built with CUDA support; known is false when the output does not say.
func OMPICUDA(out string) (cuda, known bool) {
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, ompiCUDA) {
			return strings.HasSuffix(strings.TrimSpace(line), ":true"), true
		}
	}
	return false, false
}
