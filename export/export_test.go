package export

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// algoSourced is NCCL_ALGO as each installed shell of sourcingShells holds
// it after sourcing envFile in an environment with env added: by shell
// name, or the error of a shell that failed.
func algoSourced(t *testing.T, envFile string, env []string) map[string]string {
	t.Helper()
	held := map[string]string{}
	for _, sh := range sourcingShells {
		if _, err := exec.LookPath(sh.argv[0]); err != nil {
			continue
		}
		cmd := exec.Command(sh.argv[0], append(sh.argv[1:], sh.source+`printf %s "$NCCL_ALGO"`, sh.argv[0], envFile)...)
		if sh.name == "fish" {
			cmd = exec.Command("fish", "-c", sh.source+`printf %s "$NCCL_ALGO"`, envFile)
		}
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.Output()
		held[sh.name] = string(out)
		if err != nil {
			held[sh.name] = "error: " + err.Error()
		}
	}
	return held
}

// sourcingShells are the shells an env file is sourced in, each with the
// script that sources the file ($1) and prints every value NUL-terminated:
// POSIX sh (dash), bash in both modes, zsh, and fish, whose single quotes
// read \' and \\ as escapes. A shell not installed is skipped.
var sourcingShells = []struct {
	name   string
	argv   []string
	source string // sources the file named by the first argument
	print  string // prints one variable, %d its number
}{
	{"dash", []string{"dash", "-c"}, `set -eu; . "$1"` + "\n", `printf '%%s\0' "$NCCL_T%d"` + "\n"},
	{"bash", []string{"bash", "-c"}, `set -eu; source "$1"` + "\n", `printf '%%s\0' "$NCCL_T%d"` + "\n"},
	{"bash --posix", []string{"bash", "--posix", "-c"}, `set -eu; . "$1"` + "\n", `printf '%%s\0' "$NCCL_T%d"` + "\n"},
	{"zsh", []string{"zsh", "-c"}, `set -eu; source "$1"` + "\n", `printf '%%s\0' "$NCCL_T%d"` + "\n"},
	{"fish", []string{"fish", "-c"}, `source $argv[1]; or exit 1` + "\n", `printf '%%s\0' "$NCCL_T%d"` + "\n"},
}

