package importer

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/ql3/ql3/qlsource"
)

// Scale of the import figures (issue #25): 2,000 tasks, 5,000 env rows,
// 3,000 scripts, added to a copy of the committed fixture (QingLong's own
// schema) the way scripts/qlfixture's --scale adds them.
const (
	benchTasks   = 2000
	benchEnvs    = 5000
	benchScripts = 3000
)

// scaledSource is the fixture with the bulk rows and files added.
func scaledSource(b *testing.B) string {
	b.Helper()
	from := copyTree(b, fixture)
	db, err := sql.Open("sqlite", filepath.Join(from, qlsource.DBFile))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	tx, err := db.Begin()
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < benchTasks; i++ {
		if _, err := tx.Exec(`INSERT INTO Crontabs (name, command, schedule, status, isDisabled, isSystem, isPinned, labels, createdAt, updatedAt)
            VALUES (?, ?, ?, 1, 0, 0, 0, '[]', '2026-01-01 00:00:00.000 +00:00', '2026-01-01 00:00:00.000 +00:00')`,
			fmt.Sprintf("bulk %d", i), fmt.Sprintf("task bulk/s%05d.js", i*3/2), fmt.Sprintf("%d %d * * *", i%60, i%24)); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i < benchEnvs; i++ {
		if _, err := tx.Exec(`INSERT INTO Envs (name, value, status, position, isPinned, labels, createdAt, updatedAt)
            VALUES (?, ?, 0, ?, 0, '[]', '2026-01-01 00:00:00.000 +00:00', '2026-01-01 00:00:00.000 +00:00')`,
			fmt.Sprintf("BULK_%d", i%500), fmt.Sprintf("value-%d", i), 4500000000000000-i); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	bulk := filepath.Join(from, "scripts", "bulk")
	if err := os.MkdirAll(bulk, 0o755); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < benchScripts; i++ {
		if err := os.WriteFile(filepath.Join(bulk, fmt.Sprintf("s%05d.js", i)), fmt.Appendf(nil, "// cron: %d %d * * *\nconsole.log(%d);\n", i%60, i%24, i), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return from
}

// BenchmarkInspectScale: one inspect (snapshot, read, walk and hash,
// plan, digest) of the scaled source.
func BenchmarkInspectScale(b *testing.B) {
	from := scaledSource(b)
	ctx := context.Background()
	for b.Loop() {
		p, _, err := Inspect(ctx, from, zone)
		if err != nil {
			b.Fatal(err)
		}
		if p.Counts["tasks"]["lossless"] < benchTasks {
			b.Fatalf("counts %v", p.Counts["tasks"])
		}
	}
}

// BenchmarkApplyScale: one apply (inspect again, stage, the transaction,
// the files moved) of the scaled source into a fresh edge.
func BenchmarkApplyScale(b *testing.B) {
	from := scaledSource(b)
	ctx := context.Background()
	p, _, err := Inspect(ctx, from, zone)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		b.StopTimer()
		e := openEdge(b, b.TempDir())
		b.StartTimer()
		res, err := e.im.Apply(ctx, from, zone, p.Digest, "bench")
		if err != nil {
			b.Fatal(err)
		}
		if res.Tasks < benchTasks || res.Files < benchScripts {
			b.Fatalf("result %d tasks %d files", res.Tasks, res.Files)
		}
		b.StopTimer()
		e.store.Close()
		b.StartTimer()
	}
}
