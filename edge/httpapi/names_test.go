package httpapi

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

func taskBody(name, triggers string) string {
	return `{"name":` + quoteJSON(name) + `,"spec":{"kind":"qinglong/command@v1","argv":{"file":"true"}},"triggers":[` + triggers + `]}`
}

func quoteJSON(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20:
			b.WriteString(`\u00`)
			b.WriteByte("0123456789abcdef"[r>>4])
			b.WriteByte("0123456789abcdef"[r&15])
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// TestAmbiguousTaskNamesRefused: a task may not be named like another
// task's id (lookups take "id or name", so `task rm <name>` would act on the
// other task), nor only of spaces or invisible characters, nor with bidi
// controls.
func TestAmbiguousTaskNamesRefused(t *testing.T) {
	f := newFixture(t)
	victim := f.createHello()
	for _, name := range []string{victim.ID, strings.ToUpper(victim.ID), strings.ReplaceAll(victim.ID, "-", ""),
		"   ", "\u200b", "\u3000\u3000", "backup\u202egnp.exe", "\u2066x\u2069"} {
		r := f.call("POST", "/api/v1/tasks", taskBody(name, ""))
		if r.status != http.StatusBadRequest || r.errBody(t).Field != "name" {
			t.Errorf("name %q: %d %s", name, r.status, r.body)
		}
	}
	// Renaming onto an id is refused too.
	r := f.call("PUT", "/api/v1/tasks/hello", `{"expectedRevision":1,"name":"`+victim.ID+`","spec":{"kind":"qinglong/command@v1","argv":{"file":"true"}}}`)
	if r.status != http.StatusBadRequest || r.errBody(t).Field != "name" {
		t.Errorf("rename to an id: %d %s", r.status, r.body)
	}
	if n := f.taskCount(); n != 1 {
		t.Fatalf("%d tasks, want only the first", n)
	}
}

// TestDuplicateTriggersRefused: the same expression and zone twice on one
// task (two Runs per instant) is a conflict, in one create request and
// when adding or editing a trigger; another zone is a different schedule.
func TestDuplicateTriggersRefused(t *testing.T) {
	f := newFixture(t)
	r := f.call("POST", "/api/v1/tasks", taskBody("twice", `{"expression":"*/5 * * * * *"},{"expression":"*/5  *  * * * *","timeZone":"UTC"}`))
	if r.status != http.StatusConflict || r.errBody(t).Field != "triggers[1].expression" {
		t.Fatalf("identical triggers in one create: %d %s", r.status, r.body)
	}
	task := f.createHello() // */5 * * * * * Europe/London
	r = f.call("POST", "/api/v1/tasks/hello/triggers", `{"expression":"*/5 * * * * *","timeZone":"Europe/London"}`)
	if r.status != http.StatusConflict || r.errBody(t).Field != "expression" {
		t.Fatalf("adding an identical trigger: %d %s", r.status, r.body)
	}
	var other Trigger
	f.decode("POST", "/api/v1/tasks/hello/triggers", `{"expression":"*/5 * * * * *","timeZone":"Asia/Tokyo"}`, http.StatusCreated, &other)
	r = f.call("PUT", "/api/v1/tasks/hello/triggers/"+other.ID, `{"expectedRevision":1,"expression":"*/5 * * * * *","timeZone":"Europe/London"}`)
	if r.status != http.StatusConflict {
		t.Fatalf("editing onto another trigger's schedule: %d %s", r.status, r.body)
	}
	// A trigger may be re-published with its own schedule (say, a new misfire policy).
	first := task.Triggers[0]
	r = f.call("PUT", "/api/v1/tasks/hello/triggers/"+first.ID, `{"expectedRevision":1,"expression":"*/5 * * * * *","timeZone":"Europe/London","misfire":"fire_once"}`)
	if r.status != http.StatusOK {
		t.Fatalf("re-publishing a trigger's own schedule: %d %s", r.status, r.body)
	}
}

// TestNewTriggerShowsNextFire: right after a task is created (before the
// scheduler initialised the cursor) its trigger already shows the next
// fire the scheduler will compute, not nothing ("NEXT FIRE -").
func TestNewTriggerShowsNextFire(t *testing.T) {
	f := newFixture(t)
	task := f.createHello() // */5 * * * * * in Europe/London, at fixtureStart (12:00:00)
	if got, want := task.Triggers[0].NextFireAtMs, fixtureStart.Add(5*time.Second).UnixMilli(); got != want {
		t.Fatalf("nextFireAtMs = %d, want %d", got, want)
	}
	var got Task
	f.decode("GET", "/api/v1/tasks/hello", "", http.StatusOK, &got)
	if got.Triggers[0].NextFireAtMs == 0 {
		t.Fatal("GET task: no next fire")
	}
	f.call("POST", "/api/v1/tasks/hello/disable", "")
	var disabled Task // fresh: omitempty fields would keep old values
	f.decode("GET", "/api/v1/tasks/hello", "", http.StatusOK, &disabled)
	if disabled.Triggers[0].NextFireAtMs != 0 {
		t.Fatal("a disabled task shows a next fire")
	}
}

// TestTaskNamesCountCharacters: a name's limit is 128 characters, not
// bytes, as on the cluster: 50 CJK characters (150 bytes) and an emoji
// name are accepted, stored and found by name; 129 CJK characters are
// refused with the cluster's words.
func TestTaskNamesCountCharacters(t *testing.T) {
	f := newFixture(t)
	cjk50 := strings.Repeat("日", 50)
	for _, name := range []string{cjk50, "🚀 deploy 🌙", strings.Repeat("字", 128)} {
		var created Task
		f.decode("POST", "/api/v1/tasks", taskBody(name, ""), http.StatusCreated, &created)
		if created.Name != name {
			t.Fatalf("stored %q, want %q", created.Name, name)
		}
		var got Task
		f.decode("GET", "/api/v1/tasks/"+url.PathEscape(name), "", http.StatusOK, &got)
		if got.ID != created.ID {
			t.Fatalf("lookup by name %q found %q", name, got.ID)
		}
	}
	r := f.call("POST", "/api/v1/tasks", taskBody(strings.Repeat("日", 129), ""))
	if e := r.errBody(t); r.status != http.StatusBadRequest || e.Field != "name" || e.Message != "must be 1..128 characters, got 129" {
		t.Fatalf("129 characters: %d %s", r.status, r.body)
	}
	r = f.call("PUT", "/api/v1/tasks/"+url.PathEscape(cjk50), `{"expectedRevision":1,"name":`+quoteJSON(strings.Repeat("日", 129))+`,"spec":{"kind":"qinglong/command@v1","argv":{"file":"true"}}}`)
	if r.status != http.StatusBadRequest || r.errBody(t).Field != "name" {
		t.Fatalf("rename to 129 characters: %d %s", r.status, r.body)
	}
}

// TestTaskNameNormalizedOnce: the decomposed spelling of a stored name is
// the same name — a second task under it is a conflict, and a lookup by it
// finds the first.
func TestTaskNameNormalizedOnce(t *testing.T) {
	f := newFixture(t)
	var created Task
	f.decode("POST", "/api/v1/tasks", taskBody("caf\u00e9", ""), http.StatusCreated, &created)
	if r := f.call("POST", "/api/v1/tasks", taskBody("cafe\u0301", "")); r.status != http.StatusConflict || r.errBody(t).Field != "name" {
		t.Fatalf("the NFD spelling as a second task: %d %s", r.status, r.body)
	}
	var got Task
	f.decode("GET", "/api/v1/tasks/"+url.PathEscape("cafe\u0301"), "", http.StatusOK, &got)
	if got.ID != created.ID || got.Name != "caf\u00e9" {
		t.Fatalf("lookup by the NFD spelling: %+v", got)
	}
}
