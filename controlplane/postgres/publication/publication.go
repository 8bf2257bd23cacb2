package publication

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/names"
)

// Publication (issue 4): the admin role creates and changes projects, tasks
// and triggers. Every publication is one SERIALIZABLE transaction, re-run a
// bounded number of times when the server rolls it back for a serialization
// failure or deadlock (InTx), so two admins racing on one task can never both
// win:
//
//   - a task create/update writes a new immutable task revision and its
//     compiled execution revision (canonical spec + SHA-256, executor
//     remote_worker, normalised placement), and moves every trigger of the
//     task onto the new revision (a new trigger revision each, schedule reset);
//   - a trigger create/update writes a new trigger revision pinned to the
//     task's head revision and its digest, and upserts the schedule row with
//     the cursor and the claim cleared and state_version and claim_version
//     bumped, so a coordinator still holding the old claim can never commit.
//
// Updates carry the revision they replace (expectedRevision); a stale one is
// a conflict. A mutation may carry a client mutationId: the first success is
// recorded with its result in the same transaction, an identical retry gets
// that result back unchanged, and a different request under the same id is a
// conflict.

// PublisherDB is what a Publisher needs: *pgxpool.Pool satisfies it.
type PublisherDB interface {
	postgres.DB
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

// Publisher publishes as ql3_admin. It is safe for concurrent use.
type Publisher struct {
	db             PublisherDB
	defaultGraceMs int64
	maxAttempts    int
	allowDupes     bool
}

// PublisherOptions configures NewPublisher.
type PublisherOptions struct {
	// DefaultGraceMs is the misfire grace of a trigger published without
	// one; 0 means PublishDefaultGraceMs.
	DefaultGraceMs int64
	// MaxAttempts bounds the retries of a serialization failure; 0 means 8.
	MaxAttempts int
	// AllowDuplicateTriggers lets one task carry several triggers with the
	// same schedule (ADR 0024 refuses them: two Runs per instant). Only
	// load fixtures set it, to pile identical every-second triggers on one
	// task; the server never does.
	AllowDuplicateTriggers bool
}

// PublishDefaultGraceMs is the cluster's default misfire grace.
const PublishDefaultGraceMs = 30_000

// NewPublisher returns a Publisher over an admin pool.
func NewPublisher(db PublisherDB, opts PublisherOptions) *Publisher {
	p := &Publisher{db: db, defaultGraceMs: opts.DefaultGraceMs, maxAttempts: opts.MaxAttempts, allowDupes: opts.AllowDuplicateTriggers}
	if p.defaultGraceMs == 0 {
		p.defaultGraceMs = PublishDefaultGraceMs
	}
	if p.maxAttempts <= 0 {
		p.maxAttempts = 8
	}
	return p
}

// Mutation kinds recorded with a mutationId.
const (
	mutationProjectCreate  = "project.create"
	mutationProjectArchive = "project.archive"
	mutationTaskCreate     = "task.create"
	mutationTaskUpdate     = "task.update"
	mutationTaskEnable     = "task.set_enabled"
	mutationTriggerCreate  = "trigger.create"
	mutationTriggerUpdate  = "trigger.update"
)

// publishDigestDomain separates request digests from every other digest.
const publishDigestDomain = "ql3/publication/v1"

// MaxMutationIDBytes bounds a client mutationId.
const MaxMutationIDBytes = 128

// checkMutationID validates an optional mutationId ("" means none).
func checkMutationID(id string) error {
	if id == "" {
		return nil
	}
	if len(id) > MaxMutationIDBytes {
		return errs.Invalidf("mutationId", "must be at most %d bytes, got %d", MaxMutationIDBytes, len(id))
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("._:-", c) >= 0
		if !ok {
			return errs.Invalidf("mutationId", "may contain only A-Z a-z 0-9 . _ : -, got byte 0x%02x at offset %d", c, i)
		}
	}
	return nil
}

// publish runs fn in a retried SERIALIZABLE transaction, with mutationId
// replay around it. request is the normalised request (its canonical JSON
// digest identifies the request); fn's result is stored as JSON and is what
// an identical replay returns.
func publish[T any](ctx context.Context, p *Publisher, mutationID, kind string, request any,
	fn func(ctx context.Context, tx pgx.Tx) (T, error)) (T, error) {
	var zero T
	if err := checkMutationID(mutationID); err != nil {
		return zero, err
	}
	canon, err := canonjson.Canonical(struct {
		Kind    string `json:"kind"`
		Request any    `json:"request"`
	}{kind, request})
	if err != nil {
		return zero, errs.E(errs.Internal, "", "encode request: %v", err)
	}
	reqDigest := canonjson.Sum(publishDigestDomain, canon)
	var out T
	err = postgres.InTx(ctx, p.db, postgres.TxOptions{TxOptions: postgres.Serializable.TxOptions, MaxAttempts: p.maxAttempts},
		func(ctx context.Context, tx pgx.Tx) error {
			if mutationID != "" {
				replayed, err := replayMutation(ctx, tx, mutationID, kind, reqDigest, &out)
				if err != nil || replayed {
					return err
				}
			}
			res, err := fn(ctx, tx)
			if err != nil {
				return err
			}
			// Its audit line commits or rolls back with the mutation; a
			// replay above changed nothing and writes none.
			sk, sid, details, ok := auditSubjectOf(res)
			if !ok {
				return errs.E(errs.Internal, "", "publication %s has no audit subject", kind)
			}
			if err := InsertAudit(ctx, tx, kind, sk, sid, details); err != nil {
				return err
			}
			out = res
			if mutationID == "" {
				return nil
			}
			body, err := json.Marshal(res)
			if err != nil {
				return errs.E(errs.Internal, "", "encode result: %v", err)
			}
			_, err = tx.Exec(ctx, `INSERT INTO ql3.publication_mutations
				(mutation_id, kind, request_digest, result, created_at_ms)
				VALUES ($1, $2, $3, $4::text::jsonb, `+dbNowMs+`)`,
				mutationID, kind, reqDigest[:], string(body))
			return err
		})
	if err != nil && mutationID != "" && errs.Code(err) == errs.Conflict {
		// Concurrent first uses of one mutationId all find it unrecorded;
		// the winner commits, and a loser whose snapshot could not see the
		// winner's unique key (a task's name, say) gets a unique violation
		// rather than a serialization failure. The committed mutation is
		// its answer too; without one the conflict stands.
		var replay T
		if ok, rerr := replayMutation(ctx, p.db, mutationID, kind, reqDigest, &replay); rerr == nil && ok {
			return replay, nil
		}
	}
	if err != nil {
		return zero, err
	}
	return out, nil
}

// replayMutation looks mutationID up (in the publishing transaction, or
// afterwards on the pool); when it was recorded for the same request it
// decodes the stored result into out.
func replayMutation(ctx context.Context, tx interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}, mutationID, kind string, digest canonjson.Digest, out any) (bool, error) {
	var gotKind string
	var gotDigest []byte
	var result []byte
	err := tx.QueryRow(ctx, `SELECT kind, request_digest, result::text FROM ql3.publication_mutations
		WHERE mutation_id = $1`, mutationID).Scan(&gotKind, &gotDigest, &result)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if gotKind != kind || string(gotDigest) != string(digest[:]) {
		return false, errs.E(errs.Conflict, "mutationId",
			"mutationId %q was already used for a different request (%s)", mutationID, gotKind)
	}
	if err := json.Unmarshal(result, out); err != nil {
		return false, errs.E(errs.Internal, "", "decode recorded result of mutation %q: %v", mutationID, err)
	}
	return true, nil
}

