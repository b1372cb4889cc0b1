package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"slices"
	"syscall"
)

// migrations[i] takes the schema from version i to i+1 (PRAGMA user_version).
// Append only: a released migration never changes.
var migrations = []string{
	`CREATE TABLE campaigns (
		id         INTEGER PRIMARY KEY,
		name       TEXT NOT NULL UNIQUE,
		space_hash TEXT NOT NULL,
		space      BLOB NOT NULL,
		budget     INTEGER NOT NULL,
		sampler    TEXT NOT NULL,
		seed       INTEGER NOT NULL,
		created_at TEXT NOT NULL
	);
	CREATE TABLE trials (
		id             INTEGER PRIMARY KEY,
		campaign_id    INTEGER NOT NULL REFERENCES campaigns(id) ON DELETE CASCADE,
		number         INTEGER NOT NULL,
		state          TEXT NOT NULL,
		params         TEXT NOT NULL,
		env            TEXT NOT NULL,
		command        TEXT,
		started_at     TEXT NOT NULL,
		finished_at    TEXT,
		exit_code      INTEGER,
		failure_kind   TEXT,
		failure_reason TEXT,
		output         BLOB,
		scores         TEXT
	);
	CREATE INDEX trials_by_campaign ON trials(campaign_id, number);
	CREATE TABLE results (
		trial_id    INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,
		seq         INTEGER NOT NULL,
		size        INTEGER NOT NULL,
		count       INTEGER NOT NULL,
		type        TEXT NOT NULL,
		redop       TEXT NOT NULL,
		root        INTEGER NOT NULL,
		oop_time_us REAL NOT NULL,
		oop_algbw   REAL NOT NULL,
		oop_busbw   REAL NOT NULL,
		oop_wrong   INTEGER NOT NULL,
		ip_time_us  REAL NOT NULL,
		ip_algbw    REAL NOT NULL,
		ip_busbw    REAL NOT NULL,
		ip_wrong    INTEGER NOT NULL,
		PRIMARY KEY (trial_id, seq)
	);`,
	// What NCCL logged: the variables it read and the transport it chose.
	`ALTER TABLE trials ADD COLUMN nccl_log TEXT;`,
	// Validation: the chosen configuration of each range re-measured against
	// the defaults, interleaved, and the verdict drawn from those runs.
	`CREATE TABLE validation_runs (
		campaign_id INTEGER NOT NULL REFERENCES campaigns(id) ON DELETE CASCADE,
		batch       INTEGER NOT NULL,
		round       INTEGER NOT NULL,
		arm         TEXT NOT NULL,
		env         TEXT NOT NULL,
		state       TEXT NOT NULL,
		failure     TEXT,
		scores      TEXT,
		unconfirmed TEXT
	);
	CREATE TABLE validations (
		campaign_id  INTEGER NOT NULL REFERENCES campaigns(id) ON DELETE CASCADE,
		batch        INTEGER NOT NULL,
		range_name   TEXT NOT NULL,
		candidate    INTEGER NOT NULL,
		rounds       INTEGER NOT NULL,
		default_mean REAL,
		tuned_mean   REAL,
		gain         REAL,
		ci_low       REAL,
		ci_high      REAL,
		verdict      TEXT NOT NULL,
		reason       TEXT NOT NULL,
		created_at   TEXT NOT NULL
	);`,
	// Why a campaign stopped before its budget, if it did.
	`ALTER TABLE campaigns ADD COLUMN stopped TEXT NOT NULL DEFAULT '';`,
	// What a trial ran on (NCCL version, GPUs, nodes, network), read once from its output.
	`ALTER TABLE trials ADD COLUMN fingerprint TEXT;`,
	// Who holds the writer lock (an flock on the database file), for the message that refuses a second writer.
	`CREATE TABLE writer (id INTEGER PRIMARY KEY CHECK (id = 1), pid INTEGER NOT NULL, host TEXT NOT NULL, since TEXT NOT NULL);`,
	// What NCCL decided per operation and size (algorithm, protocol, channels) under a configuration, from its TUNING log.
	`CREATE TABLE decisions (
		campaign_id INTEGER NOT NULL REFERENCES campaigns(id) ON DELETE CASCADE,
		config      TEXT NOT NULL,
		decisions   TEXT NOT NULL,
		PRIMARY KEY (campaign_id, config)
	);`,
	// Which collective a result row is of: a workload's trial measures several.
	`ALTER TABLE results ADD COLUMN collective TEXT NOT NULL DEFAULT '';`,
	// The configuration a verdict is on, by its key: the job's of a workload is composed, no trial's.
	`ALTER TABLE validations ADD COLUMN config TEXT NOT NULL DEFAULT '';`,
	// Which group of nodes (launcher.groups) ran a trial, and its nodes where known.
	`ALTER TABLE trials ADD COLUMN node_group INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE trials ADD COLUMN nodes TEXT;`,
	// The node count of a campaign that is one of its space's campaign.scales (0: it is not).
	`ALTER TABLE campaigns ADD COLUMN scale INTEGER NOT NULL DEFAULT 0;`,
	// How the run that started a campaign asked it to end, which resume keeps: simplify or not,
	// and the validation's rounds (0: none). A campaign stored before it was resumed with the
	// flags' defaults, which it keeps.
	`ALTER TABLE campaigns ADD COLUMN simplify INTEGER NOT NULL DEFAULT 1;
	ALTER TABLE campaigns ADD COLUMN validate_rounds INTEGER NOT NULL DEFAULT 5;`,
	// Which phase of the campaign ran a trial: the search, or the simplification after it. Before,
	// the number told them apart (the simplification's from the budget up), which a budget raised
	// after the simplification broke. An older store's trials are classed by that rule against the
	// stored budget, the last run's: right unless a run raised it past trials the simplification had
	// run, which that nccltune counted as the search's from then on, as they stay.
	`ALTER TABLE trials ADD COLUMN phase TEXT NOT NULL DEFAULT 'search';
	UPDATE trials SET phase = 'simplification'
		WHERE number >= (SELECT budget FROM campaigns WHERE campaigns.id = trials.campaign_id);`,
	// The campaign.patience and benchmark.timeout (in nanoseconds) of the latest run or resume,
	// which may differ from the stored space's, the first run's. NULL: a campaign stored before
	// they were kept, which its stored space's describe.
	`ALTER TABLE campaigns ADD COLUMN latest_patience INTEGER;
	ALTER TABLE campaigns ADD COLUMN latest_timeout_ns INTEGER;`,
	// The shortest benchmark.timeout (in nanoseconds) the campaign's trials ran under, which
	// caps the iteration count: a later, longer one must not raise it. NULL: a campaign stored
	// before it was kept, whose latest timeout and stored space's are the ones known.
	`ALTER TABLE campaigns ADD COLUMN shortest_timeout_ns INTEGER;`,
	// Whether a validation run's output held NCCL INFO lines (NCCLInfo; 0: unknown, a run stored before).
	`ALTER TABLE validation_runs ADD COLUMN nccl_info INTEGER NOT NULL DEFAULT 0;`,
}

