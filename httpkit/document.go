package httpkit

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"strings"
	"sync"
)

// ServeGzipDocument serves a JSON document embedded gzip-compressed (the
// OpenAPI documents: ~10x smaller in the binary, ADR 0029): as is, with
// Content-Encoding gzip, to a client that accepts gzip (browsers, Go's
// client, curl --compressed); decompressed once, on first need, to one
// that does not.
func ServeGzipDocument(gz []byte) http.HandlerFunc {
	plain := sync.OnceValues(func() ([]byte, error) { return Gunzip(gz) })
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Vary", "Accept-Encoding")
		if acceptsGzip(r.Header.Values("Accept-Encoding")) {
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.Header().Set("X-Content-Type-Options", "nosniff")
			w.Header().Set("Content-Encoding", "gzip")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(gz)
			return
		}
		doc, err := plain()
		if err != nil { // a build error: every test of the document catches it
			http.Error(w, "document unavailable", http.StatusInternalServerError)
			return
		}
		ServeDocument(doc)(w, r)
	}
}

// Gunzip decompresses an embedded gzip document.
func Gunzip(gz []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	return io.ReadAll(zr)
}

// acceptsGzip reports whether Accept-Encoding values name gzip with a
// non-zero quality.
func acceptsGzip(values []string) bool {
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
			if !strings.EqualFold(strings.TrimSpace(name), "gzip") {
				continue
			}
			q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
			return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
		}
	}
	return false
}
