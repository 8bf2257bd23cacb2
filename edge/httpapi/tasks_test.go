package httpapi

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

func TestCreateTaskWithTriggersAndRead(t *testing.T) {
	f := newFixture(t)
	task := f.createHello()
	if task.ID == "" || task.Name != "hello" || !task.Enabled || task.Revision != 1 {
		t.Fatalf("created task = %+v", task)
	}
	if !strings.HasPrefix(task.Digest, "sha256:") {
		t.Errorf("digest = %q", task.Digest)
	}
	if task.Spec.Argv == nil || task.Spec.Argv.File != "echo" || task.Spec.TimeoutMs != 86_400_000 || task.Spec.Retry.MaxAttempts != 1 {
		t.Errorf("spec defaults not applied: %+v", task.Spec)
	}
	if len(task.Triggers) != 1 {
		t.Fatalf("triggers = %+v", task.Triggers)
	}
	tr := task.Triggers[0]
	if tr.Expression != "*/5 * * * * *" || tr.TimeZone != "Europe/London" || tr.Misfire != "skip" || tr.GraceMs != 30_000 || !tr.Enabled {
		t.Errorf("trigger = %+v", tr)
	}
	for _, ref := range []string{task.ID, "hello"} {
		var got Task
		f.decode("GET", "/api/v1/tasks/"+ref, "", http.StatusOK, &got)
		if got.ID != task.ID || len(got.Triggers) != 1 || got.Triggers[0].ID != tr.ID {
			t.Errorf("GET %s = %+v", ref, got)
		}
	}
	var l List[Task]
	f.decode("GET", "/api/v1/tasks", "", http.StatusOK, &l)
	if len(l.Items) != 1 || l.Items[0].ID != task.ID || l.NextCursor != "" {
		t.Errorf("list = %+v", l)
	}
	r := f.call("GET", "/api/v1/tasks/nope", "")
	if r.status != http.StatusNotFound || r.errBody(t).Code != "not_found" {
		t.Errorf("missing task: %d %s", r.status, r.body)
	}
}

func TestShellTaskDefaultServerGrace(t *testing.T) {
	f := newFixture(t)
	var task Task
	f.decode("POST", "/api/v1/tasks", `{"name":"home","spec":{"kind":"qinglong/command@v1","shell":{"command":"echo $HOME"}},"triggers":[{"expression":"@hourly","misfire":"fire_once","graceMs":5000}]}`, http.StatusCreated, &task)
	if task.Spec.Shell == nil || task.Spec.Shell.Command != "echo $HOME" || task.Spec.Shell.Shell != "/bin/sh" {
		t.Errorf("shell spec = %+v", task.Spec.Shell)
	}
	if tr := task.Triggers[0]; tr.Misfire != "fire_once" || tr.GraceMs != 5000 || tr.TimeZone != "UTC" {
		t.Errorf("trigger = %+v", tr)
	}
}

