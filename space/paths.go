package space

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// A relative path in a space file is relative to the file's directory, as
// an include is, not to the directory nccltune happens to run in: the
// loader makes each absolute, so that a trial, a resume from elsewhere and
// every exported file (sourced by a job started anywhere) name one file.
// NCCL opens a relative NCCL_TOPO_FILE or NCCL_TUNER_PLUGIN from each
// rank's working directory, and where it finds nothing it falls back
// quietly to its own choices.

// How a setting's value names a file.
type pathKind int

const (
	notPath pathKind = iota
	// filePath is opened as a path: any value not absolute is relative
	// (NCCL's fopen of NCCL_TOPO_FILE, mpirun's hostfile).
	filePath
	// programPath is a path where it holds a '/', and otherwise a name
	// looked up on PATH (a program) or the dynamic loader's search path
	// (a plugin: NCCL_NET_PLUGIN = "ib" loads libnccl-net-ib.so), left as given.
	programPath
)

// fileDir is the directory a space file's relative paths are relative to:
// its own, or the current one for a file read through a descriptor
// (/dev/stdin, a shell's <(...) as /dev/fd/N), which has none of its own.
func fileDir(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if strings.HasPrefix(abs, "/dev/") || strings.HasPrefix(abs, "/proc/") {
		return os.Getwd()
	}
	return filepath.Dir(abs), nil
}

// varPath is how an NCCL variable's value names a file: the variables that
// name a file NCCL reads or writes (*_FILE) and the plugins it loads
// (*_PLUGIN), as Hazard classes them.
func varPath(name string) pathKind {
	if _, ok := catalogue[name]; !ok {
		return notPath
	}
	switch {
	case strings.HasSuffix(name, "_FILE"):
		return filePath
	case strings.HasSuffix(name, "_PLUGIN"):
		return programPath
	}
	return notPath
}

// resolve is value made absolute against dir where it is a relative path
// of kind k; value as given where dir is "" (a stored copy, whose file's
// directory is not known).
func resolve(dir string, k pathKind, value string) string {
	if dir == "" || !relative(k, value) {
		return value
	}
	if rel := filepath.Clean(value); rel == ".." || strings.HasPrefix(rel, "../") {
		// Not cleaned across dir: ".." of a linked directory is its
		// target's parent, as the system finds it, not the link's.
		return dir + "/" + rel
	}
	return filepath.Join(dir, value)
}

// isPath reports whether value, of kind k, is a path, not a name.
func isPath(k pathKind, value string) bool {
	return value != "" && (k == filePath || k == programPath && strings.Contains(value, "/"))
}

// relative reports whether value, of kind k, is a relative path.
func relative(k pathKind, value string) bool {
	return isPath(k, value) && !filepath.IsAbs(value)
}

// unexpanded is why value, of kind k, names no file as written: a relative
// path a shell would expand (~, $VAR), which no one here does.
func unexpanded(k pathKind, value string) error {
	if relative(k, value) && (strings.HasPrefix(value, "~") || strings.Contains(value, "$")) {
		return fmt.Errorf("%q: nothing expands ~ or $VARIABLE here (not nccltune, the launcher or NCCL), so it would name a file beside the space file; write the path in full, or relative to the space file's directory", value)
	}
	return nil
}

// ErrPathElsewhere is a stored trial's path that the space does not offer:
// the space's relative paths are made absolute against its file's
// directory, and a trial run with the file in another directory, or by an
// nccltune that kept them as written, set another.
var ErrPathElsewhere = errors.New("a path the space does not offer: a space file's relative paths are made absolute against its directory, and this trial ran with the file in another directory, or under an nccltune that kept them as written (unless the store was edited); its trials do not carry over: run the campaign anew, under another campaign.name or in another store")

// Stale reports whether err, CheckOffered's, is a trial that an older
// nccltune or a space file elsewhere gave, rather than an altered store.
func Stale(err error) bool {
	return errors.Is(err, ErrSplitOtherwise) || errors.Is(err, ErrPathElsewhere)
}

// pathSetting is one of nccltune's own path settings: its key, its kind
// and where the space holds it.
type pathSetting struct {
	key  string
	kind pathKind
	p    *string
}

