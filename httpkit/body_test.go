package httpkit

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ql3/ql3/core/errs"
)

type signIn struct {
	Token string `json:"token"`
}

func TestDecodeJSON(t *testing.T) {
	for _, c := range []struct {
		name, ct, body   string
		code, field, msg string
	}{
		{name: "ok", ct: "application/json", body: `{"token":"t"}`},
		{name: "charset ok", ct: "application/json; charset=utf-8", body: `{"token":"t"}`},
		{name: "unknown field", ct: "application/json", body: `{"token":"t","extra":1}`, code: errs.Invalid, field: "extra"},
		{name: "duplicate key", ct: "application/json", body: `{"token":"a","token":"b"}`, code: errs.Invalid, field: "token"},
		{name: "trailing data", ct: "application/json", body: `{"token":"t"} {}`, code: errs.Invalid},
		{name: "empty", ct: "application/json", body: ``, code: errs.Invalid, msg: "empty"},
		{name: "no content type", body: `{"token":"t"}`, code: errs.Invalid, field: "Content-Type"},
		{name: "form", ct: "application/x-www-form-urlencoded", body: `token=t`, code: errs.Invalid, field: "Content-Type"},
		{name: "too large", ct: "application/json", body: `{"token":"` + strings.Repeat("x", 100) + `"}`, code: errs.TooLarge, msg: "limit is 64"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/", strings.NewReader(c.body))
			if c.ct != "" {
				r.Header.Set("Content-Type", c.ct)
			}
			var v signIn
			err := DecodeJSON(httptest.NewRecorder(), r, 64, &v)
			if c.code == "" {
				if err != nil || v.Token != "t" {
					t.Fatalf("DecodeJSON = %v, %+v", err, v)
				}
				return
			}
			if errs.Code(err) != c.code || (c.field != "" && errs.Field(err) != c.field) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("DecodeJSON = %v; want %s on field %q containing %q", err, c.code, c.field, c.msg)
			}
		})
	}
}

// TestReadBodyStopsAtTheLimit: a body without a declared length that runs
// past the limit is refused without reading it all.
func TestReadBodyStopsAtTheLimit(t *testing.T) {
	src := &countingReader{n: 1 << 20}
	r := httptest.NewRequest("POST", "/", src)
	r.ContentLength = -1
	r.Header.Set("Content-Type", "application/json")
	_, err := ReadBody(httptest.NewRecorder(), r, 1024)
	if errs.Code(err) != errs.TooLarge {
		t.Fatalf("ReadBody = %v, want too_large", err)
	}
	if src.read > 64<<10 {
		t.Fatalf("read %d bytes of an over-long body with a 1 KiB limit", src.read)
	}
}

type countingReader struct{ n, read int }

func (c *countingReader) Read(p []byte) (int, error) {
	if len(p) > c.n-c.read {
		p = p[:c.n-c.read]
	}
	for i := range p {
		p[i] = ' '
	}
	c.read += len(p)
	return len(p), nil
}

func TestDecodeOptionalJSONAcceptsNoBody(t *testing.T) {
	r := httptest.NewRequest("POST", "/", nil)
	v := signIn{Token: "kept"}
	if err := DecodeOptionalJSON(httptest.NewRecorder(), r, 64, &v); err != nil || v.Token != "kept" {
		t.Fatalf("DecodeOptionalJSON = %v, %+v", err, v)
	}
	r = httptest.NewRequest("POST", "/", strings.NewReader(`{"nope":1}`))
	r.Header.Set("Content-Type", "application/json")
	if err := DecodeOptionalJSON(httptest.NewRecorder(), r, 64, &v); errs.Field(err) != "nope" {
		t.Fatalf("unknown field: %v", err)
	}
}

