package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ql3/ql3/core/env"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/edge/envcrypt"
	"github.com/ql3/ql3/edge/sqlite"
)

// unlockEnvs gives a fixture's store its env key file and returns the
// rotation the app would wire.
func unlockEnvs(t testing.TB, dir string, store *sqlite.Store) RotateKeyFunc {
	t.Helper()
	path := filepath.Join(dir, envcrypt.DefaultKeyFileName)
	kek, err := envcrypt.CreateKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.UnlockEnv(context.Background(), kek); err != nil {
		t.Fatal(err)
	}
	return func(ctx context.Context, actor string) (string, error) {
		next, err := envcrypt.NewKEK(path)
		if err != nil {
			return "", err
		}
		return next.ID(), store.RotateEnvKey(ctx, next, func() error { return envcrypt.ReplaceKeyFile(next) }, actor)
	}
}

func (f *fixture) createEnv(name, value string) EnvEntry {
	f.t.Helper()
	body, _ := json.Marshal(CreateEnvRequest{Name: name, Value: value})
	var e EnvEntry
	f.decode("POST", "/api/v1/envs", string(body), http.StatusCreated, &e)
	return e
}

// envExamples drives every env route for TestOpenAPIExamples.
func (f *fixture) envExamples() {
	a := f.createEnv("JD_COOKIE", "pt_key=example-1")
	b := f.createEnv("JD_COOKIE", "pt_key=example-2")
	f.call("POST", "/api/v1/envs", `{"name":"QL3_X","value":"v"}`)
	f.call("GET", "/api/v1/envs?q=jd&limit=1", "")
	f.call("GET", "/api/v1/envs/"+a.ID, "")
	f.call("GET", "/api/v1/envs/nope", "")
	f.call("PATCH", "/api/v1/envs/"+a.ID, `{"remarks":"account 1","labels":["jd"]}`)
	f.call("POST", "/api/v1/envs/"+a.ID+"/disable", "")
	f.call("POST", "/api/v1/envs/"+a.ID+"/enable", "")
	f.call("POST", "/api/v1/envs/"+b.ID+"/move", `{"before":"`+a.ID+`"}`)
	f.call("POST", "/api/v1/envs/"+a.ID+"/reveal", "")
	f.call("POST", "/api/v1/envs/import", `{"lines":"# two accounts\nTOKEN=t1\nexport TOKEN='t2'\n"}`)
	f.call("POST", "/api/v1/envs/import", `{"lines":"no equals sign"}`)
	f.call("POST", "/api/v1/envs/export", `{"format":"json"}`)
	f.call("POST", "/api/v1/envs/export", `{"format":"lines","values":true}`)
	f.call("POST", "/api/v1/envs/rotate-key", "")
	f.call("GET", "/api/v1/audit?after=0&limit=5", "")
	f.call("DELETE", "/api/v1/envs/"+b.ID, "")
	f.call("DELETE", "/api/v1/envs/"+b.ID, "")
}

func TestEnvAPIFlow(t *testing.T) {
	f := newFixture(t)
	secret := "pt_key=flow-secret-7781"
	a := f.createEnv("A", secret)
	f.createEnv("A", "pt_key=flow-second-9924")
	r := f.call("GET", "/api/v1/envs", "")
	if r.status != 200 || strings.Contains(string(r.body), "flow-") {
		t.Fatalf("list: %d %s", r.status, r.body)
	}
	var list EnvList
	_ = json.Unmarshal(r.body, &list)
	if list.Total != 2 || len(list.Items) != 2 || list.Items[0].ID != a.ID {
		t.Fatalf("list order (a new entry goes last, as in QingLong): %+v", list)
	}
	var v EnvValue
	f.decode("POST", "/api/v1/envs/"+a.ID+"/reveal", "", http.StatusOK, &v)
	if v.Value != secret {
		t.Fatalf("reveal: %+v", v)
	}
	var audit AuditList
	f.decode("GET", "/api/v1/audit", "", http.StatusOK, &audit)
	last := audit.Items[len(audit.Items)-1]
	if last.Action != edge.AuditEnvReveal || last.Target != a.ID || last.Actor != "token" || strings.Contains(last.Detail, "flow-") {
		t.Fatalf("audit: %+v", last)
	}
	// Values are write-only: a patch answers without one.
	r = f.call("PATCH", "/api/v1/envs/"+a.ID, `{"value":"pt_key=flow-changed-1234","pinned":true}`)
	if r.status != 200 || strings.Contains(string(r.body), "flow-") {
		t.Fatalf("patch: %d %s", r.status, r.body)
	}
	// Reveal needs a credential even from loopback.
	if r := f.send("POST", "/api/v1/envs/"+a.ID+"/reveal", ""); r.status != 401 {
		t.Fatalf("reveal without token: %d", r.status)
	}
}

