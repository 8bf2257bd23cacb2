package publication_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"testing"

	"github.com/google/uuid"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/core/errs"
)

func TestAPITokens(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newPubFixture(t)
	tok, text, err := f.pub.CreateAPIToken(ctx, "ci", 0)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := f.pub.AuthenticateAPIToken(ctx, text); err != nil || got.ID != tok.ID {
		t.Fatalf("authenticate fresh token: %+v, %v", got, err)
	}
	var stored []byte
	if err := f.db.Conn(t).QueryRow(ctx, `SELECT token_digest FROM ql3.api_tokens WHERE token_id = $1`, tok.ID).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256([]byte(text)); string(stored) != string(sum[:]) {
		t.Fatal("stored digest is not the SHA-256 of the token text")
	}
	forged := text[:len(text)-1] + map[bool]string{true: "1", false: "0"}[text[len(text)-1] == '0']
	for name, s := range map[string]string{"wrong secret": forged, "garbage": "hello", "empty": ""} {
		if _, err := f.pub.AuthenticateAPIToken(ctx, s); errs.Code(err) != errs.Unauthorized {
			t.Errorf("%s: %v, want unauthorized", name, err)
		}
	}
	if _, err := f.pub.RevokeAPIToken(ctx, tok.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.pub.AuthenticateAPIToken(ctx, text); errs.Code(err) != errs.Unauthorized {
		t.Fatalf("revoked token accepted: %v", err)
	}
	list, err := f.pub.ListAPITokens(ctx)
	if err != nil || len(list) != 1 || list[0].Status != "revoked" {
		t.Fatalf("list: %+v, %v", list, err)
	}
}

func TestWorkerCredentials(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newPubFixture(t)
	w, err := f.pub.RegisterWorker(ctx, controlplane.WorkerInput{Name: "router-1", TLSIdentity: "spiffe://ql3/worker/router-1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.pub.RegisterWorker(ctx, controlplane.WorkerInput{Name: "router-1"}); errs.Code(err) != errs.Conflict || errs.Field(err) != "name" {
		t.Fatalf("duplicate worker name: %v", err)
	}
	first, text1, err := f.pub.IssueWorkerCredential(ctx, w.ID)
	if err != nil {
		t.Fatal(err)
	}
	id, digest, err := postgres.ParseWorkerCredential(text1)
	if err != nil || id != first.ID {
		t.Fatalf("issued credential %q does not parse to its id: %q, %v", text1, id, err)
	}
	var stored []byte
	if err := f.db.Conn(t).QueryRow(ctx, `SELECT secret_digest FROM ql3.worker_credentials WHERE credential_id = $1`, first.ID).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if string(stored) != string(digest[:]) {
		t.Fatal("stored digest differs from the credential's")
	}
	grace := int64(60_000)
	second, text2, err := f.pub.RotateWorkerCredentials(ctx, w.ID, &grace)
	if err != nil || text2 == text1 {
		t.Fatalf("rotate: %v", err)
	}
	creds, err := f.pub.ListWorkerCredentials(ctx, w.ID)
	if err != nil || len(creds) != 2 {
		t.Fatalf("credentials: %+v, %v", creds, err)
	}
	for _, c := range creds {
		switch c.ID {
		case first.ID:
			if c.Status != "active" || c.SupersededBy != second.ID || c.RevokeAfterMs == 0 || c.RevokeAfterMs > c.CreatedAtMs+60_000+60_000 {
				t.Errorf("rotated-out credential %+v: want active, superseded by the new one, revoked at the latest about a minute out", c)
			}
		case second.ID:
			if c.Status != "active" || c.ExpiresAtMs != 0 || c.SupersededBy != "" {
				t.Errorf("new credential %+v: want active without expiry", c)
			}
		}
	}
	zero := int64(0)
	if _, _, err := f.pub.RotateWorkerCredentials(ctx, w.ID, &zero); err != nil {
		t.Fatal(err)
	}
	creds, _ = f.pub.ListWorkerCredentials(ctx, w.ID)
	active := 0
	for _, c := range creds {
		if c.Status == "active" {
			active++
		}
	}
	if active != 1 {
		t.Fatalf("after rotation without grace %d credentials are active, want 1", active)
	}
	revoked, err := f.pub.RevokeWorkerCredential(ctx, w.ID, creds[0].ID)
	if err != nil || revoked.Status != "revoked" {
		t.Fatalf("revoke: %+v, %v", revoked, err)
	}
	if _, err := f.pub.RevokeWorkerCredential(ctx, uuid.Must(uuid.NewV7()).String(), creds[0].ID); errs.Code(err) != errs.NotFound {
		t.Fatalf("revoke under another worker: %v, want not_found", err)
	}
}

func TestListRunsKeyset(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newPubFixture(t)
	p := mustProject(t, f, "runs")
	task := mustTask(t, f, p.ID, "job")
	const n = 7
	var want []string
	for i := range n {
		id := uuid.Must(uuid.NewV7())
		want = append([]string{id.String()}, want...) // newest first
		if _, err := f.runtime.Exec(ctx, `INSERT INTO ql3.runs (run_id, project_id, task_id, task_revision,
			execution_revision_id, execution_digest, origin, idempotency_key, scheduled_for_ms, status,
			retry_max_attempts, retry_backoff_base_ms, retry_backoff_max_ms, retry_on_lost, timeout_ms, not_before_ms,
			created_at_ms, updated_at_ms)
			VALUES ($1, $2, $3, 1, $4, $5, 'manual', $6, 1000, 'queued', 1, 0, 0, false, 1000, 0, $7, $7)`,
			id, p.ID, task.ID, task.ExecutionRevisionID, task.Digest[:], fmt.Sprintf("k%d", i), 1000+int64(i/2)); err != nil {
			t.Fatal(err)
		}
		if _, err := f.runtime.Exec(ctx, `INSERT INTO ql3.run_events (run_id, sequence, project_id, type, created_at_ms)
			VALUES ($1, 1, $2, 'run.created', 1), ($1, 2, $2, 'run.queued', 1)`, id, p.ID); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > n {
			t.Fatal("pagination does not end")
		}
		page, err := f.pub.ListRuns(ctx, controlplane.RunListFilter{ProjectID: p.ID, Statuses: []string{"queued"}, Page: controlplane.ListRequest{Limit: 3, Cursor: cursor}})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Items {
			got = append(got, r.ID)
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("paged runs\n got %v\nwant %v", got, want)
	}
	r, err := f.pub.GetRun(ctx, want[0])
	if err != nil || r.Status != "queued" || r.ExecutionDigest != task.Digest {
		t.Fatalf("get run: %+v, %v", r, err)
	}
	evs, err := f.pub.ListRunEvents(ctx, want[0], 1, 0)
	if err != nil || len(evs) != 1 || evs[0].Type != "run.queued" {
		t.Fatalf("events after 1: %+v, %v", evs, err)
	}
	for name, filter := range map[string]controlplane.RunListFilter{
		"bad status": {Statuses: []string{"exploded"}},
		"bad cursor": {Page: controlplane.ListRequest{Cursor: "!!"}},
		"bad limit":  {Page: controlplane.ListRequest{Limit: 1000}},
	} {
		if _, err := f.pub.ListRuns(ctx, filter); errs.Code(err) != errs.Invalid {
			t.Errorf("%s: %v, want invalid", name, err)
		}
	}
	if _, err := f.pub.ListRunEvents(ctx, uuid.Must(uuid.NewV7()).String(), 0, 0); errs.Code(err) != errs.NotFound {
		t.Errorf("events of a missing run: %v", err)
	}
}
