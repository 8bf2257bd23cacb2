package postgres_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/pgtest"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/migrations"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func history(t *testing.T, conn *pgx.Conn) []postgres.Record {
	t.Helper()
	st, err := postgres.CheckSchema(context.Background(), conn, migrations.Postgres())
	if err != nil {
		t.Fatalf("check schema: %v", err)
	}
	return st.Records
}

func TestMigrateTwiceIsNoOp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.Shared(t).NewEmptyDB(t)
	conn := db.Conn(t)

	if err := postgres.Readiness(ctx, conn); !errors.Is(err, controlplane.ErrSchemaBehind) {
		t.Fatalf("readiness before migrating = %v, want ErrSchemaBehind", err)
	}
	want := len(migrations.Postgres())
	res, err := postgres.Migrate(ctx, conn, postgres.MigrateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Applied) != want || res.Version != want {
		t.Fatalf("first migrate = %+v, want %d applied", res, want)
	}
	first := history(t, conn)
	for i, r := range first {
		m := migrations.Postgres()[i]
		if r.Version != m.Version || r.Name != m.Name || r.Checksum != m.Checksum || r.AppliedAtMs <= 0 {
			t.Errorf("recorded %+v, want version %d %s %s", r, m.Version, m.Name, m.Checksum)
		}
	}
	var owner string
	if err := conn.QueryRow(ctx, `SELECT pg_get_userbyid(relowner) FROM pg_class WHERE oid = 'ql3.runs'::regclass`).Scan(&owner); err != nil || owner != postgres.RoleMigrator {
		t.Errorf("ql3.runs owner = %q, %v; want %s", owner, err, postgres.RoleMigrator)
	}

	res, err = postgres.Migrate(ctx, conn, postgres.MigrateOptions{})
	if err != nil {
		t.Fatalf("second migrate: %v", err)
	}
	if len(res.Applied) != 0 || res.Version != want {
		t.Fatalf("second migrate = %+v, want nothing applied", res)
	}
	if again := history(t, conn); !slices.Equal(first, again) {
		t.Fatalf("history changed by a no-op migrate:\n%+v\n%+v", first, again)
	}
	if err := postgres.Readiness(ctx, conn); err != nil {
		t.Fatalf("readiness after migrating: %v", err)
	}
}

func TestMigrateRefusesTamperedChecksum(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := pgtest.NewDB(t).Conn(t)
	if _, err := conn.Exec(ctx, "UPDATE ql3.schema_migrations SET checksum = repeat('0', 64) WHERE version = 1"); err != nil {
		t.Fatal(err)
	}
	_, err := postgres.Migrate(ctx, conn, postgres.MigrateOptions{})
	assertSchemaError(t, "migrate", err, controlplane.ErrChecksumMismatch, 1)
	assertSchemaError(t, "readiness", postgres.Readiness(ctx, conn), controlplane.ErrChecksumMismatch, 1)
}

func TestMigrateRefusesNewerSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := pgtest.NewDB(t).Conn(t)
	newer := len(migrations.Postgres()) + 1
	if _, err := conn.Exec(ctx, `INSERT INTO ql3.schema_migrations (version, name, checksum, applied_at_ms)
		VALUES ($1, 'from_the_future', repeat('a', 64), 1)`, newer); err != nil {
		t.Fatal(err)
	}
	_, err := postgres.Migrate(ctx, conn, postgres.MigrateOptions{})
	assertSchemaError(t, "migrate", err, controlplane.ErrSchemaTooNew, newer)
	assertSchemaError(t, "readiness", postgres.Readiness(ctx, conn), controlplane.ErrSchemaTooNew, newer)
	// Nothing was touched: the future row is still the newest.
	st, _ := postgres.CheckSchema(ctx, conn, migrations.Postgres())
	if st.DatabaseVersion != newer {
		t.Fatalf("database version = %d, want %d", st.DatabaseVersion, newer)
	}
}

func assertSchemaError(t *testing.T, what string, err, kind error, version int) {
	t.Helper()
	var se *controlplane.SchemaError
	if !errors.Is(err, kind) || !errors.As(err, &se) || se.Version != version {
		t.Fatalf("%s: %v, want %v for migration %d", what, err, kind, version)
	}
	if errs.Code(err) != errs.Unavailable {
		t.Fatalf("%s: code %q, want %q", what, errs.Code(err), errs.Unavailable)
	}
}

// A failing migration leaves nothing behind: its transaction rolls back and
// the recorded version stays where it was; fixing it and re-running works.
func TestMigrateFailureRollsBackThatStep(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := pgtest.NewDB(t).Conn(t)
	base := migrations.Postgres()
	bad := append(slices.Clone(base), migrations.Migration{
		Version: len(base) + 1, Name: "broken",
		SQL:      "CREATE TABLE ql3.half_done (id int); SELECT * FROM ql3.no_such_table;",
		Checksum: "1111111111111111111111111111111111111111111111111111111111111111",
	})
	if _, err := postgres.Migrate(ctx, conn, postgres.MigrateOptions{Migrations: bad}); err == nil {
		t.Fatal("a broken migration was applied")
	}
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT to_regclass('ql3.half_done') IS NOT NULL").Scan(&exists); err != nil || exists {
		t.Fatalf("half_done exists = %v, %v; the failed step was not rolled back", exists, err)
	}
	if err := postgres.Readiness(ctx, conn); err != nil {
		t.Fatalf("readiness of the untouched schema: %v", err)
	}

	// A later migration with a table the grant matrix does not know is
	// refused at the grant step, so no table ever runs with unknown privileges.
	unknown := append(slices.Clone(base), migrations.Migration{
		Version: len(base) + 1, Name: "ungranted",
		SQL:      "CREATE TABLE ql3.ungranted (id int);",
		Checksum: "2222222222222222222222222222222222222222222222222222222222222222",
	})
	if _, err := postgres.Migrate(ctx, conn, postgres.MigrateOptions{Migrations: unknown}); err == nil {
		t.Fatal("a table without grants was accepted")
	}
}

