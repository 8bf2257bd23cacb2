package httpapi

import (
	"net/http"
	"strings"
	"testing"
)

// TestGetRoutesRevealNoSecrets walks every GET route the server registers
// (ADR 0039): without a token, from loopback, none answers with an env
// value or a value of a task's inline environment; with the token, none
// answers with an env value (only POST .../reveal and an export with
// values do).
func TestGetRoutesRevealNoSecrets(t *testing.T) {
	f := newFixture(t)
	secrets := []string{"pt_key=alpha-0001-secret", "pt_key=bravo-0002-secret", "token-charlie-0003-secret"}
	var ids []string
	for i, s := range secrets {
		ids = append(ids, f.createEnv([]string{"JD_COOKIE", "JD_COOKIE", "TG_TOKEN"}[i], s).ID)
	}
	inline := "inline-setting-value-4242"
	var task Task
	f.decode("POST", "/api/v1/tasks", `{"name":"leaky","spec":{"kind":"qinglong/command@v1","shell":{"command":"echo hi"},
		"environment":{"SETTING":"`+inline+`"}},"triggers":[{"expression":"@daily"}]}`, http.StatusCreated, &task)
	var run Run
	f.decode("POST", "/api/v1/tasks/leaky/runs", "", http.StatusCreated, &run)
	params := map[string]string{"{task}": "leaky", "{trigger}": task.Triggers[0].ID, "{run}": run.ID, "{n}": "1", "{id}": ids[0], "{kind}": "node", "{file}": "x.js"}

	api := New(Config{})
	gets := 0
	for _, p := range api.patterns {
		method, path, ok := strings.Cut(p, " ")
		if !ok || method != "GET" {
			continue
		}
		gets++
		path = strings.TrimSuffix(path, "{$}")
		for k, v := range params {
			path = strings.ReplaceAll(path, k, v)
		}
		if strings.Contains(path, "{") {
			t.Fatalf("route %s has a parameter this test does not fill", p)
		}
		if path == "/api/v1/schedule/preview" {
			path += "?expression=@daily"
		}
		anon := f.send("GET", path, "")
		for _, s := range append(secrets, inline) {
			if strings.Contains(string(anon.body), s) {
				t.Errorf("GET %s without a token (status %d) returned a secret", path, anon.status)
			}
		}
		authed := f.call("GET", path, "")
		if authed.status >= 500 {
			t.Errorf("GET %s: %d %s", path, authed.status, authed.body)
		}
		for _, s := range secrets {
			if strings.Contains(string(authed.body), s) {
				t.Errorf("GET %s with the token returned an env value", path)
			}
		}
	}
	// The probe is sharp: with the token the task answers with its inline
	// environment, which the anonymous walk above never got.
	if r := f.call("GET", "/api/v1/tasks/leaky", ""); !strings.Contains(string(r.body), inline) {
		t.Fatalf("the task's inline environment is not in its authorised read: %s", r.body)
	}
	if gets < 15 {
		t.Fatalf("walked only %d GET routes", gets)
	}
	// The one way to a value: reveal with a credential.
	var v EnvValue
	f.decode("POST", "/api/v1/envs/"+ids[2]+"/reveal", "", http.StatusOK, &v)
	if v.Value != secrets[2] {
		t.Fatalf("reveal: %+v", v)
	}
}
