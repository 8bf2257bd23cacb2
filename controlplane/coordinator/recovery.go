package coordinator

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/ql3/ql3/controlplane/postgres"
)

// RecoveryHandler takes one recovery candidate into the execution-recovery
// path (the lease sweeper's fail-closed handling: lost, retry or fail by
// the Run's policy). An error stops recovery: startup must not go on.
type RecoveryHandler func(ctx context.Context, run postgres.InFlightRun) error

// RecoveryReport says what startup recovery found.
type RecoveryReport struct {
	Scanned  int // non-terminal Runs looked at
	Pristine int // queued exactly as admission left them: left to the dispatcher
	// Candidates are every other non-terminal Run, with the first drift
	// (at most maxReportedCandidates are listed; CandidateCount counts all).
	Candidates     []postgres.InFlightRun
	CandidateCount int
}

const maxReportedCandidates = 1024

// recoveryPage is the keyset page size of the scan.
const recoveryPage = 128

// Recover is startup recovery. It pages through every non-terminal Run:
// a pristine queued Run with its claimed remote_worker Attempt exactly as
// admission wrote it is left alone (it is the dispatcher's, not failed
// work); every other one, including any field drift, a dispatching or later
// state or a newer Attempt, is a recovery candidate: it is reported to the
// diagnostic sink and handed to handler. Nothing here re-admits or
// re-queues a Run, so a candidate can only move by the fenced transitions
// of its owner (fail closed). handler may be nil when no execution-recovery
// path is wired yet; the candidates are then reported only.
func (c *Coordinator) Recover(ctx context.Context, handler RecoveryHandler) (RecoveryReport, error) {
	var rep RecoveryReport
	after := uuid.Nil
	for {
		page, err := postgres.ScanInFlight(ctx, c.db, after, recoveryPage)
		if err != nil {
			return rep, fmt.Errorf("coordinator: recovery scan: %w", err)
		}
		for _, r := range page {
			rep.Scanned++
			if r.Pristine {
				rep.Pristine++
				continue
			}
			rep.CandidateCount++
			if len(rep.Candidates) < maxReportedCandidates {
				rep.Candidates = append(rep.Candidates, r)
			}
			c.metrics.RecoveryCandidates.Add(1)
			c.report(Diagnostic{Kind: "recovery_candidate", RunID: r.RunID.String(), Reason: r.Drift})
			if handler != nil {
				if err := handler(ctx, r); err != nil {
					return rep, fmt.Errorf("coordinator: recovery of run %s (%s): %w", r.RunID, r.Drift, err)
				}
			}
		}
		if len(page) < recoveryPage {
			return rep, nil
		}
		after = page[len(page)-1].RunID
	}
}