// SchemaVersion is the schema version this build writes.
var SchemaVersion = len(migrations)

// checkSchema reads the file's schema version and checks, before any SQL
// of the file's own can run, that its schema is what the migrations make
// at that version: an object nccltune never makes (a view or trigger, run
// by every read of the view or write that fires it; an index, a generated
// column or a CHECK, whose expression the integrity check evaluates for
// every row) could run for as long as it was written to, and every command
// ran it. Both are read in one transaction: a writer migrating meanwhile
// changes them together.
func checkSchema(db *sql.DB) (int, error) {
	version, have, err := readSchema(db)
	if err != nil {
		return 0, err
	}
	if err := unknown(version, have); err != nil {
		return 0, err
	}
	want, err := madeSchema(version)
	if err != nil {
		return 0, err
	}
	for _, o := range have {
		if i := slices.IndexFunc(want, func(w object) bool { return w.kind == o.kind && w.name == o.name }); i < 0 {
			return 0, fmt.Errorf("its schema holds %s %q, which nccltune never makes: %w", o.kind, o.name, ErrTampered)
		} else if want[i] != o {
			return 0, fmt.Errorf("its %s %q is not as nccltune makes it at schema version %d: %w", o.kind, o.name, version, ErrTampered)
		}
	}
	if len(have) < len(want) {
		return 0, fmt.Errorf("it lacks tables or indexes of schema version %d: %w", version, ErrTampered)
	}
	return version, nil
}

