package envstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/pgtest"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/envstore"
	"github.com/ql3/ql3/controlplane/postgres/publication"
	"github.com/ql3/ql3/core/env"
	"github.com/ql3/ql3/core/envseal"
	"github.com/ql3/ql3/core/errs"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

type fixture struct {
	db      *pgtest.DB
	store   *envstore.Store
	project string
	kek     envseal.KEK
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	db := pgtest.NewDB(t)
	admin := db.Pool(t, postgres.RoleAdmin)
	pub := publication.NewPublisher(admin, publication.PublisherOptions{})
	p, err := pub.PublishProject(context.Background(), controlplane.ProjectInput{Name: "envs"})
	if err != nil {
		t.Fatal(err)
	}
	kek, err := envseal.NewKEK()
	if err != nil {
		t.Fatal(err)
	}
	s := envstore.New(admin)
	if err := s.UnlockEnv(context.Background(), kek, "/k/one"); err != nil {
		t.Fatal(err)
	}
	return fixture{db: db, store: s, project: p.ID, kek: kek}
}

func wantCode(t *testing.T, err error, code, field string) {
	t.Helper()
	var e *errs.Error
	if !errors.As(err, &e) || e.Code != code || (field != "" && e.Field != field) {
		t.Fatalf("got %v, want %s on %q", err, code, field)
	}
}

func TestEntriesJoinInQingLongOrderAndNeverStorePlaintext(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	out, err := f.store.CreateEnvs(ctx, f.project, []controlplane.EnvInput{
		{Name: "A", Value: "first-secret-v1", Enabled: true},
		{Name: "A", Value: "second-secret-v2", Enabled: true},
		{Name: "A", Value: "disabled-secret", Enabled: false},
	})
	if err != nil {
		t.Fatal(err)
	}
	all, err := f.store.ExportEnvs(ctx, f.project, true)
	if err != nil {
		t.Fatal(err)
	}
	vars, err := env.Resolve(all)
	if err != nil {
		t.Fatal(err)
	}
	if len(vars) != 1 || vars[0].Value != "first-secret-v1&second-secret-v2" {
		t.Fatalf("resolved %+v", vars)
	}
	// Pinned first.
	pin := true
	if _, err := f.store.UpdateEnv(ctx, f.project, out[1].ID, controlplane.EnvPatch{Pinned: &pin}); err != nil {
		t.Fatal(err)
	}
	all, _ = f.store.ExportEnvs(ctx, f.project, true)
	if vars, _ = env.Resolve(all); vars[0].Value != "second-secret-v2&first-secret-v1" {
		t.Fatalf("after pin: %+v", vars)
	}
	su := f.db.Conn(t)
	var hits int
	if err := su.QueryRow(ctx, `SELECT count(*) FROM ql3.env_entries WHERE position('secret'::bytea in value_ct) > 0`).Scan(&hits); err != nil {
		t.Fatal(err)
	}
	if hits != 0 {
		t.Fatalf("%d rows hold a plaintext value", hits)
	}
	page, err := f.store.ListEnvs(ctx, f.project, controlplane.EnvFilter{Query: "a"})
	if err != nil || page.Total != 3 || page.Entries[0].Value != "" {
		t.Fatalf("list: %+v %v", page, err)
	}
	// Rename re-seals: the value still opens under the new name.
	nn := "B"
	if _, err := f.store.UpdateEnv(ctx, f.project, out[0].ID, controlplane.EnvPatch{Name: &nn}); err != nil {
		t.Fatal(err)
	}
	got, err := f.store.RevealEnv(ctx, f.project, out[0].ID)
	if err != nil || got.Value != "first-secret-v1" || got.Name != "B" {
		t.Fatalf("reveal: %+v %v", got, err)
	}
	var audits int
	if err := su.QueryRow(ctx, `SELECT count(*) FROM ql3.audit_log WHERE action = 'env.reveal'`).Scan(&audits); err != nil || audits != 1 {
		t.Fatalf("reveal audit lines: %d %v", audits, err)
	}
	if n, err := f.store.DeleteEnvs(ctx, f.project, []string{out[2].ID, "nope"}); err != nil || n != 1 {
		t.Fatalf("delete: %d %v", n, err)
	}
}