// ownPaths are s's own path settings.
func ownPaths(s *Space) []pathSetting {
	bm, l := &s.Benchmark, &s.Launcher
	out := []pathSetting{{"benchmark.binary", programPath, &bm.Binary}, {"benchmark.python", programPath, &bm.Python},
		{"launcher.command", programPath, &l.Command}, {"benchmark.script_dir", filePath, &bm.ScriptDir}, {"launcher.hostfile", filePath, &l.Hostfile}}
	if len(bm.Command) > 0 {
		k := programPath
		if l.Kind == "torchrun" && strings.HasSuffix(bm.Command[0], ".py") {
			k = filePath // a script torchrun's python runs, not a program on PATH
		}
		out = append(out, pathSetting{"benchmark.command", k, &bm.Command[0]})
	}
	return out
}

// paths makes nccltune's own path settings absolute against the space
// file's directory (the NCCL variables' values are made so as they are
// read, by value). The arguments of the benchmark and the launcher are
// passed as written: which of them name files is the program's business.
func (b *builder) paths(s *Space) {
	for _, o := range ownPaths(s) {
		if err := unexpanded(o.kind, *o.p); err != nil {
			section, key, _ := strings.Cut(o.key, ".")
			b.errorf(b.loc.field(section, 0, key), "%s = %v", o.key, err)
		}
		*o.p = resolve(b.dir, o.kind, *o.p)
	}
}

// RelativePaths lists the settings of a space read without its file's
// directory (Dir ""; a store's copy) that hold a relative path, as
// `name = "value"`: which files they name depends on that directory, which
// the store does not record, so nothing is launched from such a copy.
func (s *Space) RelativePaths() []string {
	if s.Dir != "" {
		return nil
	}
	var out []string
	add := func(name string, k pathKind, v string) {
		if relative(k, v) {
			out = append(out, name+" = "+strconv.Quote(v))
		}
	}
	for _, o := range ownPaths(s) {
		add(o.key, o.kind, *o.p)
	}
	for _, name := range slices.Sorted(maps.Keys(s.Fixed)) {
		add(name, varPath(name), s.Fixed[name])
	}
	for _, p := range s.Params {
		for _, v := range p.Values {
			if v != Unset {
				add(p.Name, varPath(p.Variable()), v)
			}
		}
	}
	return out
}

// Gave reports whether env is what s gives a (Env) as a trial of its file
// was given it, where s was read without the file's directory (a store's
// copy): a relative path as written (an older nccltune's trials, which
// kept it so) or made absolute against some directory (a trial since,
// which took the file's, which the store does not record).
func (s *Space) Gave(a Assignment, env []string) bool {
	want := s.Env(a)
	if len(want) != len(env) {
		return false
	}
	for i, kv := range want {
		name, w, _ := strings.Cut(kv, "=")
		got, g, _ := strings.Cut(env[i], "=")
		if got != name || g != w && !(relative(varPath(name), w) && filepath.IsAbs(g) && endsIn(g, w)) {
			return false
		}
	}
	return true
}

// PinnedPathsRan lists, by variable, the paths that envs (trials'
// environments) set a path s pins to, where they set more than one: the
// space file read in two directories (two copies of its folder, or the
// folder moved), so the trials ran with two files.
func (s *Space) PinnedPathsRan(envs [][]string) map[string][]string {
	ran := map[string][]string{}
	for _, env := range envs {
		for _, kv := range env {
			name, v, _ := strings.Cut(kv, "=")
			if _, pinned := s.Fixed[name]; pinned && isPath(varPath(name), v) && !slices.Contains(ran[name], v) {
				ran[name] = append(ran[name], v)
			}
		}
	}
	maps.DeleteFunc(ran, func(_ string, vs []string) bool { return len(vs) < 2 })
	for _, vs := range ran {
		slices.Sort(vs)
	}
	return ran
}

// GaveKey reports whether key, a configuration's recorded Key (a
// validation's), is what s gives a as a trial of its file ran it (Gave).
func (s *Space) GaveKey(a Assignment, key string) bool {
	words, n := keyWords(key), len(s.Env(a))
	return key != "" && len(words) >= n && s.Gave(a, words[:n]) && slices.Equal(words[n:], s.Args(a))
}

// endsIn reports whether the absolute path abs is the relative path rel
// made absolute against some directory ("../x" against a/b is a/x).
func endsIn(abs, rel string) bool {
	rel = filepath.Clean(rel)
	for rel == ".." || strings.HasPrefix(rel, "../") {
		if rel = strings.TrimPrefix(strings.TrimPrefix(rel, ".."), "/"); rel == "" {
			return true
		}
	}
	return rel == "." || strings.HasSuffix(abs, "/"+rel)
}