// readSchema reads the schema version and the schema of the database db
// opens, in one transaction.
func readSchema(db *sql.DB) (int, []object, error) {
	tx, err := db.Begin()
	if err != nil {
		return 0, nil, err
	}
	defer tx.Rollback()
	var version int
	if err := tx.QueryRow("PRAGMA user_version").Scan(&version); err != nil {
		return 0, nil, err
	}
	have, err := schemaOf(tx)
	return version, have, err
}

// notOurs begins the refusal of another program's database.
const notOurs = "not an nccltune store: a SQLite database of another program"

// unknown refuses a database of schema version version and schema have
// that is another program's, or a store of a version no nccltune, or not
// this one, wrote (see knownVersion).
func unknown(version int, have []object) error {
	current, err := madeSchema(SchemaVersion)
	if err != nil {
		return err
	}
	if anotherProgramsSchema(version, have, current) {
		return fmt.Errorf("%s (schema version %d, tables not nccltune's); nccltune makes a store only in a new or empty file, and leaves this one as it is", notOurs, version)
	}
	return knownVersion(version)
}

// probe refuses another program's SQLite database at path, or a newer
// nccltune's store, before SQLite opens it as a store, through a
// connection that writes nothing: the writer's, refusing it, checkpointed
// the program's -wal into its file on closing (and deleted the log), and
// any connection through the log wrote its read mark into the -shm, or
// made one. Where a -wal lies beside the
// file, its schema is read through the log with the -shm read-only, which
// SQLite reads even where the program was killed; where that fails (no
// -shm), from the file alone: a store's tables are made before its first
// log (migrate, then WAL mode), so one whose file holds none beside a log
// is another program's. Where nothing reads, it decides nothing: the open
// that follows says why.
func probe(path string) error {
	wal, err := os.Stat(path + "-wal")
	logged := err == nil && wal.Size() > 0
	read := func(immutable bool, extra string) (int, []object, error) {
		dsn, err := uri(path, true, immutable)
		if err != nil {
			return 0, nil, err
		}
		db, err := sql.Open("sqlite", dsn+extra)
		if err != nil {
			return 0, nil, err
		}
		defer db.Close()
		return readSchema(db)
	}
	if logged {
		if version, have, err := read(false, "&readonly_shm=1"); err == nil {
			return unknown(version, have)
		}
	}
	version, have, err := read(true, "")
	switch {
	case err != nil:
		return nil
	case logged && version == 0 && len(have) == 0:
		return fmt.Errorf("%s: its tables are in its write-ahead log (-wal) alone, which nccltune never makes, and its -shm, without which SQLite reads that log only by changing it, is missing; nccltune leaves it as it is", notOurs)
	}
	return unknown(version, have)
}

// anotherProgramsSchema reports whether a database of schema version
// version whose schema is have is another program's (a mistyped --store),
// by its tables, not its version, which many programs set: at version 0,
// any schema (nccltune's tables would be written into it); at a version
// newer than this nccltune's, one that lacks any object of current, which
// a newer nccltune's holds (the migrations only add); at another, one
// holding no object nccltune makes.
func anotherProgramsSchema(version int, have, current []object) bool {
	switch {
	case version == 0:
		return len(have) > 0
	case version > SchemaVersion:
		return slices.ContainsFunc(current, func(c object) bool { return !named(have, c) })
	}
	return !slices.ContainsFunc(have, func(o object) bool { return named(current, o) })
}

// named reports whether objs hold an object of o's kind and name.
func named(objs []object, o object) bool {
	return slices.ContainsFunc(objs, func(x object) bool { return x.kind == o.kind && x.name == o.name })
}

// object is an entry of a database's schema (sqlite_master).
type object struct{ kind, name, table, sql string }

