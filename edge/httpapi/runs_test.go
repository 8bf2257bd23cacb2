package httpapi

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/panel"
)

func TestTriggerCRUD(t *testing.T) {
	f := newFixture(t)
	task := f.createHello()
	base := "/api/v1/tasks/" + task.ID + "/triggers"
	var tr Trigger
	f.decode("POST", base, `{"expression":"0 9 * * 1-5","timeZone":"America/New_York","misfire":"fire_once"}`, http.StatusCreated, &tr)
	if tr.Revision != 1 || tr.Misfire != "fire_once" {
		t.Fatalf("created %+v", tr)
	}
	var l List[Trigger]
	f.decode("GET", base, "", http.StatusOK, &l)
	if len(l.Items) != 2 {
		t.Fatalf("list %+v", l)
	}
	var up Trigger
	f.decode("PUT", base+"/"+tr.ID, `{"expectedRevision":1,"expression":"0 10 * * 1-5","timeZone":"America/New_York"}`, http.StatusOK, &up)
	if up.Revision != 2 || up.Expression != "0 10 * * 1-5" || up.Misfire != "skip" {
		t.Errorf("updated %+v", up)
	}
	if r := f.call("PUT", base+"/"+tr.ID, `{"expectedRevision":1,"expression":"0 11 * * *"}`); r.status != http.StatusConflict {
		t.Errorf("stale trigger update: %d %s", r.status, r.body)
	}
	if r := f.call("PUT", base+"/"+tr.ID, `{"expectedRevision":2,"expression":"0 11 * * *","timeZone":"Nowhere/Zone"}`); r.status != 400 || r.errBody(t).Field != "timeZone" {
		t.Errorf("bad zone on update: %d %s", r.status, r.body)
	}
	if r := f.call("POST", base, `{"expression":"0 0 31 2 *"}`); r.status != 400 || r.errBody(t).Field != "expression" {
		t.Errorf("never-firing expression: %d %s", r.status, r.body)
	}
	// A trigger addressed under another task does not exist there.
	var other Task
	f.decode("POST", "/api/v1/tasks", `{"name":"other","spec":{"kind":"qinglong/command@v1","argv":{"file":"true"}}}`, http.StatusCreated, &other)
	if r := f.call("GET", "/api/v1/tasks/other/triggers/"+tr.ID, ""); r.status != http.StatusNotFound {
		t.Errorf("trigger under the wrong task: %d", r.status)
	}
	if r := f.call("DELETE", "/api/v1/tasks/other/triggers/"+tr.ID, ""); r.status != http.StatusNotFound {
		t.Errorf("delete under the wrong task: %d", r.status)
	}
	f.decode("DELETE", base+"/"+tr.ID, "", http.StatusNoContent, nil)
	f.decode("GET", base, "", http.StatusOK, &l)
	if len(l.Items) != 1 {
		t.Errorf("after delete: %+v", l)
	}
}

func TestRunNowIdempotencyAndCancel(t *testing.T) {
	f := newFixture(t)
	task := f.createHello()
	r1 := f.call("POST", "/api/v1/tasks/hello/runs", "", "Idempotency-Key", "deploy-42")
	if r1.status != http.StatusCreated {
		t.Fatalf("run now: %d %s", r1.status, r1.body)
	}
	var first Run
	f.decode("POST", "/api/v1/tasks/hello/runs", `{"idempotencyKey":"deploy-42"}`, http.StatusOK, &first)
	if first.Created == nil || *first.Created || first.Status != "queued" || first.TaskID != task.ID || first.Origin != "manual" {
		t.Fatalf("repeat = %+v", first)
	}
	if !strings.Contains(string(r1.body), first.ID) {
		t.Errorf("the repeated key returned another run: %s vs %s", r1.body, first.ID)
	}
	for _, bad := range []struct {
		body, key, field string
	}{
		{`{"idempotencyKey":"a"}`, "b", "idempotencyKey"},
		{``, "has space", "Idempotency-Key"},
		{``, strings.Repeat("k", 129), "Idempotency-Key"},
		{`{"idempotencyKey":"x","extra":1}`, "", "extra"},
		{`{"rerunOf":"no-such-run"}`, "", "rerunOf"},
	} {
		var hdr []string
		if bad.key != "" {
			hdr = []string{"Idempotency-Key", bad.key}
		}
		r := f.call("POST", "/api/v1/tasks/hello/runs", bad.body, hdr...)
		if r.status != 400 || r.errBody(t).Field != bad.field {
			t.Errorf("run now %q/%q: %d %s, want field %s", bad.body, bad.key, r.status, r.body, bad.field)
		}
	}
	var got Run
	f.decode("GET", "/api/v1/runs/"+first.ID, "", http.StatusOK, &got)
	if len(got.Attempts) != 1 || got.Attempts[0].Number != 1 {
		t.Errorf("run attempts %+v", got.Attempts)
	}
	var cancelled Run
	f.decode("POST", "/api/v1/runs/"+first.ID+"/cancel", "", http.StatusOK, &cancelled)
	if cancelled.Status != "cancelled" {
		t.Errorf("cancel of a queued run: %+v", cancelled)
	}
	if r := f.call("POST", "/api/v1/runs/"+first.ID+"/cancel", ""); r.status != http.StatusConflict {
		t.Errorf("second cancel: %d %s", r.status, r.body)
	}
	if r := f.call("POST", "/api/v1/runs/nope/cancel", ""); r.status != http.StatusNotFound {
		t.Errorf("cancel of a missing run: %d", r.status)
	}
	var ev List[RunEvent]
	f.decode("GET", "/api/v1/runs/"+first.ID+"/events", "", http.StatusOK, &ev)
	types := []string{}
	for i, e := range ev.Items {
		if e.Seq != int64(i+1) {
			t.Errorf("event %d has seq %d", i, e.Seq)
		}
		types = append(types, e.Type)
	}
	if got := strings.Join(types, ","); !strings.HasPrefix(got, "run.created,run.queued") || !strings.HasSuffix(got, "run.cancelled") {
		t.Errorf("events %s", got)
	}
	f.decode("GET", "/api/v1/runs/"+first.ID+"/events?after=1&limit=1", "", http.StatusOK, &ev)
	if len(ev.Items) != 1 || ev.Items[0].Seq != 2 || ev.NextCursor != "2" {
		t.Errorf("events page %+v", ev)
	}
}

