package postgres

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/core/errs"
)

// MaxRecoveryPage bounds one page of ScanInFlight.
const MaxRecoveryPage = 256

// InFlightRun is a Run that is not terminal, classified for startup
// recovery.
type InFlightRun struct {
	RunID     uuid.UUID
	ProjectID uuid.UUID
	Status    string
	// Pristine: the Run is queued exactly as admission left it and its
	// latest Attempt is the claimed remote_worker Attempt admission wrote,
	// with no worker, session, offer, lease, start, result or error. Such a
	// Run still belongs to the dispatcher; recovery leaves it alone.
	Pristine bool
	// Drift names the first way a non-pristine Run differs from that shape
	// (a low-cardinality reason), "" when Pristine.
	Drift string
}

// scanInFlightSQL is the recovery source: every non-terminal Run after a
// keyset cursor, with its latest Attempt, classified. The CASE lists the
// pristine shape field by field; the first mismatch is the drift reason.
const scanInFlightSQL = `SELECT r.run_id, r.project_id, r.status,
	CASE
		WHEN r.status <> 'queued' THEN 'run_status_' || r.status
		WHEN r.cancel_requested_at_ms IS NOT NULL THEN 'cancel_requested'
		WHEN r.queued_at_ms IS NULL THEN 'run_not_queued_at'
		WHEN r.finished_at_ms IS NOT NULL OR r.error_class IS NOT NULL OR r.error_message IS NOT NULL THEN 'run_result'
		WHEN a.attempt_id IS NULL THEN 'no_attempt'
		WHEN a.attempt <> r.attempt_count THEN 'attempt_newer_than_run'
		WHEN a.status <> 'claimed' THEN 'attempt_status_' || a.status
		WHEN a.executor <> 'remote_worker' THEN 'attempt_executor'
		WHEN a.version <> 1 THEN 'attempt_version'
		WHEN a.worker_id IS NOT NULL OR a.session_id IS NOT NULL OR a.session_generation IS NOT NULL THEN 'attempt_worker'
		WHEN a.offer_id IS NOT NULL THEN 'attempt_offer'
		WHEN a.started_at_ms IS NOT NULL THEN 'attempt_started'
		WHEN a.exit_code IS NOT NULL OR a.error_class IS NOT NULL OR a.error_message IS NOT NULL
			OR a.finished_at_ms IS NOT NULL THEN 'attempt_result'
		WHEN EXISTS (SELECT 1 FROM ql3.run_leases l WHERE l.attempt_id = a.attempt_id) THEN 'attempt_lease'
		ELSE ''
	END
FROM ql3.runs r
LEFT JOIN LATERAL (
	SELECT * FROM ql3.attempts x WHERE x.run_id = r.run_id ORDER BY x.attempt DESC LIMIT 1
) a ON true
WHERE r.status IN ('created', 'queued', 'dispatching', 'running', 'retry_wait', 'lost')
  AND r.run_id > $1::uuid
ORDER BY r.run_id
LIMIT $2::int`

// ScanInFlight returns up to limit non-terminal Runs with run_id > after
// (uuid.Nil for the first page), classified. A short page is the last.
func ScanInFlight(ctx context.Context, db DB, after uuid.UUID, limit int) ([]InFlightRun, error) {
	if limit < 1 || limit > MaxRecoveryPage {
		return nil, errs.Invalidf("limit", "must be 1..%d, got %d", MaxRecoveryPage, limit)
	}
	rows, err := db.Query(ctx, scanInFlightSQL, after, limit)
	if err != nil {
		return nil, Translate(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (InFlightRun, error) {
		var f InFlightRun
		err := r.Scan(&f.RunID, &f.ProjectID, &f.Status, &f.Drift)
		f.Pristine = err == nil && f.Drift == ""
		return f, err
	})
	if err != nil {
		return nil, translateDriver(err)
	}
	return out, nil
}
