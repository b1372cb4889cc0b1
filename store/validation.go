package store

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/nccltune/nccltune/runner/nccllog"
)

// ValidationRun is one launch made while validating: one arm (NCCL's defaults,
// or a trial's configuration) in one round.
type ValidationRun struct {
	Round       int
	Arm         string // "default" or "trial N"
	Env         []string
	State       State // Complete or Failed
	Failure     string
	Scores      map[string]float64 // per range
	Unconfirmed []string           // variables NCCL's log did not show it read
	Info        NCCLInfo           // what its output showed of NCCL's log
}

// NCCLInfo is what a complete validation run's output showed of NCCL's log.
type NCCLInfo int

const (
	// InfoUnknown: a run that failed, or one stored before nccltune recorded it.
	InfoUnknown NCCLInfo = iota
	// InfoLines: its output held NCCL INFO lines.
	InfoLines
	// InfoNone: its output held none (NCCL logged to NCCL_DEBUG_FILE, or
	// not at all), so it confirms no setting, as a trial's (nccllog.Log.Debug).
	InfoNone
)

// Validation is the verdict on one range's chosen configuration.
type Validation struct {
	Batch       int64 // all ranges validated together share a batch
	Range       string
	Candidate   int    // the trial whose configuration was validated (-1: none, a composed one)
	Config      string // the configuration validated, by its key (see space.Space.Key)
	Rounds      int
	DefaultMean float64 // geometric mean busbw over the rounds; NaN if none succeeded
	TunedMean   float64
	Gain        float64 // relative, from paired rounds; NaN if not measurable
	CILow       float64 // 95% confidence interval of the gain
	CIHigh      float64
	Verdict     string // "tuned" or "default"
	Reason      string
	Created     time.Time
}

// SaveValidation stores runs and verdicts of a batch in one transaction:
// validation stores each run as it ends, and the verdicts once it ends,
// so that one stopped or killed keeps the runs it made, and no verdict but
// those on configurations that failed in them.
func (s *Store) SaveValidation(campaignID, batch int64, runs []ValidationRun, vs []Validation) error {
	if err := s.writable(); err != nil {
		return err
	}
	tx, err := s.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, r := range runs {
		cols, err := encode(r.Env, r.Scores, r.Unconfirmed)
		if err != nil {
			return fmt.Errorf("store %s: validation run: %w", s.path, err)
		}
		if _, err := tx.Exec(`INSERT INTO validation_runs(campaign_id, batch, round, arm, env, state, failure, scores, unconfirmed, nccl_info)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, campaignID, batch,
			r.Round, r.Arm, cols[0], r.State, r.Failure, cols[1], cols[2], r.Info); err != nil {
			return fmt.Errorf("store %s: validation run: %w", s.path, err)
		}
	}
	for _, v := range vs {
		if _, err := tx.Exec(`INSERT INTO validations(campaign_id, batch, range_name, candidate, rounds, default_mean, tuned_mean,
			gain, ci_low, ci_high, verdict, reason, created_at, config) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, campaignID, v.Batch,
			v.Range, v.Candidate, v.Rounds, nullable(v.DefaultMean), nullable(v.TunedMean), nullable(v.Gain),
			nullable(v.CILow), nullable(v.CIHigh), v.Verdict, v.Reason, v.Created.UTC().Format(time.RFC3339Nano), v.Config); err != nil {
			return fmt.Errorf("store %s: validation: %w", s.path, err)
		}
	}
	return tx.Commit()
}

