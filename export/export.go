// Package export writes a campaign's choices in the formats that launch
// scripts and NCCL take, and reads env files back.
package export

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nccltune/nccltune/results"
	"github.com/nccltune/nccltune/runner"
	"github.com/nccltune/nccltune/space"
	"github.com/nccltune/nccltune/store"
)

// Formats are the export formats, the first being the default.
var Formats = []string{"env", "dotenv", "json", "slurm", "torchrun", "tuner-csv"}

// Export is a campaign's result, ready to be written in some format.
type Export struct {
	Space       *space.Space
	Campaign    store.Campaign
	Results     []results.RangeResult
	Fingerprint runner.Fingerprint
	Now         time.Time
}

// Write writes the export in format into dir and returns the files written.
// A range that no completed trial measured gets no file, and an error names
// it; the other ranges are still written.
func (e Export) Write(format, dir string) ([]string, error) {
	if !slices.Contains(Formats, format) {
		return nil, fmt.Errorf("unknown format %q (known: %s)", format, strings.Join(Formats, ", "))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	switch format {
	case "json":
		return e.writeOne(dir, "nccl-tuned.json", e.json)
	case "tuner-csv":
		return e.writeOne(dir, "nccl_tuner.conf", e.tunerCSV)
	}
	var paths []string
	var errs []error
	for _, r := range e.Results {
		chosen := r.Chosen()
		if chosen == nil {
			errs = append(errs, fmt.Errorf("range %s: no completed trial measured it; no file written", r.Range.Name))
			continue
		}
		text, name, err := e.rangeFile(format, r, chosen)
		if err != nil {
			errs = append(errs, fmt.Errorf("range %s: %w", r.Range.Name, err))
			continue
		}
		path := filepath.Join(dir, name)
		mode := os.FileMode(0o644)
		if format == "torchrun" {
			mode = 0o755
		}
		if err := writeFileAtomic(path, []byte(text), mode); err != nil {
			errs = append(errs, err)
			continue
		}
		paths = append(paths, path)
	}
	return paths, errors.Join(errs...)
}

func (e Export) writeOne(dir, name string, render func() (string, error)) ([]string, error) {
	text, err := render()
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, name)
	if err := writeFileAtomic(path, []byte(text), 0o644); err != nil {
		return nil, err
	}
	return []string{path}, nil
}

// header is the comment every file starts with: what, from where, measured on what, when.
func (e Export) header(r results.RangeResult) []string {
	what := fmt.Sprintf("nccltune: NCCL settings for %s messages of %s bytes up to (not including) %s (range %q)",
		e.Space.Campaign.Collective, space.FormatSize(r.Range.Min), space.FormatSize(r.Range.Max), r.Range.Name)
	if e.Space.Benchmark.Kind == space.DDP {
		what = fmt.Sprintf("nccltune: NCCL settings for a DistributedDataParallel training step (%s parameters, %d layers)",
			e.Space.Benchmark.Params, e.Space.Benchmark.Layers)
	}
	h := []string{
		what,
		fmt.Sprintf("campaign %q (space %s), %d trials measured this range", e.Campaign.Name, e.Campaign.SpaceHash, r.Completed),
		r.Describe(),
	}
	return append(h, e.provenance()...)
}

func (e Export) provenance() []string {
	h := []string{"measured on: " + e.Fingerprint.String()}
	if len(e.Space.Simulator) > 0 {
		h = append(h, "MEASURED ON THE SIMULATED CLUSTER (nccltune sim), NOT ON HARDWARE")
	}
	return append(h, "written "+e.Now.UTC().Format(time.RFC3339)+" by nccltune")
}

func comment(lines []string, prefix string) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(prefix + l + "\n")
	}
	return b.String()
}

// ddpLine names the DDP knobs a trial chose, which no environment carries.
func (e Export) ddpLine(t *store.Trial) []string {
	var knobs []string
	for _, p := range e.Space.Params {
		if v, err := space.Lookup(p.Name); err == nil && v.IsArg() && t.Params[p.Name] != "" && t.Params[p.Name] != space.Unset {
			knobs = append(knobs, p.Name+"="+t.Params[p.Name])
		}
	}
	if len(knobs) == 0 {
		return nil
	}
	return []string{"DistributedDataParallel settings (pass them to DDP in your code): " + strings.Join(knobs, ", ")}
}

