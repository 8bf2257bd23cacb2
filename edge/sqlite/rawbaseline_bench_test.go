package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkRawSingleRowTx is the baseline of scripts/bench/edge.sh (issue
// #28): what SQLite itself does on this machine with the edge's writer
// pragmas (WAL, synchronous NORMAL, busy_timeout, journal_size_limit,
// cache_size, temp_store; BEGIN IMMEDIATE) and one connection — one single-row INSERT
// per transaction, nothing else. Admissions are reported as a ratio to it.
func BenchmarkRawSingleRowTx(b *testing.B) {
	ctx := context.Background()
	db, err := sql.Open("sqlite", dsn(filepath.Join(b.TempDir(), "raw.db"), []string{"busy_timeout(5000)", "foreign_keys(1)",
		"journal_mode(WAL)", "synchronous(NORMAL)", "journal_size_limit(8388608)", "cache_size(-512)", "temp_store(MEMORY)"}, "immediate", "rwc"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, `CREATE TABLE t (id INTEGER PRIMARY KEY, at INTEGER NOT NULL, body TEXT NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	ins, err := db.PrepareContext(ctx, `INSERT INTO t (at, body) VALUES (?, ?)`)
	if err != nil {
		b.Fatal(err)
	}
	defer ins.Close()
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := tx.StmtContext(ctx, ins).ExecContext(ctx, int64(i), "queued"); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "tx/s")
}
