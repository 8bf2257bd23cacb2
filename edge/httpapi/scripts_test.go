package httpapi

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ql3/ql3/edge/scripts"
)

func openScripts(t testing.TB, dir string) *scripts.Folder {
	t.Helper()
	f, err := scripts.Open(filepath.Join(dir, "scripts"))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// raw sends bytes with the admin token and Content-Type octet-stream.
func (f *fixture) raw(method, path string, body []byte, hdr ...string) response {
	f.t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+f.token)
	req.Header.Set("Content-Type", scriptContentType)
	for i := 0; i+1 < len(hdr); i += 2 {
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

func q(p string) string { return url.QueryEscape(p) }

func tarBytes(t testing.TB, hs ...*tar.Header) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, h := range hs {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			tw.Write(bytes.Repeat([]byte("x"), int(h.Size)))
		}
	}
	tw.Close()
	return b.Bytes()
}

// scriptExamples drives every scripts route for the OpenAPI examples.
func (f *fixture) scriptExamples() {
	f.raw("PUT", "/api/v1/scripts/content?path=ex/a.js", []byte("console.log(1)\n"), "If-None-Match", "*")
	f.raw("PUT", "/api/v1/scripts/content?path=ex/a.js", []byte("console.log(2)\n"), "If-Match", `"0000"`)
	r := f.call("GET", "/api/v1/scripts/content?path=ex/a.js", "")
	f.raw("PUT", "/api/v1/scripts/content?path=ex/a.js", []byte("console.log(2)\n"), "If-Match", r.header.Get("ETag"))
	f.raw("PUT", "/api/v1/scripts/content?path=../x", []byte("x"), "If-None-Match", "*")
	f.call("GET", "/api/v1/scripts?path=ex", "")
	f.call("GET", "/api/v1/scripts?path=nope", "")
	f.call("GET", "/api/v1/scripts/tree?path=ex", "")
	f.call("GET", "/api/v1/scripts/content?path=nope.js", "")
	f.call("POST", "/api/v1/scripts/folder", `{"path":"ex/sub"}`)
	f.call("POST", "/api/v1/scripts/folder", `{"path":"ex/sub"}`)
	f.call("POST", "/api/v1/scripts/move", `{"from":"ex/sub","to":"ex/sub2"}`)
	f.call("POST", "/api/v1/scripts/move", `{"from":"ex/nope","to":"ex/sub3"}`)
	f.raw("POST", "/api/v1/scripts/upload?path=up&format=tar", tarBytes(f.t, &tar.Header{Name: "u.js", Typeflag: tar.TypeReg, Size: 2, Mode: 0o644}))
	f.raw("POST", "/api/v1/scripts/upload?path=up&format=tar", tarBytes(f.t, &tar.Header{Name: "../u.js", Typeflag: tar.TypeReg, Size: 2, Mode: 0o644}))
	f.call("POST", "/api/v1/scripts/run", `{"path":"ex/a.js","args":["1"]}`)
	f.call("POST", "/api/v1/scripts/run", `{"path":"ex/a.js","idempotencyKey":"s1"}`)
	f.call("POST", "/api/v1/scripts/run", `{"path":"ex/a.js","idempotencyKey":"s1"}`)
	f.call("POST", "/api/v1/scripts/run", `{"path":"ex/none.js"}`)
	f.call("DELETE", "/api/v1/scripts?path=ex", "")
	f.call("DELETE", "/api/v1/scripts?path=ex&recursive=true", "")
}

