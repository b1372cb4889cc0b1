package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A space file's relative path is its directory's: a campaign run from one
// directory resumes from another, and after its folder moved, with the
// paths the file names from where it is now; export writes them absolute;
// without the file, its stored copy's relative path, whose directory the
// store does not know, is launched by nothing.
func TestRelativePathsFromAnyDirectory(t *testing.T) {
	dir := t.TempDir()
	proj, elsewhere := filepath.Join(dir, "proj"), filepath.Join(dir, "elsewhere")
	if err := os.Mkdir(elsewhere, 0o755); err != nil {
		t.Fatal(err)
	}
	space := confProject(t, proj)
	db := filepath.Join(dir, "nccltune.db")
	code, out, errOut := nccltune(t, elsewhere, "run", "--store", db, "--space", "../proj/space.toml", "--trials", "4", "--no-simplify", "--no-validate")
	if code != 0 {
		t.Fatalf("run exited %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "NCCL read NCCL_BUFFSIZE=8388608") {
		t.Errorf("the trials did not read proj/nccl.conf, run from another directory:\n%s", out)
	}
	code, out, errOut = nccltune(t, dir, "resume", "--store", db, "--space", space, "--trials", "5")
	if code != 0 {
		t.Fatalf("resume from another directory exited %d\n%s\n%s", code, out, errOut)
	}
	code, _, errOut = nccltune(t, dir, "resume", "--store", db, "--trials", "6")
	if code == 0 || !strings.Contains(errOut, `NCCL_CONF_FILE = "nccl.conf"`) || !strings.Contains(errOut, "--space FILE") {
		t.Errorf("resume without the space file, whose stored copy names a relative path: exit %d\n%s", code, errOut)
	}
	moved := filepath.Join(dir, "moved")
	if err := os.Rename(proj, moved); err != nil {
		t.Fatal(err)
	}
	space = filepath.Join(moved, "space.toml")
	code, out, errOut = nccltune(t, elsewhere, "resume", "--store", db, "--space", space, "--trials", "6", "--no-simplify", "--no-validate")
	if code != 0 {
		t.Fatalf("resume after the folder moved exited %d\n%s\n%s", code, out, errOut)
	}
	exported := filepath.Join(dir, "tuned")
	for _, format := range []string{"env", "json", "slurm", "torchrun"} {
		code, out, errOut = nccltune(t, elsewhere, "export", "--store", db, "--space", space, "--format", format, "--out", exported)
		if code != 0 {
			t.Fatalf("export --format %s exited %d\n%s\n%s", format, code, out, errOut)
		}
	}
	files, err := os.ReadDir(exported)
	if err != nil || len(files) == 0 {
		t.Fatalf("nothing exported: %v", err)
	}
	want := filepath.Join(moved, "nccl.conf")
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(exported, f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), "NCCL_CONF_FILE") {
			continue
		}
		if !strings.Contains(string(data), want) || strings.Contains(strings.ReplaceAll(string(data), want, ""), "nccl.conf") {
			t.Errorf("%s does not name %s alone:\n%s", f.Name(), want, data)
		}
	}
}

