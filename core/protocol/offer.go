package protocol

import (
	"crypto/subtle"
	"encoding/json"

	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/fence"
	"github.com/ql3/ql3/core/spec"
)

// OfferPullRequest asks for one offer (PathOfferPull). The worker makes up
// the offerId (a UUID) and a fresh lease token of at least 256 bits per
// offer it wants; after a lost response it repeats the identical request
// (same offerId, token and session) and the authority rebuilds the same
// offer from the durable lease. The answer is 200 with an Offer or 204
// when nothing is runnable for this session.
type OfferPullRequest struct {
	V          int              `json:"v"`
	SessionID  string           `json:"sessionId"`
	Generation int64            `json:"generation"`
	OfferID    string           `json:"offerId"`
	LeaseToken fence.LeaseToken `json:"leaseToken"`
	// WaitMs is how long the worker is willing to wait for work inside
	// this request (0 = answer at once); the authority may answer sooner.
	// v1 authorities always answer at once (ADR 0004 "No long-poll"): the
	// field is accepted and bounded so a later server may serve it, and
	// the pace of idle pulls is the 204's Retry-After.
	WaitMs int64 `json:"waitMs,omitempty"`
}

// DecodeOfferPullRequest strictly decodes and validates a pull request.
func DecodeOfferPullRequest(data []byte) (OfferPullRequest, error) {
	var p OfferPullRequest
	if err := decode(data, flat, &p, &p.V); err != nil {
		return OfferPullRequest{}, err
	}
	if err := p.Validate(); err != nil {
		return OfferPullRequest{}, err
	}
	return p, nil
}

// Validate checks every field.
func (p OfferPullRequest) Validate() error {
	if err := checkVersion(p.V); err != nil {
		return err
	}
	if err := checkSession(p.SessionID, p.Generation); err != nil {
		return err
	}
	if _, err := fence.ParseUUID("offerId", p.OfferID); err != nil {
		return err
	}
	if err := p.LeaseToken.Validate(); err != nil {
		return err
	}
	return checkRange("waitMs", p.WaitMs, 0, MaxWaitMs)
}

// Encode validates p (with v set) and returns its JSON.
func (p OfferPullRequest) Encode() ([]byte, error) {
	p.V = Version
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return encode(p, DefaultBodyBytes, "offer pull request")
}

// Retry-After on the 204 answer to a pull: whole seconds (RFC 9110
// delay-seconds), at least MinRetryAfterSeconds and at most
// MaxRetryAfterSeconds. The worker waits at least that long (plus its own
// jitter) before pulling again for that session, unless its own state
// changed (a slot freed, a new session).
const (
	HeaderRetryAfter     = "Retry-After"
	MinRetryAfterSeconds = 1
	MaxRetryAfterSeconds = 60
)

// RetryAfterSeconds turns the authority's suggested pause (milliseconds)
// into the header value: rounded up to whole seconds and clamped to
// [MinRetryAfterSeconds, MaxRetryAfterSeconds].
func RetryAfterSeconds(ms int64) int64 {
	s := ms / 1000
	if ms%1000 != 0 {
		s++
	}
	return max(MinRetryAfterSeconds, min(MaxRetryAfterSeconds, s))
}

// ParseRetryAfter reads a 204's Retry-After header (delay-seconds only; the
// HTTP-date form is refused: the worker's clock is not trusted) and
// returns the pause in milliseconds, clamped like RetryAfterSeconds. A
// missing header is MinRetryAfterSeconds.
func ParseRetryAfter(v string) (int64, error) {
	if v == "" {
		return MinRetryAfterSeconds * 1000, nil
	}
	// At most 6 digits: a huge value is clamped, never overflows.
	if len(v) > 6 {
		return 0, errs.Invalidf(HeaderRetryAfter, "must be 1..6 digits")
	}
	var s int64
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return 0, errs.Invalidf(HeaderRetryAfter, "must be whole seconds")
		}
		s = s*10 + int64(v[i]-'0')
	}
	return RetryAfterSeconds(s*1000) * 1000, nil
}

