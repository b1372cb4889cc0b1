// Package plugin holds nccltune's NCCL tuner plugin: the C sources of
// libnccl-tuner-nccltune.so, which steers NCCL's algorithm, protocol and
// channel choices by the rules in the file named by $NCCLTUNE_RULES, and
// Build, which compiles them with a C compiler alone (no NCCL or CUDA).
package plugin

import (
	"bytes"
	"cmp"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

const (
	// RulesEnv names the environment variable the plugin reads its rules
	// file from.
	RulesEnv = "NCCLTUNE_RULES"
	// LibraryName is the file Build produces; NCCL_TUNER_PLUGIN takes its
	// path, or "nccltune" where the library's directory is on the loader's
	// search path.
	LibraryName = "libnccl-tuner-nccltune.so"
)

// The plugin's names of NCCL's algorithms and protocols, in NCCL's index
// order (NCCL_ALGO_TREE = 0, ...): what a rules file says. NVIDIA's example
// tuner plugin (plugins/tuner/example/plugin.c, parseAlgorithm and
// parseProtocol) reads the same names, and reads a name it does not know as
// ring or simple without a word. A test checks these against the C tables.
var (
	Algorithms = []string{"tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat"}
	Protocols  = []string{"ll", "ll128", "simple"}
)

// The C sources live in src/: the go command refuses .c files in a package
// that does not use cgo.
//
//go:embed Makefile src
var sources embed.FS

// The compiler flags Build uses, as the Makefile's STD_CFLAGS, CFLAGS and
// SO_FLAGS (a test checks they agree).
var (
	stdFlags = []string{"-std=c11", "-Wall", "-Wextra"}
	optFlags = []string{"-O2", "-g"}
	soFlags  = []string{"-fPIC", "-shared", "-fvisibility=hidden", "-Wl,-soname," + LibraryName}
)

// Build writes the plugin's sources (and the Makefile, for make -C there)
// into dir, creating it, and compiles the library there with the C compiler
// cc ("" for cc), nothing else: no make, NCCL or CUDA. It returns the
// library's path.
func Build(dir, cc string) (string, error) {
	if strings.TrimSpace(cc) == "" {
		cc = "cc"
	}
	// CC may name a wrapper or carry flags ("ccache gcc"): its first word is the program.
	words := strings.Fields(cc)
	if _, err := exec.LookPath(words[0]); err != nil {
		return "", fmt.Errorf("plugin: building the plugin needs %s: %w", words[0], err)
	}
	// --out defaults to ".", where a project's own Makefile may be: every
	// file is checked before any is written.
	err := fs.WalkDir(sources, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		src, err := sources.ReadFile(name)
		if err != nil {
			return err
		}
		if mine, err := ours(filepath.Join(dir, name), src); err != nil || !mine {
			return cmp.Or(err, fmt.Errorf("%s is not the plugin's: build in a folder of its own (--out DIR)", filepath.Join(dir, name)))
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("plugin: %w", err)
	}
	err = fs.WalkDir(sources, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dir, name), 0o755)
		}
		data, err := sources.ReadFile(name)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, name), data, 0o644)
	})
	if err != nil {
		return "", fmt.Errorf("plugin: writing the sources: %w", err)
	}
	// Built in a folder of its own, then renamed into place: a job starting
	// meanwhile loads the old library or the new one, never half of one, and
	// a build that fails part way keeps the old one. (A folder, not a file
	// made first: the linker keeps a file's mode, and os.CreateTemp's 0600
	// is one that no other user's job can load.)
	tmp, err := os.MkdirTemp(cmp.Or(dir, "."), ".build-") // "" is the current folder, not os.TempDir()
	if err != nil {
		return "", fmt.Errorf("plugin: %w", err)
	}
	defer os.RemoveAll(tmp)
	args := append(slices.Concat(words[1:], stdFlags, optFlags, soFlags), "-o", filepath.Join(filepath.Base(tmp), LibraryName), filepath.Join("src", "nccltune_tuner.c"))
	cmd := exec.Command(words[0], args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("plugin: building %s in %s with %s: %w\n%s", LibraryName, dir, cc, err, out)
	}
	lib := filepath.Join(dir, LibraryName)
	if err := os.Rename(filepath.Join(tmp, LibraryName), lib); err != nil {
		return "", fmt.Errorf("plugin: %w", err)
	}
	return lib, nil
}

// ours reports whether path is free for the plugin's file src: nothing is
// there, or a file an earlier Build wrote, which starts as src does up to
// the end of src's first line that names nccltune (every version's heading
// line). Naming nccltune is not enough: a project's own Makefile may. It
// fails where path cannot be read: a file said not to be the plugin's that
// is not there misled.
func ours(path string, src []byte) (bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	if err != nil { // --out a file ("not a directory"), a file it may not read
		return false, err
	}
	defer f.Close()
	i := bytes.Index(src, []byte("nccltune"))
	if i < 0 {
		return false, nil
	}
	end := i + bytes.IndexByte(src[i:], '\n') + 1 // src's lines end in '\n'
	head := make([]byte, end)
	n, _ := io.ReadFull(f, head)
	return bytes.Equal(head[:n], src[:end]), nil
}
