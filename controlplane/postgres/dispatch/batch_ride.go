package dispatch

import (
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/core/run"
)

// The running transition riding the completion (ADR 0058): a running ack
// and a first report of success of the same lease in one statement, which
// writes what the two write one after the other (both events, same
// payloads) with one row version of the Attempt and of the Run.

// sqlRunCompleteFenced: $1..$17 as sqlCompleteFenced, $18 the running
// event's payload without the attempt number.
var sqlRunCompleteFenced = mustReplace(sqlCompleteFenced,
	[2]string{"SELECT l.lease_id, l.project_id, a.attempt\n", "SELECT l.lease_id, l.project_id, a.attempt, l.version AS lease_version, l.expires_at_ms AS lease_expires\n"},
	[2]string{"AND a.status = 'running' AND a.completion_digest IS NULL\n\t\tAND r.status = 'running'",
		"AND a.status = 'starting' AND a.completion_digest IS NULL\n\t\tAND r.status = 'dispatching'"},
	[2]string{"UPDATE ql3.attempts x SET status = 'succeeded',", "UPDATE ql3.attempts x SET status = 'succeeded', started_at_ms = n.ms,"},
	[2]string{"FROM f, n WHERE x.attempt_id = $2::uuid AND x.status = 'running'", "FROM f, n WHERE x.attempt_id = $2::uuid AND x.status = 'starting'"},
	[2]string{"UPDATE ql3.runs x SET status = 'succeeded',", "UPDATE ql3.runs x SET status = 'succeeded', started_at_ms = n.ms,"},
	[2]string{"FROM n, a WHERE x.run_id = $1::uuid AND x.status = 'running'", "FROM n, a WHERE x.run_id = $1::uuid AND x.status = 'dispatching'"},
	[2]string{"SELECT $1::uuid, " + nextSeq + " + 1, f.project_id, a.attempt, 'run.succeeded',",
		"SELECT $1::uuid, " + nextSeq + " + 1, f.project_id, a.attempt, 'run.running',\n\t\t$18::jsonb || jsonb_build_object('attemptNumber', a.attempt), n.ms\n\tFROM f, a, ru, n\n\tUNION ALL\n\t" +
			"SELECT $1::uuid, " + nextSeq + " + 2, f.project_id, a.attempt, 'run.succeeded',"},
	[2]string{"(SELECT count(*) FROM ev)\nFROM f", "(SELECT count(*) FROM ev), f.lease_version, f.lease_expires\nFROM f"},
)

// mustReplace applies each (old, new) exactly once; a statement it cannot
// derive is a programming error caught at package init (and by the tests).
func mustReplace(s string, pairs ...[2]string) string {
	for _, p := range pairs {
		if strings.Count(s, p[0]) != 1 {
			panic("dispatch: cannot derive statement: " + p[0])
		}
		s = strings.Replace(s, p[0], p[1], 1)
	}
	return s
}

// rideStmt builds the one fenced statement of a running ack and the
// completion of the same lease (both already fenced-path eligible: done is
// completeFencedStmt's). nil when ack is not the running ack of that lease.
func (d *Dispatcher) rideStmt(p controlplane.Principal, ack protocol.Ack, c protocol.Completion, done *fencedStmt) (*fencedStmt, error) {
	if ack.Phase != protocol.AckRunning || ack.LeaseRef != c.LeaseRef {
		return nil, nil
	}
	payload, err := run.Payload{AttemptID: done.attemptID.String(), From: string(run.RunDispatching), To: string(run.RunRunning)}.Encode()
	if err != nil {
		return nil, errs.E(errs.Internal, "", "running payload: %v", err)
	}
	ctl := protocol.LeaseControl{V: protocol.Version, RunID: done.runID.String(), AttemptID: done.attemptID.String(),
		LeaseGeneration: ack.LeaseGeneration, Action: protocol.LeaseExtend}
	st := &fencedStmt{runID: done.runID, attemptID: done.attemptID, sessionID: done.sessionID, what: "running ack with completion",
		sql: sqlRunCompleteFenced, args: append(append([]any(nil), done.args...), string(payload))}
	st.scan = func(row pgx.Row) (bool, error) {
		var na, nr, nl, ns, wantStreams, nev int64
		err := row.Scan(&na, &nr, &nl, &ns, &wantStreams, &nev, &ctl.LeaseVersion, &ctl.LeaseExpiresAtMs)
		switch {
		case err == pgx.ErrNoRows:
			return false, nil
		case err != nil:
			return false, err
		case na != 1 || nr != 1 || nl != 1 || ns != wantStreams || nev != 2:
			// Locks are held and the fence held: only a schema drift gets here.
			return false, errs.E(errs.Internal, "", "running with completion wrote attempt %d run %d lease %d streams %d events %d",
				na, nr, nl, ns, nev)
		}
		return true, nil
	}
	st.control = func() protocol.LeaseControl { return ctl }
	return st, nil
}
