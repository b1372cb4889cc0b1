package space

// maxNesting bounds how deep a space file nests its keys: the parts of a
// dotted key or a table header, and inline tables and arrays within one
// another. The TOML decoder takes time in the square of that depth (an
// inline table 4,000 deep took 3 s to decode, and the loader decodes a file
// more than once), so a file of a few hundred kilobytes held the loader for
// hours, and it reads arrays by recursion, so arrays two million deep
// overflowed its stack (a fatal error, which no recover catches). No
// setting of a space is more than 3 deep.
const maxNesting = 16

// nesting returns the line of the first key nested deeper than maxNesting
// in a TOML file, or 0. It reads only what nests (brackets, braces, dots,
// commas and '=' outside strings and comments), so it may count a float's
// dot as a key's part; no legitimate file comes near the bound either way.
func nesting(data []byte) int {
	// depth: the inline tables and arrays open, a table header's brackets too.
	line, depth, parts := 1, 0, 1
	inKey := true // reading a key: at a line's start, after '{' or ','
	for i := 0; i < len(data); i++ {
		switch c := data[i]; c {
		case '\n':
			line++
			inKey, parts = true, 1
		case '#':
			for i+1 < len(data) && data[i+1] != '\n' {
				i++
			}
		case '"', '\'':
			end, lines := skipString(data, i)
			if end < 0 {
				return 0 // unterminated: the decoder says where
			}
			i, line = end, line+lines
		case '{':
			depth++
			inKey, parts = true, 1
		case '[':
			depth++
		case '}', ']':
			depth = max(depth-1, 0)
		case ',':
			inKey, parts = true, 1
		case '=':
			inKey = false
		case '.':
			if inKey {
				parts++
			}
		}
		if depth > maxNesting || parts > maxNesting {
			return line
		}
	}
	return 0
}

// skipString returns the index of the last byte of the TOML string that
// starts at data[i] (basic or literal, single-line or multi-line), and the
// newlines it holds; -1 if it does not end.
func skipString(data []byte, i int) (end, lines int) {
	q := data[i]
	delim := []byte{q}
	if i+2 < len(data) && data[i+1] == q && data[i+2] == q {
		delim = []byte{q, q, q}
	}
	for j := i + len(delim); j < len(data); j++ {
		switch {
		case data[j] == '\n':
			lines++
		case data[j] == '\\' && q == '"':
			if j+1 < len(data) && data[j+1] == '\n' {
				lines++
			}
			j++ // an escaped character, a quote included
		case hasPrefixAt(data, j, delim):
			end = j + len(delim) - 1
			// A multi-line string may end in up to two more quotes: """a"""".
			for n := 0; n < 2 && len(delim) == 3 && end+1 < len(data) && data[end+1] == q; n++ {
				end++
			}
			return end, lines
		}
	}
	return -1, lines
}

func hasPrefixAt(data []byte, j int, prefix []byte) bool {
	if j+len(prefix) > len(data) {
		return false
	}
	for k, c := range prefix {
		if data[j+k] != c {
			return false
		}
	}
	return true
}
