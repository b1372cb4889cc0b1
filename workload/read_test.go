package workload

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/nccltune/nccltune/space"
)

// The logs in testdata are as NCCL prints them (see parse.go for where the
// formats come from):
//
//	nccl-2.18.3-rank0.log  rank 0's NCCL_DEBUG_FILE: the version as an INFO line, alltoall as grouped Send/Recv
//	nccl-2.18.3-all.log    the same job's four ranks through srun -l: the version printed alone, by comm rank 0s only
//	nccl-2.28.3-all.log    eight ranks through torchrun --tee, with NCCL_DEBUG_TIMESTAMP_LEVELS=INFO: native AlltoAll, fp8, pipeline Send/Recv
//	nccl-2.30.7-rank0.log  one rank of sixteen: SymCheck and RMA lines under COLL, PutSignal, WaitSignal, Gather

// job218 is what one rank of the 2.18.3 job does: tensor parallel 2 and data
// parallel 2 (both communicators of 2 ranks), alltoall and loss over all 4.
var job218 = []Entry{
	{"all_gather", 48 << 20, 2, 2},
	{"all_reduce", 4, 2, 4},
	{"all_reduce", 8 << 20, 10, 2},
	{"alltoall", 8 << 20, 4, 4},
	{"broadcast", 256 << 10, 3, 4},
	{"reduce_scatter", 96 << 20, 2, 2},
}

// job228 is one rank of the 2.28.3 job: pipeline parallel 2, data parallel 4, alltoall over all 8.
var job228 = []Entry{
	{"all_gather", 4 << 20, 2, 4},
	{"all_reduce", 4, 2, 8},
	{"all_reduce", 5 << 20, 2, 4},
	{"all_reduce", 25 << 20, 4, 4},
	{"alltoall", 4 << 20, 4, 8},
	{"sendrecv", 4 << 20, 8, 2},
}

func TestReadVersions(t *testing.T) {
	for _, tc := range []struct {
		file       string
		version    string
		processes  int
		entries    []Entry
		unmeasured map[string]int64
	}{
		{"nccl-2.18.3-rank0.log", "2.18.3", 1, job218, nil},
		{"nccl-2.18.3-all.log", "2.18.3", 4, job218, nil},
		{"nccl-2.28.3-all.log", "2.28.3", 8, job228, nil},
		{"nccl-2.30.7-rank0.log", "2.30.7", 1, []Entry{
			{"all_reduce", 16 << 20, 6, 8},
			{"all_reduce", 128 << 20, 2, 2},
			{"alltoall", 4 << 20, 2, 16},
			{"reduce_scatter", 16 << 20, 2, 8},
		}, map[string]int64{"Gather": 1, "PutSignal": 2, "WaitSignal": 2}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			w := readFile(t, tc.file)
			if !slices.Equal(w.Entries, tc.entries) {
				t.Errorf("entries:\n got %v\nwant %v", w.Entries, tc.entries)
			}
			if w.NCCLVersion != tc.version || w.Source.Processes != tc.processes || w.Source.Malformed != 0 {
				t.Errorf("version %q, %d processes, %d malformed; want %q, %d, 0", w.NCCLVersion, w.Source.Processes, w.Source.Malformed, tc.version, tc.processes)
			}
			if len(w.Source.Unmeasured) != len(tc.unmeasured) {
				t.Errorf("unmeasured = %v, want %v", w.Source.Unmeasured, tc.unmeasured)
			}
			for name, n := range tc.unmeasured {
				if w.Source.Unmeasured[name] != n {
					t.Errorf("unmeasured = %v, want %v", w.Source.Unmeasured, tc.unmeasured)
				}
			}
			s := w.Source
			if s.Lines != s.Calls+s.Malformed+s.Skipped+versionLines(t, tc.file) {
				t.Errorf("lines %d != %d calls + %d malformed + %d skipped + version lines", s.Lines, s.Calls, s.Malformed, s.Skipped)
			}
		})
	}
}