// Validations returns a campaign's verdicts, oldest first: in the order
// they were stored, not by batch, which is a clock reading, and the clocks
// of the hosts that resume a campaign may disagree.
func (s *Store) Validations(campaignID int64) (_ []Validation, err error) {
	defer s.located(&err)
	rows, err := s.db.Query(`SELECT batch, range_name, candidate, config, rounds, default_mean, tuned_mean, gain, ci_low, ci_high,
		verdict, reason, created_at FROM validations WHERE campaign_id = ? ORDER BY rowid`, campaignID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Validation
	for rows.Next() {
		var v Validation
		var dm, tm, g, lo, hi sql.NullFloat64
		var created string
		if err := rows.Scan(&v.Batch, &v.Range, &v.Candidate, &v.Config, &v.Rounds, &dm, &tm, &g, &lo, &hi, &v.Verdict, &v.Reason, &created); err != nil {
			return nil, err
		}
		v.DefaultMean, v.TunedMean, v.Gain, v.CILow, v.CIHigh = orNaN(dm), orNaN(tm), orNaN(g), orNaN(lo), orNaN(hi)
		v.Created, _ = time.Parse(time.RFC3339Nano, created)
		if err := checkValidation(v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// ValidationBatches returns the batches of a campaign's validation runs, in
// the order stored: those of a validation that was stopped, which has no
// verdicts, too.
func (s *Store) ValidationBatches(campaignID int64) (_ []int64, err error) {
	defer s.located(&err)
	rows, err := s.db.Query(`SELECT batch FROM validation_runs WHERE campaign_id = ? GROUP BY batch ORDER BY MIN(rowid)`, campaignID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var b int64
		if err := rows.Scan(&b); err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, rows.Err()
}

// AllValidationRuns returns every run of a campaign's validations, batch
// by batch in the order stored, those of a validation that was stopped
// included.
func (s *Store) AllValidationRuns(campaignID int64) ([]ValidationRun, error) {
	batches, err := s.ValidationBatches(campaignID)
	if err != nil {
		return nil, err
	}
	var out []ValidationRun
	for _, b := range batches {
		runs, err := s.ValidationRuns(campaignID, b)
		if err != nil {
			return nil, err
		}
		out = append(out, runs...)
	}
	return out, nil
}

// ValidationRuns returns the runs of one batch, in order.
func (s *Store) ValidationRuns(campaignID, batch int64) (_ []ValidationRun, err error) {
	defer s.located(&err)
	info := "nccl_info"
	if s.version < infoSince {
		info = "0"
	}
	rows, err := s.db.Query(`SELECT round, arm, env, state, failure, scores, unconfirmed, `+info+` FROM validation_runs
		WHERE campaign_id = ? AND batch = ? ORDER BY rowid`, campaignID, batch)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []ValidationRun
	for rows.Next() {
		var r ValidationRun
		var env, scores, unconfirmed string
		var failure sql.NullString
		if err := rows.Scan(&r.Round, &r.Arm, &env, &r.State, &failure, &scores, &unconfirmed, &r.Info); err != nil {
			return nil, err
		}
		r.Failure = failure.String
		for _, f := range []struct {
			src string
			dst any
		}{{env, &r.Env}, {scores, &r.Scores}, {unconfirmed, &r.Unconfirmed}} {
			if err := json.Unmarshal([]byte(f.src), f.dst); err != nil {
				return nil, fmt.Errorf("validation run: corrupt JSON column: %w", err)
			}
		}
		if err := checkValidationRun(r); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

func nullable(v float64) any {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return v
}

func orNaN(v sql.NullFloat64) float64 {
	if !v.Valid {
		return math.NaN()
	}
	return v.Float64
}

// SaveDecisions records what NCCL decided per operation and size under one
// configuration (by its key, see space.Space.Key), replacing what was.
func (s *Store) SaveDecisions(campaignID int64, config string, ds []nccllog.Decision) error {
	if err := s.writable(); err != nil {
		return err
	}
	cols, err := encode(ds)
	if err != nil {
		return err
	}
	if _, err := s.db.Exec(`INSERT OR REPLACE INTO decisions(campaign_id, config, decisions) VALUES (?, ?, ?)`, campaignID, config, cols[0]); err != nil {
		return fmt.Errorf("store %s: decisions: %w", s.path, err)
	}
	return nil
}

// Decisions returns, per configuration key, what NCCL decided under it.
func (s *Store) Decisions(campaignID int64) (_ map[string][]nccllog.Decision, err error) {
	defer s.located(&err)
	rows, err := s.db.Query(`SELECT config, decisions FROM decisions WHERE campaign_id = ?`, campaignID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string][]nccllog.Decision{}
	for rows.Next() {
		var config, text string
		var ds []nccllog.Decision
		if err := rows.Scan(&config, &text); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(text), &ds); err != nil {
			return nil, fmt.Errorf("decisions: corrupt JSON column: %w", err)
		}
		out[config] = ds
	}
	return out, rows.Err()
}