func TestQueryInt64(t *testing.T) {
	r := httptest.NewRequest("GET", "/?after=7&bad=x&neg=-1", nil)
	if n, err := QueryInt64(r, "after", 0); n != 7 || err != nil {
		t.Errorf("after = %d, %v", n, err)
	}
	if n, err := QueryInt64(r, "absent", 0); n != 0 || err != nil {
		t.Errorf("absent = %d, %v", n, err)
	}
	for _, name := range []string{"bad", "neg"} {
		if _, err := QueryInt64(r, name, 0); errs.Field(err) != name {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestFailHidesInternalDetail: the client sees the envelope with a
// generic message; the detail goes to the log only.
func TestFailHidesInternalDetail(t *testing.T) {
	var logged bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	w := httptest.NewRecorder()
	Fail(w, httptest.NewRequest("GET", "/x", nil), log, errSecret("pq: password authentication failed for user secret"))
	if w.Code != http.StatusInternalServerError || strings.Contains(w.Body.String(), "secret") ||
		!strings.Contains(w.Body.String(), `"code":"internal"`) {
		t.Fatalf("answer %d %s", w.Code, w.Body)
	}
	if !strings.Contains(logged.String(), "secret") {
		t.Fatalf("the detail was not logged: %s", logged.String())
	}
	w = httptest.NewRecorder()
	Fail(w, httptest.NewRequest("GET", "/x", nil), log, errs.Invalidf("name", "must be <b>short</b>"))
	if w.Code != 400 || !strings.Contains(w.Body.String(), `"field":"name"`) || !strings.Contains(w.Body.String(), "<b>short</b>") {
		t.Fatalf("answer %d %s", w.Code, w.Body)
	}
	if w.Header().Get("X-Content-Type-Options") != "nosniff" {
		t.Fatal("no nosniff")
	}
}

type errSecret string

func (e errSecret) Error() string { return string(e) }

func TestWriteErrorStatusAndRaw(t *testing.T) {
	w := httptest.NewRecorder()
	WriteErrorStatus(w, http.StatusTooManyRequests, errs.E(errs.Unavailable, "", "too many failed attempts"))
	if w.Code != 429 || w.Header().Get("Content-Length") != "59" ||
		w.Body.String() != `{"code":"unavailable","message":"too many failed attempts"}` {
		t.Fatalf("answer %d %q %q", w.Code, w.Header().Get("Content-Length"), w.Body)
	}
}

func TestStatusRecorder(t *testing.T) {
	w := httptest.NewRecorder()
	rec := &StatusRecorder{ResponseWriter: w}
	_, _ = rec.Write([]byte("abc"))
	rec.WriteHeader(500) // too late: the first status stays
	rec.Flush()
	if rec.Status != 200 || rec.Bytes != 3 || !w.Flushed {
		t.Fatalf("status %d bytes %d flushed %v", rec.Status, rec.Bytes, w.Flushed)
	}
	if http.NewResponseController(rec).Flush() != nil {
		t.Fatal("ResponseController cannot reach the writer")
	}
}

func TestServeDocument(t *testing.T) {
	w := httptest.NewRecorder()
	ServeDocument([]byte(`{"openapi":"3.1.0"}`))(w, httptest.NewRequest("GET", "/api/v1/openapi.json", nil))
	if w.Code != 200 || w.Body.String() != `{"openapi":"3.1.0"}` || !strings.HasPrefix(w.Header().Get("Content-Type"), "application/json") {
		t.Fatalf("answer %d %s %v", w.Code, w.Body, w.Header())
	}
}

func TestPatternRecorder(t *testing.T) {
	mux := http.NewServeMux()
	rec := &PatternRecorder{Mux: mux}
	rec.HandleFunc("GET /a", func(http.ResponseWriter, *http.Request) {})
	rec.HandleFunc("POST /b/{id}", func(http.ResponseWriter, *http.Request) {})
	if strings.Join(rec.Patterns, ",") != "GET /a,POST /b/{id}" {
		t.Fatalf("patterns %v", rec.Patterns)
	}
	if _, p := mux.Handler(httptest.NewRequest("POST", "/b/1", nil)); p != "POST /b/{id}" {
		t.Fatalf("mux did not get the route: %q", p)
	}
}

// FuzzDecodeJSON: any body is either decoded or refused with a coded
// error (invalid or too_large), never a panic or an uncoded error; an
// accepted body fits the limit.
func FuzzDecodeJSON(f *testing.F) {
	f.Add(`{"token":"t"}`, "application/json")
	f.Add(`{"token":"a","token":"b"}`, "application/json")
	f.Add(`{"token":"t","x":1}`, "application/json; charset=utf-8")
	f.Add(`{"token":"\xff"}`, "application/json")
	f.Add(``, "")
	f.Add(`[1,2]`, "text/plain")
	f.Fuzz(func(t *testing.T, body, ct string) {
		r := httptest.NewRequest("POST", "/", strings.NewReader(body))
		if ct != "" {
			r.Header.Set("Content-Type", ct)
		}
		var v signIn
		err := DecodeJSON(httptest.NewRecorder(), r, 256, &v)
		if err == nil {
			if len(body) > 256 {
				t.Fatalf("accepted %d bytes over a 256-byte limit", len(body))
			}
			return
		}
		if c := errs.Code(err); c != errs.Invalid && c != errs.TooLarge {
			t.Fatalf("DecodeJSON(%q, %q) = %v (code %q)", body, ct, err, c)
		}
	})
}

func TestDecodeIDs(t *testing.T) {
	do := func(body string, maxIDs int) ([]int64, error) {
		r := httptest.NewRequest(http.MethodPut, "/", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		return DecodeIDs(httptest.NewRecorder(), r, 1024, maxIDs)
	}
	if ids, err := do(`[3, 1]`, 2); err != nil || len(ids) != 2 || ids[0] != 3 {
		t.Fatalf("two ids: %v, %v", ids, err)
	}
	for body, field := range map[string]string{`[]`: "", `[1,2,3]`: "", `["x"]`: "", `[1] [2]`: "", `{"a":1}`: ""} {
		if _, err := do(body, 2); errs.Code(err) != errs.Invalid || errs.Field(err) != field {
			t.Errorf("%s: %v, want invalid", body, err)
		}
	}
	type row struct {
		Name string `json:"name"`
	}
	r := httptest.NewRequest(http.MethodPut, "/", strings.NewReader(`{"name":"a","extra":1}`))
	r.Header.Set("Content-Type", "application/json")
	if err := DecodeValue(httptest.NewRecorder(), r, 1024, &row{}); errs.Code(err) != errs.Invalid {
		t.Errorf("an unknown field: %v, want invalid", err)
	}
}
