package dispatch_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/dispatch"
	"github.com/ql3/ql3/controlplane/postgres/envstore"
	"github.com/ql3/ql3/core/envseal"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/core/spec"
)

func unlock(t *testing.T, store *envstore.Store, kek envseal.KEK) *envstore.Store {
	t.Helper()
	if err := store.UnlockEnv(context.Background(), kek, "/test/env.key"); err != nil {
		t.Fatal(err)
	}
	return store
}

func envOf(o *protocol.Offer) map[string]string {
	m := map[string]string{}
	for _, v := range o.Env {
		m[v.Name] = v.Value
	}
	return m
}

// TestOfferCarriesEnvPinnedAtClaim: the claim pins the project's enabled
// entries; the offer carries them joined in QingLong order and narrowed
// by env.use; a replay is byte-identical even after an edit; the next
// attempt sees the edit; a locked store cannot offer a pinned attempt.
func TestOfferCarriesEnvPinnedAtClaim(t *testing.T) {
	t.Parallel()
	opener := &lateOpener{}
	e := newDispatchEnv(t, dispatch.DispatchOptions{Env: opener})
	store := envstore.New(e.db.Pool(t, postgres.RoleAdmin))
	kek, _ := envseal.NewKEK()
	unlock(t, store, kek)
	c, err := store.Cipher()
	if err != nil {
		t.Fatal(err)
	}
	opener.c = c
	ctx := context.Background()
	project := e.project.String()
	created, err := store.CreateEnvs(ctx, project, []controlplane.EnvInput{
		{Name: "A", Value: "first-v1", Enabled: true}, {Name: "A", Value: "second-v2", Enabled: true},
		{Name: "A", Value: "off-v3", Enabled: false}, {Name: "B", Value: "bee-value", Enabled: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	w := e.worker(linuxCaps(), 2)
	e.queue(e.revision(testSpec()), 0)
	first, req := e.pull(w)
	if first == nil {
		t.Fatal("no offer")
	}
	if got := envOf(first); got["A"] != "first-v1&second-v2" || got["B"] != "bee-value" || len(got) != 2 {
		t.Fatalf("offer env %v", got)
	}
	firstBytes, _ := first.Encode()
	v := "edited-v1"
	if _, err := store.UpdateEnv(ctx, project, created[0].ID, controlplane.EnvPatch{Value: &v}); err != nil {
		t.Fatal(err)
	}
	again, _, err := e.d.Pull(e.ctx, w.p, req)
	if err != nil || again == nil {
		t.Fatalf("replay = %v, %v", again, err)
	}
	if againBytes, _ := again.Encode(); !bytes.Equal(firstBytes, againBytes) {
		t.Errorf("a replay after an edit differs from the claimed offer")
	}
	if n := e.scalar(`SELECT count(*) FROM ql3.attempt_envs WHERE position(convert_to('first-v1', 'UTF8') IN convert_to(entries::text, 'UTF8')) > 0`); n != 0 {
		t.Errorf("attempt_envs holds a plaintext value")
	}
	// The next Run, of a task allowlisting A, sees the edit, and only A.
	cmd := testSpec()
	cmd.Env = &spec.EnvScope{Use: []string{"A"}}
	e.queue(e.revision(cmd), 0)
	next, _ := e.pull(w)
	if next == nil {
		t.Fatal("no second offer")
	}
	if got := envOf(next); got["A"] != "edited-v1&second-v2" || len(got) != 1 {
		t.Errorf("allowlisted offer env %v, want only A with the edit", got)
	}
	// Without the data key an attempt with pinned entries is not offered.
	locked, err := dispatch.NewDispatcher(e.runtime, dispatch.DispatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w2 := e.worker(linuxCaps(), 1)
	e.queue(e.revision(testSpec()), 0)
	if _, _, err := locked.Pull(e.ctx, w2.p, w2.pullReq(t)); errs.Code(err) != errs.Unavailable {
		t.Errorf("locked store: pull = %v, want unavailable", err)
	}
}

// lateOpener is an EnvOpener set after the dispatcher is made (the test
// needs the dispatcher's database to make the store).
type lateOpener struct{ c *envseal.Cipher }

func (l *lateOpener) Open(id, name string, blob []byte) (string, error) {
	return l.c.Open(id, name, blob)
}