// TestReadOneRankOrAll checks that every rank's log, however its lines
// interleave, gives what one rank's log gives.
func TestReadOneRankOrAll(t *testing.T) {
	all := testdata(t, "nccl-2.28.3-all.log")
	lines := strings.SplitAfter(string(all), "\n")
	byProcess := slices.Clone(lines)
	slices.SortStableFunc(byProcess, func(a, b string) int { return strings.Compare(processOf(a), processOf(b)) })
	var rank5 []string
	for _, l := range lines {
		if strings.Contains(l, " gpu-b:31055:") {
			rank5 = append(rank5, l)
		}
	}
	for name, log := range map[string]string{
		"interleaved":            string(all),
		"one rank after another": strings.Join(byProcess, ""),
		"rank 5 alone":           strings.Join(rank5, ""),
	} {
		w, err := Read(strings.NewReader(log))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !slices.Equal(w.Entries, job228) {
			t.Errorf("%s:\n got %v\nwant %v", name, w.Entries, job228)
		}
	}
	w := readFile(t, "nccl-2.28.3-all.log")
	want := []Comms{
		{Ranks: 2, Process: "gpu-a:31000 [0]", Processes: 8, Calls: 8, Fewest: 8, Communicators: 1},
		{Ranks: 4, Process: "gpu-a:31000 [0]", Processes: 8, Calls: 8, Fewest: 8, Communicators: 1},
		{Ranks: 8, Process: "gpu-a:31000 [0]", Processes: 8, Calls: 6, Fewest: 6, Communicators: 1},
	}
	if !slices.Equal(w.Source.Comms, want) {
		t.Errorf("comms:\n got %+v\nwant %+v", w.Source.Comms, want)
	}
}

// processOf returns the host:pid:tid word of a testdata line.
func processOf(line string) string {
	head, _, _ := strings.Cut(line, " [")
	return head[strings.LastIndexByte(head, ' ')+1:]
}

func TestReadGzip(t *testing.T) {
	plain := testdata(t, "nccl-2.28.3-all.log")
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(plain)
	zw.Close()
	w, err := Read(bytes.NewReader(z.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(w.Entries, job228) {
		t.Errorf("gzipped:\n got %v\nwant %v", w.Entries, job228)
	}
	_, err = Read(bytes.NewReader(z.Bytes()[:z.Len()/2]))
	if err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Errorf("half a gzip stream: err = %v, want it to say truncated", err)
	}
}

// TestReadPackedAfterPlain: a packed log concatenated after a plain one
// (cat rank0.log rank1.log.gz) was read as lines of binary junk, skipped:
// the packed log's calls were left out without a word, where the other
// order is refused. A packed stream that starts a line is refused too.
func TestReadPackedAfterPlain(t *testing.T) {
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write([]byte(strings.Repeat("h:2:2 [1] NCCL INFO "+allRed+"\n", 3)))
	zw.Close()
	for what, packed := range map[string]string{
		"gzip-compressed data starts here, inside a log of text (a packed log concatenated after a plain one?): unpack each packed log into the text: gzip -dc LOG": z.String(),
		"zstd-compressed data starts here": "\x28\xb5\x2f\xfd\x24\x05\x29\x00",
	} {
		_, err := Read(strings.NewReader(version + rank0 + allRed + "\n" + packed))
		if want := "line 3: " + what; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want %q in it", err, want)
		}
	}
}

// TestReadPackedAfterAnUnendedLine: a plain log whose last line has no end
// (a job killed as it wrote: NCCL's INFO line, a call's cut short, the
// job's own output, a progress bar's CR) with a packed one concatenated
// after it put the packed stream's start inside that line, not at a line's
// start, and its calls were left out without a word, as lines of junk.
func TestReadPackedAfterAnUnendedLine(t *testing.T) {
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write([]byte(strings.Repeat("h:2:2 [1] NCCL INFO "+allRed+"\n", 3)))
	zw.Close()
	for _, unended := range []string{
		"h:1:1 [0] NCCL INFO Channel 00/02 :    0   1",
		"h:1:1 [0] NCCL INFO AllReduce: opCount 9 sendbuff",
		"epoch 3 loss 0.25",
		"step 10/100\r",
	} {
		_, err := Read(strings.NewReader(version + rank0 + allRed + "\n" + unended + z.String()))
		if want := "line 3: gzip-compressed data starts here"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("after %q: err = %v, want %q in it", unended, err, want)
		}
	}
	// Text that is not NCCL's, escapes and all, is still read past.
	w, err := Read(strings.NewReader(version + rank0 + allRed + "\n\x1b[1mbold\x1b[0m (PK) BZh9 \x04\n" + rank0 + allRed + "\n"))
	if err != nil || w.Source.Calls != 2 {
		t.Errorf("a line of text with escapes: %+v, %v", w, err)
	}
}

