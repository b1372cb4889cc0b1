package workload

import (
	"bytes"
	"math"

	"github.com/nccltune/nccltune/space"
)

// The line formats, the same in every NCCL from 2.4.2 to 2.30.7 (src/debug.cc,
// src/misc/utils.cu before 2.5; a launcher, and since 2.26
// NCCL_DEBUG_TIMESTAMP_LEVELS, may put more in front):
//
//	host:pid:tid [dev] NCCL INFO message
//	NCCL version 2.18.3+cuda12.2    (up to 2.22: printed alone, on stdout)
var (
	infoMark    = []byte(" NCCL INFO ")
	versionMark = []byte("NCCL version ")
)

// call is one COLL line's message as ncclEnqueueCheck logs every call
// (src/enqueue.cc; the same format string from 2.4.2 to 2.30.7):
//
//	AllReduce: opCount 2a sendbuff 0x7f.. recvbuff 0x7f.. count 262144 datatype 7 op 0 root 0 comm 0x55.. [nranks=16] stream 0x..
type call struct {
	op     []byte // NCCL's name for the call
	count  uint64
	dtype  uint64
	root   int64 // the peer, for Send and Recv
	comm   uint64
	nranks uint64
}

// parseCall reads a COLL message. isCall reports whether msg is one at all
// ("Name: opCount ..."; NCCL logs other messages under COLL too), ok
// whether every field parsed.
func parseCall(msg []byte) (c call, isCall, ok bool) {
	n := 0
	for n < len(msg) && n < maxOpName && isAlnum(msg[n]) {
		n++
	}
	f := fields{b: msg[n:], ok: n > 0}
	f.skip(": opCount ")
	if !f.ok {
		return c, false, false
	}
	c.op = msg[:n]
	f.skip(" sendbuff ")
	f.skip(" recvbuff ")
	count := f.next(" count ")
	dtype := f.next(" datatype ")
	f.skip(" op ")
	root := f.next(" root ")
	comm := f.next(" comm ")
	nranks := f.next(" [nranks=")
	if !f.ok || len(nranks) < 2 || nranks[len(nranks)-1] != ']' {
		return c, true, false
	}
	var okCount, okType, okRoot, okComm, okRanks bool
	c.count, okCount = parseUint(count, 10)
	c.dtype, okType = parseUint(dtype, 10)
	c.root, okRoot = parseInt(root)
	c.comm, okComm = parseHex(comm)
	c.nranks, okRanks = parseUint(nranks[:len(nranks)-1], 10)
	// A communicator beyond space.MaxRanks is beyond any cluster, and a
	// space of its calls would not load: no job made the call. Nor did it
	// make one whose root or peer is not a rank of the communicator: NCCL
	// refuses that (ArgsCheck), and sendrecv's turns would count it.
	ok = okCount && okType && okRoot && okComm && okRanks && c.nranks > 0 && c.nranks <= space.MaxRanks &&
		c.root >= 0 && uint64(c.root) < c.nranks &&
		c.count <= math.MaxInt64/(maxTypeSize*c.nranks) // so that no size overflows
	return c, true, ok
}

// maxOpName bounds a call's name, which Read keeps for a call it does not
// measure: NCCL's are under 16 bytes.
const maxOpName = 32

// fields walks "key value key value ..." and fails for good at the first
// key that is not where it should be or has no value.
type fields struct {
	b  []byte
	ok bool
}

// next returns the value after key, up to the next space.
func (f *fields) next(key string) []byte {
	if !f.ok || len(f.b) < len(key) || string(f.b[:len(key)]) != key {
		f.ok = false
		return nil
	}
	f.b = f.b[len(key):]
	n := bytes.IndexByte(f.b, ' ')
	if n < 0 {
		n = len(f.b)
	}
	v := f.b[:n]
	f.b = f.b[n:]
	f.ok = n > 0
	return v
}

func (f *fields) skip(key string) { f.next(key) }

