package protocol

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/fence"
	"github.com/ql3/ql3/core/run"
)

// body is the common shape of every wire type, for table tests.
type body interface {
	Encode() ([]byte, error)
	Validate() error
}

type codec struct {
	name    string
	example func(t testing.TB) body
	decode  func([]byte) (body, error)
	limit   int
}

func wrap[T body](f func([]byte) (T, error)) func([]byte) (body, error) {
	return func(b []byte) (body, error) {
		v, err := f(b)
		return v, err
	}
}

func fixed[T body](f func() T) func(testing.TB) body { return func(testing.TB) body { return f() } }

func codecs() []codec {
	return []codec{
		{"SessionOpen", fixed(sessionOpen), wrap(DecodeSessionOpen), MaxSessionOpenSize},
		{"SessionHeartbeat", func(t testing.TB) body { return heartbeat(t) }, wrap(DecodeSessionHeartbeat), MaxHeartbeatBytes},
		{"SessionTransition", fixed(transition), wrap(DecodeSessionTransition), DefaultBodyBytes},
		{"SessionState", fixed(sessionState), wrap(DecodeSessionState), MaxSessionState},
		{"OfferPullRequest", fixed(pull), wrap(DecodeOfferPullRequest), DefaultBodyBytes},
		{"Offer", func(t testing.TB) body { return offer(t) }, wrap(DecodeOffer), MaxOfferBodyBytes},
		{"Ack", fixed(ack), wrap(DecodeAck), DefaultBodyBytes},
		{"LeaseControl", fixed(control), wrap(DecodeLeaseControl), DefaultBodyBytes},
		{"LogChunk", fixed(logChunk), wrap(DecodeLogChunk), HardBodyBytes},
		{"LogReceipt", fixed(logReceipt), wrap(DecodeLogReceipt), DefaultBodyBytes},
		{"Completion", fixed(completion), wrap(DecodeCompletion), DefaultBodyBytes},
		{"CompletionReceipt", fixed(receipt), wrap(DecodeCompletionReceipt), DefaultBodyBytes},
	}
}