// schemaOf is the schema of the database q reads, SQLite's statistics
// (ANALYZE's, which any user may run) left out.
func schemaOf(q interface {
	Query(string, ...any) (*sql.Rows, error)
}) ([]object, error) {
	rows, err := q.Query(`SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_master
		WHERE NOT (type = 'table' AND name IN ('sqlite_stat1', 'sqlite_stat4'))`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []object
	for rows.Next() {
		var o object
		if err := rows.Scan(&o.kind, &o.name, &o.table, &o.sql); err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, rows.Err()
}

// madeSchema is the schema the migrations make up to version, as SQLite
// writes it (ALTER TABLE rewrites a table's statement), in a database in
// memory.
func madeSchema(version int) ([]object, error) {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // one database: each connection to :memory: has its own
	for _, m := range migrations[:version] {
		if _, err := db.Exec(m); err != nil {
			return nil, err
		}
	}
	return schemaOf(db)
}

// latestSince is the schema version that keeps a campaign's latest run's
// settings (latest_patience, latest_timeout_ns), and shortestSince the one
// that keeps the shortest timeout of its runs (shortest_timeout_ns).
const latestSince, shortestSince = 14, 15

// infoSince is the schema version that keeps whether a validation run's
// output held NCCL INFO lines (nccl_info); a reader reads an older store's
// runs as InfoUnknown.
const infoSince = 16

// readableFrom is the oldest schema version a reader reads: one that lacks
// only what a reader can do without, latest_patience, latest_timeout_ns
// and shortest_timeout_ns, read as NULL (a campaign stored before they
// were kept, which its stored space and its latest run describe), and
// nccl_info, read as InfoUnknown. A reader
// never upgrades a store, and refused the previous nccltune's until a
// resume did, which a campaign it still runs, or a store this user may not
// write, does not allow.
const readableFrom = latestSince - 1

// checkVersion is a reader's check, of the version checkSchema read: it
// reads a store of the current schema, or of one from readableFrom.
func checkVersion(version int) error {
	switch {
	case version == 0:
		// An empty file is the store a campaign starting has made and not
		// yet given its schema (or one killed before it could).
		return errors.New("holds no campaign yet (an empty file: a campaign starting on it makes its tables)")
	case version < readableFrom:
		return fmt.Errorf("schema version %d is older than this nccltune's (%d); `nccltune resume` upgrades it", version, SchemaVersion)
	}
	return nil
}

// knownVersion refuses a schema version no nccltune wrote: a newer one,
// and a negative one (PRAGMA user_version is any 32-bit integer), which an
// edited or damaged store may hold and the migrations would be indexed by.
func knownVersion(version int) error {
	switch {
	case version > SchemaVersion:
		return fmt.Errorf("schema version %d is newer than this nccltune understands (%d); upgrade nccltune", version, SchemaVersion)
	case version < 0:
		return fmt.Errorf("schema version %d: %w", version, ErrTampered)
	}
	return nil
}

// userVersion is the schema version the file holds now.
func (s *Store) userVersion() (int, error) {
	var version int
	err := s.db.QueryRow("PRAGMA user_version").Scan(&version)
	return version, err
}

func (s *Store) migrate() error {
	db := s.db
	version, err := s.userVersion()
	if err != nil {
		return err
	}
	if version == SchemaVersion {
		return nil
	}
	// Under the writer lock: an older nccltune's campaign running on the
	// store writes on as its own schema says, and would leave the columns
	// an upgrade adds at their defaults (its simplification's trials read
	// as the search's). Waited for where no live writer is recorded: another
	// process upgrading it, or a dead writer's trials ending (LockWriter).
	if err := s.flock(busyTimeout, func() bool { known, runs := s.recordedWriter(); return !known || !runs }); err != nil {
		// Two runs starting on one store at once: the other upgraded it
		// while this one waited, and runs its campaign on it now, so this
		// one is a second writer, not one beside an older schema.
		if now, vErr := s.userVersion(); vErr == nil && now == SchemaVersion {
			return err
		}
		return fmt.Errorf("schema version %d is not upgraded under a running campaign: %w", version, err)
	}
	defer syscall.Flock(int(s.lock.Fd()), syscall.LOCK_UN)
	// The version is read again under the write lock (BEGIN IMMEDIATE,
	// which waits out the busy timeout for it): two nccltune processes
	// opening one new or older store at once both migrated it, and the
	// second failed halfway ("table campaigns already exists").
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return err
	}
	if err := migrateLocked(ctx, conn); err != nil {
		conn.ExecContext(ctx, "ROLLBACK")
		return err
	}
	_, err = conn.ExecContext(ctx, "COMMIT")
	return err
}

// migrateLocked takes the schema to the current version, in the write
// transaction migrate holds.
func migrateLocked(ctx context.Context, conn *sql.Conn) error {
	var version int
	if err := conn.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return err
	}
	if err := knownVersion(version); err != nil {
		return err
	}
	for v := version; v < SchemaVersion; v++ {
		if _, err := conn.ExecContext(ctx, migrations[v]); err != nil {
			return fmt.Errorf("migrate schema to version %d: %w", v+1, err)
		}
	}
	_, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", SchemaVersion))
	return err
}
