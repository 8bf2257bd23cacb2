package httpapi

import (
	"errors"
	"io"
	"mime"
	"net/http"

	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/errs"
)

// DefaultMaxBodyBytes bounds every request body (DESIGN.md §8: wire bodies
// and task specs are at most 64 KiB).
const DefaultMaxBodyBytes = 64 << 10

// bodyLimits are the structural limits of a request body. The spec inside a
// task body is checked again, more tightly, by core/spec.
func bodyLimits(maxBytes int) canonjson.Limits {
	return canonjson.Limits{MaxBytes: maxBytes, MaxDepth: 16, MaxEntries: 256, MaxString: 16 << 10}
}

// readBody reads at most maxBytes of r's body. A longer body is a TooLarge
// error; the rest of it is not read (http.MaxBytesReader closes the
// connection after the response so a client cannot stream gigabytes at us).
func readBody(w http.ResponseWriter, r *http.Request, maxBytes int) ([]byte, error) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != "application/json" {
			return nil, errs.Invalidf("Content-Type", "must be application/json, got %q", ct)
		}
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, int64(maxBytes)))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, errs.TooLargef("", "request body exceeds the limit of %d bytes", maxBytes)
		}
		return nil, errs.Invalidf("", "reading the request body: %v", err)
	}
	if len(data) > 0 && r.Header.Get("Content-Type") == "" {
		return nil, errs.Invalidf("Content-Type", "a JSON body needs Content-Type: application/json")
	}
	return data, nil
}

// decodeBody reads r's body and decodes it strictly into v: unknown fields,
// duplicate keys, trailing data and invalid UTF-8 are rejected with an error
// naming the field.
func decodeBody(w http.ResponseWriter, r *http.Request, maxBytes int, v any) error {
	data, err := readBody(w, r, maxBytes)
	if err != nil {
		return err
	}
	if len(data) == 0 {
		return errs.Invalidf("", "request body is empty; expected a JSON object")
	}
	return canonjson.DecodeStrict(data, bodyLimits(maxBytes), v)
}

// decodeOptionalBody is decodeBody for endpoints whose body may be empty.
func decodeOptionalBody(w http.ResponseWriter, r *http.Request, maxBytes int, v any) error {
	data, err := readBody(w, r, maxBytes)
	if err != nil || len(data) == 0 {
		return err
	}
	return canonjson.DecodeStrict(data, bodyLimits(maxBytes), v)
}
