package export

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// job writes nccl-job.env, the one configuration of a workload's whole job:
// the environment of every collective, NCCL_ALGO and NCCL_PROTO in NCCL's
// per-collective syntax where the collectives chose differently.
func (e Export) job() ([]file, error) {
	sp := e.Space
	if len(sp.Workload) == 0 {
		return nil, errors.New("job: the space has no [[workload]] (write one with `nccltune profile`); for one collective's ranges, export env files or a tuner plugin's rules")
	}
	if !measured(e.Job.Ranges) {
		return nil, errors.New("job: no completed trial measured the workload; nothing to export")
	}
	a := e.Job.Assignment(sp)
	if err := e.check(a); err != nil {
		return nil, fmt.Errorf("job: the job's configuration %w: the store was altered", err)
	}
	env := sp.Env(a)
	perCollective := strings.Contains(strings.Join(env, " "), ":")
	if major, minor, ok := version(e.Fingerprint.NCCL); perCollective && ok && (major < 2 || major == 2 && minor < 24) {
		return nil, fmt.Errorf("job: the collectives want different NCCL_ALGO/NCCL_PROTO, which NCCL reads per collective from 2.24; this campaign ran NCCL %s", e.Fingerprint.NCCL)
	}
	verdict := "not validated: run `nccltune validate`"
	if v := e.Job.Validation; v != nil {
		verdict = "validated: " + v.Reason
		if v.Verdict != "tuned" {
			verdict = "validated: NCCL's defaults kept (" + v.Reason + ")"
			a, env = nil, sp.Env(nil)
		}
	}
	head := e.header("nccltune: NCCL settings for one job of the workload of "+strconv.Itoa(len(sp.Workload))+" entries", verdict)
	def, tuned := e.Job.Times()
	var totalDef, totalTuned float64
	for i, r := range e.Job.Ranges {
		totalDef, totalTuned = totalDef+def[i], totalTuned+tuned[i]
		head = append(head, fmt.Sprintf("%s: %.4g s of communication with NCCL's defaults, %.4g s tuned (%s)", r.Range.Name, def[i], tuned[i], r.Describe()))
	}
	head = append(head, fmt.Sprintf("the job: %.4g s of communication with NCCL's defaults, %.4g s predicted tuned", totalDef, totalTuned))
	if perCollective {
		head = append(head, "NCCL_ALGO/NCCL_PROTO per collective: needs NCCL 2.24 or later")
	}
	var b strings.Builder
	b.WriteString(comment(append(head, "use: . ./nccl-job.env"), "# "))
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		line, err := ExportLine(name, value)
		if err != nil {
			return nil, err
		}
		b.WriteString(line + "\n")
	}
	return []file{{"nccl-job.env", b.String(), 0o644}}, nil
}

// version reads NCCL's major and minor version from "2.28.3+cuda13.0".
func version(v string) (major, minor int, ok bool) {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	return major, minor, err1 == nil && err2 == nil
}
