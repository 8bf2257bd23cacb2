package dispatch_test

import (
	"bytes"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/google/uuid"

	"github.com/ql3/ql3/controlplane/postgres/dispatch"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/fence"
	"github.com/ql3/ql3/core/lease"
	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/core/run"
)

// held is an offer a test worker holds, with its token.
type held struct {
	w     *dispatchWorker
	o     *protocol.Offer
	token fence.LeaseToken
}

func (e *dispatchEnv) take(w *dispatchWorker) held {
	e.t.Helper()
	o, req := e.pull(w)
	if o == nil {
		e.t.Fatal("no offer")
	}
	return held{w, o, req.LeaseToken}
}

func (h held) ref() protocol.LeaseRef { return h.o.Lease(h.token) }

func (e *dispatchEnv) ack(h held, phase protocol.AckPhase) (protocol.LeaseControl, error) {
	return e.d.Ack(e.ctx, h.w.p, protocol.Ack{V: protocol.Version, LeaseRef: h.ref(), Phase: phase})
}

func (e *dispatchEnv) mustAck(h held, phase protocol.AckPhase) protocol.LeaseControl {
	e.t.Helper()
	c, err := e.ack(h, phase)
	if err != nil {
		e.t.Fatalf("ack %s: %v", phase, err)
	}
	return c
}

func (e *dispatchEnv) log(h held, stream protocol.LogStream, offset int64, data string, eof bool) (protocol.LogReceipt, error) {
	return e.d.Log(e.ctx, h.w.p, protocol.LogChunk{V: protocol.Version, LeaseRef: h.ref(), Stream: stream,
		Offset: offset, Data: []byte(data), EOF: eof})
}

func exitCode(n int) *int { return &n }

func succeeded(h held, stdout, stderr int64) protocol.Completion {
	return protocol.Completion{V: protocol.Version, LeaseRef: h.ref(), Status: run.AttemptSucceeded, ExitCode: exitCode(0),
		StartedAtMs: 1, FinishedAtMs: 2, StdoutBytes: stdout, StderrBytes: stderr}
}

func (e *dispatchEnv) complete(h held, c protocol.Completion) (protocol.Disposition, error) {
	r, err := e.d.Complete(e.ctx, h.w.p, c)
	return r.Disposition, err
}

