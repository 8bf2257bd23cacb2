package session

import (
	"bytes"
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/lease"
	"github.com/ql3/ql3/core/placement/matcher"
	"github.com/ql3/ql3/core/protocol"
)

// Session lease and heartbeat (DESIGN.md §8), core/lease's: the lease
// covers at least two heartbeats, so one lost heartbeat never expires a
// healthy session, and a heartbeat renews a started attempt before its
// worker's give-up point.
const (
	DefaultSessionLeaseMs     = lease.DefaultSessionMs
	DefaultSessionHeartbeatMs = lease.DefaultHeartbeatMs
)

// SessionOptions tunes the session store.
type SessionOptions struct {
	// Lease is the lease policy (its SessionMs and HeartbeatMs are what
	// the store grants and names). Zero: lease.Default().
	Lease lease.Policy
}

// Sessions is the worker session store on the ingress role
// (ql3_worker_ingress): open/replace, heartbeat, draining and offline.
// Identity always comes from the Principal; a body naming a session of
// another worker is a conflict and changes nothing. Lock order: ADR 0010.
type Sessions struct {
	db interface {
		postgres.DB
		TxBeginner
	}
	leaseMs     int64
	heartbeatMs int64
}

// TxBeginner is what postgres.InTx needs (a pool or a connection).
type TxBeginner interface {
	BeginTx(context.Context, pgx.TxOptions) (pgx.Tx, error)
}

// NewSessions returns the store over an ingress-role pool.
func NewSessions(db interface {
	postgres.DB
	TxBeginner
}, opts SessionOptions) (*Sessions, error) {
	p := opts.Lease
	if p == (lease.Policy{}) {
		p = lease.Default()
	}
	if err := p.Validate(); err != nil {
		return nil, errs.Prefix("lease", err)
	}
	return &Sessions{db: db, leaseMs: p.SessionMs, heartbeatMs: p.HeartbeatMs}, nil
}

var readCommitted = postgres.TxOptions{TxOptions: pgx.TxOptions{IsoLevel: pgx.ReadCommitted}}

// noSession is the one answer for a session id that is malformed, unknown
// or another worker's: they must be indistinguishable.
func noSession() error { return errs.E(errs.Conflict, "sessionId", "no such session for this worker") }

func sessionUUID(s string) (uuid.UUID, error) {
	id, err := uuid.Parse(s)
	if err != nil || id.String() != s {
		return uuid.UUID{}, noSession()
	}
	return id, nil
}

// Open gives the worker generation 1, or replaces its live session with
// generation + 1 in one transaction (worker lock, then the old session's
// lock, ADR 0010).
func (s *Sessions) Open(ctx context.Context, p controlplane.Principal, b protocol.SessionOpen) (protocol.SessionState, error) {
	workerID, err := uuid.Parse(p.WorkerID)
	if err != nil {
		return protocol.SessionState{}, errs.E(errs.Internal, "", "principal without a worker id")
	}
	credID, err := uuid.Parse(b.CredentialID)
	if err != nil || credID.String() != p.CredentialID {
		return protocol.SessionState{}, errs.E(errs.Conflict, "credentialId", "is not the credential this request authenticated with")
	}
	if err := matcher.ValidateCapabilities(b.Capabilities); err != nil {
		return protocol.SessionState{}, errs.Prefix("capabilities", err)
	}
	caps, err := b.Capabilities.Canonical()
	if err != nil {
		return protocol.SessionState{}, errs.Prefix("capabilities", err)
	}
	digest, err := b.Capabilities.Digest()
	if err != nil {
		return protocol.SessionState{}, errs.Prefix("capabilities", err)
	}
	sessionID, err := controlplane.NewID()
	if err != nil {
		return protocol.SessionState{}, err
	}
	auditID, err := controlplane.NewID()
	if err != nil {
		return protocol.SessionState{}, err
	}
	var gen, expires int64
	err = postgres.InTx(ctx, s.db, readCommitted, func(ctx context.Context, tx pgx.Tx) error {
		if err := postgres.LockWorker(ctx, tx, workerID); err != nil {
			return err
		}
		var replaced *int64
		var live uuid.UUID
		switch err := tx.QueryRow(ctx, sqlSessionLive, workerID).Scan(&live); {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return err
		default:
			if err := postgres.LockSession(ctx, tx, live, false); err != nil {
				return err
			}
			var old int64
			if err := tx.QueryRow(ctx, sqlSessionReplace, live).Scan(&old); err != nil {
				return err
			}
			replaced = &old
		}
		return tx.QueryRow(ctx, sqlSessionOpen, sessionID, workerID, credID, b.Capacity, caps, digest[:],
			s.leaseMs, auditID, p.RemoteAddr, b.AgentVersion, replaced).Scan(&gen, &expires)
	})
	if err != nil {
		return protocol.SessionState{}, txErr(err)
	}
	return s.state(sessionID.String(), gen, protocol.SessionOnline, expires), nil
}

