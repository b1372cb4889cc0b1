package export

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nccltune/nccltune/plugin"
	"github.com/nccltune/nccltune/space"
)

// ReadEnvFile reads NCCL_* settings from a file in the env format (`export
// NAME='value'` and `unset NAME ...`, as nccltune writes it) or the dotenv
// format (NAME=value).
// Every name and value is checked against the catalogue, but for nccltune's
// own plugin's rules file (plugin.RulesEnv, which nccl-plugin.env sets
// beside NCCL_TUNER_PLUGIN): a path, which only the plugin reads, so that
// a job's plugin environment is measured as the plugin applies it.
func ReadEnvFile(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// Read, a directory fails at its first line, as if that line were bad.
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("%s is a directory, not an env file", path)
	}
	var env []string
	var errs []error
	in := &io.LimitedReader{R: f, N: maxEnvFile + 1}
	sc := bufio.NewScanner(in)
	sc.Buffer(nil, maxEnvLine)
	sc.Split(lfLines)
	line := 1
	for ; sc.Scan(); line++ {
		if len(errs) == maxEnvErrors {
			errs = append(errs, fmt.Errorf("%s: not read past line %d, after %d errors", path, line-1, maxEnvErrors))
			break
		}
		// A shell's blanks only: it keeps a CR or a no-break space in the value.
		text := strings.Trim(sc.Text(), " \t")
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		if rest, ok := strings.CutPrefix(text, fishUnset); ok {
			// The POSIX line beside it says the same, but a POSIX shell
			// runs what follows in its list ("&& export ...", "; unset
			// ..."): only the line as writeSourced writes it says nothing.
			names, ok := strings.CutSuffix(rest, " || true")
			if !ok || slices.ContainsFunc(strings.Split(names, " "), func(n string) bool { return !envName.MatchString(n) }) {
				errs = append(errs, fmt.Errorf("%s:%d: not fish's line as nccltune writes it (%sNAME ... || true)", path, line, fishUnset))
			}
			continue
		}
		if names, ok := strings.CutPrefix(strings.TrimPrefix(text, hasUnset+" && "), "unset "); ok {
			// As the env format writes it: the searched variables a choice
			// leaves to NCCL. A shell parts words at blanks alone: a name
			// it would not unset (a CR, a no-break space in it) is none.
			for _, name := range strings.FieldsFunc(names, func(r rune) bool { return r == ' ' || r == '\t' }) {
				if _, err := space.Lookup(name); err != nil {
					errs = append(errs, fmt.Errorf("%s:%d: %v", path, line, err))
				}
				env = slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, name+"=") })
			}
			continue
		}
		name, raw, ok := strings.Cut(strings.TrimPrefix(text, "export "), "=")
		if !ok {
			errs = append(errs, fmt.Errorf("%s:%d: not NAME=value", path, line))
			continue
		}
		value, err := unquote(raw)
		if err == nil {
			value, err = checked(name, value)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s:%d: %v", path, line, err))
			continue
		}
		env = append(env, name+"="+value)
	}
	if in.N == 0 { // its lines' errors, a stream's garbage, say no more
		return nil, fmt.Errorf("%s: over %d MiB, more than any env file holds", path, maxEnvFile>>20)
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, fmt.Errorf("%s:%d: %w", path, line, err))
	}
	return env, errors.Join(errs...)
}

// lfLines splits at '\n' alone, as a shell does: bufio.ScanLines drops a
// CRLF line's CR, which a shell sourcing the file keeps in the value.
func lfLines(data []byte, atEOF bool) (int, []byte, error) {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return i + 1, data[:i], nil
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}

// maxEnvFile bounds what ReadEnvFile reads, as space.MaxFile bounds a
// space, whose values an env file holds: compare /dev/urandom read on,
// an error a line, until memory ran out.
const maxEnvFile = space.MaxFile

// maxEnvErrors is how many of a file's errors ReadEnvFile says, then stops
// reading: a file of NUL bytes or a log given by mistake is no env file,
// and each of its lines an error (16 MiB of them held 2.5 GB).
const maxEnvErrors = 50

// maxEnvLine is the longest line ExportLine writes of a value the
// catalogue takes: NAME=value within MAX_ARG_STRLEN, each byte of the value
// at most four quoted (ShellQuote writes a quote or a backslash as four).
const maxEnvLine = len("export ''") + 4*space.MaxArgStrlen

// checked is a variable's value as the catalogue normalizes one NCCL
// reads as written (Var.Given); the plugin's rules file, an absolute path:
// the benchmark's ranks start in directories of their own, and a plugin
// that finds no rules applies none.
func checked(name, value string) (string, error) {
	if name == plugin.RulesEnv {
		if !filepath.IsAbs(value) {
			return "", fmt.Errorf("%s=%s: the plugin's rules file needs an absolute path, as `nccltune export --format plugin` writes it", name, value)
		}
		return value, nil
	}
	v, err := space.Lookup(name)
	if err != nil {
		return "", err
	}
	return v.Given(value)
}

// unquote reads a value as a POSIX shell would: single-quoted parts joined
// by an escaped quote or backslash (\' and \\, as ShellQuote writes them),
// or bare, of the characters that every shell reads as written, as a
// dotenv export writes them (a ';' or ' #' ends a bare value, a '~' expands).
func unquote(raw string) (string, error) {
	if !strings.HasPrefix(raw, "'") {
		if !literal.MatchString(raw) || !zshLiteral(raw) {
			return "", fmt.Errorf("value %q: a shell reads it otherwise than as written; single-quote it", raw)
		}
		return raw, nil
	}
	var b strings.Builder
	rest := raw
	for {
		if !strings.HasPrefix(rest, "'") {
			return "", fmt.Errorf("value %q: unbalanced quotes", raw)
		}
		end := strings.IndexByte(rest[1:], '\'')
		if end < 0 {
			return "", fmt.Errorf("value %q: unbalanced quotes", raw)
		}
		b.WriteString(rest[1 : 1+end])
		rest = rest[end+2:]
		if rest == "" {
			return b.String(), nil
		}
		if !strings.HasPrefix(rest, `\'`) && !strings.HasPrefix(rest, `\\`) {
			return "", fmt.Errorf("value %q: unexpected %q after a quote", raw, rest)
		}
		b.WriteByte(rest[1])
		rest = rest[2:]
		if rest == "" {
			return b.String(), nil
		}
	}
}