// The done-when path attacks over HTTP: 400 and nothing written.
func TestScriptPathAttacks(t *testing.T) {
	f := newFixture(t)
	base := filepath.Dir(f.scripts.Root())
	outside := filepath.Join(base, "outside")
	if err := os.Mkdir(outside, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(f.scripts.Root(), "planted")); err != nil {
		t.Fatal(err)
	}
	before := treeOf(t, base)
	for _, p := range []string{"../x", "/etc/passwd", "a/../../x", "a\x00b", "planted/x.js", "planted"} {
		for _, r := range []response{
			f.raw("PUT", "/api/v1/scripts/content?path="+q(p), []byte("pwned"), "If-None-Match", "*"),
			f.call("GET", "/api/v1/scripts/content?path="+q(p), ""),
			f.call("GET", "/api/v1/scripts?path="+q(p), ""),
			f.call("POST", "/api/v1/scripts/move", `{"from":"`+strings.ReplaceAll(p, "\x00", `\u0000`)+`","to":"moved"}`),
			f.call("DELETE", "/api/v1/scripts?recursive=true&path="+q(p), ""),
			f.raw("POST", "/api/v1/scripts/upload?format=tar&path="+q(p), tarBytes(t, &tar.Header{Name: "u.js", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644})),
		} {
			if r.status != http.StatusBadRequest {
				t.Errorf("%q: %d %s, want 400", p, r.status, r.body)
			}
		}
	}
	many := make([]*tar.Header, 100_000)
	for i := range many {
		many[i] = &tar.Header{Name: "d/", Typeflag: tar.TypeDir, Mode: 0o755}
	}
	for name, archive := range map[string][]byte{
		"dot-dot":  tarBytes(t, &tar.Header{Name: "ok.js", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644}, &tar.Header{Name: "../evil.js", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644}),
		"symlink":  tarBytes(t, &tar.Header{Name: "l", Typeflag: tar.TypeSymlink, Linkname: "/etc"}),
		"device":   tarBytes(t, &tar.Header{Name: "null", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3}),
		"100k":     tarBytes(t, many...),
		"absolute": tarBytes(t, &tar.Header{Name: "/etc/evil", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644}),
	} {
		if r := f.raw("POST", "/api/v1/scripts/upload?format=tar", archive); r.status != http.StatusBadRequest {
			t.Errorf("archive %s: %d %s", name, r.status, r.body)
		}
	}
	if after := treeOf(t, base); after != before {
		t.Fatalf("a refused request wrote something:\n%s\n---\n%s", before, after)
	}
}

func treeOf(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && !strings.Contains(p, "/db") && !strings.Contains(p, "/logs") && !strings.Contains(p, ".key") {
			b.WriteString(p + " " + info.Mode().String() + "\n")
		}
		return nil
	})
	return b.String()
}

// Two editors, one version: the first save wins, the second gets 412 with
// the current ETag; nothing is overwritten. Every change is audited.
func TestScriptConcurrentEdit(t *testing.T) {
	f := newFixture(t)
	if r := f.raw("PUT", "/api/v1/scripts/content?path=a.js", []byte("v1"), "If-None-Match", "*"); r.status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	if r := f.raw("PUT", "/api/v1/scripts/content?path=a.js", []byte("again"), "If-None-Match", "*"); r.status != http.StatusPreconditionFailed {
		t.Fatalf("second create: %d %s", r.status, r.body)
	}
	read := f.call("GET", "/api/v1/scripts/content?path=a.js", "")
	etag := read.header.Get("ETag")
	if string(read.body) != "v1" || etag == "" {
		t.Fatalf("read: %q %q", read.body, etag)
	}
	first := f.raw("PUT", "/api/v1/scripts/content?path=a.js", []byte("editor one"), "If-Match", etag)
	if first.status != http.StatusOK {
		t.Fatalf("first save: %d %s", first.status, first.body)
	}
	second := f.raw("PUT", "/api/v1/scripts/content?path=a.js", []byte("editor two"), "If-Match", etag)
	if second.status != http.StatusPreconditionFailed || second.header.Get("ETag") != first.header.Get("ETag") {
		t.Fatalf("stale save: %d %s (ETag %q, want %q)", second.status, second.body, second.header.Get("ETag"), first.header.Get("ETag"))
	}
	if r := f.raw("PUT", "/api/v1/scripts/content?path=a.js", []byte("blind")); r.status != http.StatusBadRequest || r.errBody(t).Field != "If-Match" {
		t.Fatalf("no precondition: %d %s", r.status, r.body)
	}
	if r := f.call("GET", "/api/v1/scripts/content?path=a.js", ""); string(r.body) != "editor one" {
		t.Fatalf("content %q", r.body)
	}
	lines, err := f.store.ListAudit(context.Background(), 0, 50)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range lines {
		if strings.HasPrefix(l.Action, "script.") {
			got = append(got, l.Action+" "+l.Target+" "+l.Actor)
		}
	}
	if strings.Join(got, "|") != "script.create a.js token|script.write a.js token" {
		t.Fatalf("audit %q", got)
	}
	// Content needs the token like every other read (ADR 0039).
	if r := f.send("GET", "/api/v1/scripts/content?path=a.js", ""); r.status != http.StatusUnauthorized {
		t.Fatalf("tokenless read: %d", r.status)
	}
}

