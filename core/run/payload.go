package run

import (
	"sort"
	"strconv"

	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/errs"
)

// MaxPayloadBytes bounds the JSON of one event payload (DESIGN.md §8).
const MaxPayloadBytes = 16 << 10

// maxPayloadString bounds every string in a payload.
const maxPayloadString = 128

var payloadLimits = canonjson.Limits{
	MaxBytes:   MaxPayloadBytes,
	MaxDepth:   1,
	MaxEntries: 64,
	MaxString:  maxPayloadString,
}

// Payload is the body of a RunEvent. Its fields are the allow-list: the
// strict decoder rejects any other key, and every string must be a short
// token ([A-Za-z0-9._:@/+-], at most 128 bytes). Free text has no place to
// go, so logs, command lines, environment values and secrets cannot end up
// in the event stream (DESIGN.md §8).
type Payload struct {
	AttemptID     string `json:"attemptId,omitempty"`
	AttemptNumber int    `json:"attemptNumber,omitempty"`
	// From and To name the statuses of a status event (Run or Attempt).
	From       string     `json:"from,omitempty"`
	To         string     `json:"to,omitempty"`
	ErrorClass ErrorClass `json:"errorClass,omitempty"`
	// Reason is a low-cardinality code such as lease_expired,
	// concurrency_forbid or fence_drift:token.
	Reason   string `json:"reason,omitempty"`
	ExitCode *int   `json:"exitCode,omitempty"`
	Signal   string `json:"signal,omitempty"`

	WorkerID          string `json:"workerId,omitempty"`
	SessionID         string `json:"sessionId,omitempty"`
	SessionGeneration int64  `json:"sessionGeneration,omitempty"`
	OfferID           string `json:"offerId,omitempty"`
	LeaseGeneration   int64  `json:"leaseGeneration,omitempty"`

	TriggerID               string `json:"triggerId,omitempty"`
	TriggerRevision         int64  `json:"triggerRevision,omitempty"`
	ScheduledForMs          int64  `json:"scheduledForMs,omitempty"`
	Missed                  int64  `json:"missed,omitempty"`
	ExecutionRevisionID     string `json:"executionRevisionId,omitempty"`
	ExecutionRevisionDigest string `json:"executionRevisionDigest,omitempty"`
	RerunOfRunID            string `json:"rerunOfRunId,omitempty"`
	RetryAtMs               int64  `json:"retryAtMs,omitempty"`
	// Actor is the principal id that asked for a manual run or a cancel.
	Actor string `json:"actor,omitempty"`

	StdoutBytes  int64 `json:"stdoutBytes,omitempty"`
	StderrBytes  int64 `json:"stderrBytes,omitempty"`
	LogTruncated bool  `json:"logTruncated,omitempty"`
	DurationMs   int64 `json:"durationMs,omitempty"`
}

// DecodePayload strictly decodes and validates an event payload.
func DecodePayload(data []byte) (Payload, error) {
	var p Payload
	if err := canonjson.DecodeStrict(data, payloadLimits, &p); err != nil {
		return Payload{}, err
	}
	if err := p.Validate(); err != nil {
		return Payload{}, err
	}
	return p, nil
}

// Encode validates p and returns its canonical JSON (canonjson: keys in
// byte order, no insignificant space). It writes the bytes directly from
// payloadFields instead of marshalling and normalising: the scheduler
// encodes two payloads per admitted Run, and the generic path cost ~4.4 µs
// and 42 allocations each. Every string is a validated token, which never
// needs escaping. TestPayloadEncodeIsCanonical and FuzzDecodePayload check
// it against canonjson.Normalize(json.Marshal(p)).
func (p Payload) Encode() ([]byte, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	b := make([]byte, 0, 256)
	b = append(b, '{')
	for _, f := range payloadFields {
		b = f.append(b, &p, f.key)
	}
	b = append(b, '}')
	if len(b) > MaxPayloadBytes {
		return nil, errs.TooLargef("", "event payload is %d bytes, limit is %d", len(b), MaxPayloadBytes)
	}
	return b, nil
}

// payloadField appends one key and its value when present (the JSON tags
// are all omitempty).
type payloadField struct {
	key    string
	append func(b []byte, p *Payload, key string) []byte
}

