package runner

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nccltune/nccltune/space"
)

// metrics are a regex's and a JSON key's metric, as a space gives them.
func metrics(t testing.TB) []UserCommand {
	var out []UserCommand
	for _, m := range []space.Metric{{Regex: `time: (\S+) ms`, Goal: "min"}, {JSON: "ms", Goal: "max", Skip: 1}} {
		b, err := newUserCommand(space.BenchmarkSettings{Kind: space.Command, Command: []string{"x"}, Metric: m}, space.LauncherSettings{})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b.(UserCommand))
	}
	return out
}

// FuzzMetric: whatever a user's program prints, a line Keep passes over
// holds no value of the metric and no ambiguity; the values read are
// positive and finite; and the measurement is their median, or its inverse.
func FuzzMetric(f *testing.F) {
	f.Add("[1,1]<stdout>:step 7 time: 0.41 ms[1,0]<stdout>:step 7 time: 0.40 ms[1,1]<stdout>:\n")
	f.Add("time: 5 ms, data time: 1 ms\ntime: 5 mstime: 6 ms\ntime: 0x1p3 ms\n")
	f.Add(`[default0]:[rank0]: {"step": 1, "ms": 5e4}{"step": 2, "ms": "6e4"}` + "\n" + `{"name": "ms", "ms": 0.5}`)
	metrics := metrics(f)
	f.Fuzz(func(t *testing.T, out string) {
		for _, c := range metrics {
			for _, line := range strings.Split(out, "\n") {
				if vs, _, fail := c.values([]string{line}); !c.Keep(line) && (fail != nil || len(vs) > 0) {
					t.Fatalf("%s: %q passed over, yet it reads %v, %v", c.Metric, line, vs, fail)
				}
			}
			perRank, _, fail := c.values(strings.Split(out, "\n"))
			if fail != nil {
				continue
			}
			lo, hi := 1e300, 1e-300
			for _, vs := range perRank {
				for _, v := range vs[min(len(vs), c.Metric.Skip):] {
					if !(v >= 1e-300 && v <= 1e300) {
						t.Fatalf("%s: value %v", c.Metric, v)
					}
					lo, hi = min(lo, v), max(hi, v)
				}
			}
			m, _ := c.Read(Plan{}, Output{Kept: strings.Split(out, "\n")})
			if c.Metric.Goal == "min" && m != nil {
				m.Value = 1 / m.Value
			}
			if m != nil && !(m.Value >= lo*(1-1e-9) && m.Value <= hi*(1+1e-9)) { // the inverse's inverse rounds
				t.Fatalf("%s: measured %v of values in [%v, %v]", c.Metric, m.Value, lo, hi)
			}
		}
	})
}

// TestMetricScales: an output of lines of the metric repeated, run
// together, or tagged over and over, reads in about a second; before
// lineRank, a line of 64 KiB of "time: 5 ms" took 12 s.
func TestMetricScales(t *testing.T) {
	if testing.Short() {
		t.Skip("reads large outputs")
	}
	const size = 2 << 20
	// Eight lines of the longest kept: a blow-up within a line, 12 s a line
	// before lineRank, shows in them as in more; many lines take the size.
	line := func(unit string) string {
		return strings.Repeat(strings.Repeat(unit, (maxLine-1)/len(unit))+"\n", 8)
	}
	for _, c := range metrics(t) {
		for name, out := range map[string]string{
			"run together": line("time: 5 ms"),
			"objects":      line(`{"ms": 5}`),
			"tags":         line("[1,0]<stdout>:"),
			"tagged":       line("[rank1]:time: 5 ms"),
			"many lines":   strings.Repeat(`[rank1]:{"ms": 5}`+"\n", size/18),
		} {
			start := time.Now()
			c.Read(Plan{}, outputOf(c, []byte(out)))
			// 10x what it takes on a slow machine: a blow-up takes minutes.
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("%s, %s: %d bytes read in %v", c.Metric, name, len(out), d)
			}
		}
	}
}

// FuzzCapture: however the launcher's output is cut into writes, the
// capture keeps the same output and lines, and output without mpirun's
// tags as it came.
func FuzzCapture(f *testing.F) {
	f.Add("[1,0]<stdout>:ms: 1Mon Dec  7 04:05:01 2026[1,1]<stdout>:ms: 100\n[1,0]<stdout>:00\n", 20)
	f.Add("[1,1]<stderr>:\rt=1\rt=2[1,1]<stderr>:\r\n[1,0]<stdout>:a\r[1,0]<stdout>:\nend[1,0]<stdout>:x", 7)
	f.Add("plain [1,0] text\r\nSun Dec  6 14:45:56 2026<stdout>:x\n[rank0]: y\n[1,0]<stdout", 60)
	f.Fuzz(func(t *testing.T, out string, split int) {
		split = min(max(split, 0), len(out))
		capture := func(parts ...string) *capture {
			c := &capture{limit: 1 << 20, keep: func(string) bool { return true }}
			for _, p := range parts {
				c.Write([]byte(p))
			}
			return c
		}
		whole, cut := capture(out), capture(out[:split], out[split:])
		if a, b := string(whole.Bytes()), string(cut.Bytes()); a != b {
			t.Fatalf("written whole:\n%q\nwritten at %d:\n%q", a, split, b)
		}
		if a, b := keptLines(whole), keptLines(cut); !slices.Equal(a, b) {
			t.Fatalf("kept of it written whole:\n%q\nwritten at %d:\n%q", a, split, b)
		}
		if got := string(whole.Bytes()); !strings.Contains(out, "]<std") && got != out {
			t.Fatalf("untagged output %q captured as %q", out, got)
		}
	})
}
