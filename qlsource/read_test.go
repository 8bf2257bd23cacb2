package qlsource

import (
	"context"
	"database/sql"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

const fixture = "../scripts/qlfixture/testdata/qinglong-2.21.0"

func copyFixture(t *testing.T) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "ql")
	err := filepath.WalkDir(fixture, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(fixture, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestReadFixture: the rows of QingLong's own schema as the import sees
// them.
func TestReadFixture(t *testing.T) {
	src, err := Read(context.Background(), copyFixture(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(src.Crontabs) != 18 || len(src.Envs) != 10 || len(src.Subscriptions) != 4 || len(src.Dependences) != 5 || len(src.ConfigExports) != 4 {
		t.Fatalf("rows: %d crontabs, %d envs, %d subscriptions, %d dependences, %d config exports",
			len(src.Crontabs), len(src.Envs), len(src.Subscriptions), len(src.Dependences), len(src.ConfigExports))
	}
	c1, c2, c4 := src.Crontabs[0], src.Crontabs[1], src.Crontabs[3]
	if c1.Name != "京东签到" || !slices.Equal(c1.Labels, []string{"京东", "daily"}) || !c1.AllowMultipleInstances {
		t.Errorf("crontab 1 (allow_multiple_instances NULL runs both, as runCron): %+v", c1)
	}
	if !slices.Equal(c2.ExtraSchedules, []string{"0 21 * * *", "30 12 * * 1-5"}) || !c2.AllowMultipleInstances {
		t.Errorf("crontab 2: %+v", c2)
	}
	if !c4.IsDisabled {
		t.Errorf("crontab 4 is disabled: %+v", c4)
	}
	e3, e4 := src.Envs[2], src.Envs[3]
	if !e3.Pinned || !e4.Disabled || e3.CreatedAtMs <= src.Envs[1].CreatedAtMs {
		t.Errorf("envs 3, 4: %+v %+v", e3, e4)
	}
	if s := src.Subscriptions[1]; !s.HasCredential || s.Type != "private-repo" {
		t.Errorf("subscription 2: %+v", s)
	}
	if len(src.Files) != 8 {
		t.Errorf("%d files", len(src.Files))
	}
}

// TestReadSeesTheWAL: a database in WAL mode with commits not yet
// checkpointed (a running QingLong) is read as committed, and the
// source's files are not changed.
func TestReadSeesTheWAL(t *testing.T) {
	dir := copyFixture(t)
	db, err := sql.Open("sqlite", filepath.Join(dir, DBFile))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, q := range []string{`PRAGMA journal_mode=WAL`, `PRAGMA wal_autocheckpoint=0`,
		`INSERT INTO Envs (name, value, status, position, isPinned, labels, createdAt, updatedAt) VALUES ('IN_WAL', 'x', 0, 1, 0, '[]', '2026-01-02 00:00:00.000 +00:00', '2026-01-02 00:00:00.000 +00:00')`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, DBFile+"-wal")); err != nil {
		t.Fatalf("no WAL: %v", err)
	}
	before := stat(t, dir)
	src, err := Read(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if last := src.Envs[len(src.Envs)-1]; last.Name != "IN_WAL" {
		t.Fatalf("the committed row in the WAL was not read: %+v", last)
	}
	if after := stat(t, dir); after != before {
		t.Fatalf("the source changed: %s → %s", before, after)
	}
}

func stat(t *testing.T, dir string) string {
	var out string
	for _, f := range []string{DBFile, DBFile + "-wal", DBFile + "-shm"} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		out += st.ModTime().String() + " " + st.Mode().String() + "; "
	}
	return out
}
