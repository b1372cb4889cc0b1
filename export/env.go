package export

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/nccltune/nccltune/internal/text"
	"github.com/nccltune/nccltune/results"
	"github.com/nccltune/nccltune/runner/nccllog"
	"github.com/nccltune/nccltune/space"
)

// rangeHeading starts every per-range file's first line.
const rangeHeading = "nccltune: NCCL settings for "

// perRange writes a file per range, of the variables its choice sets.
func (e Export) perRange(format string) ([]file, error) {
	var files []file
	var errs []error
	for _, r := range e.Results {
		if r.Best == nil {
			errs = append(errs, fmt.Errorf("range %s: no completed trial measured it; no file written", r.Range.Name))
			continue
		}
		a, err := e.choice(r)
		var f file
		if err == nil {
			f, err = e.rangeFile(format, r, a)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("range %s: %w", r.Range.Name, err))
			continue
		}
		files = append(files, f)
	}
	return files, errors.Join(errs...)
}

// rangeBase is the name of a range's files, less the format's extension.
func rangeBase(name string) string { return "nccl-" + name }

// rangeExt are the per-range formats' extensions.
var rangeExt = map[string]string{"env": ".env", "dotenv": ".dotenv", "slurm": ".slurm", "torchrun": ".torchrun.sh"}

// removeStale removes the files of format that an earlier export wrote
// into dir and this one did not, lest a launch script source one beside
// this export's files as if it were this campaign's choice: a range's that
// this export wrote none for (an error, the range's); a range's that the
// space no longer has, or a whole job's of a node count campaign.scales no
// longer has (a campaign run again with another space as NAME-2, exported
// where the first was: a note, where this export wrote files). A file that
// does not start as nccltune's do is someone else's, and kept; one that
// the user edited since nccltune wrote it is theirs too, and kept, and the
// export fails naming it, lest a script source it unnoticed.
func (e Export) removeStale(format, dir string, written []string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("looking for an earlier export's files: %w", err)
	}
	// Found by name, and by file too: a file system may fold case. A file
	// under one of this export's names is this campaign's, whatever its
	// inode: a concurrent export of it may have replaced this one's since.
	var mine []os.FileInfo
	var names []string
	for _, path := range written {
		names = append(names, filepath.Base(path))
		if info, err := os.Lstat(path); err == nil {
			mine = append(mine, info)
		}
	}
	var errs []error
	for _, entry := range entries {
		name, ok := ofFormat(format, entry.Name())
		if !ok {
			continue
		}
		if slices.Contains(names, entry.Name()) {
			continue
		}
		ours := name != "" && slices.ContainsFunc(e.Results, func(r results.RangeResult) bool { return r.Range.Name == name })
		if !ours && len(written) == 0 {
			continue // an export that wrote nothing removes no other's file
		}
		path := filepath.Join(dir, entry.Name())
		info, err := os.Lstat(path)
		if err != nil || slices.ContainsFunc(mine, func(m os.FileInfo) bool { return os.SameFile(m, info) }) {
			continue
		}
		switch nccltunes, edited := writtenByNCCLTune(path); {
		case !nccltunes:
			continue
		case edited:
			errs = append(errs, fmt.Errorf("kept %s, an earlier export's file edited since: a script may source it beside this export's files; move it elsewhere, or remove it", path))
			continue
		}
		switch err := os.Remove(path); {
		case errors.Is(err, fs.ErrNotExist):
			continue // a concurrent export removed it first, and says so
		case err != nil:
			errs = append(errs, fmt.Errorf("an earlier export's %s is still there: %w", path, err))
			continue
		}
		switch {
		case ours:
			errs = append(errs, fmt.Errorf("range %s: removed %s, an earlier export's", name, path))
		case e.Note == nil:
		case name != "":
			e.Note(fmt.Sprintf("removed %s, an earlier export's file of range %s, which campaign %s's space does not have", path, name, clean(e.Campaign.Name)))
		default:
			e.Note(fmt.Sprintf("removed %s, an earlier export's file of a job this export wrote none for (a node count campaign.scales no longer has, or one whose export failed)", path))
		}
	}
	return errors.Join(errs...)
}