// payloadFields lists every Payload field under its JSON key, sorted by key
// at init (the canonical order); TestPayloadFieldsCoverTheStruct keeps it in
// step with the struct tags.
var payloadFields = sortedPayloadFields([]payloadField{
	{"attemptId", str(func(p *Payload) string { return p.AttemptID })},
	{"attemptNumber", num(func(p *Payload) int64 { return int64(p.AttemptNumber) })},
	{"from", str(func(p *Payload) string { return p.From })},
	{"to", str(func(p *Payload) string { return p.To })},
	{"errorClass", str(func(p *Payload) string { return string(p.ErrorClass) })},
	{"reason", str(func(p *Payload) string { return p.Reason })},
	{"exitCode", func(b []byte, p *Payload, key string) []byte {
		if p.ExitCode == nil {
			return b
		}
		return strconv.AppendInt(appendKey(b, key), int64(*p.ExitCode), 10)
	}},
	{"signal", str(func(p *Payload) string { return p.Signal })},
	{"workerId", str(func(p *Payload) string { return p.WorkerID })},
	{"sessionId", str(func(p *Payload) string { return p.SessionID })},
	{"sessionGeneration", num(func(p *Payload) int64 { return p.SessionGeneration })},
	{"offerId", str(func(p *Payload) string { return p.OfferID })},
	{"leaseGeneration", num(func(p *Payload) int64 { return p.LeaseGeneration })},
	{"triggerId", str(func(p *Payload) string { return p.TriggerID })},
	{"triggerRevision", num(func(p *Payload) int64 { return p.TriggerRevision })},
	{"scheduledForMs", num(func(p *Payload) int64 { return p.ScheduledForMs })},
	{"missed", num(func(p *Payload) int64 { return p.Missed })},
	{"executionRevisionId", str(func(p *Payload) string { return p.ExecutionRevisionID })},
	{"executionRevisionDigest", str(func(p *Payload) string { return p.ExecutionRevisionDigest })},
	{"rerunOfRunId", str(func(p *Payload) string { return p.RerunOfRunID })},
	{"retryAtMs", num(func(p *Payload) int64 { return p.RetryAtMs })},
	{"actor", str(func(p *Payload) string { return p.Actor })},
	{"stdoutBytes", num(func(p *Payload) int64 { return p.StdoutBytes })},
	{"stderrBytes", num(func(p *Payload) int64 { return p.StderrBytes })},
	{"logTruncated", func(b []byte, p *Payload, key string) []byte {
		if !p.LogTruncated {
			return b
		}
		return append(appendKey(b, key), "true"...)
	}},
	{"durationMs", num(func(p *Payload) int64 { return p.DurationMs })},
})

func sortedPayloadFields(fs []payloadField) []payloadField {
	// sort.Slice, not slices.SortFunc: a generic sort is instantiated per
	// element shape (~25 KB of code in the size-capped mipsle worker for a
	// table sorted once at start).
	sort.Slice(fs, func(i, j int) bool { return fs[i].key < fs[j].key })
	return fs
}

// str encodes a token-valued string field (omitted when empty).
func str(get func(*Payload) string) func([]byte, *Payload, string) []byte {
	return func(b []byte, p *Payload, key string) []byte {
		v := get(p)
		if v == "" {
			return b
		}
		b = append(appendKey(b, key), '"')
		return append(append(b, v...), '"')
	}
}

// num encodes an integer field (omitted when zero).
func num(get func(*Payload) int64) func([]byte, *Payload, string) []byte {
	return func(b []byte, p *Payload, key string) []byte {
		v := get(p)
		if v == 0 {
			return b
		}
		return strconv.AppendInt(appendKey(b, key), v, 10)
	}
}

// appendKey writes the separator (unless first) and "key":.
func appendKey(b []byte, key string) []byte {
	if len(b) > 1 {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, key...)
	return append(b, '"', ':')
}

// Validate checks every field against its format and range.
func (p Payload) Validate() error {
	tokens := []struct {
		field, value string
	}{
		{"attemptId", p.AttemptID}, {"from", p.From}, {"to", p.To}, {"reason", p.Reason},
		{"signal", p.Signal}, {"workerId", p.WorkerID}, {"sessionId", p.SessionID},
		{"offerId", p.OfferID}, {"triggerId", p.TriggerID},
		{"executionRevisionId", p.ExecutionRevisionID},
		{"executionRevisionDigest", p.ExecutionRevisionDigest},
		{"rerunOfRunId", p.RerunOfRunID}, {"actor", p.Actor},
	}
	for _, t := range tokens {
		if err := checkToken(t.field, t.value); err != nil {
			return err
		}
	}
	for _, st := range []struct{ field, value string }{{"from", p.From}, {"to", p.To}} {
		if st.value != "" && !RunStatus(st.value).Valid() && !AttemptStatus(st.value).Valid() {
			return errs.Invalidf(st.field, "unknown run or attempt status %q", st.value)
		}
	}
	if p.ErrorClass != "" && !p.ErrorClass.Valid() {
		return errs.Invalidf("errorClass", "unknown error class %q", string(p.ErrorClass))
	}
	if p.AttemptNumber < 0 || p.AttemptNumber > 16 {
		return errs.Invalidf("attemptNumber", "must be 1..16, got %d", p.AttemptNumber)
	}
	if p.ExitCode != nil && (*p.ExitCode < 0 || *p.ExitCode > 255) {
		return errs.Invalidf("exitCode", "must be 0..255, got %d", *p.ExitCode)
	}
	nonNegative := []struct {
		field string
		value int64
	}{
		{"sessionGeneration", p.SessionGeneration}, {"leaseGeneration", p.LeaseGeneration},
		{"triggerRevision", p.TriggerRevision}, {"scheduledForMs", p.ScheduledForMs},
		{"missed", p.Missed}, {"retryAtMs", p.RetryAtMs}, {"stdoutBytes", p.StdoutBytes},
		{"stderrBytes", p.StderrBytes}, {"durationMs", p.DurationMs},
	}
	for _, n := range nonNegative {
		if n.value < 0 {
			return errs.Invalidf(n.field, "must not be negative, got %d", n.value)
		}
	}
	return nil
}

// checkToken accepts "" (absent) or a short token without spaces or
// control characters.
func checkToken(field, s string) error {
	if len(s) > maxPayloadString {
		return errs.TooLargef(field, "is %d bytes, limit is %d", len(s), maxPayloadString)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '.', c == '_', c == ':', c == '@', c == '/', c == '+', c == '-':
		default:
			return errs.Invalidf(field, "byte %d is not allowed in a token (letters, digits and ._:@/+- only)", i)
		}
	}
	return nil
}
