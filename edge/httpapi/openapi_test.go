package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

var updateOpenAPI = flag.Bool("update", false, "rewrite openapi.json from the route table")

// TestOpenAPIDocumentUpToDate regenerates the document from the route
// table and the wire types; a field added to a response type, a route or a
// status added to the table, changes it. -update rewrites openapi.json.
func TestOpenAPIDocumentUpToDate(t *testing.T) {
	doc, err := edgeGenerator().Document(edgeRoutes())
	if err != nil {
		t.Fatal(err)
	}
	if *updateOpenAPI {
		if err := os.WriteFile("openapi.json", doc, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(doc, openAPIDocument) {
		t.Fatal("openapi.json is stale: run `go test ./httpapi -run TestOpenAPIDocumentUpToDate -update` and review the diff")
	}
}

// notAPI are mux patterns that are not part of the JSON API: the panel's
// static files and the JSON 404 for unknown /api/ paths.
var notAPI = map[string]bool{"GET /{$}": true, "GET /panel/app.js": true, "GET /panel/app.css": true, "/api/": true}

// documentedOperations returns "METHOD path" of every operation in doc.
func documentedOperations(t *testing.T, doc []byte) map[string]bool {
	t.Helper()
	var d struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatal(err)
	}
	ops := map[string]bool{}
	for path, methods := range d.Paths {
		for m := range methods {
			ops[strings.ToUpper(m)+" "+path] = true
		}
	}
	return ops
}

// TestOpenAPIRoutesMatchMux walks the patterns the server registered on
// its ServeMux and the served document: a route or method missing from the
// document, or documented but not served, fails.
func TestOpenAPIRoutesMatchMux(t *testing.T) {
	s := New(Config{})
	documented := documentedOperations(t, openAPIDocument)
	served := map[string]bool{}
	for _, p := range s.patterns {
		if notAPI[p] {
			continue
		}
		served[p] = true
		if !documented[p] {
			t.Errorf("served but not in the OpenAPI document: %s", p)
		}
	}
	for op := range documented {
		if !served[op] {
			t.Errorf("in the OpenAPI document but not served: %s", op)
		}
	}
}

// exchange is one recorded request and its response.
type exchange struct {
	req    *http.Request
	body   []byte
	status int
	header http.Header
	resp   []byte
}

type recorder struct {
	mu  sync.Mutex
	log []exchange
}

func (rc *recorder) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		rw := httptest.NewRecorder()
		next.ServeHTTP(rw, r)
		for k, v := range rw.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rw.Code)
		_, _ = w.Write(rw.Body.Bytes())
		rc.mu.Lock()
		rc.log = append(rc.log, exchange{req: r.Clone(context.Background()), body: body, status: rw.Code, header: rw.Header(), resp: rw.Body.Bytes()})
		rc.mu.Unlock()
	})
}