// ofFormat reports whether a file of name in an export's folder is one that
// format writes, and the range it serves ("" for a whole job's).
func ofFormat(format, name string) (rangeName string, ok bool) {
	if base, whole := jobBases[format]; whole {
		scale, named := strings.CutPrefix(name, base)
		scale, env := strings.CutSuffix(scale, ".env")
		return "", named && env && (scale == "" || nodeCount.MatchString(scale))
	}
	ext, perRange := rangeExt[format]
	if rangeName, ok = strings.CutPrefix(name, rangeBase("")); !perRange || !ok {
		return "", false
	}
	rangeName, ok = strings.CutSuffix(rangeName, ext)
	return rangeName, ok && space.RangeWord(rangeName)
}

// nodeCount is the node count in the name of a whole job's file (jobEnvName).
var nodeCount = regexp.MustCompile(`^-[0-9]+n$`)

// writtenByNCCLTune reports whether the regular file at path is one that
// nccltune wrote there: it starts as nccltune's env files do, and the use
// line that ends its heading names it. A copy the user made of one
// (cp nccl-large.env nccl-large-old.env, to compare with later) or a hard
// link to one names its original, and is theirs. A symbolic link is the
// user's, whatever it names, and is not followed; nor is a FIFO waited on.
// edited reports whether such a file is no longer as written (seal).
func writtenByNCCLTune(path string) (nccltunes, edited bool) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return false, false
	}
	defer f.Close()
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
		return false, false
	}
	head := make([]byte, 64<<10) // past the longest heading comment writes
	n, _ := io.ReadFull(f, head)
	text := strings.TrimPrefix(string(head[:n]), "#!/bin/sh\n")
	if !strings.HasPrefix(text, "# nccltune: ") {
		return false, false
	}
	// The heading's lines joined as they were before comment wrapped them:
	// a long name is cut within, where it holds no blank.
	var heading strings.Builder
	for _, line := range strings.Split(text, "\n") {
		part, ok := strings.CutPrefix(line, "# ")
		if !ok {
			break
		}
		heading.WriteString(part)
	}
	use := heading.String()
	use = use[max(strings.LastIndex(use, "use: "), 0):]
	// A name holds no '.' before its extension (space.FileWord), so no
	// other file's name starts as this one's.
	if !strings.Contains(use, "./"+filepath.Base(path)) {
		return false, false
	}
	// Read whole only now: a folder may hold large files of others.
	rest, err := io.ReadAll(io.LimitReader(f, maxSealed+1-int64(n)))
	return true, err != nil || !unedited(append(head[:n], rest...))
}

// sealPrefix starts the last line of every file that a later export may
// remove (removeStale): the SHA-256 of the lines above it, which tells a
// file as nccltune wrote it from one the user has edited since.
const sealPrefix = "# nccltune: sha256 "

// maxSealed bounds what writtenByNCCLTune reads of a file, far above any
// file export writes; a longer one is no longer as written.
const maxSealed = 64 << 20

// seal ends text with its seal line.
func seal(text string) string {
	return fmt.Sprintf("%s%s%x of the lines above: a later export with no use for this file removes it only as written\n", text, sealPrefix, sha256.Sum256([]byte(text)))
}

// unedited reports whether data, a file nccltune wrote, is as written: it
// ends with the seal of all above it, or has none, as an older nccltune
// wrote none.
func unedited(data []byte) bool {
	if len(data) > maxSealed {
		return false
	}
	i := bytes.LastIndex(data, []byte("\n"+sealPrefix))
	if i < 0 {
		return true
	}
	return string(data) == seal(string(data[:i+1]))
}

// choice is what a range's files set: its chosen trial's settings, or NCCL's
// defaults (none set) where no trial holds the choice (Chosen), less the
// other collectives' parts (othersParts).
func (e Export) choice(r results.RangeResult) (space.Assignment, error) {
	ch := r.Chosen()
	if ch == nil {
		return space.Assignment{}, nil
	}
	a, err := e.settings(ch)
	for _, name := range e.othersParts(r, a) {
		delete(a, name)
	}
	e.scope(r.Range.Collective, a)
	return a, err
}

// wholeParts are the params of a that set NCCL_ALGO or NCCL_PROTO whole
// where nccl-tests measured coll (its name: all_reduce) alone of the
// collectives NCCL takes a prefix of: NCCL applies a plain value to every
// collective, some of which run no algorithm it may name (Tree or NVLS for
// a broadcast, DDP's as it builds the model).
func (e Export) wholeParts(coll string, a space.Assignment) []string {
	if !e.Space.Benchmark.Sweeps() || !space.TakesAlgorithm(coll) {
		return nil
	}
	var names []string
	for _, p := range e.Space.Params {
		if v, set := a[p.Name]; set && v != space.Unset && p.Collective == "" && slices.Contains(space.PerCollective, p.Name) {
			names = append(names, p.Name)
		}
	}
	return names
}

