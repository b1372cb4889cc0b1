// Package ddp is the PyTorch DistributedDataParallel step benchmark: a Python
// script shipped inside nccltune, and the parser of the result line each rank
// prints. Many users care about their training step rather than a
// micro-benchmark; this tunes NCCL (and DDP's own knobs) on a real DDP step.
package ddp

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"

	"github.com/nccltune/nccltune/internal/text"
)

// Script is the benchmark's source.
//
//go:embed ddp_step.py
var Script []byte

// Result is one rank's measurement.
type Result struct {
	Rank           int     `json:"rank"`
	World          int     `json:"world"`
	Backend        string  `json:"backend"`
	Device         string  `json:"device"`
	Torch          string  `json:"torch"`
	NCCL           string  `json:"nccl"`
	Params         int64   `json:"params"`
	AllReduceBytes int64   `json:"allreduce_bytes"`
	Steps          int     `json:"steps"`
	StepMsMean     float64 `json:"step_ms_mean"`
	StepMsP50      float64 `json:"step_ms_p50"`
	StepMsP95      float64 `json:"step_ms_p95"`
}

// Error is a failure the script reported about itself.
type Error struct {
	Kind    string `json:"kind"` // no_torch, no_cuda, no_rendezvous, oom, nccl, wrong, error
	Message string `json:"message"`
}

func (e Error) Error() string { return e.Kind + ": " + e.Message }

// ErrNoResult means no rank printed a result line.
var ErrNoResult = errors.New("no NCCLTUNE_DDP result line in the output")

const (
	resultTag = "NCCLTUNE_DDP "
	errorTag  = "NCCLTUNE_DDP_ERROR "
)

// Parse reads the ranks' lines and returns rank 0's result, whose step time
// is the objective (none of rank 0 is an error). A reported error is returned as an Error. Results that
// are not of one run (a rank twice, ranks of different worlds, a rank
// outside its world: processes that each ran alone, or output of another
// run) are an error.
func Parse(output []byte) (Result, error) {
	var results []Result
	var firstErr, badResult error
	sc := bufio.NewScanner(bytes.NewReader(output))
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	sc.Split(text.Lines(1 << 20)) // an over-long line is passed over, not the end of the output
	for sc.Scan() {
		// Launchers may prefix lines ("[1,0]<stdout>:", "0: "), and ranks writing
		// at once can run two results into one line: read every tagged object.
		for _, obj := range tagged(sc.Text(), errorTag) {
			var e Error
			if firstErr == nil && json.Unmarshal(obj, &e) == nil && e.Kind != "" {
				firstErr = e
			}
		}
		for _, obj := range tagged(sc.Text(), resultTag) {
			r, err := readResult(obj)
			if err != nil && badResult == nil {
				badResult = err
			}
			if err != nil || r.Steps < 1 || !(r.StepMsMean > 0) {
				continue
			}
			results = append(results, r)
		}
	}
	switch {
	case firstErr != nil:
		return Result{}, firstErr
	case badResult != nil:
		return Result{}, badResult
	case len(results) == 0:
		return Result{}, ErrNoResult
	}
	best, seen := results[0], map[int]bool{}
	for _, r := range results {
		switch {
		case r.World != best.World:
			return Result{}, fmt.Errorf("ranks %d and %d report worlds of %d and %d ranks: the results are not of one run", best.Rank, r.Rank, best.World, r.World)
		case r.World > 0 && (r.Rank < 0 || r.Rank >= r.World):
			return Result{}, fmt.Errorf("a result of rank %d in a world of %d ranks", r.Rank, r.World)
		case seen[r.Rank]:
			return Result{}, fmt.Errorf("rank %d reports twice: the results are not of one run", r.Rank)
		}
		seen[r.Rank] = true
		if r.Rank == 0 {
			best = r
		}
	}
	if !seen[0] {
		// Rank 0's line is missing or was passed over (no step, or a NaN,
		// which Python's json writes and JSON cannot read): another rank's
		// time is not the objective.
		return Result{}, fmt.Errorf("no result of rank 0, whose step time is the objective (rank %d reported one)", results[0].Rank)
	}
	return best, nil
}