func TestLimitsRefuseAndStoreNothing(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for _, c := range []struct {
		in    controlplane.EnvInput
		field string
		says  string
	}{
		{controlplane.EnvInput{Name: "QL3_X", Value: "v"}, "name", "reserved"},
		{controlplane.EnvInput{Name: "A", Value: "a\x00b"}, "value", "NUL"},
		{controlplane.EnvInput{Name: "A", Value: strings.Repeat("x", env.MaxValueBytes+1)}, "value", "131072"},
	} {
		_, err := f.store.CreateEnvs(ctx, f.project, []controlplane.EnvInput{c.in})
		wantCode(t, err, errs.Invalid, c.field)
		if !strings.Contains(err.Error(), c.says) {
			t.Errorf("%v does not say %q", err, c.says)
		}
	}
	// 10,000 entries fit; the 10,001st is refused.
	batch := make([]controlplane.EnvInput, env.MaxEntries)
	for i := range batch {
		batch[i] = controlplane.EnvInput{Name: "N", Value: "v"}
	}
	if _, err := f.store.CreateEnvs(ctx, f.project, batch); err != nil {
		t.Fatal(err)
	}
	_, err := f.store.CreateEnvs(ctx, f.project, []controlplane.EnvInput{{Name: "N", Value: "v"}})
	wantCode(t, err, errs.Invalid, "entries")
	if !strings.Contains(err.Error(), "10000") {
		t.Errorf("%v does not name the limit", err)
	}
	page, err := f.store.ListEnvs(ctx, f.project, controlplane.EnvFilter{})
	if err != nil || page.Total != env.MaxEntries {
		t.Fatalf("total %d %v", page.Total, err)
	}
	_, err = f.store.ListEnvs(ctx, "00000000-0000-0000-0000-000000000000", controlplane.EnvFilter{})
	wantCode(t, err, errs.NotFound, "")
}

func TestWrongKeyNamesTheFileAndRotationKeepsServing(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	admin := f.db.Pool(t, postgres.RoleAdmin)
	if _, err := f.store.CreateEnvs(ctx, f.project, []controlplane.EnvInput{{Name: "A", Value: "rotate-me", Enabled: true}}); err != nil {
		t.Fatal(err)
	}
	other, _ := envseal.NewKEK()
	err := envstore.New(admin).UnlockEnv(ctx, other, "/etc/ql3/wrong.key")
	if err == nil || !strings.Contains(err.Error(), "/etc/ql3/wrong.key") || !strings.Contains(err.Error(), f.kek.ID()) {
		t.Fatalf("wrong key: %v", err)
	}
	locked := envstore.New(admin)
	_, err = locked.RevealEnv(ctx, f.project, "x")
	wantCode(t, err, errs.Unavailable, "")
	if !strings.Contains(err.Error(), envstore.KeyFlag) {
		t.Fatalf("locked store does not name %s: %v", envstore.KeyFlag, err)
	}
	// Rotation: add the new key (both open), retire the old one.
	next, _ := envseal.NewKEK()
	if err := f.store.AddEnvKey(ctx, next); err != nil {
		t.Fatal(err)
	}
	if err := envstore.New(admin).UnlockEnv(ctx, f.kek, "/k/one"); err != nil {
		t.Fatalf("old key during rotation: %v", err)
	}
	if n, err := f.store.RetireEnvKeys(ctx, next); err != nil || n != 1 {
		t.Fatalf("retire: %d %v", n, err)
	}
	if err := envstore.New(admin).UnlockEnv(ctx, f.kek, "/k/one"); err == nil {
		t.Fatal("the retired key still opens the store")
	}
	fresh := envstore.New(admin)
	if err := fresh.UnlockEnv(ctx, next, "/k/two"); err != nil {
		t.Fatal(err)
	}
	all, err := fresh.ExportEnvs(ctx, f.project, true)
	if err != nil || all[0].Value != "rotate-me" {
		t.Fatalf("after rotation: %+v %v", all, err)
	}
	// The replica that was running all along keeps serving.
	if _, err := f.store.ExportEnvs(ctx, f.project, true); err != nil {
		t.Fatal(err)
	}
}
