package text

import (
	"bufio"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
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