// parsePubID parses a canonical UUID supplied as field; a malformed id is
// invalid input.
func parsePubID(field, s string) (uuid.UUID, error) {
	if len(s) != 36 {
		return uuid.UUID{}, errs.Invalidf(field, "must be a UUID (8-4-4-4-12), got %.64q", s)
	}
	id, err := uuid.Parse(s)
	if err != nil || id == uuid.Nil {
		return uuid.UUID{}, errs.Invalidf(field, "must be a UUID (8-4-4-4-12), got %.64q", s)
	}
	return id, nil
}

// checkPubName validates a display name by the one rule of every binary
// (core/names.CheckDisplay: 1..128 characters after NFC, not bytes; no
// control, bidi or invisible characters, no Latin/Greek/Cyrillic mix in a
// word, not id-shaped) and sets it to its normalized form, which is what
// is stored and compared.
func checkPubName(field string, name *string) error {
	n, err := names.CheckDisplay(field, *name)
	if err != nil {
		return err
	}
	*name = n
	return nil
}

// expectAffected turns a compare-and-set UPDATE that matched nothing into a
// conflict.
func expectAffected(tag pgconn.CommandTag, format string, args ...any) error {
	if tag.RowsAffected() != 1 {
		return errs.Conflictf(format, args...)
	}
	return nil
}