// scope sets a's wholeParts for coll alone, as NCCL applies them there,
// where the campaign's NCCL reads NCCL's per-collective syntax.
func (e Export) scope(coll string, a space.Assignment) {
	if !e.readsPrefix() {
		return
	}
	prefix := collTokens[coll]
	for _, name := range e.wholeParts(coll, a) {
		if list, ok := partFor(a[name], prefix); ok {
			a[name] = prefix + ":" + list
		} else {
			delete(a, name) // it set other collectives alone: NCCL's own choice here
		}
	}
}

// wholeNote says, in a file's header, how the searched variables names of
// wholeParts(coll) are set.
func (e Export) wholeNote(coll string, names []string) string {
	set := strings.Join(names, " and ")
	if e.readsPrefix() {
		return fmt.Sprintf("%s is set for %s alone, the collective measured: NCCL applies a plain value to every collective, and some run no algorithm it may name (a broadcast runs Ring alone)", set, coll)
	}
	version := "NCCL " + e.Fingerprint.NCCL
	if _, known := nccllog.AtLeast(e.Fingerprint.NCCL, 2, 24); !known {
		version = "the campaign's NCCL, which logged no version, may be older than " + nccllog.PerCollectiveSince + " and"
	}
	return fmt.Sprintf("%s applies to every collective (%s reads no per-collective value), and only %s was measured: a job's other collectives (a broadcast, an all-gather) may run no algorithm it names", set, version, coll)
}

// readsPrefix reports whether the campaign's NCCL reads NCCL's
// per-collective syntax (from 2.24), as the simulated cluster does; an
// older one reads a prefixed value as no algorithm at all, and one that
// logged no version may be older.
func (e Export) readsPrefix() bool {
	yes, known := nccllog.AtLeast(e.Fingerprint.NCCL, 2, 24)
	return yes || !known && len(e.Space.Simulator) > 0
}

// othersParts are the params of a that set NCCL_ALGO or NCCL_PROTO for
// collectives other than range r's: a collective's part (a workload's
// NCCL_ALGO[allreduce] in range all_gather), or a param searched whole
// where nccl-tests measured a collective that NCCL runs with neither
// (alltoall, sendrecv: no prefix of theirs). NCCL applies such a value to
// other collectives alone, so it played no part in the range's score, and
// a range's file that set it would change them in the job by a choice no
// verdict judged (Tree leaves a broadcast no algorithm).
func (e Export) othersParts(r results.RangeResult, a space.Assignment) []string {
	coll := strings.ReplaceAll(r.Range.Collective, "_", "")
	unused := e.Space.Benchmark.Sweeps() && !space.TakesAlgorithm(r.Range.Collective)
	var names []string
	for _, p := range e.Space.Params {
		v, set := a[p.Name]
		if !set || v == space.Unset {
			continue
		}
		if p.Collective != "" && p.Collective != coll || p.Collective == "" && unused && slices.Contains(space.PerCollective, p.Name) {
			names = append(names, p.Name)
		}
	}
	return names
}

