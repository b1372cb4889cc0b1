// Package nccllog reads what NCCL itself logs with NCCL_DEBUG=INFO: the
// variables it read from the environment and the transport it chose. It lets
// the tuner confirm that a trial's settings reached NCCL, instead of trusting
// a variable that NCCL never read (misspelt, or unknown to its version).
package nccllog

import (
	"bufio"
	"bytes"
	"cmp"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/nccltune/nccltune/internal/text"
	"github.com/nccltune/nccltune/runner/nccltests"
	"github.com/nccltune/nccltune/space"
)

// Log is what one run's NCCL output says.
type Log struct {
	Version string `json:"version,omitempty"` // "2.28.3+cuda13.0"
	Debug   bool   `json:"debug"`             // INFO lines were present, so absence means something
	// Read is NCCL_X -> value, from "set by environment to"; where ranks or
	// launches read different values, every one of them, joined by
	// readApart, which no setting's value equals.
	Read map[string]string `json:"read,omitempty"`
	// Rejected is NCCL_X -> NCCL's own words where it said it would not use
	// the value as given ("Invalid NCCL_NTHREADS 100 (must be a multiple of
	// 32)"): it may have logged reading the value first.
	Rejected map[string]string `json:"rejected,omitempty"`
	Network  string            `json:"network,omitempty"` // "IB", "Socket", or a plugin's name
	GDR      bool              `json:"gdr"`               // GPUDirect RDMA in use on some connection
	RoCE     bool              `json:"roce,omitempty"`    // the IB verbs ports are RoCE (Ethernet link layer)
	Notes    []string          `json:"notes,omitempty"`   // transport warnings: no IB device, fallback to sockets
	// Channels is the most channels NCCL reported building ("Channel 00/24"), 0 if unseen.
	Channels int `json:"channels,omitempty"`
	// Nodes is the communicator's node count ("nNodes 2"), 0 if unseen. With
	// one node NCCL still sets up a network, but no collective crosses it.
	Nodes int `json:"nodes,omitempty"`
	// Ranks is the communicator's rank count ("nRanks 16"), 0 if unseen.
	Ranks int `json:"ranks,omitempty"`
	// NICs is how many network devices NCCL said it uses ("NET/IB : Using
	// [0]mlx5_0:1/IB [1]mlx5_1:1/IB"), 0 if unseen.
	NICs int `json:"nics,omitempty"`
	// Decisions are the algorithm, protocol and channels NCCL chose for each
	// operation and size, with NCCL_DEBUG_SUBSYS=TUNING (rank 0 logs them).
	Decisions []Decision `json:"decisions,omitempty"`
}

// Decision is NCCL's choice for one operation of one size: "AllReduce:
// 1048576 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..15}".
type Decision struct {
	Op    string `json:"op"`    // as ncclFuncToString spells it: AllReduce, AllGather, ReduceScatter, Broadcast, Reduce
	Bytes int64  `json:"bytes"` // as NCCL logs them: the count times the type's size (per rank for AllGather and ReduceScatter)
	// Algo and Proto are as ncclAlgoToString and ncclProtoToString spell
	// them: TREE, RING, COLLNET_DIRECT, COLLNET_CHAIN, NVLS, NVLS_TREE, PAT
	// ("Unknown" for one they lack); LL, LL128, SIMPLE. Not NCCL_ALGO's
	// spelling (CollnetDirect, NVLSTree), nor the plugins' (collnet_direct).
	Algo     string `json:"algo"`
	Proto    string `json:"proto"`
	Channels int    `json:"channels"`
}

