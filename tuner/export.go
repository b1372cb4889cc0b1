package tuner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/nccltune/nccltune/space"
	"github.com/nccltune/nccltune/store"
)

// ExportEnv writes one sourceable env file per size range into dir and returns
// their paths. A range that no trial measured gets no file, and an error
// names it; the other ranges are still written.
func ExportEnv(sp *space.Space, camp store.Campaign, results []RangeResult, dir string, now time.Time) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var paths []string
	var errs []error
	for _, r := range results {
		chosen := r.Chosen()
		if chosen == nil {
			errs = append(errs, fmt.Errorf("range %s: no completed trial measured it; no file written", r.Range.Name))
			continue
		}
		text, err := envFile(sp, camp, r, chosen, now)
		if err != nil {
			errs = append(errs, fmt.Errorf("range %s: %w", r.Range.Name, err))
			continue
		}
		path := filepath.Join(dir, "nccl-"+r.Range.Name+".env")
		if err := writeFileAtomic(path, []byte(text)); err != nil {
			errs = append(errs, err)
			continue
		}
		paths = append(paths, path)
	}
	return paths, errors.Join(errs...)
}

func envFile(sp *space.Space, camp store.Campaign, r RangeResult, chosen *store.Trial, now time.Time) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "# nccltune: NCCL settings for %s messages of %s bytes up to (not including) %s (range %q)\n",
		sp.Campaign.Collective, space.FormatSize(r.Range.Min), space.FormatSize(r.Range.Max), r.Range.Name)
	fmt.Fprintf(&b, "# campaign %q (space %s), %d trials measured this range\n", camp.Name, camp.SpaceHash, r.Completed)
	fmt.Fprintf(&b, "# %s\n", r.Describe())
	if len(sp.Simulator) > 0 {
		fmt.Fprintf(&b, "# MEASURED ON THE SIMULATED CLUSTER (nccltune sim), NOT ON HARDWARE\n")
	}
	fmt.Fprintf(&b, "# written %s; use: source %s\n", now.UTC().Format(time.RFC3339), "nccl-"+r.Range.Name+".env")
	for _, kv := range chosen.Env {
		name, value, _ := strings.Cut(kv, "=")
		line, err := ExportLine(name, value)
		if err != nil {
			return "", err
		}
		b.WriteString(line + "\n")
	}
	return b.String(), nil
}

var envName = regexp.MustCompile(`^NCCL_[A-Z0-9_]+$`)

// ExportLine renders one variable as a POSIX shell export, single-quoted so
// that no value is ever expanded or executed when the file is sourced.
func ExportLine(name, value string) (string, error) {
	if !envName.MatchString(name) {
		return "", fmt.Errorf("refusing to export variable name %q", name)
	}
	if strings.ContainsAny(value, "\x00\n\r") {
		return "", fmt.Errorf("refusing to export %s: value holds a control character", name)
	}
	return "export " + name + "=" + ShellQuote(value), nil
}

// ShellQuote single-quotes s for a POSIX shell: nothing inside is expanded.
func ShellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// writeFileAtomic writes through a temporary file, so a reader never sees half a file.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".nccltune-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
