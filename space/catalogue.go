package space

import (
	"fmt"
	"maps"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/nccltune/nccltune/internal/text"
)

// Kind says how NCCL reads a variable's value.
type Kind int

const (
	KindString Kind = iota // free text (interface names, plugin names, file paths)
	KindBool               // 0 or 1
	KindInt                // decimal integer within [Min, Max]
	KindBytes              // byte count; "4M" in space.toml is written out as 4194304
	KindEnum               // one of Values
	KindLevel              // a topology level (LOC, PIX, ...) or its integer
	KindList               // NCCL_ALGO / NCCL_PROTO syntax: "a,b", "^a", "allreduce:a;allgather:b"
)

// Var is one NCCL environment variable as the catalogue knows it.
type Var struct {
	Name   string
	Kind   Kind
	Values []string // legal tokens for KindEnum, KindLevel and KindList
	Min    int64    // for KindInt and KindBytes
	Max    int64    // for KindInt and KindBytes; 0 means no upper bound
	// Exact is set for a KindEnum whose names NCCL compares as written
	// (strcmp), not in any case.
	Exact bool
	// Gone is set for variables NCCL no longer reads; old tuning guides still quote them.
	Gone string
	// Instead names the variable that replaced a deprecated one (still read by NCCL).
	Instead string
	// Pow2 is set for an integer NCCL rounds up to a power of two before
	// use, so that 3 and 4 are one setting to it.
	Pow2 bool
	// Flag, for a DDP knob, is the DDP step script's option that takes it:
	// it is passed as an argument, not through the environment.
	Flag string
	// Default is the value NCCL takes when the variable is unset, where
	// that is one value whatever the system, the application and the
	// release (NCCL_PARAM defaults, 2.18 to 2.29): set to it, the variable
	// runs as left out. "" where NCCL chooses (by topology, NIC, CPU or
	// version) or the application may: NCCL_MIN_CTAS overrides the minCTAs
	// of an application's ncclConfig_t (Megatron-LM's communicator
	// configs), and NCCL 2.18 takes 1 MiB buffers on ARM, not 4 MiB. A DDP
	// knob's is DDP's, which the step script takes when not given the option.
	Default string
}

// IsArg reports whether the variable is a DDP knob passed to the script.
func (v Var) IsArg() bool { return v.Flag != "" }

var (
	algoNames  = []string{"Ring", "Tree", "CollnetDirect", "CollnetChain", "NVLS", "NVLSTree", "PAT"}
	protoNames = []string{"LL", "LL128", "Simple"}
	// levelNames are the names NCCL reads a level as (ncclGetLevel: its
	// path types up to SYS, topoPathTypeStr; C2C and P2C are recent
	// versions', which older ones ignore as no level).
	levelNames = []string{"LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS"}
	// oldLevels are the levels NCCL reads an integer as (its
	// levelsOldToNew): 4 and 5 are both SYS, and any above 5 is 5.
	oldLevels = []string{"LOC", "PIX", "PXB", "PHB", "SYS", "SYS"}
	// collNames are the per-collective prefixes NCCL_ALGO/NCCL_PROTO accept
	// since NCCL 2.24: its ncclFuncStr, of NCCL_NUM_FUNCTIONS (5); any other
	// fails the communicator's init. The loader took p2pNames too, which
	// stored spaces keep (refuse).
	collNames = []string{"allreduce", "allgather", "reducescatter", "broadcast", "reduce"}
	p2pNames  = []string{"sendrecv", "send", "recv", "alltoall"}
)

