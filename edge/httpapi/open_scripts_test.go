package httpapi

import (
	"bytes"
	"fmt"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
)

// The contract of /open/scripts, /open/logs and /open/system (ADR 0057).
// Requests are shaped as QingLong v2.21.0's own panel sends them to the
// same routes under /api (its Open API rewrites /open/* to /api/*,
// back/loaders/express.ts):
//
//   - scripts: src/pages/script/index.tsx (GET scripts; GET
//     scripts/detail?file=<title>&path=<parent>; PUT scripts with
//     {filename, path, content}; DELETE scripts with {filename, path,
//     type}), src/pages/script/editNameModal.tsx (POST scripts as a
//     multipart form filename, path, content, directory),
//     src/pages/script/renameModal.tsx (PUT scripts/rename with
//     {filename, path, newFilename}); answers as back/api/script.ts
//     (IFile of back/config/util.ts: title, key, type, parent,
//     createTime, size, children).
//   - logs: src/pages/log/index.tsx (GET logs; GET
//     logs/detail?file=<title>&path=<parent>; DELETE logs with {filename,
//     path, type}); answers as back/api/log.ts.
//   - system: back/api/system.ts GET / → {isInitialized, version,
//     publishTime, branch, changeLog, changeLogLink}.

func TestOpenAPIContractScripts(t *testing.T) {
	f := newFixture(t)
	id, secret := f.newApp("editor", "scripts")
	tok := f.appToken(id, secret).Token

	// editNameModal.tsx: a folder, then a file, as multipart forms.
	form := func(fields map[string]string) (string, string) {
		var b bytes.Buffer
		mw := multipart.NewWriter(&b)
		for _, k := range []string{"filename", "path", "content", "directory"} {
			_ = mw.WriteField(k, fields[k])
		}
		_ = mw.Close()
		return b.String(), mw.FormDataContentType()
	}
	body, ct := form(map[string]string{"filename": "", "path": "", "content": "", "directory": "jd"})
	if r := f.send("POST", "/open/scripts", body, "Authorization", "Bearer "+tok, "Content-Type", ct); r.status != 200 || !strings.Contains(string(r.body), `"code":200`) {
		t.Fatalf("mkdir: %d %s", r.status, r.body)
	}
	body, ct = form(map[string]string{"filename": "jd_sign.js", "path": "jd", "content": "", "directory": ""})
	if r := f.send("POST", "/open/scripts", body, "Authorization", "Bearer "+tok, "Content-Type", ct); r.status != 200 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	// index.tsx: save content with PUT {filename, path, content}.
	if st, a := f.ql("PUT", "/open/scripts", tok, `{"filename":"jd_sign.js","path":"jd","content":"console.log('签到')\n"}`); st != 200 {
		t.Fatalf("save: %d %+v", st, a)
	}
	f.ql("POST", "/open/scripts", tok, `{"filename":"top.py","path":"","content":"print(1)\n"}`)

	// index.tsx: the tree, folders first; IFile's keys.
	st, a := f.ql("GET", "/open/scripts", tok, "")
	tree := decodeData[[]OpenFile](t, a)
	if st != 200 || len(tree) != 2 || tree[0].Type != "directory" || tree[0].Title != "jd" || tree[1].Title != "top.py" ||
		len(tree[0].Children) != 1 || tree[0].Children[0].Key != "jd/jd_sign.js" || tree[0].Children[0].Parent != "jd" ||
		tree[0].Children[0].Size == nil || *tree[0].Children[0].Size != int64(len("console.log('签到')\n")) {
		t.Fatalf("tree: %d %s", st, a.Data)
	}
	row := decodeData[[]map[string]any](t, a)[1]
	for _, k := range []string{"title", "key", "type", "parent", "createTime", "size"} {
		if _, ok := row[k]; !ok {
			t.Errorf("file row lacks QingLong's %q: %v", k, row)
		}
	}
	// One level with ?path= (readDir).
	if _, a = f.ql("GET", "/open/scripts?path=jd", tok, ""); len(decodeData[[]OpenFile](t, a)) != 1 {
		t.Fatalf("level: %s", a.Data)
	}
	// index.tsx getDetail: detail?file=<title>&path=<parent>; and /{file}.
	if _, a = f.ql("GET", "/open/scripts/detail?file=jd_sign.js&path=jd", tok, ""); decodeData[string](t, a) != "console.log('签到')\n" {
		t.Fatalf("detail: %s", a.Data)
	}
	if _, a = f.ql("GET", "/open/scripts/top.py?path=", tok, ""); decodeData[string](t, a) != "print(1)\n" {
		t.Fatalf("by name: %s", a.Data)
	}
	// renameModal.tsx.
	if st, a = f.ql("PUT", "/open/scripts/rename", tok, `{"filename":"jd_sign.js","path":"jd","newFilename":"jd_sign2.js"}`); st != 200 {
		t.Fatalf("rename: %d %+v", st, a)
	}
	if _, _, err := f.scripts.Read("jd/jd_sign2.js"); err != nil {
		t.Fatalf("renamed file: %v", err)
	}
	// Download answers the bytes.
	if r := f.send("POST", "/open/scripts/download", `{"filename":"top.py","path":""}`, "Authorization", "Bearer "+tok); r.status != 200 || string(r.body) != "print(1)\n" ||
		!strings.Contains(r.header.Get("Content-Disposition"), "top.py") {
		t.Fatalf("download: %d %q", r.status, r.body)
	}
	// Outside the folder, unknown fields and running a script: QingLong's error shape.
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/open/scripts/detail?file=passwd&path=../../etc", ""},
		{"PUT", "/open/scripts", `{"filename":"x.js","path":"/etc","content":""}`},
		{"PUT", "/open/scripts", `{"filename":"x.js","content":"","mode":"0777"}`},
		{"PUT", "/open/scripts/run", `{"filename":"top.py","path":""}`},
		{"GET", "/open/scripts/detail?file=missing.js", ""},
	} {
		if st, a = f.ql(c.method, c.path, tok, c.body); st != 400 || a.Message == "" {
			t.Errorf("%s %s %s: %d %+v", c.method, c.path, c.body, st, a)
		}
	}
	// index.tsx deleteFile: {filename, path, type}; a folder goes with its files.
	if st, a = f.ql("DELETE", "/open/scripts", tok, `{"filename":"jd","path":"","type":"directory"}`); st != 200 {
		t.Fatalf("delete: %d %+v", st, a)
	}
	if _, a = f.ql("GET", "/open/scripts", tok, ""); len(decodeData[[]OpenFile](t, a)) != 1 {
		t.Fatalf("after delete: %s", a.Data)
	}
	// Every change is audited with the app as the actor.
	var audit struct {
		Items []struct{ Action, Actor, Target string }
	}
	f.decode("GET", "/api/v1/audit?limit=200", "", http.StatusOK, &audit)
	n := 0
	for _, e := range audit.Items {
		if e.Actor == "app editor" {
			n++
		}
	}
	if n < 6 {
		t.Fatalf("audit lines by the app: %d of %+v", n, audit.Items)
	}
	// Without the scripts scope: QingLong's 401.
	id2, secret2 := f.newApp("crons-only", "crons")
	if st, a = f.ql("GET", "/open/scripts", f.appToken(id2, secret2).Token, ""); st != 401 || a.Code != 401 {
		t.Fatalf("no scope: %d %+v", st, a)
	}
}