// readResult reads one result object. One that does not read is an error,
// not passed over (which could leave another rank's result in rank 0's
// place): a value of the wrong kind, a number beyond a float64 (1e400, or
// 1e-400, which encoding/json reads as 0) or its field, and a field given
// twice, which encoding/json would take the last of (matching keys as it
// does, in any case).
func readResult(obj json.RawMessage) (Result, error) {
	members, err := text.JSONMembers(obj)
	if err != nil {
		return Result{}, fmt.Errorf("a result that is no JSON object: %.200s", obj)
	}
	fields := reflect.TypeFor[Result]()
	seen := map[int]bool{}
	for _, m := range members {
		if v := string(m.Value); strings.ContainsAny(v[:1], "-0123456789") { // a number
			if _, err := text.Decimal(v); err != nil {
				return Result{}, fmt.Errorf("a result whose %s does not read: %v", m.Key, err)
			}
		}
		for i := range fields.NumField() {
			if strings.EqualFold(m.Key, fields.Field(i).Tag.Get("json")) {
				if seen[i] {
					return Result{}, fmt.Errorf("a result that gives %s twice: %.200s", fields.Field(i).Tag.Get("json"), obj)
				}
				seen[i] = true
			}
		}
	}
	var r Result
	if err := json.Unmarshal(obj, &r); err != nil {
		return Result{}, fmt.Errorf("a result that does not read (%v): %.200s", err, obj)
	}
	return r, nil
}

// tagged returns the JSON object after each occurrence of tag in line.
func tagged(line, tag string) []json.RawMessage {
	var out []json.RawMessage
	for {
		i := strings.Index(line, tag)
		if i < 0 {
			return out
		}
		line = line[i+len(tag):]
		var obj json.RawMessage
		if json.NewDecoder(strings.NewReader(line)).Decode(&obj) == nil {
			out = append(out, obj)
		}
	}
}

// WriteScript writes the script into dir (created if needed) and returns its
// path. For a multi-node launch dir must be on a filesystem every node sees.
// Campaigns share dir (the default one, or a shared script_dir), each
// writing the script as it starts: the file is named by its content, so that
// another nccltune's version has a file of its own, and is written whole
// under a temporary name and renamed into place, so that no trial starting
// on it reads it cut short.
//
// Every trial runs the script as this user: dir, and each folder above it,
// must be one nobody else can change (see private); the path returned is
// dir's own, past any link, which its owner could point elsewhere later.
func WriteScript(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("ddp script: %w", err)
	}
	dir, err := filepath.EvalSymlinks(dir)
	if err == nil {
		dir, err = filepath.Abs(dir)
	}
	if err == nil {
		err = private(dir)
	}
	if err != nil {
		return "", fmt.Errorf("ddp script: %w (give benchmark.script_dir, a folder of your own)", err)
	}
	sum := sha256.Sum256(Script)
	path := filepath.Join(dir, "nccltune_ddp_step_"+hex.EncodeToString(sum[:6])+".py")
	if data, err := os.ReadFile(path); err == nil && bytes.Equal(data, Script) && private(path) == nil {
		return path, nil
	}
	f, err := os.CreateTemp(dir, ".nccltune_ddp_step_*.py")
	if err != nil {
		return "", fmt.Errorf("ddp script: %w", err)
	}
	_, err = f.Write(Script)
	err = errors.Join(err, f.Chmod(0o644), f.Close())
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("ddp script: %w", err)
	}
	return path, nil
}

// private reports an error where someone other than this user (or root)
// could replace or change path, a file or a folder: it, or a folder above
// it, belongs to another user or may be written by others (but for a
// sticky folder, such as /tmp, where only an entry's owner may replace it).
// The default folder's name in /tmp is known in advance: another user who
// made it first, or made the script in it, had their code run as this one.
func private(path string) error {
	for p := path; ; p = filepath.Dir(p) {
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		switch {
		case !ok:
			return fmt.Errorf("%s: no owner to check", p)
		case int(st.Uid) != os.Getuid() && st.Uid != 0:
			return fmt.Errorf("%s belongs to another user (uid %d), who could replace the script every trial runs", p, st.Uid)
		case fi.Mode().Perm()&0o022 != 0 && !(fi.IsDir() && fi.Mode()&os.ModeSticky != 0):
			return fmt.Errorf("%s may be written by others (%v), who could replace the script every trial runs", p, fi.Mode())
		}
		if filepath.Dir(p) == p {
			return nil
		}
	}
}
