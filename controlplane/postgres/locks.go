package postgres

import (
	"context"
	"encoding/binary"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Cross-role serialisation (ADR 0010). The ingress role cannot row-lock
// runs, attempts or leases, and the runtime role cannot row-lock worker
// sessions (FOR UPDATE needs UPDATE privilege), so transactions of the two
// roles that must not interleave serialise on transaction-scoped advisory
// locks, always taken in this one order and before any row lock:
//
//  1. worker   (LockClassWorker)   session open/replacement
//  2. session  (LockClassSession)  transition, replacement, claims, acks, renewal
//  3. attempts (LockClassAttempt)  ascending by key; ack, log, completion, sweep
//
// A transaction may skip a class but never takes a class after a later one.
// The database clock is read after the locks.
//
// Keys are pg_advisory_xact_lock(int4 class, int4 object): the object key
// is the last four bytes of the UUID (random bits in a UUIDv7). Two ids
// with the same key merely serialise with each other. The two-key space
// is disjoint from the migration runner's one-bigint lock.
const (
	LockClassWorker  int32 = 0x716c3301 // "ql3" 1
	LockClassSession int32 = 0x716c3302
	LockClassAttempt int32 = 0x716c3303
)

// LockObjectKey is the second advisory key of id.
func LockObjectKey(id uuid.UUID) int32 { return int32(binary.BigEndian.Uint32(id[12:16])) }

// The advisory lock statements ($1 the class, $2 the key or keys), for the
// subpackages that queue them in a batch.
const (
	SQLLockExclusive = `SELECT pg_advisory_xact_lock($1::int4, $2::int4)`
	SQLLockShared    = `SELECT pg_advisory_xact_lock_shared($1::int4, $2::int4)`
	SQLLockAttempts  = `SELECT count(pg_advisory_xact_lock($1::int4, k)) FROM unnest($2::int4[]) AS k`
)

// LockWorker takes the worker's exclusive transaction lock.
func LockWorker(ctx context.Context, tx pgx.Tx, workerID uuid.UUID) error {
	_, err := tx.Exec(ctx, SQLLockExclusive, LockClassWorker, LockObjectKey(workerID))
	return err
}

// LockSession takes the session's transaction lock: exclusive for what
// changes whether the session may hold leases (transition, replacement)
// or decides its free capacity (claims); shared for what only needs it to
// stay as it is (acks, completions, renewal).
func LockSession(ctx context.Context, tx pgx.Tx, sessionID uuid.UUID, shared bool) error {
	q := SQLLockExclusive
	if shared {
		q = SQLLockShared
	}
	_, err := tx.Exec(ctx, q, LockClassSession, LockObjectKey(sessionID))
	return err
}

// LockAttempts takes the attempts' exclusive transaction locks in
// ascending key order (duplicates once), so two transactions locking
// overlapping sets cannot deadlock.
func LockAttempts(ctx context.Context, tx pgx.Tx, attemptIDs ...uuid.UUID) error {
	keys := make([]int32, 0, len(attemptIDs))
	for _, id := range attemptIDs {
		keys = append(keys, LockObjectKey(id))
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	if len(keys) == 0 {
		return nil
	}
	// One round trip: the function scan over the sorted array emits (and
	// locks) its elements in array order.
	_, err := tx.Exec(ctx, SQLLockAttempts, LockClassAttempt, keys)
	return err
}
