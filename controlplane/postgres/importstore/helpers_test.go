package importstore_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/importer"
	"github.com/ql3/ql3/controlplane/pgtest"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/envstore"
	"github.com/ql3/ql3/controlplane/postgres/importstore"
	"github.com/ql3/ql3/controlplane/postgres/publication"
	"github.com/ql3/ql3/controlplane/postgres/scriptstore"
	"github.com/ql3/ql3/controlplane/postgres/substore"
	"github.com/ql3/ql3/controlplane/subrun"
	"github.com/ql3/ql3/core/envseal"
)

// fixture is the committed QingLong 2.21.0 data directory
// (scripts/qlfixture).
const fixture = "../../../scripts/qlfixture/testdata/qinglong-2.21.0"

const zone = "Asia/Shanghai"

// What the fixture's plan creates on the cluster (scripts/qlfixture/gen.js;
// the subscription is manual here).
const (
	fixtureTasks = 11 // 8 lossless + 3 requires_shell_compatibility
	fixtureEnvs  = 9  // 6 rows + 3 config.sh drafts
	fixtureFiles = 7
	fixtureDeps  = 4
	fixtureSubs  = 1 // its pull task is one more task of the project (subrun.SystemLabels)
)

// copyTree copies the fixture into a fresh folder with fixed modes (git
// checkouts differ in umask) and fixed mtimes.
func copyTree(t testing.TB, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "ql")
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(out, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	stamp := time.Date(2025, 6, 1, 8, 0, 0, 0, time.UTC)
	_ = filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
		if err == nil {
			_ = os.Chtimes(p, stamp, stamp)
		}
		return nil
	})
	return dst
}

// treeState is every entry's path, type, mode, size, mtime and content
// digest: what "unchanged" means for the source.
func treeState(t testing.TB, root string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		st, err := os.Lstat(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		line := fmt.Sprintf("%s %v %d %d", rel, st.Mode(), st.Size(), st.ModTime().UnixNano())
		if st.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			line += " " + hex.EncodeToString(sum[:])
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// cluster is one test database with a project, the stores an import
// writes (env store unlocked) and the importer over them.
type cluster struct {
	db      *pgtest.DB
	admin   *pgxpool.Pool
	pub     *publication.Publisher
	envs    *envstore.Store
	scripts *scriptstore.Store
	store   *importstore.Store
	im      *importer.Importer
	project string
	kek     envseal.KEK
}

func newCluster(t testing.TB) *cluster {
	t.Helper()
	db := pgtest.NewDB(t)
	admin := db.Pool(t, postgres.RoleAdmin)
	c := openCluster(t, admin, envseal.KEK{})
	c.db = db
	p, err := c.pub.PublishProject(context.Background(), controlplane.ProjectInput{Name: "imported"})
	if err != nil {
		t.Fatal(err)
	}
	c.project = p.ID
	return c
}

// openCluster wires the stores over admin; a zero kek makes a new one.
func openCluster(t testing.TB, admin *pgxpool.Pool, kek envseal.KEK) *cluster {
	t.Helper()
	if kek.ID() == "" {
		var err error
		if kek, err = envseal.NewKEK(); err != nil {
			t.Fatal(err)
		}
	}
	pub := publication.NewPublisher(admin, publication.PublisherOptions{})
	envs := envstore.New(admin)
	if err := envs.UnlockEnv(context.Background(), kek, "/k/test"); err != nil {
		t.Fatal(err)
	}
	st := importstore.New(admin, pub, envs)
	return &cluster{admin: admin, pub: pub, envs: envs, scripts: scriptstore.New(admin), store: st,
		im: &importer.Importer{Store: st, SubTasks: &subrun.Service{Subs: substore.New(admin), Tasks: pub}}, kek: kek}
}

func (c *cluster) count(t testing.TB, sql string) int {
	t.Helper()
	var n int
	if err := c.admin.QueryRow(context.Background(), sql, c.project).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// assertCounts checks the project's live tasks, triggers, env entries,
// script files and ledger rows (and that dependency records come and go
// with the ledger row: fixtureDeps with it, none without).
func (c *cluster) assertCounts(t testing.TB, tasks, triggers, envs, files, ledger int) {
	t.Helper()
	got := []int{
		c.count(t, `SELECT count(*) FROM ql3.tasks WHERE project_id = $1 AND deleted_at_ms IS NULL`),
		c.count(t, `SELECT count(*) FROM ql3.triggers WHERE project_id = $1`),
		c.count(t, `SELECT count(*) FROM ql3.env_entries WHERE project_id = $1`),
		c.count(t, `SELECT count(*) FROM ql3.script_entries WHERE project_id = $1 AND kind = 'file'`),
		c.count(t, `SELECT count(*) FROM ql3.import_ledger WHERE project_id = $1`),
	}
	deps := 0
	if ledger > 0 {
		deps = fixtureDeps
	}
	got = append(got, c.count(t, `SELECT count(*) FROM ql3.dependencies WHERE project_id = $1`))
	want := []int{tasks, triggers, envs, files, ledger, deps}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("tasks, triggers, envs, files, ledger rows, dependencies = %v, want %v", got, want)
	}
}