// TestQueuedToSucceededEventSequence: the whole remote lifecycle of one Run
// on the runtime role, with the exact event sequence and durable facts.
func TestQueuedToSucceededEventSequence(t *testing.T) {
	t.Parallel()
	e := newDispatchEnv(t, dispatch.DispatchOptions{})
	r := e.queue(e.revision(testSpec()), 0)
	h := e.take(e.worker(linuxCaps(), 1))
	if rs, as := e.status(r.run); rs != "dispatching" || as != "claimed" {
		t.Fatalf("after the claim: run %s attempt %s", rs, as)
	}
	c := e.mustAck(h, protocol.AckStarting)
	if c.Action != protocol.LeaseExtend || c.LeaseExpiresAtMs <= h.o.LeaseExpiresAtMs || c.LeaseVersion != 2 {
		t.Errorf("starting control %+v (offer expiry %d)", c, h.o.LeaseExpiresAtMs)
	}
	// The durable deadline is the starting ACK's database time + the pinned timeout.
	if n := e.scalar(`SELECT count(*) FROM ql3.attempts a JOIN ql3.runs r ON r.run_id = a.run_id
		JOIN ql3.run_events v ON v.run_id = a.run_id AND v.type = 'run.starting'
		WHERE a.attempt_id = $1 AND a.deadline_at_ms = v.created_at_ms + r.timeout_ms`, r.attempt); n != 1 {
		t.Errorf("deadline is not starting time + timeout")
	}
	e.mustAck(h, protocol.AckRunning)
	if rs, as := e.status(r.run); rs != "running" || as != "running" {
		t.Fatalf("after running: run %s attempt %s", rs, as)
	}
	if _, err := e.log(h, protocol.Stdout, 0, "hello\n", true); err != nil {
		t.Fatal(err)
	}
	if d, err := e.complete(h, succeeded(h, 6, 0)); err != nil || d != protocol.Recorded {
		t.Fatalf("complete = %s, %v", d, err)
	}
	want := []string{"run.created", "run.queued", "run.dispatched", "run.starting", "run.running", "run.succeeded"}
	if got := e.events(r.run); !slices.Equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
	// Both acks and the completion took the one-round-trip fenced path
	// (ADR 0031) and wrote the payloads the full path writes.
	if s := e.d.Stats(); s.FencedAcks != 2 || s.FencedCompletions != 1 {
		t.Errorf("fenced acks %d, completions %d; want 2, 1", s.FencedAcks, s.FencedCompletions)
	}
	for typ, want := range map[string]string{
		"run.succeeded": `{"to": "succeeded", "from": "running", "exitCode": 0, "attemptId": "` + r.attempt.String() +
			`", "stdoutBytes": 6, "attemptNumber": 1}`,
		"run.starting": `{"to": "starting", "from": "claimed", "attemptId": "` + r.attempt.String() + `", "attemptNumber": 1}`,
		"run.running":  `{"to": "running", "from": "dispatching", "attemptId": "` + r.attempt.String() + `", "attemptNumber": 1}`,
	} {
		var got string
		if err := e.su.QueryRow(e.ctx, `SELECT payload::text FROM ql3.run_events WHERE run_id = $1 AND type = $2`,
			r.run, typ).Scan(&got); err != nil || got != want {
			t.Errorf("%s payload %s (%v), want %s", typ, got, err, want)
		}
	}
	if rs, as := e.status(r.run); rs != "succeeded" || as != "succeeded" {
		t.Errorf("final: run %s attempt %s", rs, as)
	}
	if n := e.scalar(`SELECT count(*) FROM ql3.run_leases WHERE run_id = $1 AND status = 'completed'`, r.run); n != 1 {
		t.Errorf("lease not completed")
	}
	if n := e.scalar(`SELECT count(*) FROM ql3.runs WHERE run_id = $1 AND started_at_ms IS NOT NULL AND finished_at_ms >= started_at_ms`, r.run); n != 1 {
		t.Errorf("run times not stamped")
	}
	// stdout (with output) closed; the silent stderr has no row (absent = empty).
	if n := e.scalar(`SELECT count(*) FROM ql3.run_log_streams WHERE run_id = $1 AND stream = 'stdout' AND closed AND NOT truncated`, r.run); n != 1 {
		t.Errorf("%d closed, consistent stdout streams, want 1", n)
	}
	if n := e.scalar(`SELECT count(*) FROM ql3.run_log_streams WHERE run_id = $1 AND stream = 'stderr'`, r.run); n != 0 {
		t.Errorf("%d stderr rows for a silent stream, want 0", n)
	}
}

// TestAckReplaysAndOrder: acks are idempotent on exact replay and fenced.
func TestAckReplaysAndOrder(t *testing.T) {
	t.Parallel()
	e := newDispatchEnv(t, dispatch.DispatchOptions{})
	r := e.queue(e.revision(testSpec()), 0)
	w := e.worker(linuxCaps(), 1)
	h := e.take(w)
	if _, err := e.ack(h, protocol.AckRunning); errs.Code(err) != errs.Conflict {
		t.Errorf("running before starting: %v, want conflict", err)
	}
	first := e.mustAck(h, protocol.AckStarting)
	if again := e.mustAck(h, protocol.AckStarting); again != first {
		t.Errorf("starting replay %+v, want %+v", again, first)
	}
	e.mustAck(h, protocol.AckRunning)
	e.mustAck(h, protocol.AckRunning)
	e.mustAck(h, protocol.AckStarting) // a late starting replay after running: still the current control
	if got := e.events(r.run); len(got) != 5 {
		t.Errorf("events %v: replays must not append", got)
	}
	if n := e.d.Stats().FencedAcks; n != 2 {
		t.Errorf("fenced acks %d, want 2 (replays take the full path)", n)
	}
	foreign := e.worker(linuxCaps(), 1)
	stolen := h
	stolen.w = foreign
	if _, err := e.ack(stolen, protocol.AckRunning); errs.Code(err) != errs.Conflict {
		t.Errorf("another worker's ack: %v, want conflict", err)
	}
	wrongToken := h
	wrongToken.token = newToken(t)
	if _, err := e.ack(wrongToken, protocol.AckRunning); errs.Code(err) != errs.Conflict {
		t.Errorf("wrong token: %v, want conflict", err)
	}
	if r, ok := fence.ReasonOf(func() error { _, err := e.ack(wrongToken, protocol.AckRunning); return err }()); !ok || r != fence.ReasonToken {
		t.Errorf("drift reason %q, want token", r)
	}
}

