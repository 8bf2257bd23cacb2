package controlplane

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"

	"github.com/google/uuid"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/run"
	"github.com/ql3/ql3/core/schedule"
)

// AdmitKind is what an admission writes for one claimed schedule.
type AdmitKind string

const (
	// AdmitFire inserts the queued Run, its claimed remote_worker Attempt and
	// run.created + run.queued, and advances the cursor past the occurrence.
	AdmitFire AdmitKind = "fire"
	// AdmitSkip only advances the cursor (a missed occurrence under the skip
	// policy).
	AdmitSkip AdmitKind = "skip"
	// AdmitInit only sets the cursor (new or reset schedule; no Run).
	AdmitInit AdmitKind = "init"
	// AdmitRelease gives the claim back with the cursor unchanged (the
	// decision was Wait).
	AdmitRelease AdmitKind = "release"
)

// Admission is one decided occurrence to commit under the claim that
// produced it. Claim is the row as the claim returned it; every field of it
// is re-checked by the admission statement.
type Admission struct {
	Claim ClaimedSchedule
	Kind  AdmitKind
	// ScheduledForMs is the occurrence (Fire, Skip): always the claimed cursor.
	ScheduledForMs int64
	// NextFireAtMs is the cursor to store (all kinds).
	NextFireAtMs int64
	// Fire only: ids allocated for this occurrence, its idempotency key and
	// the canonical JSON of the two events' payloads.
	RunID          uuid.UUID
	AttemptID      uuid.UUID
	IdempotencyKey string
	CreatedPayload []byte
	QueuedPayload  []byte
}

// Outcome is what the admission statement did with one Admission.
type Outcome string

const (
	OutcomeAdmitted    Outcome = "admitted"    // Run + Attempt + 2 events written, schedule advanced, claim cleared
	OutcomeSkipped     Outcome = "skipped"     // cursor advanced, claim cleared
	OutcomeInitialized Outcome = "initialized" // cursor set, claim cleared
	OutcomeReleased    Outcome = "released"    // claim cleared
	// OutcomeRaced: the claim fence no longer holds (taken over after
	// expiry, reset by a publish, or expired by database time). Nothing was
	// written. Expected under contention; not an error.
	OutcomeRaced Outcome = "raced"
	// OutcomeStale: the fence holds but the world moved (project archived,
	// trigger or task disabled or re-pinned, cursor changed). Nothing written;
	// the claim runs out and the row is re-read by the next claim.
	OutcomeStale Outcome = "stale"
	// OutcomeCorrupt: the pinned execution revision is not digest-valid or
	// not remote_worker, or the decision contradicts the claimed row. Nothing
	// written: fail closed.
	OutcomeCorrupt Outcome = "corrupt"
)

// AdmitResult reports one admission transaction.
type AdmitResult struct {
	Outcomes []Outcome // one per Admission, same order
	// Retries is how many times the transaction was re-run after the server
	// rolled it back (serialization failure, deadlock).
	Retries int
}

// ErrCommitUnknown: the connection failed (or the context ended) while the
// admission pipeline, COMMIT included, was in flight; the transaction may or
// may not have committed. The caller must not redo the
// admission: the next claim observes the truth (a committed admission
// cleared the claim and advanced the cursor, so the fence no longer
// matches; the Run's unique idempotency key is the last line of defence).
var ErrCommitUnknown = errors.New("postgres: admission commit outcome unknown")

// AdmitOptions configures Admit.
type AdmitOptions struct {
	// MaxAttempts bounds the runs of the transaction when the server rolls
	// it back for a serialization failure or deadlock; 0 means 5.
	MaxAttempts int
}

// NextClaim is the claim AdmitThenClaim ran after the admission committed.
type NextClaim struct {
	Claimed []ClaimedSchedule
	// Err: the claim failed (the admission still committed). Without a
	// SQLSTATE it is unknown whether the claim committed; such claims run
	// out.
	Err error
}

