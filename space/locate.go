package space

import (
	"iter"
	"regexp"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// locator finds the line of a table or key in a TOML file, so that semantic
// errors (found after decoding, which keeps no positions) can name a line.
type locator struct {
	lines []locLine
	// Indexes of lines, each line the first of its kind: a lookup per entry
	// of a file of thousands of [[param]] or [[workload]] tables scanned
	// every line, which took the loader seconds per megabyte squared.
	headers map[string]int   // each table's first header
	tables  map[locTable]int // each [[array]] element's header
	fields  map[locField]int // each key in each element of each table
	keys    map[locField]int // each key in each table, any element
	// words indexes each word (letters, digits, '_', '-') of the text, and
	// each quoted string as the decoder reads it ("\u00e9" as "é"): every
	// part of a key is one or the other.
	words map[string]int
}

type locTable struct {
	section string
	index   int
}

type locField struct {
	locTable
	key string
}

type locLine struct {
	section string // enclosing table, e.g. "campaign" or "param"
	index   int    // which [[array]] element (0 for plain tables)
	key     string // the key set on this line, or "" for a header or other line
	header  bool
	text    string
}

var (
	// A name may be quoted, "campaign" or 'sampler', as TOML allows.
	headerRE = regexp.MustCompile(`^\[\[?\s*["']?([A-Za-z0-9_.-]+)["']?\s*\]\]?`)
	keyRE    = regexp.MustCompile(`^(?:` + quotedRE.String() + `|([A-Za-z0-9_.-]+))\s*=`)
	quotedRE = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'[^']*'`)
)

func locate(data []byte) locator {
	l := locator{headers: map[string]int{}, tables: map[locTable]int{}, fields: map[locField]int{}, keys: map[locField]int{}, words: map[string]int{}}
	section, index := "", 0
	count := map[string]int{}
	// A byte-order mark, which the decoder skips, hid the first header.
	for _, text := range strings.Split(strings.TrimPrefix(string(data), "\ufeff"), "\n") {
		t := strings.TrimSpace(text)
		line := locLine{text: t}
		// The patterns are tried only on lines that hold what they start
		// with or need: a file of 100,000 [[workload]] tables has 500,000
		// lines, and the expressions were half of its loading.
		if m := matchIf(strings.HasPrefix(t, "["), headerRE, t); m != nil {
			section = m[1]
			index = count[section]
			count[section]++
			line.header = true
		} else if m := matchIf(strings.Contains(t, "="), keyRE, t); m != nil {
			line.key = m[1]
			if m[1] == "" {
				line.key = unquote(m[0][:strings.LastIndexAny(m[0], `"'`)+1])
			}
		}
		line.section, line.index = section, index
		l.lines = append(l.lines, line)
		n, table := len(l.lines), locTable{section, index}
		if line.header {
			setFirst(l.headers, section, n)
			setFirst(l.tables, table, n)
		} else if line.key != "" {
			setFirst(l.fields, locField{table, line.key}, n)
			setFirst(l.keys, locField{locTable{section: section}, line.key}, n)
		}
		for w := range wordsOf(t) {
			setFirst(l.words, w, n)
		}
		if strings.ContainsAny(t, `"'`) {
			for _, q := range quotedRE.FindAllString(t, -1) {
				setFirst(l.words, unquote(q), n)
			}
		}
	}
	return l
}

// matchIf is re's submatches in t where ok, nil otherwise.
func matchIf(ok bool, re *regexp.Regexp, t string) []string {
	if !ok {
		return nil
	}
	return re.FindStringSubmatch(t)
}

// wordsOf are t's words: its longest runs of letters, digits, '_' and '-'
// (ASCII), left to right.
func wordsOf(t string) iter.Seq[string] {
	return func(yield func(string) bool) {
		for i := 0; i < len(t); {
			j := i
			for j < len(t) && isWordByte(t[j]) {
				j++
			}
			if j > i && !yield(t[i:j]) {
				return
			}
			i = max(j, i+1)
		}
	}
}

func isWordByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-'
}

// unquote reads a TOML string of one line, basic ("...", with escapes) or
// literal ('...'), as the decoder does; a malformed one as written.
func unquote(q string) string {
	s := q[1 : len(q)-1]
	if q[0] == '\'' {
		return s
	}
	var b strings.Builder
	for s != "" {
		if rest, ok := strings.CutPrefix(s, `\e`); ok { // TOML's escape, which Go has not
			b.WriteByte(0x1b)
			s = rest
			continue
		}
		r, _, rest, err := strconv.UnquoteChar(s, '"')
		if err != nil {
			return q[1 : len(q)-1]
		}
		b.WriteRune(r)
		s = rest
	}
	return b.String()
}

func setFirst[K comparable](m map[K]int, k K, line int) {
	if _, ok := m[k]; !ok {
		m[k] = line
	}
}

// section returns the line of a table's first header, or of its key where
// it is written inline (fixed = { ... }, range = [ { ... } ]), or 1.
func (l locator) section(name string) int {
	if n, ok := l.headers[name]; ok {
		return n
	}
	if n, ok := l.keys[locField{key: name}]; ok {
		return n
	}
	return 1
}

// field returns the line where key is set in the index-th [section] (or
// [[section]]), falling back to the table's header line.
func (l locator) field(section string, index int, key string) int {
	table := locTable{section, index}
	if n, ok := l.fields[locField{table, key}]; ok {
		return n
	}
	if n, ok := l.tables[table]; ok {
		return n
	}
	return l.section(section)
}

// key returns the line of a decoded key path such as campaign.sizes.mn:
// the first that sets its last part in its table or one around it, else
// the first that holds that part (a key inline, { a = 1 }).
func (l locator) key(k toml.Key) int {
	if len(k) == 0 {
		return 1
	}
	last, line := k[len(k)-1], 0
	for i := range k {
		n, ok := l.keys[locField{locTable{section: strings.Join(k[:i], ".")}, last}]
		if ok && (line == 0 || n < line) {
			line = n
		}
	}
	if line > 0 {
		return line
	}
	if n, ok := l.words[last]; ok {
		return n
	}
	// Not a line scanned for it: a file of keys that are found nowhere
	// (each written otherwise than read) took the square of its lines.
	return 1
}
