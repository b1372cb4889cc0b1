package space

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/BurntSushi/toml"

	"github.com/nccltune/nccltune/internal/text"
)

// Collectives are the nccl-tests benchmarks a campaign can tune.
var Collectives = []string{"all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall", "sendrecv"}

// DefaultSampler is the search of a campaign whose file names none.
const DefaultSampler = "tpe-gp"

// Samplers are the search strategies a campaign can name.
var Samplers = []string{"tpe-gp", "tpe", "tpe-independent", "random", "grid", "coordinate", "gp", "sparse"}

type rawFile struct {
	Campaign struct {
		Name       string
		Collective string
		Trials     int
		Objective  string
		Sampler    string
		Seed       int64
		Patience   int
		Prune      bool
		WarmStart  *bool `toml:"warm_start"`
		Scales     []int
		Sizes      struct {
			Min, Max any
			Factor   int
		}
	}
	Range []struct {
		Name     string
		Min, Max any
	}
	Benchmark struct {
		Kind      string
		Python    string
		Params    string `toml:"model_params"`
		Layers    int
		Batch     int
		Device    string
		ScriptDir string `toml:"script_dir"`
		Command   []string
		Metric    struct {
			Regex, JSON, Goal, Unit string
			Skip                    int
		}
		Binary      string
		GPUs        *int `toml:"gpus"`
		Iters       *int
		Warmup      *int
		NoiseTarget *float64 `toml:"noise_target"`
		Check       *bool
		WarmLaunch  *bool `toml:"warm_launch"`
		Timeout     string
		Args        []string
	}
	Launcher struct {
		Kind, Command, Flavor string
		NP                    int `toml:"np"`
		Hostfile              string
		MapBy                 string `toml:"map_by"`
		BindTo                string `toml:"bind_to"`
		Nodes                 int
		TasksPerNode          int    `toml:"ntasks_per_node"`
		NProcPerNode          int    `toml:"nproc_per_node"`
		RdzvEndpoint          string `toml:"rdzv_endpoint"`
		Args                  []string
		Groups                *int
	}
	Workload  []rawCall
	Simulator map[string]any
	Fixed     map[string]any
	TryFirst  []map[string]any `toml:"try_first"`
	Param     []rawParam
}

// rawParam is a [[param]] table as written.
type rawParam struct {
	Name     string
	Values   []any
	Min, Max any
	Log      bool
	When     map[string]any
}

// rawCall is a [[workload]] entry as written.
type rawCall struct {
	Collective string
	Size       any
	Count      *int64
	Weight     *float64
	Ranks      int
}

// MaxFile bounds what Load reads: a hundred thousand params or workload
// calls fit in a few MiB; --space /dev/zero read until memory ran out.
const MaxFile = 16 << 20

// Load reads and validates a space file, its relative paths made absolute
// against its directory (see paths.go).
func Load(path string) (*Space, error) {
	dir, err := fileDir(path)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFile {
		return nil, fmt.Errorf("%s: over %d MiB, more than any space holds", path, MaxFile>>20)
	}
	return ParseIn(dir, path, data)
}

// simulator checks the [simulator] table as the simulator will read it,
// each bad key at its line: each key alone first, as the flag package reads
// one (a key it does not define, a value it cannot parse), then the rest
// together. (Checked whole again after each bad key, a table of 30,000 took
// the square of them.)
func (b *builder) simulator(s *Space) {
	if CheckSimulator == nil || len(s.Simulator) == 0 {
		return
	}
	flag := func(k string) string { return "-" + k + "=" + s.Simulator[k] }
	names := func(err error, k string) bool {
		// The flag package's words: "not defined: -k", "for flag -k: ...".
		return strings.HasSuffix(err.Error(), "-"+k) || strings.Contains(err.Error(), "flag -"+k+":")
	}
	var keys, flags []string
	for _, k := range slices.Sorted(maps.Keys(s.Simulator)) {
		if err := CheckSimulator([]string{flag(k)}); err != nil && names(err, k) {
			b.errorf(b.loc.field("simulator", 0, k), "%v", err)
			continue
		}
		keys, flags = append(keys, k), append(flags, flag(k))
	}
	if err := CheckSimulator(flags); err != nil {
		line := b.loc.section("simulator")
		if at := slices.IndexFunc(keys, func(k string) bool { return names(err, k) }); at >= 0 {
			line = b.loc.field("simulator", 0, keys[at])
		}
		b.errorf(line, "%v", err)
	}
}

// CheckSimulator checks the [simulator] table's scenario flags ("-k=v"),
// so that a bad one is a file:line error at load; the simulator sets it
// (space cannot import it).
var CheckSimulator func(flags []string) error

// Parse validates a space file's content. Every problem is reported at once,
// each as "file:line: message".
// A relative path stays as written: Parse knows no directory (a store's
// copy, an embedded example).
func Parse(filename string, data []byte) (*Space, error) { return ParseIn("", filename, data) }

// ParseIn is Parse with the file's relative paths made absolute against
// dir, as Load makes a file's against its own directory; "" leaves them.
func ParseIn(dir, filename string, data []byte) (*Space, error) {
	s, checks, err := parse(dir, filename, data)
	if err == nil && checks != nil {
		return nil, checks
	}
	return s, err
}

// workloadHost is the rest of a space around [[workload]] tables alone:
// mpirun without np leaves the rank count to its hostfile, so that any
// workload.ranks the loader takes in some space it takes here.
const workloadHost = `
[benchmark]
binary = "all_reduce_perf"
[launcher]
kind = "mpirun"
[[param]]
name = "NCCL_MIN_CTAS"
values = ["default", "4"]
`

// ParseWorkload validates the [[workload]] tables of a space file given
// alone, as nccltune profile writes them, by the rules Parse holds them to
// in a space; its errors are at their lines in data.
func ParseWorkload(filename string, data []byte) ([]Call, error) {
	s, err := Parse(filename, append(slices.Clip(data), workloadHost...))
	if err != nil {
		return nil, err
	}
	if len(s.Workload) == 0 {
		return nil, fmt.Errorf("%s: no [[workload]] table", filename)
	}
	return s.Workload, nil
}

// ParseStored reads the copy of a space that a store keeps, for reading the
// campaign's results: as Parse, but a check that the copy fails (one added
// since the campaign ran: a bound, a refused option) is returned beside the
// space instead of hiding the results; only a copy that does not decode is
// an error. Anything that runs a program parses with Parse.
func ParseStored(filename string, data []byte) (s *Space, checks, err error) {
	return ParseStoredIn("", filename, data)
}

// ParseStoredIn is ParseStored with the copy's relative paths made absolute
// against dir (ParseIn): the store does not record its file's directory.
func ParseStoredIn(dir, filename string, data []byte) (s *Space, checks, err error) {
	return parse(dir, filename, data)
}

// parse is Parse's work: the space built and the checks it failed, or an
// error where the file does not decode.
func parse(dir, filename string, data []byte) (*Space, error, error) {
	if line := nesting(data); line > 0 {
		return nil, nil, fmt.Errorf("%s:%d: keys nested more than %d deep (dotted keys, table headers, inline tables, arrays): no setting of a space is", filename, line, maxNesting)
	}
	var raw rawFile
	md, err := toml.Decode(string(data), &raw)
	var pe toml.ParseError
	if errors.As(err, &pe) {
		return nil, nil, fmt.Errorf("%s:%d:%d: %s", filename, pe.Position.Line, pe.Position.Col, oneLine(pe.Message))
	}
	// A value of the wrong type (factor = 2.5) stops the decoder: it is
	// reported, left out, and the rest decoded again, so that every other
	// problem is reported with it.
	loc := locate(data)
	var typeErrs []error
	var dropped []string
	var rest map[string]any // the file without them
	for first := true; err != nil; first = false {
		m := typeErrRE.FindStringSubmatch(err.Error())
		if m == nil || len(dropped) > 100 || rest == nil && toml.Unmarshal(data, &rest) != nil {
			return nil, nil, errors.Join(append(typeErrs, fmt.Errorf("%s: %w", filename, err))...)
		}
		found := [][]string{m}
		if first {
			// Every other value is decoded on its own: decoding the rest
			// again at each took the file's time for each error.
			found = typeErrors(rest)
		}
		for _, m := range found {
			// The decoder's line is of the text decoded, which after the first
			// error is not the file: the key's line in the file is looked up.
			typeErrs = append(typeErrs, fmt.Errorf("%s:%d: %s: %s", filename, loc.key(strings.Split(m[2], ".")), oneLine(m[2]), oneLine(m[3])))
			dropped = append(dropped, m[2])
			if !dropKey(rest, m[2]) {
				return nil, nil, errors.Join(typeErrs...)
			}
		}
		var buf bytes.Buffer
		if toml.NewEncoder(&buf).Encode(rest) != nil {
			return nil, nil, errors.Join(typeErrs...)
		}
		raw = rawFile{}
		md, err = toml.Decode(buf.String(), &raw)
	}
	b := &builder{file: filename, dir: dir, loc: loc, never: map[string]bool{}, errs: typeErrs}
	for _, key := range md.Undecoded() {
		b.errorf(b.loc.key(key), "unknown key %q%s", key.String(), didYouMean(key))
	}
	var all map[string]any
	if _, err := toml.Decode(string(data), &all); err == nil {
		b.finite(nil, all)
		b.exactKeys(nil, -1, all)
		b.tables(all)
		b.zeros(all)
	}
	s := b.build(&raw)
	s.Source, s.Dir = data, dir
	return s, errors.Join(b.errs...), nil
}

// knownKeys are the keys of a space file by the table that holds them
// ("" the file's own, "campaign.sizes"), as the decoder matches them to
// rawFile's fields: a field's toml tag, else its name in any case.
var knownKeys = fieldKeys(reflect.TypeFor[rawFile](), "", map[string][]string{})

func fieldKeys(t reflect.Type, table string, keys map[string][]string) map[string][]string {
	for i := range t.NumField() {
		f := t.Field(i)
		name := cmp.Or(f.Tag.Get("toml"), strings.ToLower(f.Name))
		keys[table] = append(keys[table], name)
		ft := f.Type
		for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct {
			fieldKeys(ft, strings.TrimPrefix(table+"."+name, "."), keys)
		}
	}
	return keys
}

// exactKeys refuses a key of the file's own tables written in another case
// than its field's (Seed for seed): the decoder matches a field in any case,
// so two spellings of one table ([[workload]] and [[Workload]]) each filled
// it, in the order of a map's iteration, and one file read as two spaces.
// index is the element of an array of tables that holds table, else -1.
func (b *builder) exactKeys(table toml.Key, index int, m map[string]any) {
	name := strings.Join(table, ".")
	known, ok := knownKeys[name]
	if !ok {
		return // a table of NAME = value ([fixed], try_first, when): any key
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		path := append(slices.Clip(table), k)
		if !slices.Contains(known, k) {
			if i := slices.IndexFunc(known, func(w string) bool { return strings.EqualFold(w, k) }); i >= 0 {
				line := b.loc.key(path)
				if index >= 0 {
					line = b.loc.field(name, index, k)
				}
				b.errorf(line, "key %q: keys are case-sensitive; write %s", path.String(), known[i])
			}
			continue
		}
		switch v := m[k].(type) {
		case map[string]any:
			b.exactKeys(path, -1, v)
		case []map[string]any:
			for i, t := range v {
				b.exactKeys(path, i, t)
			}
		}
	}
}

// didYouMean suggests the key of the same table that an unknown key
// misspells, if one is near enough.
func didYouMean(key toml.Key) string {
	table := strings.Join(key[:len(key)-1], ".")
	if near := text.Nearest(strings.ToLower(key[len(key)-1]), knownKeys[table]); near != "" {
		return "; did you mean " + strings.TrimPrefix(table+"."+near, ".") + "?"
	}
	return ""
}

// FileWord reports whether name can name a file as a word: letters,
// digits, '-' or '_'. A range's name does (its env file), so the load
// refuses any other; and an export checks it again, since a stored space
// that fails its checks is read as stored, and a '/' in a name wrote
// outside --out.
func FileWord(name string) bool { return fileWordRE.MatchString(name) }

// RangeWord reports whether the loader takes name as a range's: a FileWord
// that names no whole-job format's file (formatFileRE).
func RangeWord(name string) bool { return FileWord(name) && !formatFileRE.MatchString(name) }

// formatFileRE matches the range names whose env file is a whole-job
// format's (nccl-job.env, nccl-plugin-4n.env, ...; in any case, as a
// file system that folds case reads them).
var formatFileRE = regexp.MustCompile(`(?i)^(job|plugin|tuner)(-[0-9]+n)?$`)

// MaxRangeName is the longest range name: it names the export's files, of
// which nccl-NAME.torchrun.sh is the longest, and a file name holds 255
// bytes (NAME_MAX).
const MaxRangeName = 255 - len("nccl-.torchrun.sh")

var fileWordRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// simKeyRE is a [simulator] key as the simulator's flag names its settings.
var simKeyRE = regexp.MustCompile(`^[a-z0-9_]+$`)