// AdmissionFor builds the Admission for a core decision on a claimed row.
// It allocates ids only for Fire. Wait (a claimed row that is not due,
// possible only if the cursor moved between claim and decision) releases the
// claim.
func AdmissionFor(c ClaimedSchedule, d schedule.Decision) (Admission, error) {
	ad := Admission{Claim: c, NextFireAtMs: d.NextFireAtMs}
	switch d.Kind {
	case schedule.Init:
		ad.Kind = AdmitInit
	case schedule.Wait:
		ad.Kind, ad.NextFireAtMs = AdmitRelease, c.NextFireAtMs
	case schedule.Skip:
		ad.Kind, ad.ScheduledForMs = AdmitSkip, d.ScheduledForMs
	case schedule.Fire:
		ad.Kind, ad.ScheduledForMs = AdmitFire, d.ScheduledForMs
		var err error
		if ad.RunID, err = laneRunID(c.Fence.Owner, c.AcquiredAtMs); err != nil {
			return ad, err
		}
		if ad.AttemptID, err = NewID(); err != nil {
			return ad, err
		}
		ad.IdempotencyKey = schedule.IdempotencyKey(c.TriggerID.String(), c.TriggerRevision, d.ScheduledForMs)
		created := run.Payload{To: string(run.RunCreated), TriggerID: c.TriggerID.String(),
			TriggerRevision: c.TriggerRevision, ScheduledForMs: d.ScheduledForMs, Missed: d.Missed,
			ExecutionRevisionID: c.ExecutionRevisionID.String(), ExecutionRevisionDigest: c.ExecutionDigest.String()}
		if ad.CreatedPayload, err = created.Encode(); err != nil {
			return ad, err
		}
		queued := run.Payload{From: string(run.RunCreated), To: string(run.RunQueued),
			AttemptID: ad.AttemptID.String(), AttemptNumber: 1}
		if ad.QueuedPayload, err = queued.Encode(); err != nil {
			return ad, err
		}
	default:
		return ad, errs.Invalidf("kind", "unknown decision kind %v", d.Kind)
	}
	return ad, nil
}

// NewID returns a fresh UUIDv7 for a Run or Attempt.
func NewID() (uuid.UUID, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.UUID{}, errs.E(errs.Internal, "", "generate id: %v", err)
	}
	return id, nil
}

// laneRunID returns the id of a Run the cluster scheduler admits for the
// replica owner at database time atMs: a UUIDv8 (RFC 9562) laid out as
//
//	bytes 0–1   the replica's lane: the first 16 bits of SHA-256(owner)
//	bytes 2–5   atMs in whole seconds (big-endian, until 2106)
//	bytes 6–15  random, with the version (8) and variant bits set
//
// Why not UUIDv7 (issue 16, ADR 0006): every admission's foreign-key checks
// (attempts → runs, run_events → runs, run_events → attempts by run id)
// look up the Runs it just inserted, and under SERIALIZABLE an index lookup
// predicate-locks the whole B-tree leaf page. With time-ordered ids every
// concurrent admission inserts into and reads the same rightmost page of
// runs_pkey (and of attempts' (run_id, attempt) index), so any three
// overlapping admissions could form the dangerous structure SSI refuses
// ("canceled on identification as a pivot", 2–4 failures per 10,000 Runs
// at 3–4 replicas). Prefixed by a lane per replica, each replica's Runs
// append to their own part of those indexes (time-ordered within it, so
// inserts stay append-mostly): concurrent admissions of different replicas
// no longer share a page. Two replicas whose owners hash to the same lane
// (1 in 65,536) merely conflict as before; nothing else depends on the
// layout (ids are opaque; lists order by created time).
func laneRunID(owner string, atMs int64) (uuid.UUID, error) {
	var id uuid.UUID
	h := sha256.Sum256([]byte(owner))
	id[0], id[1] = h[0], h[1]
	binary.BigEndian.PutUint32(id[2:6], uint32(max(atMs, 0)/1000))
	if _, err := rand.Read(id[6:]); err != nil {
		return uuid.UUID{}, errs.E(errs.Internal, "", "generate run id: %v", err)
	}
	id[6] = 0x80 | id[6]&0x0f // version 8
	id[8] = 0x80 | id[8]&0x3f // RFC 9562 variant
	return id, nil
}