var (
	infoRE    = regexp.MustCompile(`NCCL INFO (.*)$`)
	warnRE    = regexp.MustCompile(`NCCL WARN (.*)$`)
	setRE     = regexp.MustCompile(`^(NCCL_[A-Z0-9_]+) set by environment to (.*)$`)
	versionRE = regexp.MustCompile(`NCCL version (\S+)`)
	// The network's name, whole: a plugin's may hold blanks ("AWS Libfabric").
	networkRE = regexp.MustCompile(`^Using network (\S.*?)\s*$`)
	// GPUDirect RDMA in use: a connection's "via NET/IB/0/GDRDMA", or a GPU's
	// "GPU Direct RDMA Enabled for GPU 0 / HCA 0 (distance 4 <= 4)" (2.29:
	// "for GPU/0-110592 (rank 0) - NET/0-0 (...)"; 2.30 logs it at TRACE
	// only), not an HCA's "NET/IB : GPU Direct RDMA Enabled for HCA 0",
	// which says it could (paths.cc, topo.cc).
	gdrRE     = regexp.MustCompile(`\[GDR\]|GDRDMA|GPU Direct RDMA Enabled for GPU[ /]`)
	roceRE    = regexp.MustCompile(`^NET/IB ?: Using .*/RoCE`)
	channelRE = regexp.MustCompile(`^Channel \d+/(\d+) `)
	nodesRE   = regexp.MustCompile(`\bnNodes (\d+)\b`)
	ranksRE   = regexp.MustCompile(`\bnRanks (\d+)\b`)
	tuningRE  = regexp.MustCompile(`^(\w+): (\d+) Bytes -> Algo (\w+) proto (\w+) channel\{Lo\.\.Hi\}=\{(\d+)\.\.(\d+)\}`)
	nicsRE    = regexp.MustCompile(`^NET/\w+ : Using (.*)`)
	nicRE     = regexp.MustCompile(`\[\d+\]\S`)
	noteRE    = regexp.MustCompile(`No device found|No capable device found|Failed to initialize NET plugin|falling back|NET/Socket : Using`)
	// NCCL's words for a value it does not use as given: "Invalid value X for
	// NCCL_Y, using default", "Invalid NCCL_NTHREADS 100 (...)", "NCCL_MIN_CTAS
	// 0 is too low, leaving it set at", "NCCL_NET_MERGE_POLICY: unknown value",
	// "failed to decode NCCL_PROXY_CPUSET=... Ignoring", "... is out of range",
	// "the total number of sockets is greater than the maximum allowed,
	// setting NCCL_NSOCKS_PERTHREAD to 16".
	rejectRE = regexp.MustCompile(`(?i)\b(invalid|unknown|unrecognized|ignor(e|ed|ing)|too (low|big|high|large)|out of range|greater than the maximum|using (the )?default|using built-in default|defaulting)\b`)
	varRE    = regexp.MustCompile(`\bNCCL_[A-Z0-9_]+\b`)
	// A variable given as the cause was used: "Detected mixed local Net
	// device counts across ranks (...). Ignoring due to NCCL_IGNORE_NET_MISMATCH."
	causeRE = regexp.MustCompile(`\bdue to NCCL_[A-Z0-9_]+\b`)
	setToRE = regexp.MustCompile(`^NCCL_[A-Z0-9_]+ set to `) // echoes a value, whatever words it holds
	// NCCL_IB_HCA's read is logged as only such an echo (net_ib, since
	// 2.18 at least): "NCCL_IB_HCA set to mlx5_0".
	hcaRE = regexp.MustCompile(`^(NCCL_IB_HCA) set to (.*)$`)
	// The CTA limits' clamps name the config field, not the variable:
	// "minCTAs 32 is larger than maxCTAs 16, set both to 16".
	ctasRE = regexp.MustCompile(`^(min|max)CTAs -?\d+ is larger than`)
)

const maxNotes = 20

// maxDecisions bounds the decisions kept: a sweep has a few dozen sizes, and
// a training job repeats the same few.
const maxDecisions = 4096

