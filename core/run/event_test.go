package run

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/errs"
)

var wantEvents = map[string]string{ // event → status it records ("" for annotations)
	"run.created":           "created",
	"run.queued":            "queued",
	"run.dispatched":        "dispatching",
	"run.starting":          "",
	"run.running":           "running",
	"run.succeeded":         "succeeded",
	"run.failed":            "failed",
	"run.cancelled":         "cancelled",
	"run.timed_out":         "timed_out",
	"run.lost":              "lost",
	"run.retry_scheduled":   "retry_wait",
	"run.skipped":           "cancelled",
	"run.cancel_requested":  "",
	"run.lease_released":    "",
	"attempt.late_callback": "",
}

func TestEventTypesAreExactlyTheDocumentedSet(t *testing.T) {
	got := EventTypes()
	if len(got) != len(wantEvents) || EventType("run.paused").Valid() || EventType("").Valid() {
		t.Fatalf("EventTypes() has %d, want %d; or an unknown type is valid", len(got), len(wantEvents))
	}
	for _, e := range got {
		want, ok := wantEvents[string(e)]
		if !ok {
			t.Errorf("unexpected event type %q", e)
			continue
		}
		if !e.Valid() {
			t.Errorf("%q not Valid", e)
		}
		st, isStatus := e.RunStatus()
		if string(st) != want || isStatus != (want != "") {
			t.Errorf("%q.RunStatus() = %q, %v; want %q", e, st, isStatus, want)
		}
	}
	if EventType("run.unknown").Valid() {
		t.Error("run.unknown is Valid")
	}
}

func TestEventForEveryStatus(t *testing.T) {
	for _, s := range RunStatuses() {
		e, err := EventFor(s)
		if err != nil {
			t.Fatalf("EventFor(%s): %v", s, err)
		}
		if got, ok := e.RunStatus(); !ok || got != s {
			t.Errorf("EventFor(%s) = %s which records %q", s, e, got)
		}
		if e == EventSkipped {
			t.Errorf("EventFor(%s) must return the plain status event, not run.skipped", s)
		}
	}
	if _, err := EventFor("paused"); errs.Code(err) != errs.Invalid {
		t.Errorf("EventFor(paused) = %v, want invalid", err)
	}
}

func TestCheckEvent(t *testing.T) {
	cases := []struct {
		from, to RunStatus
		event    EventType
		code     string
	}{
		{RunCreated, RunQueued, EventQueued, ""},
		{RunCreated, RunCancelled, EventSkipped, ""},
		{RunCreated, RunCancelled, EventCancelled, ""},
		{RunQueued, RunCancelled, EventSkipped, errs.Invalid},
		{RunRunning, RunRetryWait, EventRetryScheduled, ""},
		{RunRunning, RunRetryWait, EventQueued, errs.Invalid},
		{RunDispatching, RunQueued, EventQueued, ""},
		{RunLost, RunRetryWait, EventRetryScheduled, ""},
		{RunLost, RunQueued, EventQueued, errs.Conflict},
		{RunDispatching, RunRunning, EventStarting, errs.Invalid},
		{RunSucceeded, RunFailed, EventFailed, errs.Conflict},
		{RunQueued, RunRunning, EventRunning, errs.Conflict},
		{RunQueued, RunDispatching, "run.bogus", errs.Invalid},
	}
	for _, c := range cases {
		err := CheckEvent(c.from, c.to, c.event)
		if errs.Code(err) != c.code {
			t.Errorf("CheckEvent(%s→%s, %s) = %v, want code %q", c.from, c.to, c.event, err, c.code)
		}
	}
	// Every allowed move has its plain status event.
	for _, from := range RunStatuses() {
		for _, to := range RunStatuses() {
			if !RunTransitionAllowed(from, to) {
				continue
			}
			e, _ := EventFor(to)
			if err := CheckEvent(from, to, e); err != nil {
				t.Errorf("CheckEvent(%s→%s, %s) = %v", from, to, e, err)
			}
		}
	}
}

