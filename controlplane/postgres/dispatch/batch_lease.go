package dispatch

import (
	"context"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/protocol"
)

// Lease batches (ADR 0058): the fenced statements of every item the
// fenced path serves, after all the batch's locks (ADR 0010 order), as one
// pipeline and one implicit transaction; an item that writes nothing then
// takes its own full path. A pipeline error fails the whole batch.

// sqlLockRuns row-locks a batch's Runs in ascending id order.
const sqlLockRuns = `SELECT count(*) FROM (SELECT 1 FROM ql3.runs WHERE run_id = ANY($1::uuid[])
	ORDER BY run_id FOR UPDATE) x`

// LeaseBatch implements controlplane.LeaseBatchPort.
func (d *Dispatcher) LeaseBatch(ctx context.Context, p controlplane.Principal, b protocol.LeaseBatch) (protocol.LeaseBatchAnswer, error) {
	if err := b.Validate(); err != nil {
		return protocol.LeaseBatchAnswer{}, err
	}
	ans := protocol.LeaseBatchAnswer{V: protocol.Version, Acks: make([]protocol.AckOutcome, len(b.Acks)),
		Completions: make([]protocol.CompletionOutcome, len(b.Completions))}
	ackSt, doneSt := make([]*fencedStmt, len(b.Acks)), make([]*fencedStmt, len(b.Completions))
	for i, a := range b.Acks {
		st, err := d.ackFencedStmt(p, a)
		ackSt[i], ans.Acks[i].Error = st, itemError(err)
	}
	for i, c := range b.Completions {
		st, err := d.completeFencedStmt(p, c, completionDigest(c))
		doneSt[i], ans.Completions[i].Error = st, itemError(err)
		for j := range b.Acks { // the running ack of the same lease rides with it (batch_ride.go)
			if st == nil || ackSt[j] == nil || ackSt[j].sql == sqlRunCompleteFenced {
				continue
			}
			ride, err := d.rideStmt(p, b.Acks[j], c, st)
			if err != nil {
				return protocol.LeaseBatchAnswer{}, err
			}
			if ride != nil {
				ackSt[j], doneSt[i] = ride, ride
				break
			}
		}
	}
	var stmts []*fencedStmt
	for _, st := range append(append([]*fencedStmt(nil), ackSt...), doneSt...) {
		if st != nil && !slices.Contains(stmts, st) {
			stmts = append(stmts, st)
		}
	}
	hits, err := d.fencedBatch(ctx, stmts)
	if err != nil {
		return protocol.LeaseBatchAnswer{}, err
	}
	// Item by item, in order: the fenced answer, or the item's own path.
	for i, a := range b.Acks {
		if st := ackSt[i]; st != nil && hits[st] {
			d.stats.fencedAcks.Add(1)
			if st.sql == sqlRunCompleteFenced {
				d.stats.rides.Add(1)
			}
			c := st.control()
			ans.Acks[i].Control = &c
		} else if ans.Acks[i].Error == nil {
			c, err := d.ackFull(ctx, p, a)
			if ans.Acks[i].Error = itemError(err); err == nil {
				ans.Acks[i].Control = &c
			} else if itemAnswer(err) != nil {
				return protocol.LeaseBatchAnswer{}, err
			}
		}
	}
	for i, c := range b.Completions {
		if st := doneSt[i]; st != nil && hits[st] {
			d.stats.fencedCompletions.Add(1)
			ans.Completions[i].Receipt = &protocol.CompletionReceipt{V: protocol.Version, AttemptID: c.AttemptID,
				Disposition: protocol.Recorded}
		} else if ans.Completions[i].Error == nil {
			rc, err := d.completeFull(ctx, p, c, completionDigest(c))
			if ans.Completions[i].Error = itemError(err); err == nil {
				ans.Completions[i].Receipt = &rc
			} else if itemAnswer(err) != nil {
				return protocol.LeaseBatchAnswer{}, err
			}
		}
	}
	d.stats.leaseBatches.Add(1)
	return ans, nil
}

// itemError is an item's refusal for the answer (nil for no error).
func itemError(err error) *protocol.ItemError {
	if err == nil {
		return nil
	}
	return protocol.NewItemError(err)
}

// itemAnswer returns err when it must fail the whole batch (the authority
// could not decide: unavailable, internal, cancelled), nil when it is the
// item's own refusal (or no error).
func itemAnswer(err error) error {
	switch errs.Code(err) {
	case errs.Conflict, errs.Invalid, errs.NotFound, errs.TooLarge:
		return nil
	}
	return err
}

// fencedBatch sends the plan settings, the batch's locks and every fenced
// statement as one pipeline with a single Sync (one implicit transaction,
// as fencedWrite) and reports which statements wrote.
func (d *Dispatcher) fencedBatch(ctx context.Context, stmts []*fencedStmt) (map[*fencedStmt]bool, error) {
	hits := make(map[*fencedStmt]bool, len(stmts))
	if len(stmts) == 0 {
		return hits, nil
	}
	var sessions, attempts []int32
	var runs []uuid.UUID
	for _, st := range stmts {
		sessions = append(sessions, postgres.LockObjectKey(st.sessionID))
		attempts = append(attempts, postgres.LockObjectKey(st.attemptID))
		runs = append(runs, st.runID)
	}
	slices.Sort(sessions)
	sessions = slices.Compact(sessions)
	slices.Sort(attempts)
	attempts = slices.Compact(attempts)
	err := d.inTx(ctx, func(ctx context.Context, tx *dtx) error {
		clear(hits)
		b := &pgx.Batch{}
		b.Queue(postgres.PlanSettingsSQL)
		for _, k := range sessions {
			b.Queue(postgres.SQLLockShared, postgres.LockClassSession, k)
		}
		b.Queue(postgres.SQLLockAttempts, postgres.LockClassAttempt, attempts)
		b.Queue(sqlLockRuns, runs)
		for _, st := range stmts {
			b.Queue(st.sql, st.args...)
		}
		br := tx.SendBatch(ctx, b)
		for range 3 + len(sessions) {
			if _, err := br.Exec(); err != nil {
				_ = br.Close()
				return postgres.Errorf(err, "postgres: lease batch locks")
			}
		}
		for _, st := range stmts {
			hit, err := st.scan(br.QueryRow())
			if err != nil {
				_ = br.Close()
				return postgres.Errorf(err, "postgres: lease batch %s", st.what)
			}
			hits[st] = hit
		}
		// Close reads through the Sync: the implicit transaction's commit.
		if err := br.Close(); err != nil {
			return postgres.Errorf(err, "postgres: lease batch")
		}
		return nil
	})
	return hits, err
}
