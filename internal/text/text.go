// Package text is for text from untrusted places (a store anyone could
// have altered, a benchmark's output): it makes it safe to write where it
// would be read as more than text (a comment in a file a shell sources, a
// terminal), and reads lines, numbers and JSON objects from it strictly;
// Count writes a count in words for the messages that quote such text.
package text

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Graphic escapes, as \uXXXX, every character of s that is not graphic (a
// control character, a line or paragraph separator, an escape sequence's
// ESC) and not among keep.
func Graphic(s, keep string) string {
	n := count(s, func(r rune) bool { return !unicode.IsGraphic(r) && !strings.ContainsRune(keep, r) })
	if n == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + n*maxEscapeGrowth)
	for _, r := range s {
		if unicode.IsGraphic(r) || strings.ContainsRune(keep, r) {
			b.WriteRune(r)
		} else {
			escape(&b, r)
		}
	}
	return b.String()
}

// count is how many characters of s are to be escaped.
func count(s string, escaped func(rune) bool) int {
	n := 0
	for _, r := range s {
		if escaped(r) {
			n++
		}
	}
	return n
}

// maxEscapeGrowth is the most an escaped character adds to the text: one
// past U+FFFF, 4 bytes, is 12 as JSON's surrogate pair.
const maxEscapeGrowth = 8

// escape writes r as \u and its hexadecimal code, four digits at least, as
// %04x would, by hand: Graphic and JSON escape text that may be nothing
// else (a store's value edited to NUL bytes), and a fmt call a character,
// into a text grown as it went, took 34 s and gigabytes over 100 MB.
func escape(b *strings.Builder, r rune) {
	var digits [8]byte
	hex := strconv.AppendInt(digits[:0], int64(r), 16)
	b.WriteString(`\u`)
	for range 4 - len(hex) {
		b.WriteByte('0')
	}
	b.Write(hex)
}

// JSON is JSON text s with every character that is not graphic escaped as
// \uXXXX (a surrogate pair past U+FFFF) but its line breaks: encoding/json
// writes raw, inside the strings it quotes, DEL, C1 (a terminal's CSI), a
// bidirectional override or a zero-width space from an untrusted place (a
// benchmark's failure), which the text then still decodes to, and no
// terminal or file gets raw. Outside strings JSON has only graphic
// characters and the line breaks of its indentation (one inside a string
// json escapes), which stay.
func JSON(s string) string {
	n := count(s, func(r rune) bool { return !unicode.IsGraphic(r) && r != '\n' })
	if n == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + n*maxEscapeGrowth)
	for _, r := range s {
		switch {
		case unicode.IsGraphic(r) || r == '\n':
			b.WriteRune(r)
		case r > 0xffff:
			hi, lo := utf16.EncodeRune(r)
			escape(&b, hi)
			escape(&b, lo)
		default:
			escape(&b, r)
		}
	}
	return b.String()
}

// Clean is s made fit to quote in a message: invalid UTF-8 replaced, and
// every character that is not graphic escaped.
func Clean(s string) string { return Graphic(strings.ToValidUTF8(s, "\uFFFD"), "") }

// Prefix is s's first n bytes at most, less the start of a character they
// would split: a cut that leaves valid UTF-8 valid.
func Prefix(s string, n int) string {
	if n >= len(s) {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Lines is a bufio.SplitFunc, like bufio.ScanLines, for text from untrusted
// places (a benchmark's output): a line of more than max bytes before its
// '\n' is passed over whole, so that one over-long line neither stops the
// scanner (bufio.ErrTooLong) nor hides the lines after it. It is not cut:
// cut, its end could fall inside a number, which would read as a shorter
// one. The scanner's buffer must be able to hold max+1 bytes.
func Lines(max int) bufio.SplitFunc {
	skipping := false
	return func(data []byte, atEOF bool) (int, []byte, error) {
		i := bytes.IndexByte(data, '\n')
		switch {
		case skipping && i < 0:
			return len(data), nil, nil
		case skipping:
			skipping = false
			return i + 1, nil, nil
		case i > max:
			return i + 1, nil, nil
		case i < 0 && len(data) > max:
			skipping = true
			return len(data), nil, nil
		}
		return bufio.ScanLines(data, atEOF)
	}
}

// Nearest is the candidate closest to name by edit distance, near enough to
// be what a typo meant (fewer edits than a third of name's length, plus 2,
// and than the length itself: any one letter is one edit from every other),
// the first in sort order on a tie; "" if none is.
func Nearest(name string, candidates []string) string {
	best, bestDist := "", min(len(name)/3+2, len(name))
	for _, c := range candidates {
		if max(len(name)-len(c), len(c)-len(name)) > bestDist {
			// The distance is at least the difference in length: a name of
			// megabytes is near no candidate, and was compared with each.
			continue
		}
		if d := editDistance(name, c); d < bestDist || d == bestDist && c < best {
			best, bestDist = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev, cur := make([]int, len(b)+1), make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Count is n and the noun that counts it: "1 call", "2 calls".
func Count[N int | int64](n N, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprint(n) + " " + many
}