func (s *Sessions) state(id string, gen int64, st protocol.SessionStatus, expiresAtMs int64) protocol.SessionState {
	return protocol.SessionState{V: protocol.Version, SessionID: id, Generation: gen, Status: st,
		HeartbeatIntervalMs: s.heartbeatMs, LeaseExpiresAtMs: expiresAtMs}
}

// Heartbeat renews the session lease and records the observed credential
// in one statement (one commit per heartbeat). When nothing matched, a
// second read says why: replaced (answered as state), or a conflict.
func (s *Sessions) Heartbeat(ctx context.Context, p controlplane.Principal, b protocol.SessionHeartbeat) (protocol.SessionState, error) {
	id, err := sessionUUID(b.SessionID)
	if err != nil {
		return protocol.SessionState{}, err
	}
	credID, err := uuid.Parse(p.CredentialID)
	if err != nil || b.CredentialID != p.CredentialID {
		return protocol.SessionState{}, errs.E(errs.Conflict, "credentialId", "is not the credential this request authenticated with")
	}
	auditID, err := controlplane.NewID()
	if err != nil {
		return protocol.SessionState{}, err
	}
	var status string
	var expires int64
	err = s.db.QueryRow(ctx, sqlSessionHeartbeat, id, p.WorkerID, b.Generation, credID, s.leaseMs,
		b.CapabilitiesDigest[:], auditID, p.RemoteAddr).Scan(&status, &expires)
	if err == nil {
		return s.state(b.SessionID, b.Generation, protocol.SessionStatus(status), expires), nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return protocol.SessionState{}, postgres.Translate(err)
	}
	row, err := s.read(ctx, s.db, sqlSessionRead, id)
	if err != nil {
		return protocol.SessionState{}, err
	}
	if err := row.owned(p.WorkerID, b.Generation); err != nil {
		return protocol.SessionState{}, err
	}
	switch {
	case row.replaced:
		return s.replacedState(b.SessionID, row), nil
	case row.status == protocol.SessionOffline:
		return protocol.SessionState{}, errs.Conflictf("session is offline; open a new session")
	case row.expiresAtMs <= row.nowMs:
		return protocol.SessionState{}, errs.Conflictf("session expired (authority time); open a new session")
	case !bytes.Equal(row.capsDigest, b.CapabilitiesDigest[:]):
		return protocol.SessionState{}, errs.E(errs.Conflict, "capabilitiesDigest", "capabilities changed; open a new session")
	}
	// It changed between the two statements (a concurrent transition):
	// the worker retries and sees the new state.
	return protocol.SessionState{}, errs.E(errs.Unavailable, "", "session changed concurrently; retry")
}

func (s *Sessions) replacedState(id string, row sessionRow) protocol.SessionState {
	st := s.state(id, row.generation, protocol.SessionOffline, row.expiresAtMs)
	st.Replaced = true
	return st
}