// catalogue lists the NCCL variables nccltune knows (NCCL 2.28 documentation, env.rst).
var catalogue = indexVars([]Var{
	{Name: "NCCL_ALGO", Kind: KindList, Values: algoNames},
	{Name: "NCCL_PROTO", Kind: KindList, Values: protoNames},
	{Name: "NCCL_MIN_CTAS", Kind: KindInt, Min: 1, Max: 64},
	{Name: "NCCL_MAX_CTAS", Kind: KindInt, Min: 1, Max: 64},
	{Name: "NCCL_MIN_NCHANNELS", Kind: KindInt, Min: 1, Max: 64, Instead: "NCCL_MIN_CTAS"},
	{Name: "NCCL_MAX_NCHANNELS", Kind: KindInt, Min: 1, Max: 64, Instead: "NCCL_MAX_CTAS"},
	{Name: "NCCL_NCHANNELS_PER_NET_PEER", Kind: KindInt, Min: 1, Max: 64},
	// ncclTopoComputeP2pChannels rounds the P2P channels they bound up to a power of two.
	{Name: "NCCL_MIN_P2P_NCHANNELS", Kind: KindInt, Min: 1, Max: 64, Pow2: true},
	{Name: "NCCL_MAX_P2P_NCHANNELS", Kind: KindInt, Min: 1, Max: 64, Pow2: true},
	{Name: "NCCL_BUFFSIZE", Kind: KindBytes, Min: 1 << 12, Max: 1 << 30},
	{Name: "NCCL_NTHREADS", Kind: KindEnum, Values: nthreads()},
	{Name: "NCCL_CUMEM_ENABLE", Kind: KindBool},
	{Name: "NCCL_NVLS_ENABLE", Kind: KindBool},
	{Name: "NCCL_COLLNET_ENABLE", Kind: KindBool},
	{Name: "NCCL_P2P_DISABLE", Kind: KindBool},
	{Name: "NCCL_SHM_DISABLE", Kind: KindBool, Default: "0"},
	{Name: "NCCL_P2P_LEVEL", Kind: KindLevel, Values: levelNames},
	{Name: "NCCL_P2P_NET_CHUNKSIZE", Kind: KindBytes, Min: 1 << 10, Max: 1 << 30},
	{Name: "NCCL_P2P_NVL_CHUNKSIZE", Kind: KindBytes, Min: 1 << 10, Max: 1 << 30},
	{Name: "NCCL_P2P_PCI_CHUNKSIZE", Kind: KindBytes, Min: 1 << 10, Max: 1 << 30},
	{Name: "NCCL_PXN_DISABLE", Kind: KindBool, Default: "0"},
	{Name: "NCCL_NET", Kind: KindString},
	{Name: "NCCL_NET_PLUGIN", Kind: KindString},
	{Name: "NCCL_NET_GDR_LEVEL", Kind: KindLevel, Values: levelNames},
	{Name: "NCCL_IB_GDR_LEVEL", Kind: KindLevel, Values: levelNames, Gone: "renamed NCCL_NET_GDR_LEVEL in NCCL 2.4, which reads it no more"},
	{Name: "NCCL_NET_GDR_READ", Kind: KindBool},
	{Name: "NCCL_NET_GDR_C2C", Kind: KindBool},
	{Name: "NCCL_NET_SHARED_BUFFERS", Kind: KindBool},
	{Name: "NCCL_IB_DISABLE", Kind: KindBool, Default: "0"},
	{Name: "NCCL_IB_HCA", Kind: KindString},
	{Name: "NCCL_IB_GID_INDEX", Kind: KindInt, Min: -1, Max: 255},
	{Name: "NCCL_IB_ROCE_VERSION_NUM", Kind: KindEnum, Values: []string{"1", "2"}},
	{Name: "NCCL_IB_ADDR_FAMILY", Kind: KindEnum, Values: []string{"AF_INET", "AF_INET6"}, Exact: true},
	{Name: "NCCL_IB_QPS_PER_CONNECTION", Kind: KindInt, Min: 1, Max: 128, Default: "1"},
	{Name: "NCCL_IB_SPLIT_DATA_ON_QPS", Kind: KindBool},
	{Name: "NCCL_IB_TIMEOUT", Kind: KindInt, Min: 1, Max: 31},
	{Name: "NCCL_IB_RETRY_CNT", Kind: KindInt, Min: 0, Max: 7, Default: "7"},
	{Name: "NCCL_IB_SL", Kind: KindInt, Min: 0, Max: 15},
	{Name: "NCCL_IB_TC", Kind: KindInt, Min: 0, Max: 255},
	{Name: "NCCL_IB_PCI_RELAXED_ORDERING", Kind: KindEnum, Values: []string{"0", "1", "2"}},
	{Name: "NCCL_IB_ADAPTIVE_ROUTING", Kind: KindBool},
	{Name: "NCCL_IB_ECE_ENABLE", Kind: KindBool},
	{Name: "NCCL_IB_MERGE_NICS", Kind: KindBool},
	{Name: "NCCL_CROSS_NIC", Kind: KindEnum, Values: []string{"0", "1", "2"}, Default: "2"},
	{Name: "NCCL_SOCKET_IFNAME", Kind: KindString},
	{Name: "NCCL_SOCKET_FAMILY", Kind: KindEnum, Values: []string{"AF_INET", "AF_INET6"}, Exact: true},
	// 0 of either: no helper sockets, the control socket carries the data.
	{Name: "NCCL_SOCKET_NTHREADS", Kind: KindInt, Min: 0, Max: 16},
	{Name: "NCCL_NSOCKS_PERTHREAD", Kind: KindInt, Min: 0, Max: 64},
	{Name: "NCCL_LAUNCH_MODE", Kind: KindEnum, Values: []string{"PARALLEL", "GROUP"}},
	{Name: "NCCL_IGNORE_CPU_AFFINITY", Kind: KindBool},
	{Name: "NCCL_GRAPH_MIXING_SUPPORT", Kind: KindBool},
	{Name: "NCCL_CHECK_POINTERS", Kind: KindBool},
	{Name: "NCCL_COMM_BLOCKING", Kind: KindBool},
	{Name: "NCCL_TOPO_FILE", Kind: KindString},
	{Name: "NCCL_TOPO_DUMP_FILE", Kind: KindString},
	{Name: "NCCL_TUNER_PLUGIN", Kind: KindString},
	{Name: "NCCL_TUNER_CONFIG_FILE", Kind: KindString},
	{Name: "NCCL_DEBUG", Kind: KindEnum, Values: []string{"VERSION", "WARN", "INFO", "TRACE", "ABORT"}},
	{Name: "NCCL_DEBUG_SUBSYS", Kind: KindString},
	{Name: "NCCL_DEBUG_FILE", Kind: KindString},
	{Name: "NCCL_CONF_FILE", Kind: KindString},
	{Name: "NCCL_LL_THRESHOLD", Gone: "removed in NCCL 2.5; NCCL_PROTO selects protocols per size now"},
	{Name: "NCCL_TREE_THRESHOLD", Gone: "removed in NCCL 2.5; NCCL_ALGO selects algorithms per size now"},
})

