package httpapi

import (
	"bytes"
	"encoding/json"
	"github.com/ql3/ql3/panel"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzCreateTaskBody sends arbitrary bodies to POST /api/v1/tasks: the
// answer is 201 or a 4xx JSON error with a code (never 5xx), and a rejected
// body never leaves a task behind.
func FuzzCreateTaskBody(f *testing.F) {
	f.Add([]byte(helloTask))
	f.Add([]byte(`{"name":"a","spec":{"kind":"qinglong/command@v1","shell":{"command":"echo hi"}},"triggers":[{"expression":"@hourly","misfire":"fire_once"}]}`))
	f.Add([]byte(`{"name":"a","spec":{"kind":"qinglong/command@v1","argv":{"file":"true"}},"triggers":[{"expression":"* * * * *","timeZone":"Nowhere"}]}`))
	f.Add([]byte(`{"name":"a","spec":null}`))
	f.Add([]byte(`{"name":"a","name":"b"}`))
	f.Add([]byte(`[]`))
	fx := newFixture(f)
	api := New(Config{UI: panel.UI{}, Store: fx.store, Logs: fx.logs, Clock: fx.clock, Auth: Auth{Disabled: true}})
	created := 0
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest("POST", "/api/v1/tasks", bytes.NewReader(body))
		req.RemoteAddr = "127.0.0.1:1"
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, req)
		switch {
		case rec.Code == http.StatusCreated:
			created++
			var task Task
			if err := json.Unmarshal(rec.Body.Bytes(), &task); err != nil || task.ID == "" {
				t.Fatalf("201 without a task: %s", rec.Body)
			}
			// Free the name for later inputs.
			del := httptest.NewRequest("DELETE", "/api/v1/tasks/"+task.ID, nil)
			del.RemoteAddr = "127.0.0.1:1"
			api.ServeHTTP(httptest.NewRecorder(), del)
		case rec.Code >= 400 && rec.Code < 500:
			var e ErrorBody
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Code == "" || e.Message == "" {
				t.Fatalf("%d without an error body: %q", rec.Code, rec.Body)
			}
		default:
			t.Fatalf("status %d for %q: %s", rec.Code, body, rec.Body)
		}
		list := httptest.NewRequest("GET", "/api/v1/tasks?deleted=1&limit=200", nil)
		list.RemoteAddr = "127.0.0.1:1"
		lrec := httptest.NewRecorder()
		api.ServeHTTP(lrec, list)
		if n := strings.Count(lrec.Body.String(), `"id":`); n > created {
			t.Fatalf("%d tasks exist, only %d creates succeeded", n, created)
		}
	})
}