// Parse reads NCCL's log lines out of a benchmark's output, as the runner
// captured it: each rank's lines whole, where mpirun passed them on in
// chunks.
func Parse(output []byte) Log {
	var l Log
	read := values{}
	sc := bufio.NewScanner(bytes.NewReader(output))
	sc.Buffer(make([]byte, maxLine), 4<<20)
	sc.Split(text.Lines(maxLine)) // an over-long line is passed over, not the end of the log
	for sc.Scan() {
		l.line(untagged(sc.Text()), read)
	}
	l.Read = read.joined()
	return l
}

// maxRecord is the longest record NCCL (2.28.9) logs, its newline aside: it
// writes each from a buffer of 1024 bytes (debug.cc), cutting a longer one.
const maxRecord = 1023

// cutMark ends a value read from a line NCCL may have cut (maxRecord bytes,
// or more with a launcher's tag before them): NCCL read a value that starts
// with what comes before the mark, and logged no more of it.
const cutMark = "…"

// marked is value as read from line: with cutMark where NCCL may have cut it.
func marked(line, value string) string {
	if len(line) >= maxRecord {
		return value + cutMark
	}
	return value
}

// line reads one line of NCCL's log into l, the values read into read.
func (l *Log) line(line string, read values) {
	if m := versionRE.FindStringSubmatch(line); m != nil && l.Version == "" {
		l.Version = m[1]
	}
	if w := warnRE.FindStringSubmatch(line); w != nil {
		l.reject(strings.TrimSpace(w[1]))
		return
	}
	m := infoRE.FindStringSubmatch(line)
	if m == nil {
		return
	}
	l.Debug = true
	msg := strings.TrimSpace(m[1])
	if s := setRE.FindStringSubmatch(msg); s != nil {
		read.add(s[1], marked(line, strings.TrimSuffix(s[2], ".")))
		return
	}
	if s := hcaRE.FindStringSubmatch(msg); s != nil {
		read.add(s[1], marked(line, s[2]))
		return
	}
	l.reject(msg)
	if c := channelRE.FindStringSubmatch(msg); c != nil {
		n, _ := strconv.Atoi(c[1])
		l.Channels = max(l.Channels, n)
	}
	if m := nodesRE.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		l.Nodes = max(l.Nodes, n)
	}
	if m := ranksRE.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		l.Ranks = max(l.Ranks, n)
	}
	if m := tuningRE.FindStringSubmatch(msg); m != nil {
		l.decide(m)
		return
	}
	if n := networkRE.FindStringSubmatch(msg); n != nil {
		l.Network = n[1]
	}
	if m := nicsRE.FindStringSubmatch(msg); m != nil {
		l.NICs = max(l.NICs, len(nicRE.FindAllString(m[1], -1)))
	}
	if gdrRE.MatchString(msg) {
		l.GDR = true
	}
	if roceRE.MatchString(msg) {
		l.RoCE = true
	}
	if noteRE.MatchString(msg) && len(l.Notes) < maxNotes && !slices.Contains(l.Notes, msg) {
		l.Notes = append(l.Notes, msg)
	}
}

// maxLine bounds a line of the log read.
const maxLine = 64 << 10

// mpiTagRE is Open MPI's mpirun --tag-output tag that begins a line, after
// --timestamp-output's time where given.
var mpiTagRE = regexp.MustCompile(`^` + nccltests.MPIRunTime + `?\[\d+,\d+\]<std(?:out|err)>:`)

// untagged is line less the tag mpirun puts before it, no part of the
// record, whose length says whether NCCL cut it (marked). Its mpirun 4.1
// tags each chunk of a rank's output, not each line, but the output read
// is the runner's, whose capture has joined each rank's chunks into its
// line, under one tag. Most lines hold no tag, and cost no regexp's run.
func untagged(line string) string {
	if !strings.Contains(line, "]<std") {
		return line
	}
	return line[len(mpiTagRE.FindString(line)):]
}

// readApart joins the values of a variable that ranks read differently.
const readApart = " | "