// ddpKnobs are DistributedDataParallel's own communication settings,
// searchable beside NCCL's with benchmark kind "ddp".
var ddpKnobs = indexVars([]Var{
	{Name: "bucket_cap_mb", Kind: KindInt, Min: 1, Max: 4096, Flag: "--bucket-cap-mb", Default: "25"},
	{Name: "gradient_as_bucket_view", Kind: KindBool, Flag: "--gradient-as-bucket-view", Default: "0"},
	{Name: "static_graph", Kind: KindBool, Flag: "--static-graph", Default: "0"},
})

// nthreads are the values NCCL_NTHREADS takes: getNthreads (tuning.cc)
// takes a multiple of the warp (32) from two warps to 512, and replaces any
// other by its maximum or minimum.
func nthreads() []string {
	var vs []string
	for n := 64; n <= 512; n += 32 {
		vs = append(vs, strconv.Itoa(n))
	}
	return vs
}

func indexVars(vs []Var) map[string]Var {
	m := make(map[string]Var, len(vs))
	for _, v := range vs {
		m[v.Name] = v
	}
	return m
}

// Hazard says why a variable's value is more than a setting ("" if it is
// just one): it names code NCCL loads (a plugin), or a file NCCL reads or
// writes. Such a value is trusted only from the user's own space file, never
// from a store (see export). A variable the catalogue does not know is one.
func Hazard(name string) string {
	if _, ok := ddpKnobs[name]; ok {
		return ""
	}
	if _, ok := catalogue[name]; !ok {
		return "not a variable nccltune knows"
	}
	switch {
	case strings.HasSuffix(name, "_PLUGIN"):
		return "loads code"
	case strings.HasSuffix(name, "_FILE"):
		return "names a file NCCL reads or writes"
	}
	return ""
}

// Exportable is the space without the variables that have a Hazard, pinned
// or searched, and the names it left out: what an export may take from a
// store's copy of the space, which anyone who can write the store can edit.
func (s *Space) Exportable() (*Space, []string) {
	out := *s
	out.Fixed = map[string]string{}
	var left []string
	for name, v := range s.Fixed {
		if Hazard(name) != "" {
			left = append(left, name)
			continue
		}
		out.Fixed[name] = v
	}
	out.Params = nil
	for _, p := range s.Params {
		if Hazard(p.Variable()) != "" {
			left = append(left, p.Name)
			continue
		}
		out.Params = append(out.Params, p)
	}
	slices.Sort(left)
	return &out, left
}