// A campaign that searched a relative path and whose folder moved holds
// trials that set the path where the file was: resume and export refuse
// them (the space now offers the path where it is), saying why and what to
// do, not that the store was altered.
func TestSearchedPathAfterTheFolderMoved(t *testing.T) {
	dir := t.TempDir()
	proj := filepath.Join(dir, "proj")
	if err := os.Mkdir(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("../../examples/sim-2node-ib.toml")
	if err != nil {
		t.Fatal(err)
	}
	head, _, _ := strings.Cut(string(src), "[[param]]")
	text := head + `[[param]]
name = "NCCL_CONF_FILE"
values = ["default", "a.conf"]

[[try_first]]
NCCL_CONF_FILE = "a.conf"
`
	if err := os.WriteFile(filepath.Join(proj, "a.conf"), []byte("NCCL_NET_GDR_LEVEL=SYS\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proj, "space.toml"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "nccltune.db")
	if code, out, errOut := nccltune(t, dir, "run", "--store", db, "--space", "proj/space.toml", "--trials", "3", "--no-simplify", "--no-validate"); code != 0 {
		t.Fatalf("run exited %d\n%s\n%s", code, out, errOut)
	}
	if err := os.Rename(proj, filepath.Join(dir, "moved")); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"resume", "--trials", "4", "--no-simplify", "--no-validate"},
		{"export", "--format", "env", "--out", filepath.Join(dir, "tuned")},
	} {
		code, out, errOut := nccltune(t, dir, append(args, "--store", db, "--space", "moved/space.toml")...)
		if code == 0 || strings.Contains(errOut, "store was altered") || !strings.Contains(errOut, filepath.Join(proj, "a.conf")) ||
			!strings.Contains(errOut, "directory") || !strings.Contains(errOut, "run the campaign anew") {
			t.Errorf("%s after the folder moved: exit %d\n%s\n%s", args[0], code, out, errOut)
		}
	}
}

// The rule formats without the space file look NCCL's recorded decisions
// up under the configuration the campaign ran, from the store's copy of the
// space, whose relative path validation ran absolute: found all the same.
func TestRulesWithoutTheSpaceOfARelativePath(t *testing.T) {
	dir := t.TempDir()
	space := confProject(t, filepath.Join(dir, "proj"))
	db := filepath.Join(dir, "nccltune.db")
	for _, args := range [][]string{
		{"run", "--trials", "4", "--no-simplify", "--no-validate"},
		{"validate"},
	} {
		if code, out, errOut := nccltune(t, dir, append(args, "--store", db, "--space", space)...); code != 0 {
			t.Fatalf("%s exited %d\n%s\n%s", args[0], code, out, errOut)
		}
	}
	for _, format := range []string{"tuner-csv", "plugin"} {
		code, out, errOut := nccltune(t, dir, "export", "--store", db, "--format", format, "--out", filepath.Join(dir, format))
		if code != 0 || !strings.Contains(errOut, "leaving out NCCL_CONF_FILE") {
			t.Errorf("export --format %s without the space file: exit %d\n%s\n%s", format, code, out, errOut)
		}
	}
}

// The same campaign run from two copies of its folder (or resumed after it
// moved) pins a relative path to a file in each: the trials measured two
// files, which status says, naming both.
func TestStatusNamesEveryFileAPinnedPathRan(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "nccltune.db")
	for i, copy := range []string{"a", "b"} {
		space := confProject(t, filepath.Join(dir, copy))
		if code, out, errOut := nccltune(t, dir, "run", "--store", db, "--space", space, "--trials", fmt.Sprint(3+i), "--no-simplify", "--no-validate"); code != 0 {
			t.Fatalf("run from %s exited %d\n%s\n%s", copy, code, out, errOut)
		}
	}
	code, out, errOut := nccltune(t, dir, "status", "--store", db)
	if code != 0 || !strings.Contains(out, "warning: NCCL_CONF_FILE") || !strings.Contains(out, filepath.Join(dir, "a", "nccl.conf")) || !strings.Contains(out, filepath.Join(dir, "b", "nccl.conf")) {
		t.Errorf("status of a campaign run from two copies: exit %d\n%s\n%s", code, out, errOut)
	}
}

// confProject makes proj, a project folder holding nccl.conf and
// space.toml, the built-in example pinning NCCL_CONF_FILE to it by a path
// relative to the space file, and returns the space file's path.
func confProject(t *testing.T, proj string) string {
	t.Helper()
	src, err := os.ReadFile("../../examples/sim-2node-ib.toml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proj, "nccl.conf"), []byte("NCCL_BUFFSIZE=8388608\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	space := filepath.Join(proj, "space.toml")
	if err := os.WriteFile(space, []byte(strings.Replace(string(src), "[fixed]\n", "[fixed]\nNCCL_CONF_FILE = \"nccl.conf\"\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	return space
}
