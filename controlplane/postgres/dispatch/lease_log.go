package dispatch

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/core/run"
)

// Log chunks (ADR 0011). A stream is one append-only byte sequence per
// attempt; run_log_streams holds its delivered length (the next offset),
// the bytes kept under the per-attempt cap, truncation and eof, so a chunk
// is checked against one row and never against the chunks themselves.

// logStreamState is one run_log_streams row.
type logStreamState struct {
	length, stored    int64
	truncated, closed bool
}

// logPlan is what one chunk changes: the new state and the bytes to store
// at offset (data[keepFrom:keepTo], possibly empty).
type logPlan struct {
	next             logStreamState
	offset           int64
	keepFrom, keepTo int
	changed          bool
}

// planLogAppend decides one chunk against the stream's state. attemptStored
// is what both streams of the attempt keep now; capBytes the per-attempt
// cap. Rules: a chunk past the next offset is a gap (conflict); a chunk
// overlapping what was delivered contributes its new suffix only; bytes
// beyond the cap are dropped and truncation recorded (the stream length
// still advances, so the worker moves on); nothing may follow an eof, and
// an eof must sit at the stream's end.
func planLogAppend(st logStreamState, attemptStored, capBytes, offset int64, data []byte, eof bool) (logPlan, error) {
	end := offset + int64(len(data))
	if offset > st.length {
		return logPlan{}, errs.E(errs.Conflict, "offset", "gap: the stream continues at byte %d, chunk starts at %d", st.length, offset)
	}
	if st.closed {
		if end > st.length || eof && end != st.length {
			return logPlan{}, errs.E(errs.Conflict, "offset", "the stream was closed at byte %d", st.length)
		}
		return logPlan{next: st, offset: st.length}, nil
	}
	if eof && end < st.length {
		return logPlan{}, errs.E(errs.Conflict, "eof", "eof at byte %d, but the stream already has %d bytes", end, st.length)
	}
	p := logPlan{next: st, offset: st.length}
	if end > st.length {
		fresh := end - st.length
		room := max(capBytes-attemptStored, 0)
		keep := min(fresh, room)
		p.keepFrom = int(st.length - offset)
		p.keepTo = p.keepFrom + int(keep)
		p.next.length = end
		p.next.stored += keep
		if keep < fresh {
			p.next.truncated = true
		}
		p.changed = true
	}
	if eof && !p.next.closed {
		p.next.closed = true
		p.changed = true
	}
	return p, nil
}

const sqlLogStreams = `SELECT s.stream, s.length_bytes, s.stored_bytes, s.truncated, s.closed
FROM ql3.attempts a JOIN ql3.run_log_streams s ON s.run_id = a.run_id AND s.attempt = a.attempt
WHERE a.attempt_id = $1::uuid`

const sqlLogAppend = `WITH n AS (SELECT ` + postgres.DBNowMs + ` AS ms),
s AS (
	INSERT INTO ql3.run_log_streams (run_id, attempt, stream, project_id, length_bytes, stored_bytes, truncated,
		closed, created_at_ms, updated_at_ms)
	SELECT $1::uuid, $2::int, $3::text, $4::uuid, $5::bigint, $6::bigint, $7::boolean, $8::boolean, n.ms, n.ms FROM n
	ON CONFLICT (run_id, attempt, stream) DO UPDATE SET length_bytes = EXCLUDED.length_bytes,
		stored_bytes = EXCLUDED.stored_bytes, truncated = EXCLUDED.truncated, closed = EXCLUDED.closed,
		updated_at_ms = greatest(ql3.run_log_streams.created_at_ms, EXCLUDED.updated_at_ms)
	RETURNING 1),
c AS (
	INSERT INTO ql3.run_log_chunks (run_id, attempt, stream, offset_bytes, project_id, data, created_at_ms)
	SELECT $1::uuid, $2::int, $3::text, $9::bigint, $4::uuid, $10::bytea, n.ms FROM n WHERE $11::boolean
	RETURNING 1)
SELECT (SELECT count(*) FROM s), (SELECT count(*) FROM c)`

// scanLogStreams reads the attempt's stream states (absent = empty).
func scanLogStreams(br pgx.BatchResults) (map[string]logStreamState, error) {
	rows, err := br.Query()
	if err != nil {
		return nil, postgres.Errorf(err, "postgres: read log streams")
	}
	defer rows.Close()
	out := map[string]logStreamState{}
	for rows.Next() {
		var name string
		var st logStreamState
		if err := rows.Scan(&name, &st.length, &st.stored, &st.truncated, &st.closed); err != nil {
			return nil, postgres.Errorf(err, "postgres: read log streams")
		}
		out[name] = st
	}
	if err := rows.Err(); err != nil {
		return nil, postgres.Errorf(err, "postgres: read log streams")
	}
	return out, nil
}

// Log implements controlplane.LeasePort.
func (d *Dispatcher) Log(ctx context.Context, p controlplane.Principal, chunk protocol.LogChunk) (protocol.LogReceipt, error) {
	if err := chunk.Validate(); err != nil {
		return protocol.LogReceipt{}, err
	}
	var out protocol.LogReceipt
	err := d.inTx(ctx, func(ctx context.Context, tx *dtx) error {
		l, err := loadLease(ctx, tx, p, chunk.LeaseRef, true)
		if err != nil {
			return err
		}
		// Logs are uploaded before the completion, under a lease the
		// sweeper has not taken back (an expired one still counts until
		// it is: the output is real).
		if l.leaseStatus != "leased" {
			return errs.E(errs.Conflict, "leaseGeneration", "the lease is no longer live")
		}
		if l.attemptStatus != run.AttemptStarting && l.attemptStatus != run.AttemptRunning {
			return errs.E(errs.Conflict, "attemptId", "attempt is %s: no output is taken", l.attemptStatus)
		}
		streams := l.streams
		var stored int64
		for _, st := range streams {
			stored += st.stored
		}
		plan, err := planLogAppend(streams[string(chunk.Stream)], stored, d.opts.AttemptLogCapBytes,
			chunk.Offset, chunk.Data, chunk.EOF)
		if err != nil {
			return err
		}
		if plan.changed {
			data := chunk.Data[plan.keepFrom:plan.keepTo]
			var s, c int64
			if err := tx.CommitWith(ctx, func(r pgx.Row) error { return r.Scan(&s, &c) }, sqlLogAppend, l.runID,
				l.attemptNumber, string(chunk.Stream), l.projectID, plan.next.length, plan.next.stored,
				plan.next.truncated, plan.next.closed, plan.offset, data, len(data) > 0); err != nil {
				return postgres.Errorf(err, "postgres: append log")
			}
		}
		out = protocol.LogReceipt{V: protocol.Version, AttemptID: chunk.AttemptID, Stream: chunk.Stream,
			NextOffset: plan.next.length, Closed: plan.next.closed}
		return nil
	})
	return out, err
}
