package httpkit

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ql3/ql3/core/errs"
)

func TestIfMatchTag(t *testing.T) {
	for in, want := range map[string]string{
		`"abc"`: "abc", `abc`: "abc", ` W/"abc" `: "abc", `*`: "*", ``: "",
	} {
		if got := IfMatchTag(in); got != want {
			t.Errorf("IfMatchTag(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestReadRaw(t *testing.T) {
	post := func(ct, body string) (*httptest.ResponseRecorder, *http.Request) {
		r := httptest.NewRequest(http.MethodPut, "/", strings.NewReader(body))
		if ct != "" {
			r.Header.Set("Content-Type", ct)
		}
		return httptest.NewRecorder(), r
	}
	w, r := post(RawContentType, "hello")
	if data, err := ReadRaw(w, r, 5); err != nil || string(data) != "hello" {
		t.Fatalf("within the limit: %q, %v", data, err)
	}
	w, r = post(RawContentType, "hello!")
	if _, err := ReadRaw(w, r, 5); errs.Code(err) != errs.TooLarge {
		t.Errorf("over the limit: %v, want too large", err)
	}
	w, r = post(RawContentType, "hello!")
	r.ContentLength = -1 // undeclared length: caught while reading
	if _, err := ReadRaw(w, r, 5); errs.Code(err) != errs.TooLarge {
		t.Errorf("over the limit, length undeclared: %v, want too large", err)
	}
	w, r = post("application/json", "{}")
	if _, err := ReadRaw(w, r, 5); errs.Field(err) != "Content-Type" {
		t.Errorf("wrong Content-Type: %v, want an error naming Content-Type", err)
	}
}

func TestWritePreconditionFailed(t *testing.T) {
	w := httptest.NewRecorder()
	WritePreconditionFailed(w, "d1", errors.New("the file changed since it was read"))
	if w.Code != http.StatusPreconditionFailed || w.Header().Get("ETag") != `"d1"` {
		t.Fatalf("412 with the current ETag: %d %q", w.Code, w.Header().Get("ETag"))
	}
	w = httptest.NewRecorder()
	WritePreconditionFailed(w, "", errors.New("the file is gone"))
	if w.Header().Get("ETag") != "" {
		t.Errorf("no current version, yet ETag %q", w.Header().Get("ETag"))
	}
}
