package subs

import (
	"context"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ql3/ql3/edge"
)

// A private repository over git's smart HTTP (git http-backend as a CGI
// program): the token from the env store opens it, a wrong one does not
// and never shows in the log.
func TestSmartHTTPWithToken(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	r := newRepo(t)
	r.Write(map[string]string{"a.js": "// cron: 1 2 * * *\n"})
	r.Commit("one")
	r.Git("config", "http.receivepack", "false")
	const token = "ghp_secret0123456789"
	var denied atomic.Int32
	backend := &cgi.Handler{Path: git, Args: []string{"http-backend"},
		Env: []string{"GIT_PROJECT_ROOT=" + filepath.Dir(r.Dir), "GIT_HTTP_EXPORT_ALL=1"}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if u, p, ok := req.BasicAuth(); !ok || u != "x-access-token" || p != token {
			denied.Add(1)
			w.Header().Set("WWW-Authenticate", `Basic realm="repo"`)
			http.Error(w, "auth", http.StatusUnauthorized)
			return
		}
		backend.ServeHTTP(w, req)
	}))
	defer srv.Close()

	e := newEnv(t)
	src := Source{Kind: edge.SubscriptionGit, URL: srv.URL + "/origin", Branch: "main", CredentialKind: edge.CredentialToken, Credential: "wrong-token-value"}
	var log strings.Builder
	job := PullJob{ScriptsRoot: e.root, WorkDir: e.work, Slug: "private", Source: src}
	if _, err := Pull(context.Background(), job, &log); err == nil || strings.Contains(err.Error()+log.String(), "wrong-token-value") {
		t.Fatalf("wrong token: %v\n%s", err, log.String())
	}
	if denied.Load() == 0 {
		t.Fatal("the server never asked for credentials")
	}
	job.Source.Credential = token
	st, err := Pull(context.Background(), job, &log)
	if err != nil {
		t.Fatalf("right token: %v\n%s", err, log.String())
	}
	if b, err := os.ReadFile(filepath.Join(e.root, "private", "a.js")); err != nil || !strings.Contains(string(b), "1 2 * * *") || st.Files != 1 {
		t.Fatalf("pulled %q %v", b, err)
	}
}

// A raw file subscription fetches one file by URL, bounded.
func TestFileSubscription(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/big.js" {
			w.Write([]byte(strings.Repeat("x", 2048)))
			return
		}
		w.Write([]byte("// cron: 9 9 * * *\nconst $ = new Env('单文件');\n"))
	}))
	defer srv.Close()
	e := newEnv(t)
	sub := e.subscribe(srv.URL+"/one.js", func(in *edge.NewSubscription) { in.Kind, in.Branch, in.Slug = edge.SubscriptionFile, "", "one" })
	ch, log, err := e.pull(sub)
	if err != nil || len(ch) != 1 || ch[0].Action != "add" || ch[0].Name != "单文件" || ch[0].Path != "one.js" {
		t.Fatalf("file pull: %+v %v\n%s", ch, err, log)
	}
	job := PullJob{ScriptsRoot: e.root, WorkDir: e.work, Slug: "big", Limits: Limits{MaxFileBytes: 1024},
		Source: Source{Kind: edge.SubscriptionFile, URL: srv.URL + "/big.js"}}
	if _, err := Pull(context.Background(), job, &strings.Builder{}); err == nil || !strings.Contains(err.Error(), "over 1024 bytes") {
		t.Fatalf("big file: %v", err)
	}
}