// rangeFile renders one range's file in a per-range format.
func (e Export) rangeFile(format string, r results.RangeResult, chosen *store.Trial) (text, name string, err error) {
	base := "nccl-" + r.Range.Name
	head := comment(append(e.header(r), e.ddpLine(chosen)...), "# ")
	var b strings.Builder
	switch format {
	case "env":
		b.WriteString(head + "# use: source " + base + ".env\n")
		for _, kv := range chosen.Env {
			k, v, _ := strings.Cut(kv, "=")
			line, err := ExportLine(k, v)
			if err != nil {
				return "", "", err
			}
			b.WriteString(line + "\n")
		}
		return b.String(), base + ".env", nil
	case "dotenv":
		// Docker's --env-file and Kubernetes take values literally: no quoting, no newlines.
		b.WriteString(head + "# use: docker run --env-file " + base + ".dotenv ...\n")
		for _, kv := range chosen.Env {
			k, v, _ := strings.Cut(kv, "=")
			if _, err := ExportLine(k, v); err != nil {
				return "", "", err
			}
			b.WriteString(k + "=" + v + "\n")
		}
		return b.String(), base + ".dotenv", nil
	case "slurm":
		// srun's --export splits at commas, and cannot escape them.
		list := []string{"ALL"}
		for _, kv := range chosen.Env {
			k, v, _ := strings.Cut(kv, "=")
			if _, err := ExportLine(k, v); err != nil {
				return "", "", err
			}
			if strings.Contains(v, ",") {
				return "", "", fmt.Errorf("%s=%s holds a comma, which srun --export cannot pass; use the env format and --export=ALL", k, v)
			}
			list = append(list, kv)
		}
		b.WriteString(head + "# use: source " + base + ".slurm; srun \"$NCCLTUNE_SRUN_EXPORT\" ...\n")
		b.WriteString("NCCLTUNE_SRUN_EXPORT=" + ShellQuote("--export="+strings.Join(list, ",")) + "\n")
		return b.String(), base + ".slurm", nil
	default: // torchrun
		b.WriteString("#!/bin/sh\n" + head + "# use: ./" + base + ".torchrun.sh --nproc-per-node 8 train.py ...\nexec env")
		for _, kv := range chosen.Env {
			k, v, _ := strings.Cut(kv, "=")
			if _, err := ExportLine(k, v); err != nil {
				return "", "", err
			}
			b.WriteString(" " + k + "=" + ShellQuote(v))
		}
		b.WriteString(" torchrun \"$@\"\n")
		return b.String(), base + ".torchrun.sh", nil
	}
}

type exportJSON struct {
	Campaign    string                `json:"campaign"`
	SpaceHash   string                `json:"space_hash"`
	Collective  string                `json:"collective"`
	Simulated   bool                  `json:"simulated"`
	Fingerprint runner.Fingerprint    `json:"fingerprint"`
	Written     string                `json:"written"`
	Ranges      []results.RangeReport `json:"ranges"`
}

func (e Export) json() (string, error) {
	out := exportJSON{Campaign: e.Campaign.Name, SpaceHash: e.Campaign.SpaceHash, Collective: e.Space.Campaign.Collective,
		Simulated: len(e.Space.Simulator) > 0, Fingerprint: e.Fingerprint, Written: e.Now.UTC().Format(time.RFC3339)}
	for _, r := range e.Results {
		out.Ranges = append(out.Ranges, r.Report(e.Space))
	}
	if !slices.ContainsFunc(out.Ranges, func(r results.RangeReport) bool { return r.Trial != nil }) {
		return "", errors.New("no completed trial measured any range; nothing to export")
	}
	data, err := json.MarshalIndent(out, "", "  ")
	return string(data) + "\n", err
}