// Lookup returns the catalogue's entry for name, or an error that suggests the
// nearest known name for a misspelt one and explains variables NCCL no longer
// reads (beside the entry, which a stored space may pin or search).
func Lookup(name string) (Var, error) {
	if v, ok := ddpKnobs[name]; ok {
		return v, nil
	}
	v, ok := catalogue[name]
	if !ok {
		if s := suggest(name); s != "" {
			return Var{}, fmt.Errorf("unknown NCCL variable %s; did you mean %s?", name, s)
		}
		return Var{}, fmt.Errorf("unknown NCCL variable %s", name)
	}
	if v.Gone != "" {
		return v, fmt.Errorf("%s is no longer read by NCCL (%s)", name, v.Gone)
	}
	return v, nil
}

// took reports whether v, a variable NCCL no longer reads, is one nccltune
// took (the catalogue reads its values), which a stored space may pin or
// search: its trials set it.
func (v Var) took() bool { return v.Gone != "" && v.Kind != KindString }

func suggest(name string) string {
	return text.Nearest(strings.ToUpper(name), slices.Collect(maps.Keys(catalogue)))
}

// MaxArgStrlen is the longest string, its NUL included, Linux passes to a
// program it starts, as an argument or as NAME=value (MAX_ARG_STRLEN, 32
// pages of 4 KiB): exec refuses a longer one with E2BIG.
const MaxArgStrlen = 32 * 4096

// Normalize checks value against the variable's legal values and returns the
// exact text NCCL should receive (a byte size such as "4M" becomes "4194304").
func (v Var) Normalize(value string) (string, error) {
	canon, err := v.read(value)
	if err == nil {
		err = v.refuse(value, canon)
	}
	if err != nil {
		return "", err
	}
	return canon, nil
}

// Given is Normalize for a value NCCL reads as given, not written in a
// space file (an env file's): a byte size's unit, the space file's
// notation, is refused where NCCL reads the number before it alone
// (strtoll stops at it: "4M" is 4 bytes to NCCL).
func (v Var) Given(value string) (string, error) {
	canon, err := v.Normalize(value)
	if err != nil || v.Kind != KindBytes {
		return canon, err
	}
	if n, _ := ParamInt(value); strconv.FormatInt(n, 10) != canon {
		return "", fmt.Errorf("%s: NCCL reads %q as %d, the number before its unit: write %s", v.Name, value, n, canon)
	}
	return canon, nil
}

// read is Normalize less refuse: the text NCCL receives for value, or an
// error where it can be given none.
func (v Var) read(value string) (string, error) {
	if n := len(v.Name) + 1 + len(value) + 1; n > MaxArgStrlen {
		return "", fmt.Errorf("%s: a value of %d bytes: Linux refuses to start a program with an environment string (NAME=value) over %d bytes (MAX_ARG_STRLEN), so every trial would fail to launch", v.Name, len(value), MaxArgStrlen)
	}
	// What export refuses to write, the loader refuses to run: a control
	// character, a line separator, or an invisible format character (a
	// bidirectional override, a zero-width space) that makes a value read
	// as another where it is shown.
	if strings.ContainsFunc(value, func(r rune) bool { return !unicode.IsGraphic(r) }) {
		return "", fmt.Errorf("%s: value %q holds a control or invisible character", v.Name, value)
	}
	switch v.Kind {
	case KindBool:
		if value != "0" && value != "1" {
			return "", fmt.Errorf("%s: %q is not 0 or 1%s", v.Name, value, v.ncclReads(value))
		}
	case KindInt:
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return "", fmt.Errorf("%s: %q is not an integer%s", v.Name, value, v.ncclReads(value))
		}
		if err := v.checkRange(n); err != nil {
			return "", err
		}
		// Written in decimal: "+7", "07" and "7" must be one value to
		// compare (misread refuses one NCCL reads as another number).
		return strconv.FormatInt(n, 10), nil
	case KindBytes:
		n, err := ParseSize(value)
		if err != nil {
			return "", fmt.Errorf("%s: %w%s", v.Name, err, v.ncclReads(value))
		}
		if err := v.checkRange(n); err != nil {
			return "", err
		}
		return strconv.FormatInt(n, 10), nil
	case KindEnum:
		if canon, ok := matchToken(value, v.Values); ok {
			return canon, nil
		}
		return "", fmt.Errorf("%s: %q is not one of %s%s", v.Name, value, strings.Join(v.Values, ", "), v.ncclReads(value))
	case KindLevel:
		if n, err := strconv.Atoi(value); err == nil && n >= 0 {
			// Written in decimal, as an integer is (misread refuses one
			// NCCL reads otherwise: "+1", "010").
			return strconv.Itoa(n), nil
		}
		if canon, ok := matchToken(value, v.Values); ok {
			return canon, nil
		}
		return "", fmt.Errorf("%s: %q is not one of %s or an integer level", v.Name, value, strings.Join(v.Values, ", "))
	case KindList:
		canon, err := canonicalList(value, v.Values)
		if err != nil {
			return "", fmt.Errorf("%s: %w", v.Name, err)
		}
		return canon, nil
	}
	return value, nil
}