// Offer is what a worker receives after its lease claim succeeded: the
// pinned spec and every value of the LeaseFence, so the worker can prove
// the lease on each later request. It carries the digest of the worker's
// lease token (never the token) so the worker can check that the offer is
// bound to the capability it sent.
type Offer struct {
	V             int    `json:"v"`
	RunID         string `json:"runId"`
	AttemptID     string `json:"attemptId"`
	AttemptNumber int    `json:"attemptNumber"` // 1-based, ≤ spec.retry.maxAttempts

	WorkerID         string           `json:"workerId"`
	SessionID        string           `json:"sessionId"`
	Generation       int64            `json:"generation"` // session generation
	OfferID          string           `json:"offerId"`
	LeaseGeneration  int64            `json:"leaseGeneration"`
	LeaseVersion     int64            `json:"leaseVersion"`
	LeaseExpiresAtMs int64            `json:"leaseExpiresAtMs"` // authority clock
	LeaseTokenDigest canonjson.Digest `json:"leaseTokenDigest"` // fence.DigestLeaseToken of the worker's token

	// The task the Run belongs to, the task revision its execution
	// revision was compiled from, and the occurrence it is for (the
	// admission's scheduled time; for run-now and reruns the requested
	// time): the process sees them as QL3_TASK_ID, QL3_TASK_REVISION and
	// QL3_SCHEDULED_FOR, as on the edge, and the task id names its
	// working directory, so state a script keeps there survives edits.
	TaskID         string `json:"taskId"`
	TaskRevision   int64  `json:"taskRevision"`
	ScheduledForMs int64  `json:"scheduledForMs"`

	ExecutionRevisionID     string           `json:"executionRevisionId"`
	ExecutionRevisionDigest canonjson.Digest `json:"executionRevisionDigest"`
	SpecDigest              canonjson.Digest `json:"specDigest"` // spec.Command.Digest of Spec, checked on decode
	Spec                    spec.Command     `json:"spec"`
	// TimeoutMs is this attempt's execution budget: the spec's timeout,
	// shortened by the authority when the Run's deadline is nearer.
	TimeoutMs int64 `json:"timeoutMs"`
	// Env is the env store's variables the attempt's process gets, pinned
	// when the attempt was claimed (offer_env.go, ADR 0051).
	Env []EnvVar `json:"env,omitempty"`
	// ScriptTree is the digest (core/scriptpath.TreeDigest) of the script
	// tree a script task's execution revision pins (ADR 0052): the worker
	// runs exactly that tree, fetched over PathScriptTree/PathScriptBlob
	// and verified before the process starts. Empty for argv and shell.
	ScriptTree string `json:"scriptTree,omitempty"`
	// ProjectID is the Run's project: a worker gives every process of the
	// project its deps directory (ADR 0062). Empty from an older authority.
	ProjectID string `json:"projectId,omitempty"`
}

type offerWire struct {
	V                       int             `json:"v"`
	RunID                   string          `json:"runId"`
	AttemptID               string          `json:"attemptId"`
	AttemptNumber           int             `json:"attemptNumber"`
	WorkerID                string          `json:"workerId"`
	SessionID               string          `json:"sessionId"`
	Generation              int64           `json:"generation"`
	OfferID                 string          `json:"offerId"`
	LeaseGeneration         int64           `json:"leaseGeneration"`
	LeaseVersion            int64           `json:"leaseVersion"`
	LeaseExpiresAtMs        int64           `json:"leaseExpiresAtMs"`
	LeaseTokenDigest        string          `json:"leaseTokenDigest"`
	TaskID                  string          `json:"taskId"`
	TaskRevision            int64           `json:"taskRevision"`
	ScheduledForMs          int64           `json:"scheduledForMs"`
	ExecutionRevisionID     string          `json:"executionRevisionId"`
	ExecutionRevisionDigest string          `json:"executionRevisionDigest"`
	SpecDigest              string          `json:"specDigest"`
	Spec                    json.RawMessage `json:"spec"`
	TimeoutMs               int64           `json:"timeoutMs"`
	Env                     []EnvVar        `json:"env"`
	ScriptTree              string          `json:"scriptTree"`
	ProjectID               string          `json:"projectId"`
}

