package text

import "testing"

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
