package sqlite

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ql3/ql3/core/env"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/edge/envcrypt"
	"github.com/ql3/ql3/worker/clock"
)

// unlocked opens a store at dir/edge.db and unlocks its env store with
// dir/env.key (created on first use).
func unlocked(t testing.TB, dir string) (*Store, *envcrypt.KEK) {
	t.Helper()
	s := openAt(t, filepath.Join(dir, "edge.db"), clock.NewFake(t0))
	path := filepath.Join(dir, envcrypt.DefaultKeyFileName)
	kek, err := envcrypt.LoadKeyFile(path)
	if errors.Is(err, envcrypt.ErrNoKeyFile) {
		kek, err = envcrypt.CreateKeyFile(path)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := s.UnlockEnv(context.Background(), kek); err != nil {
		t.Fatal(err)
	}
	return s, kek
}

func mustEnvs(t testing.TB, s *Store, in ...edge.EnvInput) []env.Entry {
	t.Helper()
	out, err := s.CreateEnvs(context.Background(), in, "test")
	if err != nil {
		t.Fatalf("create envs: %v", err)
	}
	return out
}

func TestEnvStoreLockedUntilUnlocked(t *testing.T) {
	s := openTest(t, clock.NewFake(t0))
	if _, err := s.CreateEnvs(context.Background(), []edge.EnvInput{{Name: "A", Value: "v"}}, ""); errs.Code(err) != errs.Unavailable {
		t.Fatalf("locked store: %v", err)
	}
}

func TestEnvCreateJoinReveal(t *testing.T) {
	ctx := context.Background()
	s, _ := unlocked(t, t.TempDir())
	mustEnvs(t, s, edge.EnvInput{Name: "A", Value: "v1", Enabled: true}, edge.EnvInput{Name: "A", Value: "v2", Enabled: true},
		edge.EnvInput{Name: "A", Value: "off", Enabled: false}, edge.EnvInput{Name: "B", Value: "b", Enabled: true, Remarks: "account two"})
	all, err := s.EnabledEnvs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	vars, err := env.Resolve(all)
	if err != nil || len(vars) != 2 || vars[0] != (env.Variable{Name: "A", Value: "v1&v2"}) {
		t.Fatalf("resolve: %+v %v", vars, err)
	}
	page, err := s.ListEnvs(ctx, edge.EnvFilter{Query: "ACCOUNT"})
	if err != nil || page.Total != 1 || page.Entries[0].Name != "B" || page.Entries[0].Value != "" {
		t.Fatalf("search: %+v %v", page, err)
	}
	got, err := s.RevealEnv(ctx, page.Entries[0].ID, "token")
	if err != nil || got.Value != "b" {
		t.Fatalf("reveal: %+v %v", got, err)
	}
	audit, err := s.ListAudit(ctx, 0, 0)
	if err != nil || len(audit) != 2 || audit[1].Action != edge.AuditEnvReveal || audit[1].Target != got.ID {
		t.Fatalf("audit: %+v %v", audit, err)
	}
	// Paging walks the list in QingLong order.
	p1, err := s.ListEnvs(ctx, edge.EnvFilter{Limit: 3})
	if err != nil || len(p1.Entries) != 3 || p1.NextCursor == "" || p1.Entries[0].Value != "" {
		t.Fatalf("page 1: %+v %v", p1, err)
	}
	p2, err := s.ListEnvs(ctx, edge.EnvFilter{Limit: 3, Cursor: p1.NextCursor})
	if err != nil || len(p2.Entries) != 1 || p2.NextCursor != "" {
		t.Fatalf("page 2: %+v %v", p2, err)
	}
	if _, err := s.ListEnvs(ctx, edge.EnvFilter{Cursor: "bogus"}); errs.Field(err) != "cursor" {
		t.Fatalf("bad cursor: %v", err)
	}
}

func TestEnvUpdateRenameMoveDelete(t *testing.T) {
	ctx := context.Background()
	s, _ := unlocked(t, t.TempDir())
	es := mustEnvs(t, s, edge.EnvInput{Name: "A", Value: "first", Enabled: true}, edge.EnvInput{Name: "A", Value: "second", Enabled: true})
	name := "RENAMED"
	if _, err := s.UpdateEnv(ctx, es[0].ID, edge.EnvPatch{Name: &name}, "t"); err != nil {
		t.Fatal(err)
	}
	if v, err := s.RevealEnv(ctx, es[0].ID, "t"); err != nil || v.Value != "first" || v.Name != "RENAMED" {
		t.Fatalf("renamed entry keeps its value: %+v %v", v, err)
	}
	// Move the second A above... a single A: order within the list.
	if _, err := s.MoveEnv(ctx, es[1].ID, es[0].ID); err != nil {
		t.Fatal(err)
	}
	page, _ := s.ListEnvs(ctx, edge.EnvFilter{})
	if page.Entries[0].ID != es[1].ID {
		t.Fatalf("move: %+v", page.Entries)
	}
	off := false
	if _, err := s.UpdateEnv(ctx, es[1].ID, edge.EnvPatch{Enabled: &off}, "t"); err != nil {
		t.Fatal(err)
	}
	if all, _ := s.EnabledEnvs(ctx); len(all) != 1 {
		t.Fatalf("disabled entry still enabled: %+v", all)
	}
	if n, err := s.DeleteEnvs(ctx, []string{es[0].ID, "nope"}, "t"); err != nil || n != 1 {
		t.Fatalf("delete: %d %v", n, err)
	}
	if _, err := s.GetEnv(ctx, es[0].ID); errs.Code(err) != errs.NotFound {
		t.Fatalf("deleted: %v", err)
	}
	if _, err := s.UpdateEnv(ctx, es[1].ID, edge.EnvPatch{}, "t"); errs.Code(err) != errs.Invalid {
		t.Fatalf("empty patch: %v", err)
	}
}

// TestEnvLimits: each refusal names the field and the limit, and nothing
// is stored.
func TestEnvLimits(t *testing.T) {
	ctx := context.Background()
	s, _ := unlocked(t, t.TempDir())
	batch := make([]edge.EnvInput, env.MaxEntries)
	for i := range batch {
		batch[i] = edge.EnvInput{Name: "N", Value: "", Enabled: false}
	}
	mustEnvs(t, s, batch...)
	cases := []struct {
		name  string
		in    edge.EnvInput
		field string
		msg   string
	}{
		{"10,001st entry", edge.EnvInput{Name: "X", Value: "v"}, "entries", "at most 10000"},
		{"value 128 KiB + 1", edge.EnvInput{Name: "X", Value: strings.Repeat("v", env.MaxValueBytes+1)}, "value", "limit is 131072"},
		{"NUL", edge.EnvInput{Name: "X", Value: "a\x00b"}, "value", "NUL"},
		{"QL3_ name", edge.EnvInput{Name: "QL3_X", Value: "v"}, "name", "QL3_ prefix is reserved"},
		{"= in name", edge.EnvInput{Name: "A=B", Value: "v"}, "name", "'='"},
	}
	for _, tc := range cases {
		_, err := s.CreateEnvs(ctx, []edge.EnvInput{tc.in}, "t")
		if errs.Code(err) != errs.Invalid || errs.Field(err) != tc.field || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want invalid %s %q", tc.name, err, tc.field, tc.msg)
		}
	}
	page, err := s.ListEnvs(ctx, edge.EnvFilter{})
	if err != nil || page.Total != env.MaxEntries {
		t.Fatalf("stored %d entries, want %d: %v", page.Total, env.MaxEntries, err)
	}
}

