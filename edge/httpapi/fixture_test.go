package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ql3/ql3/core/scriptpath"
	"github.com/ql3/ql3/edge/logstore"
	"github.com/ql3/ql3/edge/scripts"
	"github.com/ql3/ql3/edge/sqlite"
	"github.com/ql3/ql3/panel"
	"github.com/ql3/ql3/worker/clock"
)

// fixture is an API server over a real SQLite store and log store in a
// temporary directory, with a fake clock.
type fixture struct {
	t       testing.TB
	srv     *httptest.Server
	store   *sqlite.Store
	logs    *logstore.Store
	clock   *clock.Fake
	token   string
	notify  *NotifyConfig
	scripts *scripts.Folder
}

var fixtureStart = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newFixture(t testing.TB) *fixture { return newFixtureWith(t, nil) }

// newFixtureWith is newFixture with the handler wrapped by wrap (nil: as is).
func newFixtureWith(t testing.TB, wrap func(http.Handler) http.Handler) *fixture {
	t.Helper()
	dir := t.TempDir()
	clk := clock.NewFake(fixtureStart)
	store, err := sqlite.Open(context.Background(), filepath.Join(dir, "db"), sqlite.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	logs, err := logstore.Open(logstore.Config{Dir: filepath.Join(dir, "logs")})
	if err != nil {
		t.Fatal(err)
	}
	token, err := NewAdminToken()
	if err != nil {
		t.Fatal(err)
	}
	rotate := unlockEnvs(t, dir, store) // envs_test.go
	nc := notifyFor(t, store, clk)      // notify_test.go
	folder := openScripts(t, dir)       // scripts_test.go
	api := New(Config{UI: panel.UI{}, Store: store, Logs: logs, Clock: clk, Auth: Auth{Digest: DigestToken(token)}, Version: "test",
		Envs: store, RotateEnvKey: rotate, Notify: nc, Access: store, Scripts: folder, Audit: store, Interpreters: scriptpath.DefaultInterpretersTable(),
		Subs:   subsFor(t, dir, store, nc),     // openapi_subs_test.go
		Import: importFor(dir, store, folder)}) // import_test.go
	var h http.Handler = api
	if wrap != nil {
		h = wrap(api)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &fixture{t: t, srv: srv, store: store, logs: logs, clock: clk, token: token, notify: nc, scripts: folder}
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) errBody(t testing.TB) ErrorBody {
	t.Helper()
	var e ErrorBody
	if err := json.Unmarshal(r.body, &e); err != nil {
		t.Fatalf("error body %q: %v", r.body, err)
	}
	return e
}

// call sends a request with the admin token.
func (f *fixture) call(method, path, body string, hdr ...string) response {
	f.t.Helper()
	return f.send(method, path, body, append([]string{"Authorization", "Bearer " + f.token}, hdr...)...)
}

// send sends a request with exactly the given headers (name, value pairs).
func (f *fixture) send(method, path, body string, hdr ...string) response {
	f.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, f.srv.URL+path, rd)
	if err != nil {
		f.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if strings.EqualFold(hdr[i], "Host") {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := f.srv.Client().Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: data}
}

// decode calls and decodes a response with the wanted status into out.
func (f *fixture) decode(method, path, body string, want int, out any) {
	f.t.Helper()
	r := f.call(method, path, body)
	if r.status != want {
		f.t.Fatalf("%s %s: status %d, want %d: %s", method, path, r.status, want, r.body)
	}
	if out != nil {
		if err := json.Unmarshal(r.body, out); err != nil {
			f.t.Fatalf("%s %s: decode %q: %v", method, path, r.body, err)
		}
	}
}

const helloTask = `{"name":"hello","spec":{"kind":"qinglong/command@v1","argv":{"file":"echo","args":["hi"]},"concurrency":"allow"},
 "triggers":[{"expression":"*/5 * * * * *","timeZone":"Europe/London"}]}`

func (f *fixture) createHello() Task {
	f.t.Helper()
	var task Task
	f.decode("POST", "/api/v1/tasks", helloTask, http.StatusCreated, &task)
	return task
}

func (f *fixture) taskCount() int {
	f.t.Helper()
	var l List[Task]
	f.decode("GET", "/api/v1/tasks?deleted=1", "", http.StatusOK, &l)
	return len(l.Items)
}
