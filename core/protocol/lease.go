package protocol

import (
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/fence"
)

// LeaseRef names the RunLease a per-attempt request acts under and proves
// the worker holds it: the session and generation the offer was claimed
// under (not necessarily the worker's current session, so a journaled
// completion can be delivered after a restart), the Run, Attempt, offer id,
// lease generation and the lease token itself. The ingress digests the
// token and checks the whole LeaseFence against the durable lease; the
// token is never echoed. Its JSON members are inlined in the body.
type LeaseRef struct {
	SessionID       string           `json:"sessionId"`
	Generation      int64            `json:"generation"`
	RunID           string           `json:"runId"`
	AttemptID       string           `json:"attemptId"`
	OfferID         string           `json:"offerId"`
	LeaseGeneration int64            `json:"leaseGeneration"`
	LeaseToken      fence.LeaseToken `json:"leaseToken"`
}

// Validate checks every field.
func (r LeaseRef) Validate() error {
	if err := checkSession(r.SessionID, r.Generation); err != nil {
		return err
	}
	if err := checkID("runId", r.RunID); err != nil {
		return err
	}
	if err := checkID("attemptId", r.AttemptID); err != nil {
		return err
	}
	if _, err := fence.ParseUUID("offerId", r.OfferID); err != nil {
		return err
	}
	if err := checkPositive("leaseGeneration", r.LeaseGeneration); err != nil {
		return err
	}
	return r.LeaseToken.Validate()
}

// Fence returns the LeaseFence this reference claims, for comparison with
// the durable lease. workerID is the authenticated transport identity;
// leaseVersion and expiresAtMs are not sent by the worker (they change when
// the lease is extended) and come from the lease row the caller read in
// the same transaction that writes the compare-and-set.
func (r LeaseRef) Fence(workerID string, leaseVersion, expiresAtMs int64) fence.LeaseFence {
	return fence.LeaseFence{
		RunID: r.RunID, AttemptID: r.AttemptID, WorkerID: workerID,
		SessionID: r.SessionID, SessionGeneration: r.Generation,
		LeaseGeneration: r.LeaseGeneration, LeaseVersion: leaseVersion, ExpiresAtMs: expiresAtMs,
		TokenDigest: r.LeaseToken.Digest(), OfferID: r.OfferID,
	}
}

// AckPhase is the lifecycle step an Ack reports.
type AckPhase string

// Ack phases. starting passes the start barrier (the lease can no longer
// be released and offered again); running reports a spawned process. A
// start failure is a Completion (failed, executor_start), not an Ack.
const (
	AckStarting AckPhase = "starting"
	AckRunning  AckPhase = "running"
)

// Ack reports that an attempt reached a phase (PathLeaseAck); the answer
// is a LeaseControl. Acks are idempotent: repeating one that was already
// recorded returns the current control.
type Ack struct {
	V int `json:"v"`
	LeaseRef
	Phase AckPhase `json:"phase"`
}

// DecodeAck strictly decodes and validates an Ack.
func DecodeAck(data []byte) (Ack, error) {
	var a Ack
	if err := decode(data, flat, &a, &a.V); err != nil {
		return Ack{}, err
	}
	if err := a.Validate(); err != nil {
		return Ack{}, err
	}
	return a, nil
}

// Validate checks every field.
func (a Ack) Validate() error {
	if err := checkVersion(a.V); err != nil {
		return err
	}
	if err := a.LeaseRef.Validate(); err != nil {
		return err
	}
	if a.Phase != AckStarting && a.Phase != AckRunning {
		return errs.Invalidf("phase", "must be starting or running")
	}
	return nil
}

// Encode validates a (with v set) and returns its JSON.
func (a Ack) Encode() ([]byte, error) {
	a.V = Version
	if err := a.Validate(); err != nil {
		return nil, err
	}
	return encode(a, DefaultBodyBytes, "ack")
}

