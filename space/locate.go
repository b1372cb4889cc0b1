package space

import (
	"regexp"
	"strings"

	"github.com/BurntSushi/toml"
)

// locator finds the line of a table or key in a TOML file, so that semantic
// errors (found after decoding, which keeps no positions) can name a line.
type locator struct {
	lines []locLine
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
	keyRE    = regexp.MustCompile(`^["']?([A-Za-z0-9_.-]+)["']?\s*=`)
)

func locate(data []byte) locator {
	var l locator
	section, index := "", 0
	count := map[string]int{}
	// A byte-order mark, which the decoder skips, hid the first header.
	for _, text := range strings.Split(strings.TrimPrefix(string(data), "\ufeff"), "\n") {
		t := strings.TrimSpace(text)
		line := locLine{text: t}
		if m := headerRE.FindStringSubmatch(t); m != nil {
			section = m[1]
			index = count[section]
			count[section]++
			line.header = true
		} else if m := keyRE.FindStringSubmatch(t); m != nil {
			line.key = m[1]
		}
		line.section, line.index = section, index
		l.lines = append(l.lines, line)
	}
	return l
}

// section returns the line of a table's first header, or 1.
func (l locator) section(name string) int {
	for i, ln := range l.lines {
		if ln.header && ln.section == name {
			return i + 1
		}
	}
	return 1
}

// field returns the line where key is set in the index-th [section] (or
// [[section]]), falling back to the table's header line.
func (l locator) field(section string, index int, key string) int {
	fallback := 0
	for i, ln := range l.lines {
		if ln.section != section || ln.index != index {
			continue
		}
		if ln.key == key {
			return i + 1
		}
		if ln.header && fallback == 0 {
			fallback = i + 1
		}
	}
	if fallback == 0 {
		return l.section(section)
	}
	return fallback
}

// key returns the line of a decoded key path such as campaign.sizes.mn.
func (l locator) key(k toml.Key) int {
	if len(k) == 0 {
		return 1
	}
	last := k[len(k)-1]
	for i, ln := range l.lines {
		if ln.key == last && strings.HasPrefix(strings.Join(k, "."), ln.section) {
			return i + 1
		}
	}
	for i, ln := range l.lines {
		if strings.Contains(ln.text, last) {
			return i + 1
		}
	}
	return 1
}