// TestCompletionDispositions: recorded, duplicate on exact replay, conflict
// on a different outcome, late after the lease was taken back.
func TestCompletionDispositions(t *testing.T) {
	t.Parallel()
	e := newDispatchEnv(t, dispatch.DispatchOptions{})
	rev := e.revision(testSpec())
	r := e.queue(rev, 0)
	h := e.take(e.worker(linuxCaps(), 2))
	e.mustAck(h, protocol.AckStarting)
	e.mustAck(h, protocol.AckRunning)
	c := succeeded(h, 0, 0)
	if d, err := e.complete(h, c); err != nil || d != protocol.Recorded {
		t.Fatalf("first = %s, %v", d, err)
	}
	if d, err := e.complete(h, c); err != nil || d != protocol.Duplicate {
		t.Fatalf("replay = %s, %v", d, err)
	}
	other := c
	other.FinishedAtMs = 3
	if _, err := e.complete(h, other); errs.Code(err) != errs.Conflict {
		t.Errorf("different outcome: %v, want conflict", err)
	}
	if n := len(e.events(r.run)); n != 6 {
		t.Errorf("%d events after replays, want 6", n)
	}

	// Late: the sweeper took the lease back (attempt lost) before the
	// completion arrived.
	r2 := e.queue(rev, 0)
	h2 := e.take(h.w)
	e.mustAck(h2, protocol.AckStarting)
	e.mustAck(h2, protocol.AckRunning)
	e.exec(`UPDATE ql3.run_leases SET status = 'released', release_reason = 'lease_expired', ended_at_ms = updated_at_ms WHERE run_id = $1`, r2.run)
	e.exec(`UPDATE ql3.attempts SET status = 'lost', error_class = 'worker_lost', finished_at_ms = updated_at_ms WHERE run_id = $1`, r2.run)
	e.exec(`UPDATE ql3.runs SET status = 'lost' WHERE run_id = $1`, r2.run)
	for range 2 {
		if d, err := e.complete(h2, succeeded(h2, 0, 0)); err != nil || d != protocol.Late {
			t.Fatalf("late = %s, %v", d, err)
		}
	}
	if n := e.scalar(`SELECT count(*) FROM ql3.run_events WHERE run_id = $1 AND type = 'attempt.late_callback'`, r2.run); n != 1 {
		t.Errorf("%d late events, want 1", n)
	}
	if rs, as := e.status(r2.run); rs != "lost" || as != "lost" {
		t.Errorf("late completion changed state: run %s attempt %s", rs, as)
	}
	// A fence that does not match at all is a conflict, not late.
	bad := succeeded(h2, 0, 0)
	bad.LeaseToken = newToken(t)
	if _, err := e.d.Complete(e.ctx, h2.w.p, bad); errs.Code(err) != errs.Conflict {
		t.Errorf("foreign token: %v, want conflict", err)
	}
	// Finished far in the authority's future.
	future := succeeded(h2, 0, 0)
	future.FinishedAtMs = 1 << 50
	if _, err := e.d.Complete(e.ctx, h2.w.p, future); errs.Code(err) != errs.Invalid {
		t.Errorf("finished in the future: %v, want invalid", err)
	}
}

