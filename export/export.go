// Package export writes a campaign's choices in the formats that launch
// scripts and NCCL take, and reads env files back. What it writes comes from
// the space, not from the store's word: each chosen trial's settings must be
// values the space offers, and nothing else is written; no file holds a
// control character, its header included; every value is quoted, or refused,
// so that each format's consumer takes it literally.
package export

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/nccltune/nccltune/internal/atomicfile"
	"github.com/nccltune/nccltune/internal/text"
	"github.com/nccltune/nccltune/results"
	"github.com/nccltune/nccltune/runner"
	"github.com/nccltune/nccltune/runner/nccllog"
	"github.com/nccltune/nccltune/space"
	"github.com/nccltune/nccltune/store"
)

// ErrUnvalidated is what an export that needs the campaign validated first
// fails with; its text says how.
var ErrUnvalidated = errors.New("run `nccltune validate`")

// Formats are the export formats, the first being the default.
var Formats = []string{"env", "dotenv", "json", "slurm", "torchrun", "plugin", "tuner-csv", "job"}

// Export is a campaign's result, ready to be written in some format.
type Export struct {
	Space    *space.Space
	Campaign store.Campaign
	Results  []results.RangeResult // per range, for the per-range formats
	Job      results.Job           // for the formats of a tuner plugin, which serve one job
	// Decisions are NCCL's per-size decisions under each configuration (by
	// its key), recorded by validation; the tuner plugins' rules need them
	// where a configuration left the algorithm or protocol to NCCL.
	Decisions   map[string][]nccllog.Decision
	Fingerprint runner.Fingerprint
	// Plugin is NCCL_TUNER_PLUGIN in the env file of a plugin format: the
	// path of nccltune's plugin (plugin; "": beside the rules) or of NVIDIA's
	// example (tuner-csv; "": ExampleLibrary).
	Plugin string
	// Validate is the command that validates the campaign (nccltune
	// validate with the flags that read it), which a file exported before
	// validation names; "" is `nccltune validate`.
	Validate string
	Now      time.Time
	// LeftOut are the variables of the stored space that the export leaves
	// out (see space.Exportable): Space is the space without them.
	LeftOut []string
	// Trusted says Space is the user's own space file's (export --space):
	// its pinned plugins and files may be written.
	Trusted bool
	// Stored is the campaign's space as the store holds it, where Space
	// leaves out some of it: the store's records (Decisions, and Job's
	// validation) name configurations by its keys, with what it pins.
	Stored *space.Space
	// Store is the store's file, which no file written may replace (an
	// --out holding it under a name a format writes, or a link to it).
	Store string
	// Scales are the other campaigns of the space's campaign.scales: the
	// tuner plugins' rules of every node count go in one file.
	Scales []Export
	// Note, where set, is told what Write did beside writing: an earlier
	// export's file it removed, which is no failure of this one.
	Note func(string)
}

// file is one file a format writes.
type file struct {
	name string
	text string
	mode os.FileMode
}

