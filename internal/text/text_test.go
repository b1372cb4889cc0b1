package text

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"
	"unicode"
)

func TestGraphic(t *testing.T) {
	for _, tc := range []struct{ in, keep, want string }{
		{"plain text, café", "", "plain text, café"},
		{"a\nb", "", `a\u000ab`},
		{"a\nb\tc", "\n\t", "a\nb\tc"},
		{"\x1b[2J\r\u2028\u0085", "\n", `\u001b[2J\u000d\u2028\u0085`},
	} {
		if got := Graphic(tc.in, tc.keep); got != tc.want {
			t.Errorf("Graphic(%q, %q) = %q, want %q", tc.in, tc.keep, got, tc.want)
		}
	}
}

// TestEscapingAllocatesOnce: text that is nothing but characters to
// escape (a store's value edited to them) is escaped into one allocation
// of its final size: a fmt call a character, into a text grown as it went,
// took status 31 s and 2.8 GB over a stop reason of 100 MB of NUL bytes.
func TestEscapingAllocatesOnce(t *testing.T) {
	s := strings.Repeat("\x00\u2028\U000E0041", 1000)
	for _, tc := range []struct {
		name   string
		escape func(string) string
		want   string
	}{
		{"Graphic", func(s string) string { return Graphic(s, "") }, `\u0000\u2028\ue0041`},
		{"JSON", JSON, `\u0000\u2028\udb40\udc41`},
	} {
		if got := tc.escape(s); got != strings.Repeat(tc.want, 1000) {
			t.Errorf("%s: %.40q...", tc.name, got)
		}
		if n := testing.AllocsPerRun(5, func() { tc.escape(s) }); n > 1 {
			t.Errorf("%s: %v allocations to escape 3000 characters", tc.name, n)
		}
	}
}