// rangeFile renders one range's file: variables and, as a comment, the DDP
// knobs, which no environment carries.
func (e Export) rangeFile(format string, r results.RangeResult, a space.Assignment) (file, error) {
	sp := e.Space
	if !space.FileWord(r.Range.Name) {
		return file{}, errors.New("its name cannot name a file (letters, digits, '-' or '_'): the store was altered")
	}
	name := rangeBase(r.Range.Name) + rangeExt[format]
	head := e.header(rangeHeading+e.measures(r.Range), text.Count(r.Completed, "trial", "trials")+" measured it", r.Describe())
	if ch := r.Chosen(); ch != nil {
		if others := e.othersParts(r, space.Assignment(ch.Params)); len(others) > 0 {
			head = append(head, fmt.Sprintf("left out of trial %d's settings: %s, which NCCL applies to other collectives than this range's", ch.Number, strings.Join(others, ", ")))
		}
	}
	if names := e.wholeParts(r.Range.Collective, a); len(names) > 0 {
		head = append(head, e.wholeNote(r.Range.Collective, names))
	}
	if args := sp.Args(a); len(args) > 0 {
		head = append(head, "DistributedDataParallel settings (pass them to DDP in your code): "+strings.Join(args, " "))
	}
	env := sp.Env(a)
	var b strings.Builder
	switch format {
	case "env":
		b.WriteString(comment(append(head, "use: . ./"+name), "# "))
		if err := e.writeSourced(&b, env); err != nil {
			return file{}, err
		}
		return file{name, b.String(), 0o644}, nil
	case "dotenv":
		b.WriteString(comment(append(head, "use: docker run --env-file "+name+" ..., or set -a; . ./"+name+"; set +a"), "# "))
		if err := writeLines(&b, env, dotenvLine); err != nil {
			return file{}, err
		}
		return file{name, b.String(), 0o644}, nil
	case "slurm":
		list := []string{"ALL"}
		for _, kv := range env {
			name, value, _ := strings.Cut(kv, "=")
			// Its own check of names and control characters, whatever checked them before.
			if _, err := ExportLine(name, value); err != nil {
				return file{}, err
			}
			if strings.ContainsAny(value, srunSpecial) {
				return file{}, fmt.Errorf("%s=%s holds one of %q, which srun --export splits or unquotes; use the env format and srun --export=ALL", name, value, srunSpecial)
			}
			list = append(list, kv)
		}
		arg := "--export=" + strings.Join(list, ",")
		if len(arg)+1 > space.MaxArgStrlen {
			// Each value fits, as the trials passed them; one argument of them all may not.
			return file{}, fmt.Errorf("srun's --export list is %d bytes, and Linux starts no program with one argument over %d (MAX_ARG_STRLEN); use the env format and srun --export=ALL", len(arg), space.MaxArgStrlen-1)
		}
		b.WriteString(comment(append(head, "use: . ./"+name+"; srun \"$NCCLTUNE_SRUN_EXPORT\" ..."), "# "))
		b.WriteString(e.unsetLine(env)) // --export=ALL would pass them on
		b.WriteString("NCCLTUNE_SRUN_EXPORT=" + ShellQuote(arg) + "\n")
		return file{name, b.String(), 0o644}, nil
	default: // torchrun
		b.WriteString("#!/bin/sh\n" + comment(append(head, "use: ./"+name+" --nproc-per-node 8 train.py ..."), "# ") + e.unsetLine(env) + "exec env")
		for _, kv := range env {
			name, value, _ := strings.Cut(kv, "=")
			if _, err := ExportLine(name, value); err != nil {
				return file{}, err
			}
			b.WriteString(" " + name + "=" + ShellQuote(value))
		}
		b.WriteString(" torchrun \"$@\"\n")
		return file{name, b.String(), 0o755}, nil
	}
}

// writeLines writes each variable of env (NAME=value) as line renders it.
func writeLines(b *strings.Builder, env []string, line func(name, value string) (string, error)) error {
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		l, err := line(name, value)
		if err != nil {
			return err
		}
		b.WriteString(l + "\n")
	}
	return nil
}