// TestExportLineRoundTrips is a property test: whatever characters a value
// holds, sourcing the exported line in any of sourcingShells sets exactly
// that value and runs nothing.
func TestExportLineRoundTrips(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	const alphabet = "abcXYZ019 _-=,;:^$`\"'\\|&*?![](){}<>#~%"
	values := []string{"", "'", "''", `'\''`, "$(touch PWNED)", "`touch PWNED`", "a b", "*", "allreduce:tree,ring;allgather:ring", "é€",
		`\`, `\\`, `a\`, `\'`, `\';touch PWNED;#`, `\\';touch PWNED;#`, `'\'`}
	for range 300 {
		var b strings.Builder
		for range 1 + rng.IntN(24) {
			b.WriteByte(alphabet[rng.IntN(len(alphabet))])
		}
		values = append(values, b.String())
	}
	var file bytes.Buffer
	for i, v := range values {
		line, err := ExportLine(fmt.Sprintf("NCCL_T%d", i), v)
		if err != nil {
			t.Fatalf("%q: %v", v, err)
		}
		file.WriteString(line + "\n")
	}
	for _, sh := range sourcingShells {
		t.Run(sh.name, func(t *testing.T) {
			if _, err := exec.LookPath(sh.argv[0]); err != nil {
				t.Skipf("%s is not installed", sh.argv[0])
			}
			dir := t.TempDir()
			env := filepath.Join(dir, "nccl.env")
			os.WriteFile(env, file.Bytes(), 0o644)
			script := sh.source
			for i := range values {
				script += fmt.Sprintf(sh.print, i)
			}
			cmd := exec.Command(sh.argv[0], append(sh.argv[1:], script, sh.argv[0], env)...)
			if sh.name == "fish" {
				cmd = exec.Command("fish", "-c", script, env)
			}
			cmd.Dir = dir
			out, err := cmd.Output()
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
			if len(got) != len(values) {
				t.Fatalf("%d values back, want %d", len(got), len(values))
			}
			for i := range values {
				if got[i] != values[i] {
					t.Errorf("value %d: sourced %q, exported %q", i, got[i], values[i])
				}
			}
			if _, err := os.Stat(filepath.Join(dir, "PWNED")); err == nil {
				t.Error("sourcing an env file executed a command")
			}
		})
	}
}

func TestExportLineRefuses(t *testing.T) {
	for _, tc := range []struct{ name, value string }{
		{"PATH", "/tmp"}, {"NCCL_X;rm", "1"}, {"nccl_algo", "Ring"}, {"NCCL_ALGO", "a\nb"}, {"NCCL_ALGO", "a\x00"},
	} {
		if line, err := ExportLine(tc.name, tc.value); err == nil {
			t.Errorf("ExportLine(%q, %q) = %q", tc.name, tc.value, line)
		}
	}
}

// TestReadEnvFileReadsWhatExportWrites closes the loop: every value ExportLine
// writes, ReadEnvFile reads back unchanged.
func TestReadEnvFileReadsWhatExportWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.env")
	var b strings.Builder
	b.WriteString("# a comment\n\n")
	for _, kv := range [][2]string{{"NCCL_SOCKET_IFNAME", "=eth0,it's"}, {"NCCL_IB_HCA", `\'a\\`}, {"NCCL_ALGO", "allreduce:tree,ring;allgather:ring"}, {"NCCL_BUFFSIZE", "8388608"}} {
		line, _ := ExportLine(kv[0], kv[1])
		b.WriteString(line + "\n")
	}
	b.WriteString("NCCL_PROTO=Simple\n")
	os.WriteFile(path, []byte(b.String()), 0o644)
	env, err := ReadEnvFile(path)
	want := []string{"NCCL_SOCKET_IFNAME==eth0,it's", `NCCL_IB_HCA=\'a\\`, "NCCL_ALGO=allreduce:Tree,Ring;allgather:Ring", "NCCL_BUFFSIZE=8388608", "NCCL_PROTO=Simple"}
	if err != nil || strings.Join(env, "|") != strings.Join(want, "|") {
		t.Errorf("ReadEnvFile = %q, %v", env, err)
	}
	bad := filepath.Join(t.TempDir(), "bad.env")
	os.WriteFile(bad, []byte("export NCCL_PROTO='LL9'\nexport NCCL_IB_GID_INDX=3\nNCCL_ALGO=$(reboot)\nexport 'broken\n"), 0o644)
	_, err = ReadEnvFile(bad)
	for _, want := range []string{"bad.env:1:", "LL9", "bad.env:2:", "did you mean NCCL_IB_GID_INDEX", "bad.env:3:", "bad.env:4:"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
	// A line too long to read says which file and line it is.
	os.WriteFile(bad, []byte("NCCL_PROTO=Simple\nNCCL_ALGO="+strings.Repeat("R", 1<<20)+"\n"), 0o644)
	if _, err = ReadEnvFile(bad); err == nil || !strings.Contains(err.Error(), "bad.env:2: bufio.Scanner: token too long") {
		t.Errorf("an over-long line: %v", err)
	}
}

// TestReadEnvFileReadsABoundedFile: compare's env files are read to a
// bound, as a space is; an endless stream (compare /dev/urandom B.env held
// 5.7 GB after 8 s, a line error each, deaf to Ctrl-C) is refused once past
// it, having read no more.
func TestReadEnvFileReadsABoundedFile(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	written := make(chan int64, 1)
	go func() {
		defer w.Close()
		line := []byte("# a comment\nNCCL_ALGO=Ring\n")
		var n int64
		for n < 4*maxEnvFile { // ends a reader that reads on, as the test fails
			m, err := w.Write(line)
			n += int64(m)
			if err != nil {
				break
			}
		}
		written <- n
	}()
	path := fmt.Sprintf("/proc/self/fd/%d", r.Fd())
	_, err = ReadEnvFile(path)
	r.Close() // the writer's next write fails
	if err == nil || err.Error() != path+": over 16 MiB, more than any env file holds" {
		t.Errorf("an endless stream: %.200v", err)
	}
	if n := <-written; n > maxEnvFile+1<<20 {
		t.Errorf("read %d bytes of an endless stream, the bound %d", n, maxEnvFile)
	}
	// Nor do a file's errors run on (16 MiB of "x" lines held 2.5 GB of
	// them, 8 million lines printed): reading stops after the last it says.
	bad := filepath.Join(t.TempDir(), "bad.env")
	os.WriteFile(bad, []byte(strings.Repeat("x\n", 2*maxEnvErrors)), 0o644)
	_, err = ReadEnvFile(bad)
	if lines := strings.Split(fmt.Sprint(err), "\n"); len(lines) != maxEnvErrors+1 || lines[maxEnvErrors] != bad+fmt.Sprintf(": not read past line %d, after %d errors", maxEnvErrors, maxEnvErrors) {
		t.Errorf("a file of %d bad lines: %d lines of error, ending %q", 2*maxEnvErrors, len(lines), lines[len(lines)-1])
	}
}

// TestReadEnvFileReadsAsShellsDo: compare measures what ReadEnvFile reads,
// and the job gets what its shell sources. A line of the user's own file
// that ReadEnvFile takes must source in every POSIX-syntax shell of
// sourcingShells to that value, running nothing; one they read otherwise
// (a comment after a bare value, a ';', a CRLF line end, a trailing
// no-break space, which strings.TrimSpace dropped) is refused.
func TestReadEnvFileReadsAsShellsDo(t *testing.T) {
	const name = "NCCL_SOCKET_IFNAME"
	for _, line := range []string{
		"eth0", " eth0 ", "^docker0,lo", "mlx5_0:1", "export NCCL_SOCKET_IFNAME='it'\\''s a\\b'", "'eth0' ",
		"eth0 # the fast one", "eth0;touch PWNED", "eth0&&touch PWNED", "eth0|cat", "eth0>PWNED", "~/eth0", "a:~/eth0", "=ls",
		"eth0\r", "export NCCL_SOCKET_IFNAME='eth0'\r", "eth0\u00a0", "'eth0'\u00a0", "eth0\u2003", "\u00a0" + name + "=eth0",
	} {
		if !strings.HasPrefix(line, "export ") && !strings.HasPrefix(line, "\u00a0") {
			line = name + "=" + line
		}
		dir := t.TempDir()
		path := filepath.Join(dir, "user.env")
		os.WriteFile(path, []byte("# mine\n"+line+"\n"), 0o644)
		env, err := ReadEnvFile(path)
		if err != nil {
			continue
		}
		for _, sh := range sourcingShells {
			if _, err := exec.LookPath(sh.argv[0]); err != nil || sh.name == "fish" {
				continue // fish has no NAME=value assignment to source
			}
			cmd := exec.Command(sh.argv[0], append(sh.argv[1:], `set -a; . "$1"; set +a; printf %s "$`+name+`"`, "sh", path)...)
			cmd.Dir = dir
			out, err := cmd.Output()
			if err != nil || len(env) != 1 || env[0] != name+"="+string(out) {
				t.Errorf("%q: ReadEnvFile read %q, %s sourced %q (%v)", line, env, sh.name, out, err)
			}
			if _, err := os.Stat(filepath.Join(dir, "PWNED")); err == nil {
				t.Errorf("%q: ReadEnvFile took a line that %s runs a command of", line, sh.name)
				os.Remove(filepath.Join(dir, "PWNED"))
			}
		}
	}
}

// TestDotenvIsLiteralForEveryReader: docker --env-file takes a value as
// written and a shell sourcing the file (set -a; .) would expand it; a value
// those read differently is refused, not written. Each POSIX-syntax shell of
// sourcingShells sources what is written (zsh expands a leading '=').
func TestDotenvIsLiteralForEveryReader(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		ok          bool
	}{
		{"", "eth0", true}, {"", "eth0,=eth1", true}, {"", "mlx5_0:1,mlx5_1:1", true}, {"", "^docker0", true}, {"", "a=b", true},
		{"NCCL_NET", "$(touch PWNED)", false}, {"NCCL_NET", "a b", false}, {"", "it's", false}, {"", "`id`", false}, {"", "a;b", false}, {"", "~/x", false}, {"", "#x", false},
		{"", "=eth0,eth1", false}, {"", "=ls", false}, {"", "mlx5_0:=ls", false}, {"", `a\b`, false},
		// docker's and kubectl's readers refuse a file holding a line of 64 KiB or
		// more: "NCCL_NET=" and the value, the interface lists being 16 names at most.
		{"NCCL_NET", strings.Repeat("x", 65526), true}, {"NCCL_NET", strings.Repeat("x", 65527), false},
	} {
		name := cmp.Or(tc.name, "NCCL_SOCKET_IFNAME")
		paths, err := fixedExport(t, name, tc.value).Write("dotenv", t.TempDir())
		if tc.ok != (err == nil) {
			t.Errorf("%q: wrote %v, %v", tc.value, paths, err)
		}
		if err != nil {
			continue
		}
		for _, sh := range sourcingShells {
			if _, err := exec.LookPath(sh.argv[0]); err != nil || sh.name == "fish" {
				continue // fish has no NAME=value assignment to source
			}
			out, err := exec.Command(sh.argv[0], append(sh.argv[1:], `set -a; . "$1"; set +a; printf %s "$`+name+`"`, "sh", paths[0])...).Output()
			if err != nil || string(out) != tc.value {
				t.Errorf("%q: %s read %q (%v)", tc.value, sh.name, out, err)
			}
		}
	}
}