// Write writes the export in format into dir and returns the files written.
// A range that no completed trial measured gets no file, and an error names
// it; the other ranges are still written.
func (e Export) Write(format, dir string) ([]string, error) {
	var files []file
	var err error
	switch format {
	case "env", "dotenv", "slurm", "torchrun":
		files, err = e.perRange(format)
	case "json":
		files, err = e.json()
	case "plugin":
		files, err = e.plugin(dir)
	case "tuner-csv":
		files, err = e.tunerCSV(dir)
	case "job":
		files, err = e.job()
	default:
		return nil, fmt.Errorf("unknown format %q (known: %s)", format, strings.Join(Formats, ", "))
	}
	_, perRange := rangeExt[format]
	if len(files) == 0 {
		if perRange {
			err = errors.Join(err, e.removeStale(format, dir, nil))
		}
		return nil, err
	}
	if mkErr := os.MkdirAll(dir, 0o755); mkErr != nil {
		return nil, mkErr
	}
	var paths []string
	var writes []atomicfile.File
	for _, f := range files {
		if strings.ContainsFunc(strings.ReplaceAll(f.text, "\n", ""), unicode.IsControl) || !utf8.ValidString(f.text) {
			// A last guard: every line was built from checked parts.
			err = errors.Join(err, fmt.Errorf("%s: refusing to write a control character or a byte that is not UTF-8", f.name))
			continue
		}
		if _, removable := ofFormat(format, f.name); removable {
			f.text = seal(f.text) // lest a later export remove it once edited
		}
		path := filepath.Join(dir, f.name)
		paths = append(paths, path)
		writes = append(writes, atomicfile.File{Path: path, Data: []byte(f.text), Mode: f.mode})
	}
	for _, w := range writes {
		if e.Store != "" && atomicfile.Replaces(w.Path, e.Store) {
			return nil, fmt.Errorf("%s is the store %s: refusing to write over it; export into another folder", w.Path, e.Store)
		}
	}
	if wErr := atomicfile.WriteAll(writes); wErr != nil {
		return nil, errors.Join(err, wErr)
	}
	return paths, errors.Join(err, e.removeStale(format, dir, paths))
}

// settings are a chosen trial's variables and options as the space gives
// them: every parameter value one the space offers, every other variable
// one it pins, so that nothing the store alone says reaches a file. A trial
// whose record says otherwise was altered, and is refused.
func (e Export) settings(t *store.Trial) (space.Assignment, error) {
	a := space.Assignment{}
	for name, v := range t.Params {
		if !slices.Contains(e.LeftOut, name) {
			a[name] = v
		}
	}
	if err := e.check(a); space.Stale(err) {
		return nil, fmt.Errorf("trial %d %w", t.Number, err)
	} else if err != nil {
		return nil, fmt.Errorf("trial %d %w: the store was altered", t.Number, err)
	}
	stored := slices.DeleteFunc(slices.Clone(t.Env), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.Contains(e.LeftOut, name)
	})
	// A trial's relative path is as its run read the file: as written by an
	// older nccltune, against the file's directory since (Gave).
	if env := e.Space.Env(a); !slices.Equal(env, stored) && (e.Stored == nil || !e.Stored.Gave(a, stored)) {
		return nil, fmt.Errorf("trial %d's stored environment is not what its settings give: the store was altered", t.Number)
	}
	return a, nil
}

// decisions are NCCL's recorded decisions under configuration a: under
// what the export writes of it, or, where the space left out what it pins
// (Stored), under the configuration the campaign ran, with those pins; by
// its key, or else under a spelling NCCL reads alike (space.KeyReading):
// validation probed the trial chosen then, and the results may now
// represent the choice by another trial's spelling.
func (e Export) decisions(a space.Assignment) ([]nccllog.Decision, bool) {
	spaces := []*space.Space{e.Space}
	if e.Stored != nil {
		spaces = append(spaces, e.Stored)
	}
	for _, sp := range spaces {
		if ds, ok := e.Decisions[sp.Key(a)]; ok {
			return ds, true
		}
	}
	// The store's copy gave its relative paths as written; the campaign ran
	// them absolute (Gave).
	if e.Stored != nil {
		for _, key := range slices.Sorted(maps.Keys(e.Decisions)) {
			if e.Stored.GaveKey(a, key) {
				return e.Decisions[key], true
			}
		}
	}
	for _, sp := range spaces {
		reading := space.KeyReading(sp.Key(a))
		for _, key := range slices.Sorted(maps.Keys(e.Decisions)) {
			if space.KeyReading(key) == reading {
				return e.Decisions[key], true
			}
		}
	}
	return nil, false
}

// check checks that an assignment sets only parameters the space searches,
// each to a value it offers, and that each variable it gives can be written.
func (e Export) check(a space.Assignment) error {
	sp := e.Space
	if err := sp.CheckOffered(a); err != nil {
		return err
	}
	for _, kv := range sp.Env(a) {
		name, value, _ := strings.Cut(kv, "=")
		if h := space.Hazard(name); h != "" && !e.Trusted {
			return fmt.Errorf("sets %s, which %s", name, h)
		}
		if _, err := ExportLine(name, value); err != nil {
			return err
		}
	}
	return nil
}

