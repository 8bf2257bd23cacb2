package qlcompat_test

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"github.com/ql3/ql3/core/qlopen"
)

// The contract of /open/scripts on the control plane (ADR 0057), with
// requests shaped as QingLong v2.21.0's own panel sends them to the same
// routes under /api (its Open API rewrites /open/* to /api/*,
// back/loaders/express.ts): src/pages/script/index.tsx (GET scripts; GET
// scripts/detail?file=<title>&path=<parent>; PUT scripts with {filename,
// path, content}; DELETE scripts with {filename, path, type}),
// src/pages/script/editNameModal.tsx (POST scripts as a multipart form
// filename, path, content, directory), src/pages/script/renameModal.tsx
// (PUT scripts/rename with {filename, path, newFilename}); answers as
// back/api/script.ts (IFile of back/config/util.ts: title, key, type,
// parent, createTime, size, children).
func TestOpenAPIContractScriptsOnTheControlPlane(t *testing.T) {
	f := newFixture(t)
	f.project("home")
	f.project("office")
	id, secret := f.app("home", "editor", "scripts")
	tok := f.token(id, secret).Token

	form := func(fields map[string]string) (string, string) {
		var b bytes.Buffer
		mw := multipart.NewWriter(&b)
		for _, k := range []string{"filename", "path", "content", "directory"} {
			_ = mw.WriteField(k, fields[k])
		}
		_ = mw.Close()
		return b.String(), mw.FormDataContentType()
	}
	post := func(body, ct string) (int, string) {
		req, err := http.NewRequest("POST", f.url+"/open/scripts", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", ct)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		return resp.StatusCode, b.String()
	}
	// editNameModal.tsx: a folder, then a file, as multipart forms.
	if st, b := post(form(map[string]string{"directory": "jd"})); st != 200 || !strings.Contains(b, `"code":200`) {
		t.Fatalf("mkdir: %d %s", st, b)
	}
	if st, b := post(form(map[string]string{"directory": "jd"})); st != 200 {
		t.Fatalf("mkdir again (QingLong's is recursive): %d %s", st, b)
	}
	if st, b := post(form(map[string]string{"filename": "jd_sign.js", "path": "jd"})); st != 200 {
		t.Fatalf("create: %d %s", st, b)
	}
	// index.tsx: save content with PUT {filename, path, content}.
	if st, a := f.ql("PUT", "/open/scripts", tok, `{"filename":"jd_sign.js","path":"jd","content":"console.log('签到')\n"}`); st != 200 {
		t.Fatalf("save: %d %+v", st, a)
	}
	if st, a := f.ql("POST", "/open/scripts", tok, `{"filename":"top.py","path":"","content":"print(1)\n"}`); st != 200 {
		t.Fatalf("create as JSON: %d %+v", st, a)
	}

	// index.tsx: the tree; IFile's keys.
	st, a := f.ql("GET", "/open/scripts", tok, "")
	tree := data[[]qlopen.File](t, a)
	if st != 200 || len(tree) != 2 || tree[0].Type != "directory" || tree[0].Title != "jd" || tree[1].Title != "top.py" ||
		len(tree[0].Children) != 1 || tree[0].Children[0].Key != "jd/jd_sign.js" || tree[0].Children[0].Parent != "jd" ||
		tree[0].Children[0].Size == nil || *tree[0].Children[0].Size != int64(len("console.log('签到')\n")) {
		t.Fatalf("tree: %d %s", st, a.Data)
	}
	row := data[[]map[string]any](t, a)[1]
	for _, k := range []string{"title", "key", "type", "parent", "createTime", "size"} {
		if _, found := row[k]; !found {
			t.Errorf("file row lacks QingLong's %q: %v", k, row)
		}
	}
	// One level with ?path= (readDir); a missing folder is [].
	if _, a = f.ql("GET", "/open/scripts?path=jd", tok, ""); len(data[[]qlopen.File](t, a)) != 1 {
		t.Fatalf("level: %s", a.Data)
	}
	if _, a = f.ql("GET", "/open/scripts?path=none", tok, ""); string(a.Data) != "[]" {
		t.Fatalf("missing level: %s", a.Data)
	}
	// index.tsx getDetail: detail?file=<title>&path=<parent>; and /{file}.
	if _, a = f.ql("GET", "/open/scripts/detail?file=jd_sign.js&path=jd", tok, ""); data[string](t, a) != "console.log('签到')\n" {
		t.Fatalf("detail: %s", a.Data)
	}
	if _, a = f.ql("GET", "/open/scripts/top.py?path=", tok, ""); data[string](t, a) != "print(1)\n" {
		t.Fatalf("by name: %s", a.Data)
	}
	// renameModal.tsx.
	if st, a = f.ql("PUT", "/open/scripts/rename", tok, `{"filename":"jd_sign.js","path":"jd","newFilename":"jd_sign2.js"}`); st != 200 {
		t.Fatalf("rename: %d %+v", st, a)
	}
	if _, a = f.ql("GET", "/open/scripts/detail?file=jd_sign2.js&path=jd", tok, ""); data[string](t, a) != "console.log('签到')\n" {
		t.Fatalf("renamed: %s", a.Data)
	}
	// Download answers the bytes.
	if st, b, h := f.do("POST", "/open/scripts/download", tok, `{"filename":"top.py","path":""}`); st != 200 || string(b) != "print(1)\n" ||
		!strings.Contains(h.Get("Content-Disposition"), "top.py") {
		t.Fatalf("download: %d %q", st, b)
	}
	// Outside the folder, unknown fields, running a script, a missing file: QingLong's error shape.
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/open/scripts/detail?file=passwd&path=../../etc", ""},
		{"PUT", "/open/scripts", `{"filename":"x.js","path":"/etc","content":""}`},
		{"PUT", "/open/scripts", `{"filename":"x.js","content":"","mode":"0777"}`},
		{"PUT", "/open/scripts", `{"filename":"x.js"}`},
		{"PUT", "/open/scripts/run", `{"filename":"top.py","path":""}`},
		{"GET", "/open/scripts/detail?file=missing.js", ""},
	} {
		if st, a = f.ql(c.method, c.path, tok, c.body); st != 400 || a.Message == "" {
			t.Errorf("%s %s %s: %d %+v", c.method, c.path, c.body, st, a)
		}
	}
	// Another project's app sees its own (empty) folder.
	id2, secret2 := f.app("office", "other", "scripts")
	if _, a = f.ql("GET", "/open/scripts", f.token(id2, secret2).Token, ""); string(a.Data) != "[]" {
		t.Fatalf("another project: %s", a.Data)
	}
	// index.tsx deleteFile: {filename, path, type}; a folder goes with its files.
	if st, a = f.ql("DELETE", "/open/scripts", tok, `{"filename":"jd","path":"","type":"directory"}`); st != 200 {
		t.Fatalf("delete: %d %+v", st, a)
	}
	if _, a = f.ql("GET", "/open/scripts", tok, ""); len(data[[]qlopen.File](t, a)) != 1 {
		t.Fatalf("after delete: %s", a.Data)
	}
	// The app's changes are audited as the app.
	if st, b, _ := f.do("GET", "/api/v1/audit?actor=app:editor&limit=50", f.admin, ""); st != 200 || strings.Count(string(b), "app:editor") < 6 {
		t.Fatalf("audit: %d %s", st, b)
	}
	// Without the scripts scope: QingLong's 401.
	id3, secret3 := f.app("home", "crons-only", "crons")
	if st, a = f.ql("GET", "/open/scripts", f.token(id3, secret3).Token, ""); st != 401 || a.Code != 401 {
		t.Fatalf("no scope: %d %+v", st, a)
	}
}
