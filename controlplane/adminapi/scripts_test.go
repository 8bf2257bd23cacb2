package adminapi_test

import (
	"archive/tar"
	"bytes"
	"strings"
	"testing"

	"github.com/ql3/ql3/controlplane/adminapi"
)

// scriptExamples drives every scripts route of project "ops" for
// TestOpenAPIExamples (raw bodies through send, JSON through f.call).
func scriptExamples(t *testing.T, send func(method, path, body string, hdr ...string), f fixture, token string) {
	t.Helper()
	const base = "/api/v1/projects/ops/scripts"
	auth := []string{"Authorization", "Bearer " + token, "Content-Type", "application/octet-stream"}
	send("PUT", base+"/content?path=lib/utils.js", "module.exports = 1\n", append(auth, "If-None-Match", "*")...)
	send("PUT", base+"/content?path=lib/utils.js", "x", append(auth, "If-None-Match", "*")...) // 412
	send("PUT", base+"/content?path=../x", "x", append(auth, "If-None-Match", "*")...)         // 400
	f.call("GET", base+"?path=", nil, nil)
	f.call("GET", base+"?path=lib", nil, nil)
	f.call("GET", base+"/tree?path=lib", nil, nil)
	f.call("GET", base+"/content?path=lib/utils.js", nil, nil)
	f.call("GET", base+"/content?path=nope.js", nil, nil)
	f.call("POST", base+"/folder", `{"path":"tools"}`, nil)
	f.call("POST", base+"/move", `{"from":"tools","to":"bin"}`, nil)
	f.call("DELETE", base+"?path=bin", nil, nil)
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	tw.WriteHeader(&tar.Header{Name: "up/main.py", Typeflag: tar.TypeReg, Size: 9, Mode: 0o644})
	tw.Write([]byte("print(1)\n"))
	tw.Close()
	send("POST", base+"/upload?path=&format=tar", b.String(), auth...)
	f.call("POST", base+"/run", `{"path":"up/main.py","idempotencyKey":"s1"}`, nil)
	f.call("POST", base+"/run", `{"path":"up/main.py","idempotencyKey":"s1"}`, nil)
}

// octet sends raw bytes with the token and headers and returns the
// status, the ETag and the body (panel_test.go's send).
func (f fixture) octet(method, path, body string, hdr ...string) (int, string, string) {
	f.t.Helper()
	code, h, data := f.send(method, path, body, append([]string{"Authorization", "Bearer " + f.token,
		"Content-Type", "application/octet-stream"}, hdr...)...)
	return code, strings.Trim(h.Get("ETag"), `"`), data
}

// TestScriptRoutesRefuseAttacks: over HTTP, every path attack of issue 22
// is 400 and writes nothing; a stale ETag is 412 with the current one; an
// archive with ".." or a link is 400 whole; content reads back with its
// ETag.
func TestScriptRoutesRefuseAttacks(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	if code := f.call("POST", "/api/v1/projects", `{"name":"ops"}`, nil); code != 201 {
		t.Fatalf("project: %d", code)
	}
	const base = "/api/v1/projects/ops/scripts"
	for _, p := range []string{"../x", "/etc/passwd", "a/../../x", "a%00b", "a//b"} {
		if code, _, body := f.octet("PUT", base+"/content?path="+p, "x", "If-None-Match", "*"); code != 400 {
			t.Errorf("PUT %s: %d %s", p, code, body)
		}
	}
	for name, a := range map[string][]byte{"dot-dot": tarBytes(t, "../x.js"), "symlink": tarLink(t)} {
		if code, _, body := f.octet("POST", base+"/upload?format=tar", string(a)); code != 400 {
			t.Errorf("upload %s: %d %s", name, code, body)
		}
	}
	var list adminapi.ScriptList
	if code := f.call("GET", base, nil, &list); code != 200 || len(list.Entries) != 0 {
		t.Fatalf("after refused requests: %d %+v", code, list)
	}
	code, etag, _ := f.octet("PUT", base+"/content?path=a.js", "one", "If-None-Match", "*")
	if code != 201 || len(etag) != 64 {
		t.Fatalf("create: %d %q", code, etag)
	}
	code, cur, _ := f.octet("PUT", base+"/content?path=a.js", "two", "If-Match", `"`+etag+`"`)
	if code != 200 || cur == etag {
		t.Fatalf("replace: %d %q", code, cur)
	}
	if code, got, _ := f.octet("PUT", base+"/content?path=a.js", "three", "If-Match", `"`+etag+`"`); code != 412 || got != cur {
		t.Errorf("stale If-Match: %d, ETag %q (want 412 with %q)", code, got, cur)
	}
	if code, got, body := f.octet("GET", base+"/content?path=a.js", ""); code != 200 || got != cur || body != "two" {
		t.Errorf("read: %d %q %q", code, got, body)
	}
}

func tarBytes(t *testing.T, name string) []byte {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Size: 1, Mode: 0o644}); err != nil {
		t.Fatal(err)
	}
	tw.Write([]byte("x"))
	tw.Close()
	return b.Bytes()
}

func tarLink(t *testing.T) []byte {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	if err := tw.WriteHeader(&tar.Header{Name: "l", Typeflag: tar.TypeSymlink, Linkname: "/etc"}); err != nil {
		t.Fatal(err)
	}
	tw.Close()
	return b.Bytes()
}
