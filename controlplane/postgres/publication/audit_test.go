package publication_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres/publication"
	"github.com/ql3/ql3/core/errs"
)

// allAudit walks every page of the audit list (small pages, to exercise
// the keyset cursor) and returns the lines newest first.
func allAudit(t *testing.T, pub *publication.Publisher, f controlplane.AuditFilter) []controlplane.AuditRecord {
	t.Helper()
	var out []controlplane.AuditRecord
	seen := map[string]bool{}
	f.Page = controlplane.ListRequest{Limit: 2}
	for range 100 {
		page, err := pub.ListAudit(context.Background(), f)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range page.Items {
			if seen[a.ID] {
				t.Fatalf("audit line %s on two pages", a.ID)
			}
			seen[a.ID] = true
			out = append(out, a)
		}
		if page.NextCursor == "" {
			return out
		}
		f.Page.Cursor = page.NextCursor
	}
	t.Fatal("the audit list did not end")
	return nil
}

// TestAdminMutationsWriteOneAuditLine: every admin mutation leaves exactly
// one audit line naming its actor (token id, peer IP without port), action
// and subject — and nothing secret; a mutation that fails or is replayed
// leaves none.
func TestAdminMutationsWriteOneAuditLine(t *testing.T) {
	t.Parallel()
	f := newPubFixture(t)
	ctx := controlplane.WithActor(context.Background(), controlplane.Actor{Kind: "admin", ID: "0123456789abcdef", RemoteAddr: "192.0.2.9:41000"})
	pub := f.pub
	var secrets []string
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	tok, tokText, err := pub.CreateAPIToken(ctx, "ci", 0)
	must(err)
	secrets = append(secrets, tokText, tokText[strings.LastIndex(tokText, "_")+1:])
	_, err = pub.RevokeAPIToken(ctx, tok.ID)
	must(err)
	w, err := pub.RegisterWorker(ctx, controlplane.WorkerInput{Name: "w1"})
	must(err)
	c1, c1Text, err := pub.IssueWorkerCredential(ctx, w.ID)
	must(err)
	c2, c2Text, err := pub.RotateWorkerCredentials(ctx, w.ID, nil)
	must(err)
	_, err = pub.RevokeWorkerCredential(ctx, w.ID, c1.ID)
	must(err)
	secrets = append(secrets, c1Text, c2Text, c1Text[strings.LastIndex(c1Text, "_")+1:])
	proj, err := pub.PublishProject(ctx, controlplane.ProjectInput{Name: "p1", MutationID: "m-1"})
	must(err)
	task, err := pub.PublishTask(ctx, controlplane.TaskInput{ProjectID: proj.ID, Name: "t1", Spec: shellSpec("echo hi")})
	must(err)
	task, err = pub.PublishTask(ctx, controlplane.TaskInput{TaskID: task.ID, ExpectedRevision: task.Revision, Name: "t1", Spec: shellSpec("echo ho")})
	must(err)
	tr, err := pub.PublishTrigger(ctx, controlplane.TriggerInput{TaskID: task.ID, Expression: "*/5 * * * *"})
	must(err)
	_, err = pub.PublishTrigger(ctx, controlplane.TriggerInput{TriggerID: tr.ID, ExpectedRevision: tr.Revision, Expression: "*/7 * * * *"})
	must(err)
	_, err = pub.SetTaskEnabled(ctx, controlplane.TaskEnabledInput{TaskID: task.ID, Enabled: false})
	must(err)
	_, err = pub.ArchiveProject(ctx, controlplane.ArchiveProjectInput{ProjectID: proj.ID, ExpectedVersion: proj.Version})
	must(err)

	// Neither a failed mutation nor an identical replay writes a line.
	if _, err := pub.PublishProject(ctx, controlplane.ProjectInput{Name: "p1"}); errs.Code(err) != errs.Conflict {
		t.Fatalf("duplicate project: %v", err)
	}
	if _, err := pub.PublishProject(ctx, controlplane.ProjectInput{Name: "p1", MutationID: "m-1"}); err != nil {
		t.Fatalf("replay: %v", err)
	}
	if _, err := pub.RevokeWorkerCredential(ctx, w.ID, "00000000-0000-7000-8000-000000000001"); errs.Code(err) != errs.NotFound {
		t.Fatalf("revoke of a missing credential: %v", err)
	}

	lines := allAudit(t, pub, controlplane.AuditFilter{})
	want := []struct{ action, subject string }{
		{publication.AuditTokenCreate, tok.ID}, {publication.AuditTokenRevoke, tok.ID},
		{publication.AuditWorkerRegister, w.ID}, {publication.AuditCredentialIssue, c1.ID},
		{publication.AuditCredentialRotate, c2.ID}, {publication.AuditCredentialRevoke, c1.ID},
		{"project.create", proj.ID}, {"task.create", task.ID}, {"task.update", task.ID},
		{"trigger.create", tr.ID}, {"trigger.update", tr.ID}, {"task.set_enabled", task.ID},
		{"project.archive", proj.ID},
	}
	if len(lines) != len(want) {
		for _, l := range lines {
			t.Logf("%s %s %s", l.Action, l.SubjectKind, l.SubjectID)
		}
		t.Fatalf("%d audit lines, want %d", len(lines), len(want))
	}
	for i, w := range want {
		l := lines[len(lines)-1-i] // newest first
		if l.Action != w.action || l.SubjectID != w.subject || l.ActorKind != "admin" || l.ActorID != "0123456789abcdef" ||
			l.RemoteAddr != "192.0.2.9" || l.Outcome != "ok" {
			t.Errorf("line %d = %+v, want %s on %s", i, l, w.action, w.subject)
		}
	}
	raw, _ := json.Marshal(lines)
	for _, s := range secrets {
		if strings.Contains(string(raw), s) {
			t.Fatalf("an audit line holds secret material %.12s…", s)
		}
	}
	var digests []string
	rows, err := f.admin.Query(context.Background(), `SELECT token_digest FROM ql3.api_tokens UNION ALL SELECT secret_digest FROM ql3.worker_credentials`)
	must(err)
	for rows.Next() {
		var d []byte
		must(rows.Scan(&d))
		digests = append(digests, hex.EncodeToString(d))
	}
	must(rows.Err())
	for _, d := range digests {
		if strings.Contains(string(raw), d) {
			t.Fatal("an audit line holds a secret's digest")
		}
	}
	if got := allAudit(t, pub, controlplane.AuditFilter{Action: "task.update"}); len(got) != 1 || got[0].SubjectID != task.ID {
		t.Errorf("filter by action: %+v", got)
	}
	if got := allAudit(t, pub, controlplane.AuditFilter{SubjectID: c1.ID}); len(got) != 2 {
		t.Errorf("filter by subject: %d lines", len(got))
	}
	if _, err := pub.ListAudit(context.Background(), controlplane.AuditFilter{Page: controlplane.ListRequest{Limit: controlplane.MaxListLimit + 1}}); errs.Field(err) != "limit" {
		t.Errorf("unbounded page: %v", err)
	}
	if _, err := pub.ListAudit(context.Background(), controlplane.AuditFilter{Page: controlplane.ListRequest{Cursor: "nope"}}); errs.Field(err) != "cursor" {
		t.Errorf("bad cursor: %v", err)
	}
}
