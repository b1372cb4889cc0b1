package mpitag

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/nccltune/nccltune/runner/nccltests"
)

// joined is what a Joiner passes on of the writes given, flushed, its
// bounds checked as it holds them.
func joined(t testing.TB, writes ...string) string {
	var j Joiner
	var b bytes.Buffer
	for _, w := range writes {
		j.Write([]byte(w), func(p []byte) { b.Write(p) })
		if j.pending > MaxPending {
			t.Fatalf("the ranks' unfinished lines hold %d bytes", j.pending)
		}
	}
	for _, l := range j.lines {
		if len(l.text) > MaxLine {
			t.Fatalf("a rank's unfinished line holds %d bytes", len(l.text))
		}
	}
	j.Flush(func(p []byte) { b.Write(p) })
	return b.String()
}

// TestJoinerBoundsARanksLine: a rank that sends no newline holds no more
// than MaxLine: its line is left out, a note in its place, and the other
// ranks' lines and its own after its newline pass on.
func TestJoinerBoundsARanksLine(t *testing.T) {
	writes := []string{"[1,0]<stdout>:ms: 1"}
	for i := range 2500 { // 10 MB
		writes = append(writes, "[1,0]<stdout>:"+strings.Repeat("0", 4000))
		if i%1000 == 0 {
			writes = append(writes, "[1,1]<stdout>:ms: 5\n")
		}
	}
	writes = append(writes, "[1,0]<stdout>:0\n[1,0]<stdout>:ms: 7\n")
	want := strings.Repeat("[1,1]<stdout>:ms: 5\n", 3) + "[1,0]<stdout>:" + CutNote + "\n[1,0]<stdout>:ms: 7\n"
	if got := joined(t, writes...); got != want {
		t.Errorf("joined %.300q, want %q", got, want)
	}
}

// TestJoinerCutPartEndsAtCR: a '\r' ends a part of a rank's line that was
// cut as it ends one that was not: a progress bar's values after a part
// too long to hold (a dumped tensor) are read, as they were before the
// Joiner, not dropped up to the line's newline.
func TestJoinerCutPartEndsAtCR(t *testing.T) {
	got := joined(t, "[1,0]<stdout>:"+strings.Repeat("x", MaxLine+1)+"\rms: 5\r", "[1,0]<stdout>:ms: 6\r\n")
	want := "[1,0]<stdout>:" + CutNote + "\r[1,0]<stdout>:ms: 5\r[1,0]<stdout>:ms: 6\r\n"
	if got != want {
		t.Errorf("joined %q, want %q", got, want)
	}
}

// TestJoinerBoundsUnfinishedLines: the ranks' unfinished lines together
// hold no more than MaxPending (joined), however many ranks a program's
// output names; the chunks past it pass on as they came.
func TestJoinerBoundsUnfinishedLines(t *testing.T) {
	var writes []string
	text := strings.Repeat("x", 40)
	for rank := range 200000 {
		writes = append(writes, fmt.Sprintf("[1,%d]<stdout>:%s", rank, text))
	}
	if n := strings.Count(joined(t, writes...), text); n != 200000 {
		t.Errorf("%d of 200000 ranks' unfinished lines passed on", n)
	}
}

// FuzzJoiner: however the output is cut into writes, or read through a
// Reader, it is joined alike; output without a tag passes as it came; the
// ranks' unfinished lines stay within their bounds (joined); nextTag finds
// the tag a regexp of it does.
func FuzzJoiner(f *testing.F) {
	f.Add("[1,0]<stdout>:ms: 1Mon Dec  7 04:05:01 2026[1,1]<stdout>:ms: 100\n[1,0]<stdout>:00\n", 20)
	f.Add("[1,1]<stderr>:\rt=1\rt=2[1,1]<stderr>:\r\n[1,0]<stdout>:a\r[1,0]<stdout>:\nend[1,0]<stdout>:x", 7)
	f.Add("plain [1,0] text\r\nSun Dec  6 14:45:56 2026<stdout>:x\n[rank0]: y\n[1,0]<stdout", 60)
	f.Add("[1,[2,3]<stdin>:[,1]<stdout>:x Sun Dec  6 14:45:56 2026[12,3]<stderr>:y", 30)
	// A tag-like text longer than a tag (mpirun's ranks and jobs have 10
	// digits at most), which a write may cut past what the Joiner holds.
	long := "[" + strings.Repeat("1", 100) + ",0]<stdout>:"
	f.Add(long+"ms: 1[1,1]<stdout>:x\n"+long+"00\n", 101)
	tagRE := regexp.MustCompile(`(?:` + nccltests.MPIRunTime + `)?(\[\d{1,10},\d{1,10}\]<std(?:out|err)>):`)
	f.Fuzz(func(t *testing.T, out string, split int) {
		want := tagRE.FindStringSubmatchIndex(out)
		at, end, rank := nextTag([]byte(out))
		if want == nil && at >= 0 || want != nil && (at != want[0] || end != want[1] || string(rank) != out[want[2]:want[3]]) {
			t.Fatalf("nextTag(%q) = %d, %d, %q; the regexp finds %v", out, at, end, rank, want)
		}
		split = min(max(split, 0), len(out))
		whole := joined(t, out)
		if cut := joined(t, out[:split], out[split:]); cut != whole {
			t.Fatalf("written whole:\n%q\nwritten at %d:\n%q", whole, split, cut)
		}
		read, err := io.ReadAll(NewReader(iotest.OneByteReader(strings.NewReader(out))))
		if err != nil || string(read) != whole {
			t.Fatalf("written:\n%q\nread (%v):\n%q", whole, err, read)
		}
		if !strings.Contains(out, "]<std") && whole != out {
			t.Fatalf("untagged output %q joined as %q", out, whole)
		}
	})
}
