// Package protocol defines version 1 of the worker ingress wire protocol:
// the JSON bodies a worker and the control plane exchange, each with a
// strict, bounded decoder (DecodeXxx), a Validate and an Encode.
//
// Every body is a JSON object with camelCase keys and a required "v": 1.
// The version lives in the body, not only in the path, because the worker
// journals bodies (completions, log offsets) on disk and replays them after
// an upgrade: a stored body must say which protocol wrote it. Routes are
// versioned too (Path* constants), so a v2 can be served side by side.
//
// Decoders accept nothing they do not understand: unknown or duplicate keys
// (case-insensitively), trailing data, bodies, strings, lists or nesting
// beyond the per-body limit, and out-of-range values are refused with an
// errs.Error whose Field names the offending key. Identity never comes from
// a body: the ingress takes the worker id from the authenticated transport
// (mTLS certificate) and only compares it with what the body refers to.
//
// The worker links this package, so it imports only the standard library
// and core's spec, placement, fence, run, errs and canonjson packages —
// never cron or semver. See docs/adr/0004-wire-protocol-v1.md.
package protocol

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"

	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/errs"
)

// Version is the protocol version every v1 body carries in "v".
const Version = 1

// Body size limits (DESIGN.md §8): 4 KiB by default, 64 KiB hard, the
// offer up to 128 KiB. Bodies that embed a bounded document get the
// document's bound plus the default.
const (
	DefaultBodyBytes   = 4 << 10
	HardBodyBytes      = 64 << 10
	MaxOfferBytes      = 128 << 10
	MaxSessionOpenSize = DefaultBodyBytes + 16<<10 // + capabilities (16 KiB)
	MaxHeartbeatBytes  = 8 << 10                   // up to MaxCapacity attempt ids
	MaxSessionState    = 32 << 10                  // up to MaxCapacity lease controls
)

// Value limits.
const (
	MaxIDLen           = 64 // run, attempt, worker, session, revision and credential ids
	MaxCapacity        = 64 // concurrent attempts one session may run
	MaxAgentVersionLen = 64
	MaxWaitMs          = 30_000 // pull long-poll hint; below the worker's request timeout
	MinHeartbeatMs     = 5_000
	MaxHeartbeatMs     = 300_000
	MaxCancelGraceMs   = 300_000  // SIGTERM → SIGKILL grace the server may ask for
	MaxLogChunkBytes   = 32 << 10 // decoded; base64 adds a third and the body stays ≤ 64 KiB
	MaxLogBytes        = 1 << 30  // per attempt and stream (DESIGN.md §8 hard limit)
	MaxAttemptNumber   = 16
	MaxTimeoutMs       = 365 * 24 * 60 * 60 * 1000
	MaxEpochMs         = 253_402_300_799_999 // 9999-12-31T23:59:59.999Z: the largest RFC 3339 instant
)

// Routes of the worker ingress. All are POST with a JSON body.
const (
	PathSessionOpen       = "/v1/sessions/open"       // SessionOpen → SessionState
	PathSessionHeartbeat  = "/v1/sessions/heartbeat"  // SessionHeartbeat → SessionState
	PathSessionTransition = "/v1/sessions/transition" // SessionTransition → SessionState
	PathOfferPull         = "/v1/offers/pull"         // OfferPullRequest → 200 Offer | 204 no offer
	PathLeaseAck          = "/v1/leases/ack"          // Ack → LeaseControl
	PathLeaseLog          = "/v1/leases/log"          // LogChunk → LogReceipt
	PathLeaseComplete     = "/v1/leases/complete"     // Completion → CompletionReceipt
)

// limits returns canonjson limits for a flat-ish body.
func limits(maxBytes, depth, entries, str int) canonjson.Limits {
	return canonjson.Limits{MaxBytes: maxBytes, MaxDepth: depth, MaxEntries: entries, MaxString: str}
}

// flat bounds the small bodies: one object, short strings.
var flat = limits(DefaultBodyBytes, 1, 32, 256)

// decode strictly decodes data into v and then checks the version.
func decode(data []byte, lim canonjson.Limits, v any, version *int) error {
	if err := canonjson.DecodeStrict(data, lim, v); err != nil {
		return inlineField(err)
	}
	return checkVersion(*version)
}

// inlineField removes the Go name of the embedded LeaseRef from a field
// path encoding/json reported ("LeaseRef.generation" → "generation"): its
// members are inlined in the JSON body.
func inlineField(err error) error {
	var e *errs.Error
	if !errors.As(err, &e) || !strings.Contains(e.Field, "LeaseRef.") {
		return err
	}
	c := *e
	c.Field = strings.ReplaceAll(c.Field, "LeaseRef.", "")
	return &c
}

func checkVersion(v int) error {
	if v != Version {
		return errs.Invalidf("v", "protocol version must be %d, got %d", Version, v)
	}
	return nil
}

// encode marshals a validated body and enforces its size limit, so a
// sender never produces what the receiver would refuse.
func encode(v any, maxBytes int, what string) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // "<" stays one byte: a decoded body never grows past its limit on re-encode
	if err := enc.Encode(v); err != nil {
		return nil, errs.E(errs.Internal, "", "encode %s: %v", what, err)
	}
	out := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if len(out) > maxBytes {
		return nil, errs.TooLargef("", "%s is %d bytes, limit is %d", what, len(out), maxBytes)
	}
	return out, nil
}

// checkID accepts an opaque id: 1..MaxIDLen bytes of [A-Za-z0-9._:-].
func checkID(field, s string) error {
	if s == "" {
		return errs.Invalidf(field, "is required")
	}
	if len(s) > MaxIDLen {
		return errs.Invalidf(field, "is %d bytes, limit is %d", len(s), MaxIDLen)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '.' || c == '_' || c == ':' || c == '-') {
			return errs.Invalidf(field, "byte %d is not allowed (ids are [A-Za-z0-9._:-])", i)
		}
	}
	return nil
}

func checkPositive(field string, n int64) error {
	if n < 1 {
		return errs.Invalidf(field, "must be at least 1, got %d", n)
	}
	return nil
}

func checkRange(field string, n, lo, hi int64) error {
	if n < lo || n > hi {
		return errs.Invalidf(field, "must be %d..%d, got %d", lo, hi, n)
	}
	return nil
}

// checkPrintable accepts 1..max bytes of printable ASCII (no control
// characters, no newlines that could forge a log line).
func checkPrintable(field, s string, max int) error {
	if s == "" {
		return errs.Invalidf(field, "is required")
	}
	if len(s) > max {
		return errs.Invalidf(field, "is %d bytes, limit is %d", len(s), max)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return errs.Invalidf(field, "byte %d is not printable ASCII", i)
		}
	}
	return nil
}

// parseDigest parses "sha256:<64 hex>" and names field in the error.
func parseDigest(field, s string) (canonjson.Digest, error) {
	d, err := canonjson.ParseDigest(s)
	if err != nil {
		return canonjson.Digest{}, errs.Invalidf(field, "must be sha256:<64 lowercase hex digits>")
	}
	// ParseDigest accepts only the one text form; re-encoding into a stack
	// buffer confirms it without allocating on the decode path.
	var text [len("sha256:") + 2*len(canonjson.Digest{})]byte
	copy(text[:], "sha256:")
	hex.Encode(text[len("sha256:"):], d[:])
	if string(text[:]) != s {
		return canonjson.Digest{}, errs.Invalidf(field, "must be sha256:<64 lowercase hex digits>")
	}
	return d, nil
}