// maxValues bounds the values kept of one variable: ranks that read it in
// more ways are apart all the same, and a log whose every line reads
// another value (hostile, or a million ranks') parses in linear time.
const maxValues = 16

// values are the values ranks read, per variable, each once whatever its
// case. A rank that read another value than the others is not confirmed by
// theirs (the last line read won before, and masked it).
type values map[string][]string

// add records that some rank read name as value.
func (vs values) add(name, value string) {
	got := vs[name]
	if len(got) < maxValues && !slices.ContainsFunc(got, func(v string) bool { return strings.EqualFold(v, value) }) {
		vs[name] = append(got, value)
	}
}

// joined is Log.Read: each variable's values joined by readApart.
func (vs values) joined() map[string]string {
	read := make(map[string]string, len(vs))
	for name, got := range vs {
		read[name] = strings.Join(got, readApart)
	}
	return read
}

// reject records the variables a message of NCCL's says it did not use as
// given. A line that only echoes a value ("NCCL_SOCKET_IFNAME set to X")
// rejects nothing, whatever words the value holds.
func (l *Log) reject(msg string) {
	if m := ctasRE.FindStringSubmatch(msg); m != nil {
		l.rejected("NCCL_"+strings.ToUpper(m[1])+"_CTAS", msg)
		return
	}
	if !rejectRE.MatchString(msg) || setToRE.MatchString(msg) {
		return
	}
	for _, name := range varRE.FindAllString(causeRE.ReplaceAllString(msg, ""), -1) {
		l.rejected(name, msg)
	}
}

// rejected keeps NCCL's first word on why it did not use name's value.
func (l *Log) rejected(name, msg string) {
	if l.Rejected == nil {
		l.Rejected = map[string]string{}
	}
	if _, ok := l.Rejected[name]; !ok {
		l.Rejected[name] = msg
	}
}

// Merge is what two logs of one trial's launches say together.
func (l Log) Merge(o Log) Log {
	out := l
	read := values{}
	for name, v := range l.Read {
		read[name] = strings.Split(v, readApart) // as read, joined again
	}
	for name, v := range o.Read {
		for _, v := range strings.Split(v, readApart) {
			read.add(name, v)
		}
	}
	out.Read, out.Rejected = read.joined(), maps.Clone(l.Rejected)
	for _, name := range slices.Sorted(maps.Keys(o.Rejected)) {
		out.rejected(name, o.Rejected[name])
	}
	out.Version = cmp.Or(l.Version, o.Version)
	out.Network = cmp.Or(l.Network, o.Network)
	out.Debug, out.GDR, out.RoCE = l.Debug || o.Debug, l.GDR || o.GDR, l.RoCE || o.RoCE
	out.Channels, out.Nodes, out.Ranks = max(l.Channels, o.Channels), max(l.Nodes, o.Nodes), max(l.Ranks, o.Ranks)
	out.Notes = append(slices.Clone(l.Notes), o.Notes...)
	out.Decisions = append(slices.Clone(l.Decisions), o.Decisions...)
	return out
}

// decide records a TUNING line's decision, once per operation and size.
func (l *Log) decide(m []string) {
	bytes, err := strconv.ParseInt(m[2], 10, 64)
	lo, err1 := strconv.Atoi(m[5])
	hi, err2 := strconv.Atoi(m[6])
	if err != nil || err1 != nil || err2 != nil || hi < lo || len(l.Decisions) >= maxDecisions {
		return
	}
	d := Decision{Op: m[1], Bytes: bytes, Algo: m[3], Proto: m[4], Channels: hi - lo + 1}
	if !slices.ContainsFunc(l.Decisions, func(e Decision) bool { return e.Op == d.Op && e.Bytes == d.Bytes }) {
		l.Decisions = append(l.Decisions, d)
	}
}

// Unread returns the NCCL_* variables of env (NAME=value) that NCCL's log
// contradicts: it has INFO lines, and does not show NCCL reading the
// variable with that value. A log without INFO lines contradicts nothing;
// see Unconfirmed for what it fails to confirm.
func (l Log) Unread(env []string) []string {
	if !l.Debug {
		return nil
	}
	return l.Unconfirmed(env)
}