// resetClaimsSQL clears the claim of schedules (the caller adds a WHERE)
// and bumps both versions: the claim fence (owner, token, claim_version) a coordinator
// holds stops matching, so its admission can never commit. It also
// recomputes active (migration 0004) from the state the transaction has
// written so far, so callers run it after changing a task or project.
var resetClaimsSQL = `UPDATE ql3.trigger_schedules s SET
	claim_owner = NULL, claim_token = NULL, claim_expires_at_ms = NULL,
	claim_version = claim_version + 1, state_version = state_version + 1,
	active = ` + scheduleActiveSQL("s.trigger_id", "s.trigger_revision") + `,
	updated_at_ms = ` + dbNowMs

// scheduleActiveSQL is the value of trigger_schedules.active (migration
// 0004) for the schedule of trigger revision (triggerID, revision): its
// project is active and the revision and its task are enabled. It is the
// claim's index hint; the claim and admission re-check eligibility anyway.
func scheduleActiveSQL(triggerID, revision string) string {
	return `coalesce((SELECT p.status = 'active' AND r.enabled AND k.enabled
		FROM ql3.trigger_revisions r
		JOIN ql3.tasks k ON k.task_id = r.task_id
		JOIN ql3.projects p ON p.project_id = r.project_id
		WHERE r.trigger_id = ` + triggerID + ` AND r.revision = ` + revision + `), false)`
}

// lockPubProject reads a project's status FOR SHARE (a concurrent archive
// waits, or fails serialization) and refuses archived projects when
// mustBeActive.
func lockPubProject(ctx context.Context, tx pgx.Tx, projectID uuid.UUID, mustBeActive bool, field string) (string, error) {
	var status string
	err := tx.QueryRow(ctx, `SELECT status FROM ql3.projects WHERE project_id = $1 FOR SHARE`, projectID).Scan(&status)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", errs.NotFoundf("no project %s", projectID)
	}
	if err != nil {
		return "", err
	}
	if mustBeActive && status != ProjectActive {
		return status, errs.E(errs.Conflict, field, "project %s is archived: nothing can be published into it", projectID)
	}
	return status, nil
}

func fmtDigest(b []byte) (canonjson.Digest, error) {
	var d canonjson.Digest
	if len(b) != len(d) {
		return d, fmt.Errorf("postgres: digest has %d bytes", len(b))
	}
	copy(d[:], b)
	return d, nil
}

// pubReadErr translates a read's error: coded errors (not found, invalid) pass
// through, driver errors are translated.
func pubReadErr(err error) error {
	var coded *errs.Error
	if err == nil || errors.As(err, &coded) {
		return err
	}
	return postgres.Translate(err)
}

// dbNowMs is the database's clock in epoch milliseconds, as every
// statement of the control plane reads it.
const dbNowMs = postgres.DBNowMs

// clip bounds a string for a column (the shared helper).
func clip(s string, n int) string { return postgres.Clip(s, n) }