// TestCompletionCancelIntentWins: a cancel or timeout intent decides the
// outcome, whatever the exit code said.
func TestCompletionCancelIntentWins(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ reason, run, attempt, event string }{
		{"user", "cancelled", "cancelled", "run.cancelled"},
		{"timeout", "timed_out", "timed_out", "run.timed_out"},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			t.Parallel()
			e := newDispatchEnv(t, dispatch.DispatchOptions{})
			r := e.queue(e.revision(testSpec()), 0)
			h := e.take(e.worker(linuxCaps(), 1))
			e.mustAck(h, protocol.AckStarting)
			e.mustAck(h, protocol.AckRunning)
			e.exec(`UPDATE ql3.runs SET cancel_requested_at_ms = 1, cancel_reason = $2 WHERE run_id = $1`, r.run, tc.reason)
			if c := e.mustAck(h, protocol.AckRunning); c.Action != protocol.LeaseCancel || c.CancelGraceMs != dispatch.DefaultCancelGraceMs {
				t.Errorf("control %+v, want cancel with the default grace", c)
			}
			if d, err := e.complete(h, succeeded(h, 0, 0)); err != nil || d != protocol.Recorded {
				t.Fatalf("complete = %s, %v", d, err)
			}
			if rs, as := e.status(r.run); rs != tc.run || as != tc.attempt {
				t.Errorf("run %s attempt %s, want %s/%s", rs, as, tc.run, tc.attempt)
			}
			if got := e.events(r.run); got[len(got)-1] != tc.event {
				t.Errorf("events %v, want last %s", got, tc.event)
			}
		})
	}
}

// TestCompletionRetryAndStartFailure: a failed attempt with attempts left
// goes to retry_wait after the policy's backoff; a start failure is a
// failed executor_start completion from starting.
func TestCompletionRetryAndStartFailure(t *testing.T) {
	t.Parallel()
	e := newDispatchEnv(t, dispatch.DispatchOptions{})
	r := e.queue(e.revision(testSpec()), 0) // maxAttempts 2, backoff 1 s
	h := e.take(e.worker(linuxCaps(), 2))
	e.mustAck(h, protocol.AckStarting)
	fail := protocol.Completion{V: protocol.Version, LeaseRef: h.ref(), Status: run.AttemptFailed,
		ErrorClass: run.ErrorExecutorStart, FinishedAtMs: 2}
	if d, err := e.complete(h, fail); err != nil || d != protocol.Recorded {
		t.Fatalf("start failure = %s, %v", d, err)
	}
	if rs, as := e.status(r.run); rs != "retry_wait" || as != "failed" {
		t.Errorf("run %s attempt %s, want retry_wait/failed", rs, as)
	}
	if n := e.scalar(`SELECT count(*) FROM ql3.runs r JOIN ql3.attempts a ON a.run_id = r.run_id
		WHERE r.run_id = $1 AND r.not_before_ms = a.finished_at_ms + 1000 AND r.finished_at_ms IS NULL`, r.run); n != 1 {
		t.Errorf("retry_wait not_before is not finish + backoff")
	}
	if got := e.events(r.run); got[len(got)-1] != "run.retry_scheduled" {
		t.Errorf("events %v", got)
	}
}

