package export

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/nccltune/nccltune/space"
)

// ReadEnvFile reads NCCL_* settings from a file in the env format (`export
// NAME='value'`, as nccltune writes it) or the dotenv format (NAME=value).
// Every name and value is checked against the catalogue.
func ReadEnvFile(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var env []string
	var errs []error
	sc := bufio.NewScanner(f)
	line := 1
	for ; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		name, raw, ok := strings.Cut(strings.TrimPrefix(text, "export "), "=")
		value, qerr := unquote(raw)
		var v space.Var
		if ok && qerr == nil {
			v, err = space.Lookup(name)
		}
		if ok && qerr == nil && err == nil {
			value, err = v.Normalize(value)
		}
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("%s:%d: not NAME=value", path, line))
		case qerr != nil:
			errs = append(errs, fmt.Errorf("%s:%d: %v", path, line, qerr))
		case err != nil:
			errs = append(errs, fmt.Errorf("%s:%d: %v", path, line, err))
		default:
			env = append(env, name+"="+value)
		}
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, fmt.Errorf("%s:%d: %w", path, line, err))
	}
	return env, errors.Join(errs...)
}

// unquote reads a value as a POSIX shell would: single-quoted parts joined
// by an escaped quote or backslash (\' and \\, as ShellQuote writes them),
// or bare.
func unquote(raw string) (string, error) {
	if !strings.HasPrefix(raw, "'") {
		if strings.ContainsAny(raw, "'\\\"$`") {
			return "", fmt.Errorf("value %q: only bare or single-quoted values are read", raw)
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
