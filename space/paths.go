package space

import (
	"path/filepath"
	"slices"
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
	switch {
	case dir == "" || k == notPath || value == "" || filepath.IsAbs(value):
		return value
	case k == programPath && !strings.Contains(value, "/"):
		return value
	}
	return filepath.Join(dir, value)
}

// paths makes nccltune's own path settings absolute against the space
// file's directory (the NCCL variables' values are made so as they are
// read, by value). The arguments of the benchmark and the launcher are
// passed as written: which of them name files is the program's business.
func (b *builder) paths(s *Space) {
	bm, l := &s.Benchmark, &s.Launcher
	for _, p := range []*string{&bm.Binary, &bm.Python, &l.Command} {
		*p = resolve(b.dir, programPath, *p)
	}
	for _, p := range []*string{&bm.ScriptDir, &l.Hostfile} {
		*p = resolve(b.dir, filePath, *p)
	}
	if len(bm.Command) > 0 {
		bm.Command = slices.Clone(bm.Command)
		k := programPath
		if l.Kind == "torchrun" && strings.HasSuffix(bm.Command[0], ".py") {
			k = filePath // a script torchrun's python runs, not a program on PATH
		}
		bm.Command[0] = resolve(b.dir, k, bm.Command[0])
	}
}
