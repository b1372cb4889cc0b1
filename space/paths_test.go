package space

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeSpace writes a space file into a directory of its own and returns its path.
func writeSpace(t *testing.T, text string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "proj")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "space.toml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const relativeMPIRun = `
[campaign]
name = "rel"
trials = 10

[benchmark]
binary = "./bin/all_reduce_perf"

[launcher]
kind = "mpirun"
command = "../mpi/bin/mpirun"
hostfile = "hosts"
np = 2

[fixed]
NCCL_TOPO_FILE = "topo.xml"
NCCL_TUNER_PLUGIN = "./lib/libtuner.so"
NCCL_NET_PLUGIN = "ib"

[[param]]
name = "NCCL_CONF_FILE"
values = ["default", "a.conf", "/etc/b.conf"]

[[param]]
name = "NCCL_MIN_CTAS"
values = ["default", "4"]
when = { NCCL_CONF_FILE = "a.conf" }

[[try_first]]
NCCL_CONF_FILE = "a.conf"
`

// A relative path in a space file is the file's directory's, wherever
// nccltune runs: every path-valued setting, an NCCL variable's (pinned,
// searched, in a condition or a [[try_first]]) or nccltune's own, is made
// absolute at load; a name looked up on a search path (a plugin's, a
// program's) stays a name.
func TestLoadResolvesRelativePaths(t *testing.T) {
	path := writeSpace(t, relativeMPIRun)
	dir := filepath.Dir(path)
	s, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range [][3]string{
		{"benchmark.binary", s.Benchmark.Binary, dir + "/bin/all_reduce_perf"},
		{"launcher.command", s.Launcher.Command, dir + "/../mpi/bin/mpirun"},
		{"launcher.hostfile", s.Launcher.Hostfile, dir + "/hosts"},
		{"NCCL_TOPO_FILE", s.Fixed["NCCL_TOPO_FILE"], dir + "/topo.xml"},
		{"NCCL_TUNER_PLUGIN", s.Fixed["NCCL_TUNER_PLUGIN"], dir + "/lib/libtuner.so"},
		{"NCCL_NET_PLUGIN", s.Fixed["NCCL_NET_PLUGIN"], "ib"},
		{"param value", s.Params[0].Values[1], dir + "/a.conf"},
		{"absolute param value", s.Params[0].Values[2], "/etc/b.conf"},
		{"condition", s.Params[1].When[0].In[0], dir + "/a.conf"},
		{"try_first", s.TryFirst[0]["NCCL_CONF_FILE"], dir + "/a.conf"},
	} {
		if c[1] != c[2] {
			t.Errorf("%s = %q, want %q", c[0], c[1], c[2])
		}
	}
	if s.Dir != dir {
		t.Errorf("Dir = %q, want %q", s.Dir, dir)
	}
	// The same file read from another directory through a relative name.
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(wd, path)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Load(rel)
	if err != nil {
		t.Fatal(err)
	}
	if d := Diff(s, again); len(d) > 0 {
		t.Errorf("loaded by a relative name, the space differs: %v", d)
	}
	// A copy read without its file's directory (a store's) keeps them as written.
	stored, err := Parse("stored", []byte(relativeMPIRun))
	if err != nil {
		t.Fatal(err)
	}
	if got := stored.Fixed["NCCL_TOPO_FILE"]; got != "topo.xml" || stored.Dir != "" {
		t.Errorf("a copy without a directory: NCCL_TOPO_FILE = %q, Dir %q; want it as written", got, stored.Dir)
	}
}

// The programs and directories of the other benchmark kinds: a torchrun
// script is a file (torchrun's python opens it), a command's program a
// name on PATH unless it holds a '/'; its arguments are as written.
func TestLoadResolvesProgramsOfEveryKind(t *testing.T) {
	for _, c := range []struct {
		name, text string
		got        func(*Space) []string
		want       []string
	}{
		{"ddp", `
[campaign]
name = "ddp"
[benchmark]
kind = "ddp"
python = "venv/bin/python"
script_dir = "scripts"
[[param]]
name = "NCCL_ALGO"
values = ["default", "Ring"]
`, func(s *Space) []string { return []string{s.Benchmark.Python, s.Benchmark.ScriptDir} }, []string{"DIR/venv/bin/python", "DIR/scripts"}},
		{"torchrun script", `
