package store

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestOnlyWritersCheckTheWholeFile: a writer, whose writes build on what
// the store holds, runs PRAGMA integrity_check, and refuses a store whose
// index lacks a row; a reader, for which the check took seconds on a store
// of a GB (status under watch), checks the pages it reads as it reads
// them, and opens it. TestDamagedStores: a damaged page it reads fails it.
func TestOnlyWritersCheckTheWholeFile(t *testing.T) {
	_, path, _ := threeTrials(t)
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	// A row added while the index is hidden from SQLite is missing from it.
	var root int
	var stmt string
	if err := db.QueryRow("SELECT rootpage, sql FROM sqlite_master WHERE name = 'trials_by_campaign'").Scan(&root, &stmt); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"PRAGMA writable_schema = ON",
		"DELETE FROM sqlite_master WHERE name = 'trials_by_campaign'",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	if db, err = sql.Open("sqlite", path); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"INSERT INTO trials (campaign_id, number, state, params, env, started_at) VALUES (1, 3, 'complete', '{}', '[]', '2026-01-01T00:00:00Z')",
		"PRAGMA writable_schema = ON",
		fmt.Sprintf("INSERT INTO sqlite_master VALUES ('index', 'trials_by_campaign', 'trials', %d, '%s')", root, strings.ReplaceAll(stmt, "'", "''")),
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	if s, err := Open(path); err == nil || !strings.Contains(err.Error(), "integrity check failed") {
		t.Errorf("a writer opened a store whose index lacks a row: %v", err)
		if err == nil {
			s.Close()
		}
	}
	s, err := OpenReader(path)
	if err != nil {
		t.Fatalf("a reader refused a store whose pages and records are sound: %v", err)
	}
	s.Close()
}

// BenchmarkCheck measures the whole-file checks on a store of about 100 MB
// (2000 trials of 48 KiB of output and 25 result rows each): integrity_check,
// which a writer runs, and quick_check, which costs nearly as much (both
// read every page), against what status reads (README: "The store is
// checked").
func BenchmarkCheck(b *testing.B) {
	path := filepath.Join(b.TempDir(), "big.db")
	s, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	tx, err := s.db.Begin()
	if err != nil {
		b.Fatal(err)
	}
	tx.Exec(`INSERT INTO campaigns (id, name, space_hash, space, budget, sampler, seed, created_at) VALUES (1, 'c', 'h', 'x', 2000, 'tpe', 1, '2026-01-01T00:00:00Z')`)
	for n := range 2000 {
		if _, err := tx.Exec(`INSERT INTO trials (id, campaign_id, number, state, params, env, started_at, output) VALUES (?, 1, ?, 'complete', '{}', '[]', '2026-01-01T00:00:00Z', randomblob(49152))`, n+1, n); err != nil {
			b.Fatal(err)
		}
		for seq := range 25 {
			if _, err := tx.Exec(`INSERT INTO results VALUES (?, ?, 8, 2, 'float', 'sum', -1, 5, 1, 1, 0, 5, 1, 1, 0, 'all_reduce')`, n+1, seq); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	s.Close()
	for _, check := range []string{"integrity_check", "quick_check"} {
		b.Run(check, func(b *testing.B) {
			s, err := OpenReader(path)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			for b.Loop() {
				var ok string
				if err := s.db.QueryRow("PRAGMA " + check).Scan(&ok); err != nil || ok != "ok" {
					b.Fatal(ok, err)
				}
			}
		})
	}
	// What status does: open, and read the campaign's trials (not their output).
	b.Run("status", func(b *testing.B) {
		for b.Loop() {
			s, err := OpenReader(path)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := s.Trials(1); err != nil {
				b.Fatal(err)
			}
			s.Close()
		}
	})
}