func TestEnvJoinedLimitOnEnable(t *testing.T) {
	ctx := context.Background()
	s, _ := unlocked(t, t.TempDir())
	half := strings.Repeat("x", env.MaxJoinedBytes/2)
	es := mustEnvs(t, s, edge.EnvInput{Name: "A", Value: half, Enabled: true}, edge.EnvInput{Name: "A", Value: half, Enabled: false})
	on := true
	if _, err := s.UpdateEnv(ctx, es[1].ID, edge.EnvPatch{Enabled: &on}, "t"); errs.Field(err) != "value" || !strings.Contains(err.Error(), "131072") {
		t.Fatalf("enable over the joined limit: %v", err)
	}
}

// TestEnvKeyFile: values are ciphertext on disk; the wrong key file is an
// error naming it; a rotation keeps the values and retires the old file.
func TestEnvKeyFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, kek := unlocked(t, dir)
	secret := "pt_key=AAAA-secret-value-1234"
	es := mustEnvs(t, s, edge.EnvInput{Name: "JD_COOKIE", Value: secret, Enabled: true})
	var blob []byte
	if err := s.reader.QueryRow(`SELECT ciphertext FROM envs WHERE id = ?`, es[0].ID).Scan(&blob); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(blob, []byte(secret)) || len(blob) < len(secret) {
		t.Fatal("the value is not sealed")
	}
	// Rotate: the new key file replaces the old one; values still open.
	next, _ := envcrypt.NewKEK(kek.Path())
	if err := s.RotateEnvKey(ctx, next, func() error { return envcrypt.ReplaceKeyFile(next) }, "t"); err != nil {
		t.Fatal(err)
	}
	var wrappings int
	_ = s.reader.QueryRow(`SELECT count(*) FROM env_keys`).Scan(&wrappings)
	if wrappings != 1 {
		t.Fatalf("%d wrappings after rotation", wrappings)
	}
	s.Close()

	s2 := openAt(t, filepath.Join(dir, "edge.db"), clock.NewFake(t0))
	loaded, err := envcrypt.LoadKeyFile(kek.Path())
	if err != nil || loaded.ID() != next.ID() {
		t.Fatalf("rotated key file: %v", err)
	}
	if err := s2.UnlockEnv(ctx, kek); err == nil || !strings.Contains(err.Error(), kek.Path()) {
		t.Fatalf("the old key after rotation: %v", err)
	}
	wrong := filepath.Join(dir, "other.key")
	other, _ := envcrypt.CreateKeyFile(wrong)
	if err := s2.UnlockEnv(ctx, other); err == nil || !strings.Contains(err.Error(), wrong) {
		t.Fatalf("wrong key file: %v", err)
	}
	if err := s2.UnlockEnv(ctx, loaded); err != nil {
		t.Fatal(err)
	}
	if v, err := s2.RevealEnv(ctx, es[0].ID, "t"); err != nil || v.Value != secret {
		t.Fatalf("after rotation: %v", err)
	}
	if has, _ := s2.HasEnvKey(ctx); !has {
		t.Fatal("HasEnvKey")
	}
	_ = os.Remove(wrong)
}