func TestErrorClasses(t *testing.T) {
	want := []string{"validation", "dispatch", "executor_start", "process_exit", "cancelled_by_user",
		"timeout", "worker_lost", "internal"}
	got := ErrorClasses()
	if len(got) != len(want) {
		t.Fatalf("ErrorClasses() = %v", got)
	}
	for i, c := range got {
		if string(c) != want[i] || !c.Valid() {
			t.Errorf("ErrorClasses()[%d] = %q, want %q (valid)", i, c, want[i])
		}
		if p, err := ParseErrorClass(want[i]); err != nil || p != c {
			t.Errorf("ParseErrorClass(%q) = %q, %v", want[i], p, err)
		}
	}
	if _, err := ParseErrorClass("oom"); errs.Field(err) != "errorClass" {
		t.Errorf("ParseErrorClass(oom) = %v", err)
	}
	retry := map[ErrorClass][2]bool{ // [retryOnLost=false, retryOnLost=true]
		ErrorValidation:      {false, false},
		ErrorDispatch:        {true, true},
		ErrorExecutorStart:   {true, true},
		ErrorProcessExit:     {true, true},
		ErrorCancelledByUser: {false, false},
		ErrorTimeout:         {false, false},
		ErrorWorkerLost:      {false, true},
		ErrorInternal:        {false, false},
		"unknown":            {false, false},
	}
	for c, w := range retry {
		if c.Retryable(false) != w[0] || c.Retryable(true) != w[1] {
			t.Errorf("%s.Retryable = %v/%v, want %v", c, c.Retryable(false), c.Retryable(true), w)
		}
	}
}

func intp(v int) *int { return &v }

func fullPayload() Payload {
	return Payload{
		AttemptID: "att_01HZX", AttemptNumber: 3, From: "running", To: "failed",
		ErrorClass: ErrorProcessExit, Reason: "exit_nonzero", ExitCode: intp(2), Signal: "SIGKILL",
		WorkerID: "w-router-1", SessionID: "0b1d6f7e-1f43-4c0e-9d53-6f0d27c1d2aa", SessionGeneration: 4,
		OfferID: "7d3b0c3a-52a5-4f1e-8f8e-0a7c5b9d1e22", LeaseGeneration: 2,
		TriggerID: "trg_1", TriggerRevision: 7, ScheduledForMs: 1_764_400_000_000, Missed: 2,
		ExecutionRevisionID:     "rev_9",
		ExecutionRevisionDigest: "sha256:" + strings.Repeat("ab", 32),
		RerunOfRunID:            "run_0", RetryAtMs: 1_764_400_060_000, Actor: "user:alice@example.org",
		StdoutBytes: 1 << 20, StderrBytes: 12, LogTruncated: true, DurationMs: 1500,
	}
}

func TestPayloadRoundTrip(t *testing.T) {
	for _, p := range []Payload{{}, {Reason: "lease_expired"}, {ExitCode: intp(0)}, fullPayload()} {
		raw, err := p.Encode()
		if err != nil {
			t.Fatalf("Encode(%+v): %v", p, err)
		}
		got, err := DecodePayload(raw)
		if err != nil {
			t.Fatalf("DecodePayload(%s): %v", raw, err)
		}
		if !reflect.DeepEqual(got, p) {
			t.Errorf("round trip changed the payload:\n got %+v\nwant %+v", got, p)
		}
		again, _ := got.Encode()
		if !bytes.Equal(again, raw) {
			t.Errorf("encoding not stable: %s vs %s", again, raw)
		}
	}
}

func TestPayloadRejects(t *testing.T) {
	long := strings.Repeat("a", 129)
	cases := []struct {
		name, json, field, code string
	}{
		{"unknown field (allow-list)", `{"stdout":"hello"}`, "stdout", errs.Invalid},
		{"command smuggled in reason", `{"reason":"rm -rf /"}`, "reason", errs.Invalid},
		{"newline in token", `{"actor":"a\nb"}`, "actor", errs.Invalid},
		{"long token", `{"attemptId":"` + long + `"}`, "attemptId", errs.TooLarge},
		{"nested object", `{"attemptId":{"a":1}}`, "attemptId", errs.Invalid},
		{"duplicate key", `{"reason":"a","reason":"b"}`, "reason", errs.Invalid},
		{"bad error class", `{"errorClass":"oom"}`, "errorClass", errs.Invalid},
		{"unknown from status", `{"from":"paused"}`, "from", errs.Invalid},
		{"unknown to status", `{"to":"Running"}`, "to", errs.Invalid},
		{"exit code range", `{"exitCode":256}`, "exitCode", errs.Invalid},
		{"negative bytes", `{"stdoutBytes":-1}`, "stdoutBytes", errs.Invalid},
		{"attempt number", `{"attemptNumber":17}`, "attemptNumber", errs.Invalid},
		{"not an object", `[]`, "", errs.Invalid},
		{"too large", `{"reason":"` + strings.Repeat(" ", MaxPayloadBytes) + `"}`, "", errs.TooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodePayload([]byte(c.json))
			if errs.Code(err) != c.code || errs.Field(err) != c.field {
				t.Fatalf("DecodePayload = %v (code %q field %q), want code %q field %q",
					err, errs.Code(err), errs.Field(err), c.code, c.field)
			}
		})
	}
	if _, err := (Payload{Reason: "has space"}).Encode(); errs.Field(err) != "reason" {
		t.Errorf("Encode with free text = %v, want a reason error", err)
	}
}