// ParamInt reads value as NCCL reads an integer setting (NCCL_PARAM):
// strtoll(value, NULL, 0), which reads past leading blanks, in base 16
// after "0x" and 8 after a "0", up to the first character that is no digit
// of it ("0x10" is 16, "12 " 12, "true" 0). ok is false where NCCL keeps
// its default: the value is empty, or out of an int64's range.
func ParamInt(value string) (n int64, ok bool) {
	if value == "" {
		return 0, false
	}
	s := strings.TrimLeft(value, " \t\n\v\f\r")
	sign := ""
	if s != "" && (s[0] == '+' || s[0] == '-') {
		sign, s = s[:1], s[1:]
	}
	base := 10
	switch {
	case len(s) > 2 && s[0] == '0' && s[1]|0x20 == 'x' && digitOf(s[2], 16):
		base, s = 16, s[2:]
	case strings.HasPrefix(s, "0"):
		base = 8
	}
	end := 0
	for end < len(s) && digitOf(s[end], base) {
		end++
	}
	if end == 0 {
		return 0, true
	}
	n, err := strconv.ParseInt(sign+s[:end], base, 64)
	return n, err == nil // out of range, strtoll sets errno
}

// digitOf reports whether c is a digit of base (8, 10 or 16).
func digitOf(c byte, base int) bool {
	switch {
	case '0' <= c && c <= '9':
		return int(c-'0') < base
	case 'a' <= c|0x20 && c|0x20 <= 'f':
		return base == 16
	}
	return false
}

// ncclReads says, for a refusal of value, what NCCL reads it as where v is
// one of NCCL's integer settings (ParamInt): the same text in the job's own
// environment means that.
func (v Var) ncclReads(value string) string {
	switch {
	case v.IsArg():
		return ""
	case v.Kind == KindEnum:
		if _, err := strconv.Atoi(v.Values[0]); err != nil {
			return ""
		}
	case v.Kind != KindBool && v.Kind != KindInt && v.Kind != KindBytes:
		return ""
	}
	if n, ok := ParamInt(value); ok {
		return fmt.Sprintf(" (NCCL reads it as %d)", n)
	}
	return " (NCCL keeps its default for it: out of range)"
}

// refuse checks a value, as written (text) and normalized, that NCCL is
// given, but reads otherwise than written or fails each trial of: checks
// added since campaigns ran with such values, which their stored spaces
// keep (ParseStored).
func (v Var) refuse(text, value string) error {
	if err := v.misread(text, value); err != nil {
		return err
	}
	switch {
	case v.Name == "NCCL_SOCKET_IFNAME" && len(value) == 1:
		// NCCL takes the list only if longer (strlen > 1), and picks an
		// interface itself: "e" was no prefix to it. (Empty is unset.)
		return fmt.Errorf("%s: %q is one character, which NCCL reads as not set (it picks the interface itself): give a longer prefix or name", v.Name, value)
	case v.Name == "NCCL_SOCKET_IFNAME" || v.Name == "NCCL_IB_HCA":
		return v.ifList(value)
	case v.Kind == KindLevel:
		if n, err := strconv.Atoi(value); err == nil && n >= len(oldLevels) {
			return fmt.Errorf("%s: %d is above %d, NCCL's largest integer level (it reads any above as SYS, and one past a C int as another level)", v.Name, n, len(oldLevels)-1)
		}
	case v.Kind == KindList:
		if err := listRefused(value, v.Values); err != nil {
			return fmt.Errorf("%s: %w", v.Name, err)
		}
	}
	return nil
}

