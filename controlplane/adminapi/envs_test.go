package adminapi_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ql3/ql3/controlplane/adminapi"
	"github.com/ql3/ql3/controlplane/pgtest"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/envstore"
	"github.com/ql3/ql3/controlplane/postgres/publication"
	"github.com/ql3/ql3/core/env"
	"github.com/ql3/ql3/core/envseal"
	"github.com/ql3/ql3/httpkit"
	"github.com/ql3/ql3/panel"
	"github.com/ql3/ql3/scripts/testio"
)

// TestEnvRoutes: a project's env store over the admin API — limits are a
// 400 naming the field and the limit with nothing stored, no answer but
// reveal carries a value, reveal is audited, the server log has none.
func TestEnvRoutes(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	admin := db.Pool(t, postgres.RoleAdmin)
	pub := publication.NewPublisher(admin, publication.PublisherOptions{})
	_, token, err := pub.CreateAPIToken(context.Background(), "test", 0)
	if err != nil {
		t.Fatal(err)
	}
	store := envstore.New(admin)
	kek, _ := envseal.NewKEK()
	if err := store.UnlockEnv(context.Background(), kek, "/test/env.key"); err != nil {
		t.Fatal(err)
	}
	logs := &testio.Buffer{}
	srv := httptest.NewServer(adminapi.New(adminapi.Config{UI: panel.UI{}, Backend: pub, Envs: store,
		Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}))
	t.Cleanup(srv.Close)
	f := fixture{t: t, url: srv.URL, token: token, db: db, logs: logs}
	mustStatus(t, "project", f.call("POST", "/api/v1/projects", `{"name":"ops"}`, nil), 201)
	const base = "/api/v1/projects/ops/envs"
	const secretValue = "sekrit-value-of-the-test"

	var answers strings.Builder
	for _, c := range []struct {
		body, field, says string
	}{
		{`{"name":"QL3_X","value":"v"}`, "name", "reserved"},
		{`{"name":"A","value":"a\u0000b"}`, "value", "NUL"},
		{fmt.Sprintf(`{"name":"A","value":%q}`, strings.Repeat("x", env.MaxValueBytes+1)), "value", "131072"},
		{`{"name":"A=B","value":"v"}`, "name", "="},
	} {
		var e httpkit.ErrorBody
		if code := f.call("POST", base, c.body, &e); code != 400 || e.Field != c.field || !strings.Contains(e.Message, c.says) {
			t.Errorf("%.40s: %d %+v, want 400 on %s saying %q", c.body, code, e, c.field, c.says)
		}
	}
	var lines strings.Builder
	for i := range env.MaxEntries {
		fmt.Fprintf(&lines, "N%d=v\n", i)
	}
	mustStatus(t, "import 10,000", f.call("POST", base+"/import", map[string]string{"lines": lines.String()}, nil), 201)
	var e httpkit.ErrorBody
	if code := f.call("POST", base, `{"name":"N","value":"one too many"}`, &e); code != 400 || e.Field != "entries" || !strings.Contains(e.Message, "10000") {
		t.Errorf("10,001st: %d %+v", code, e)
	}
	var list adminapi.EnvList
	mustStatus(t, "list", f.call("GET", base+"?limit=1", nil, &list), 200)
	if list.Total != env.MaxEntries {
		t.Fatalf("%d entries stored after the refusals, want %d", list.Total, env.MaxEntries)
	}
	var created adminapi.EnvEntry
	mustStatus(t, "a second project", f.call("POST", "/api/v1/projects", `{"name":"shop"}`, nil), 201)
	const shop = "/api/v1/projects/shop/envs"
	mustStatus(t, "create", f.call("POST", shop, map[string]string{"name": "COOKIE", "value": secretValue}, &created), 201)
	for _, p := range []struct{ method, path, body string }{
		{"GET", shop, ""}, {"GET", shop + "/" + created.ID, ""}, {"PATCH", shop + "/" + created.ID, `{"remarks":"r"}`},
		{"POST", shop + "/" + created.ID + "/disable", ""}, {"POST", shop + "/" + created.ID + "/enable", ""},
		{"POST", shop + "/export", `{}`},
	} {
		var raw map[string]any
		var body any
		if p.body != "" {
			body = p.body
		}
		f.call(p.method, p.path, body, &raw)
		answers.WriteString(fmt.Sprint(raw))
	}
	if strings.Contains(answers.String(), secretValue) {
		t.Error("an answer other than reveal carries the value")
	}
	var v adminapi.EnvValue
	mustStatus(t, "reveal", f.call("POST", shop+"/"+created.ID+"/reveal", nil, &v), 200)
	if v.Value != secretValue {
		t.Errorf("reveal = %q", v.Value)
	}
	if code := f.call("GET", "/api/v1/projects/ops/envs/"+created.ID, nil, nil); code != 404 {
		t.Errorf("another project's entry: %d, want 404", code)
	}
	var n int
	if err := db.Conn(t).QueryRow(context.Background(), `SELECT count(*) FROM ql3.audit_log WHERE action = 'env.reveal' AND subject_id = $1`,
		created.ID).Scan(&n); err != nil || n != 1 {
		t.Errorf("%d reveal audit lines (%v)", n, err)
	}
	if strings.Contains(logs.String(), secretValue) {
		t.Error("the server log holds the value")
	}
}
