package httpapi

import (
	"flag"
	"net/http"
	"testing"

	"github.com/ql3/ql3/httpkit"
	"github.com/ql3/ql3/panel"
	"github.com/ql3/ql3/scripts/openapitest"
)

// openAPIDocument is the document the binary embeds, decompressed.
var openAPIDocument = func() []byte {
	doc, err := httpkit.Gunzip(openAPIDocumentGzip)
	if err != nil {
		panic("httpapi: embedded openapi.json.gz: " + err.Error())
	}
	return doc
}()

var updateOpenAPI = flag.Bool("update", false, "rewrite openapi.json from the route table")

// TestOpenAPIDocumentUpToDate regenerates the document from the route
// table and the wire types; a field added to a response type, a route or a
// status added to the table, changes it. -update rewrites openapi.json.
func TestOpenAPIDocumentUpToDate(t *testing.T) {
	doc, err := edgeGenerator().Document(edgeRoutes())
	if err != nil {
		t.Fatal(err)
	}
	openapitest.CheckUpToDate(t, doc, openAPIDocument, "openapi.json", *updateOpenAPI,
		"go test ./httpapi -run TestOpenAPIDocumentUpToDate -update")
}

// notAPI are mux patterns that are not part of the JSON API: the panel's
// static files and the JSON 404 for unknown /api/ paths.
var notAPI = map[string]bool{"GET /{$}": true, "GET /panel/app.js": true, "GET /panel/app.css": true, "/api/": true}

// TestOpenAPIRoutesMatchMux walks the patterns the server registered on
// its ServeMux and the served document: a route or method missing from the
// document, or documented but not served, fails.
func TestOpenAPIRoutesMatchMux(t *testing.T) {
	openapitest.CheckRoutes(t, openAPIDocument, New(Config{UI: panel.UI{}}).patterns, notAPI, "")
}

// TestOpenAPIExamples drives every route over HTTP (successes and the
// usual errors), records each exchange and validates request and response
// against the document with kin-openapi (OpenAPI 3.1, JSON Schema 2020-12):
// an undocumented status, a missing or extra field, a wrong type fails.
func TestOpenAPIExamples(t *testing.T) {
	doc := openapitest.Load(t, openAPIDocument)
	rec := &openapitest.Recorder{}
	f := newFixtureWith(t, rec.Wrap)

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
	f.envExamples()    // envs_test.go
	f.notifyExamples() // notify_test.go
	f.accessExamples() // openapi_access_test.go
	f.envExamples()    // envs_test.go
	f.findExamples()   // openapi_find_test.go
	f.scriptExamples() // scripts_test.go
	f.subsExamples()   // openapi_subs_test.go
	f.importExamples() // import_test.go

	doc.Validate(t, rec)
}