// misread refuses a value's text that NCCL would read otherwise than its
// normalized value: a name it compares as written (a level's, an Exact
// enum's) in another case; a name it compares ignoring the case of ASCII
// letters alone (strcasecmp) of a blank or a letter only Unicode folds so
// ("ſ" for "s"); an integer it reads as another number than nccltune's
// decimal: strtoll(text, NULL, 0), as NCCL reads each integer setting (and
// strtol a level's number), takes the digits after a leading 0 as octal,
// up to an 8 or 9 ("010" is 8, "08" is 0); and a level's number that does
// not start with a digit, which is none to NCCL.
func (v Var) misread(text, value string) error {
	switch v.Kind {
	case KindLevel:
		_, err := strconv.Atoi(text)
		if err != nil && text != value {
			return fmt.Errorf("%s: NCCL reads %q as no level (it compares a level's name as written) and picks the level itself: write %s", v.Name, text, value)
		}
		if err == nil && (text[0] < '0' || text[0] > '9') {
			return fmt.Errorf("%s: NCCL reads a level's number only where it starts with a digit: it ignores %q and picks the level itself", v.Name, text)
		}
	case KindEnum:
		if v.Exact && text != value {
			return fmt.Errorf("%s: NCCL reads %q as none of %s (it compares them as written): write %s", v.Name, text, strings.Join(v.Values, ", "), value)
		}
		fallthrough
	case KindList:
		if !equalFoldASCII(text, value) {
			return fmt.Errorf("%s: NCCL reads %q otherwise than %s: it compares each name byte by byte, ignoring the case of ASCII letters alone (a blank is part of a name), and fails on one it does not know", v.Name, text, value)
		}
		return nil
	case KindInt, KindBytes:
	default:
		return nil
	}
	// The number before a byte size's unit, which is the space file's.
	number := strings.TrimLeftFunc(text, unicode.IsSpace)
	number = strings.TrimRightFunc(number, func(r rune) bool { return r < '0' || r > '9' })
	decimal, err := strconv.ParseInt(number, 10, 64)
	if n, _ := ParamInt(number); err == nil && n != decimal {
		return fmt.Errorf("%s: NCCL reads %q as %d (a leading 0 makes it octal, which ends at an 8 or 9), nccltune as decimal: write it without the leading 0s", v.Name, text, n)
	}
	return nil
}