// TestEnvAPILimits: 10,001st entry, a 128 KiB + 1 value, a NUL, a QL3_
// name → 400 naming the field and the limit; nothing stored.
func TestEnvAPILimits(t *testing.T) {
	f := newFixture(t)
	fill := make([]edge.EnvInput, env.MaxEntries)
	for i := range fill {
		fill[i] = edge.EnvInput{Name: "FILL", Value: "x"}
	}
	if _, err := f.store.CreateEnvs(context.Background(), fill, "test"); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ name, body, field, msg string }{
		{"10,001st entry", `{"name":"X","value":"v"}`, "entries", "at most 10000"},
		{"128 KiB + 1", `{"name":"X","value":"` + strings.Repeat("v", env.MaxValueBytes+1) + `"}`, "value", "limit is 131072"},
		{"NUL", `{"name":"X","value":"a\u0000b"}`, "value", "NUL"},
		{"QL3_ name", `{"name":"QL3_X","value":"v"}`, "name", "reserved"},
		{"= in name", `{"name":"A=B","value":"v"}`, "name", "'='"},
	}
	for _, tc := range cases {
		r := f.call("POST", "/api/v1/envs", tc.body)
		e := r.errBody(t)
		if r.status != 400 || e.Field != tc.field || !strings.Contains(e.Message, tc.msg) {
			t.Errorf("%s: %d %+v, want 400 %s %q", tc.name, r.status, e, tc.field, tc.msg)
		}
	}
	var list EnvList
	f.decode("GET", "/api/v1/envs?q=X&limit=1", "", http.StatusOK, &list)
	if list.Total != 0 {
		t.Fatalf("%d entries named X were stored", list.Total)
	}
}

func TestEnvImportExport(t *testing.T) {
	f := newFixture(t)
	var imp ImportEnvResponse
	f.decode("POST", "/api/v1/envs/import", `{"lines":"A=one\nA=\"two\"\nB=b-value\n"}`, http.StatusCreated, &imp)
	if imp.Created != 3 {
		t.Fatalf("import: %+v", imp)
	}
	f.decode("POST", "/api/v1/envs/import", `{"entries":[{"name":"C","value":"c-value","enabled":false,"remarks":"off"}]}`, http.StatusCreated, &imp)
	var ex EnvExport
	f.decode("POST", "/api/v1/envs/export", `{"format":"lines","values":true}`, http.StatusOK, &ex)
	back, err := env.ParseLines(ex.Lines)
	if err != nil || len(back) != 4 {
		t.Fatalf("export lines %q: %v", ex.Lines, err)
	}
	all, _ := f.store.EnabledEnvs(context.Background())
	vars, _ := env.Resolve(all)
	if vars[0] != (env.Variable{Name: "A", Value: "one&two"}) {
		t.Fatalf("imported order: %+v", vars)
	}
	f.decode("POST", "/api/v1/envs/export", `{}`, http.StatusOK, &ex)
	for _, e := range ex.Entries {
		if e.Value != nil {
			t.Fatalf("export without values carried one: %+v", e)
		}
	}
	if r := f.call("POST", "/api/v1/envs/export", `{"format":"lines"}`); r.status != 400 || r.errBody(t).Field != "values" {
		t.Fatalf("lines without values: %d %s", r.status, r.body)
	}
	if r := f.call("POST", "/api/v1/envs/import", `{"lines":"A=1\nQL3_B=2"}`); r.status != 400 || r.errBody(t).Field != "lines[2].name" {
		t.Fatalf("bad line: %d %s", r.status, r.body)
	}
	var audit AuditList
	f.decode("GET", "/api/v1/audit?limit=200", "", http.StatusOK, &audit)
	exports := 0
	for _, a := range audit.Items {
		if a.Action == edge.AuditEnvExport {
			exports++
		}
	}
	if exports != 1 {
		t.Fatalf("%d export audit lines, want 1 (only the one with values)", exports)
	}
}