func TestLines(t *testing.T) {
	long := strings.Repeat("x", 100)
	for _, tc := range []struct {
		name, in string
		want     []string
	}{
		{"short lines", "a\nb\r\nc", []string{"a", "b", "c"}},
		// A long line is passed over whole, never read cut ("12345" as "1234").
		{"a long line is passed over, the next kept", long + "\nafter\n", []string{"after"}},
		{"a long last line", "before\n" + long, []string{"before"}},
		{"a long last line ended", "before\n" + long + "\n", []string{"before"}},
		{"max bytes exactly", long[:10] + "\n" + long[:11] + "\nz", []string{long[:10], "z"}},
		{"max bytes exactly, last", "a\n" + long[:10], []string{"a", long[:10]}},
		{"a number past max", "t=123456789\nt=1\n", []string{"t=1"}},
		{"empty lines", "\n\n", []string{"", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A small buffer, as a long output meets a scanner's large one.
			sc := bufio.NewScanner(iotest.OneByteReader(strings.NewReader(tc.in)))
			sc.Buffer(make([]byte, 4), 16)
			sc.Split(Lines(10))
			var got []string
			for sc.Scan() {
				got = append(got, sc.Text())
			}
			if err := sc.Err(); err != nil || !slices.Equal(got, tc.want) {
				t.Errorf("lines %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestDecimal(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
		err  error // nil: read
	}{
		{"12.5", 12.5, nil}, {"1e+06", 1e6, nil}, {"2E-07", 2e-7, nil}, {".5", 0.5, nil}, {"5.", 5, nil},
		{"-3", -3, nil}, {"+3", 3, nil}, {"0", 0, nil}, {"0.00", 0, nil}, {"0e+00", 0, nil},
		// Go reads these; no printf writes them, or they are no measurement.
		{"0x1p3", 0, ErrNotDecimal}, {"0X10", 0, ErrNotDecimal}, {"1_000", 0, ErrNotDecimal}, {"2_0.5", 0, ErrNotDecimal},
		{"Inf", 0, ErrNotDecimal}, {"+Inf", 0, ErrNotDecimal}, {"-inf", 0, ErrNotDecimal}, {"infinity", 0, ErrNotDecimal},
		{"NaN", 0, ErrNotDecimal}, {"nan", 0, ErrNotDecimal}, {"", 0, ErrNotDecimal}, {" 5", 0, ErrNotDecimal}, {"1.2.3", 0, ErrNotDecimal},
		// Beyond a float64: read, they would not be the number written.
		{"1e400", 0, strconv.ErrRange}, {"-1e400", 0, strconv.ErrRange}, {"1e-400", 0, strconv.ErrRange},
	} {
		v, err := Decimal(tc.in)
		if tc.err == nil && (err != nil || v != tc.want) || tc.err != nil && !errors.Is(err, tc.err) {
			t.Errorf("Decimal(%q) = %v, %v; want %v, %v", tc.in, v, err, tc.want, tc.err)
		}
	}
}

func TestJSONMembers(t *testing.T) {
	for _, tc := range []struct {
		in   string
		keys []string // nil: an error
	}{
		{`{"a": 1, "b": {"a": 2}, "a": "x"}`, []string{"a", "b", "a"}},
		{`{"\u0061": 1} `, []string{"a"}},
		{`{}`, []string{}},
		{`{"a": 1} {"b": 2}`, nil},
		{`[1]`, nil},
		{`{"a": 1`, nil},
		{`{"a" 1}`, nil},
	} {
		ms, err := JSONMembers([]byte(tc.in))
		keys := []string{}
		for _, m := range ms {
			keys = append(keys, m.Key)
		}
		if tc.keys == nil && err == nil || tc.keys != nil && (err != nil || !slices.Equal(keys, tc.keys)) {
			t.Errorf("JSONMembers(%s) = %q, %v; want %q", tc.in, keys, err, tc.keys)
		}
	}
}

func TestPrefix(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"abc", 5, "abc"}, {"abc", 3, "abc"}, {"abc", 2, "ab"}, {"abc", 0, ""},
		{"aé", 2, "a"}, {"aé", 3, "aé"}, {"€x", 1, ""}, {"€x", 3, "€"},
	} {
		if got := Prefix(tc.s, tc.n); got != tc.want {
			t.Errorf("Prefix(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}

// TestNearestOfAHugeName: a name far longer than every candidate is near
// none, and is not compared letter by letter with each (a space file's 5 MB
// variable name took the loader 14 s to suggest nothing).
func TestNearestOfAHugeName(t *testing.T) {
	var candidates []string
	for i := range 100 {
		candidates = append(candidates, fmt.Sprintf("NCCL_VARIABLE_%d", i))
	}
	start := time.Now()
	if got := Nearest("NCCL_"+strings.Repeat("A", 4<<20), candidates); got != "" {
		t.Errorf("suggested %q", got)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %s", d)
	}
	if got := Nearest("NCCL_VARIABLE_7x", candidates); got != "NCCL_VARIABLE_7" {
		t.Errorf("NCCL_VARIABLE_7x: suggested %q", got)
	}
}

// TestJSON: every character that is not graphic is escaped in JSON text,
// past U+FFFF as a surrogate pair (a plain \u takes four digits), and the
// text decodes to the values it held.
func TestJSON(t *testing.T) {
	for _, s := range []string{"plain ✓", "csi \u009b2J", "del \u007f", "bidi \u202e", "tag \U000E0041", "nl\n tab\t", ""} {
		data, err := json.MarshalIndent(map[string]string{"s": s}, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		got := JSON(string(data))
		if strings.ContainsFunc(got, func(r rune) bool { return !unicode.IsGraphic(r) && r != '\n' }) {
			t.Errorf("JSON(%q) = %q: a character that is not graphic raw", data, got)
		}
		var back map[string]string
		if err := json.Unmarshal([]byte(got), &back); err != nil || back["s"] != s {
			t.Errorf("JSON(%q) = %q decodes to %q (%v)", data, got, back["s"], err)
		}
	}
}

func TestBounded(t *testing.T) {
	for _, tc := range []struct {
		format string
		v      float64
		want   string
	}{
		{"%.2f", 12.345, "12.35"},
		{"%+.1f%%", 4.25, "+4.2%"},
		{"%.2f", 1e300, "1.00e+300"},
		{"%+.1f%%", -1e300, "-1.0e+300%"},
		{"%8.0f", 999999999, "999999999"},
		{"%.0f", 1e9, "1e+09"},
		{"%.2f", 4.9e-324, "0.00"},
		{"%.4g", 1e300, "1e+300"},
		{"%f", math.Inf(1), "+Inf"},
	} {
		if got := fmt.Sprintf(tc.format, Bounded(tc.v)); got != tc.want {
			t.Errorf("Sprintf(%q, %g) = %q, want %q", tc.format, tc.v, got, tc.want)
		}
	}
}