// equalFoldASCII reports whether a and b are equal but for the case of
// ASCII letters, as C's strcasecmp compares them.
func equalFoldASCII(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range len(a) {
		if lowerASCII(a[i]) != lowerASCII(b[i]) {
			return false
		}
	}
	return true
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// listRefused refuses a canonical list of which a part excludes every
// name: NCCL fails each collective it applies to ("no algorithm/protocol
// available"); or a part of a collective NCCL names no prefix of, which
// fails its init ("Unrecognized prefix token").
func listRefused(value string, tokens []string) error {
	for _, part := range strings.Split(value, ";") {
		coll, names, prefixed := strings.Cut(part, ":")
		if !prefixed {
			names = part
		} else if !slices.Contains(collNames, coll) {
			return fmt.Errorf("NCCL takes no prefix %q (only %s): it fails its init", coll, strings.Join(collNames, ", "))
		}
		if rest, ok := strings.CutPrefix(names, "^"); ok && !slices.ContainsFunc(tokens, func(t string) bool { return !slices.Contains(strings.Split(rest, ","), t) }) {
			return fmt.Errorf("%s excludes every one of %s, which leaves NCCL none to run", part, strings.Join(tokens, ", "))
		}
	}
	return nil
}

// ifList checks a list of interface or adapter names as NCCL reads it
// (parseStringList, after a leading ^ and =): it reads maxIfNames of them,
// copies each into 64 bytes without a check, and reads what follows a ':'
// as a port with atoi ("x" is 0, which no adapter has; an interface's port
// it ignores); a blank is part of a name. Since NCCL 2.30 a rail and a
// plane may follow ("mlx5_0:1:0:1"), which older versions skip, reading
// the port's leading digits.
func (v Var) ifList(value string) error {
	names := 0
	for _, entry := range strings.Split(strings.TrimPrefix(strings.TrimPrefix(value, "^"), "="), ",") {
		name, port, hasPort := strings.Cut(entry, ":")
		if name != "" {
			names++
		}
		port, _, _ = strings.Cut(port, ":")
		n, err := strconv.Atoi(port)
		switch {
		case len(name) >= 64:
			return fmt.Errorf("%s: name %.20s... is %d bytes: NCCL copies it into 64, its NUL included, and writes past them", v.Name, name, len(name))
		case strings.ContainsFunc(name, unicode.IsSpace):
			// Linux takes no blank in an interface's or an adapter's name.
			return fmt.Errorf("%s: name %q holds a blank, which no interface or adapter's name does: NCCL matches nothing by it (write the list without blanks)", v.Name, name)
		case hasPort && v.Name == "NCCL_IB_HCA" && (err != nil || n < 1 || strconv.Itoa(n) != port):
			return fmt.Errorf("%s: port %q of %s is no port number (1, 2, ...): NCCL reads its leading digits, and 0 matches no port", v.Name, port, name)
		case names > maxIfNames:
			reads := ""
			if v.Name == "NCCL_IB_HCA" {
				reads = " (before 2.19; 32 since)"
			}
			return fmt.Errorf("%s: more than %d names: NCCL reads the first %d%s and drops the rest, which neither match nor, after a ^, exclude", v.Name, maxIfNames, maxIfNames, reads)
		}
	}
	return nil
}

// maxIfNames is the most names of a list NCCL reads (MAX_IFS of
// NCCL_SOCKET_IFNAME; MAX_IB_DEVS of NCCL_IB_HCA, 32 since 2.19).
const maxIfNames = 16

// integers checks that every integer of [min, max], each a value of v,
// is one, as a range searches them all: not so an enum's gaps
// (NCCL_NTHREADS = 65, which NCCL replaces by its maximum) or a string's
// integers (NCCL_SOCKET_IFNAME = 3, an interface no host has).
func (v Var) integers(min, max int64) error {
	switch v.Kind {
	case KindInt, KindBytes, KindLevel:
		return nil // every integer between two values is one
	case KindString:
		return fmt.Errorf("%s takes text, not integers", v.Name)
	}
	// An enum or a bool: one of its few values fails first.
	for n := min; n <= max; n++ {
		if _, err := v.Normalize(strconv.FormatInt(n, 10)); err != nil {
			return err
		}
	}
	return nil
}

// Alike reports whether NCCL reads two normalized values of v alike: a
// list names the set it enables (of algorithms, of protocols, per
// collective), so its order, its repeats and a '^' are no difference; a
// Pow2 integer is the power of two it is rounded up to.
func (v Var) Alike(a, b string) bool { return v.reads(a) == v.reads(b) }

// reads is what NCCL reads a normalized value of v as: values are Alike
// where it is the same, so that it can key a map of them.
func (v Var) reads(value string) string {
	switch v.Kind {
	case KindInt:
		if n, err := strconv.ParseInt(value, 10, 64); err == nil && v.Pow2 && n > 0 {
			return strconv.FormatUint(1<<bits.Len64(uint64(n-1)), 10)
		}
	case KindList:
		return listSet(value, v.Values)
	case KindLevel:
		// NCCL reads the number into a C int (strtol's long cut to its
		// low 32 bits: 2^32 is 0), any above 5 as 5; a negative int it
		// reads past its table, as no level of it.
		if n, err := strconv.ParseInt(value, 10, 64); err == nil && int32(n) >= 0 {
			return oldLevels[min(int(int32(n)), len(oldLevels)-1)]
		}
	}
	return value
}

// listSet is what NCCL enables of a canonical list (enabledSets), each
// collective's names joined, "" for one no part names. A prefix NCCL fails
// its init on (a stored space's) leaves the value as it is.
func listSet(value string, tokens []string) string {
	sets, ok := enabledSets(value, tokens)
	if !ok {
		return value
	}
	out := make([]string, len(collNames))
	for i, set := range sets {
		if set != nil {
			out[i] = collNames[i] + ":" + strings.Join(set, ",")
		}
	}
	return strings.Join(out, ";")
}

// enabledSets is, per collective of collNames, the names NCCL enables of
// a canonical list: as its parseList reads the parts in turn, each sets
// every collective it names (each, without a prefix) to its names, or to
// all but them after a '^', replacing what a part before set. A collective
// no part names is nil: it keeps NCCL's own choice. ok is false for a
// prefix NCCL fails its init on (a stored space's).
func enabledSets(value string, tokens []string) (sets [][]string, ok bool) {
	sets = make([][]string, len(collNames))
	for _, part := range strings.Split(value, ";") {
		coll, names, prefixed := strings.Cut(part, ":")
		if !prefixed {
			names = part
		} else if !slices.Contains(collNames, coll) {
			return nil, false
		}
		rest, exclude := strings.CutPrefix(names, "^")
		listed := strings.Split(rest, ",")
		set := []string{} // named, if to none
		for _, t := range tokens {
			if slices.Contains(listed, t) != exclude {
				set = append(set, t)
			}
		}
		for i, c := range collNames {
			if !prefixed || c == coll {
				sets[i] = set
			}
		}
	}
	return sets, true
}

// algosOf are the algorithms NCCL implements for each collective
// (algos_of_coll in its src/device/generate.py, 2.24 to 2.30); any but
// Ring and Tree with the Simple protocol alone.
var algosOf = map[string][]string{
	"allreduce":     {"Tree", "Ring", "CollnetDirect", "CollnetChain", "NVLS", "NVLSTree"},
	"allgather":     {"Ring", "CollnetDirect", "NVLS", "PAT"},
	"reducescatter": {"Ring", "CollnetDirect", "NVLS", "PAT"},
	"broadcast":     {"Ring"},
	"reduce":        {"Ring"},
}

// implemented reports whether NCCL_ALGO and NCCL_PROTO (normalized, "" where
// unset) leave collective coll (of collNames) an algorithm and protocol NCCL
// implements for it: since 2.24 it fails each call they leave none ("no
// algorithm/protocol available"), as 2.18 did; 2.19 to 2.23 ran Ring instead.
func implemented(coll, algo, proto string) bool {
	i := slices.Index(collNames, coll)
	algos, protos := enabledFor(i, algo, algoNames), enabledFor(i, proto, protoNames)
	for _, a := range algos {
		for _, p := range protos {
			if slices.Contains(algosOf[coll], a) && (a == "Ring" || a == "Tree" || p == "Simple") {
				return true
			}
		}
	}
	return false
}

// enabledFor is what a list (normalized, "" where unset) enables for the
// collective collNames[i]: every name where it names none, or unreadable.
func enabledFor(i int, value string, tokens []string) []string {
	if value == "" {
		return tokens
	}
	sets, ok := enabledSets(value, tokens)
	if !ok || sets[i] == nil {
		return tokens
	}
	return sets[i]
}

func (v Var) checkRange(n int64) error {
	if n < v.Min || v.Max != 0 && n > v.Max {
		return fmt.Errorf("%s: %d is outside [%d, %d]", v.Name, n, v.Min, v.Max)
	}
	return nil
}

// matchToken finds s among tokens, ignoring case as NCCL does, and returns the catalogue's spelling.
func matchToken(s string, tokens []string) (string, bool) {
	for _, t := range tokens {
		if strings.EqualFold(s, t) {
			return t, true
		}
	}
	return "", false
}

// canonicalList validates NCCL_ALGO/NCCL_PROTO syntax (an optional "coll:"
// prefix per ";"-separated part, an optional leading "^" (exclude), then
// comma-separated tokens) and writes it with the catalogue's spelling of each
// name, as NCCL reads them whatever their case, so that equal settings compare equal.
func canonicalList(value string, tokens []string) (string, error) {
	if strings.TrimSpace(value) == "" {
		return "", fmt.Errorf("empty value")
	}
	var parts []string
	for i, part := range strings.Split(value, ";") {
		prefix := ""
		coll, rest, ok := strings.Cut(part, ":")
		if !ok && i > 0 {
			// NCCL refuses the value ("All entries except the first must have a prefix").
			return "", fmt.Errorf("part %q names no collective: only the first part may (allreduce:Tree;Ring: Ring;allreduce:Tree)", part)
		}
		if ok {
			canon, known := matchToken(strings.TrimSpace(coll), slices.Concat(collNames, p2pNames))
			if !known {
				return "", fmt.Errorf("unknown collective %q (legal: %s)", coll, strings.Join(collNames, ", "))
			}
			prefix, part = canon+":", rest
		}
		part = strings.TrimSpace(part)
		if rest, ok := strings.CutPrefix(part, "^"); ok {
			prefix, part = prefix+"^", rest
		}
		var names []string
		for _, tok := range strings.Split(part, ",") {
			canon, ok := matchToken(strings.TrimSpace(tok), tokens)
			if !ok {
				return "", fmt.Errorf("%q is not one of %s", tok, strings.Join(tokens, ", "))
			}
			names = append(names, canon)
		}
		parts = append(parts, prefix+strings.Join(names, ","))
	}
	return strings.Join(parts, ";"), nil
}