// TestBadInputWritesNothing: every rejected create names the field, uses
// the documented status, and leaves no task behind.
func TestBadInputWritesNothing(t *testing.T) {
	spec := `{"kind":"qinglong/command@v1","argv":{"file":"true"}}`
	big := `{"name":"big","spec":{"kind":"qinglong/command@v1","argv":{"file":"true","args":["` + strings.Repeat("x", DefaultMaxBodyBytes) + `"]}}}`
	cases := []struct {
		name      string
		body      string
		status    int
		code      string
		field     string
		inMessage string
	}{
		{"invalid cron", `{"name":"a","spec":` + spec + `,"triggers":[{"expression":"61 * * * *"}]}`, 400, "invalid", "triggers[0].expression", ""},
		{"garbage cron", `{"name":"a","spec":` + spec + `,"triggers":[{"expression":"every day"}]}`, 400, "invalid", "triggers[0].expression", ""},
		{"second trigger invalid", `{"name":"a","spec":` + spec + `,"triggers":[{"expression":"* * * * *"},{"expression":"* * * * *","timeZone":"Mars/Olympus"}]}`, 400, "invalid", "triggers[1].timeZone", "Mars/Olympus"},
		{"unknown zone", `{"name":"a","spec":` + spec + `,"triggers":[{"expression":"* * * * *","timeZone":"Europe/Atlantis"}]}`, 400, "invalid", "triggers[0].timeZone", "Europe/Atlantis"},
		{"local zone", `{"name":"a","spec":` + spec + `,"triggers":[{"expression":"* * * * *","timeZone":"Local"}]}`, 400, "invalid", "triggers[0].timeZone", ""},
		{"bad misfire", `{"name":"a","spec":` + spec + `,"triggers":[{"expression":"* * * * *","misfire":"always"}]}`, 400, "invalid", "triggers[0].misfire", ""},
		{"grace too large", `{"name":"a","spec":` + spec + `,"triggers":[{"expression":"* * * * *","graceMs":300001}]}`, 400, "invalid", "triggers[0].graceMs", ""},
		{"missing expression", `{"name":"a","spec":` + spec + `,"triggers":[{}]}`, 400, "invalid", "triggers[0].expression", ""},
		{"oversized body", big, 413, "too_large", "", ""},
		{"unknown field", `{"name":"a","spec":` + spec + `,"bogus":1}`, 400, "invalid", "bogus", ""},
		{"unknown trigger field", `{"name":"a","spec":` + spec + `,"triggers":[{"expression":"* * * * *","zone":"UTC"}]}`, 400, "invalid", "triggers[0].zone", ""},
		{"unknown spec field", `{"name":"a","spec":{"kind":"qinglong/command@v1","argv":{"file":"true"},"cmd":"x"}}`, 400, "invalid", "spec.cmd", ""},
		{"bad spec value", `{"name":"a","spec":{"kind":"qinglong/command@v1","argv":{"file":"true"},"retry":{"maxAttempts":99}}}`, 400, "invalid", "spec.retry.maxAttempts", ""},
		{"bad spec kind", `{"name":"a","spec":{"kind":"docker@v9","argv":{"file":"true"}}}`, 400, "invalid", "spec.kind", ""},
		{"missing spec", `{"name":"a"}`, 400, "invalid", "spec", ""},
		{"missing name", `{"spec":` + spec + `}`, 400, "invalid", "name", ""},
		{"control char in name", `{"name":"a\u0007b","spec":` + spec + `}`, 400, "invalid", "name", ""},
		{"bad JSON", `{"name":"a",`, 400, "invalid", "", ""},
		{"not an object", `["a"]`, 400, "invalid", "", ""},
		{"duplicate key", `{"name":"a","name":"b","spec":` + spec + `}`, 400, "invalid", "name", ""},
		{"trailing data", `{"name":"a","spec":` + spec + `} {}`, 400, "invalid", "", ""},
		{"wrong type", `{"name":5,"spec":` + spec + `}`, 400, "invalid", "name", ""},
		{"empty body", ``, 400, "invalid", "", ""},
	}
	f := newFixture(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := f.call("POST", "/api/v1/tasks", tc.body)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			e := r.errBody(t)
			if e.Code != tc.code || e.Field != tc.field || e.Message == "" {
				t.Errorf("error = %+v, want code %q field %q", e, tc.code, tc.field)
			}
			if tc.inMessage != "" && !strings.Contains(e.Message, tc.inMessage) {
				t.Errorf("message %q does not mention %q", e.Message, tc.inMessage)
			}
			if n := f.taskCount(); n != 0 {
				t.Errorf("%d tasks exist after a rejected create", n)
			}
		})
	}
}

func TestContentTypeMustBeJSON(t *testing.T) {
	f := newFixture(t)
	r := f.call("POST", "/api/v1/tasks", helloTask, "Content-Type", "text/plain")
	if r.status != 400 || r.errBody(t).Field != "Content-Type" {
		t.Fatalf("%d %s", r.status, r.body)
	}
}

