package sqlite

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/migrations"
	"github.com/ql3/ql3/worker/clock"
)

func migration(version int, name, body string) migrations.Migration {
	sum := sha256.Sum256([]byte(body))
	return migrations.Migration{Version: version, Name: name, SQL: body, Checksum: hex.EncodeToString(sum[:])}
}

func openWith(t *testing.T, path string, ms []migrations.Migration) (*Store, error) {
	t.Helper()
	s, err := Open(context.Background(), path, Options{Clock: clock.NewFake(t0), Migrations: ms})
	if err == nil {
		t.Cleanup(func() { s.Close() })
	}
	return s, err
}

func appliedVersions(t *testing.T, s *Store) []int {
	t.Helper()
	rows, err := s.reader.Query(`SELECT version FROM schema_migrations ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

func TestMigrateTwiceIsNoOp(t *testing.T) {
	path := filepath.Join(t.TempDir(), "edge.db")
	s1, err := openWith(t, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	task := mustTask(t, s1, "keep", shellSpec("true"))
	s1.Close()
	s2, err := openWith(t, path, nil)
	if err != nil {
		t.Fatalf("second open: %v", err)
	}
	if got, want := appliedVersions(t, s2), len(migrations.SQLite()); len(got) != want {
		t.Fatalf("applied %v, want %d versions", got, want)
	}
	if _, err := s2.GetTask(context.Background(), task.ID); err != nil {
		t.Fatalf("data lost across re-open: %v", err)
	}
}

func TestMigrateAppliesInOrderAndIncrementally(t *testing.T) {
	path := filepath.Join(t.TempDir(), "edge.db")
	v1 := []migrations.Migration{migration(1, "a", "CREATE TABLE a (x INTEGER) STRICT;")}
	s, err := openWith(t, path, v1)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	v2 := append(v1, migration(2, "b", "CREATE TABLE b (y INTEGER REFERENCES a (x)) STRICT;"))
	s, err = openWith(t, path, v2)
	if err != nil {
		t.Fatal(err)
	}
	if got := appliedVersions(t, s); len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Fatalf("applied %v, want [1 2]", got)
	}
}

func TestMigrateRefuses(t *testing.T) {
	base := []migrations.Migration{
		migration(1, "a", "CREATE TABLE a (x INTEGER) STRICT;"),
		migration(2, "b", "CREATE TABLE b (x INTEGER) STRICT;"),
	}
	cases := []struct {
		name    string
		later   []migrations.Migration
		message string
	}{
		{"tampered checksum", []migrations.Migration{base[0], migration(2, "b", "CREATE TABLE b (x TEXT) STRICT;")}, "checksum"},
		{"newer version", base[:1], "newer than this binary"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "edge.db")
			s, err := openWith(t, path, base)
			if err != nil {
				t.Fatal(err)
			}
			s.Close()
			_, err = openWith(t, path, tc.later)
			if err == nil {
				t.Fatal("open succeeded, want a refusal")
			}
			if errs.Code(err) != errs.Unavailable || !strings.Contains(err.Error(), tc.message) {
				t.Fatalf("err = %v (code %s), want unavailable mentioning %q", err, errs.Code(err), tc.message)
			}
		})
	}
}

func TestMigrationFailureRollsBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "edge.db")
	bad := []migrations.Migration{
		migration(1, "a", "CREATE TABLE a (x INTEGER) STRICT;"),
		migration(2, "broken", "CREATE TABLE half (x INTEGER) STRICT; INSERT INTO nowhere VALUES (1);"),
	}
	if _, err := openWith(t, path, bad); err == nil {
		t.Fatal("open succeeded with a broken migration")
	}
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE name = 'half'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatal("a failed migration left its table behind")
	}
	if err := db.QueryRow(`SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("schema_migrations has %d rows, want 1", n)
	}
}

func TestOpenSetsPragmas(t *testing.T) {
	s := openTest(t, clock.NewFake(t0))
	var mode string
	if err := s.writer.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode = %q, %v", mode, err)
	}
	var fk, busy int
	if err := s.writer.QueryRow(`PRAGMA foreign_keys`).Scan(&fk); err != nil || fk != 1 {
		t.Fatalf("foreign_keys = %d, %v", fk, err)
	}
	if err := s.reader.QueryRow(`PRAGMA busy_timeout`).Scan(&busy); err != nil || busy != 5000 {
		t.Fatalf("busy_timeout = %d, %v", busy, err)
	}
	if _, err := s.reader.Exec(`DELETE FROM projects`); err == nil {
		t.Fatal("the reader pool accepted a write")
	}
}
