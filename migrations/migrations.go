// Package migrations embeds ql3's SQL schema migrations.
//
// Files are named NNNN_name.sql, applied in version order, one transaction
// each. The SHA-256 of each file's bytes is recorded by the runner (in the
// adapter that owns the database) and compared on every start: a database
// whose recorded checksum differs, or whose version is newer than the newest
// embedded one, is refused. This module has no dependencies beyond the
// standard library, so both the PostgreSQL and the SQLite adapters can use it.
package migrations

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
)

//go:embed postgres/*.sql
var postgresFS embed.FS

//go:embed sqlite/*.sql
var sqliteFS embed.FS

// Migration is one embedded schema step.
type Migration struct {
	Version  int
	Name     string
	SQL      string
	Checksum string // hex SHA-256 of SQL
}

// Postgres returns the PostgreSQL migrations in version order.
func Postgres() []Migration { return mustLoad(postgresFS, "postgres") }

// SQLite returns the SQLite migrations in version order.
func SQLite() []Migration { return mustLoad(sqliteFS, "sqlite") }

func mustLoad(fsys fs.FS, dir string) []Migration {
	ms, err := Load(fsys, dir)
	if err != nil {
		panic(err) // embedded files are fixed at build time; a test covers them
	}
	return ms
}

// Load reads NNNN_name.sql files from dir, checking that versions start at 1
// and have no gaps or duplicates.
func Load(fsys fs.FS, dir string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	var ms []Migration
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".sql") {
			continue
		}
		num, rest, ok := strings.Cut(strings.TrimSuffix(name, ".sql"), "_")
		if !ok || len(num) != 4 || rest == "" {
			return nil, fmt.Errorf("migration %s: name must be NNNN_name.sql", name)
		}
		v, err := strconv.Atoi(num)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: bad version", name)
		}
		body, err := fs.ReadFile(fsys, dir+"/"+name)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(body)
		ms = append(ms, Migration{Version: v, Name: rest, SQL: string(body), Checksum: hex.EncodeToString(sum[:])})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	for i, m := range ms {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migration versions must be 1..N without gaps: found %d at position %d", m.Version, i+1)
		}
	}
	return ms, nil
}