// typeErrRE reads the decoder's type error: its line (none for a dotted
// key where a value is due), key and complaint.
var typeErrRE = regexp.MustCompile(`(?:line (\d+) )?\(last key "([^"]+)"\): (.*)$`)

// typeErrors decodes each value of a file on its own, in the tables
// around it, and returns the decoder's type errors (typeErrRE's matches),
// one per key, in the order of the keys.
func typeErrors(all map[string]any) [][]string {
	var found [][]string
	seen := map[string]bool{}
	var walk func(m map[string]any, within func(map[string]any) map[string]any)
	walk = func(m map[string]any, within func(map[string]any) map[string]any) {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			doc := func(v any) map[string]any { return within(map[string]any{k: v}) }
			var one map[string]any // a value decoded alone
			switch v := m[k].(type) {
			case map[string]any:
				if len(v) > 0 {
					walk(v, func(t map[string]any) map[string]any { return doc(t) })
					continue
				}
				one = doc(v)
			case []map[string]any:
				for _, t := range v {
					walk(t, func(t map[string]any) map[string]any { return doc([]map[string]any{t}) })
				}
				if len(v) > 0 && !slices.ContainsFunc(v, func(t map[string]any) bool { return len(t) == 0 }) {
					continue
				}
				one = doc(v) // and an empty table, which has no value to decode
			default:
				one = doc(v)
			}
			var buf bytes.Buffer
			if toml.NewEncoder(&buf).Encode(one) != nil {
				continue // the decoding again says what it is
			}
			_, err := toml.Decode(buf.String(), &rawFile{})
			if m := typeErrRE.FindStringSubmatch(fmt.Sprint(err)); m != nil && !seen[m[2]] {
				seen[m[2]] = true
				found = append(found, m)
			}
		}
	}
	walk(all, func(m map[string]any) map[string]any { return m })
	return found
}

// dropKey deletes the dotted key from m, in every table of an array of
// tables on its way; it reports whether it found it.
func dropKey(m map[string]any, key string) bool {
	head, rest, nested := strings.Cut(key, ".")
	v, ok := m[head]
	if !ok {
		return false
	}
	if !nested {
		delete(m, head)
		return true
	}
	switch v := v.(type) {
	case map[string]any:
		return dropKey(v, rest)
	case []map[string]any:
		found := false
		for _, t := range v {
			found = dropKey(t, rest) || found
		}
		return found
	}
	delete(m, head)
	return true
}

type builder struct {
	file  string
	dir   string // relative paths are made absolute against it (none where "")
	loc   locator
	errs  []error
	never map[string]bool // params whose conditions can never hold
	// needs is, for each param, the values each variable must have for it
	// to be active: its own conditions and, since a condition on a param
	// holds only while that param is active, that param's needs too.
	needs map[string]map[string][]string
	// listers are the params' listers (Param.lister), each built once:
	// built for each condition on a param, dozens of conditions on one
	// of a million values held the loader for minutes.
	listers map[string]func(string) (string, bool)
}

// lister is p's lister, built at its first use.
func (b *builder) lister(p Param) func(string) (string, bool) {
	if b.listers == nil {
		b.listers = map[string]func(string) (string, bool){}
	}
	l, ok := b.listers[p.Name]
	if !ok {
		l = p.lister()
		b.listers[p.Name] = l
	}
	return l
}

// jointly checks that p's conditions, together with those of the params
// they name (and theirs, transitively), can all hold at once: conditions
// only name earlier params, so one pass in file order is the fixpoint.
func (b *builder) jointly(s *Space, p Param, line int) {
	if b.needs == nil {
		b.needs = map[string]map[string][]string{}
	}
	need := map[string][]string{}
	why := map[string][]string{} // who asks, for the message
	narrow := func(v string, in []string, by string) {
		if old, ok := need[v]; ok {
			// A set: a condition may list hundreds of thousands of values.
			kept := make(map[string]bool, len(old))
			for _, x := range old {
				kept[x] = true
			}
			in = slices.DeleteFunc(slices.Clone(in), func(x string) bool { return !kept[x] })
		}
		need[v] = in
		why[v] = append(why[v], by)
	}
	for _, c := range p.When {
		narrow(c.Var, c.In, p.Name)
		for v, in := range b.needs[c.Var] {
			narrow(v, in, c.Var)
		}
	}
	b.needs[p.Name] = need
	for _, v := range slices.Sorted(maps.Keys(need)) {
		if len(need[v]) == 0 {
			b.errorf(line, "param %s can never be active: the conditions of %s need %s to hold values that exclude one another",
				p.Name, strings.Join(slices.Compact(slices.Sorted(slices.Values(why[v]))), " and "), v)
			b.never[p.Name] = true
			return
		}
	}
}

func (b *builder) errorf(line int, format string, args ...any) {
	b.errs = append(b.errs, fmt.Errorf("%s:%d: %s", b.file, line, oneLine(fmt.Sprintf(format, args...))))
}

// oneLine escapes, Go's way, what a message quotes of the file that is no
// visible text (a newline, a terminal's escape, a byte that is no UTF-8):
// the message stays one line, which no other problem, or none at all,
// seems to begin.
func oneLine(msg string) string {
	var out strings.Builder
	for len(msg) > 0 {
		r, n := utf8.DecodeRuneInString(msg)
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&out, `\x%02x`, msg[0])
		case !unicode.IsGraphic(r):
			q := strconv.QuoteRune(r)
			out.WriteString(q[1 : len(q)-1])
		default:
			out.WriteString(msg[:n])
		}
		msg = msg[n:]
	}
	return out.String()
}

// finite reports every NaN and infinity in the file: TOML has them (nan,
// inf), and no setting of a space means either. So with a NUL byte in a
// string ("\u0000"), which no program path, argument or variable can carry.
func (b *builder) finite(key toml.Key, v any) {
	switch v := v.(type) {
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			b.errorf(b.loc.key(key), "%s = %v: not a finite number", key, v)
		}
	case string:
		if strings.ContainsRune(v, 0) {
			b.errorf(b.loc.key(key), "%s = %q: holds a NUL byte, which no program path, argument or variable can carry", key, v)
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			b.finite(append(slices.Clone(key), k), v[k])
		}
	case []map[string]any:
		for _, m := range v {
			b.finite(key, m)
		}
	case []any:
		for _, x := range v {
			b.finite(key, x)
		}
	}
}

// unsetByZero are the settings that the loader reads as not set where they
// are 0 or "", the zero of their type: the default (trials = 0 ran 50
// trials, layers = 0 a model of 8, launcher.kind = "" the local launcher)
// or the launcher's own choice (np = 0 or nodes = 0 as many ranks as mpirun
// or the allocation gave). Written out, such a zero is refused, as no value
// of the setting: a templated file whose variable was empty ran something
// else. Where 0 is a value (seed, patience's off, warmup, metric.skip) it is
// no such setting.
var unsetByZero = []string{
	"campaign.name", "campaign.collective", "campaign.trials", "campaign.objective", "campaign.sampler", "campaign.sizes.factor",
	"benchmark.kind", "benchmark.python", "benchmark.model_params", "benchmark.layers", "benchmark.batch",
	"benchmark.device", "benchmark.script_dir", "benchmark.timeout",
	"launcher.kind", "launcher.command", "launcher.flavor", "launcher.np", "launcher.hostfile", "launcher.map_by", "launcher.bind_to",
	"launcher.nodes", "launcher.ntasks_per_node", "launcher.nproc_per_node", "launcher.rdzv_endpoint",
	"workload.ranks",
}

// zeros refuses each of unsetByZero written as its zero, at its line.
func (b *builder) zeros(all map[string]any) {
	for _, setting := range unsetByZero {
		path := strings.Split(setting, ".")
		tables := []map[string]any{all}
		for _, name := range path[:len(path)-1] {
			var next []map[string]any
			for _, t := range tables {
				switch v := t[name].(type) {
				case map[string]any:
					next = append(next, v)
				case []map[string]any: // [[workload]]: each entry
					next = append(next, v...)
				}
			}
			tables = next
		}
		for i, t := range tables {
			v, ok := t[path[len(path)-1]]
			if !ok || v != int64(0) && v != "" {
				continue
			}
			line := b.loc.key(toml.Key(path))
			if path[0] == "workload" {
				line = b.loc.field("workload", i, path[1])
			}
			b.errorf(line, "%s = %#v is read as not set (the default, or the launcher's own choice): leave it out, or give a value", setting, v)
		}
	}
}

// tables refuses a table of the space written as another kind of value
// (when = "x", fixed = 5, try_first = [1]): the decoder leaves such a value
// out without a word, which dropped a param's conditions, every pinned
// variable or the simulator, or made an empty configuration to try first.
func (b *builder) tables(all map[string]any) {
	for _, name := range []string{"fixed", "simulator"} {
		if v, ok := all[name]; ok && !isTable(v) {
			b.errorf(b.loc.key(toml.Key{name}), "%s must be a table ([%s] or %s = { ... }), not %s", name, name, name, kindOf(v))
		}
	}
	if v, ok := all["try_first"]; ok {
		list, _ := v.([]any)
		if tables, ok := v.([]map[string]any); ok {
			list = nil
			for _, t := range tables {
				list = append(list, t)
			}
		}
		if list == nil || slices.ContainsFunc(list, func(x any) bool { return !isTable(x) }) {
			b.errorf(b.loc.key(toml.Key{"try_first"}), "try_first must be tables ([[try_first]] of NAME = value), not %s", kindOf(v))
		}
	}
	params, _ := all["param"].([]map[string]any)
	for i, p := range params {
		if w, ok := p["when"]; ok && !isTable(w) {
			b.errorf(b.loc.field("param", i, "when"), "param.when must be a table of conditions, when = { NAME = value }, not %s", kindOf(w))
		}
	}
}

func isTable(v any) bool {
	_, ok := v.(map[string]any)
	return ok
}

// kindOf names a decoded TOML value's kind for a message.
func kindOf(v any) string {
	switch v.(type) {
	case map[string]any:
		return "a table"
	case []any, []map[string]any:
		return "an array"
	case string:
		return "a string"
	case int64, float64:
		return "a number"
	case bool:
		return "a boolean"
	}
	return "a date or time"
}

// scalar is a value written as TOML text: a string, number or boolean. An
// array, table, date or time is no setting's value; fmt.Sprint made one of
// "[IB Socket]", "map[]" or "1979-05-27 00:00:00 +0000 date-local".
func scalar(raw any) (string, error) {
	switch raw.(type) {
	case string, int64, float64, bool:
		return fmt.Sprint(raw), nil
	}
	return "", fmt.Errorf("%s is not a value (a string, number or boolean)", kindOf(raw))
}

func (b *builder) build(raw *rawFile) *Space {
	s := &Space{Fixed: map[string]string{}, Simulator: map[string]string{}}
	b.campaign(raw, s)
	b.ranges(raw, s)
	b.benchmark(raw, s)
	for _, k := range slices.Sorted(maps.Keys(raw.Simulator)) {
		if !simKeyRE.MatchString(k) || k == "run" {
			// Passed as -k=v, a key of a '-' or '=' is read as another
			// ("-nodes" as nodes), which nccltune's own reads of the
			// scenario miss; run is the label nccltune gives each launch.
			b.errorf(b.loc.field("simulator", 0, k), "simulator.%s is no setting of the scenario (a word such as nodes or nic_gbps; run is nccltune's own)", k)
		}
		v, err := scalar(raw.Simulator[k])
		if err != nil {
			b.errorf(b.loc.field("simulator", 0, k), "simulator.%s: %v", k, err)
			continue
		}
		if f, err := strconv.ParseFloat(v, 64); err == nil && (math.IsNaN(f) || math.IsInf(f, 0)) {
			b.errorf(b.loc.field("simulator", 0, k), "simulator.%s = %q: not a finite number", k, v)
			continue
		}
		s.Simulator[k] = v
	}
	b.simulator(s)
	b.launcher(raw, s)
	b.paths(s)
	b.wholeElements(s) // of the ranks the launcher runs
	b.argStrings(s)
	b.launcherArgs(s)
	b.programs(s)
	b.scales(s)
	b.workloadRanks(raw, s)
	if err := s.CheckTrials(s.Campaign.Trials); err != nil {
		b.errorf(b.loc.field("campaign", 0, "trials"), "campaign.trials: %v", err)
	}
	if s.Benchmark.Kind == NCCLTests && s.Benchmark.Binary == "" && len(s.Simulator) == 0 {
		b.errorf(b.loc.section("benchmark"), "benchmark.binary is required (the nccl-tests binary), unless a [simulator] table is given")
	}
	for _, name := range slices.Sorted(maps.Keys(raw.Fixed)) {
		line := b.loc.field("fixed", 0, name)
		v, err := b.value(name, raw.Fixed[name])
		switch {
		case err == nil && v == "":
			// Dropped below, as a stored space's was, whose trials ran without it.
			err = fmt.Errorf("%s = \"\": an empty value, which nccltune pins as no value at all (no trial sets it); leave %s out to let NCCL choose", name, name)
		case err == nil:
			err = pinnable(name, v, s.Benchmark.Kind)
		}
		if err != nil {
			b.errorf(line, "fixed %v", err)
		}
		// A value that NCCL can be given (it normalizes) but that a check of
		// pinning refuses (added since: "default", a DDP setting) stays, read
		// as stored (ParseStored): every trial ran with it, and left out,
		// export found each trial's stored environment "altered" and
		// refused to write it.
		if v != "" {
			s.Fixed[name] = v
		}
	}
	if err := s.Check(nil); err != nil {
		// Every trial sets them, NCCL's defaults first: each would fail.
		b.errorf(b.loc.key(toml.Key{"fixed"}), "fixed: %v: every trial would run another configuration than the space says", err)
	}
	b.params(raw, s)
	b.tryFirst(raw, s)
	return s
}

