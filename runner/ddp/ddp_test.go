package ddp

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestParse(t *testing.T) {
	out := []byte(`W1202 torch/distributed warning: something
[1,1]<stdout>:NCCLTUNE_DDP {"rank": 1, "world": 2, "backend": "nccl", "device": "cuda", "torch": "2.11.0", "params": 100, "allreduce_bytes": 400, "steps": 5, "step_ms_mean": 9.5, "step_ms_p50": 9.4, "step_ms_p95": 9.9}NCCLTUNE_DDP {"rank": 0, "world": 2, "backend": "nccl", "device": "cuda", "torch": "2.11.0", "nccl": "2.28.9", "params": 100, "allreduce_bytes": 400, "steps": 5, "step_ms_mean": 10.5, "step_ms_p50": 10.4, "step_ms_p95": 10.9}
NCCLTUNE_DDP {"rank": 0, "steps": 0, "step_ms_mean": 0}
NCCLTUNE_DDP {not json
`)
	r, err := Parse(out)
	if err != nil || r.Rank != 0 || r.World != 2 || r.StepMsMean != 10.5 || r.NCCL != "2.28.9" {
		t.Errorf("Parse = %+v, %v; want rank 0's result", r, err)
	}
	// A line over the scanner's 4 MiB hides none of the lines after it.
	if r, err := Parse(append([]byte(strings.Repeat("x", 5<<20)+"\n"), out...)); err != nil || r.StepMsMean != 10.5 {
		t.Errorf("after an over-long line: Parse = %+v, %v; want rank 0's result", r, err)
	}
	_, err = Parse([]byte("Traceback (most recent call last):\nRuntimeError: boom\n"))
	if !errors.Is(err, ErrNoResult) {
		t.Errorf("no result: %v", err)
	}
	_, err = Parse([]byte(`NCCLTUNE_DDP_ERROR {"kind": "oom", "message": "out of GPU memory with 9 parameters"}` + "\n"))
	var e Error
	if !errors.As(err, &e) || e.Kind != "oom" {
		t.Errorf("error line: %v", err)
	}
}

// TestParseResultsOfOneRun: results that cannot come from one run of the
// script (each rank prints one, all of one world) are no measurement, not
// rank 0's last line.
func TestParseResultsOfOneRun(t *testing.T) {
	line := func(rank, world int, ms float64) string {
		return fmt.Sprintf(`NCCLTUNE_DDP {"rank": %d, "world": %d, "steps": 20, "step_ms_mean": %g}`+"\n", rank, world, ms)
	}
	for _, tc := range []struct{ name, out string }{
		// mpirun -np 2 of processes that did not see its environment: each ran alone, as rank 0 of 1.
		{"rank 0 twice", line(0, 1, 5) + line(0, 1, 50)},
		{"worlds apart", line(0, 8, 5) + line(1, 2, 50)},
		{"a rank outside its world", line(3, 2, 5)},
		// A result that does not read is no measurement, whichever rank's it is.
		{"a field twice", `NCCLTUNE_DDP {"rank": 0, "world": 1, "steps": 20, "step_ms_mean": 5, "step_ms_mean": 500}` + "\n"},
		{"a field twice, in capitals", `NCCLTUNE_DDP {"rank": 0, "world": 1, "steps": 20, "step_ms_mean": 5, "STEP_MS_MEAN": 500}` + "\n"},
		{"rank 0's beyond a float64", line(1, 2, 50) + `NCCLTUNE_DDP {"rank": 0, "world": 2, "steps": 20, "step_ms_mean": 1e400}` + "\n"},
		{"rank 0's under a float64", line(1, 2, 50) + `NCCLTUNE_DDP {"rank": 0, "world": 2, "steps": 20, "step_ms_mean": 1e-400}` + "\n"},
		{"rank 0's of the wrong kind", line(1, 2, 50) + `NCCLTUNE_DDP {"rank": "0", "world": 2, "steps": 20, "step_ms_mean": 5}` + "\n"},
		// The objective is rank 0's: another rank's is not put in its place.
		{"no result of rank 0", line(1, 2, 50)},
		{"rank 0's NaN, which Python's json writes", line(1, 2, 50) + `NCCLTUNE_DDP {"rank": 0, "world": 2, "steps": 20, "step_ms_mean": NaN}` + "\n"},
		{"rank 0's of no step", line(1, 2, 50) + `NCCLTUNE_DDP {"rank": 0, "world": 2, "steps": 0, "step_ms_mean": 5}` + "\n"},
	} {
		if r, err := Parse([]byte(tc.out)); err == nil || errors.Is(err, ErrNoResult) {
			t.Errorf("%s: %+v, %v; want an error", tc.name, r, err)
		}
	}
	if r, err := Parse([]byte(line(1, 2, 50) + line(0, 2, 5))); err != nil || r.Rank != 0 || r.StepMsMean != 5 {
		t.Errorf("two ranks of one run: %+v, %v", r, err)
	}
}

