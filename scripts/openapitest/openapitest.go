// Package openapitest holds the checks that tie an API's generated OpenAPI
// document (core/openapi, ADR 0029) to the server that serves it: the
// committed document is the generated one, every served route is
// documented and every documented one served, and recorded exchanges
// validate against the document with kin-openapi (OpenAPI 3.1, JSON Schema
// 2020-12). The tests of edge/httpapi and controlplane/adminapi both use it;
// it lives in the scripts module, which every module's tests may import and
// no binary links, so kin-openapi stays a test-only dependency.
package openapitest

import (
	"bytes"
	"context"
	"encoding/json"
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
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// CheckUpToDate compares generated to committed, the document the package
// embeds from file. With update it rewrites file instead; regenerate names
// the command that does so, for the failure message.
func CheckUpToDate(t testing.TB, generated, committed []byte, file string, update bool, regenerate string) {
	t.Helper()
	if update {
		if err := os.WriteFile(file, generated, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(generated, committed) {
		t.Fatalf("%s is stale: run `%s` and review the diff", file, regenerate)
	}
}

// Operations returns "METHOD path" of every operation in doc.
func Operations(t testing.TB, doc []byte) map[string]bool {
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

// CheckRoutes holds the patterns a server registered on its ServeMux to
// doc, both ways: a route or method missing from the document, or
// documented but not served, fails. notAPI are the patterns outside the
// JSON API (static files, the catch-all 404); hint is added to the
// "served but not documented" failure.
func CheckRoutes(t testing.TB, doc []byte, patterns []string, notAPI map[string]bool, hint string) {
	t.Helper()
	documented := Operations(t, doc)
	served := map[string]bool{}
	for _, p := range patterns {
		if notAPI[p] {
			continue
		}
		served[p] = true
		if !documented[p] {
			t.Errorf("served but not in the OpenAPI document: %s%s", p, hint)
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

// Recorder records the exchanges of the handler it wraps, for Validate.
type Recorder struct {
	mu  sync.Mutex
	log []exchange
}

// Wrap serves next and records each request and its response.
func (rc *Recorder) Wrap(next http.Handler) http.Handler {
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

// Load parses doc, which must be a valid OpenAPI 3.1 document, for
// Validate; call it before driving the server, so a broken document fails
// first.
func Load(t testing.TB, doc []byte) *Document {
	t.Helper()
	d, err := openapi3.NewLoader().LoadFromData(doc)
	if err != nil {
		t.Fatal(err)
	}
	if !d.IsOpenAPI31OrLater() {
		t.Fatalf("document is OpenAPI %s", d.OpenAPI)
	}
	if err := d.Validate(context.Background()); err != nil {
		t.Fatalf("document invalid: %v", err)
	}
	router, err := gorillamux.NewRouter(d)
	if err != nil {
		t.Fatal(err)
	}
	return &Document{raw: doc, router: router}
}

// Document is a loaded OpenAPI document.
type Document struct {
	raw    []byte
	router routers.Router
}

// Validate checks every exchange rec recorded against the document: the
// request of each accepted one (status < 400; refused requests may be
// invalid on purpose) and every response, whose status, headers and body
// must be documented: an undocumented status, a missing or extra field, a
// wrong type fails. Every documented operation must have an example.
func (d *Document) Validate(t testing.TB, rec *Recorder) {
	t.Helper()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	seen := map[string]bool{}
	for _, ex := range rec.log {
		ex.req.Body = io.NopCloser(bytes.NewReader(ex.body))
		ex.req.RequestURI = ""
		route, params, err := d.router.FindRoute(ex.req)
		if err != nil {
			t.Errorf("%s %s: no documented route: %v", ex.req.Method, ex.req.URL, err)
			continue
		}
		seen[ex.req.Method+" "+route.Path] = true
		in := &openapi3filter.RequestValidationInput{Request: ex.req, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
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
	for op := range Operations(t, d.raw) {
		if !seen[op] {
			missing = append(missing, op)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("documented operations without a recorded example: %v", missing)
	}
}
