package workload

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/BurntSushi/toml"

	"github.com/nccltune/nccltune/space"
)

func TestWriteTOML(t *testing.T) {
	w := readFile(t, "nccl-2.30.7-rank0.log")
	w.Source.File = "job.log"
	var out strings.Builder
	if err := w.WriteTOML(&out); err != nil {
		t.Fatal(err)
	}
	want := `# written by nccltune profile from job.log (NCCL 2.30.7): 3 collectives, 4 sizes, 12 calls
# communicators of 2 ranks: 1 process, counted node001:4242 [0]
# communicators of 8 ranks: 1 process, counted node001:4242 [0]
# communicators of 16 ranks: 1 process, counted node001:4242 [0]
# left out, as no nccltune benchmark measures them: calls of Gather 1, PutSignal 2, WaitSignal 2

[[workload]]
collective = "all_reduce"
size = "16M"
count = 6
ranks = 8

[[workload]]
collective = "all_reduce"
size = "128M"
count = 2
ranks = 2

[[workload]]
collective = "alltoall"
size = "4M"
count = 2
ranks = 16

[[workload]]
collective = "reduce_scatter"
size = "16M"
count = 2
ranks = 8
`
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

// TestWriteTOMLReadsBack checks that what WriteTOML writes is TOML that
// gives back the entries, with odd names and sizes of no round unit.
func TestWriteTOMLReadsBack(t *testing.T) {
	w := readFile(t, "nccl-2.28.3-all.log")
	w.Source.File = "job\n[[workload]].log"
	w.Source.Comms[0].Process = "host\r:1 [0]"
	w.Source.Comms[0].Fewest = 1
	w.Source.Unmeasured = map[string]int64{"Gather": 3}
	w.Entries = append(w.Entries, Entry{"broadcast", 1000, 7, 0}, Entry{"reduce", 3 << 20, 1, 4})
	var out strings.Builder
	if err := w.WriteTOML(&out); err != nil {
		t.Fatal(err)
	}
	var file struct {
		Workload []struct {
			Collective, Size string
			Count            int64
			Ranks            int
		}
	}
	if _, err := toml.Decode(out.String(), &file); err != nil {
		t.Fatalf("%v in\n%s", err, out.String())
	}
	if len(file.Workload) != len(w.Entries) {
		t.Fatalf("%d [[workload]] tables, want %d:\n%s", len(file.Workload), len(w.Entries), out.String())
	}
	for i, got := range file.Workload {
		size, err := space.ParseSize(got.Size)
		e := w.Entries[i]
		if err != nil || got.Collective != e.Collective || size != e.Bytes || got.Count != e.Count || got.Ranks != e.Ranks {
			t.Errorf("table %d = %+v (%v), want %+v", i, got, err, e)
		}
	}
}

func TestSummary(t *testing.T) {
	w := readFile(t, "nccl-2.28.3-all.log")
	got := w.Summary()
	total := float64(166<<20 + 8)
	want := []Share{
		{"all_reduce", 8, 110<<20 + 2*4, (110<<20 + 8) / total},
		{"sendrecv", 8, 32 << 20, 32 << 20 / total},
		{"alltoall", 4, 16 << 20, 16 << 20 / total},
		{"all_gather", 2, 8 << 20, 8 << 20 / total},
	}
	if len(got) != len(want) {
		t.Fatalf("summary = %v, want %v", got, want)
	}
	for i := range want {
		g, x := got[i], want[i]
		if g.Collective != x.Collective || g.Calls != x.Calls || g.Bytes != x.Bytes || g.Fraction < x.Fraction-1e-9 || g.Fraction > x.Fraction+1e-9 {
			t.Errorf("share %d = %+v, want %+v", i, g, x)
		}
	}
	var out strings.Builder
	if err := w.WriteSummary(&out); err != nil {
		t.Fatal(err)
	}
	table := `collective       calls   bytes moved   share
all_reduce           8     110.0 MiB   66.3%
sendrecv             8      32.0 MiB   19.3%
alltoall             4      16.0 MiB    9.6%
all_gather           2       8.0 MiB    4.8%
total               22     166.0 MiB
`
	if out.String() != table {
		t.Errorf("table:\n%s\nwant\n%s", out.String(), table)
	}
}

// TestWriteTOMLOfALogNotUTF8: a COLL line that could not be read is quoted
// in the tables' comments; one with bytes that are not UTF-8 (and no control
// character) went in as it was, and the file, appended to a space file as
// the README says, no longer loaded ("invalid UTF-8 byte"). So did a version
// line's bytes, in the header.
func TestWriteTOMLOfALogNotUTF8(t *testing.T) {
	log := "node001:4242:4242 [0] NCCL INFO NCCL version 2.28.3\xff+cuda13.0\n" +
		"node001:4242:4242 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x7f00 recvbuff 0x7f00 count 1024 datatype 7 op 0 root 0 comm 0x55aa [nranks=8] stream 0x1\n" +
		"node001:4242:4242 [0] NCCL INFO AllReduce: opCount 1 sendbuff \xff\xfe count 8 datatype 7 op 0 root 0 comm 0x55aa [nranks=8] stream 0x1\n"
	w, err := Read(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	w.Source.File = "job-\xff.log"
	var out strings.Builder
	if err := w.WriteTOML(&out); err != nil {
		t.Fatal(err)
	}
	if !utf8.ValidString(out.String()) {
		t.Errorf("not UTF-8:\n%q", out.String())
	}
	var file struct{ Workload []map[string]any }
	if _, err := toml.Decode(out.String(), &file); err != nil || len(file.Workload) != 1 {
		t.Errorf("%v (%d tables) in\n%s", err, len(file.Workload), out.String())
	}
}

// TestWriteTOMLCountsOne: the header counted one of anything as many ("1
// collectives, 1 sizes, 1 calls").
func TestWriteTOMLCountsOne(t *testing.T) {
	w := &Workload{Entries: []Entry{{Collective: "all_reduce", Bytes: 8, Count: 1, Ranks: 1}},
		Source: Source{Comms: []Comms{{Ranks: 1, Process: "node001:1 [0]", Processes: 2, Calls: 1, Fewest: 0}}}}
	var out strings.Builder
	if err := w.WriteTOML(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{": 1 collective, 1 size, 1 call\n", "# communicators of 1 rank: 2 processes", "(1 call; the fewest of any process 0)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("lacks %q:\n%s", want, out.String())
		}
	}
}

// TestWriteTOMLSaysCommunicatorsOfOneSizeAddUp: the 2.18.3 job's rank made
// its calls on a tensor-parallel and a data-parallel group, both of 2
// ranks, one within its node and one across nodes. Their size cannot tell
// them apart, so their calls are added up, and a campaign measures all of
// them on the one layout of 2 ranks it launches: the tables and the
// summary say so, where they said nothing (and the README promised that
// profile asks for --ranks for such a job).
func TestWriteTOMLSaysCommunicatorsOfOneSizeAddUp(t *testing.T) {
	w := readFile(t, "nccl-2.18.3-rank0.log")
	want := "the counted process called on 2 communicators of 2 ranks"
	var tables, summary strings.Builder
	if err := w.WriteTOML(&tables); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteSummary(&summary); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"tables": tables.String(), "summary": summary.String()} {
		if !strings.Contains(out, want) {
			t.Errorf("%s do not say %q:\n%s", name, want, out)
		}
	}
	if err := w.Keep(4); err != nil {
		t.Fatal(err)
	}
	tables.Reset()
	if err := w.WriteTOML(&tables); err != nil || strings.Contains(tables.String(), "called on") {
		t.Errorf("the 4-rank tables (one communicator a process) say that several add up (%v):\n%s", err, tables.String())
	}
}
