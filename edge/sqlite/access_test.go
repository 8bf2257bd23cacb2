package sqlite

import (
	"context"
	"crypto/sha256"
	"strings"
	"testing"

	"github.com/ql3/ql3/core/access"
	"github.com/ql3/ql3/core/env"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/signin"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/worker/clock"
)

func digestOf(s string) []byte { d := sha256.Sum256([]byte(s)); return d[:] }

func TestOpenAppTokensKeepFiveAndExpire(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, clock.NewFake(t0))
	app, err := s.CreateOpenApp(ctx, "bot", []string{"envs"}, "client-0001", digestOf("secret"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateOpenApp(ctx, "bot", []string{"envs"}, "client-0002", digestOf("x")); errs.Code(err) != errs.Conflict {
		t.Fatalf("duplicate name: %v", err)
	}
	got, dig, err := s.OpenAppByClient(ctx, "client-0001")
	if err != nil || got.ID != app.ID || string(dig) != string(digestOf("secret")) || got.Scopes[0] != "envs" {
		t.Fatalf("by client: %+v %v", got, err)
	}
	now := t0.UnixMilli()
	for i := range 6 {
		if err := s.IssueOpenToken(ctx, app.ID, digestOf("tok"+string(rune('a'+i))), now+int64(i), now+1000); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.OpenTokenApp(ctx, digestOf("toka"), now+10); errs.Code(err) != errs.Unauthorized {
		t.Fatalf("the oldest of six tokens still works: %v", err)
	}
	if a, err := s.OpenTokenApp(ctx, digestOf("tokf"), now+10); err != nil || a.Name != "bot" {
		t.Fatalf("newest token: %+v %v", a, err)
	}
	if _, err := s.OpenTokenApp(ctx, digestOf("tokf"), now+1000); errs.Code(err) != errs.Unauthorized {
		t.Fatalf("expired token accepted: %v", err)
	}
	if err := s.DeleteOpenApp(ctx, app.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.OpenTokenApp(ctx, digestOf("tokf"), now+10); errs.Code(err) != errs.Unauthorized {
		t.Fatalf("token of a deleted app accepted: %v", err)
	}
}

func TestOpenNumsAreStable(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, clock.NewFake(t0))
	a, err := s.OpenNums(ctx, edge.OpenKindTask, []string{"t1", "t2"})
	if err != nil || a["t1"] == 0 || a["t2"] == 0 || a["t1"] == a["t2"] {
		t.Fatalf("nums: %v %v", a, err)
	}
	b, err := s.OpenNums(ctx, edge.OpenKindTask, []string{"t2", "t3"})
	if err != nil || b["t2"] != a["t2"] || b["t3"] == a["t1"] {
		t.Fatalf("second call: %v %v", b, err)
	}
	refs, err := s.OpenRefs(ctx, edge.OpenKindTask, []int64{a["t1"], 999999})
	if err != nil || refs[a["t1"]] != "t1" || len(refs) != 1 {
		t.Fatalf("refs: %v %v", refs, err)
	}
	if refs, _ := s.OpenRefs(ctx, edge.OpenKindEnv, []int64{a["t1"]}); len(refs) != 0 {
		t.Fatalf("a task number resolved as an env: %v", refs)
	}
}

func TestOpenReadEnvsAudits(t *testing.T) {
	ctx := context.Background()
	s, _ := unlocked(t, t.TempDir())
	es := mustEnvs(t, s, edge.EnvInput{Name: "JD_COOKIE", Value: "pt_key=1", Enabled: true},
		edge.EnvInput{Name: "OTHER", Value: "v", Enabled: true})
	got, err := s.OpenReadEnvs(ctx, "refresher", func(e env.Entry) bool { return e.Name == "JD_COOKIE" })
	if err != nil || len(got) != 1 || got[0].Value != "pt_key=1" {
		t.Fatalf("read: %+v %v", got, err)
	}
	lines, err := s.ListAudit(ctx, 0, 200)
	if err != nil {
		t.Fatal(err)
	}
	last := lines[len(lines)-1]
	if last.Action != AuditOpenEnvRead || last.Actor != "app refresher" || last.Detail != es[0].ID || strings.Contains(last.Detail, "pt_key") {
		t.Fatalf("audit line: %+v", last)
	}
}

func TestAPITokensAndUsers(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, clock.NewFake(t0))
	tok, err := s.CreateAPIToken(ctx, edge.APIToken{Name: "ci", Scopes: []access.Scope{access.Runs}, ExpiresAtMs: t0.UnixMilli() + 1000}, digestOf("ql3t"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.APITokenByDigest(ctx, digestOf("ql3t"))
	if err != nil || got.ID != tok.ID || got.Scopes[0] != access.Runs || !got.Live(t0.UnixMilli()) || got.Live(t0.UnixMilli()+1000) {
		t.Fatalf("token: %+v %v", got, err)
	}
	if err := s.RevokeAPIToken(ctx, tok.ID, t0.UnixMilli()); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.APITokenByDigest(ctx, digestOf("ql3t")); got.Live(t0.UnixMilli()) {
		t.Fatal("revoked token is live")
	}
	if err := s.RevokeAPIToken(ctx, tok.ID, t0.UnixMilli()); errs.Code(err) != errs.NotFound {
		t.Fatalf("second revoke: %v", err)
	}

	if _, err := s.CreateUser(ctx, "alice", "$argon2id$x"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateUser(ctx, "alice", "$argon2id$y"); errs.Code(err) != errs.Conflict {
		t.Fatalf("duplicate user: %v", err)
	}
	lock := signin.State{Failures: 3}
	if err := s.RecordSignIn(ctx, edge.SignInEvent{AtMs: 1, Username: "alice", Outcome: edge.SignInBadPassword, Remote: "127.0.0.1"}, lock, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordSignIn(ctx, edge.SignInEvent{AtMs: 2, Username: "alice", Outcome: edge.SignInOK}, signin.State{}, 42); err != nil {
		t.Fatal(err)
	}
	u, err := s.GetUser(ctx, "alice")
	if err != nil || u.Lock != (signin.State{}) || u.TOTPLastCounter != 42 {
		t.Fatalf("user: %+v %v", u, err)
	}
	log, err := s.ListSignIns(ctx, 0, 10)
	if err != nil || len(log) != 2 || log[0].Outcome != edge.SignInOK || log[1].Remote != "127.0.0.1" {
		t.Fatalf("log: %+v %v", log, err)
	}
	if err := s.SetTOTP(ctx, "bob", "X"); errs.Code(err) != errs.NotFound {
		t.Fatalf("unknown user: %v", err)
	}
}