// Replicas start at the same time: concurrent migrators serialise on the
// advisory lock and every version is applied exactly once.
func TestMigrateConcurrent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.Shared(t).NewEmptyDB(t)
	pool := db.Pool(t, "")
	var wg sync.WaitGroup
	results := make([]postgres.MigrateResult, 3)
	errsOut := make([]error, 3)
	for i := range results {
		wg.Go(func() { results[i], errsOut[i] = postgres.Migrate(ctx, pool, postgres.MigrateOptions{}) })
	}
	wg.Wait()
	applied := 0
	for i := range results {
		if errsOut[i] != nil {
			t.Fatalf("migrator %d: %v", i, errsOut[i])
		}
		applied += len(results[i].Applied)
	}
	if applied != len(migrations.Postgres()) {
		t.Fatalf("versions applied in total = %d, want %d", applied, len(migrations.Postgres()))
	}
	if err := postgres.Readiness(ctx, pool); err != nil {
		t.Fatal(err)
	}
}

// A user that is neither superuser nor a member of ql3_migrator gets a typed
// role-setup error, not a half-migrated database.
func TestMigrateNeedsMigratorMembership(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := pgtest.Shared(t)
	db := c.NewEmptyDB(t)
	su := db.Conn(t)
	role := "outsider_" + db.Name[2:]
	role = role[:min(len(role), 63)]
	if _, err := su.Exec(ctx, "CREATE ROLE "+pgx.Identifier{role}.Sanitize()+" LOGIN"); err != nil {
		t.Fatal(err)
	}
	// Roles are cluster-wide: make sure they exist so only membership is missing.
	if _, err := postgres.Migrate(ctx, pgtest.Shared(t).NewEmptyDB(t).Conn(t), postgres.MigrateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := su.Exec(ctx, "GRANT CREATE ON DATABASE "+pgx.Identifier{db.Name}.Sanitize()+" TO "+pgx.Identifier{role}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	outsider, err := pgx.Connect(ctx, c.DSN(db.Name, role))
	if err != nil {
		t.Fatal(err)
	}
	defer outsider.Close(ctx)
	_, err = postgres.Migrate(ctx, outsider, postgres.MigrateOptions{})
	if !errors.Is(err, controlplane.ErrRoleSetup) && postgres.SQLState(err) != postgres.SQLStateInsufficientPriv {
		t.Fatalf("migrate as outsider: %v, want ErrRoleSetup or permission denied", err)
	}
	if err := postgres.Readiness(ctx, su); err == nil {
		t.Fatal("database reports ready after a refused migration")
	}
}

// The production path without a superuser: a deploy user that is a member
// of ql3_migrator and may CREATE in the database migrates it; before the
// roles exist, a user without CREATEROLE gets ErrRoleSetup. Roles are
// cluster-wide, so this test has a cluster of its own.
func TestMigrateAsNonSuperuser(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := pgtest.NewCluster(t)
	db := c.NewEmptyDB(t)
	su := db.Conn(t)
	for _, stmt := range []string{
		"CREATE ROLE deployer LOGIN NOSUPERUSER NOCREATEROLE",
		"GRANT CREATE ON DATABASE " + pgx.Identifier{db.Name}.Sanitize() + " TO deployer",
	} {
		if _, err := su.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	deployer, err := pgx.Connect(ctx, c.DSN(db.Name, "deployer"))
	if err != nil {
		t.Fatal(err)
	}
	defer deployer.Close(ctx)
	if _, err := postgres.Migrate(ctx, deployer, postgres.MigrateOptions{}); !errors.Is(err, controlplane.ErrRoleSetup) {
		t.Fatalf("migrate without the roles and without CREATEROLE: %v, want ErrRoleSetup", err)
	}

	// A DBA creates the roles (here: by migrating another database) and
	// makes the deploy user a member of the owner role.
	if _, err := postgres.Migrate(ctx, c.NewEmptyDB(t).Conn(t), postgres.MigrateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := su.Exec(ctx, "GRANT "+postgres.RoleMigrator+" TO deployer"); err != nil {
		t.Fatal(err)
	}
	res, err := postgres.Migrate(ctx, deployer, postgres.MigrateOptions{})
	if err != nil {
		t.Fatalf("migrate as a member of %s: %v", postgres.RoleMigrator, err)
	}
	if len(res.Applied) != len(migrations.Postgres()) {
		t.Fatalf("applied %v", res.Applied)
	}
	var owner string
	if err := su.QueryRow(ctx, "SELECT nspowner::regrole::text FROM pg_namespace WHERE nspname = 'ql3'").Scan(&owner); err != nil || owner != postgres.RoleMigrator {
		t.Fatalf("schema owner %q, %v", owner, err)
	}
	if err := postgres.Readiness(ctx, su); err != nil {
		t.Fatal(err)
	}
}
