package httpkit

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"

	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/errs"
)

// BodyLimits are the structural limits of a JSON request body of at most
// maxBytes. A task spec inside one is checked again, more tightly, by
// core/spec.
func BodyLimits(maxBytes int) canonjson.Limits {
	return canonjson.Limits{MaxBytes: maxBytes, MaxDepth: 16, MaxEntries: 256, MaxString: 16 << 10}
}

// ReadBody reads at most maxBytes of r's body. A declared or actual longer
// body is errs.TooLarge and the rest is not read (http.MaxBytesReader
// closes the connection after the response, so a client cannot stream
// gigabytes at us). A Content-Type other than application/json is
// refused; a non-empty body must declare it, so a cross-site "simple"
// request without a preflight never decodes.
func ReadBody(w http.ResponseWriter, r *http.Request, maxBytes int) ([]byte, error) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != "application/json" {
			return nil, errs.Invalidf("Content-Type", "must be application/json, got %.64q", ct)
		}
	}
	if r.ContentLength > int64(maxBytes) {
		return nil, errs.TooLargef("", "request body is %d bytes, limit is %d", r.ContentLength, maxBytes)
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, int64(maxBytes)))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, errs.TooLargef("", "request body exceeds the limit of %d bytes", maxBytes)
		}
		return nil, errs.Invalidf("", "reading the request body failed")
	}
	if len(data) > 0 && r.Header.Get("Content-Type") == "" {
		return nil, errs.Invalidf("Content-Type", "a JSON body needs Content-Type: application/json")
	}
	return data, nil
}

// DecodeJSON reads r's body (ReadBody) and decodes it strictly into v:
// an empty body, unknown fields, duplicate keys, trailing data and invalid
// UTF-8 are refused with an error naming the field (canonjson.DecodeStrict).
func DecodeJSON(w http.ResponseWriter, r *http.Request, maxBytes int, v any) error {
	data, err := ReadBody(w, r, maxBytes)
	if err != nil {
		return err
	}
	if len(data) == 0 {
		return errs.Invalidf("", "request body is empty; expected a JSON object")
	}
	return canonjson.DecodeStrict(data, BodyLimits(maxBytes), v)
}

// DecodeOptionalJSON is DecodeJSON for endpoints whose body may be empty
// (v is then left as it is).
func DecodeOptionalJSON(w http.ResponseWriter, r *http.Request, maxBytes int, v any) error {
	data, err := ReadBody(w, r, maxBytes)
	if err != nil || len(data) == 0 {
		return err
	}
	return canonjson.DecodeStrict(data, BodyLimits(maxBytes), v)
}

// QueryInt64 reads the query parameter name as an integer ≥ min; 0 when
// it is absent.
func QueryInt64(r *http.Request, name string, min int64) (int64, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < min {
		return 0, errs.Invalidf(name, "must be an integer >= %d, got %.24q", min, v)
	}
	return n, nil
}

// DecodeValue reads r's body (ReadBody) and decodes one JSON value of any
// kind into v — QingLong's Open API takes bare arrays as bodies, which
// DecodeJSON refuses — with unknown fields refused, as QingLong's
// validation does, and trailing values refused.
func DecodeValue(w http.ResponseWriter, r *http.Request, maxBytes int, v any) error {
	data, err := ReadBody(w, r, maxBytes)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) {
			return errs.Invalidf(ute.Field, "has the wrong type")
		}
		return errs.Invalidf("", "body: %v", err)
	}
	if dec.More() {
		return errs.Invalidf("", "body: one JSON value expected")
	}
	return nil
}

// DecodeIDs decodes a body that is a JSON array of numeric ids (QingLong's
// delete/run/stop/enable/disable bodies): at least one, at most maxIDs.
func DecodeIDs(w http.ResponseWriter, r *http.Request, maxBytes, maxIDs int) ([]int64, error) {
	var ids []int64
	if err := DecodeValue(w, r, maxBytes, &ids); err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, errs.Invalidf("", "give an array of ids")
	}
	if len(ids) > maxIDs {
		return nil, errs.Invalidf("", "at most %d ids at once", maxIDs)
	}
	return ids, nil
}