// TestLogOverlapGapCap: offsets, overlap keeps the new suffix, a gap is a
// conflict, the per-attempt cap truncates, nothing after eof.
func TestLogOverlapGapCap(t *testing.T) {
	t.Parallel()
	e := newDispatchEnv(t, dispatch.DispatchOptions{AttemptLogCapBytes: 20})
	r := e.queue(e.revision(testSpec()), 0)
	h := e.take(e.worker(linuxCaps(), 1))
	if _, err := e.log(h, protocol.Stdout, 0, "early", false); errs.Code(err) != errs.Conflict {
		t.Errorf("log before starting: %v, want conflict", err)
	}
	e.mustAck(h, protocol.AckStarting)
	steps := []struct {
		stream protocol.LogStream
		offset int64
		data   string
		eof    bool
		next   int64
		closed bool
		code   string
	}{
		{protocol.Stdout, 0, "0123456789", false, 10, false, ""},
		{protocol.Stdout, 5, "56789abcde", false, 15, false, ""}, // overlap: only "abcde" is new
		{protocol.Stdout, 0, "0123", false, 15, false, ""},       // wholly delivered: nothing changes
		{protocol.Stdout, 17, "zz", false, 0, false, errs.Conflict},
		{protocol.Stderr, 0, "EEEEEEEEEE", false, 10, false, ""}, // 5 of 10 fit under the cap of 20
		{protocol.Stdout, 15, "fgh", true, 18, true, ""},         // over the cap: dropped, length advances
		{protocol.Stdout, 18, "x", false, 0, false, errs.Conflict},
		{protocol.Stdout, 15, "fgh", true, 18, true, ""}, // eof replay
	}
	for i, s := range steps {
		rc, err := e.log(h, s.stream, s.offset, s.data, s.eof)
		if s.code != "" {
			if errs.Code(err) != s.code {
				t.Errorf("step %d: %v, want %s", i, err, s.code)
			}
			continue
		}
		if err != nil || rc.NextOffset != s.next || rc.Closed != s.closed {
			t.Errorf("step %d: %+v, %v; want next %d closed %v", i, rc, err, s.next, s.closed)
		}
	}
	var stdout, stderr []byte
	for _, q := range []struct {
		stream string
		into   *[]byte
	}{{"stdout", &stdout}, {"stderr", &stderr}} {
		if err := e.su.QueryRow(e.ctx, `SELECT coalesce(string_agg(data, ''::bytea ORDER BY offset_bytes), ''::bytea)
			FROM ql3.run_log_chunks WHERE run_id = $1 AND stream = $2`, r.run, q.stream).Scan(q.into); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(stdout, []byte("0123456789abcde")) || !bytes.Equal(stderr, []byte("EEEEE")) {
		t.Errorf("stored stdout %q stderr %q", stdout, stderr)
	}
	if n := e.scalar(`SELECT count(*) FROM ql3.run_log_streams WHERE run_id = $1 AND truncated`, r.run); n != 2 {
		t.Errorf("%d truncated streams, want 2", n)
	}
}

// TestHeartbeatControls: extend, cancel and revoke per listed attempt.
func TestHeartbeatControls(t *testing.T) {
	t.Parallel()
	e := newDispatchEnv(t, dispatch.DispatchOptions{})
	rev := e.revision(testSpec())
	rA, rB, rC := e.queue(rev, 0), e.queue(rev, 0), e.queue(rev, 0)
	w := e.worker(linuxCaps(), 4)
	a, b, c := e.take(w), e.take(w), e.take(w)
	for _, h := range []held{a, b, c} {
		e.mustAck(h, protocol.AckStarting)
	}
	e.exec(`UPDATE ql3.runs SET cancel_requested_at_ms = 1, cancel_reason = 'user' WHERE run_id = $1`, rB.run)
	e.exec(`UPDATE ql3.run_leases SET status = 'released', release_reason = 'test', ended_at_ms = updated_at_ms WHERE run_id = $1`, rC.run)
	other := e.worker(linuxCaps(), 1)
	rD := e.queue(rev, 0)
	foreign := e.take(other)
	_ = rD
	before := e.scalar(`SELECT expires_at_ms FROM ql3.run_leases WHERE run_id = $1`, rA.run)
	ids := []string{a.o.AttemptID, b.o.AttemptID, c.o.AttemptID, foreign.o.AttemptID, uuid.Must(uuid.NewV7()).String(), "not-a-uuid"}
	controls, err := e.d.RenewForHeartbeat(e.ctx, w.p, w.session.String(), w.generation, ids)
	if err != nil {
		t.Fatal(err)
	}
	want := []protocol.LeaseAction{protocol.LeaseExtend, protocol.LeaseCancel, protocol.LeaseRevoke, protocol.LeaseRevoke,
		protocol.LeaseRevoke, protocol.LeaseRevoke}
	for i, ctl := range controls {
		if ctl.Action != want[i] || ctl.AttemptID != ids[i] {
			t.Errorf("control %d = %+v, want %s", i, ctl, want[i])
		}
		if err := ctl.Validate(); err != nil {
			t.Errorf("control %d invalid: %v", i, err)
		}
	}
	if len(controls) != len(ids) {
		t.Fatalf("%d controls for %d attempts", len(controls), len(ids))
	}
	if controls[0].LeaseExpiresAtMs <= before || e.scalar(`SELECT expires_at_ms FROM ql3.run_leases WHERE run_id = $1`, rA.run) != controls[0].LeaseExpiresAtMs {
		t.Errorf("lease not extended: %d → %+v", before, controls[0])
	}
	if controls[1].CancelGraceMs != dispatch.DefaultCancelGraceMs {
		t.Errorf("cancel grace %d", controls[1].CancelGraceMs)
	}
	if controls[2].RunID != rC.run.String() {
		t.Errorf("revoke of a lease this session held should describe it: %+v", controls[2])
	}
	for _, i := range []int{3, 4, 5} {
		if controls[i].RunID != "" || controls[i].LeaseGeneration != 0 {
			t.Errorf("revoke %d describes a lease the session never held: %+v", i, controls[i])
		}
	}
	// A replaced session's renewals are all revokes.
	oldSession := w.session
	e.replace(w)
	controls, err = e.d.RenewForHeartbeat(e.ctx, w.p, oldSession.String(), 1, ids[:1])
	if err != nil {
		t.Fatal(err)
	}
	if controls[0].Action != protocol.LeaseRevoke {
		t.Errorf("replaced session: %+v, want revoke", controls[0])
	}
}

// TestCompletionAgainstTheStoredLog: a completion whose byte counts
// disagree with the stored log is still recorded (ADR 0011); the stream is
// marked truncated and the event says log_length_mismatch. A succeeded
// completion before the running ACK is a conflict.
func TestCompletionAgainstTheStoredLog(t *testing.T) {
	t.Parallel()
	e := newDispatchEnv(t, dispatch.DispatchOptions{})
	rev := e.revision(testSpec())
	r := e.queue(rev, 0)
	h := e.take(e.worker(linuxCaps(), 2))
	e.mustAck(h, protocol.AckStarting)
	if _, err := e.complete(h, succeeded(h, 0, 0)); errs.Code(err) != errs.Conflict {
		t.Errorf("succeeded before the running ACK: %v, want conflict", err)
	}
	e.mustAck(h, protocol.AckRunning)
	if _, err := e.log(h, protocol.Stdout, 0, "abcdef", false); err != nil {
		t.Fatal(err)
	}
	if d, err := e.complete(h, succeeded(h, 10, 0)); err != nil || d != protocol.Recorded {
		t.Fatalf("complete = %s, %v", d, err)
	}
	if n := e.scalar(`SELECT count(*) FROM ql3.run_log_streams WHERE run_id = $1 AND stream = 'stdout' AND closed AND truncated
		AND length_bytes = 6`, r.run); n != 1 {
		t.Errorf("stdout not closed as truncated at its stored length")
	}
	if n := e.scalar(`SELECT count(*) FROM ql3.run_log_streams WHERE run_id = $1 AND stream = 'stderr'`, r.run); n != 0 {
		t.Errorf("stderr (0 reported, 0 stored) has a row; absent is empty")
	}
	if n := e.scalar(`SELECT count(*) FROM ql3.run_events WHERE run_id = $1 AND type = 'run.succeeded'
		AND payload->>'reason' = 'log_length_mismatch' AND (payload->>'stdoutBytes')::int = 10`, r.run); n != 1 {
		t.Errorf("event does not record the mismatch")
	}
	if n := e.scalar(`SELECT count(*) FROM ql3.attempts WHERE attempt_id = $1 AND stdout_bytes = 10 AND stderr_bytes = 0`, r.attempt); n != 1 {
		t.Errorf("reported byte counts not kept on the attempt")
	}
	if _, err := e.log(h, protocol.Stdout, 6, "g", false); errs.Code(err) != errs.Conflict {
		t.Errorf("log after the completion: %v, want conflict", err)
	}
	if n := e.d.Stats().FencedCompletions; n != 1 {
		t.Errorf("fenced completions %d, want 1 (the early one takes the full path)", n)
	}
}

// TestCancelIntentStopsAtTheStartBarrier: with a cancel intent the starting
// ACK answers cancel and leaves the Attempt claimed; the worker's cancelled
// completion ends Attempt and Run cancelled without a start.
func TestCancelIntentStopsAtTheStartBarrier(t *testing.T) {
	t.Parallel()
	p := lease.Default()
	p.CancelGraceMs = 2000
	e := newDispatchEnv(t, dispatch.DispatchOptions{Lease: p})
	r := e.queue(e.revision(testSpec()), 0)
	h := e.take(e.worker(linuxCaps(), 1))
	e.exec(`UPDATE ql3.runs SET cancel_requested_at_ms = 1, cancel_reason = 'user' WHERE run_id = $1`, r.run)
	if c := e.mustAck(h, protocol.AckStarting); c.Action != protocol.LeaseCancel || c.CancelGraceMs != 2000 {
		t.Fatalf("starting under a cancel intent: %+v, want cancel with grace 2000", c)
	}
	if rs, as := e.status(r.run); rs != "dispatching" || as != "claimed" {
		t.Fatalf("the barrier was passed: run %s attempt %s", rs, as)
	}
	cancelled := protocol.Completion{V: protocol.Version, LeaseRef: h.ref(), Status: run.AttemptCancelled,
		ErrorClass: run.ErrorCancelledByUser, FinishedAtMs: 2}
	if d, err := e.complete(h, cancelled); err != nil || d != protocol.Recorded {
		t.Fatalf("cancelled start = %s, %v", d, err)
	}
	if rs, as := e.status(r.run); rs != "cancelled" || as != "cancelled" {
		t.Errorf("run %s attempt %s, want cancelled/cancelled", rs, as)
	}
}

// TestHeartbeatPastTheDeadlineCancels: renewal answers cancel once the
// attempt's durable deadline has passed, before any sweeper acts.
func TestHeartbeatPastTheDeadlineCancels(t *testing.T) {
	t.Parallel()
	e := newDispatchEnv(t, dispatch.DispatchOptions{})
	r := e.queue(e.revision(testSpec()), 0)
	w := e.worker(linuxCaps(), 1)
	h := e.take(w)
	e.mustAck(h, protocol.AckStarting)
	e.exec(`UPDATE ql3.attempts SET deadline_at_ms = 1 WHERE attempt_id = $1`, r.attempt)
	controls, err := e.d.RenewForHeartbeat(e.ctx, w.p, w.session.String(), w.generation, []string{h.o.AttemptID})
	if err != nil || len(controls) != 1 || controls[0].Action != protocol.LeaseCancel {
		t.Fatalf("renewal past the deadline: %+v %v, want cancel", controls, err)
	}
}

// TestPipelineWithoutBeginIsOneTransaction: the fenced writes (ADR 0031)
// send their locks and their write as one pgx batch without BEGIN; that
// is safe only because the batch is one implicit transaction (one Sync):
// the advisory locks are held until the write is done, and a failing
// statement rolls back what came before it.
func TestPipelineWithoutBeginIsOneTransaction(t *testing.T) {
	t.Parallel()
	e := newDispatchEnv(t, dispatch.DispatchOptions{})
	b := &pgx.Batch{}
	b.Queue(`SELECT txid_current()`)
	b.Queue(`SELECT pg_advisory_xact_lock(7, 7)`)
	b.Queue(`SELECT txid_current(), (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid())`)
	br := e.su.SendBatch(e.ctx, b)
	var first, second, held int64
	if err := br.QueryRow().Scan(&first); err != nil {
		t.Fatal(err)
	}
	if _, err := br.Exec(); err != nil {
		t.Fatal(err)
	}
	if err := br.QueryRow().Scan(&second, &held); err != nil {
		t.Fatal(err)
	}
	if err := br.Close(); err != nil {
		t.Fatal(err)
	}
	if first != second || held != 1 {
		t.Errorf("batch ran as transactions %d and %d with %d advisory locks held; want one transaction holding 1", first, second, held)
	}
	// A failing statement rolls back the earlier ones of the batch.
	b = &pgx.Batch{}
	b.Queue(`CREATE TEMP TABLE pipeline_probe (x int)`)
	b.Queue(`SELECT 1 / 0`)
	if err := e.su.SendBatch(e.ctx, b).Close(); err == nil {
		t.Fatal("division by zero did not fail the batch")
	}
	if n := e.scalar(`SELECT count(*) FROM pg_class WHERE relname = 'pipeline_probe'`); n != 0 {
		t.Errorf("the statement before the failure was committed")
	}
}
