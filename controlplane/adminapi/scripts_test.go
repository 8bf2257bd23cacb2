package adminapi_test

import (
	"archive/tar"
	"bytes"
	"testing"
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