// TestEnvCiphertextBoundToRow: a ciphertext copied to another entry does
// not open there.
func TestEnvCiphertextBoundToRow(t *testing.T) {
	ctx := context.Background()
	s, _ := unlocked(t, t.TempDir())
	es := mustEnvs(t, s, edge.EnvInput{Name: "A", Value: "aaaa", Enabled: true}, edge.EnvInput{Name: "B", Value: "bbbb", Enabled: true})
	if _, err := s.writer.Exec(`UPDATE envs SET ciphertext = (SELECT ciphertext FROM envs WHERE id = ?) WHERE id = ?`, es[0].ID, es[1].ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RevealEnv(ctx, es[1].ID, "t"); err == nil {
		t.Fatal("a moved ciphertext opened")
	}
}

func TestPruneAudit(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(t0)
	s := openAt(t, filepath.Join(t.TempDir(), "edge.db"), clk)
	kek, _ := envcrypt.CreateKeyFile(filepath.Join(t.TempDir(), "env.key"))
	if err := s.UnlockEnv(ctx, kek); err != nil {
		t.Fatal(err)
	}
	mustEnvs(t, s, edge.EnvInput{Name: "A", Value: "v"})
	clk.Advance(48 * time.Hour)
	mustEnvs(t, s, edge.EnvInput{Name: "B", Value: "v"})
	n, err := s.PruneAudit(ctx, t0.Add(time.Hour).UnixMilli(), edge.MaxPruneBatch)
	if err != nil || n != 1 {
		t.Fatalf("pruned %d: %v", n, err)
	}
	left, _ := s.ListAudit(ctx, 0, 0)
	if len(left) != 1 || left[0].Target == "" {
		t.Fatalf("left %+v", left)
	}
	if _, err := s.PruneAudit(ctx, 0, 0); errs.Field(err) != "limit" {
		t.Fatalf("limit 0: %v", err)
	}
}