// TestReadGzipPadded: zero bytes after a gzip stream (a file padded to a
// block, as dd conv=sync or a tape leaves it), which gzip -d ignores, were
// read as a truncated stream or a broken header, and the log refused;
// other bytes there still are, as no gzip's.
func TestReadGzipPadded(t *testing.T) {
	var z bytes.Buffer
	for range 2 { // two members, as cat a.gz b.gz makes
		zw := gzip.NewWriter(&z)
		zw.Write([]byte(rank0 + allRed + "\n"))
		zw.Close()
	}
	for _, pad := range []int{1, 4, 9, 10, 100, 3 * maxLine} {
		w, err := Read(io.MultiReader(bytes.NewReader(z.Bytes()), bytes.NewReader(make([]byte, pad))))
		if err != nil {
			t.Errorf("%d zero bytes after the stream: %v", pad, err)
		} else if want := []Entry{{"all_reduce", 4 << 10, 2, 4}}; !slices.Equal(w.Entries, want) {
			t.Errorf("%d zero bytes after the stream: entries = %v, want %v", pad, w.Entries, want)
		}
	}
	for garbage, want := range map[string]string{
		"x":            "bytes after the gzip stream that are no gzip's",
		"\x00\x00x":    "bytes after the gzip stream that are no gzip's",
		"\x1f\x8b\x08": "truncated", // a member's start
	} {
		_, err := Read(strings.NewReader(z.String() + garbage))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q after the stream: err = %v, want %q in it", garbage, err, want)
		}
	}
}

const (
	rank0   = "h:1:1 [0] NCCL INFO "
	allRed  = "AllReduce: opCount 0 sendbuff 0x7f00 recvbuff 0x7f00 count 1024 datatype 7 op 0 root 0 comm 0x55a0 [nranks=4] stream 0x55b0"
	version = rank0 + "NCCL version 2.28.3+cuda13.0\n"
)

func TestReadErrors(t *testing.T) {
	var truncated bytes.Buffer
	zw := gzip.NewWriter(&truncated)
	zw.Write([]byte(version + rank0 + allRed + "\n"))
	zw.Close()
	for _, tc := range []struct {
		name, log string
		want      string // in the error
	}{
		{"empty", "", ErrNoCalls.Error()},
		{"no NCCL", "epoch 1 loss 3.2\nepoch 2 loss 2.9\n", ErrNoCalls.Error()},
		// A job's stderr alone (2> job.log, as the README said): NCCL's
		// lines went to its stdout, and the error says so.
		{"stderr alone", "UserWarning: TypedStorage is deprecated\n", "NCCL logs to standard output"},
		{"INFO without COLL", rank0 + "Bootstrap : Using eth0:10.0.0.1<0>\n" + version, ErrNoCalls.Error()},
		{"mixed versions", version + rank0 + allRed + "\nh:2:2 [1] NCCL INFO NCCL version 2.27.7+cuda12.9\n", "mixed NCCL versions: 2.28.3 (line 1) and 2.27.7 (line 3)"},
		{"bare and INFO versions differ", "NCCL version 2.18.3+cuda12.2\n" + version, "mixed NCCL versions: 2.18.3 (line 1) and 2.28.3 (line 2)"},
		{"unknown datatype", rank0 + strings.Replace(allRed, "datatype 7", "datatype 12", 1) + "\n", "line 1: AllReduce of unknown NCCL datatype 12"},
		{"only malformed", rank0 + allRed[:60] + "\n", "none of the 1 NCCL COLL lines could be read, e.g. line 1: h:1:1"},
		{"only unmeasured", rank0 + strings.Replace(allRed, "AllReduce", "Gather", 1) + "\n", "no call that nccltune can measure, only Gather"},
		{"truncated gzip", string(truncated.Bytes()[:truncated.Len()-10]), "truncated"},
		{"gzip magic, no gzip", "\x1f\x8bnot gzip at all", "gzip header"},
		// Compressed as profile does not read: not "no COLL lines".
		{"zstd", "\x28\xb5\x2f\xfd\x24\x05\x29\x00", "zstd-compressed, which profile does not read: zstd -dc"},
		{"xz", "\xfd7zXZ\x00\x00\x04", "xz-compressed, which profile does not read: xz -dc"},
		{"bzip2", "BZh91AY&SY\x8b", "bzip2-compressed, which profile does not read: bzip2 -dc"},
		{"lz4", "\x04\x22\x4d\x18\x64\x40", "lz4-compressed, which profile does not read: lz4 -dc"},
		{"zip", "PK\x03\x04\x14\x00", "a zip archive, which profile does not read: unzip -p"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(strings.NewReader(tc.log))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q in it", err, tc.want)
			}
		})
	}
	if _, err := Read(strings.NewReader("")); !errors.Is(err, ErrNoCalls) {
		t.Errorf("empty log: err = %v, want ErrNoCalls", err)
	}
}

