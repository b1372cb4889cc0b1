// Package text makes text from untrusted places (a store anyone could have
// altered, a benchmark's output) safe to write where it would be read as
// more than text: a comment in a file a shell sources, a terminal.
package text

import (
	"fmt"
	"strings"
	"unicode"
)

// Graphic escapes, as \uXXXX, every character of s that is not graphic (a
// control character, a line or paragraph separator, an escape sequence's
// ESC) and not among keep.
func Graphic(s, keep string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsGraphic(r) && !strings.ContainsRune(keep, r) }) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unicode.IsGraphic(r) || strings.ContainsRune(keep, r) {
			b.WriteRune(r)
		} else {
			fmt.Fprintf(&b, "\\u%04x", r)
		}
	}
	return b.String()
}