// tryFirst reads the user's known-good configurations: each sets searched
// parameters to values the space offers, and leaves the others to NCCL.
func (b *builder) tryFirst(raw *rawFile, s *Space) {
	for i, t := range raw.TryFirst {
		a, ok := Assignment{}, true
		for _, name := range slices.Sorted(maps.Keys(t)) {
			line := b.loc.field("try_first", i, name)
			// A variable searched per collective takes the value for each.
			var params []Param
			for _, p := range s.Params {
				if p.Variable() == name {
					params = append(params, p)
				}
			}
			if len(params) == 0 {
				b.errorf(line, "try_first: %s is not searched; add a [[param]] for it, or pin it in [fixed]", name)
				ok = false
				continue
			}
			v, err := b.choice(name, t[name])
			listed, offered := b.lister(params[0])(v)
			switch {
			case err != nil:
				b.errorf(line, "try_first %v", err)
				ok = false
			case !offered:
				b.errorf(line, "try_first: %s = %s is not among the values the space searches", name, v)
				ok = false
			default:
				for _, p := range params {
					a[p.Name] = listed
				}
			}
		}
		if !ok {
			continue
		}
		full, unset, inactive := s.Complete(a)
		line := b.loc.field("try_first", i, "")
		for _, name := range inactive {
			b.errorf(line, "try_first: %s is inactive there (its condition does not hold)", name)
			ok = false
		}
		for _, name := range unset {
			b.errorf(line, "try_first: %s has no \"default\" in this space, so it needs a value", name)
			ok = false
		}
		if err := s.Check(full); err != nil {
			b.errorf(line, "try_first: %v", err)
			ok = false
		}
		if ok {
			s.TryFirst = append(s.TryFirst, full)
		}
	}
}

func (b *builder) campaign(raw *rawFile, s *Space) {
	c := raw.Campaign
	line := func(key string) int { return b.loc.field("campaign", 0, key) }
	s.Campaign = CampaignSettings{
		Name:         orDefault(c.Name, "campaign"),
		Collective:   orDefault(c.Collective, "all_reduce"),
		Trials:       c.Trials,
		Objective:    orDefault(c.Objective, "busbw"),
		Sampler:      orDefault(c.Sampler, DefaultSampler),
		SamplerNamed: c.Sampler != "",
		Seed:         c.Seed,
		Patience:     c.Patience,
		Prune:        c.Prune,
		WarmStart:    c.WarmStart == nil || *c.WarmStart,
		Scales:       c.Scales,
	}
	if c.Patience != 0 && c.Patience < 5 {
		b.errorf(line("patience"), "patience must be 0 (off) or at least 5 trials")
	}
	if !slices.Contains(Collectives, s.Campaign.Collective) {
		b.errorf(line("collective"), "unknown collective %q (legal: %s)", c.Collective, strings.Join(Collectives, ", "))
	}
	if s.Campaign.Trials == 0 {
		s.Campaign.Trials = 50
	}
	if s.Campaign.Objective != "busbw" {
		b.errorf(line("objective"), "unknown objective %q (legal: busbw)", c.Objective)
	}
	if !slices.Contains(Samplers, s.Campaign.Sampler) {
		b.errorf(line("sampler"), "unknown sampler %q (legal: %s)", c.Sampler, strings.Join(Samplers, ", "))
	}
	s.Sizes = Sizes{Min: 8, Max: 128 << 20, Factor: 2}
	sz := c.Sizes
	if sz.Min != nil {
		s.Sizes.Min = b.size(line("sizes"), "sizes.min", sz.Min)
	}
	if sz.Max != nil {
		s.Sizes.Max = b.size(line("sizes"), "sizes.max", sz.Max)
	}
	if sz.Factor != 0 {
		s.Sizes.Factor = sz.Factor
	}
	switch {
	case s.Sizes.Factor < 2 || s.Sizes.Min < 1 || s.Sizes.Max < s.Sizes.Min:
		b.errorf(line("sizes"), "sizes must have 1 <= min <= max and factor >= 2")
	case s.Sizes.Max > MaxSize:
		b.errorf(line("sizes"), "sizes.max %s is above %s: nccl-tests allocates a send and a receive buffer of it on each GPU, which no GPU holds", FormatSize(s.Sizes.Max), FormatSize(MaxSize))
	case s.Sizes.Factor > MaxSize:
		b.errorf(line("sizes"), "sizes.factor %d is above %d, the largest size (a factor beyond max/min sweeps min alone)", s.Sizes.Factor, MaxSize)
	}
}

func (b *builder) ranges(raw *rawFile, s *Space) {
	if len(raw.Workload) > 0 {
		b.workload(raw, s)
		return
	}
	if kind := raw.Benchmark.Kind; kind == DDP || kind == Command {
		// One objective: the step time or the metric, whatever the message
		// sizes inside it ([[range]] is refused with the kind's other settings).
		s.Ranges = []Range{{Name: "step", Collective: s.Campaign.Collective, Min: 0, Max: math.MaxInt64}}
		return
	}
	if len(raw.Range) == 0 {
		// One range over the whole sweep, to just past its largest size.
		s.Ranges = []Range{{Name: "all", Collective: s.Campaign.Collective, Min: s.Sizes.Min, Max: s.Sizes.Max + 1}}
		return
	}
	sweep := s.Sizes.List()
	names := map[string]bool{}
	// The ranges without a fault: they are disjoint and each holds a size
	// of the sweep, so they are few however many a file lists, and a range
	// is compared with them alone (with every range, 100,000 took 40 s).
	var sound []Range
	for i, r := range raw.Range {
		line := b.loc.field("range", i, "name")
		nerr := len(b.errs)
		rg := Range{Name: r.Name, Collective: s.Campaign.Collective,
			Min: b.size(b.loc.field("range", i, "min"), "range.min", r.Min),
			Max: b.size(b.loc.field("range", i, "max"), "range.max", r.Max)}
		switch {
		case len(b.errs) > nerr: // a bound did not parse; its error says so
		case !FileWord(r.Name):
			b.errorf(line, "range name %q must be letters, digits, '-' or '_' (it names the env file)", r.Name)
		case formatFileRE.MatchString(r.Name):
			b.errorf(line, "range name %q: its env file, nccl-%s.env, is the one export's --format job, plugin or tuner-csv writes, which one export into a folder would write over the other's; name it otherwise", r.Name, r.Name)
		case len(r.Name) > MaxRangeName:
			b.errorf(line, "range name %s... is %d characters long: it names the export's files (nccl-NAME.torchrun.sh), and a file name holds 255 bytes; at most %d", r.Name[:20], len(r.Name), MaxRangeName)
		case rg.Max <= rg.Min:
			b.errorf(line, "range %s: max must exceed min", r.Name)
		case names[strings.ToLower(r.Name)]:
			// In any case: a file system that folds case (macOS, Windows)
			// holds the two env files as one.
			b.errorf(line, "range %s is defined twice (its name in any case names its env file)", r.Name)
		case slices.ContainsFunc(sound, func(o Range) bool { return rg.Min < o.Max && o.Min < rg.Max }):
			b.errorf(line, "range %s overlaps another range", r.Name)
		case !slices.ContainsFunc(sweep, rg.Contains):
			b.errorf(line, "range %s holds no size of the sweep %s..%s", r.Name, FormatSize(s.Sizes.Min), FormatSize(s.Sizes.Max))
		default:
			sound = append(sound, rg)
		}
		names[strings.ToLower(r.Name)] = true
		s.Ranges = append(s.Ranges, rg)
	}
}

// workload reads the job's calls ([[workload]]): each collective they name
// is a range, scored by the predicted time of its calls, so the campaign
// and the [[range]] and sweep settings of one collective do not apply.
func (b *builder) workload(raw *rawFile, s *Space) {
	line := func(i int, key string) int { return b.loc.field("workload", i, key) }
	c := raw.Campaign
	switch {
	case c.Collective != "":
		b.errorf(b.loc.field("campaign", 0, "collective"), "campaign.collective does not apply with [[workload]]: each trial measures every collective of the workload")
	case c.Sizes.Min != nil || c.Sizes.Max != nil || c.Sizes.Factor != 0:
		b.errorf(b.loc.field("campaign", 0, "sizes"), "campaign.sizes does not apply with [[workload]]: each collective is swept over its calls' sizes")
	case len(raw.Range) > 0:
		b.errorf(b.loc.section("range"), "[[range]] does not apply with [[workload]]: each collective of the workload is a range")
	}
	ranks, counted, weighted := 0, 0, 0
	for i, w := range raw.Workload {
		call := Call{Collective: w.Collective, Ranks: w.Ranks}
		bytes := b.size(line(i, "size"), "workload.size", w.Size)
		call.Bytes = bytes
		// An entry that names no collective, or no count or weight, is no
		// call and is left out; one that fails a bound (a check that
		// ParseStored tells of a campaign run before it) is still the call
		// its trials measured, and stays: left out, its collective's range
		// went with it, and a stored campaign's results with it.
		switch {
		case !slices.Contains(Collectives, w.Collective):
			b.errorf(line(i, "collective"), "workload.collective %q is not one of %s", w.Collective, strings.Join(Collectives, ", "))
			continue
		case bytes < 1:
			b.errorf(line(i, "size"), "workload.size must be 1 byte to %s (nccl-tests allocates buffers of it on each GPU), not %d", FormatSize(MaxSize), bytes)
			continue
		case (w.Count == nil) == (w.Weight == nil):
			b.errorf(line(i, "collective"), "a [[workload]] entry needs count (its calls) or weight (relative), one of them")
			continue
		case w.Count != nil && *w.Count < 1, w.Weight != nil && !(*w.Weight > 0 && !math.IsInf(*w.Weight, 0)):
			b.errorf(line(i, "collective"), "workload count and weight must be positive")
			continue
		}
		mixed := w.Weight != nil && counted > 0 || w.Count != nil && weighted > 0
		switch {
		case bytes > MaxSize:
			b.errorf(line(i, "size"), "workload.size must be 1 byte to %s (nccl-tests allocates buffers of it on each GPU), not %d", FormatSize(MaxSize), bytes)
		case w.Weight != nil && (*w.Weight < minWeight || *w.Weight > maxWeight):
			// Beyond these, a job's time (weight x seconds per call, summed)
			// overflows to infinity or underflows to 0, and every trial fails.
			b.errorf(line(i, "weight"), "workload.weight %g must be within [%g, %g]: weights are relative shares of the calls", *w.Weight, minWeight, maxWeight)
		case mixed:
			first, other := "count", "weight"
			if weighted > 0 {
				first, other = other, first
			}
			b.errorf(line(i, "collective"), "workload: this entry has %s, an earlier one %s: counts are calls per job and weights are relative shares of the calls, which do not add up; give every entry count, or every entry weight", other, first)
		case w.Ranks < 0 || w.Ranks > MaxRanks:
			b.errorf(line(i, "ranks"), "workload.ranks must be 1 to %d, not %d", MaxRanks, w.Ranks)
		case w.Ranks > 0 && ranks > 0 && w.Ranks != ranks:
			b.errorf(line(i, "ranks"), "workload.ranks %d: every entry must be of one communicator size (%d here); profile one size per campaign", w.Ranks, ranks)
		}
		if w.Ranks > 0 && w.Ranks <= MaxRanks && ranks == 0 {
			ranks = w.Ranks
		}
		if w.Count != nil {
			call.Count = float64(*w.Count)
		} else {
			call.Count = *w.Weight
		}
		switch {
		case mixed: // told once, at this entry; the next are held to the first kind
		case w.Count != nil:
			counted++
		default:
			weighted++
		}
		s.Workload = append(s.Workload, call)
		k := slices.IndexFunc(s.Ranges, func(r Range) bool { return r.Collective == call.Collective })
		if k < 0 {
			s.Ranges = append(s.Ranges, Range{Name: call.Collective, Collective: call.Collective, Max: math.MaxInt64})
			k = len(s.Ranges) - 1
		}
		s.Ranges[k].Calls = append(s.Ranges[k].Calls, call)
	}
	slices.SortFunc(s.Ranges, func(a, b Range) int { return strings.Compare(a.Name, b.Name) })
	if len(s.Ranges) > 0 {
		s.Campaign.Collective = s.Ranges[0].Collective
	}
	s.Weighted = weighted > 0
}