// LeaseAction is what the authority tells a worker about one lease.
type LeaseAction string

// Lease actions.
const (
	// LeaseExtend: keep going; the lease now expires at LeaseExpiresAtMs.
	LeaseExtend LeaseAction = "extend"
	// LeaseCancel: stop the process (SIGTERM to its group, SIGKILL after
	// CancelGraceMs) and report a cancelled Completion.
	LeaseCancel LeaseAction = "cancel"
	// LeaseRevoke: this session no longer holds that lease (it was released,
	// swept, re-offered, its session was replaced or went offline, or the
	// attempt is unknown to this session). Stop the process group now,
	// without a grace and without asking again; a completion sent later is
	// answered late or conflict. RunID, LeaseGeneration, LeaseVersion and
	// LeaseExpiresAtMs describe the lease the session held when the
	// authority knows one, and are empty/zero when it does not (an attempt
	// this session never held is not described: that would leak another
	// worker's run).
	LeaseRevoke LeaseAction = "revoke"
)

// LeaseControl is the authority's word on one lease: the answer to an Ack
// and an element of SessionState.Controls.
type LeaseControl struct {
	V                int         `json:"v"`
	RunID            string      `json:"runId,omitempty"` // empty only in a revoke for a lease the authority does not describe
	AttemptID        string      `json:"attemptId"`
	LeaseGeneration  int64       `json:"leaseGeneration,omitempty"`
	LeaseVersion     int64       `json:"leaseVersion,omitempty"`
	Action           LeaseAction `json:"action"`
	LeaseExpiresAtMs int64       `json:"leaseExpiresAtMs,omitempty"`
	CancelGraceMs    int64       `json:"cancelGraceMs,omitempty"` // only with cancel
}

// DecodeLeaseControl strictly decodes and validates a LeaseControl.
func DecodeLeaseControl(data []byte) (LeaseControl, error) {
	var c LeaseControl
	if err := decode(data, flat, &c, &c.V); err != nil {
		return LeaseControl{}, err
	}
	if err := c.Validate(); err != nil {
		return LeaseControl{}, err
	}
	return c, nil
}

// Validate checks every field. extend and cancel describe a lease the
// authority holds for the session, so every lease field is required; a
// revoke may leave them empty (see LeaseRevoke).
func (c LeaseControl) Validate() error {
	if err := checkVersion(c.V); err != nil {
		return err
	}
	if err := checkID("attemptId", c.AttemptID); err != nil {
		return err
	}
	switch c.Action {
	case LeaseExtend, LeaseCancel:
		if err := c.checkLease(); err != nil {
			return err
		}
	case LeaseRevoke:
		if c.RunID != "" || c.LeaseGeneration != 0 || c.LeaseVersion != 0 || c.LeaseExpiresAtMs != 0 {
			if err := c.checkLease(); err != nil {
				return err
			}
		}
	default:
		return errs.Invalidf("action", "must be extend, cancel or revoke")
	}
	if c.Action == LeaseCancel {
		return checkRange("cancelGraceMs", c.CancelGraceMs, 0, MaxCancelGraceMs)
	}
	if c.CancelGraceMs != 0 {
		return errs.Invalidf("cancelGraceMs", "is only allowed with action cancel")
	}
	return nil
}

// checkLease checks the fields that describe the lease a control is about.
func (c LeaseControl) checkLease() error {
	if err := checkID("runId", c.RunID); err != nil {
		return err
	}
	if err := checkPositive("leaseGeneration", c.LeaseGeneration); err != nil {
		return err
	}
	if err := checkPositive("leaseVersion", c.LeaseVersion); err != nil {
		return err
	}
	return checkPositive("leaseExpiresAtMs", c.LeaseExpiresAtMs)
}

// Encode validates c (with v set) and returns its JSON.
func (c LeaseControl) Encode() ([]byte, error) {
	c.V = Version
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return encode(c, DefaultBodyBytes, "lease control")
}