// DecodeOffer strictly decodes and validates an Offer, the spec included
// (defaults applied, digest verified). Offers as the authority encodes them
// take the fast path (offer_fast.go); everything else, every refusal
// included, is decided by the reference decoder.
func DecodeOffer(data []byte) (Offer, error) {
	if o, err := decodeOfferFast(data); err == nil {
		return o, nil
	}
	return decodeOfferReference(data)
}

// decodeOfferReference is the strict decoder the fast path is held to.
func decodeOfferReference(data []byte) (Offer, error) {
	var w offerWire
	if err := decode(data, offerEnvLimits, &w, &w.V); err != nil {
		return Offer{}, err
	}
	o := Offer{V: w.V, RunID: w.RunID, AttemptID: w.AttemptID, AttemptNumber: w.AttemptNumber,
		WorkerID: w.WorkerID, SessionID: w.SessionID, Generation: w.Generation, OfferID: w.OfferID,
		LeaseGeneration: w.LeaseGeneration, LeaseVersion: w.LeaseVersion,
		LeaseExpiresAtMs: w.LeaseExpiresAtMs, TaskID: w.TaskID, TaskRevision: w.TaskRevision,
		ScheduledForMs: w.ScheduledForMs, ExecutionRevisionID: w.ExecutionRevisionID,
		TimeoutMs: w.TimeoutMs, ScriptTree: w.ScriptTree, ProjectID: w.ProjectID}
	if len(w.Env) > 0 {
		o.Env = w.Env
	}
	var err error
	if o.LeaseTokenDigest, err = parseDigest("leaseTokenDigest", w.LeaseTokenDigest); err != nil {
		return Offer{}, err
	}
	if o.ExecutionRevisionDigest, err = parseDigest("executionRevisionDigest", w.ExecutionRevisionDigest); err != nil {
		return Offer{}, err
	}
	if o.SpecDigest, err = parseDigest("specDigest", w.SpecDigest); err != nil {
		return Offer{}, err
	}
	if len(w.Spec) == 0 || string(w.Spec) == "null" {
		return Offer{}, errs.Invalidf("spec", "is required")
	}
	if o.Spec, err = spec.Decode(w.Spec); err != nil {
		return Offer{}, errs.Prefix("spec", err)
	}
	if err := o.Validate(); err != nil {
		return Offer{}, err
	}
	return o, nil
}

// Validate checks every field, that SpecDigest is the digest of Spec and
// that the attempt fits the spec's retry and timeout bounds.
func (o Offer) Validate() error {
	if err := o.validateFields(); err != nil {
		return err
	}
	sum, err := o.Spec.Digest() // validates the spec
	if err != nil {
		return errs.Prefix("spec", err)
	}
	return o.validateAgainstSpec(sum)
}

