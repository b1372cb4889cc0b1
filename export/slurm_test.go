package export

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nccltune/nccltune/internal/slurmtest"
	"github.com/nccltune/nccltune/results"
	"github.com/nccltune/nccltune/space"
	"github.com/nccltune/nccltune/store"
)

// TestSlurmExportThroughRealSrun sources slurm exports of awkward values in
// a shell and hands them to a real srun step: every rank must get exactly the
// value, and a value srun would mangle must be refused instead.
func TestSlurmExportThroughRealSrun(t *testing.T) {
	c := slurmtest.Start(t, 1)
	c.Alloc(t, 2)
	for _, tc := range []struct {
		value   string
		refused bool
	}{
		{"eth0", false},
		{"=eth0", false},
		{"^docker0 lo", false},
		{"$(touch PWNED) `touch PWNED` $HOME", false},
		{`back\slash;and|pipes&`, false},
		{"%h.%p", false},
		{"-x a=b=c é€🙂  ", false},
		{" lead", false},
		{"a,b", true},
		{"it's", true},
		{`say "hi"`, true},
	} {
		t.Run(tc.value, func(t *testing.T) {
			dir := t.TempDir()
			// NCCL_NET: free text (a plugin's name may hold a blank).
			ex := fixedExport(t, "NCCL_NET", tc.value)
			paths, err := ex.Write("slurm", dir)
			if tc.refused {
				if err == nil || !strings.Contains(err.Error(), "srun --export") {
					t.Errorf("wrote %v, %v", paths, err)
				}
				return
			}
			if err != nil || len(paths) != 1 {
				t.Fatalf("%v %v", paths, err)
			}
			script := ". " + ShellQuote(paths[0]) + ` && srun -n 2 --overcommit "$NCCLTUNE_SRUN_EXPORT" sh -c 'printf "%s\0" "$NCCL_NET"'`
			cmd := exec.Command("sh", "-c", script)
			cmd.Dir = dir
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			done := time.AfterFunc(time.Minute, func() { cmd.Process.Kill() })
			out, err := cmd.Output()
			done.Stop()
			if err != nil {
				t.Fatalf("%v\n%s", err, stderr.Bytes())
			}
			if got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00"); len(got) != 2 || got[0] != tc.value || got[1] != tc.value {
				t.Errorf("the ranks got %q, want %q twice", got, tc.value)
			}
			if _, err := os.Stat(filepath.Join(dir, "PWNED")); err == nil {
				t.Error("a command ran")
			}
		})
	}
}

// fixedExport is the export of a one-range campaign whose chosen trial sets
// only what the space pins: name = value.
func fixedExport(t *testing.T, name, value string) Export {
	t.Helper()
	sp, err := space.Parse("f.toml", []byte("[benchmark]\nbinary = \"x\"\n[fixed]\n"+name+" = "+
		`'''`+value+`'''`+"\n[[param]]\nname = \"NCCL_ALGO\"\nvalues = [\"default\", \"Ring\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	a := space.Assignment{"NCCL_ALGO": space.Unset}
	trials := []store.Trial{{Number: 0, State: store.Complete, Params: a, Env: sp.Env(a), Scores: map[string]float64{"all": 1}}}
	return Export{Space: sp, Results: results.Of(sp, trials, nil), Now: time.Now()}
}

// TestSlurmExportIsOneArgument: NCCLTUNE_SRUN_EXPORT is one argument of
// srun, which Linux refuses to start with one over MAX_ARG_STRLEN; values
// that each fit it may not together, and such a file is refused instead.
func TestSlurmExportIsOneArgument(t *testing.T) {
	long := strings.Repeat("x", 70000)
	sp, err := space.Parse("f.toml", []byte("[benchmark]\nbinary = \"x\"\n[fixed]\nNCCL_NET = '"+long+
		"'\nNCCL_TOPO_FILE = '/"+long+"'\n[[param]]\nname = \"NCCL_ALGO\"\nvalues = [\"default\", \"Ring\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	a := space.Assignment{"NCCL_ALGO": space.Unset}
	trials := []store.Trial{{Number: 0, State: store.Complete, Params: a, Env: sp.Env(a), Scores: map[string]float64{"all": 1}}}
	ex := Export{Space: sp, Results: results.Of(sp, trials, nil), Now: time.Now(), Trusted: true}
	paths, err := ex.Write("slurm", t.TempDir())
	if err == nil {
		out, runErr := exec.Command("sh", "-c", `. "$1" && exec true "$NCCLTUNE_SRUN_EXPORT"`, "sh", paths[0]).CombinedOutput()
		t.Errorf("wrote %v, which no program starts with (%v: %s)", paths, runErr, out)
	} else if !strings.Contains(err.Error(), "one argument") {
		t.Errorf("refused for another reason: %.300v", err)
	}
}