// header is the comment every file starts with: what, from where, measured on what, when.
func (e Export) header(what string, verdict ...string) []string {
	h := []string{what, fmt.Sprintf("campaign %q (space %s)", e.Campaign.Name, e.Campaign.SpaceHash)}
	h = append(h, verdict...)
	if len(e.LeftOut) > 0 {
		h = append(h, "left out, though the campaign's space sets them: "+strings.Join(e.LeftOut, ", ")+
			" (they load code or name files, which a store is no authority on: `nccltune export --space FILE` writes them)")
	}
	h = append(h, "measured on: "+e.Fingerprint.String())
	if len(e.Space.Simulator) > 0 {
		h = append(h, "MEASURED ON THE SIMULATED CLUSTER (nccltune sim), NOT ON HARDWARE")
	}
	return append(h, "written "+e.Now.UTC().Format(time.RFC3339)+" by nccltune")
}

// measures says what a range's file is for.
func (e Export) measures(r space.Range) string {
	b := e.Space.Benchmark
	switch {
	case b.Kind == space.DDP:
		return fmt.Sprintf("a DistributedDataParallel training step (%s parameters, %s)", b.Params, text.Count(b.Layers, "layer", "layers"))
	case b.Kind == space.Command:
		return fmt.Sprintf("the command %q, by its metric (%s)", b.Command, b.Metric)
	}
	lo, hi, inclusive := e.Space.Bounds(r)
	switch {
	case len(r.Calls) > 0 && lo == hi:
		return fmt.Sprintf("the workload's %s calls of %s bytes (range %q)", r.Collective, lo, r.Name)
	case len(r.Calls) > 0:
		return fmt.Sprintf("the workload's %s calls of %s to %s bytes (range %q)", r.Collective, lo, hi, r.Name)
	case inclusive:
		return fmt.Sprintf("%s messages of %s to %s bytes (range %q)", r.Collective, lo, hi, r.Name)
	}
	return fmt.Sprintf("%s messages of %s bytes up to (not including) %s (range %q)", r.Collective, lo, hi, r.Name)
}

const (
	// commentWidth bounds a comment line's text, a longer one wrapped onto
	// the next: NVIDIA's example tuner plugin reads its rules with fgets into
	// 256 bytes and takes what a longer line leaves for a line of its own,
	// a rule where it holds 8 fields (a campaign's name made one).
	commentWidth = 200
	// maxComment bounds one comment's text, which the store can make as
	// long as it likes: docker's and kubectl's env-file readers and
	// ReadEnvFile stop at a line of 64 KiB, nccltune's plugin at a file of
	// 1 MiB.
	maxComment = 2000
)

// comment renders lines as comments, each cleaned of what would end the
// comment, cut at maxComment and wrapped at commentWidth.
func comment(lines []string, prefix string) string {
	var b strings.Builder
	for _, l := range lines {
		if l = clean(l); len(l) > maxComment {
			l = text.Prefix(l, maxComment) + "..."
		}
		for {
			part := l
			if len(l) > commentWidth {
				part = text.Prefix(l, commentWidth)
				if i := strings.LastIndexByte(part, ' '); i > 0 {
					part = part[:i+1] // at a word's end where there is one
				}
			}
			b.WriteString(prefix + strings.TrimSuffix(part, " ") + "\n")
			if l = l[len(part):]; l == "" {
				break
			}
		}
	}
	return b.String()
}

// clean escapes every character that is not graphic, and replaces every
// byte that is not UTF-8: text from the store cannot end a comment and
// start a command, nor make a file that docker's and kubectl's env-file
// readers refuse whole (they refuse a line that is not UTF-8, comments
// included).
func clean(s string) string { return text.Clean(s) }