// minWeight and maxWeight bound a workload entry's weight, a relative share.
const minWeight, maxWeight = 1e-12, 1e18

// workloadRanks checks that the trials run as many ranks as the workload's
// calls were made on, where the launcher says how many it runs: the calls'
// sizes and what they cost are those of one communicator size. (Each of
// campaign.scales runs its own.)
func (b *builder) workloadRanks(raw *rawFile, s *Space) {
	want, launched := s.WorkloadRanks(), s.LaunchRanks()
	if want == 0 || launched == 0 || want == launched || len(s.Campaign.Scales) > 0 {
		return
	}
	i := slices.IndexFunc(raw.Workload, func(w rawCall) bool { return w.Ranks > 0 })
	b.errorf(b.loc.field("workload", i, "ranks"), "workload.ranks = %d, but each trial runs %s (launcher %s, benchmark.gpus %d): the calls were made on %d; launch as many, or leave ranks out to tune them on %d",
		want, text.Count(launched, "rank", "ranks"), s.Launcher.Kind, s.Benchmark.GPUs, want, launched)
}

func (b *builder) benchmark(raw *rawFile, s *Space) {
	r := raw.Benchmark
	line := func(key string) int { return b.loc.field("benchmark", 0, key) }
	s.Benchmark = BenchmarkSettings{Kind: orDefault(r.Kind, NCCLTests), Binary: r.Binary, GPUs: 1, Iters: 20, Warmup: 5, Check: true,
		Timeout: 10 * time.Minute, Args: r.Args, Python: orDefault(r.Python, "python3"), Params: orDefault(r.Params, "100M"),
		Layers: r.Layers, Batch: r.Batch, Device: orDefault(r.Device, "cuda"), ScriptDir: r.ScriptDir, Command: r.Command,
		Metric: Metric{Regex: r.Metric.Regex, JSON: r.Metric.JSON, Goal: r.Metric.Goal, Skip: r.Metric.Skip, Unit: r.Metric.Unit}}
	bm := &s.Benchmark
	if !slices.Contains(BenchmarkKinds, bm.Kind) {
		b.errorf(line("kind"), "benchmark.kind %q is not one of %s", r.Kind, strings.Join(BenchmarkKinds, ", "))
		return
	}
	b.kindSettings(raw, bm)
	switch bm.Kind {
	case NCCLTests:
		b.ncclTestsArgs(line("args"), bm.Args)
	case DDP:
		b.ddp(line, r.Layers, r.Batch, bm)
	case Command:
		b.command(line, bm)
	}
	for _, f := range []struct {
		key      string
		src      *int
		dst      *int
		min, max int
	}{{"gpus", r.GPUs, &bm.GPUs, 1, MaxRanks}, {"iters", r.Iters, &bm.Iters, 1, MaxIters}, {"warmup", r.Warmup, &bm.Warmup, 0, MaxIters}} {
		if f.src == nil {
			continue
		}
		if *f.src < f.min || *f.src > f.max {
			b.errorf(line(f.key), "benchmark.%s must be %d to %d, not %d", f.key, f.min, f.max, *f.src)
		}
		*f.dst = *f.src
	}
	if r.Check != nil {
		bm.Check = *r.Check
	}
	bm.WarmLaunch = r.WarmLaunch == nil || *r.WarmLaunch
	bm.NoiseTarget = DefaultNoiseTarget
	if r.NoiseTarget != nil {
		if !(*r.NoiseTarget >= 0 && *r.NoiseTarget < 0.5) {
			b.errorf(line("noise_target"), "benchmark.noise_target must be within [0, 0.5): 0 keeps benchmark.iters, 0.01 aims at ±1%%")
		}
		bm.NoiseTarget = *r.NoiseTarget
	}
	if r.Timeout != "" {
		d, err := time.ParseDuration(r.Timeout)
		switch {
		case err != nil || d <= 0:
			b.errorf(line("timeout"), "benchmark.timeout %q is not a positive duration such as \"90s\" or \"10m\"", r.Timeout)
		case d < MinTimeout || d > MaxTimeout:
			b.errorf(line("timeout"), "benchmark.timeout %s must be %s to %s: a trial's launch alone takes a second, and one not ended in a day is hung", d, MinTimeout, MaxTimeout)
		}
		bm.Timeout = d
	}
}

// kindSettings refuses, with its line, every setting of the file that the
// benchmark's kind does not use (see kindSettings in space.go): the one rule
// for all of them, so that none is silently ignored.
func (b *builder) kindSettings(raw *rawFile, bm *BenchmarkSettings) {
	c, r := raw.Campaign, raw.Benchmark
	field := func(section, key string) func() int { return func() int { return b.loc.field(section, 0, key) } }
	header := func(section string) func() int { return func() int { return b.loc.section(section) } }
	metric := r.Metric.Regex != "" || r.Metric.JSON != "" || r.Metric.Goal != "" || r.Metric.Skip != 0 || r.Metric.Unit != ""
	for _, f := range []struct {
		setting string
		set     bool
		line    func() int
	}{
		{"campaign.collective", c.Collective != "", field("campaign", "collective")},
		{"campaign.sizes", c.Sizes.Min != nil || c.Sizes.Max != nil || c.Sizes.Factor != 0, field("campaign", "sizes")},
		{"campaign.objective", c.Objective != "", field("campaign", "objective")},
		{"campaign.prune", c.Prune, field("campaign", "prune")},
		{"[[range]]", len(raw.Range) > 0, header("range")},
		{"[[workload]]", len(raw.Workload) > 0, header("workload")},
		{"[simulator]", len(raw.Simulator) > 0, header("simulator")},
		{"benchmark.binary", r.Binary != "", field("benchmark", "binary")},
		{"benchmark.gpus", r.GPUs != nil, field("benchmark", "gpus")},
		{"benchmark.check", r.Check != nil, field("benchmark", "check")},
		{"benchmark.noise_target", r.NoiseTarget != nil, field("benchmark", "noise_target")},
		{"benchmark.iters", r.Iters != nil, field("benchmark", "iters")},
		{"benchmark.warmup", r.Warmup != nil, field("benchmark", "warmup")},
		{"benchmark.args", len(r.Args) > 0, field("benchmark", "args")},
		{"benchmark.python", r.Python != "", field("benchmark", "python")},
		{"benchmark.model_params", r.Params != "", field("benchmark", "model_params")},
		{"benchmark.layers", r.Layers != 0, field("benchmark", "layers")},
		{"benchmark.batch", r.Batch != 0, field("benchmark", "batch")},
		{"benchmark.device", r.Device != "", field("benchmark", "device")},
		{"benchmark.script_dir", r.ScriptDir != "", field("benchmark", "script_dir")},
		{"benchmark.command", len(r.Command) > 0, field("benchmark", "command")},
		{"benchmark.metric", metric, field("benchmark", "metric")},
	} {
		if f.set && !bm.Uses(f.setting) {
			b.errorf(f.line(), "%s does not apply to benchmark kind %q (it uses %s)", f.setting, bm.Kind, strings.Join(kindSettings[bm.Kind], ", "))
		}
	}
}

// sweepOptions are the nccl-tests options nccltune sets itself (the sweep,
// the iterations, the check) or that would print more than the one table it
// reads (-N repeats the sweep).
var sweepOptions = []string{"minbytes", "maxbytes", "stepfactor", "stepbytes", "ngpus", "iters", "warmup_iters", "check", "run_cycles"}

// formatOptions change the table nccltune reads, unless 0: each row would
// fail the trial as unreadable, or (-C) hold a time the bandwidths are not
// computed from.
var formatOptions = map[string]string{
	"report_timestamps": "adds a timestamp to each row of the table",
	"per_iter_timing":   "adds per-iteration columns to the table",
	"report_cputime":    "prints the CPU's time to launch in the time column, not the time the bandwidths are computed from",
}

// wholeElements refuses a range whose every size of the sweep nccl-tests
// runs as 0 bytes: it sends whole elements of its datatype (size / the
// element's bytes), and for all_gather, reduce_scatter and alltoall each
// rank's share of the size, rounded down to 16 bytes (PerRank), so such a
// range would measure nothing in any trial. Where the launcher leaves the
// rank count to the allocation, one rank's share is the least.
func (b *builder) wholeElements(s *Space) {
	if s.Benchmark.Kind != NCCLTests || len(s.Workload) > 0 {
		return // a workload's ranges are the calls' collectives, whose sweep starts at a share (Sweep)
	}
	elem, datatype := int64(4), "float" // nccl-tests' default, and what it takes a name it does not know for
	if opts, err := NCCLTestsOptions(s.Benchmark.Args); err == nil {
		for _, o := range opts {
			if n, ok := ElementBytes[o.Value]; ok && o.Long == "datatype" {
				elem, datatype = n, o.Value
			}
		}
	}
	ranks := max(s.LaunchRanks(), 1)
	sweep := s.Sizes.List()
	for i, r := range s.Ranges {
		least, sends := elem, fmt.Sprintf("whole %s elements (%d bytes)", datatype, elem)
		if PerRank(r.Collective) {
			of := text.Count(ranks, "rank", "ranks")
			if s.LaunchRanks() == 0 {
				of = "ranks (1 or more: the allocation's)"
			}
			least, sends = 16*int64(ranks), fmt.Sprintf("%s's %s each its share of a size in whole 16 bytes", r.Collective, of)
		}
		whole := func(n int64) bool { return n >= least && r.Contains(n) }
		if slices.ContainsFunc(sweep, r.Contains) && !slices.ContainsFunc(sweep, whole) {
			b.errorf(b.loc.field("range", i, "min"), "range %s: nccl-tests sends %s, and runs each of its sizes as 0 bytes, which measures nothing; start it at %d", r.Name, sends, least)
		}
	}
}

func (b *builder) ncclTestsArgs(line int, args []string) {
	opts, err := NCCLTestsOptions(args)
	if err != nil {
		b.errorf(line, "benchmark.args: %v; it would print its usage and run nothing", err)
		return
	}
	for _, o := range opts {
		named := o.Written
		if !strings.HasSuffix(o.Written, o.Long) {
			named += " (--" + o.Long + ")"
		}
		n, isInt := o.Int()
		switch {
		case slices.Contains(sweepOptions, o.Long):
			b.errorf(line, "benchmark.args: %s is set by nccltune (the sweep, iterations and check come from the space)", named)
		case o.Long == "help":
			b.errorf(line, "benchmark.args: %s prints nccl-tests' usage and runs nothing", named)
		case slices.Contains([]string{"datatype", "op"}, o.Long) && o.Value == "all":
			b.errorf(line, "benchmark.args: %s all prints a table per value; nccltune reads one", named)
		// nccl-tests reads the root with strtol: -1 is every root of
		// broadcast and reduce in turn, and "all" no word but 0.
		case o.Long == "root" && isInt && n == -1:
			b.errorf(line, "benchmark.args: %s %s runs every rank as the root in turn (broadcast, reduce), a table per root; nccltune reads one", named, o.Value)
		case o.Long == "root" && o.Value == "all":
			b.errorf(line, "benchmark.args: %s all is root 0 to nccl-tests, which reads a number (-1 runs every root, a table each, which nccltune does not read)", named)
		case formatOptions[o.Long] != "" && (!isInt || n != 0):
			b.errorf(line, "benchmark.args: %s %s %s, which nccltune does not read (leave it out, or 0)", named, o.Value, formatOptions[o.Long])
		}
	}
}

// How a program reads its long options, as the load compares them: torchrun
// (Python's argparse) and srun take an unambiguous abbreviation ("--nproc",
// "--ntasks-per"; srun's getopt_long an ambiguous one not at all, which
// the load still takes for each option it may be), mpirun none, and has
// options of one dash and many letters ("-np"). srun's arguments are first
// read as its getopt_long reads them (SrunOptions), short options and
// values included, each then spelled long (SrunOption.Read).
type optionStyle int

const (
	abbreviated optionStyle = iota
	exact
)

// givesOption reports whether arg, one of a program's arguments, gives its
// option opt ("--nodes") as the program reads it.
func givesOption(arg, opt string, style optionStyle) bool {
	name, _, _ := strings.Cut(arg, "=")
	switch {
	case name == opt:
		return true
	case style == abbreviated && len(name) > len("--x") && strings.HasPrefix(name, "--"):
		return strings.HasPrefix(opt, name)
	}
	return false
}