func TestWriteScript(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "shared")
	path, err := WriteScript(dir)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if string(data) != string(Script) || len(Script) < 1000 {
		t.Errorf("script not written whole")
	}
}

// TestWriteScriptShared: campaigns share the script's folder (the default
// one in /tmp, or a script_dir on a shared filesystem), and each writes the
// script as it starts. Another campaign's write must neither cut the script
// a trial is starting on (python would run an empty or partial script), nor
// replace it with another nccltune's version, whose options differ.
func TestWriteScriptShared(t *testing.T) {
	dir := t.TempDir()
	path, err := WriteScript(dir)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 2000 {
			if _, err := WriteScript(dir); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		if data, err := os.ReadFile(path); err != nil || string(data) != string(Script) {
			<-done
			t.Fatalf("a trial read %d bytes of the script (%v) as another campaign wrote it", len(data), err)
		}
	}
	own := Script
	Script = []byte("# another nccltune's script\n")
	other, err := WriteScript(dir)
	Script = own
	if err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(path); other == path || string(data) != string(Script) {
		t.Errorf("another version's script replaced this one's at %s", path)
	}
}

// TestParseH200 reads what the script printed on a real H200 (see testdata/README.md).
func TestParseH200(t *testing.T) {
	for _, tc := range []struct {
		file    string
		backend string
		errKind string
	}{
		{"h200-world1-nccl.txt", "nccl", ""},
		{"h200-torchrun-world1.txt", "nccl", ""},
		{"h200-oom.txt", "", "oom"},
	} {
		data, err := os.ReadFile("testdata/" + tc.file)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Parse(data)
		var e Error
		switch {
		case tc.errKind != "" && (!errors.As(err, &e) || e.Kind != tc.errKind):
			t.Errorf("%s: %v", tc.file, err)
		case tc.errKind == "" && (err != nil || r.Backend != tc.backend || r.World != 1 || r.StepMsMean <= 0 || r.NCCL == ""):
			t.Errorf("%s: %+v, %v", tc.file, r, err)
		}
	}
}

// TestWriteScriptOthersCannotReplaceIt: every trial runs the script as the
// user who runs nccltune, so nobody else may be able to change it between
// its writing and a trial's start. The default folder's name in /tmp is
// known in advance: another user who made it first (or made the script in
// it, right or not, or left it writable by others) would have had their
// code run as this user.
func TestWriteScriptOthersCannotReplaceIt(t *testing.T) {
	const other = 4321 // a user who is not this one, nor root
	if os.Getuid() != 0 {
		t.Skip("making another user's files takes root")
	}
	for _, tc := range []struct {
		name  string
		setUp func(dir string) error
	}{
		{"a folder of another user's", func(dir string) error { return os.Chown(dir, other, other) }},
		{"a folder others may write", func(dir string) error { return os.Chmod(dir, 0o777) }},
		{"a folder its group may write", func(dir string) error { return os.Chmod(dir, 0o775) }},
		{"a link to another user's folder", func(dir string) error {
			theirs := dir + ".theirs"
			return errors.Join(os.Rename(dir, theirs), os.Chown(theirs, other, other), os.Symlink(theirs, dir))
		}},
	} {
		dir := filepath.Join(t.TempDir(), "nccltune-0")
		if err := errors.Join(os.Mkdir(dir, 0o755), tc.setUp(dir)); err != nil {
			t.Fatal(err)
		}
		if path, err := WriteScript(dir); err == nil {
			t.Errorf("%s: the script is written to %s, where another user may replace it", tc.name, path)
		}
	}
	// A script of the right content that another user owns, or may write,
	// is replaced by one of this user's own.
	for _, tc := range []struct {
		name  string
		setUp func(path string) error
	}{
		{"another user's script", func(path string) error { return os.Chown(path, other, other) }},
		{"a script others may write", func(path string) error { return os.Chmod(path, 0o666) }},
	} {
		path, err := WriteScript(t.TempDir())
		if err == nil {
			err = tc.setUp(path)
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, err := WriteScript(filepath.Dir(path)); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(path); err != nil || fi.Sys().(*syscall.Stat_t).Uid != uint32(os.Getuid()) || fi.Mode().Perm()&0o022 != 0 {
			t.Errorf("%s: kept, as %v (%v)", tc.name, fi.Mode(), err)
		}
	}
}