func TestRunListFiltersAndKeysetPagination(t *testing.T) {
	f := newFixture(t)
	f.createHello() // concurrency allow: every run-now is queued
	const n = 9
	ids := map[string]bool{}
	for i := range n {
		var r Run
		f.decode("POST", "/api/v1/tasks/hello/runs", fmt.Sprintf(`{"idempotencyKey":"k%d"}`, i), http.StatusCreated, &r)
		ids[r.ID] = true
		f.clock.Advance(time.Millisecond)
	}
	var one Run
	for id := range ids {
		f.decode("POST", "/api/v1/runs/"+id+"/cancel", "", http.StatusOK, &one)
		break
	}
	seen := map[string]bool{}
	cursor := ""
	var lastCreated int64 = 1 << 62
	for pages := 0; ; pages++ {
		if pages > n {
			t.Fatal("pagination does not end")
		}
		var l List[Run]
		f.decode("GET", "/api/v1/runs?task=hello&limit=4&cursor="+cursor, "", http.StatusOK, &l)
		for _, r := range l.Items {
			if seen[r.ID] || !ids[r.ID] {
				t.Fatalf("run %s repeated or unknown", r.ID)
			}
			if r.CreatedAtMs > lastCreated {
				t.Errorf("runs not newest first")
			}
			lastCreated = r.CreatedAtMs
			seen[r.ID] = true
		}
		if l.NextCursor == "" {
			break
		}
		cursor = l.NextCursor
	}
	if len(seen) != n {
		t.Errorf("saw %d runs, want %d", len(seen), n)
	}
	var l List[Run]
	f.decode("GET", "/api/v1/runs?status=cancelled", "", http.StatusOK, &l)
	if len(l.Items) != 1 || l.Items[0].ID != one.ID {
		t.Errorf("status filter: %+v", l.Items)
	}
	f.decode("GET", "/api/v1/runs?status=queued,cancelled&limit=200", "", http.StatusOK, &l)
	if len(l.Items) != n {
		t.Errorf("two-status filter: %d runs", len(l.Items))
	}
	for q, field := range map[string]string{"status=bogus": "status", "task=nope": "task", "limit=-1": "limit", "cursor=%21%21": "cursor"} {
		r := f.call("GET", "/api/v1/runs?"+q, "")
		if r.status != 400 || r.errBody(t).Field != field {
			t.Errorf("?%s: %d %s, want field %s", q, r.status, r.body, field)
		}
	}
}

