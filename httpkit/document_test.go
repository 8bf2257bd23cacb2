package httpkit

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"net/http/httptest"
	"testing"
)

func gzipOf(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestServeGzipDocument(t *testing.T) {
	doc := []byte(`{"openapi":"3.1.0"}`)
	gz := gzipOf(t, doc)
	h := ServeGzipDocument(gz)
	for _, tc := range []struct {
		accept string
		gzip   bool
	}{
		{"", false},
		{"gzip", true},
		{"br, gzip;q=0.5", true},
		{"GZIP", true},
		{"gzip;q=0", false},
		{"identity", false},
		{"deflate, x-gzip", false},
	} {
		r := httptest.NewRequest(http.MethodGet, "/api/v1/openapi.json", nil)
		if tc.accept != "" {
			r.Header.Set("Accept-Encoding", tc.accept)
		}
		w := httptest.NewRecorder()
		h(w, r)
		if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "application/json; charset=utf-8" {
			t.Fatalf("%q: status %d type %q", tc.accept, w.Code, w.Header().Get("Content-Type"))
		}
		if w.Header().Get("Vary") != "Accept-Encoding" {
			t.Fatalf("%q: no Vary", tc.accept)
		}
		body := w.Body.Bytes()
		if tc.gzip {
			if w.Header().Get("Content-Encoding") != "gzip" || !bytes.Equal(body, gz) {
				t.Fatalf("%q: want the gzip body, got encoding %q", tc.accept, w.Header().Get("Content-Encoding"))
			}
			continue
		}
		if w.Header().Get("Content-Encoding") != "" || !bytes.Equal(body, doc) {
			t.Fatalf("%q: want the plain document, got %q (encoding %q)", tc.accept, body, w.Header().Get("Content-Encoding"))
		}
	}
}

func TestServeGzipDocumentRefusesCorruptEmbed(t *testing.T) {
	w := httptest.NewRecorder()
	ServeGzipDocument([]byte("not gzip"))(w, httptest.NewRequest(http.MethodGet, "/x", nil))
	if w.Code != http.StatusInternalServerError {
		t.Fatalf("status %d", w.Code)
	}
}