// The largest payload the allow-list permits stays far below the bound.
func TestPayloadWorstCaseFitsBound(t *testing.T) {
	max := strings.Repeat("x", maxPayloadString)
	p := Payload{AttemptID: max, AttemptNumber: 16, From: "dispatching", To: "retry_wait", ErrorClass: ErrorCancelledByUser,
		Reason: max, ExitCode: intp(255), Signal: max, WorkerID: max, SessionID: max,
		SessionGeneration: 1<<63 - 1, OfferID: max, LeaseGeneration: 1<<63 - 1, TriggerID: max,
		TriggerRevision: 1<<63 - 1, ScheduledForMs: 1<<63 - 1, Missed: 1<<63 - 1,
		ExecutionRevisionID: max, ExecutionRevisionDigest: max, RerunOfRunID: max,
		RetryAtMs: 1<<63 - 1, Actor: max, StdoutBytes: 1<<63 - 1, StderrBytes: 1<<63 - 1,
		LogTruncated: true, DurationMs: 1<<63 - 1}
	raw, err := p.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) > MaxPayloadBytes/4 {
		t.Errorf("worst-case payload is %d bytes; the allow-list grew past a quarter of the bound", len(raw))
	}
}

// referenceEncoding is the generic canonical encoding Encode must equal.
func referenceEncoding(t testing.TB, p Payload) []byte {
	t.Helper()
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	out, err := canonjson.Normalize(raw)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPayloadFieldsCoverTheStruct: the direct encoder knows every field of
// Payload, under its JSON key, once.
func TestPayloadFieldsCoverTheStruct(t *testing.T) {
	t.Parallel()
	var tags []string
	rt := reflect.TypeFor[Payload]()
	for i := range rt.NumField() {
		tag := rt.Field(i).Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if opts != "omitempty" {
			t.Errorf("field %s: tag %q, the encoder assumes omitempty", rt.Field(i).Name, tag)
		}
		tags = append(tags, name)
	}
	var keys []string
	for _, f := range payloadFields {
		keys = append(keys, f.key)
	}
	slices.Sort(tags)
	if !slices.Equal(tags, keys) || !slices.IsSorted(keys) {
		t.Fatalf("encoder keys %v\nstruct tags %v", keys, tags)
	}
}

// TestPayloadEncodeIsCanonical: Encode equals canonjson.Normalize of the
// struct's JSON for empty, partial and full payloads.
func TestPayloadEncodeIsCanonical(t *testing.T) {
	t.Parallel()
	zero := 0
	for _, p := range []Payload{
		{},
		{To: "created", TriggerID: "t-1", TriggerRevision: 3, ScheduledForMs: 1764400000000, Missed: 2,
			ExecutionRevisionID: "e", ExecutionRevisionDigest: "sha256:ab"},
		{From: "created", To: "queued", AttemptID: "a", AttemptNumber: 1},
		{To: "failed", ExitCode: &zero, ErrorClass: ErrorProcessExit, LogTruncated: true},
		fullPayload(),
	} {
		got, err := p.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if want := referenceEncoding(t, p); !bytes.Equal(got, want) {
			t.Errorf("Encode(%+v)\n got %s\nwant %s", p, got, want)
		}
	}
}

func BenchmarkPayloadEncode(b *testing.B) {
	p := Payload{To: "created", TriggerID: "0190c3a4-1111-7000-8000-000000000000", TriggerRevision: 3,
		ScheduledForMs: 1764400000000, ExecutionRevisionID: "0190c3a4-1111-7000-8000-000000000000",
		ExecutionRevisionDigest: "sha256:abababababababababababababababababababababababababababababababab"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Encode(); err != nil {
			b.Fatal(err)
		}
	}
}

func FuzzDecodePayload(f *testing.F) {
	raw, _ := fullPayload().Encode()
	f.Add(raw)
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"exitCode":null}`))
	f.Add([]byte(`{"reason":"a","Reason":"b"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := DecodePayload(data)
		if err != nil {
			if errs.Code(err) == errs.Internal {
				t.Fatalf("uncoded error: %v", err)
			}
			return
		}
		enc, err := p.Encode()
		if err != nil {
			t.Fatalf("decoded payload does not encode: %v", err)
		}
		back, err := DecodePayload(enc)
		if err != nil || !reflect.DeepEqual(back, p) {
			t.Fatalf("re-decode differs: %v\n%+v\n%+v", err, back, p)
		}
		if want := referenceEncoding(t, p); !bytes.Equal(enc, want) {
			t.Fatalf("Encode is not canonical:\n got %s\nwant %s", enc, want)
		}
	})
}