// launcherOwn are, for each launcher, the options nccltune passes itself,
// from the space: given again in launcher.args, after nccltune's, the
// launcher takes the last one (torchrun's --standalone, a rendezvous of its
// own), and a trial runs other ranks, on other nodes, or without its
// variables, than the space says and the checks of each trial expect.
var launcherOwn = map[string][]ownOptions{
	"srun": {
		{[]string{"--nodes"}, "launcher.nodes (or campaign.scales)"},
		{[]string{"--ntasks", "--ntasks-per-node"}, "launcher.ntasks_per_node"},
		{[]string{"--export"}, "--export=ALL, which hands every rank the trial's variables"},
		{[]string{"--kill-on-bad-exit"}, "--kill-on-bad-exit=1, which ends a step at its first failed rank"},
	},
	"mpirun": {
		{[]string{"-np", "--np", "-n", "--n", "-c"}, "launcher.np"},
		{[]string{"--hostfile", "-hostfile", "--machinefile", "-machinefile", "-f"}, "launcher.hostfile"},
	},
	"torchrun": {
		{[]string{"--nproc_per_node", "--nproc-per-node"}, "launcher.nproc_per_node"},
		{[]string{"--nnodes"}, "launcher.nodes"},
		{[]string{"--rdzv_backend", "--rdzv-backend", "--rdzv_endpoint", "--rdzv-endpoint", "--standalone"}, "launcher.rdzv_endpoint"},
	},
}

// groupsOwn are the options by which nccltune gives each trial its group's
// nodes, where launcher.groups splits them. srun's -F (--nodefile) names
// the nodes too, from a file, and replaces --nodelist wherever it stands
// (src/srun/libsrun/opt.c: the file's list is read in place of the
// option's), so every group's trials would run on the file's nodes.
var groupsOwn = map[string][]ownOptions{
	"srun":   {{[]string{"--nodelist", "--nodefile"}, "launcher.groups, which gives each trial its group's nodes"}},
	"mpirun": {{[]string{"-H", "--host", "-host", "-hosts"}, "launcher.groups, which gives each trial its group's hosts"}},
}

// launcherOutput are, for each launcher, the options that send the ranks'
// output to files, or keep some of it back (torchrun's filter of local
// ranks), where nccltune reads each trial's result and errors from the
// launcher's own output: every trial would fail with nothing to read. The
// variables that set them from the caller's environment (SRUN_OUTPUT,
// PET_REDIRECTS) are dropped from the launcher's for the same reason.
// Open MPI 4's --output-filename copies the output, and stays allowed but
// with its nocopy qualifier (mpirunHidesOutput).
var launcherOutput = map[string][]string{
	"srun":     {"--output", "--error"},
	"torchrun": {"-r", "--redirects", "--local_ranks_filter", "--local-ranks-filter"},
}

// srunAsNccltune reports whether o, one of srun's options, is as nccltune
// passes it (--export=ALL, ALL in any case as srun takes it;
// --kill-on-bad-exit=1, which srun's -K alone also sets), which a space
// written for srun by habit gives again: the step is the same, so it is no
// reason to refuse it.
func srunAsNccltune(o SrunOption) bool {
	switch o.Long {
	case "export":
		return strings.EqualFold(o.Value, "ALL")
	case "kill-on-bad-exit":
		return !o.HasValue || o.Value == "1"
	}
	return false
}

// srunProgram refuses launcher.args that srun reads, from rest on, as the
// program it runs (rest, after opts, of srunParse): nccltune's benchmark
// command would be that program's arguments, and every trial would run it.
// An optional value given apart ("-K 1") is such a program, as getopt_long
// takes one only attached.
func (b *builder) srunProgram(opts []SrunOption, rest []string) {
	at := b.loc.field("launcher", 0, "args")
	switch {
	case len(rest) == 0:
	case rest[0] == "--":
		b.errorf(at, "launcher.args: \"--\" ends srun's options: srun would run what follows it as the program, with the benchmark's command as its arguments")
	case len(opts) > 0 && srunLong[opts[len(opts)-1].Long] == srunOptionalValue && !opts[len(opts)-1].HasValue:
		last := opts[len(opts)-1]
		b.errorf(at, "launcher.args: %q is no option of srun's: %s takes a value only attached (--%s=%s), and srun would run %q as the program, with the benchmark's command as its arguments", rest[0], last.Written, last.Long, rest[0], rest[0])
	default:
		b.errorf(at, "launcher.args: %q is no option of srun's, nor an option's value: srun would run it as the program, with the benchmark's command as its arguments", rest[0])
	}
}

// mpirunHidesOutput is the option of args that has Open MPI's mpirun write
// the ranks' output as XML (4's --xml, or --xml-file to a file, with
// mpirun's own reports) or to files only (4's --output-filename with
// nocopy), and so none where nccltune reads it, or the MCA parameter that
// does (MCAHidesOutput), in any spelling of --mca and of 5's --output list
// (prrteOutputHides), as given ("--output tag,xml"), and how it does; ""
// where none does.
func mpirunHidesOutput(args []string) (given, how string) {
	for i, a := range args {
		if mpirunOwnGives(a, "--xml") {
			return a, writesXML
		}
		if key, value, attached := mpirunOption(a); strings.HasSuffix(key, "mca") {
			operands := args[i+1:]
			if attached {
				operands = append([]string{value}, operands...)
			}
			if len(operands) > 1 {
				if how := MCAHidesOutput(operands[0], operands[1]); how != "" {
					return strings.Join(append([]string{a}, operands[:2]...), " "), how
				}
			}
			continue
		}
		xmlFile, outputFile := mpirunOwnGives(a, "--xml-file"), mpirunOwnGives(a, "--output-filename")
		if !xmlFile && !outputFile && !mpirunOwnGives(a, "--output") {
			continue
		}
		given, value, attached := a, "", false
		if _, value, attached = strings.Cut(a, "="); !attached && i+1 < len(args) {
			given, value = a+" "+args[i+1], args[i+1]
		}
		switch {
		case xmlFile:
			return given, writesXML
		case outputFile:
			if ompiOutputNoCopy(value) {
				return given, filesOnly
			}
		default:
			if how := prrteOutputHides(value); how != "" {
				return given, how
			}
		}
	}
	return "", ""
}

// How mpirun's options hide the ranks' output from nccltune.
const (
	writesXML = "writes the ranks' output as XML"
	filesOnly = "sends the ranks' output to files only"
)

// MCAHidesOutput says how the MCA parameter param, set to value, has Open
// MPI's mpirun hide the ranks' output from nccltune (writesXML, filesOnly):
// 4's orte_xml_output (--xml's) true, or orte_xml_file (--xml-file's)
// naming a file; 5's output (PRRTE's --output, PRTE_MCA_output) as its
// list says (prrteOutputHides). "" where it does not.
func MCAHidesOutput(param, value string) string {
	switch {
	case param == "orte_xml_output" && MCATrue(value), param == "orte_xml_file" && value != "":
		return writesXML
	case param == "output":
		return prrteOutputHides(value)
	}
	return ""
}

// ompiOutputNoCopy reports whether value, of Open MPI 4's
// --output-filename, has the ranks' output written to its files only: the
// nocopy qualifier, in any case, in the list after its first ':' (4.1.4's
// mpirun; "/tmp/o:nocopy").
func ompiOutputNoCopy(value string) bool {
	_, quals, _ := strings.Cut(value, ":")
	return slices.ContainsFunc(strings.Split(quals, ","), func(q string) bool { return strings.EqualFold(q, "nocopy") })
}

// prrteOutputHides says how directives, a list of PRRTE's --output (Open
// MPI 5), hides the ranks' output, as PRRTE reads it
// (prte_schizo_base_parse_output): an xml directive, or output to files
// (file=, dir=) with the nocopy qualifier, after a directive's first ':'
// (PMIX_IOF_FILE_ONLY; each word in any case, abbreviated: "x",
// "f=o:noc"). "" where it does not.
func prrteOutputHides(directives string) string {
	toFiles, noCopy := false, false
	for _, d := range strings.Split(directives, ",") {
		d, quals, _ := strings.Cut(d, ":")
		d, _, _ = strings.Cut(d, "=")
		if prrteWord(d, "xml") {
			return writesXML
		}
		toFiles = toFiles || prrteWord(d, "file") || prrteWord(d, "dir")
		noCopy = noCopy || prrteWord(quals, "nocopy")
	}
	if toFiles && noCopy {
		return filesOnly
	}
	return ""
}

// prrteWord reports whether given names word as PMIx reads a directive
// (PMIX_CHECK_CLI_OPTION): a leading part of it, in any case.
func prrteWord(given, word string) bool {
	given = strings.TrimSpace(given)
	return given != "" && len(given) <= len(word) && strings.EqualFold(given, word[:len(given)])
}

// MCATrue reports whether v is true as Open MPI reads a boolean MCA
// parameter (mca_base_var_enum.c): a number other than 0, or true, t,
// yes, y or enabled.
func MCATrue(v string) bool {
	v = strings.ToLower(strings.TrimSpace(v))
	if n, err := strconv.ParseInt(v, 0, 64); err == nil {
		return n != 0
	}
	return slices.Contains([]string{"true", "t", "yes", "y", "enabled"}, v)
}

// ownOptions are a launcher's spellings of one option, and what nccltune
// gives it from.
type ownOptions struct {
	opts []string
	what string
}

// launcherArgs refuses launcher.args that give an option nccltune passes
// itself (launcherOwn), and, where launcher.groups gives each trial its
// group's nodes, the nodes.
func (b *builder) launcherArgs(s *Space) {
	l := s.Launcher
	own := launcherOwn[l.Kind]
	if l.Groups > 1 {
		own = append(slices.Clone(own), groupsOwn[l.Kind]...)
	}
	if l.Kind == "torchrun" && l.RdzvEndpoint != "" {
		// Each launch's torchrun meet under an id of their own, where a
		// fixed one let a torchrun of another launch on the endpoint (a
		// node's left from the trial before, another campaign's) join
		// theirs. Under --standalone torchrun replaces any id itself.
		own = append(slices.Clone(own), ownOptions{[]string{"--rdzv_id", "--rdzv-id"}, "launcher.rdzv_endpoint, whose every launch meets under a rendezvous id of its own"})
	}
	style := abbreviated
	if l.Kind == "mpirun" {
		style = exact
	}
	if l.Kind == "mpirun" {
		b.mpirunExports(l.Args)
		if given, how := mpirunHidesOutput(l.Args); given != "" {
			b.errorf(b.loc.field("launcher", 0, "args"), "launcher.args: %s %s, where nccltune reads each trial's result, errors and NCCL's log as the ranks print them: every trial would fail", given, how)
		}
	}
	// Each argument, or for srun each option as its getopt_long reads it
	// (its value attached or the next argument, which is then no option
	// of its own), as written and as the checks read it.
	type arg struct {
		written, read string
		asNccltune    bool // as nccltune passes it itself: the same step
	}
	var args []arg
	if l.Kind == "srun" {
		opts, rest := srunParse(l.Args)
		for _, o := range opts {
			args = append(args, arg{o.Written, o.Read(), srunAsNccltune(o)})
		}
		b.srunProgram(opts, rest)
	} else {
		for _, a := range l.Args {
			args = append(args, arg{a, a, false})
		}
	}
	for _, a := range args {
		if a.asNccltune {
			continue
		}
		if l.Kind == "srun" && givesOption(a.read, "--task-prolog", style) {
			// Refused rather than read, as mpirun's files of variables are:
			// it is a program, run on each node at each trial.
			b.errorf(b.loc.field("launcher", 0, "args"), "launcher.args: %s has slurmstepd run a program before each task, whose \"export NAME=value\" lines set the task's variables, which nccltune does not see: an NCCL variable set there would override every trial's value, unseen", a.written)
		}
		if slices.ContainsFunc(launcherOutput[l.Kind], func(opt string) bool { return givesOption(a.read, opt, style) }) {
			b.errorf(b.loc.field("launcher", 0, "args"), "launcher.args: %s sends the ranks' output elsewhere than to %s's own, which nccltune reads each trial's result and errors from: every trial would fail with nothing to read", a.written, l.Kind)
		}
		for _, o := range own {
			gives := func(opt string) bool { return givesOption(a.read, opt, style) }
			if l.Kind == "mpirun" {
				gives = func(opt string) bool { return mpirunOwnGives(a.read, opt) }
			}
			if slices.ContainsFunc(o.opts, gives) {
				b.errorf(b.loc.field("launcher", 0, "args"), "launcher.args: %s is set by nccltune from the space (%s): a second one would make each trial run other than the space says", a.written, o.what)
			}
		}
	}
}