// TestReadNoise mixes malformed COLL lines, garbage and huge lines into a
// log: the calls are still counted, the malformed lines reported.
func TestReadNoise(t *testing.T) {
	good := rank0 + allRed + "\n"
	huge := strings.Repeat("x", 3*maxLine)
	log := version + good +
		rank0 + allRed[:70] + "\n" + // cut short
		rank0 + strings.Replace(allRed, "count 1024", "count 1k", 1) + "\n" +
		"[0] NCCL INFO " + allRed + "\n" + // no host:pid:tid
		rank0 + strings.Replace(allRed, "[nranks=4]", "[nranks=0]", 1) + "\n" +
		rank0 + strings.Replace(allRed, "count 1024", "count 99999999999999999999", 1) + "\n" +
		"\x00\xff\xfe binary \x1f\x8b junk\r\n" +
		huge + "\n" +
		rank0 + allRed + huge + "\n" + // longer than any NCCL line
		rank0 + "SymCheck: coll AllReduce size 4096 rank 0\n" +
		rank0 + "AllReduce : skipping sendbuff/recvbuff pointer check\n" +
		strings.TrimSuffix(good, "\n") + "\r\n" + strings.TrimSuffix(good, "\n") // CRLF, and no final newline
	w, err := Read(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	if want := []Entry{{"all_reduce", 4 << 10, 3, 4}}; !slices.Equal(w.Entries, want) {
		t.Errorf("entries = %v, want %v", w.Entries, want)
	}
	s := w.Source
	if s.Lines != 14 || s.Calls != 3 || s.Malformed != 5 || s.Skipped != 5 {
		t.Errorf("lines %d, calls %d, malformed %d, skipped %d; want 14, 3, 5, 5", s.Lines, s.Calls, s.Malformed, s.Skipped)
	}
	if !strings.HasPrefix(s.FirstMalformed, "line 3: h:1:1 [0] NCCL INFO AllReduce: opCount 0") {
		t.Errorf("first malformed = %q", s.FirstMalformed)
	}
}

// TestReadLoneCR: a lone CR ends a record as a terminal shows it, in a log
// of CR line ends and where a progress bar's updates (written to stderr,
// unbuffered, with 2>&1) come before NCCL's line. The second record of
// such a line was lost without a word.
func TestReadLoneCR(t *testing.T) {
	good := rank0 + allRed
	log := good + "\r" + good + "\r" + // CR line ends
		" 10%|#         | 1/10\r 20%|##        | 2/10\r" + good + "\n" + // a progress bar in front
		good + "\r\n" // CRLF
	w, err := Read(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	if want := []Entry{{"all_reduce", 4 << 10, 4, 4}}; !slices.Equal(w.Entries, want) {
		t.Errorf("entries = %v, want %v", w.Entries, want)
	}
	if s := w.Source; s.Lines != 2 || s.Calls != 4 || s.Malformed != 0 {
		t.Errorf("lines %d, calls %d, malformed %d; want 2, 4, 0", s.Lines, s.Calls, s.Malformed)
	}
}

// TestReadMPIRunChunks: Open MPI's mpirun --tag-output tags each chunk it
// reads of a rank's output, not each line: a rank's record may come in two
// chunks, another rank's record between them. Each rank's chunks up to its
// newline are its record, read whole.
func TestReadMPIRunChunks(t *testing.T) {
	var log strings.Builder
	for op := range 3 {
		call := strings.Replace(allRed, "opCount 0", "opCount "+strconv.Itoa(op), 1)
		call = strings.Replace(call, "[nranks=4]", "[nranks=2]", 1)
		rank0, rank1 := "h:1:1 [0] NCCL INFO "+call, "h:2:2 [1] NCCL INFO "+call
		log.WriteString("[1,0]<stdout>:" + rank0[:70] + "[1,1]<stdout>:" + rank1[:90] + "[1,0]<stdout>:" + rank0[70:] + "\n" +
			"Mon Dec  7 04:05:01 2026[1,1]<stdout>:" + rank1[90:] + "\n")
	}
	w, err := Read(strings.NewReader(log.String()))
	if err != nil {
		t.Fatal(err)
	}
	if want := []Entry{{"all_reduce", 4 << 10, 3, 2}}; !slices.Equal(w.Entries, want) {
		t.Errorf("entries = %v, want %v", w.Entries, want)
	}
	if s := w.Source; s.Calls != 6 || s.Malformed != 0 || s.Processes != 2 {
		t.Errorf("calls %d, malformed %d (%q), processes %d; want 6, 0, 2", s.Calls, s.Malformed, s.FirstMalformed, s.Processes)
	}
}

// TestReadBeyondASpace: a call larger than a space takes is counted as
// calls of the largest size, as many as it moves, and said so; a
// communicator larger than a space takes is no job's, its line malformed.
// Both went into the workload as they were, and its tables did not load.
func TestReadBeyondASpace(t *testing.T) {
	call := func(op, count, ranks string) string {
		r := strings.Replace(allRed, "count 1024", "count "+count, 1)
		return rank0 + strings.Replace(strings.Replace(r, "AllReduce", op, 1), "[nranks=4]", "[nranks="+ranks+"]", 1) + "\n"
	}
	log := call("AllReduce", "68719476736", "4") + // 256G of float32: the largest size
		call("AllReduce", "68719476737", "4") + // 4 bytes more: 2 calls of it
		call("AllReduce", "206158430208", "4") + // 768G: 3 calls
		call("AllGather", "68719476736", "4") + // 1T over 4 ranks: 4 calls
		call("AllReduce", "8", "2097152") // 2M ranks
	w, err := Read(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{{"all_gather", space.MaxSize, 4, 4}, {"all_reduce", space.MaxSize, 6, 4}}
	if !slices.Equal(w.Entries, want) {
		t.Errorf("entries = %v, want %v", w.Entries, want)
	}
	if o := w.Source.Oversize; len(o) != 2 || o["all_reduce"] != 2 || o["all_gather"] != 1 {
		t.Errorf("oversize = %v, want all_reduce 2, all_gather 1", o)
	}
	if s := w.Source; s.Malformed != 1 || !strings.Contains(s.FirstMalformed, "[nranks=2097152]") {
		t.Errorf("malformed %d, first %q", s.Malformed, s.FirstMalformed)
	}
}

// TestReadSendRecv checks how Send and Recv lines are counted: an alltoall
// made of them, and sendrecv otherwise.
func TestReadSendRecv(t *testing.T) {
	p2p := func(op string, peer, count string, comm string) string {
		return rank0 + op + ": opCount 3 sendbuff (nil) recvbuff 0x7f00 count " + count + " datatype 9 op 0 root " + peer + " comm " + comm + " [nranks=4] stream 0x55b0\n"
	}
	alltoall := func(first int, comm string) string {
		var s string
		for i := range 4 {
			peer := string(rune('0' + (first+i)%4))
			s += p2p("Send", peer, "256", comm) + p2p("Recv", peer, "256", comm)
		}
		return s
	}
	other := rank0 + strings.Replace(allRed, "comm 0x55a0", "comm 0x66a0", 1) + "\n"
	interrupted := strings.SplitAfter(alltoall(1, "0x55a0"), "\n")
	interrupted = slices.Insert(interrupted, 3, other)
	for _, tc := range []struct {
		name, log string
		want      []Entry
	}{
		{"alltoall from peer 0", alltoall(0, "0x55a0"), []Entry{{"alltoall", 2 << 10, 1, 4}}},
		{"alltoall from peer 2, twice", alltoall(2, "0x55a0") + alltoall(2, "0x55a0"), []Entry{{"alltoall", 2 << 10, 2, 4}}},
		{"alltoall with another communicator's call inside", strings.Join(interrupted, ""),
			[]Entry{{"all_reduce", 4 << 10, 1, 4}, {"alltoall", 2 << 10, 1, 4}}},
		{"sends of a pipeline stage", p2p("Send", "1", "256", "0x55a0") + p2p("Send", "1", "256", "0x55a0") + p2p("Send", "1", "256", "0x55a0"),
			[]Entry{{"sendrecv", 512, 3, 4}}},
		{"sends and receives of a middle stage", p2p("Recv", "0", "256", "0x55a0") + p2p("Send", "2", "256", "0x55a0") + p2p("Recv", "0", "256", "0x55a0") + p2p("Send", "2", "256", "0x55a0"),
			[]Entry{{"sendrecv", 512, 2, 4}}},
		{"a peer left out", strings.Replace(alltoall(0, "0x55a0"), "root 3", "root 2", 2) + rank0 + allRed + "\n",
			[]Entry{{"all_reduce", 4 << 10, 1, 4}, {"sendrecv", 512, 4, 4}}},
		{"peers no communicator has", p2p("Send", "-1", "256", "0x55a0") + p2p("Recv", "-1", "256", "0x55a0") + p2p("Send", "0", "256", "0x55a0") +
			p2p("Recv", "0", "256", "0x55a0") + p2p("Send", "5", "256", "0x55a0") + p2p("Send", "6", "256", "0x55a0") + rank0 + allRed + "\n",
			[]Entry{{"all_reduce", 4 << 10, 1, 4}, {"sendrecv", 512, 1, 4}}},
		{"uneven counts", p2p("Send", "0", "256", "0x55a0") + p2p("Recv", "0", "256", "0x55a0") + p2p("Send", "1", "512", "0x55a0") + p2p("Recv", "1", "512", "0x55a0"),
			[]Entry{{"sendrecv", 512, 1, 4}, {"sendrecv", 1 << 10, 1, 4}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := Read(strings.NewReader(tc.log))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(w.Entries, tc.want) {
				t.Errorf("entries:\n got %v\nwant %v", w.Entries, tc.want)
			}
		})
	}
}

// TestReadProcessChoice checks whose calls count where processes differ.
func TestReadProcessChoice(t *testing.T) {
	call := func(proc string, ranks string) string {
		return proc + " [0] NCCL INFO " + strings.Replace(allRed, "[nranks=4]", "[nranks="+ranks+"]", 1) + "\n"
	}
	log := call("b:2:2", "2") + call("b:2:2", "2") + call("a:1:1", "2") + call("b:2:2", "2") + // b is busier
		call("b:2:9", "4") + call("a:1:1", "4") // a tie, and tids do not matter
	w, err := Read(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	want := []Comms{
		{Ranks: 2, Process: "b:2 [0]", Processes: 2, Calls: 3, Fewest: 1, Communicators: 1},
		{Ranks: 4, Process: "a:1 [0]", Processes: 2, Calls: 1, Fewest: 1, Communicators: 1},
	}
	if !slices.Equal(w.Source.Comms, want) {
		t.Errorf("comms:\n got %+v\nwant %+v", w.Source.Comms, want)
	}
	if e := []Entry{{"all_reduce", 4 << 10, 3, 2}, {"all_reduce", 4 << 10, 1, 4}}; !slices.Equal(w.Entries, e) {
		t.Errorf("entries = %v, want %v", w.Entries, e)
	}
}

// TestReadBounded checks that a log of ever new sizes is refused before it
// fills memory.
func TestReadBounded(t *testing.T) {
	defer func(n int) { maxState = n }(maxState)
	maxState = 100
	var log strings.Builder
	for i := range 200 {
		log.WriteString(rank0 + strings.Replace(allRed, "count 1024", "count "+strconv.Itoa(i), 1) + "\n")
	}
	_, err := Read(strings.NewReader(log.String()))
	if err == nil || !strings.Contains(err.Error(), "line 99: over 100 distinct processes, communicators and message sizes: is this one job's NCCL log?") {
		t.Errorf("err = %v", err)
	}
	// Every rank's log of a job whose sizes vary from call to call (an
	// alltoall of uneven splits, as a mixture of experts sends) keeps each
	// process's sizes, though one process's are counted: it was asked
	// whether it was one job's log. One rank's log holds what is counted.
	log.Reset()
	for i := range 200 {
		log.WriteString(fmt.Sprintf("h:%d:1 [0] NCCL INFO ", i%8) + strings.Replace(allRed, "count 1024", "count "+strconv.Itoa(i/8+1), 1) + "\n")
	}
	_, err = Read(strings.NewReader(log.String()))
	if want := "line 85: over 100 distinct processes, communicators and message sizes, of 8 processes: give one process's log alone (rank 0's NCCL_DEBUG_FILE), whose calls are those counted"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want %q in it", err, want)
	}
}

func FuzzRead(f *testing.F) {
	for _, name := range []string{"nccl-2.18.3-rank0.log", "nccl-2.30.7-rank0.log"} {
		f.Add(testdata(f, name))
	}
	f.Add([]byte(version + rank0 + allRed + "\n" + rank0 + "Send: opCount 0 sendbuff (nil) recvbuff 0x1 count 4 datatype 0 op 0 root 0 comm 0x1 [nranks=1] stream 0x1\n"))
	f.Fuzz(func(t *testing.T, log []byte) {
		w, err := Read(bytes.NewReader(log))
		if err != nil {
			return
		}
		s := w.Source
		// A lone CR ends a record too (of a log not gzipped, which the
		// fuzzer hardly makes).
		records := s.Lines + int64(bytes.Count(log, []byte("\r")))
		if bytes.HasPrefix(log, []byte{0x1f, 0x8b}) {
			records = math.MaxInt64
		}
		if len(w.Entries) == 0 || s.Calls == 0 || records < s.Calls+s.Malformed+s.Skipped {
			t.Fatalf("no error but entries %v, source %+v", w.Entries, s)
		}
		for i, e := range w.Entries {
			// Within what a space takes, so that profile's tables load.
			if e.Count <= 0 || e.Bytes < 1 || e.Bytes > space.MaxSize || e.Ranks <= 0 || e.Ranks > space.MaxRanks {
				t.Fatalf("entry %+v", e)
			}
			if i > 0 && !entryLess(w.Entries[i-1], e) {
				t.Fatalf("entries out of order or repeated: %v", w.Entries)
			}
		}
		// The tables of one communicator size, as profile --ranks writes
		// them, load as a space's workload, entry for entry.
		ranks := w.Entries[0].Ranks
		w.Entries = slices.DeleteFunc(w.Entries, func(e Entry) bool { return e.Ranks != ranks })
		var out bytes.Buffer
		if err := w.WriteTOML(&out); err != nil {
			t.Fatal(err)
		}
		calls, err := space.ParseWorkload("the tables", out.Bytes())
		if err != nil || len(calls) != len(w.Entries) {
			t.Fatalf("%v (%d calls of %d entries) in\n%s", err, len(calls), len(w.Entries), out.String())
		}
		for i, c := range calls {
			if e := w.Entries[i]; c.Collective != e.Collective || c.Bytes != e.Bytes || c.Count != float64(e.Count) || c.Ranks != e.Ranks {
				t.Fatalf("call %d = %+v, entry %+v", i, c, e)
			}
		}
	})
}

func entryLess(a, b Entry) bool {
	if a.Collective != b.Collective {
		return a.Collective < b.Collective
	}
	if a.Bytes != b.Bytes {
		return a.Bytes < b.Bytes
	}
	return a.Ranks < b.Ranks
}

func testdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func readFile(t testing.TB, name string) *Workload {
	t.Helper()
	w, err := Read(bytes.NewReader(testdata(t, name)))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return w
}

// versionLines counts the lines of a testdata log that say NCCL's version.
func versionLines(t *testing.T, name string) int64 {
	return int64(bytes.Count(testdata(t, name), []byte("NCCL version ")))
}

// TestKeep: the calls a workload of one communicator size leaves out are
// those of that size. profile --ranks 8 kept the 8-rank entries, and its
// tables and summary said that calls of 0 bytes, a Gather and a call
// measured at 256G were among them, all of the 16-rank communicator's.
func TestKeep(t *testing.T) {
	call := func(op, count, ranks string) string {
		r := strings.Replace(allRed, "count 1024", "count "+count, 1)
		return rank0 + strings.Replace(strings.Replace(r, "AllReduce", op, 1), "[nranks=4]", "[nranks="+ranks+"]", 1) + "\n"
	}
	log := call("AllReduce", "1024", "8") + call("AllReduce", "0", "8") +
		call("AllReduce", "0", "16") + call("AllReduce", "300000000000", "16") + call("Gather", "5", "16") + call("AllReduce", "10", "16")
	w, err := Read(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	if s := w.Source; s.Empty["all_reduce"] != 2 || s.Oversize["all_reduce"] != 1 || s.Unmeasured["Gather"] != 1 || len(s.Comms) != 2 {
		t.Fatalf("source %+v", s)
	}
	// A size the log has no call of is refused with the sizes it has, and
	// the workload left whole (it kept no entry).
	if err := w.Keep(4); err == nil || err.Error() != "no calls on communicators of 4 ranks; the log's are on communicators of 8 (1 call), 16 (6 calls) ranks" || len(w.Entries) != 3 {
		t.Errorf("keep 4: %v, entries %v", err, w.Entries)
	}
	if err := w.Keep(8); err != nil {
		t.Fatal(err)
	}
	s := w.Source
	if want := []Entry{{"all_reduce", 4 << 10, 1, 8}}; !slices.Equal(w.Entries, want) {
		t.Errorf("entries = %v, want %v", w.Entries, want)
	}
	if len(s.Comms) != 1 || s.Comms[0].Ranks != 8 || len(s.Empty) != 1 || s.Empty["all_reduce"] != 1 || len(s.Oversize) != 0 || len(s.Unmeasured) != 0 {
		t.Errorf("kept 8 ranks: comms %+v, empty %v, oversize %v, unmeasured %v; want the 8-rank communicators, 1 empty all_reduce, nothing else",
			s.Comms, s.Empty, s.Oversize, s.Unmeasured)
	}
	var out bytes.Buffer
	if err := w.WriteSummary(&out); err != nil || strings.Contains(out.String(), "256G") || strings.Contains(out.String(), "Gather") {
		t.Errorf("summary of 8 ranks (%v):\n%s", err, out.String())
	}
}

// TestReadTimestampsGluedToTheHost: a timestamp format that ends in no
// space (NCCL_DEBUG_TIMESTAMP_FORMAT="%T.%3f") glues digits that change
// with every line to the host: each line was a process of its own, and the
// one counted made a single call.
func TestReadTimestampsGluedToTheHost(t *testing.T) {
	var log strings.Builder
	for i := range 50 {
		log.WriteString("10:15:01." + strconv.Itoa(100+i) + "gpu-a:1:1 [0] NCCL INFO " + allRed + "\n")
	}
	w, err := Read(strings.NewReader(log.String()))
	if err != nil {
		t.Fatal(err)
	}
	if want := []Entry{{"all_reduce", 4 << 10, 50, 4}}; w.Source.Processes != 1 || !slices.Equal(w.Entries, want) {
		t.Errorf("%d processes, entries %v; want 1 process, %v", w.Source.Processes, w.Entries, want)
	}
}

// TestReadHostsThatStartWithDigits: hosts whose names start with digits
// ("1node", "2node") are processes of their own, though their pids are the
// same (as containers' are): their names lost the digits, and the two
// processes were one, counted as making every call twice.
func TestReadHostsThatStartWithDigits(t *testing.T) {
	var log strings.Builder
	for range 5 {
		for _, host := range []string{"1node", "2node"} {
			log.WriteString(host + ":7:7 [0] NCCL INFO " + allRed + "\n")
		}
	}
	w, err := Read(strings.NewReader(log.String()))
	if err != nil {
		t.Fatal(err)
	}
	if want := []Entry{{"all_reduce", 4 << 10, 5, 4}}; w.Source.Processes != 2 || !slices.Equal(w.Entries, want) {
		t.Errorf("%d processes, entries %v; want 2 processes, %v", w.Source.Processes, w.Entries, want)
	}
}

// TestReadLongCRLine: a line longer than the read buffer that holds lone
// CRs (a log of CR line ends past 64 KiB, a progress bar's thousands of
// updates before NCCL's line) was skipped whole, its NCCL records lost
// without a word; its records are read as those of a shorter line.
func TestReadLongCRLine(t *testing.T) {
	good := rank0 + allRed
	bar := strings.Repeat(" 10%|#         | 1/10\r", 5000) // 110 KB
	log := strings.Repeat(good+"\r", 1000) +               // CR line ends, 190 KB
		bar + good + "\n" +
		bar + strings.Repeat("x", 70<<10) + "\r" + good + "\n" // a record longer than any NCCL line
	w, err := Read(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	if want := []Entry{{"all_reduce", 4 << 10, 1002, 4}}; !slices.Equal(w.Entries, want) {
		t.Errorf("entries = %v, want %v", w.Entries, want)
	}
	if s := w.Source; s.Lines != 2 || s.Calls != 1002 || s.Skipped != 10001 {
		t.Errorf("lines %d, calls %d, skipped %d; want 2, 1002, 10001", s.Lines, s.Calls, s.Skipped)
	}
}