// tunerColl maps nccl-tests' collectives to the names in NCCL's example tuner plugin's CSV.
var tunerColl = map[string]string{"all_reduce": "allreduce", "all_gather": "allgather",
	"reduce_scatter": "reducescatter", "broadcast": "broadcast", "reduce": "reduce"}

var singleToken = regexp.MustCompile(`^[A-Za-z0-9]+$`)

// tunerCSV renders the configuration file of NCCL's example tuner plugin
// (plugins/tuner/example, NCCL_TUNER_CONFIG_FILE), which applies a choice per
// size range inside one job. The plugin needs an algorithm and a protocol for
// every rule, and uses one channel wherever no rule matches or a rule says -1,
// so every range must pin one algorithm and one protocol, and each row states
// its channel count.
func (e Export) tunerCSV() (string, error) {
	coll, ok := tunerColl[e.Space.Campaign.Collective]
	if !ok {
		return "", fmt.Errorf("NCCL's example tuner plugin does not handle %s", e.Space.Campaign.Collective)
	}
	type row struct {
		min, max    int64
		algo, proto string
		channels    int
		names       []string
	}
	var rows []row
	var errs []error
	for _, r := range e.Results {
		ch := r.Chosen()
		if ch == nil {
			errs = append(errs, fmt.Errorf("range %s: no completed trial measured it", r.Range.Name))
			continue
		}
		env := space.EnvMap(ch.Env)
		algo, proto := env["NCCL_ALGO"], env["NCCL_PROTO"]
		if !singleToken.MatchString(algo) || !singleToken.MatchString(proto) {
			errs = append(errs, fmt.Errorf("range %s: its settings leave NCCL_ALGO/NCCL_PROTO to NCCL (%q/%q); the plugin needs one of each per rule, and would run unmatched sizes on one channel: search NCCL_ALGO and NCCL_PROTO without \"default\", or export env files", r.Range.Name, algo, proto))
			continue
		}
		channels := ch.NCCLLog.Channels
		if v, err := strconv.Atoi(env["NCCL_MIN_CTAS"]); err == nil {
			channels = v
		}
		if channels <= 0 {
			errs = append(errs, fmt.Errorf("range %s: the channel count is unknown (NCCL's log showed none and NCCL_MIN_CTAS is not set)", r.Range.Name))
			continue
		}
		rw := row{r.Range.Min, r.Range.Max - 1, strings.ToLower(algo), strings.ToLower(proto), channels, []string{r.Range.Name}}
		// Adjacent ranges that chose the same are one rule.
		if n := len(rows); n > 0 && rows[n-1].max+1 == rw.min && rows[n-1].algo == rw.algo && rows[n-1].proto == rw.proto && rows[n-1].channels == rw.channels {
			rows[n-1].max, rows[n-1].names = rw.max, append(rows[n-1].names, rw.names...)
			continue
		}
		rows = append(rows, rw)
	}
	if err := errors.Join(errs...); err != nil {
		return "", fmt.Errorf("tuner-csv: %w", err)
	}
	f := e.Fingerprint
	nodes, ranks := -1, -1
	if f.Ranks > 0 {
		nodes, ranks = f.Nodes, f.Ranks
	}
	lines := append([]string{
		fmt.Sprintf("nccltune: rules for NCCL's example tuner plugin, campaign %q (space %s)", e.Campaign.Name, e.Campaign.SpaceHash),
		"use: NCCL_TUNER_PLUGIN=<path to the example plugin> NCCL_TUNER_CONFIG_FILE=nccl_tuner.conf",
		"sizes outside these rules run on ONE channel under the example plugin",
		"colltype,minbytes,maxbytes,algorithm,protocol,channels,nNodes,nRanks,numPipeOps,regBuff",
	}, e.provenance()...)
	var b strings.Builder
	b.WriteString(comment(lines, "# "))
	for _, rw := range rows {
		fmt.Fprintf(&b, "# ranges %s\n%s,%d,%d,%s,%s,%d,%d,%d,-1,-1\n", strings.Join(rw.names, ", "), coll, rw.min, rw.max,
			rw.algo, rw.proto, rw.channels, nodes, ranks)
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
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".nccltune-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