func TestLogRangeAndFollow(t *testing.T) {
	f := newFixture(t)
	f.createHello()
	var rn Run
	f.decode("POST", "/api/v1/tasks/hello/runs", "", http.StatusCreated, &rn)
	base := "/api/v1/runs/" + rn.ID + "/attempts/1/log"

	// Before the attempt starts there is no log: an empty, incomplete range.
	r := f.call("GET", base, "")
	if r.status != 200 || len(r.body) != 0 || r.header.Get("X-Log-Complete") != "false" {
		t.Fatalf("pending log: %d %q %v", r.status, r.body, r.header)
	}

	// Follow from the start while a writer produces output.
	w, err := f.logs.Create(rn.ID, 1)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(context.Background(), "GET", f.srv.URL+base+"?follow=1", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+f.token) // logs need a credential, also on loopback (ADR 0039)
	resp, err := f.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for i := range 3 {
		fmt.Fprintf(w, "line %d\n", i)
		line, err := br.ReadString('\n')
		if err != nil || line != fmt.Sprintf("line %d\n", i) {
			t.Fatalf("follow line %d = %q, %v (bytes must arrive while the attempt runs)", i, line, err)
		}
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(br)
	if err != nil || len(rest) != 0 {
		t.Fatalf("after close: %q, %v", rest, err)
	}
	if resp.Trailer.Get("X-Log-Complete") != "true" || resp.Trailer.Get("X-Log-Next-Offset") != "21" {
		t.Errorf("trailers %v", resp.Trailer)
	}

	// Byte ranges of the finished log.
	r = f.call("GET", base+"?offset=7&limit=7", "")
	if r.status != 200 || string(r.body) != "line 1\n" || r.header.Get("X-Log-Next-Offset") != "14" ||
		r.header.Get("X-Log-Size") != "21" || r.header.Get("X-Log-Complete") != "true" {
		t.Errorf("range: %d %q %v", r.status, r.body, r.header)
	}
	// A follow of a complete log returns what is left and ends.
	r = f.call("GET", base+"?offset=14&follow=1", "")
	if r.status != 200 || string(r.body) != "line 2\n" {
		t.Errorf("follow of a complete log: %d %q", r.status, r.body)
	}
	for q, field := range map[string]string{"offset=-1": "offset", "offset=999": "offset", "limit=0": "limit", "limit=2000000": "limit", "follow=x": "follow"} {
		r := f.call("GET", base+"?"+q, "")
		if r.status != 400 || r.errBody(t).Field != field {
			t.Errorf("?%s: %d %s, want field %s", q, r.status, r.body, field)
		}
	}
	if r := f.call("GET", "/api/v1/runs/"+rn.ID+"/attempts/2/log", ""); r.status != http.StatusNotFound {
		t.Errorf("missing attempt: %d", r.status)
	}
	if r := f.call("GET", "/api/v1/runs/"+rn.ID+"/attempts/zero/log", ""); r.status != 400 || r.errBody(t).Field != "attempt" {
		t.Errorf("bad attempt number: %d %s", r.status, r.body)
	}
}

func TestFollowEndsWhenAttemptEndsWithoutLog(t *testing.T) {
	f := newFixture(t)
	f.createHello()
	var rn Run
	f.decode("POST", "/api/v1/tasks/hello/runs", "", http.StatusCreated, &rn)
	f.decode("POST", "/api/v1/runs/"+rn.ID+"/cancel", "", http.StatusOK, nil)
	a, err := f.store.GetAttempt(context.Background(), edge.AttemptRef{RunID: rn.ID, Number: 1})
	if err != nil || !a.Status.Terminal() {
		t.Fatalf("attempt after cancel: %+v %v", a, err)
	}
	r := f.call("GET", "/api/v1/runs/"+rn.ID+"/attempts/1/log?follow=1", "")
	if r.status != 200 || len(r.body) != 0 {
		t.Errorf("follow of a cancelled attempt: %d %q", r.status, r.body)
	}
}

func TestUnknownRoutesAreJSON(t *testing.T) {
	f := newFixture(t)
	for _, c := range []struct{ method, path string }{{"GET", "/api/v1/nothing"}, {"DELETE", "/api/v1/runs"}, {"GET", "/api/v2/tasks"}} {
		r := f.call(c.method, c.path, "")
		if r.status != 404 || r.errBody(t).Code != "not_found" {
			t.Errorf("%s %s: %d %s", c.method, c.path, r.status, r.body)
		}
	}
	r := f.call("GET", "/healthz", "")
	if r.status != 200 || !strings.Contains(string(r.body), `"status":"ok"`) {
		t.Errorf("healthz: %d %s", r.status, r.body)
	}
	r = f.call("GET", "/", "")
	if r.status != 200 || !strings.Contains(string(r.body), "<title>ql3</title>") || strings.Contains(r.header.Get("Content-Security-Policy"), "unsafe-inline") {
		t.Errorf("panel: %d", r.status)
	}
}

// TestFollowOutlivesServerTimeouts: a follow stays open across quiet
// periods longer than the server's read and write timeouts.
func TestFollowOutlivesServerTimeouts(t *testing.T) {
	f := newFixture(t)
	f.createHello()
	var rn Run
	f.decode("POST", "/api/v1/tasks/hello/runs", "", http.StatusCreated, &rn)
	w, err := f.logs.Create(rn.ID, 1)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(New(Config{UI: panel.UI{}, Store: f.store, Logs: f.logs, Clock: f.clock, Auth: Auth{Disabled: true}}))
	// The server's timeouts must not be so short that the handler's own
	// start (store and log reads on a loaded machine) outlasts them: the
	// read deadline left by the server would fire in its background read
	// and cancel the request before the handler drops it.
	srv.Config.ReadTimeout = 500 * time.Millisecond
	srv.Config.WriteTimeout = 500 * time.Millisecond
	srv.Start()
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/api/v1/runs/" + rn.ID + "/attempts/1/log?follow=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// Stay quiet for several timeouts, then write and finish.
	time.Sleep(1500 * time.Millisecond)
	fmt.Fprint(w, "late\n")
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil || string(body) != "late\n" || resp.Trailer.Get("X-Log-Complete") != "true" {
		t.Fatalf("follow across timeouts: %q %v trailers %v", body, err, resp.Trailer)
	}
}