func TestUpdateTaskPublishesRevisionAndDetectsConflicts(t *testing.T) {
	f := newFixture(t)
	task := f.createHello()
	var up Task
	body := `{"expectedRevision":1,"name":"hello2","spec":{"kind":"qinglong/command@v1","argv":{"file":"echo","args":["bye"]}}}`
	f.decode("PUT", "/api/v1/tasks/"+task.ID, body, http.StatusOK, &up)
	if up.Revision != 2 || up.Name != "hello2" || up.Digest == task.Digest {
		t.Fatalf("updated = %+v", up)
	}
	// A stale revision is a conflict and changes nothing.
	r := f.call("PUT", "/api/v1/tasks/"+task.ID, `{"expectedRevision":1,"name":"x","spec":{"kind":"qinglong/command@v1","argv":{"file":"true"}}}`)
	if r.status != http.StatusConflict || r.errBody(t).Code != "conflict" {
		t.Fatalf("stale update: %d %s", r.status, r.body)
	}
	var got Task
	f.decode("GET", "/api/v1/tasks/"+task.ID, "", http.StatusOK, &got)
	if got.Revision != 2 || got.Name != "hello2" {
		t.Errorf("after conflict: %+v", got)
	}
	for _, bad := range []struct{ body, field string }{
		{`{"name":"x","spec":{"kind":"qinglong/command@v1","argv":{"file":"true"}}}`, "expectedRevision"},
		{`{"expectedRevision":2,"name":"x","spec":{"kind":"qinglong/command@v1"}}`, "spec"},
		{`{"expectedRevision":2,"name":"","spec":{"kind":"qinglong/command@v1","argv":{"file":"true"}}}`, "name"},
	} {
		r := f.call("PUT", "/api/v1/tasks/"+task.ID, bad.body)
		if r.status != 400 || !strings.HasPrefix(r.errBody(t).Field, bad.field) {
			t.Errorf("PUT %s: %d %s, want field %s", bad.body, r.status, r.body, bad.field)
		}
	}
}

func TestEnableDisableAndDelete(t *testing.T) {
	f := newFixture(t)
	task := f.createHello()
	var got Task
	f.decode("POST", "/api/v1/tasks/hello/disable", "", http.StatusOK, &got)
	if got.Enabled {
		t.Error("disable left the task enabled")
	}
	f.decode("PATCH", "/api/v1/tasks/"+task.ID, `{"enabled":true}`, http.StatusOK, &got)
	if !got.Enabled {
		t.Error("PATCH enabled=true left the task disabled")
	}
	if r := f.call("PATCH", "/api/v1/tasks/"+task.ID, `{}`); r.status != 400 || r.errBody(t).Field != "enabled" {
		t.Errorf("PATCH {}: %d %s", r.status, r.body)
	}
	if r := f.call("POST", "/api/v1/tasks/"+task.ID+"/enable", `{"x":1}`); r.status != 400 || r.errBody(t).Field != "x" {
		t.Errorf("enable with body: %d %s", r.status, r.body)
	}
	f.decode("DELETE", "/api/v1/tasks/hello", "", http.StatusNoContent, nil)
	if r := f.call("GET", "/api/v1/tasks/hello", ""); r.status != http.StatusNotFound {
		t.Errorf("deleted task by name: %d", r.status)
	}
	var l List[Task]
	f.decode("GET", "/api/v1/tasks", "", http.StatusOK, &l)
	if len(l.Items) != 0 {
		t.Errorf("live tasks after delete: %+v", l.Items)
	}
	f.decode("GET", "/api/v1/tasks?deleted=true", "", http.StatusOK, &l)
	if len(l.Items) != 1 || l.Items[0].DeletedAtMs == 0 {
		t.Errorf("deleted tasks: %+v", l.Items)
	}
	// The name is free again.
	f.createHello()
}

func TestDuplicateNameIsConflict(t *testing.T) {
	f := newFixture(t)
	f.createHello()
	r := f.call("POST", "/api/v1/tasks", helloTask)
	if r.status != http.StatusConflict {
		t.Fatalf("duplicate name: %d %s", r.status, r.body)
	}
	if n := f.taskCount(); n != 1 {
		t.Errorf("%d tasks after a duplicate create", n)
	}
}

func TestTaskListPagination(t *testing.T) {
	f := newFixture(t)
	const n = 7
	for i := range n {
		f.decode("POST", "/api/v1/tasks", fmt.Sprintf(`{"name":"t%d","spec":{"kind":"qinglong/command@v1","argv":{"file":"true"}}}`, i), http.StatusCreated, nil)
	}
	seen := map[string]bool{}
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > n {
			t.Fatal("pagination does not end")
		}
		var l List[Task]
		f.decode("GET", "/api/v1/tasks?limit=3&cursor="+cursor, "", http.StatusOK, &l)
		for _, it := range l.Items {
			if seen[it.ID] {
				t.Fatalf("task %s on two pages", it.ID)
			}
			seen[it.ID] = true
		}
		if l.NextCursor == "" {
			break
		}
		cursor = l.NextCursor
	}
	if len(seen) != n {
		t.Errorf("saw %d tasks, want %d", len(seen), n)
	}
	for _, q := range []string{"limit=0", "limit=201", "limit=x", "deleted=maybe"} {
		if r := f.call("GET", "/api/v1/tasks?"+q, ""); r.status != 400 {
			t.Errorf("?%s: %d", q, r.status)
		}
	}
}