func TestRoundTrip(t *testing.T) {
	for _, c := range codecs() {
		t.Run(c.name, func(t *testing.T) {
			want := c.example(t)
			if err := want.Validate(); err != nil {
				t.Fatalf("example invalid: %v", err)
			}
			raw, err := want.Encode()
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			got, err := c.decode(raw)
			if err != nil {
				t.Fatalf("decode %s: %v", raw, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("round trip differs:\n got %#v\nwant %#v", got, want)
			}
			again, err := got.Encode()
			if err != nil || string(again) != string(raw) {
				t.Fatalf("re-encoding differs (%v):\n%s\n%s", err, again, raw)
			}
			if len(raw) > c.limit {
				t.Fatalf("example is %d bytes, over its own limit %d", len(raw), c.limit)
			}
		})
	}
}

// Every decoder refuses a missing or foreign version, unknown and
// duplicate keys, trailing data, non-objects and bodies over its limit,
// with coded errors naming the field.
func TestCommonRejections(t *testing.T) {
	for _, c := range codecs() {
		t.Run(c.name, func(t *testing.T) {
			raw, err := c.example(t).Encode()
			if err != nil {
				t.Fatal(err)
			}
			obj := string(raw)
			cases := []struct {
				name, body, field, code string
			}{
				{"version 2", strings.Replace(obj, `"v":1`, `"v":2`, 1), "v", errs.Invalid},
				{"no version", strings.Replace(obj, `{"v":1,`, `{`, 1), "v", errs.Invalid},
				{"version as string", strings.Replace(obj, `"v":1`, `"v":"1"`, 1), "v", errs.Invalid},
				{"unknown key", strings.Replace(obj, `{"v":1,`, `{"v":1,"workerIdentity":"x",`, 1), "workerIdentity", errs.Invalid},
				{"duplicate key", strings.Replace(obj, `{"v":1,`, `{"v":1,"V":1,`, 1), "V", errs.Invalid},
				{"trailing data", obj + `{}`, "", errs.Invalid},
				{"array", `[` + obj + `]`, "", errs.Invalid},
				{"empty", ``, "", errs.Invalid},
				{"too large", obj[:len(obj)-1] + strings.Repeat(" ", c.limit) + `}`, "", errs.TooLarge},
			}
			for _, k := range cases {
				_, err := c.decode([]byte(k.body))
				if errs.Code(err) != k.code || errs.Field(err) != k.field {
					t.Errorf("%s: err = %v (code %q field %q), want code %q field %q",
						k.name, err, errs.Code(err), errs.Field(err), k.code, k.field)
				}
			}
		})
	}
}

// mutate decodes the example to a generic map, applies f and re-encodes.
func mutate(t *testing.T, b body, f func(m map[string]any)) []byte {
	t.Helper()
	raw, err := b.Encode()
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	f(m)
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

type fieldCase struct {
	name  string
	f     func(m map[string]any)
	field string
}

func set(k string, v any) func(map[string]any) { return func(m map[string]any) { m[k] = v } }
func del(k string) func(map[string]any)        { return func(m map[string]any) { delete(m, k) } }

func checkFieldCases(t *testing.T, example body, decode func([]byte) (body, error), cases []fieldCase) {
	t.Helper()
	for _, c := range cases {
		data := mutate(t, example, c.f)
		_, err := decode(data)
		if err == nil {
			t.Errorf("%s: accepted %s", c.name, data)
			continue
		}
		if errs.Field(err) != c.field || errs.Code(err) == errs.Internal {
			t.Errorf("%s: err = %v (code %q field %q), want field %q", c.name, err, errs.Code(err), errs.Field(err), c.field)
		}
	}
}

var leaseRefCases = []fieldCase{
	{"no session", del("sessionId"), "sessionId"},
	{"session with space", set("sessionId", "a b"), "sessionId"},
	{"generation 0", set("generation", 0), "generation"},
	{"generation as string", set("generation", "3"), "generation"},
	{"lease generation fraction", set("leaseGeneration", 1.5), "leaseGeneration"},
	{"no run", del("runId"), "runId"},
	{"long attempt id", set("attemptId", strings.Repeat("a", MaxIDLen+1)), "attemptId"},
	{"offer id not uuid", set("offerId", "offer-1"), "offerId"},
	{"offer id upper case", set("offerId", strings.ToUpper(offerID)), "offerId"},
	{"lease generation 0", set("leaseGeneration", 0), "leaseGeneration"},
	{"short token", set("leaseToken", string(token)[:40]), "leaseToken"},
	{"no token", del("leaseToken"), "leaseToken"},
}

func TestSessionOpenRejections(t *testing.T) {
	checkFieldCases(t, sessionOpen(), wrap(DecodeSessionOpen), []fieldCase{
		{"worker id in body", set("workerId", "w-1"), "workerId"},
		{"no agent version", del("agentVersion"), "agentVersion"},
		{"newline in agent version", set("agentVersion", "a\nb"), "agentVersion"},
		{"whole credential", set("credentialId", "ql3w_cred-7_s3cret"), "credentialId"},
		{"capacity 0", set("capacity", 0), "capacity"},
		{"capacity 65", set("capacity", MaxCapacity+1), "capacity"},
		{"capacity fraction", set("capacity", 1.5), "capacity"},
		{"no capabilities", del("capabilities"), "capabilities"},
		{"null capabilities", set("capabilities", nil), "capabilities"},
		{"capabilities without os", func(m map[string]any) { delete(m["capabilities"].(map[string]any), "os") }, "capabilities.os"},
		{"capabilities unknown key", func(m map[string]any) { m["capabilities"].(map[string]any)["gpu"] = true }, "capabilities.gpu"},
	})
}

func TestSessionHeartbeatRejections(t *testing.T) {
	ids := make([]any, MaxCapacity+1)
	for i := range ids {
		ids[i] = "att_" + strings.Repeat("x", i%10) + string(rune('a'+i%26)) + string(rune('a'+i/26))
	}
	checkFieldCases(t, heartbeat(t), wrap(DecodeSessionHeartbeat), []fieldCase{
		{"bad digest", set("capabilitiesDigest", "sha256:zz"), "capabilitiesDigest"},
		{"upper-case digest", set("capabilitiesDigest", "sha256:"+strings.Repeat("AB", 32)), "capabilitiesDigest"},
		{"no digest", del("capabilitiesDigest"), "capabilitiesDigest"},
		{"generation negative", set("generation", -1), "generation"},
		{"duplicate attempt", set("runningAttemptIds", []any{"a", "a"}), "runningAttemptIds[1]"},
		{"bad attempt id", set("runningAttemptIds", []any{"a", "b/c"}), "runningAttemptIds[1]"},
		{"too many attempts", set("runningAttemptIds", ids), "runningAttemptIds"},
		{"credential missing", del("credentialId"), "credentialId"},
	})
}

func TestSessionTransitionRejections(t *testing.T) {
	checkFieldCases(t, transition(), wrap(DecodeSessionTransition), []fieldCase{
		{"to online", set("to", "online"), "to"},
		{"to expired", set("to", "expired"), "to"},
		{"no session", del("sessionId"), "sessionId"},
	})
}

func TestSessionStateRejections(t *testing.T) {
	checkFieldCases(t, sessionState(), wrap(DecodeSessionState), []fieldCase{
		{"status expired", set("status", "expired"), "status"},
		{"heartbeat too fast", set("heartbeatIntervalMs", 4_999), "heartbeatIntervalMs"},
		{"heartbeat too slow", set("heartbeatIntervalMs", 300_001), "heartbeatIntervalMs"},
		{"no lease expiry", del("leaseExpiresAtMs"), "leaseExpiresAtMs"},
		{"control without version", func(m map[string]any) { delete(m["controls"].([]any)[1].(map[string]any), "v") }, "controls[1].v"},
		{"control bad action", func(m map[string]any) { m["controls"].([]any)[0].(map[string]any)["action"] = "pause" }, "controls[0].action"},
		{"duplicate control", func(m map[string]any) { c := m["controls"].([]any); c[1] = c[0] }, "controls[1].attemptId"},
	})
}

func TestOfferPullRequestRejections(t *testing.T) {
	checkFieldCases(t, pull(), wrap(DecodeOfferPullRequest), []fieldCase{
		{"nil offer id", set("offerId", "00000000-0000-0000-0000-000000000000"), "offerId"},
		{"token with padding", set("leaseToken", string(token)+"="), "leaseToken"},
		{"zero token", set("leaseToken", strings.Repeat("A", 43)), "leaseToken"},
		{"wait too long", set("waitMs", MaxWaitMs+1), "waitMs"},
		{"wait negative", set("waitMs", -1), "waitMs"},
		{"generation missing", del("generation"), "generation"},
	})
}

func TestAckAndControlRejections(t *testing.T) {
	checkFieldCases(t, ack(), wrap(DecodeAck), append([]fieldCase{
		{"phase done", set("phase", "succeeded"), "phase"},
		{"no phase", del("phase"), "phase"},
	}, leaseRefCases...))
	checkFieldCases(t, control(), wrap(DecodeLeaseControl), []fieldCase{
		{"grace with extend", set("cancelGraceMs", 1000), "cancelGraceMs"},
		{"no action", del("action"), "action"},
		{"version 0", set("leaseVersion", 0), "leaseVersion"},
		{"no expiry", del("leaseExpiresAtMs"), "leaseExpiresAtMs"},
	})
	cancel := control()
	cancel.Action, cancel.CancelGraceMs = LeaseCancel, MaxCancelGraceMs+1
	if _, err := cancel.Encode(); errs.Field(err) != "cancelGraceMs" {
		t.Errorf("cancel grace over the limit: %v", err)
	}
}

func TestLogChunk(t *testing.T) {
	checkFieldCases(t, logChunk(), wrap(DecodeLogChunk), append([]fieldCase{
		{"stream stdin", set("stream", "stdin"), "stream"},
		{"negative offset", set("offset", -1), "offset"},
		{"url base64", set("data", "-_8="), "data"},
		{"unpadded base64", set("data", "AAE"), "data"},
		{"non-canonical base64", set("data", "AAF="), "data"},
		{"empty without eof", del("data"), "data"},
		{"past the log limit", set("offset", MaxLogBytes-1), "data"},
	}, leaseRefCases...))
	eofOnly := logChunk()
	eofOnly.Data, eofOnly.EOF = nil, true
	raw, err := eofOnly.Encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeLogChunk(raw)
	if err != nil || !got.EOF || got.End() != 4096 {
		t.Fatalf("eof-only chunk: %+v %v", got, err)
	}
	full := logChunk()
	full.Data = make([]byte, MaxLogChunkBytes)
	for i := range full.Data {
		full.Data[i] = byte(i * 7)
	}
	raw, err = full.Encode()
	if err != nil {
		t.Fatalf("a full chunk must fit the 64 KiB body: %v", err)
	}
	if len(raw) > HardBodyBytes {
		t.Fatalf("full chunk body is %d bytes", len(raw))
	}
	if got, err := DecodeLogChunk(raw); err != nil || got.End() != 4096+MaxLogChunkBytes {
		t.Fatalf("full chunk: %v", err)
	}
	full.Data = append(full.Data, 0)
	if _, err := full.Encode(); errs.Code(err) != errs.TooLarge || errs.Field(err) != "data" {
		t.Fatalf("oversized chunk: %v", err)
	}
}

func TestLogReceiptRejections(t *testing.T) {
	checkFieldCases(t, logReceipt(), wrap(DecodeLogReceipt), []fieldCase{
		{"negative offset", set("nextOffset", -1), "nextOffset"},
		{"bad stream", set("stream", "both"), "stream"},
		{"no attempt", del("attemptId"), "attemptId"},
	})
}

func TestCompletionOutcomes(t *testing.T) {
	cases := []struct {
		name   string
		status run.AttemptStatus
		class  run.ErrorClass
		exit   *int
		signal string
		field  string // "" = valid
	}{
		{"succeeded", run.AttemptSucceeded, "", intp(0), "", ""},
		{"succeeded with class", run.AttemptSucceeded, run.ErrorInternal, intp(0), "", "errorClass"},
		{"succeeded exit 1", run.AttemptSucceeded, "", intp(1), "", "exitCode"},
		{"succeeded no exit", run.AttemptSucceeded, "", nil, "", "exitCode"},
		{"succeeded signal", run.AttemptSucceeded, "", intp(0), "SIGTERM", "exitCode"},
		{"exit 2", run.AttemptFailed, run.ErrorProcessExit, intp(2), "", ""},
		{"killed", run.AttemptFailed, run.ErrorProcessExit, nil, "SIGSEGV", ""},
		{"exit 0 failed", run.AttemptFailed, run.ErrorProcessExit, intp(0), "", "exitCode"},
		{"exit and signal", run.AttemptFailed, run.ErrorProcessExit, intp(1), "SIGKILL", "exitCode"},
		{"start failure", run.AttemptFailed, run.ErrorExecutorStart, nil, "", ""},
		{"start failure with exit", run.AttemptFailed, run.ErrorExecutorStart, intp(127), "", "exitCode"},
		{"internal", run.AttemptFailed, run.ErrorInternal, nil, "", ""},
		{"failed timeout class", run.AttemptFailed, run.ErrorTimeout, nil, "SIGKILL", "errorClass"},
		{"failed worker_lost", run.AttemptFailed, run.ErrorWorkerLost, nil, "", "errorClass"},
		{"timed out", run.AttemptTimedOut, run.ErrorTimeout, nil, "SIGKILL", ""},
		{"timed out wrong class", run.AttemptTimedOut, run.ErrorProcessExit, intp(1), "", "errorClass"},
		{"cancelled", run.AttemptCancelled, run.ErrorCancelledByUser, intp(143), "", ""},
		{"cancelled no class", run.AttemptCancelled, "", nil, "", "errorClass"},
		{"lost", run.AttemptLost, run.ErrorWorkerLost, nil, "", "status"},
		{"running", run.AttemptRunning, "", nil, "", "status"},
		{"exit 256", run.AttemptFailed, run.ErrorProcessExit, intp(256), "", "exitCode"},
		{"exit -1", run.AttemptFailed, run.ErrorProcessExit, intp(-1), "", "exitCode"},
		{"signal lower", run.AttemptFailed, run.ErrorProcessExit, nil, "sigkill", "signal"},
		{"signal bare", run.AttemptFailed, run.ErrorProcessExit, nil, "SIG", "signal"},
		{"signal number", run.AttemptFailed, run.ErrorProcessExit, nil, "9", "signal"},
	}
	for _, c := range cases {
		x := completion()
		x.Status, x.ErrorClass, x.ExitCode, x.Signal = c.status, c.class, c.exit, c.signal
		raw, err := json.Marshal(x)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeCompletion(raw)
		if c.field == "" {
			if err != nil || !reflect.DeepEqual(got, x) {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if errs.Field(err) != c.field {
			t.Errorf("%s: err = %v, want field %q", c.name, err, c.field)
		}
	}
	checkFieldCases(t, completion(), wrap(DecodeCompletion), append([]fieldCase{
		{"no finish", del("finishedAtMs"), "finishedAtMs"},
		{"started after finished", set("startedAtMs", 1_764_400_003_000), "startedAtMs"},
		{"negative stdout", set("stdoutBytes", -1), "stdoutBytes"},
		{"stderr over limit", set("stderrBytes", MaxLogBytes+1), "stderrBytes"},
		{"bogus class", set("errorClass", "oom"), "errorClass"},
	}, leaseRefCases...))
}

func TestCompletionReceiptRejections(t *testing.T) {
	checkFieldCases(t, receipt(), wrap(DecodeCompletionReceipt), []fieldCase{
		{"bad disposition", set("disposition", "ok"), "disposition"},
		{"no attempt", del("attemptId"), "attemptId"},
	})
	for _, d := range []Disposition{Recorded, Duplicate, Late} {
		r := receipt()
		r.Disposition = d
		if err := r.Validate(); err != nil {
			t.Errorf("%s: %v", d, err)
		}
	}
}

// The protocol's vocabulary is core/run's: every error class a completion
// can carry and every status it can report is a known one.
func TestCompletionVocabularyMatchesRun(t *testing.T) {
	allowed := 0
	for _, s := range run.AttemptStatuses() {
		for _, c := range append(run.ErrorClasses(), "") {
			x := completion()
			x.Status, x.ErrorClass, x.ExitCode, x.Signal = s, c, nil, "SIGKILL"
			if s == run.AttemptSucceeded {
				x.ExitCode, x.Signal = intp(0), ""
			}
			if x.Validate() == nil {
				allowed++
				if !s.Terminal() {
					t.Errorf("completion with non-terminal status %s accepted", s)
				}
			}
		}
	}
	if allowed != 5 { // succeeded/"", failed/process_exit, failed/internal, timed_out/timeout, cancelled/cancelled_by_user
		t.Errorf("%d status/class pairs accepted with a signal, want 5", allowed)
	}
}

func TestLeaseRefFenceMatchesOffer(t *testing.T) {
	o := offer(t)
	ref := o.Lease(token)
	if err := ref.Validate(); err != nil {
		t.Fatal(err)
	}
	mine := ref.Fence(o.WorkerID, o.LeaseVersion, o.LeaseExpiresAtMs)
	if err := mine.Holds(o.Fence(), o.LeaseExpiresAtMs-1); err != nil {
		t.Fatalf("a worker's own lease ref does not hold against its offer: %v", err)
	}
	other := ref
	other.LeaseToken = "AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA"
	r, _ := fence.ReasonOf(other.Fence(o.WorkerID, o.LeaseVersion, o.LeaseExpiresAtMs).Holds(o.Fence(), 0))
	if r != fence.ReasonToken {
		t.Fatalf("foreign token: reason %q, want token", r)
	}
	r, _ = fence.ReasonOf(ref.Fence("w-other", o.LeaseVersion, o.LeaseExpiresAtMs).Holds(o.Fence(), 0))
	if r != fence.ReasonWorker {
		t.Fatalf("foreign worker: reason %q, want worker", r)
	}
}

// No encoded body ever carries the plaintext token back to the worker,
// and no error message echoes it.
func TestTokenNeverEchoed(t *testing.T) {
	for _, b := range []body{offer(t), sessionState(), control(), logReceipt(), receipt()} {
		raw, err := b.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(raw), string(token)) {
			t.Errorf("%T echoes the lease token", b)
		}
	}
	p := pull()
	p.LeaseToken = token + "*"
	if err := p.Validate(); err == nil || strings.Contains(err.Error(), string(token)) {
		t.Errorf("token error echoes the token or passes: %v", err)
	}
}