// TestHeaderIsReadableByEveryEnvFileReader: a file's header holds text from
// the store (a validation's reason, the fingerprint's GPU name), as long as
// the store makes it and in bytes that need not be UTF-8. docker's and
// kubectl's env-file readers refuse a file holding a line of 64 KiB or more
// ("bufio.Scanner: token too long") or a line that is not UTF-8 ("invalid
// utf8 bytes at line 4"), comments included, and so does ReadEnvFile
// (nccltune compare): every line of every env file must pass both.
func TestHeaderIsReadableByEveryEnvFileReader(t *testing.T) {
	hostile := func(ex Export) Export {
		ex.Fingerprint.GPU = "H100\xff" + strings.Repeat("x", 70000)
		ex.Campaign.Name = strings.Repeat("c", 70000)
		return ex
	}
	// pinned's NCCL_SOCKET_IFNAME, =eth0,eth1, is no value for dotenv or srun.
	pinned, plain := hostile(pinned(t)), hostile(fixedExport(t, "NCCL_SOCKET_IFNAME", "eth0"))
	dir := t.TempDir()
	var paths []string
	for _, format := range []string{"env", "dotenv", "slurm", "torchrun", "plugin", "tuner-csv"} {
		ex := pinned
		if format == "dotenv" || format == "slurm" {
			ex = plain
		}
		p, err := ex.Write(format, dir)
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		paths = append(paths, p...)
	}
	for _, path := range paths {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f) // docker's reader: the default buffer
		for n := 1; sc.Scan(); n++ {
			if !utf8.Valid(sc.Bytes()) {
				t.Errorf("%s:%d is not UTF-8", filepath.Base(path), n)
			}
		}
		if err := sc.Err(); err != nil {
			t.Errorf("%s: %v", filepath.Base(path), err)
		}
		f.Close()
		// The plugins' env files set their own variables, which compare does not read.
		if name := filepath.Base(path); strings.HasSuffix(name, "env") && !strings.HasPrefix(name, "nccl-plugin") && !strings.HasPrefix(name, "nccl-tuner") {
			if _, err := ReadEnvFile(path); err != nil {
				t.Errorf("ReadEnvFile: %v", err)
			}
		}
	}
}