// validateFields checks what Validate checks before the spec.
func (o Offer) validateFields() error {
	if err := checkVersion(o.V); err != nil {
		return err
	}
	for _, id := range []struct{ field, value string }{
		{"runId", o.RunID}, {"attemptId", o.AttemptID}, {"workerId", o.WorkerID},
		{"taskId", o.TaskID}, {"executionRevisionId", o.ExecutionRevisionID},
	} {
		if err := checkID(id.field, id.value); err != nil {
			return err
		}
	}
	if o.ProjectID != "" { // a UUID: the worker names a directory after it
		if _, err := fence.ParseUUID("projectId", o.ProjectID); err != nil {
			return err
		}
	}
	if err := checkSession(o.SessionID, o.Generation); err != nil {
		return err
	}
	if _, err := fence.ParseUUID("offerId", o.OfferID); err != nil {
		return err
	}
	for _, n := range []struct {
		field string
		value int64
	}{
		{"leaseGeneration", o.LeaseGeneration}, {"leaseVersion", o.LeaseVersion},
		{"leaseExpiresAtMs", o.LeaseExpiresAtMs}, {"taskRevision", o.TaskRevision},
	} {
		if err := checkPositive(n.field, n.value); err != nil {
			return err
		}
	}
	if err := checkRange("scheduledForMs", o.ScheduledForMs, 0, MaxEpochMs); err != nil {
		return err
	}
	for _, d := range []struct {
		field string
		value canonjson.Digest
	}{
		{"leaseTokenDigest", o.LeaseTokenDigest}, {"executionRevisionDigest", o.ExecutionRevisionDigest},
		{"specDigest", o.SpecDigest},
	} {
		if d.value == (canonjson.Digest{}) {
			return errs.Invalidf(d.field, "is required")
		}
	}
	return checkEnv(o.Env)
}

// validateAgainstSpec checks, given the digest of the valid o.Spec, what
// Validate checks after the spec.
func (o Offer) validateAgainstSpec(sum canonjson.Digest) error {
	if subtle.ConstantTimeCompare(sum[:], o.SpecDigest[:]) != 1 {
		return errs.Invalidf("specDigest", "does not match the spec")
	}
	if err := checkScriptTree(o.Spec, o.ScriptTree); err != nil {
		return err
	}
	maxAttempt := min(int64(o.Spec.Retry.MaxAttempts), MaxAttemptNumber)
	if err := checkRange("attemptNumber", int64(o.AttemptNumber), 1, maxAttempt); err != nil {
		return err
	}
	return checkRange("timeoutMs", o.TimeoutMs, 1, o.Spec.TimeoutMs)
}

// Encode validates o (with v set) and returns its JSON.
func (o Offer) Encode() ([]byte, error) {
	o.V = Version
	if err := o.Validate(); err != nil {
		return nil, err
	}
	return encode(o, MaxOfferBodyBytes, "offer")
}

// Fence returns the LeaseFence the offer grants.
func (o Offer) Fence() fence.LeaseFence {
	return fence.LeaseFence{
		RunID: o.RunID, AttemptID: o.AttemptID, WorkerID: o.WorkerID,
		SessionID: o.SessionID, SessionGeneration: o.Generation,
		LeaseGeneration: o.LeaseGeneration, LeaseVersion: o.LeaseVersion,
		ExpiresAtMs: o.LeaseExpiresAtMs, TokenDigest: o.LeaseTokenDigest, OfferID: o.OfferID,
	}
}

// Lease returns the LeaseRef a worker sends with every request about this
// offer's attempt; token is the worker's own lease token for the offer.
func (o Offer) Lease(token fence.LeaseToken) LeaseRef {
	return LeaseRef{SessionID: o.SessionID, Generation: o.Generation, RunID: o.RunID,
		AttemptID: o.AttemptID, OfferID: o.OfferID, LeaseGeneration: o.LeaseGeneration,
		LeaseToken: token}
}

// AnswersPull reports, for the worker, whether o is the answer to its own
// request p: same session and generation, same offer id, and bound to the
// digest of p's token (compared in constant time). Anything else is a
// conflict the worker must not execute.
func (o Offer) AnswersPull(p OfferPullRequest) error {
	switch {
	case o.SessionID != p.SessionID:
		return errs.E(errs.Conflict, "sessionId", "offer belongs to another session")
	case o.Generation != p.Generation:
		return errs.E(errs.Conflict, "generation", "offer belongs to another session generation")
	case o.OfferID != p.OfferID:
		return errs.E(errs.Conflict, "offerId", "offer answers another offer id")
	}
	want := p.LeaseToken.Digest()
	if subtle.ConstantTimeCompare(want[:], o.LeaseTokenDigest[:]) != 1 {
		return errs.E(errs.Conflict, "leaseTokenDigest", "offer is bound to another lease token")
	}
	return nil
}