// TestOpenAPIExamples drives every route over HTTP (successes and the
// usual errors), records each exchange and validates request and response
// against the document with kin-openapi (OpenAPI 3.1, JSON Schema 2020-12):
// an undocumented status, a missing or extra field, a wrong type fails.
func TestOpenAPIExamples(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(openAPIDocument)
	if err != nil {
		t.Fatal(err)
	}
	if !doc.IsOpenAPI31OrLater() {
		t.Fatalf("document is OpenAPI %s", doc.OpenAPI)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("document invalid: %v", err)
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	f := newFixtureWith(t, rec.wrap)

	task := f.createHello()
	trig := task.Triggers[0]
	f.call("GET", "/healthz", "")
	f.call("GET", "/readyz", "")
	f.call("GET", "/metrics", "")
	f.call("GET", OpenAPIPath, "")
	f.call("GET", "/api/v1/session", "")
	f.send("POST", "/api/v1/session", `{"token":"`+f.token+`"}`)
	f.send("POST", "/api/v1/session", `{"token":"wrong"}`)
	f.call("DELETE", "/api/v1/session", "")
	f.call("GET", "/api/v1/schedule/preview?expression=30+2+*+*+*&timeZone=Europe/Berlin&count=5&afterMs=1774828800000", "")
	f.call("GET", "/api/v1/schedule/preview?expression=nope", "")
	f.call("GET", "/api/v1/tasks?limit=1", "")
	f.call("GET", "/api/v1/tasks?limit=0", "")
	f.call("POST", "/api/v1/tasks", helloTask) // name in use
	f.call("POST", "/api/v1/tasks", `{"name":"x","colour":"red"}`)
	f.call("GET", "/api/v1/tasks/hello", "")
	f.call("GET", "/api/v1/tasks/nope", "")
	f.call("PUT", "/api/v1/tasks/hello", `{"expectedRevision":1,"name":"hello","spec":{"kind":"qinglong/command@v1","shell":{"command":"echo hi"}}}`)
	f.call("PUT", "/api/v1/tasks/hello", `{"expectedRevision":1,"name":"hello","spec":{"kind":"qinglong/command@v1","shell":{"command":"echo hi"}}}`)
	f.call("PATCH", "/api/v1/tasks/hello", `{"enabled":false}`)
	f.call("POST", "/api/v1/tasks/hello/enable", "")
	f.call("POST", "/api/v1/tasks/hello/disable", "")
	f.call("POST", "/api/v1/tasks/hello/enable", "")
	f.call("GET", "/api/v1/tasks/hello/triggers", "")
	f.call("POST", "/api/v1/tasks/hello/triggers", `{"expression":"@hourly","timeZone":"UTC","misfire":"fire_once"}`)
	f.call("POST", "/api/v1/tasks/hello/triggers", `{"expression":"* * *"}`)
	f.call("GET", "/api/v1/tasks/hello/triggers/"+trig.ID, "")
	f.call("PUT", "/api/v1/tasks/hello/triggers/"+trig.ID, `{"expectedRevision":1,"expression":"@daily"}`)
	f.call("DELETE", "/api/v1/tasks/hello/triggers/"+trig.ID, "")
	var run Run
	f.decode("POST", "/api/v1/tasks/hello/runs", "", http.StatusCreated, &run)
	f.call("POST", "/api/v1/tasks/hello/runs", `{"idempotencyKey":"k1"}`)
	f.call("POST", "/api/v1/tasks/hello/runs", `{"idempotencyKey":"k1"}`)
	f.call("GET", "/api/v1/runs?limit=5&status=queued,running&origin=manual", "")
	f.call("GET", "/api/v1/runs/"+run.ID, "")
	f.call("GET", "/api/v1/runs/"+run.ID+"/events?after=0&limit=10", "")
	f.call("GET", "/api/v1/runs/"+run.ID+"/attempts/1/log", "")
	f.call("POST", "/api/v1/runs/"+run.ID+"/cancel", "")
	f.call("POST", "/api/v1/runs/"+run.ID+"/cancel", "")
	f.call("GET", "/api/v1/runs/nope", "")
	f.send("GET", "/api/v1/tasks", "", "Authorization", "Bearer wrong")
	f.send("POST", "/api/v1/tasks", helloTask, "Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site")
	f.call("DELETE", "/api/v1/tasks/hello", "")

	rec.mu.Lock()
	defer rec.mu.Unlock()
	seen := map[string]bool{}
	for _, ex := range rec.log {
		ex.req.Body = io.NopCloser(bytes.NewReader(ex.body))
		ex.req.RequestURI = ""
		route, params, err := router.FindRoute(ex.req)
		if err != nil {
			t.Errorf("%s %s: no documented route: %v", ex.req.Method, ex.req.URL, err)
			continue
		}
		seen[ex.req.Method+" "+route.Path] = true
		in := &openapi3filter.RequestValidationInput{Request: ex.req, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
		// Requests the server refused (4xx) may be invalid on purpose;
		// accepted ones must match the document.
		if ex.status < 400 {
			if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
				t.Errorf("%s %s: request does not match the document: %v", ex.req.Method, ex.req.URL, err)
			}
		}
		out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: ex.status, Header: ex.header,
			Body: io.NopCloser(bytes.NewReader(ex.resp)), Options: &openapi3filter.Options{IncludeResponseStatus: true}}
		if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
			t.Errorf("%s %s → %d: response does not match the document: %v\n%s", ex.req.Method, ex.req.URL, ex.status, err, ex.resp)
		}
	}
	var missing []string
	for op := range documentedOperations(t, openAPIDocument) {
		if !seen[op] {
			missing = append(missing, op)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("documented operations without a recorded example: %v", missing)
	}
}