// TestReadEnvFileUnsetsAsShellsDo: the env format unsets what a choice
// leaves to NCCL (writeSourced), and a user's own file may unset too. An
// unset line ReadEnvFile takes must leave, in every POSIX-syntax shell of
// sourcingShells, what it reads; one they read otherwise (a CRLF line end,
// a no-break space: a name no shell unsets) is refused.
func TestReadEnvFileUnsetsAsShellsDo(t *testing.T) {
	for _, line := range []string{
		"unset NCCL_PROTO", "unset NCCL_PROTO NCCL_ALGO", "unset  NCCL_PROTO\t", hasUnset + " && unset NCCL_PROTO",
		"unset NCCL_PROTO\r", hasUnset + " && unset NCCL_PROTO\r", "unset NCCL_PROTO\u00a0", "unset NCCL_PROTO\u2003NCCL_ALGO",
		"unset NCCL_ALGO\u0085NCCL_PROTO", "unset NCCL_PROTO\vNCCL_ALGO", "unset NCCL_PROTO\fNCCL_ALGO",
		// fish's line, which a POSIX shell runs no more of than the rest of its list.
		fishUnset + "NCCL_PROTO || true", fishUnset + "NCCL_PROTO && export NCCL_ALGO='Ring'", fishUnset + "NCCL_PROTO; unset NCCL_ALGO",
	} {
		dir := t.TempDir()
		path := filepath.Join(dir, "user.env")
		os.WriteFile(path, []byte("export NCCL_PROTO='LL'\nexport NCCL_ALGO='Tree'\n"+line+"\n"), 0o644)
		env, err := ReadEnvFile(path)
		if err != nil {
			continue
		}
		for _, sh := range sourcingShells {
			if _, err := exec.LookPath(sh.argv[0]); err != nil || sh.name == "fish" {
				continue // fish unsets with set -e
			}
			cmd := exec.Command(sh.argv[0], append(sh.argv[1:], `. "$1"; env`, "sh", path)...)
			cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "NCCL_") })
			out, err := cmd.Output()
			var got []string
			for _, kv := range strings.Split(string(out), "\n") {
				if strings.HasPrefix(kv, "NCCL_") {
					got = append(got, kv)
				}
			}
			slices.Sort(got)
			if err != nil || !slices.Equal(got, slices.Sorted(slices.Values(env))) {
				t.Errorf("%q: ReadEnvFile read %q, %s sourced %q (%v)", line, env, sh.name, got, err)
			}
		}
	}
}