// Unconfirmed returns the NCCL_* variables of env that NCCL's log does not
// confirm reading with their value (or says it rejected): Unread's, or,
// where NCCL logged no INFO lines (the program logs to a file, uses gloo, or
// a wrapper dropped NCCL_DEBUG), every one of them, since nothing is
// confirmed then.
func (l Log) Unconfirmed(env []string) []string {
	var out []string
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "NCCL_") {
			continue
		}
		_, rejected := l.Rejected[name]
		got, ok := l.Read[name]
		if !ok && unlogged(name, value) {
			continue
		}
		if !ok && name == "NCCL_NET" && l.Network != "" {
			// Logged as the network NCCL picked by it (strcasecmp).
			got, ok = l.Network, true
		}
		if !ok || !confirms(name, got, value) || rejected {
			out = append(out, name)
		}
	}
	return out
}

// confirms reports whether NCCL logging that it read name as got confirms
// value: a level it logs by its name (ncclGetLevel: 4 and 5 as SYS); a
// value it cut by its start; and where ranks read it apart (their lines cut
// at other lengths, their hosts' names being of other lengths), each of theirs.
func confirms(name, got, value string) bool {
	if strings.EqualFold(got, value) {
		return true
	}
	v, err := space.Lookup(name)
	for _, g := range strings.Split(got, readApart) {
		cut, isCut := strings.CutSuffix(g, cutMark)
		switch {
		case strings.EqualFold(g, value):
		case isCut && len(value) >= len(cut) && strings.EqualFold(value[:len(cut)], cut):
		case err == nil && v.Kind == space.KindLevel && v.Alike(g, value):
		default:
			return false
		}
	}
	return true
}

// unlogged reports whether NCCL (2.28.9) reads name as value without a line
// of its log, so that none confirms it: NCCL_CONF_FILE, which it reads with
// getenv before its log starts (what it names is seen in the variables NCCL
// read from it: Inherited); NCCL_TUNER_CONFIG_FILE, which a tuner plugin
// reads with getenv; and NCCL_P2P_DISABLE, which ncclGetLevel logs only
// where it is 1, disabling P2P.
func unlogged(name, value string) bool {
	switch name {
	case "NCCL_CONF_FILE", "NCCL_TUNER_CONFIG_FILE":
		return true
	case "NCCL_P2P_DISABLE":
		n, _ := space.ParamInt(value)
		return n != 1
	}
	return false
}

// Inherited returns, as sorted NAME=value, the variables NCCL's log shows
// it read that env does not set, NCCL's own log settings aside: NCCL loads
// NCCL_CONF_FILE, or ~/.nccl.conf and /etc/nccl.conf, into its environment,
// and a rank started elsewhere has its own (a remote shell's profile under
// mpirun). Such a value applied to the run, NCCL's defaults included, and
// no export carries it.
func (l Log) Inherited(env []string) []string {
	set := maps.Clone(space.LogVars)
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		set[name] = true
	}
	var out []string
	for _, name := range slices.Sorted(maps.Keys(l.Read)) {
		if !set[name] {
			out = append(out, name+"="+l.Read[name])
		}
	}
	return out
}

// AtLeast reports whether NCCL version v ("2.28.3+cuda13.0") is major.minor
// or later; known is false where v does not say.
func AtLeast(v string, major, minor int) (yes, known bool) {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return false, false
	}
	maj, err1 := strconv.Atoi(parts[0])
	mnr, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return false, false
	}
	return maj > major || maj == major && mnr >= minor, true
}

// PerCollectiveSince is the first NCCL version that reads NCCL_ALGO and
// NCCL_PROTO per collective ("allreduce:Tree;allgather:Ring").
const PerCollectiveSince = "2.24"
