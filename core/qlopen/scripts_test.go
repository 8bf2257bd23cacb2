package qlopen

import (
	"bytes"
	"mime/multipart"
	"strings"
	"testing"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/scriptpath"
)

func TestScriptPath(t *testing.T) {
	for _, c := range []struct{ dir, name, want string }{
		{"", "a.js", "a.js"}, {"jd", "a.js", "jd/a.js"}, {"jd/", "a.js", "jd/a.js"}, {"jd/sub", "b.py", "jd/sub/b.py"},
	} {
		if got, err := ScriptPath(c.dir, c.name); err != nil || got != c.want {
			t.Errorf("ScriptPath(%q, %q) = %q, %v; want %q", c.dir, c.name, got, err, c.want)
		}
	}
	if _, err := ScriptPath("jd", ""); errs.Code(err) != errs.Invalid {
		t.Errorf("empty filename: %v", err)
	}
}

func TestScriptTree(t *testing.T) {
	folder := map[string][]ScriptEntry{
		"":   {{Name: "jd", Dir: true, MtimeMs: 1}, {Name: "node_modules", Dir: true}, {Name: "top.py", Size: 9, MtimeMs: 2}},
		"jd": {{Name: "sign.js", Size: 4, MtimeMs: 3}, {Name: "yarn.lock", Size: 1}},
	}
	list := func(dir string) ([]ScriptEntry, error) {
		e, ok := folder[dir]
		if !ok {
			return nil, errs.NotFoundf("no folder %q", dir)
		}
		return e, nil
	}
	budget := scriptpath.MaxEntries
	deep, err := ScriptTree(list, "", true, &budget)
	if err != nil || len(deep) != 2 || deep[0].Type != "directory" || len(deep[0].Children) != 1 ||
		deep[0].Children[0].Key != "jd/sign.js" || deep[0].Children[0].Parent != "jd" || *deep[0].Children[0].Size != 4 ||
		deep[1].Type != "file" || deep[1].CreateTime != 2 {
		t.Fatalf("deep: %+v %v", deep, err)
	}
	budget = scriptpath.MaxEntries
	level, err := ScriptTree(list, "", false, &budget)
	if err != nil || len(level) != 2 || level[0].Children == nil || len(level[0].Children) != 0 {
		t.Fatalf("one level: %+v %v", level, err)
	}
	budget = 2
	if _, err := ScriptTree(list, "", true, &budget); errs.Code(err) != errs.TooLarge {
		t.Fatalf("over the budget: %v", err)
	}
	budget = scriptpath.MaxEntries
	if _, err := ScriptTree(list, "none", false, &budget); errs.Code(err) != errs.NotFound {
		t.Fatalf("missing folder: %v", err)
	}
}

func form(t testing.TB, fields map[string]string, file []byte) (string, []byte) {
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	for k, v := range fields {
		_ = mw.WriteField(k, v)
	}
	if file != nil {
		w, _ := mw.CreateFormFile("file", "up.js")
		_, _ = w.Write(file)
	}
	_ = mw.Close()
	return mw.Boundary(), b.Bytes()
}

func TestDecodeScriptForm(t *testing.T) {
	boundary, body := form(t, map[string]string{"filename": "a.js", "path": "jd", "content": "x", "originFilename": "old.js"}, nil)
	in, up, err := DecodeScriptForm(partsOf(multipart.NewReader(bytes.NewReader(body), boundary)))
	if err != nil || in.Filename != "a.js" || in.Path != "jd" || in.Content == nil || *in.Content != "x" || in.OriginFilename != "old.js" || up != nil {
		t.Fatalf("fields: %+v %q %v", in, up, err)
	}
	boundary, body = form(t, map[string]string{"filename": "up.js"}, []byte("uploaded"))
	if _, up, err = DecodeScriptForm(partsOf(multipart.NewReader(bytes.NewReader(body), boundary))); err != nil || string(up) != "uploaded" {
		t.Fatalf("upload: %q %v", up, err)
	}
	boundary, body = form(t, map[string]string{"mode": "0777"}, nil)
	if _, _, err = DecodeScriptForm(partsOf(multipart.NewReader(bytes.NewReader(body), boundary))); errs.Code(err) != errs.Invalid || !strings.Contains(err.Error(), "mode") {
		t.Fatalf("unknown field: %v", err)
	}
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	for range 17 {
		_ = mw.WriteField("path", "jd")
	}
	_ = mw.Close()
	if _, _, err = DecodeScriptForm(partsOf(multipart.NewReader(&b, mw.Boundary()))); errs.Code(err) != errs.Invalid || !strings.Contains(err.Error(), "16 parts") {
		t.Fatalf("17 parts: %v", err)
	}
}

func FuzzDecodeScriptForm(f *testing.F) {
	boundary, body := form(f, map[string]string{"filename": "a.js", "content": "x"}, []byte("u"))
	f.Add(boundary, body)
	f.Add("b", []byte("--b\r\nContent-Disposition: form-data; name=\"path\"\r\n\r\njd\r\n--b--\r\n"))
	f.Fuzz(func(t *testing.T, boundary string, body []byte) {
		if boundary == "" || len(boundary) > 70 {
			return
		}
		// Any input is a form or a coded client error, never a panic or
		// an internal error.
		if _, _, err := DecodeScriptForm(partsOf(multipart.NewReader(bytes.NewReader(body), boundary))); err != nil {
			if c := errs.Code(err); c != errs.Invalid && c != errs.TooLarge {
				t.Fatalf("error coded %s: %v", c, err)
			}
		}
	})
}

// partsOf adapts a multipart reader as httpkit.MultipartParts does.
func partsOf(mr *multipart.Reader) func() (FormPart, error) {
	return func() (FormPart, error) {
		p, err := mr.NextPart()
		if err != nil {
			return nil, err
		}
		return p, nil
	}
}