// mpirunExports refuses an NCCL variable that launcher.args hands the ranks
// (Open MPI's -x NAME=value, MPICH's -genv NAME value and lists), and
// options that have mpirun read more options or variables from a file
// (mpirunFileOptions, MCAReadsFile): given after nccltune's own -x, it
// would override a trial's value of it, which the space sets ([fixed],
// [[param]]) and NCCL's log is checked against. Open MPI's other way of
// setting the ranks' variables, mca_base_env_list, is refused whatever it
// names: Open MPI refuses to run with it beside -x. Each option is known
// in every spelling mpirun reads (mpirunOption).
func (b *builder) mpirunExports(args []string) {
	for i := 0; i < len(args); i++ {
		opt, operands := args[i], args[i+1:]
		key, value, attached := mpirunOption(opt)
		if key == "" {
			continue
		}
		if attached {
			operands = append([]string{value}, operands...)
		}
		var names []string
		shown := strings.Join(operands[:min(len(operands), 1)], " ")
		switch {
		case mpirunFileOptions[key] != "":
			b.errorf(b.loc.field("launcher", 0, "args"), "launcher.args: %s has mpirun read %s from a file, which nccltune does not read: an NCCL variable set there would override every trial's value, unseen; give them in launcher.args itself", strings.TrimSpace(opt+" "+shown), mpirunFileOptions[key])
		case key == "x" || key == "genv" || key == "env":
			if len(operands) > 0 {
				v, _, _ := strings.Cut(operands[0], "=")
				names = []string{v}
			}
		case key == "genvlist" || key == "envlist":
			if len(operands) > 0 {
				names = strings.Split(operands[0], ",")
			}
		case strings.HasSuffix(key, "mca"):
			if len(operands) > 1 && MCAReadsFile(operands[0]) {
				b.errorf(b.loc.field("launcher", 0, "args"), "launcher.args: %s %s %s has mpirun read MCA parameters or variables from files, which nccltune does not read: one setting mca_base_env_list or an NCCL variable there would override every trial's value, unseen; give them in launcher.args itself", opt, operands[0], operands[1])
			}
			// Open MPI's list of variables to set in every rank (--mca
			// mca_base_env_list "FOO=1;BAR"): Open MPI 4's mpirun and 5's
			// PRRTE refuse to run with it beside -x ("does not support
			// mixing these two methods"), and so every trial.
			if len(operands) > 0 && strings.HasSuffix(operands[0], "mca_base_env_list") {
				b.errorf(b.loc.field("launcher", 0, "args"), "launcher.args: %s: Open MPI refuses to run with it beside the -x options by which nccltune hands the ranks each trial's variables, so every trial would fail; give its variables with -x", strings.Join(append([]string{opt}, operands[:min(len(operands), 2)]...), " "))
			}
		}
		for _, v := range names {
			if strings.HasPrefix(v, "NCCL_") {
				b.errorf(b.loc.field("launcher", 0, "args"), "launcher.args: %s %s hands the ranks %s, which the space sets ([fixed] or a [[param]]): after nccltune's own, it would override each trial's value", opt, shown, v)
			}
		}
	}
}

// mpirunWatched are the options of mpirun, Open MPI's and Hydra's, that
// mpirunExports looks for, by their names without dashes: those that hand
// the ranks variables, those that set MCA parameters (Open MPI 5's --mca,
// --prtemca, --pmixmca and their global --g forms, as PMIx takes every
// option whose name ends in "mca"), those that read a file.
var mpirunWatched = []string{"x", "genv", "env", "genvlist", "envlist",
	"mca", "gmca", "omca", "prtemca", "pmixmca", "gprtemca", "gpmixmca",
	"tune", "am", "app", "configfile"}