// leftToNCCL are the variables env leaves to NCCL that the job's
// environment must not hold, as no trial's did (nccltune drops the NCCL_*
// variables it inherits): those the space searches, whose value in the
// job's shell, a module's or an earlier range's file's, would run what no
// trial measured; and, where the space sets none of them, those that would
// decide in the job what env leaves to NCCL (unmeasured). A variable the
// export leaves out (LeftOut) is the user's to set, and not unset.
func (e Export) leftToNCCL(env []string) []string {
	set := space.EnvMap(env)
	var names []string
	for _, p := range e.Space.Params {
		// One collective's part names its variable, as others do; a DDP
		// knob names none.
		name := p.Variable()
		if _, ok := set[name]; !ok && envName.MatchString(name) {
			names = append(names, name)
		}
	}
	for _, name := range unmeasured {
		if _, ok := set[name]; !ok && !e.names(name) && !slices.Contains(e.LeftOut, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// unmeasured are the variables that decide, where a job's shell holds them,
// what NCCL runs for the variables a file leaves to it: a tuner plugin and
// its configuration, which replace per size the algorithm and protocol (an
// earlier file's of the plugin formats, a site's), and NCCL_CONF_FILE, whose
// file NCCL reads in place of ~/.nccl.conf, each variable the environment
// leaves unset (setenv without overwrite, NCCL's param.cc).
var unmeasured = []string{"NCCL_TUNER_PLUGIN", "NCCL_TUNER_CONFIG_FILE", "NCCL_CONF_FILE"}

// unsetLine unsets leftToNCCL in a POSIX shell script; "" where there are none.
func (e Export) unsetLine(env []string) string {
	if names := e.leftToNCCL(env); len(names) > 0 {
		return "unset " + strings.Join(names, " ") + "\n"
	}
	return ""
}

// The lines of a file to source that unset leftToNCCL in every shell the
// env format is read by: POSIX shells, where `unset` is a builtin that
// command -v finds, and fish, which has none and erases with set -eg (its
// status 0 whether or not the variable was set): the session's variables,
// the environment's and an earlier file's, never a universal one, which
// set -e would erase from every fish session for good, one name a line:
// fish before 3.2 erases one, and fails on more. Neither shell runs the
// other's lines.
const (
	hasUnset   = "command -v unset >/dev/null"
	posixUnset = hasUnset + " && unset "
	fishUnset  = hasUnset + " || set -eg "
)

// writeSourced writes the body of a file in the env format, which a job's
// shell sources: env's exports, then the unsetting of leftToNCCL.
func (e Export) writeSourced(b *strings.Builder, env []string) error {
	if err := writeLines(b, env, ExportLine); err != nil {
		return err
	}
	names := e.leftToNCCL(env)
	if len(names) == 0 {
		return nil
	}
	b.WriteString(comment([]string{"left to NCCL as measured, which no trial's environment held: unset in the job's shell"}, "# ") +
		posixUnset + strings.Join(names, " ") + "\n")
	for _, name := range names {
		b.WriteString(fishUnset + name + " || true\n")
	}
	return nil
}

// dotenvLine renders one variable bare, as a dotenv file sets it.
func dotenvLine(name, value string) (string, error) {
	if err := libraryName(name, value); err != nil {
		return "", err
	}
	if !literal.MatchString(value) {
		return "", fmt.Errorf("%s=%s cannot be written bare for docker --env-file, which takes values literally, and left inert for a shell that sources the file; use the env format", name, value)
	}
	if !zshLiteral(value) {
		return "", fmt.Errorf("%s=%s: zsh sourcing the file would read '=' at the value's start or after a ':' as a command's path (=word); use the env format", name, value)
	}
	line := name + "=" + value
	if len(line) > maxDotenvLine {
		return "", fmt.Errorf("%s: a line of %d bytes, and docker's and kubectl's env-file readers refuse a file holding one over %d (bufio.Scanner: token too long); use the env format", name, len(line), maxDotenvLine)
	}
	return line, nil
}

// maxDotenvLine is the longest line docker's --env-file and kubectl's
// --from-env-file read: each scans lines with bufio.Scanner's default
// buffer, and refuses the whole file at a longer one.
const maxDotenvLine = bufio.MaxScanTokenSize - 1

// literal is a value that means the same bare to every reader of a dotenv
// file: docker's --env-file and Kubernetes take it as written, a shell
// that sources it (set -a; .) expands and splits none of it (see
// zshLiteral for zsh's '=').
var literal = regexp.MustCompile(`^[A-Za-z0-9_./:,=+@%^-]*$`)

// zshLiteral reports whether zsh, sourcing a dotenv file, reads a value of
// literal's characters as written: it expands "=word" in an assignment, at
// the value's start or after a ':' as in PATH, to the path of the command
// word, so NCCL's exact-match NCCL_IB_HCA==mlx5_0 sourced there fails
// ("mlx5_0 not found") or becomes a program's path.
func zshLiteral(value string) bool {
	return !strings.HasPrefix(value, "=") && !strings.Contains(value, ":=")
}

// srunSpecial are the characters srun's --export=NAME=value list treats
// as syntax: it splits at commas, and quotes swallow what follows them.
const srunSpecial = `,'"`

type exportJSON struct {
	Campaign    string      `json:"campaign"`
	SpaceHash   string      `json:"space_hash"`
	Collective  string      `json:"collective,omitempty"`
	Simulated   bool        `json:"simulated"`
	Fingerprint any         `json:"fingerprint"`
	Written     string      `json:"written"`
	LeftOut     []string    `json:"left_out"` // see Export.LeftOut; [] where none, a key scripts may read
	Ranges      []rangeJSON `json:"ranges"`
}

// rangeJSON is a range's outcome with the searched variables its choice
// leaves to NCCL (leftToNCCL), which a job's environment must not hold,
// as the env file unsets them.
type rangeJSON struct {
	results.RangeReport
	Unset []string `json:"unset"`
}

func (e Export) json() ([]file, error) {
	out := exportJSON{Campaign: e.Campaign.Name, SpaceHash: e.Campaign.SpaceHash,
		Simulated: len(e.Space.Simulator) > 0, Fingerprint: e.Fingerprint, Written: e.Now.UTC().Format(time.RFC3339), LeftOut: append([]string{}, e.LeftOut...)}
	if e.Space.Benchmark.Sweeps() && len(e.Space.Workload) == 0 {
		// Not a workload's several, each its range's, nor a command's or the DDP step's none.
		out.Collective = e.Space.Campaign.Collective
	}
	var errs, unmeasured []error
	for _, r := range e.Results {
		rep := rangeJSON{RangeReport: r.Report(e.Space), Unset: []string{}} // [], never null
		if r.Best == nil {
			// As the other formats fail for it: its empty env is no choice.
			unmeasured = append(unmeasured, fmt.Errorf("range %s: no completed trial measured it; nccl-tuned.json gives it no settings", r.Range.Name))
		} else {
			a, err := e.choice(r)
			if err != nil {
				errs = append(errs, fmt.Errorf("range %s: %w", r.Range.Name, err))
				continue
			}
			// The space's word, not the store's: what settings checked, less what it left out.
			env := e.Space.Env(a)
			rep.Env, rep.DDP = space.EnvMap(env), e.Space.Args(a)
			rep.Unset = append(rep.Unset, e.leftToNCCL(env)...)
		}
		out.Ranges = append(out.Ranges, rep)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	// Measured, not chosen: where validation kept NCCL's defaults and no
	// trial of them completed, a range has no chosen trial, and its
	// defaults are what it exports.
	if !measured(e.Results) {
		return nil, errors.New("no completed trial measured any range; nothing to export")
	}
	data, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return nil, err
	}
	// No file holds a control character (see Write): those json.Marshal
	// writes raw in the strings it quotes from the store are escaped.
	return []file{{"nccl-tuned.json", text.JSON(string(data)) + "\n", 0o644}}, errors.Join(unmeasured...)
}

// envName is a variable an export may set: NCCL's, and nccltune's plugin's own.
var envName = regexp.MustCompile(`^NCCL(TUNE)?_[A-Z0-9_]+$`)

// ExportLine renders one variable as a POSIX shell export, single-quoted so
// that no value is ever expanded or executed when the file is sourced.
func ExportLine(name, value string) (string, error) {
	if !envName.MatchString(name) {
		return "", fmt.Errorf("refusing to export variable name %q", clean(name))
	}
	if clean(value) != value {
		return "", fmt.Errorf("refusing to export %s: value holds a control character or a byte that is not UTF-8", name)
	}
	if err := libraryName(name, value); err != nil {
		return "", err
	}
	return "export " + name + "=" + ShellQuote(value), nil
}

// maxLibraryName is the longest plugin library name NCCL 2.26 and later
// read whole: openPluginLib copies NCCL_TUNER_PLUGIN (and the profiler's
// and env plugin's variables) into 255 bytes before dlopen, so a longer
// path, cut short, loads no plugin and the job runs on NCCL's own choices.
const maxLibraryName = 254

// libraryName refuses a plugin library name that NCCL would cut short.
func libraryName(name, value string) error {
	switch name {
	case "NCCL_TUNER_PLUGIN", "NCCL_PROFILER_PLUGIN", "NCCL_ENV_PLUGIN":
		if len(value) > maxLibraryName {
			return fmt.Errorf("%s is %d bytes long, and NCCL (2.26 and later) reads at most %d bytes of it, so it would load no plugin: use a shorter path (--out, --plugin)", name, len(value), maxLibraryName)
		}
	}
	return nil
}

// ShellQuote single-quotes s so that nothing inside is expanded, for a
// POSIX shell and for fish alike: a quote, and a backslash, are written
// outside the quotes, each escaped by a backslash. Inside single quotes fish
// reads \' and \\ as escapes, so a backslash left inside would escape
// the quote after it and let the rest of the value run as commands there.
func ShellQuote(s string) string {
	return "'" + shellQuoted.Replace(s) + "'"
}

var shellQuoted = strings.NewReplacer(`'`, `'\''`, `\`, `'\\'`)
