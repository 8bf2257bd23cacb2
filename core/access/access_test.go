package access

import "testing"

func TestAllows(t *testing.T) {
	cases := []struct {
		have   []Scope
		method string
		path   string
		want   bool
	}{
		{[]Scope{ReadOnly}, "GET", "/api/v1/tasks", true},
		{[]Scope{ReadOnly}, "GET", "/api/v1/runs/r1/attempts/1/log", true},
		{[]Scope{ReadOnly}, "POST", "/api/v1/tasks", false},
		{[]Scope{ReadOnly}, "POST", "/api/v1/tasks/t1/runs", false},
		{[]Scope{ReadOnly}, "GET", "/api/v1/envs", false},
		{[]Scope{ReadOnly}, "GET", "/api/v1/audit", false},
		{[]Scope{ReadOnly}, "GET", "/api/v1/tokens", false},
		{[]Scope{Runs}, "POST", "/api/v1/tasks/t1/runs", true},
		{[]Scope{Runs}, "POST", "/api/v1/runs/r1/cancel", true},
		{[]Scope{Runs}, "GET", "/api/v1/runs", true},
		{[]Scope{Runs}, "DELETE", "/api/v1/tasks/t1", false},
		{[]Scope{Runs}, "POST", "/api/v1/envs/e1/cancel", false},
		{[]Scope{Envs}, "POST", "/api/v1/envs/e1/reveal", true},
		{[]Scope{Envs}, "GET", "/api/v1/tasks", false},
		{[]Scope{Envs}, "POST", "/api/v1/envs/rotate-key", false},
		{[]Scope{Scripts}, "PUT", "/api/v1/scripts/a.js", true},
		{[]Scope{Admin}, "POST", "/api/v1/tokens", true},
		{[]Scope{Admin}, "POST", "/api/v1/envs/rotate-key", true},
		{nil, "GET", "/api/v1/tasks", false},
		// The control plane's project folders.
		{[]Scope{Envs}, "POST", "/api/v1/projects/ops/envs/e1/reveal", true},
		{[]Scope{Envs}, "GET", "/api/v1/projects/ops/envs", true},
		{[]Scope{ReadOnly}, "GET", "/api/v1/projects/ops/envs", false},
		{[]Scope{ReadOnly}, "GET", "/api/v1/projects/ops", true},
		{[]Scope{Envs}, "POST", "/api/v1/projects/ops/archive", false},
		{[]Scope{Scripts}, "PUT", "/api/v1/projects/ops/scripts/content", true},
		{[]Scope{Scripts}, "GET", "/api/v1/projects/ops/envs", false},
		{[]Scope{ReadOnly}, "POST", "/api/v1/workers", false},
		{[]Scope{ReadOnly}, "GET", "/api/v1/users", false},
		{[]Scope{ReadOnly}, "GET", "/api/v1/signins", false},
		{[]Scope{ReadOnly}, "GET", "/api/v1/apps", false},
		{[]Scope{ReadOnly}, "GET", "/api/v1/projects/ops/envsx", true},
	}
	for _, c := range cases {
		if got := Allows(c.have, c.method, c.path); got != c.want {
			t.Errorf("%v %s %s: got %v, want %v", c.have, c.method, c.path, got, c.want)
		}
	}
}

func TestParseScopes(t *testing.T) {
	if s, err := ParseScopes("scopes", []string{"runs", "envs"}); err != nil || len(s) != 2 {
		t.Fatalf("good list refused: %v", err)
	}
	for _, bad := range [][]string{nil, {"root"}, {"runs", "runs"}, {"a", "b", "c", "d", "e", "f", "g", "h", "i"}} {
		if _, err := ParseScopes("scopes", bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	if _, err := ParseAppScopes("scopes", []string{"envs", "crons"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ParseAppScopes("scopes", []string{"configs"}); err == nil {
		t.Error("configs accepted: ql3 does not serve QingLong's config files")
	}
}