// TestReadEnvFileReadsSizesAsNCCLDoes: a byte size's unit is the space
// file's notation; in an env file, which NCCL reads itself, strtoll stops
// at it ("4M" is 4 bytes to NCCL), so that compare measured 4 MiB where the
// job the file sets runs with 4 bytes. It is refused, naming what NCCL reads.
func TestReadEnvFileReadsSizesAsNCCLDoes(t *testing.T) {
	for _, tc := range []struct{ line, want, err string }{
		{"NCCL_BUFFSIZE=4M", "", `NCCL_BUFFSIZE: NCCL reads "4M" as 4`},
		{"export NCCL_P2P_NET_CHUNKSIZE='128KiB'", "", `NCCL_P2P_NET_CHUNKSIZE: NCCL reads "128KiB" as 128`},
		{"export NCCL_BUFFSIZE='8192B'", "NCCL_BUFFSIZE=8192", ""}, // 8192 to NCCL too
		{"NCCL_BUFFSIZE=4194304", "NCCL_BUFFSIZE=4194304", ""},
		{"export NCCL_BUFFSIZE=' 4194304 '", "NCCL_BUFFSIZE=4194304", ""},
	} {
		path := filepath.Join(t.TempDir(), "user.env")
		os.WriteFile(path, []byte(tc.line+"\n"), 0o644)
		env, err := ReadEnvFile(path)
		switch {
		case tc.err == "" && (err != nil || len(env) != 1 || env[0] != tc.want):
			t.Errorf("%s: %q, %v; want %s", tc.line, env, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: %q, error %v; want %q", tc.line, env, err, tc.err)
		}
	}
}

// TestReadEnvFileOfADirectory: a directory given for an env file (compare
// DIR b.env) was told as a read error at its first line, "DIR:1: read DIR:
// is a directory"; it is told as what it is.
func TestReadEnvFileOfADirectory(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadEnvFile(dir); err == nil || err.Error() != dir+" is a directory, not an env file" {
		t.Errorf("ReadEnvFile of a directory: %v", err)
	}
}

// TestHeaderCountsOne: a range one trial measured, or a campaign of one
// node (campaign.scales = [1, 2]), was counted as many ("1 trials measured
// it", "1 nodes, range small: ...").
func TestHeaderCountsOne(t *testing.T) {
	ex := fixedExport(t, "NCCL_SOCKET_IFNAME", "eth0")
	paths, err := ex.Write("env", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "1 trial measured it") {
		t.Errorf("%s lacks '1 trial measured it':\n%s", paths[0], data)
	}
	ex.Campaign.Scale = 1
	if got := ex.scale(); got != "1 node, " {
		t.Errorf("scale() = %q, want '1 node, '", got)
	}
}

// TestFishErasesOneNameALine: fish before 3.2 (Ubuntu 20.04's 3.1, Debian
// 11's) takes one name after set --erase and fails on more ("--erase:
// expected 1 args"), which the line's `|| true` hid: a fish user's stale
// NCCL_PROTO stayed, as no trial ran. Each line erases one name, which every
// fish reads alike, and fish sources it so.
func TestFishErasesOneNameALine(t *testing.T) {
	ex := fixedExport(t, "NCCL_SOCKET_IFNAME", "eth0")
	var b strings.Builder
	if err := ex.writeSourced(&b, []string{"NCCL_SOCKET_IFNAME=eth0"}); err != nil {
		t.Fatal(err)
	}
	names := ex.leftToNCCL([]string{"NCCL_SOCKET_IFNAME=eth0"})
	var erased []string
	for _, line := range strings.Split(b.String(), "\n") {
		if rest, ok := strings.CutPrefix(line, fishUnset); ok {
			name, ok := strings.CutSuffix(rest, " || true")
			if !ok || strings.Contains(name, " ") {
				t.Errorf("fish's line %q erases more than one name", line)
			}
			erased = append(erased, name)
		}
	}
	if len(names) < 2 || !slices.Equal(erased, names) {
		t.Errorf("fish erases %q, want %q one a line", erased, names)
	}
	if _, err := exec.LookPath("fish"); err != nil {
		return
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "nccl.env")
	os.WriteFile(path, []byte(b.String()), 0o644)
	cmd := exec.Command("fish", "-c", `source $argv[1]; or exit 1; env`, path)
	for _, name := range names {
		cmd.Env = append(cmd.Env, name+"=stale")
	}
	cmd.Env = append(cmd.Env, "PATH="+os.Getenv("PATH"), "HOME="+dir)
	out, err := cmd.Output()
	if err != nil || strings.Contains(string(out), "=stale") || !strings.Contains(string(out), "NCCL_SOCKET_IFNAME=eth0") {
		t.Errorf("fish sourcing the file: %v\n%s", err, out)
	}
}