// Transition moves the session to draining or offline under the session
// lock (ADR 0010), compare-and-set on worker + session + generation.
func (s *Sessions) Transition(ctx context.Context, p controlplane.Principal, b protocol.SessionTransition) (protocol.SessionState, error) {
	id, err := sessionUUID(b.SessionID)
	if err != nil {
		return protocol.SessionState{}, err
	}
	auditID, err := controlplane.NewID()
	if err != nil {
		return protocol.SessionState{}, err
	}
	var out protocol.SessionState
	err = postgres.InTx(ctx, s.db, readCommitted, func(ctx context.Context, tx pgx.Tx) error {
		if err := postgres.LockSession(ctx, tx, id, false); err != nil {
			return err
		}
		row, err := s.read(ctx, tx, sqlSessionReadForUpdate, id)
		if err != nil {
			return err
		}
		if err := row.owned(p.WorkerID, b.Generation); err != nil {
			return err
		}
		if row.replaced {
			// Whatever was asked, a replaced session is offline: say so.
			out = s.replacedState(b.SessionID, row)
			return nil
		}
		switch decideTransition(row, b.To) {
		case transitionApply:
			var status string
			var expires int64
			if err := tx.QueryRow(ctx, sqlSessionTransition, id, b.Generation, string(b.To), auditID, p.RemoteAddr).Scan(&status, &expires); err != nil {
				return err
			}
			out = s.state(b.SessionID, b.Generation, protocol.SessionStatus(status), expires)
		case transitionAlready:
			out = s.state(b.SessionID, b.Generation, row.status, row.expiresAtMs)
			out.Replaced = row.replaced
		case transitionExpired:
			return errs.Conflictf("session expired (authority time); open a new session")
		case transitionBackwards:
			return errs.E(errs.Conflict, "to", "session is %s; it cannot become %s", row.status, b.To)
		}
		return nil
	})
	if err != nil {
		return protocol.SessionState{}, txErr(err)
	}
	return out, nil
}

// txErr keeps a coded error a transaction function returned and translates
// a driver error.
func txErr(err error) error {
	var coded *errs.Error
	if errors.As(err, &coded) {
		return err
	}
	return postgres.Translate(err)
}

// sessionRow is what a decision reads about one session.
type sessionRow struct {
	workerID    string
	generation  int64
	status      protocol.SessionStatus
	expiresAtMs int64
	capsDigest  []byte
	nowMs       int64
	replaced    bool
}

func (s *Sessions) read(ctx context.Context, db postgres.DB, q string, id uuid.UUID) (sessionRow, error) {
	var r sessionRow
	var status string
	err := db.QueryRow(ctx, q, id).Scan(&r.workerID, &r.generation, &status, &r.expiresAtMs, &r.capsDigest, &r.nowMs, &r.replaced)
	if errors.Is(err, pgx.ErrNoRows) {
		return sessionRow{}, noSession()
	}
	if err != nil {
		return sessionRow{}, postgres.Translate(err)
	}
	r.status = protocol.SessionStatus(status)
	return r, nil
}

// owned refuses a session of another worker (indistinguishable from an
// unknown one) and a generation that is not the session's.
func (r sessionRow) owned(workerID string, generation int64) error {
	if r.workerID != workerID {
		return noSession()
	}
	if r.generation != generation {
		return errs.E(errs.Conflict, "generation", "session has generation %d", r.generation)
	}
	return nil
}

type transitionDecision int

const (
	transitionApply     transitionDecision = iota // write the new status
	transitionAlready                             // the session already has it: answer as it is
	transitionExpired                             // draining an expired session: fail closed
	transitionBackwards                           // offline → draining
)

// decideTransition is the transition rule of ADR 0010: online → draining
// needs a live lease (database time); anything → offline is always allowed
// (it only removes authority, so an expired session may close); asking
// for the status the session already has is answered as it is
// (idempotent retries); offline → draining is refused.
func decideTransition(r sessionRow, to protocol.SessionStatus) transitionDecision {
	switch {
	case r.status == to:
		return transitionAlready
	case r.status == protocol.SessionOffline:
		return transitionBackwards
	case to == protocol.SessionDraining && r.expiresAtMs <= r.nowMs:
		return transitionExpired
	}
	return transitionApply
}
