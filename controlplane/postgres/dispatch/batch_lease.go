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

// Lease batches (ADR 0058): the acks and completions of one worker request
// as one pipeline and one implicit transaction. Every item that the fenced
// path serves (ADR 0031: a first starting or running ack, a first report of
// success) is one fenced statement of the pipeline, after every lock the
// batch needs, taken in the ADR 0010 order: the sessions' shared locks
// (ascending key), the attempts' exclusive locks (ascending key), the Runs'
// row locks (ascending id); then the statements in item order (acks, then
// completions), so a running ack and the completion of the same attempt
// commit together. Each statement re-states its own item's whole fence, as
// alone: an item whose fence does not hold writes nothing, and — after the
// batch committed — takes its own full path (Ack, Complete), which answers
// its replay, cancel, duplicate, late or conflict exactly as its own route
// would. An error of the pipeline rolls the whole batch back and fails the
// request; the worker repeats it (every item is idempotent).

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
	ackSt := make([]*fencedStmt, len(b.Acks))
	doneSt := make([]*fencedStmt, len(b.Completions))
	var stmts []*fencedStmt
	for i, a := range b.Acks {
		st, err := d.ackFencedStmt(p, a)
		if err != nil {
			ans.Acks[i].Error = protocol.NewItemError(err)
			continue
		}
		ackSt[i] = st
		if st != nil {
			stmts = append(stmts, st)
		}
	}
	for i, c := range b.Completions {
		st, err := d.completeFencedStmt(p, c, completionDigest(c))
		if err != nil {
			ans.Completions[i].Error = protocol.NewItemError(err)
			continue
		}
		if st != nil {
			// The running ack of the same lease rides with it: one
			// statement for both (batch_ride.go).
			for j, a := range b.Acks {
				if ackSt[j] == nil {
					continue
				}
				ride, err := d.rideStmt(p, a, c, st)
				if err != nil {
					return protocol.LeaseBatchAnswer{}, err
				}
				if ride != nil {
					stmts = slices.DeleteFunc(stmts, func(x *fencedStmt) bool { return x == ackSt[j] })
					ackSt[j], st = ride, ride
					break
				}
			}
		}
		doneSt[i] = st
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
		if ans.Acks[i].Error != nil {
			continue
		}
		if st := ackSt[i]; st != nil && hits[st] {
			d.stats.fencedAcks.Add(1)
			if st.sql == sqlRunCompleteFenced {
				d.stats.rides.Add(1)
			}
			c := st.control()
			ans.Acks[i].Control = &c
			continue
		}
		c, err := d.ackFull(ctx, p, a)
		if err := itemAnswer(err); err != nil {
			return protocol.LeaseBatchAnswer{}, err
		}
		if err != nil {
			ans.Acks[i].Error = protocol.NewItemError(err)
			continue
		}
		ans.Acks[i].Control = &c
	}
	for i, c := range b.Completions {
		if ans.Completions[i].Error != nil {
			continue
		}
		if st := doneSt[i]; st != nil && hits[st] {
			d.stats.fencedCompletions.Add(1)
			ans.Completions[i].Receipt = &protocol.CompletionReceipt{V: protocol.Version, AttemptID: c.AttemptID,
				Disposition: protocol.Recorded}
			continue
		}
		rc, err := d.completeFull(ctx, p, c, completionDigest(c))
		if err := itemAnswer(err); err != nil {
			return protocol.LeaseBatchAnswer{}, err
		}
		if err != nil {
			ans.Completions[i].Error = protocol.NewItemError(err)
			continue
		}
		ans.Completions[i].Receipt = &rc
	}
	d.stats.leaseBatches.Add(1)
	return ans, nil
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