// splitInfo splits an INFO line into its message and the process that
// logged it: the host and pid of the host:pid:tid word in front of "[dev]"
// (the tid left out: a process logs from several threads). The host is
// what a hostname can hold (NCCL cuts it at the first dot), from its first
// letter where a timestamp's digits come before it (gluedTime), so that
// whatever a launcher or a timestamp glues to the word ("[1,0]<stdout>:",
// "[default0]:", "10:15:01.123") is not part of it, nor is more than a
// hostname's maxHost bytes: Read keeps the name of every process.
func splitInfo(line []byte) (proc, dev, msg []byte, isInfo, ok bool) {
	i := bytes.Index(line, infoMark)
	if i < 0 {
		return nil, nil, nil, false, false
	}
	msg = line[i+len(infoMark):]
	head := line[:i]
	open := bytes.LastIndexByte(head, '[')
	if open < 1 || head[open-1] != ' ' || head[len(head)-1] != ']' {
		return nil, nil, msg, true, false
	}
	dev = head[open+1 : len(head)-1]
	word := head[:open-1]
	tid := bytes.LastIndexByte(word, ':')
	if tid < 0 || !isDigits(dev) || !isDigits(word[tid+1:]) {
		return nil, nil, msg, true, false
	}
	proc = word[:tid]
	pid := bytes.LastIndexByte(proc, ':')
	if pid < 0 || !isDigits(proc[pid+1:]) {
		return nil, nil, msg, true, false
	}
	host := pid
	for host > 0 && pid-host < maxHost && isHostChar(proc[host-1]) {
		host--
	}
	if host == pid {
		return nil, nil, msg, true, false
	}
	// A timestamp format that ends in no space (NCCL_DEBUG_TIMESTAMP_FORMAT=
	// "%T.%3f") glues its digits, which change from line to line, to the
	// host: a process's name starts at a letter there.
	if i := bytes.IndexFunc(proc[host:pid], isLetter); i > 0 && gluedTime(proc[:host], proc[host:host+i]) {
		host += i
	}
	return proc[host:], dev, msg, true, true
}

func isLetter(r rune) bool { return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' }

// gluedTime reports whether lead, what comes before the first letter of a
// host, is the end of a timestamp glued to it rather than the host's own
// start ("4gpu-a", "10-gpu"), by what precedes it (before): a time's
// fraction ("%T.%3f"), its seconds ("%T"), or six digits or more (a Unix
// time, "%s", or a date) that no hostname starts with.
func gluedTime(before, lead []byte) bool {
	digits := 0
	for _, c := range lead {
		if '0' <= c && c <= '9' {
			digits++
		}
	}
	n := len(before)
	return digits >= 6 || n > 0 && before[n-1] == '.' || n > 1 && before[n-1] == ':' && '0' <= before[n-2] && before[n-2] <= '9'
}

const maxHost = 64 // Linux's HOST_NAME_MAX

// parseVersion reads "NCCL version 2.28.3+cuda13.0" (the whole of msg) and
// returns NCCL's part, "2.28.3". The "+cuda" NCCL always appends tells
// it from other messages that mention a version. NCCL's part is
// major.minor.patch and the build's NCCL_SUFFIX ("2.18.3a0"): other bytes
// (a control character, a byte that is not UTF-8) are no NCCL's, and
// would go into the comment of the tables (WriteTOML), which TOML refuses.
func parseVersion(msg []byte) (string, bool) {
	v, found := bytes.CutPrefix(msg, versionMark)
	plus := bytes.Index(v, []byte("+cuda"))
	if !found || plus < 1 || v[0] < '0' || v[0] > '9' || bytes.IndexByte(v, ' ') >= 0 {
		return "", false
	}
	for _, c := range v[:plus] {
		if c != '.' && !isHostChar(c) {
			return "", false
		}
	}
	return string(v[:plus]), true
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

func isHostChar(c byte) bool { return isAlnum(c) || c == '-' || c == '_' }

func isDigits(b []byte) bool {
	_, ok := parseUint(b, 10)
	return ok
}

// parseUint reads a number in base 10 or 16 (digits only, no sign or
// prefix) without allocating, as strconv would for a []byte.
func parseUint(b []byte, base uint64) (uint64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var n uint64
	cutoff := math.MaxUint64 / base
	for _, c := range b {
		var d uint64
		switch {
		case '0' <= c && c <= '9':
			d = uint64(c - '0')
		case base == 16 && 'a' <= c && c <= 'f':
			d = uint64(c-'a') + 10
		default:
			return 0, false
		}
		if n > cutoff || n*base > math.MaxUint64-d {
			return 0, false
		}
		n = n*base + d
	}
	return n, true
}

// parseHex reads a pointer as %p prints it: 0x55d0c8a3e2d0.
func parseHex(b []byte) (uint64, bool) {
	h, found := bytes.CutPrefix(b, []byte("0x"))
	if !found {
		return 0, false
	}
	return parseUint(h, 16)
}

// parseInt reads a decimal int, as %d prints it.
func parseInt(b []byte) (int64, bool) {
	digits, neg := bytes.CutPrefix(b, []byte("-"))
	n, ok := parseUint(digits, 10)
	if !ok || n > math.MaxInt32 {
		return 0, false
	}
	if neg {
		return -int64(n), true
	}
	return int64(n), true
}