// Run now: a normal manual Run of the script's own task, without a
// trigger; a second run with other args updates that task.
func TestScriptRunNow(t *testing.T) {
	f := newFixture(t)
	f.raw("PUT", "/api/v1/scripts/content?path=d/x.py", []byte("print(1)\n"), "If-None-Match", "*")
	var run Run
	f.decode("POST", "/api/v1/scripts/run", `{"path":"d/x.py","args":["a"]}`, http.StatusCreated, &run)
	if run.Origin != "manual" || run.TriggerID != "" || run.Status != "queued" {
		t.Fatalf("run %+v", run)
	}
	task, err := f.store.GetTask(context.Background(), run.TaskID)
	if err != nil || task.Name != "script: d/x.py" || task.Enabled || task.Spec.Script == nil || task.Spec.Script.Args[0] != "a" {
		t.Fatalf("task %+v %v", task, err)
	}
	var again Run
	f.decode("POST", "/api/v1/scripts/run", `{"path":"d/x.py","args":["b"]}`, http.StatusCreated, &again)
	if again.TaskID != run.TaskID || again.TaskRevision != 2 {
		t.Fatalf("second run %+v", again)
	}
	if r := f.call("POST", "/api/v1/scripts/run", `{"path":"d"}`); r.status != http.StatusBadRequest {
		t.Fatalf("run a folder: %d", r.status)
	}
}

// A script task whose extension this server has no interpreter for is
// refused at publish, naming the extension and the supported ones.
func TestScriptTaskUnknownExtension(t *testing.T) {
	f := newFixture(t)
	r := f.call("POST", "/api/v1/tasks", `{"name":"rb","spec":{"kind":"qinglong/command@v1","script":{"file":"x.rb"}}}`)
	if r.status != http.StatusBadRequest || r.errBody(t).Field != "spec.script.file" || !strings.Contains(r.errBody(t).Message, `no interpreter for ".rb" files`) {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	if r := f.call("POST", "/api/v1/tasks", `{"name":"js","spec":{"kind":"qinglong/command@v1","script":{"file":"x.js"}}}`); r.status != http.StatusCreated {
		t.Fatalf("a .js task: %d %s", r.status, r.body)
	}
	r = f.call("PUT", "/api/v1/tasks/js", `{"expectedRevision":1,"name":"js","spec":{"kind":"qinglong/command@v1","script":{"file":"x.exe"}}}`)
	if r.status != http.StatusBadRequest || !strings.Contains(r.errBody(t).Message, `".exe"`) {
		t.Fatalf("update: %d %s", r.status, r.body)
	}
	f.raw("PUT", "/api/v1/scripts/content?path=x.rb", []byte("puts 1"), "If-None-Match", "*")
	if r := f.call("POST", "/api/v1/scripts/run", `{"path":"x.rb"}`); r.status != http.StatusBadRequest {
		t.Fatalf("run x.rb: %d %s", r.status, r.body)
	}
}