[campaign]
name = "cmd"
[launcher]
kind = "torchrun"
nproc_per_node = 2
[benchmark]
kind = "command"
command = ["train.py", "data.bin"]
metric = { regex = 'ms: ([0-9.]+)', goal = "min" }
[[param]]
name = "NCCL_ALGO"
values = ["default", "Ring"]
`, func(s *Space) []string { return s.Benchmark.Command }, []string{"DIR/train.py", "data.bin"}},
		{"local program", `
[campaign]
name = "cmd"
[benchmark]
kind = "command"
command = ["./run.sh", "x"]
metric = { regex = 'ms: ([0-9.]+)', goal = "min" }
[[param]]
name = "NCCL_ALGO"
values = ["default", "Ring"]
`, func(s *Space) []string { return s.Benchmark.Command }, []string{"DIR/run.sh", "x"}},
		{"program on PATH", `
[campaign]
name = "cmd"
[benchmark]
kind = "command"
command = ["python3", "train.py"]
metric = { regex = 'ms: ([0-9.]+)', goal = "min" }
[[param]]
name = "NCCL_ALGO"
values = ["default", "Ring"]
`, func(s *Space) []string { return s.Benchmark.Command }, []string{"python3", "train.py"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := writeSpace(t, c.text)
			s, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, w := range c.want {
				if len(w) > 3 && w[:4] == "DIR/" {
					w = filepath.Join(filepath.Dir(path), w[4:])
				}
				want = append(want, w)
			}
			if got := c.got(s); !slices.Equal(got, want) {
				t.Errorf("got %q, want %q", got, want)
			}
		})
	}
}

// A store's copy, read without its file's directory, gave its trials a
// relative path as written (an older nccltune) or made absolute against
// the file's directory, wherever that was; nothing else.
func TestGaveRelativePaths(t *testing.T) {
	s, err := Parse("stored", []byte(relativeMPIRun))
	if err != nil {
		t.Fatal(err)
	}
	a := Assignment{"NCCL_CONF_FILE": "a.conf", "NCCL_MIN_CTAS": "4"}
	env := func(conf, topo string) []string {
		return []string{"NCCL_CONF_FILE=" + conf, "NCCL_MIN_CTAS=4", "NCCL_NET_PLUGIN=ib", "NCCL_TOPO_FILE=" + topo, "NCCL_TUNER_PLUGIN=/p/lib/libtuner.so"}
	}
	for _, c := range []struct {
		env  []string
		want bool
	}{
		{env("/p/a.conf", "/p/topo.xml"), true},
		{env("/elsewhere/q/a.conf", "/elsewhere/q/topo.xml"), true},
		{s.Env(a), true},
		{env("/p/b.conf", "/p/topo.xml"), false},
		{env("/p/xa.conf", "/p/topo.xml"), false},
		{env("a.conf", "/p/other.xml"), false},
		{env("/p/a.conf", "/p/topo.xml")[1:], false},
	} {
		if got := s.Gave(a, c.env); got != c.want {
			t.Errorf("Gave(%q) = %v, want %v", c.env, got, c.want)
		}
	}
	if got := s.RelativePaths(); !slices.Equal(got, []string{`benchmark.binary = "./bin/all_reduce_perf"`, `launcher.command = "../mpi/bin/mpirun"`, `launcher.hostfile = "hosts"`,
		`NCCL_TOPO_FILE = "topo.xml"`, `NCCL_TUNER_PLUGIN = "./lib/libtuner.so"`, `NCCL_CONF_FILE = "a.conf"`}) {
		t.Errorf("RelativePaths() = %q", got)
	}
}

// A path that a shell would expand (~, $HOME) is expanded by no one:
// nccltune, the launcher and NCCL take it as written, and made absolute
// it would name a directory "~" beside the space file. It is refused.
func TestLoadRefusesUnexpandedPaths(t *testing.T) {
	for _, c := range []struct{ setting, want string }{
		{"[fixed]\nNCCL_TOPO_FILE = \"~/topo.xml\"", "NCCL_TOPO_FILE"},
		{"[fixed]\nNCCL_TUNER_PLUGIN = \"$HOME/lib/libtuner.so\"", "NCCL_TUNER_PLUGIN"},
		{"[[param]]\nname = \"NCCL_CONF_FILE\"\nvalues = [\"default\", \"${PROJ}/a.conf\"]", "NCCL_CONF_FILE"},
		{"[launcher]\nkind = \"mpirun\"\nhostfile = \"~/hosts\"\nnp = 2", "launcher.hostfile"},
		{"[benchmark]\nkind = \"command\"\ncommand = [\"~/bin/run.sh\"]\nmetric = { regex = 'ms: ([0-9.]+)', goal = \"min\" }", "benchmark.command"},
	} {
		text := "[campaign]\nname = \"u\"\n" + c.setting + "\n"
		if !strings.Contains(c.setting, "[benchmark]") {
			text += "[benchmark]\nbinary = \"/bin/all_reduce_perf\"\n"
		}
		if !strings.Contains(c.setting, "[[param]]") {
			text += "[[param]]\nname = \"NCCL_ALGO\"\nvalues = [\"default\", \"Ring\"]\n"
		}
		_, err := Load(writeSpace(t, text))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "expands") {
			t.Errorf("%s: got %v, want it refused as unexpanded", c.setting, err)
		}
	}
	// An absolute path is as NCCL opens it, whatever it holds; a bare
	// plugin name is no path.
	text := "[campaign]\nname = \"u\"\n[benchmark]\nbinary = \"/bin/all_reduce_perf\"\n[fixed]\nNCCL_TOPO_FILE = \"/data/~x/$y.xml\"\nNCCL_NET_PLUGIN = \"~ib\"\n[[param]]\nname = \"NCCL_ALGO\"\nvalues = [\"default\", \"Ring\"]\n"
	if _, err := Load(writeSpace(t, text)); err != nil {
		t.Error(err)
	}
}

// A space read through a descriptor (--space /dev/stdin, a shell's
// <(...) as /dev/fd/N) has no directory of its own: its relative paths are
// the current directory's, as they were before nccltune made them the
// file's, not /dev's or /dev/fd's.
func TestLoadThroughADescriptor(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"/dev/fd/%d", "/proc/self/fd/%d"} {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			w.WriteString("[campaign]\nname = \"d\"\n[benchmark]\nbinary = \"/bin/all_reduce_perf\"\n[fixed]\nNCCL_TOPO_FILE = \"topo.xml\"\n[[param]]\nname = \"NCCL_ALGO\"\nvalues = [\"default\", \"Ring\"]\n")
			w.Close()
		}()
		s, err := Load(fmt.Sprintf(name, r.Fd()))
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got, want := s.Fixed["NCCL_TOPO_FILE"], filepath.Join(wd, "topo.xml"); got != want || s.Dir != wd {
			t.Errorf("%s: NCCL_TOPO_FILE = %q, Dir %q; want %q in %q", name, got, s.Dir, want, wd)
		}
	}
}

// "../x" is the parent of the space file's directory as the system finds
// it, through a link to that directory too (as a shell in it, or NCCL
// before paths were made absolute, found it), not the link's own parent.
func TestLoadParentThroughALinkedDirectory(t *testing.T) {
	root := t.TempDir()
	real, work := filepath.Join(root, "real", "deep", "proj"), filepath.Join(root, "work")
	for _, d := range []string{real, filepath.Join(root, "real", "deep", "shared"), work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "real", "deep", "shared", "topo.xml"), []byte("<system/>"), 0o644); err != nil {
		t.Fatal(err)
	}
	text := "[campaign]\nname = \"l\"\n[benchmark]\nbinary = \"/bin/all_reduce_perf\"\n[fixed]\nNCCL_TOPO_FILE = \"../shared/topo.xml\"\n[[param]]\nname = \"NCCL_ALGO\"\nvalues = [\"default\", \"Ring\"]\n"
	if err := os.WriteFile(filepath.Join(real, "space.toml"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(work, "proj")); err != nil {
		t.Fatal(err)
	}
	s, err := Load(filepath.Join(work, "proj", "space.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.Fixed["NCCL_TOPO_FILE"]); err != nil {
		t.Errorf("NCCL_TOPO_FILE = %q names no file: %v", s.Fixed["NCCL_TOPO_FILE"], err)
	}
}
