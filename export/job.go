package export

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/nccltune/nccltune/internal/text"
	"github.com/nccltune/nccltune/results"
	"github.com/nccltune/nccltune/runner/nccllog"
	"github.com/nccltune/nccltune/space"
)

// job writes nccl-job.env, the one configuration of a workload's whole job
// (see jobFile); with campaign.scales, one for each node count that the
// export holds (nccl-job-8n.env), each its own campaign's.
func (e Export) job() ([]file, error) {
	all := append([]Export{e}, e.Scales...)
	slices.SortFunc(all, func(a, b Export) int { return a.Campaign.Scale - b.Campaign.Scale })
	var files []file
	var errs []error
	for _, x := range all {
		f, err := x.jobFile(jobEnvName(jobBases["job"], x, len(all)))
		switch {
		case err != nil && len(all) > 1:
			errs = append(errs, fmt.Errorf("campaign %s: %w", clean(x.Campaign.Name), err))
		case err != nil:
			errs = append(errs, err)
		default:
			files = append(files, f)
		}
	}
	return files, errors.Join(errs...)
}

// jobFile writes the one configuration of a workload's whole job, as file
// name: the environment of every collective, NCCL_ALGO and NCCL_PROTO in
// NCCL's per-collective syntax where the collectives chose differently.
// What it writes is what validation judged: the job's configuration, or,
// where validation rejected it, NCCL's defaults.
func (e Export) jobFile(name string) (file, error) {
	sp := e.Space
	if len(sp.Workload) == 0 {
		return file{}, errors.New("job: the space has no [[workload]] (write one with `nccltune profile`); for one collective's ranges, export env files or a tuner plugin's rules")
	}
	if !measured(e.Job.Ranges) {
		return file{}, errors.New("job: no completed trial measured the workload; nothing to export")
	}
	if err := e.check(e.Job.Assignment(sp)); err != nil {
		return file{}, fmt.Errorf("job: the job's configuration %w: the store was altered", err)
	}
	if e.Job.Validation == nil && e.Job.Composed(sp) {
		return file{}, fmt.Errorf("job: NCCL's defaults failed in the search, so each collective's best brings its own environment, and the job's configuration, composed of them, ran in no trial, which validation measures as a whole (or export each range's env file, --format env): %w", ErrUnvalidated)
	}
	a := e.Job.Exported(sp)
	if err := e.perCollectiveReadable(a); err != nil {
		return file{}, fmt.Errorf("job: %w", err)
	}
	// A workload of one collective NCCL takes a prefix of (beside alltoall
	// or sendrecv) searches NCCL_ALGO and NCCL_PROTO whole.
	var notes []string
	if colls := sp.AlgorithmCollectives(); len(colls) == 1 {
		if names := e.wholeParts(colls[0], a); len(names) > 0 {
			notes = append(notes, e.wholeNote(colls[0], names))
			e.scope(colls[0], a)
		}
	}
	env, perCollective := jobEnv(sp, a)
	verdict := "not validated: run `" + cmp.Or(e.Validate, "nccltune validate") + "`"
	if v := e.Job.Validation; v != nil {
		verdict = "validated: " + v.Reason
		if e.Job.DefaultsKept() {
			verdict = "validation kept NCCL's defaults (" + v.Reason + "): this file sets only what [fixed] pins"
		}
	}
	what := "nccltune: NCCL settings for one job of the workload of " + strconv.Itoa(len(sp.Workload)) + " entries"
	if e.Campaign.Scale > 0 {
		what += fmt.Sprintf(", on %d node%s", e.Campaign.Scale, map[bool]string{false: "s"}[e.Campaign.Scale == 1])
	}
	head := e.header(what, verdict)
	def, exported := e.Job.Times()
	var totalDef, totalExp float64
	for i, r := range e.Job.Ranges {
		totalDef, totalExp = totalDef+def[i], totalExp+exported[i]
		choice := "NCCL's own choice"
		if e.Job.Uses(r) && !e.Job.DefaultsKept() {
			choice = fmt.Sprintf("trial %d's choice", r.Best.Number)
			if !math.IsNaN(r.DefaultScore) {
				choice += fmt.Sprintf(", %+.1f%% in the search", text.Bounded(100*r.Gain()))
			}
		}
		head = append(head, fmt.Sprintf("%s: %s, %s as exported (%s)", r.Range.Name, withDefaults(sp, def[i], r.DefaultFailed != nil), Time(sp, exported[i]), choice))
	}
	head = append(head, fmt.Sprintf("the job: %s, %s predicted as exported", withDefaults(sp, totalDef, slices.ContainsFunc(e.Job.Ranges, func(r results.RangeResult) bool { return r.DefaultFailed != nil })), Time(sp, totalExp)))
	for _, name := range perCollective {
		head = append(head, name+" per collective: needs NCCL "+nccllog.PerCollectiveSince+" or later")
	}
	head = append(head, notes...)
	var b strings.Builder
	b.WriteString(comment(append(head, "use: . ./"+name), "# "))
	if err := e.writeSourced(&b, env); err != nil {
		return file{}, err
	}
	return file{name, b.String(), 0o644}, nil
}

// withDefaults says how long communication takes with NCCL's defaults, or
// that they failed or were not measured.
func withDefaults(sp *space.Space, t float64, failed bool) string {
	switch {
	case !math.IsNaN(t):
		return Time(sp, t) + " of communication with NCCL's defaults"
	case failed:
		return "NCCL's defaults failed in the search"
	}
	return "NCCL's defaults not measured"
}

// Time writes a predicted time of sp's job in its unit, or says it was not
// measured (never NaN).
func Time(sp *space.Space, t float64) string {
	if math.IsNaN(t) || math.IsInf(t, 0) {
		return "not measured"
	}
	return fmt.Sprintf("%.4g %s", t, sp.TimeUnit())
}

// jobEnv is the environment of a job's configuration a, a variable set
// per collective (NCCL_ALGO[allreduce], ...) in NCCL's per-collective
// syntax, as every trial and validation ran it, whether or not the
// collectives agree: a plain value would set NCCL's other collectives too,
// which the workload never measured, and some it leaves no algorithm
// (NVLS or Tree for a broadcast). perCollective names those variables.
func jobEnv(sp *space.Space, a space.Assignment) (env, perCollective []string) {
	for _, name := range space.PerCollective {
		if slices.ContainsFunc(sp.Params, func(p space.Param) bool {
			v, ok := a[p.Name]
			return ok && v != space.Unset && p.Var == name && p.Collective != ""
		}) {
			perCollective = append(perCollective, name)
		}
	}
	return sp.Env(a), perCollective
}

// perCollectiveReadable refuses a configuration that sets a variable per
// collective, for a campaign measured on an NCCL that does not read NCCL's
// per-collective syntax (before 2.24): its trials did not run what they
// claim, whatever value is written.
func (e Export) perCollectiveReadable(a space.Assignment) error {
	if yes, known := nccllog.AtLeast(e.Fingerprint.NCCL, 2, 24); yes || !known {
		return nil
	}
	for _, p := range e.Space.Params {
		if v, set := a[p.Name]; set && v != space.Unset && p.Collective != "" {
			return fmt.Errorf("%s is set per collective, in the syntax NCCL reads from %s; this campaign ran NCCL %s, which does not read it, so its trials did not measure that setting", p.Name, nccllog.PerCollectiveSince, e.Fingerprint.NCCL)
		}
	}
	return nil
}
