package httpkit

import (
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/ql3/ql3/core/errs"
)

// Raw file bodies: the scripts routes of both binaries carry a file's
// bytes as themselves (application/octet-stream) with its digest as the
// ETag, so a client can write back only over the version it read.

// RawContentType is the only Content-Type a raw file body may declare.
const RawContentType = "application/octet-stream"

// CheckRawContentType refuses a request whose Content-Type is not
// RawContentType, naming the header.
func CheckRawContentType(r *http.Request) error {
	if ct := r.Header.Get("Content-Type"); ct != RawContentType {
		return errs.Invalidf("Content-Type", "must be %s, got %.64q", RawContentType, ct)
	}
	return nil
}

// ReadRaw reads a raw body of at most limit bytes (errs.TooLarge beyond;
// the rest is not read).
func ReadRaw(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if err := CheckRawContentType(r); err != nil {
		return nil, err
	}
	if r.ContentLength > limit {
		return nil, errs.TooLargef("", "request body is %d bytes, limit is %d", r.ContentLength, limit)
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return nil, errs.TooLargef("", "request body exceeds the limit of %d bytes", limit)
	}
	return data, err
}

// WriteRawFile answers 200 with data as a raw file whose digest is etag;
// never cached, never sniffed.
func WriteRawFile(w http.ResponseWriter, data []byte, etag string) {
	w.Header().Set("ETag", `"`+etag+`"`)
	w.Header().Set("Content-Type", RawContentType)
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(data)
}

// IfMatchTag reads an If-Match value: a quoted (or bare, or weak) digest,
// or *.
func IfMatchTag(v string) string {
	v = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), "W/"))
	return strings.Trim(v, `"`)
}

// WritePreconditionFailed answers 412 for a write over a version that is
// no longer current, with the current ETag when there is one ("" for a
// file that no longer exists).
func WritePreconditionFailed(w http.ResponseWriter, current string, err error) {
	if current != "" {
		w.Header().Set("ETag", `"`+current+`"`)
	}
	WriteErrorStatus(w, http.StatusPreconditionFailed, errs.E(errs.Conflict, "If-Match", "%s", err.Error()))
}