// mpirunOption is the option of mpirunWatched that arg gives, "" if none,
// and the value attached to it. Hydra reads an option in any case, after
// one dash or more, and its value after '=' ("--genv=NCCL_ALGO Ring"); Open
// MPI 4 a long option after one dash or two ("-mca"). Open MPI 5's mpirun,
// PRRTE, reads its options with getopt_long (PMIx's pmix_cmd_line_parse),
// which takes a long option's unambiguous abbreviation ("--mc" for --mca;
// of several options that match alike, the first) and a short option's
// value attached ("-xNCCL_ALGO=Ring", after flags: "-vx"): each is refused as
// the option it may be.
func mpirunOption(arg string) (key, value string, attached bool) {
	if len(arg) < 2 || arg[0] != '-' {
		return "", "", false
	}
	a := strings.ToLower(arg)
	name, value, attached := strings.Cut(strings.TrimLeft(a, "-"), "=")
	if _, v, ok := strings.Cut(strings.TrimLeft(arg, "-"), "="); ok {
		value = v // in its own case: a variable's name
	}
	if slices.Contains(mpirunWatched, name) {
		return name, value, attached
	}
	if strings.HasPrefix(a, "--") {
		if name == "" || slices.Contains(ompiWhole, name) {
			return "", "", false
		}
		for _, o := range mpirunWatched {
			if strings.HasPrefix(o, name) {
				return o, value, attached
			}
		}
		return "", "", false
	}
	// getopt's short options: flags, then -x with its value attached or next.
	if i := strings.IndexByte(arg, 'x'); i > 0 && strings.IndexFunc(arg[1:i], func(r rune) bool { return (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') }) < 0 {
		return "x", arg[i+1:], i+1 < len(arg)
	}
	return "", "", false
}

// ompiWhole are Open MPI's long options whose name begins a longer one's
// there ("--host", "--hostfile"): given whole, getopt_long takes them as
// themselves, not as an abbreviation.
var ompiWhole = []string{"host", "n", "output", "x"}

// mpirunOwnGives reports whether arg gives opt, one of the options nccltune
// passes mpirun itself, in a spelling mpirun reads: opt's name after any
// dashes, its abbreviation after two (mpirunOption), and a short option
// with its count or host attached ("-n16", "-c4", "-Hnode1:8"), which Open
// MPI 5's getopt_long reads.
func mpirunOwnGives(arg, opt string) bool {
	if len(arg) < 2 || arg[0] != '-' {
		return false
	}
	long := strings.TrimLeft(opt, "-")
	name, _, _ := strings.Cut(strings.TrimLeft(arg, "-"), "=")
	switch {
	case name == long:
		return true
	case strings.HasPrefix(arg, "--") && name != "" && strings.HasPrefix(long, name) && !slices.Contains(ompiWhole, name):
		return true
	case len(opt) != 2 || arg[1] != opt[1] || len(arg) == 2 || strings.HasPrefix(arg, "--"):
		return false
	case opt[1] == 'H':
		return true
	}
	_, err := strconv.Atoi(arg[2:])
	return err == nil && (opt[1] == 'n' || opt[1] == 'c')
}

// mpirunFileOptions are mpirun's options that read more options, or
// variables for the ranks, from a file, and what they read: Open MPI's
// --tune (MCA parameters and -x NAME=value lines), --am (aggregate MCA
// parameter sets), --app (an appfile, each line a program with options of
// its own, -x among them), Hydra's -configfile (lines of options, -genv
// among them). They are refused, not read: the file is read by mpirun at
// each trial, on the node it runs on, where nccltune saw it at load or not,
// and in syntaxes of each version's own.
var mpirunFileOptions = map[string]string{
	"tune":       "MCA parameters and -x variables",
	"am":         "aggregate MCA parameter sets",
	"app":        "programs with options of their own (-x)",
	"configfile": "options (-genv, -env)",
}

// MCAReadsFile reports whether the MCA parameter param names files of more
// parameters or variables for the ranks: mca_base_param_files,
// mca_base_param_file_prefix (--am's), mca_base_envar_file_prefix (files of
// variables), mca_base_override_param_file, and where they are looked for
// (mca_base_param_file_path), each under its deprecated synonym too, which
// Open MPI still reads (mca_param_files). Only the MCA base's own: a
// component's files of other things (Open MPI 4's
// btl_openib_device_param_files, of the HCAs' settings) are no such file.
func MCAReadsFile(param string) bool {
	_, p, ok := strings.Cut(strings.ToLower(param), "mca_")
	p = strings.TrimPrefix(p, "base_")
	return ok && (strings.Contains(p, "param_file") || strings.Contains(p, "envar_file"))
}

func (b *builder) ddp(line func(string) int, layers, batch int, bm *BenchmarkSettings) {
	if bm.Layers = layers; layers == 0 {
		bm.Layers = 8
	}
	if bm.Batch = batch; batch == 0 {
		bm.Batch = 32
	}
	if bm.Device != "cuda" && bm.Device != "cpu" {
		b.errorf(line("device"), "benchmark.device %q is not cuda or cpu", bm.Device)
	}
	if bm.Layers < 1 || bm.Layers > MaxLayers {
		b.errorf(line("layers"), "benchmark.layers must be 1 to %d, not %d", MaxLayers, bm.Layers)
	}
	if bm.Batch < 1 || bm.Batch > MaxBatch {
		b.errorf(line("batch"), "benchmark.batch must be 1 to %d, not %d", MaxBatch, bm.Batch)
	}
	n, err := ParseSize(bm.Params)
	switch {
	case err != nil:
		b.errorf(line("model_params"), "benchmark.model_params: %v", err)
	case n < 1 || n > MaxModelParams:
		b.errorf(line("model_params"), "benchmark.model_params must be 1 to %s, not %s: DDP keeps the model and its gradients on every GPU, 8 bytes a parameter", FormatSize(MaxModelParams), bm.Params)
	}
}

func (b *builder) command(line func(string) int, bm *BenchmarkSettings) {
	m := bm.Metric
	if len(bm.Command) == 0 || bm.Command[0] == "" {
		b.errorf(line("kind"), "benchmark kind command needs command = [\"program\", \"arg\", ...]")
	}
	switch {
	case (m.Regex == "") == (m.JSON == ""):
		b.errorf(line("metric"), "benchmark.metric needs regex = '...' (one group: the value) or json = \"key\", one of them")
	case m.Regex != "":
		if re, err := regexp.Compile(m.Regex); err != nil {
			b.errorf(line("metric"), "benchmark.metric.regex: %v", err)
		} else if re.NumSubexp() != 1 {
			b.errorf(line("metric"), "benchmark.metric.regex must have exactly one group, the value: it has %d", re.NumSubexp())
		}
	}
	if m.Goal != "min" && m.Goal != "max" {
		b.errorf(line("metric"), "benchmark.metric.goal must be \"min\" (a time) or \"max\" (a rate), not %q", m.Goal)
	}
	if strings.ContainsFunc(m.Unit, func(r rune) bool { return !unicode.IsGraphic(r) }) || !utf8.ValidString(m.Unit) {
		// Printed in every table's header and the plots' axes.
		b.errorf(line("metric"), "benchmark.metric.unit %q holds a control or invisible character", m.Unit)
	}
	if m.Skip < 0 || m.Skip > MaxIters {
		// Beyond the iterations a trial may run, every value is skipped.
		b.errorf(line("metric"), "benchmark.metric.skip must be 0 to %d, not %d", MaxIters, m.Skip)
	}
}

func (b *builder) launcher(raw *rawFile, s *Space) {
	r := raw.Launcher
	s.Launcher = LauncherSettings{Kind: orDefault(r.Kind, "local"), Command: r.Command, Flavor: r.Flavor, NP: r.NP,
		Hostfile: r.Hostfile, MapBy: r.MapBy, BindTo: r.BindTo, Nodes: r.Nodes, TasksPerNode: r.TasksPerNode,
		NProcPerNode: r.NProcPerNode, RdzvEndpoint: r.RdzvEndpoint, Args: r.Args, Groups: 1}
	line := func(key string) int { return b.loc.field("launcher", 0, key) }
	if r.Groups != nil {
		s.Launcher.Groups = *r.Groups
		b.groups(line("groups"), s)
	}
	l := s.Launcher
	// Each launcher takes only its own settings, so a typo'd kind cannot silently drop them.
	for _, f := range []struct {
		key   string
		set   bool
		kinds []string
	}{
		{"flavor", l.Flavor != "", []string{"mpirun"}}, {"np", l.NP != 0, []string{"mpirun"}},
		{"hostfile", l.Hostfile != "", []string{"mpirun"}}, {"map_by", l.MapBy != "", []string{"mpirun"}},
		{"bind_to", l.BindTo != "", []string{"mpirun"}}, {"nodes", l.Nodes != 0, []string{"srun", "torchrun"}},
		{"ntasks_per_node", l.TasksPerNode != 0, []string{"srun"}},
		{"nproc_per_node", l.NProcPerNode != 0, []string{"torchrun"}}, {"rdzv_endpoint", l.RdzvEndpoint != "", []string{"torchrun"}},
		{"command", l.Command != "", []string{"mpirun", "srun", "torchrun"}},
		{"args", len(l.Args) > 0, []string{"mpirun", "srun", "torchrun"}},
	} {
		if f.set && !slices.Contains(f.kinds, l.Kind) {
			b.errorf(line(f.key), "launcher.%s does not apply to launcher %q", f.key, l.Kind)
		}
	}
	switch {
	case !slices.Contains(Launchers, l.Kind):
		b.errorf(line("kind"), "launcher %q is not supported (supported: %s)", l.Kind, strings.Join(Launchers, ", "))
	case l.Flavor != "" && l.Flavor != "openmpi" && l.Flavor != "mpich":
		b.errorf(line("flavor"), "launcher.flavor %q is not openmpi or mpich", l.Flavor)
	case l.Kind == "torchrun" && s.Benchmark.Kind == NCCLTests:
		b.errorf(line("kind"), "launcher torchrun runs Python: it needs benchmark.kind = \"ddp\" or \"command\"")
	}
	switch {
	case l.Kind != "torchrun" || l.Nodes <= 1:
	case l.RdzvEndpoint == "":
		// Without an endpoint torchrun runs --standalone, a rendezvous on this
		// node alone, and waits for the other nodes until every trial times out.
		b.errorf(line("nodes"), "launcher.nodes = %d needs launcher.rdzv_endpoint (host:port), where the nodes' torchrun meet; without it torchrun runs --standalone, on this node alone", l.Nodes)
	case l.Command == "":
		// torchrun starts the workers of its own node only, and nccltune
		// runs it on this node alone: the other nodes' torchrun, which the
		// rendezvous waits for, is started by nothing, and one started by
		// other means runs its ranks without the trial's variables. A
		// launcher.command that starts torchrun on every node with its own
		// environment (srun's --export=ALL) hands them on.
		b.errorf(line("nodes"), "launcher.nodes = %d: torchrun starts this node's workers only, and nccltune starts no torchrun on the other nodes, whose ranks would not get the trial's variables (and without which the rendezvous waits until every trial times out); use launcher srun or mpirun for several nodes, or a launcher.command that starts torchrun on every node with this environment (a script running srun --export=ALL -N %d -n %d torchrun \"$@\": srun takes a count it is not given from the allocation)", l.Nodes, l.Nodes, l.Nodes)
	}
	if l.Kind == "srun" && l.TasksPerNode == 0 {
		// Left to itself, srun takes its task count from the allocation it
		// runs in (SLURM_NTASKS, which salloc -n sets for every command under
		// it): a rank count the space does not know. The runner gives each
		// step its shape in full, from the space.
		b.errorf(line("kind"), "launcher srun needs ntasks_per_node, the ranks of each node: without it the allocation's task count (salloc -n, SLURM_NTASKS) would decide how many ranks a trial runs")
	}
	b.launcherCounts(line, s)
}

// launcherCounts checks each count of the launcher, then the ranks of a
// trial, their product (each count bounded first, so that it cannot wrap).
func (b *builder) launcherCounts(line func(string) int, s *Space) {
	l, bounded := s.Launcher, true
	for _, c := range []struct {
		key string
		n   int
	}{{"np", l.NP}, {"nodes", l.Nodes}, {"ntasks_per_node", l.TasksPerNode}, {"nproc_per_node", l.NProcPerNode}} {
		if c.n < 0 || c.n > MaxRanks {
			b.errorf(line(c.key), "launcher.%s must be 1 to %d, not %d", c.key, MaxRanks, c.n)
			bounded = false
		}
	}
	if n := s.LaunchRanks(); bounded && n > MaxRanks {
		b.errorf(b.loc.section("launcher"), "each trial would run %d ranks (launcher %s, benchmark.gpus %d): at most %d", n, l.Kind, s.Benchmark.GPUs, MaxRanks)
	}
}

// argStrings refuses an argument of the benchmark or the launcher that Linux
// would refuse to start a program with (see MaxArgStrlen): every trial would
// fail to launch. Each setting passed on a command line is one.
func (b *builder) argStrings(s *Space) {
	bm, l := s.Benchmark, s.Launcher
	for _, list := range []struct {
		section, key string
		args         []string
	}{{"benchmark", "args", bm.Args}, {"benchmark", "command", bm.Command},
		{"benchmark", "binary", []string{bm.Binary}}, {"benchmark", "python", []string{bm.Python}}, {"benchmark", "script_dir", []string{bm.ScriptDir}},
		{"launcher", "args", l.Args}, {"launcher", "command", []string{l.Command}}, {"launcher", "hostfile", []string{l.Hostfile}},
		{"launcher", "map_by", []string{l.MapBy}}, {"launcher", "bind_to", []string{l.BindTo}}, {"launcher", "rdzv_endpoint", []string{l.RdzvEndpoint}}} {
		for _, a := range list.args {
			if len(a)+1 > MaxArgStrlen {
				b.errorf(b.loc.field(list.section, 0, list.key), "%s.%s: an argument of %d bytes: Linux refuses to start a program with one over %d (MAX_ARG_STRLEN), so every trial would fail to launch",
					list.section, list.key, len(a), MaxArgStrlen)
			}
		}
	}
}

// programs refuses a program to run whose name starts with '-': the
// launcher before it (mpirun, srun, torchrun) would read it as an option of
// its own ("--nnodes=64" after torchrun's flags) and run something else.
func (b *builder) programs(s *Space) {
	first := func(args []string) string {
		if len(args) == 0 {
			return ""
		}
		return args[0]
	}
	for _, p := range []struct{ section, key, name string }{
		{"benchmark", "binary", s.Benchmark.Binary}, {"benchmark", "command", first(s.Benchmark.Command)}, {"launcher", "command", s.Launcher.Command},
	} {
		if strings.HasPrefix(p.name, "-") {
			b.errorf(b.loc.field(p.section, 0, p.key), "%s.%s: the program %q starts with '-', which a launcher reads as its own option; name it by a path (./%s)", p.section, p.key, p.name, p.name)
		}
	}
}

// Counts no real run could mean are refused at load: nccl-tests reads -n,
// -w and -g into a C int, and the iteration count is adapted up to 8 times
// benchmark.iters (a count past 2^31 wrapped, and 2^62 became 1 iteration
// in the adaptation); rank counts are multiplied together (np x gpus, nodes
// x tasks x gpus), and a product that wrapped passed every check made on it.
const (
	// MaxIters bounds benchmark.iters and warmup: 10 million iterations of
	// the fastest all-reduce (5 us) take a minute per size.
	MaxIters = 10_000_000
	// MaxRanks bounds every rank, process and node count, and their
	// products: beyond any cluster one NCCL communicator spans.
	MaxRanks = 1 << 20
	// MaxSize bounds every message size (campaign.sizes, workload.size)
	// and the sweep's factor: nccl-tests allocates on each GPU a send and a
	// receive buffer of the largest size (all_gather's and alltoall's whole
	// one), and no GPU holds two of 256 GiB. Beyond it every trial fails to
	// allocate.
	MaxSize = 256 << 30
)

// Bounds of the DDP step's model, which DDP keeps whole on every GPU, with
// its gradients: 8 bytes a parameter, so 64G parameters need 512 GiB. Its
// layers are modules that Python builds, runs and reduces one by one every
// step (2^62 of them would be built until the trial's timeout), and 1024 is
// past any model's depth; a batch of a million rows is past any step's.
const (
	MaxModelParams = 64 << 30
	MaxLayers      = 1024
	MaxBatch       = 1 << 20
)

// benchmark.timeout is bounded: below a second no launcher has started its
// ranks, so every trial would time out; past a day a hung trial is not
// ended, as if there were no timeout.
const MinTimeout, MaxTimeout = time.Second, 24 * time.Hour

// groups checks launcher.groups: each group needs nodes of its own, split
// from srun's allocation or mpirun's hostfile; a simulated cluster is one of
// its own for every group.
func (b *builder) groups(line int, s *Space) {
	l := s.Launcher
	switch {
	case l.Groups < 1 || l.Groups > MaxGroups:
		b.errorf(line, "launcher.groups must be 1 to %d, not %d", MaxGroups, l.Groups)
	case l.Groups == 1:
	case l.Kind == "srun" && l.Nodes == 0 && len(s.Campaign.Scales) == 0:
		b.errorf(line, "launcher.groups = %d needs launcher.nodes, each group's node count (or campaign.scales, whose node counts each scale's groups take): the allocation's nodes are split into groups of it", l.Groups)
	case l.Kind == "mpirun" && l.Hostfile == "":
		b.errorf(line, "launcher.groups = %d needs launcher.hostfile: its hosts are split into the groups", l.Groups)
	case (l.Kind == "local" || l.Kind == "torchrun") && len(s.Simulator) == 0:
		b.errorf(line, "launcher.groups = %d: launcher %s runs on this node only, which has no nodes to split; use srun or mpirun with a hostfile", l.Groups, l.Kind)
	}
}

// MaxScales bounds campaign.scales, each a campaign of its own.
const MaxScales = 16

// scales checks campaign.scales: node counts in ascending order, each set
// where the trials' node count is: srun's -N, the simulated cluster's nodes.
func (b *builder) scales(s *Space) {
	scales := s.Campaign.Scales
	if len(scales) == 0 {
		return
	}
	line := b.loc.field("campaign", 0, "scales")
	ascending := scales[0] >= 1 && scales[len(scales)-1] <= MaxRanks
	for i := 1; i < len(scales); i++ {
		ascending = ascending && scales[i] > scales[i-1]
	}
	l := s.Launcher
	switch {
	case len(scales) > MaxScales:
		b.errorf(line, "campaign.scales: at most %d node counts, each a campaign of its own", MaxScales)
	case !ascending:
		b.errorf(line, "campaign.scales must be node counts of 1 to %d, in ascending order, each once: %v", MaxRanks, scales)
	case l.Kind == "srun" && l.Nodes != 0:
		b.errorf(b.loc.field("launcher", 0, "nodes"), "launcher.nodes is set by campaign.scales, each campaign's node count: leave it out")
	case l.Kind != "srun" && len(s.Simulator) == 0:
		b.errorf(line, "campaign.scales needs launcher srun, whose -N each scale sets (or the simulator): launcher %s cannot choose a node count", l.Kind)
	case len(s.Simulator) > 0 && s.Simulator["nodes"] != "":
		b.errorf(b.loc.field("simulator", 0, "nodes"), "simulator.nodes is set by campaign.scales, each campaign's node count: leave it out")
	}
}

func (b *builder) params(raw *rawFile, s *Space) {
	seen := map[string]bool{}
	for i, rp := range raw.Param {
		line := b.loc.field("param", i, "name")
		nerr := len(b.errs)
		p := Param{Name: rp.Name, Log: rp.Log}
		v, err := Lookup(p.Name)
		if err != nil {
			b.errorf(line, "param: %v", err)
			if !v.took() {
				continue
			}
			// Read as stored (ParseStored): its trials set it.
		}
		if v.IsArg() && s.Benchmark.Kind != DDP {
			b.errorf(line, "param %s is a DDP setting: it needs benchmark.kind = \"ddp\"", p.Name)
		}
		if LogVars[p.Name] {
			b.errorf(line, "param %s: nccltune sets NCCL's log itself (it reads it to confirm each setting); it cannot be searched", p.Name)
		}
		if seen[p.Name] {
			// Left out, as no space holds it: the params stay as few as
			// the variables, and each check that goes over them (a
			// condition's, a [[try_first]]'s) as quick, for a file that
			// lists one param a hundred thousand times.
			b.errorf(line, "param %s is searched twice", p.Name)
			continue
		}
		if _, ok := s.Fixed[p.Name]; ok {
			b.errorf(line, "param %s is also in [fixed]; a variable is either pinned or searched", p.Name)
		}
		switch {
		case len(rp.Values) > 0 && (rp.Min != nil || rp.Max != nil):
			b.errorf(line, "param %s: give either values or min/max, not both", p.Name)
		case len(rp.Values) > 0:
			if rp.Log {
				// A scale orders a range's integers; listed values have none,
				// so the flag would be silently ignored.
				b.errorf(b.loc.field("param", i, "log"), "param %s: log = true applies to a min/max range, not to listed values", p.Name)
			}
			// Each value by what NCCL reads it as: a map, as a file may list
			// hundreds of thousands, which compared pairwise took minutes.
			listed := map[string]string{}
			for _, rv := range rp.Values {
				value, err := b.choice(p.Name, rv)
				w, twice := listed[v.reads(value)]
				if err != nil {
					b.errorf(b.loc.field("param", i, "values"), "param %v", err)
					if value == "" {
						continue
					}
				}
				if twice {
					if err == nil {
						b.errorf(b.loc.field("param", i, "values"), "param %s: value %s is listed twice: to NCCL it is %s", p.Name, value, w)
					}
					// Another spelling of one set (a check since 2223c57)
					// stays, read as stored (ParseStored): trials that ran
					// it are of the space, and export refused them as altered.
					if value != w {
						p.Values = append(p.Values, value)
					}
				} else {
					listed[v.reads(value)] = value
					p.Values = append(p.Values, value)
				}
			}
		case rp.Min != nil && rp.Max != nil:
			nerr := len(b.errs)
			if v.Kind != KindString { // whose bounds, read as text, say less than that it takes none
				p.Min, p.Max = b.bound(line, p.Name, rp.Min), b.bound(line, p.Name, rp.Max)
			}
			switch {
			case len(b.errs) > nerr: // a bound did not parse; its error says so
			case v.Kind != KindString && (p.Max <= p.Min || p.Log && p.Min < 1):
				b.errorf(line, "param %s: needs min < max (and min >= 1 with log = true)", p.Name)
			default:
				if err := v.integers(p.Min, p.Max); err != nil {
					b.errorf(line, "param %s: a range searches every integer in it: %v; list the values instead", p.Name, err)
				}
			}
		default:
			b.errorf(line, "param %s: needs values = [...] or both min and max", p.Name)
		}
		if err := s.refusedWithFixed(p); err != nil && len(b.errs) == nerr {
			b.errorf(line, "param %s: NCCL refuses each of its values with what [fixed] pins: %v", p.Name, err)
		}
		for _, v := range slices.Sorted(maps.Keys(rp.When)) {
			c, err := b.condition(s, v, rp.When[v])
			if err != nil {
				b.errorf(b.loc.field("param", i, "when"), "param %s: %v", p.Name, err)
				b.never[p.Name] = true // and so is every param conditioned on it
			}
			p.When = append(p.When, c)
		}
		if !b.never[p.Name] {
			b.jointly(s, p, b.loc.field("param", i, "when"))
		}
		seen[p.Name] = true
		s.Params = append(s.Params, p)
	}
	if len(s.Params) == 0 {
		b.errorf(b.loc.section("param"), "no [[param]] to search")
	}
	b.perCollective(s, raw.Param)
}

// refusedWithFixed is Check's error for every value p offers, each set
// with what [fixed] pins, or nil if NCCL takes one ("default" included):
// each trial that set p would fail. Check's limits are monotonic in each
// variable, so a range's ends stand for it.
func (s *Space) refusedWithFixed(p Param) error {
	if s.Check(nil) != nil {
		return nil // [fixed] alone is refused, and said so at its line
	}
	values := p.Values
	if !p.Categorical() {
		values = []string{strconv.FormatInt(p.Min, 10), strconv.FormatInt(p.Max, 10)}
	}
	var err error
	for _, v := range values {
		if v == Unset {
			return nil
		}
		if err = s.Check(Assignment{p.Name: v}); err == nil {
			return nil
		}
	}
	return err
}

// perCollective makes NCCL_ALGO and NCCL_PROTO one param per collective
// where the workload has several: a job's collectives want different ones,
// and some (Tree for all-gather) fail one another. NCCL >= 2.24 takes them
// in one value, "allgather:Ring;allreduce:Tree".
func (b *builder) perCollective(s *Space, raw []rawParam) {
	// Not alltoall or sendrecv: NCCL picks them no algorithm or protocol,
	// and a prefix of theirs fails its init ("Unrecognized prefix token").
	colls := s.AlgorithmCollectives()
	if len(s.Workload) == 0 || len(colls) < 2 {
		b.partsMeasured(s, raw)
		return
	}
	var params []Param
	for _, p := range s.Params {
		i := rawIndex(raw, p.Name)
		for _, c := range p.When {
			if slices.Contains(PerCollective, c.Var) {
				b.errorf(b.loc.field("param", i, "when"), "param %s: a condition on %s, which a workload of several collectives sets per collective", p.Name, c.Var)
			}
		}
		if !slices.Contains(PerCollective, p.Name) {
			params = append(params, p)
			continue
		}
		for _, v := range p.Values {
			// Each value goes behind its collective's prefix: one of NCCL's
			// per-collective syntax would read as no algorithm
			// (allgather:allreduce:Tree), or set another collective.
			if strings.ContainsAny(v, ":;") {
				b.errorf(b.loc.field("param", i, "values"), "param %s: value %s names a collective, and a workload of several collectives sets %s per collective, each value for the collective of its part (%s[allreduce], ...): list plain values (Ring, ^Tree)", p.Name, v, p.Name, p.Name)
			}
		}
		for _, coll := range colls {
			q := p
			q.Var, q.Collective = p.Name, strings.ReplaceAll(coll, "_", "")
			q.Name = p.Name + "[" + q.Collective + "]"
			params = append(params, q)
		}
	}
	s.Params = params
}

// rawIndex is the index of param name's table in the file: a param left
// out before it (one searched twice) moves those after it in s.Params.
func rawIndex(raw []rawParam, name string) int {
	return slices.IndexFunc(raw, func(rp rawParam) bool { return rp.Name == name })
}

// partsMeasured refuses a value of NCCL_ALGO or NCCL_PROTO, searched
// whole, with a part for a collective that nccl-tests does not measure
// (allgather:Tree in an all_reduce campaign): its trials measured NCCL's
// own choice there, and a range's file would set it in a job untested. A
// command's or the DDP step's job calls what it calls.
func (b *builder) partsMeasured(s *Space, raw []rawParam) {
	if !s.Benchmark.Sweeps() {
		return
	}
	measured := s.Collectives()
	for _, p := range s.Params {
		if !slices.Contains(PerCollective, p.Name) {
			continue
		}
		for _, v := range p.Values {
			for _, part := range strings.Split(v, ";") {
				coll, _, named := strings.Cut(part, ":")
				if named && !slices.ContainsFunc(measured, func(c string) bool { return strings.ReplaceAll(c, "_", "") == strings.ToLower(strings.TrimSpace(coll)) }) {
					b.errorf(b.loc.field("param", rawIndex(raw, p.Name), "values"), "param %s: value %s sets %s, which the campaign does not measure (it measures %s): its trials would run NCCL's own choice there, and the export set it untested; pin it in [fixed] if the job wants it", p.Name, v, strings.TrimSpace(coll), strings.Join(measured, ", "))
				}
			}
		}
	}
}

// PerCollective are the variables NCCL takes a value of per collective.
var PerCollective = []string{"NCCL_ALGO", "NCCL_PROTO"}

// LogVars are the variables of NCCL's log, which nccltune sets itself (to
// read the log), so that a space may not search them.
var LogVars = map[string]bool{"NCCL_DEBUG": true, "NCCL_DEBUG_SUBSYS": true, "NCCL_DEBUG_FILE": true}

// CheckSetting checks a setting made outside the space file (an env file
// that compare runs) as the space checks what it pins: a DDP knob only for
// the DDP step, nothing that hides NCCL's log from nccltune.
func (s *Space) CheckSetting(name, value string) error {
	return pinnable(name, value, s.Benchmark.Kind)
}

// pinnable checks what a [fixed] variable may be: a DDP knob only for the DDP
// step (it is the script's option, no variable), and NCCL's log only such that
// nccltune still reads in it what NCCL set and chose.
func pinnable(name, value, kind string) error {
	v, err := Lookup(name)
	switch {
	case v.Gone != "":
		return err
	case v.IsArg() && kind != DDP:
		return fmt.Errorf("%s is a DDP setting: it needs benchmark.kind = \"ddp\"", name)
	}
	if strings.EqualFold(value, Unset) {
		// NCCL reads the word "default", in any case, as a value
		// (NCCL_IB_HCA = "default" matches no adapter, and the job falls
		// back to sockets).
		return fmt.Errorf("%s = %q: %q is how a param offers NCCL's own choice; pinned, NCCL reads the word itself. Leave %s out ([fixed], or the env file) to let NCCL choose", name, value, Unset, name)
	}
	switch name {
	case "NCCL_DEBUG":
		if !strings.EqualFold(value, "INFO") && !strings.EqualFold(value, "TRACE") { // NCCL's strcasecmp
			return fmt.Errorf("NCCL_DEBUG = %s would hide the INFO lines that confirm each setting; nccltune sets INFO itself", value)
		}
	case "NCCL_DEBUG_FILE":
		return fmt.Errorf("NCCL_DEBUG_FILE would send NCCL's log where nccltune cannot read it")
	case "NCCL_DEBUG_SUBSYS":
		if rest, all := strings.CutPrefix(value, "^"); all {
			// NCCL reads a leading ^ as every subsystem except those listed.
			for _, x := range strings.Split(strings.ToUpper(rest), ",") {
				if x == "INIT" || x == "ENV" || x == "ALL" {
					return fmt.Errorf("NCCL_DEBUG_SUBSYS = %s hides %s (NCCL reads ^ as all but those listed): INIT and ENV confirm each setting", value, x)
				}
			}
			return nil
		}
		subsys := strings.Split(strings.ToUpper(value), ",")
		if !slices.Contains(subsys, "ALL") && !(slices.Contains(subsys, "INIT") && slices.Contains(subsys, "ENV")) {
			return fmt.Errorf("NCCL_DEBUG_SUBSYS = %s must include INIT and ENV (or ALL): they confirm each setting", value)
		}
	}
	return nil
}

// condition reads one `when` entry of a param: the variable (an earlier
// param or a fixed variable) must be able to hold one of the values, each
// written as that variable takes it; a condition that can never hold would
// silently leave the param out of every trial.
func (b *builder) condition(s *Space, v string, raw any) (Condition, error) {
	c := Condition{Var: v}
	k := slices.IndexFunc(s.Params, func(p Param) bool { return p.Name == v })
	fixed, isFixed := s.Fixed[v]
	if k < 0 && !isFixed {
		return c, fmt.Errorf("condition on %s, which is neither an earlier param nor fixed", v)
	}
	list, ok := raw.([]any)
	if !ok {
		list = []any{raw}
	}
	if len(list) == 0 {
		return c, fmt.Errorf("condition on %s lists no value, so it can never hold", v)
	}
	var listed func(string) (string, bool)
	offered := false  // a value the param offers is among them
	var refused error // a value's, kept as a stored space ran it
	if k >= 0 {
		listed = b.lister(s.Params[k])
	}
	for _, x := range list {
		value, err := b.choice(v, x)
		if err != nil {
			refused = fmt.Errorf("condition on %v", err)
			if value == "" {
				return c, refused
			}
		}
		// A set NCCL reads in any order holds as the value it is listed as.
		if k >= 0 {
			if w, ok := listed(value); ok {
				value, offered = w, true
			}
		} else if cat, _ := Lookup(v); cat.Alike(value, fixed) {
			value = fixed
		}
		c.In = append(c.In, value)
	}
	switch {
	case isFixed && !slices.Contains(c.In, fixed):
		return c, fmt.Errorf("condition on %s = %s can never hold: it is fixed to %s", v, strings.Join(c.In, " or "), fixed)
	case k >= 0 && !offered:
		return c, fmt.Errorf("condition on %s = %s can never hold: %s takes %s", v, strings.Join(c.In, " or "), v, s.Params[k].Describe())
	case k >= 0 && b.never[v]:
		return c, fmt.Errorf("condition on %s can never hold: %s itself is never active", v, v)
	}
	return c, refused
}

// value checks one variable's value, written in TOML as a string, integer or
// boolean. One that NCCL can be given but a check refuses (one added since
// campaigns ran with it) is returned beside the error: a stored space keeps
// it (ParseStored), its trials having run with it.
func (b *builder) value(name string, raw any) (string, error) {
	// A variable NCCL no longer reads that nccltune took is refused where
	// it is pinned or searched; its values are read, as its trials set them.
	v, err := Lookup(name)
	if err != nil && !v.took() {
		return "", err
	}
	text, err := scalar(raw)
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	t, isBool := raw.(bool)
	if isBool {
		text = map[bool]string{false: "0", true: "1"}[t]
	}
	value, err := v.read(text)
	switch {
	case isBool && v.Kind != KindBool:
		// Read as 0 or 1, NCCL_NET = false set NCCL_NET=0.
		err = fmt.Errorf("%s: %v is a boolean, which only a variable of 0 or 1 takes", name, t)
	case err == nil:
		err = v.refuse(text, value)
	}
	if uErr := unexpanded(varPath(name), value); err == nil && uErr != nil {
		err = fmt.Errorf("%s = %w", name, uErr)
	}
	return resolve(b.dir, varPath(name), value), err
}

// choice is value for one a param offers, or a condition or a
// [[try_first]] names: "default" is NCCL's own choice (Unset), and the word
// in another case, which NCCL would read as a value, is refused, as pinned.
func (b *builder) choice(name string, raw any) (string, error) {
	value, err := b.value(name, raw)
	str, _ := raw.(string)
	switch {
	case str == Unset:
		return Unset, nil
	case err == nil && strings.EqualFold(str, Unset):
		err = fmt.Errorf("%s: %q is no %q, NCCL's own choice, but a value NCCL reads as the word (NCCL_IB_HCA=Default matches no adapter): write \"default\"", name, str, Unset)
	}
	return value, err
}

// bound reads an integer bound; byte-sized variables accept "64K" too.
func (b *builder) bound(line int, name string, raw any) int64 {
	v, err := Lookup(name)
	if err != nil && !v.took() {
		return 0
	}
	text, err := scalar(raw)
	if err == nil {
		text, err = v.Normalize(text)
	} else {
		err = fmt.Errorf("%s: %w", name, err)
	}
	if err != nil {
		b.errorf(line, "param %v", err)
		return 0
	}
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		b.errorf(line, "param %s: %q is not an integer bound", name, text)
	}
	return n
}

func (b *builder) size(line int, what string, raw any) int64 {
	if raw == nil {
		b.errorf(line, "%s is required", what)
		return 0
	}
	text, err := scalar(raw)
	if err != nil {
		b.errorf(line, "%s: %v", what, err)
		return 0
	}
	n, err := ParseSize(text)
	if err != nil {
		b.errorf(line, "%s: %v", what, err)
		// A spelling read before 6b9e11d ("64Ki", "+8") is, in a stored
		// space (ParseStored), the size its campaign's trials measured:
		// read as 0, a [[workload]] entry went with its range.
		n, _ = legacySize(text)
	}
	return n
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