func TestOpenAPIContractLogsAndSystem(t *testing.T) {
	f := newFixture(t)
	id, secret := f.newApp("watcher", "crons", "logs", "system")
	tok := f.appToken(id, secret).Token
	_, a := f.ql("POST", "/open/crons", tok, `{"name":"京东签到","command":"echo hi","schedule":"0 8 * * *"}`)
	c := decodeData[OpenCron](t, a)
	f.ql("PUT", "/open/crons/run", tok, fmt.Sprintf("[%d]", c.ID))

	// log/index.tsx: the tree; one folder per cron, one file per attempt.
	st, a := f.ql("GET", "/open/logs", tok, "")
	tree := decodeData[[]OpenFile](t, a)
	dir := fmt.Sprint(c.ID)
	if st != 200 || len(tree) != 1 || tree[0].Title != dir || tree[0].Type != "directory" || len(tree[0].Children) != 1 || tree[0].Children[0].Parent != dir {
		t.Fatalf("tree: %d %s", st, a.Data)
	}
	file := tree[0].Children[0].Title
	runID, _, _ := strings.Cut(file, "_")
	w, err := f.logs.Create(runID, 1)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprint(w, "开始签到\nok\n")
	// getLog: detail?file=<title>&path=<parent>; running while the run runs.
	st, a = f.ql("GET", "/open/logs/detail?file="+file+"&path="+dir, tok, "")
	if st != 200 || decodeData[string](t, a) != "开始签到\nok\n" || a.LogStatus != "running" {
		t.Fatalf("detail: %d %+v", st, a)
	}
	if _, a = f.ql("GET", "/open/logs/"+file+"?path="+dir, tok, ""); decodeData[string](t, a) != "开始签到\nok\n" {
		t.Fatalf("by name: %+v", a)
	}
	if _, a = f.ql("GET", "/open/logs?path="+dir, tok, ""); len(decodeData[[]OpenFile](t, a)) != 1 {
		t.Fatalf("one cron: %s", a.Data)
	}
	// A file of another cron, a made-up name and a delete: refused with QingLong's shape.
	_, a = f.ql("POST", "/open/crons", tok, `{"name":"other","command":"echo","schedule":"0 9 * * *"}`)
	other := decodeData[OpenCron](t, a)
	for _, p := range []string{
		fmt.Sprintf("/open/logs/detail?file=%s&path=%d", file, other.ID),
		"/open/logs/detail?file=nonsense.log&path=" + dir,
		"/open/logs/detail?file=" + file + "&path=../etc",
	} {
		if st, a = f.ql("GET", p, tok, ""); st != 400 || a.Message == "" {
			t.Errorf("%s: %d %+v", p, st, a)
		}
	}
	if st, a = f.ql("DELETE", "/open/logs", tok, fmt.Sprintf(`{"filename":%q,"path":%q,"type":"file"}`, file, dir)); st != 400 || !strings.Contains(a.Message, "retention") {
		t.Fatalf("delete: %d %+v", st, a)
	}

	// system.ts GET /: its keys; other items refused one by one.
	st, a = f.ql("GET", "/open/system", tok, "")
	sys := decodeData[map[string]any](t, a)
	for _, k := range []string{"isInitialized", "version", "publishTime", "branch", "changeLog", "changeLogLink"} {
		if _, ok := sys[k]; !ok || st != 200 {
			t.Errorf("system lacks %q: %d %s", k, st, a.Data)
		}
	}
	for p, want := range map[string]string{
		"/open/system/config/timezone": "time zone",
		"/open/system/command-run":     "tasks",
		"/open/system/update":          "binary",
	} {
		if st, a = f.ql("PUT", p, tok, "{}"); st != 404 || !strings.Contains(a.Message, want) {
			t.Errorf("%s: %d %+v", p, st, a)
		}
	}
}
