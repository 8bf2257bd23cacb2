package controlplane

import "encoding/json"

// Why a Run is not running yet (WaitReason.Reason).
const (
	WaitNoLiveSession  = "no_live_session"     // no online session with an unexpired heartbeat lease
	WaitPlacement      = "placement_mismatch"  // live sessions exist, none satisfies the placement
	WaitNoFreeCapacity = "no_free_capacity"    // eligible sessions exist, all at capacity
	WaitForPull        = "waiting_for_pull"    // an eligible session has room: its next pull takes it (FIFO by priority)
	WaitRetryBackoff   = "retry_backoff"       // retry_wait until NotBeforeMs
	WaitConcurrency    = "held_by_concurrency" // created: an older Run of the task (replace) has not ended
	WaitCancelling     = "cancelling"          // a cancel intent is being converged
)

// WaitReason explains a Run that has not started.
type WaitReason struct {
	Reason       string `json:"reason"`
	LiveSessions int    `json:"liveSessions"`
	Eligible     int    `json:"eligibleSessions"`
	FreeSlots    int    `json:"freeSlots"`
	// Mismatch counts live sessions by the first placement requirement
	// they fail (os, arch, executor, runtime_missing, runtime_version,
	// label, feature, capability_invalid; worker: a session of another
	// worker than the one the Run is pinned to, ADR 0062).
	Mismatch    map[string]int `json:"placementMismatch,omitempty"`
	NotBeforeMs int64          `json:"notBeforeMs,omitempty"`
	// Truncated: more live sessions than were looked at.
	Truncated bool `json:"truncated,omitempty"`
}

// LogRange is one read of an attempt's stream.
type LogRange struct {
	Attempt    int
	Stream     string
	Offset     int64
	NextOffset int64
	Data       []byte
	// Size is the stream's length as the worker delivered it; Stored ≤ Size
	// is what the cap kept.
	Size, Stored int64
	Truncated    bool
	// Complete: the stream can no longer grow (eof recorded, or the
	// Attempt ended).
	Complete bool
}

// WorkerSession is the live (latest) session of a worker as an operator
// sees it.
type WorkerSession struct {
	SessionID  string `json:"sessionId"`
	Generation int64  `json:"generation"`
	Status     string `json:"status"`
	// Expired is derived: the heartbeat lease passed by database time.
	Expired          bool   `json:"expired"`
	Capacity         int    `json:"capacity"`
	LiveLeases       int    `json:"liveLeases"`
	CredentialID     string `json:"credentialId,omitempty"`
	CredentialSeenMs int64  `json:"credentialObservedAtMs,omitempty"`
	AgentVersion     string `json:"agentVersion,omitempty"`
	HeartbeatAtMs    int64  `json:"heartbeatAtMs"`
	LeaseExpiresAtMs int64  `json:"leaseExpiresAtMs"`
	OpenedAtMs       int64  `json:"openedAtMs"`
	ClosedAtMs       int64  `json:"closedAtMs,omitempty"`
	// Capabilities is the stored canonical JSON (≤ 16 KiB by the schema).
	Capabilities json.RawMessage `json:"capabilities"`
}

// CancelOutcome says what a cancel request did.
type CancelOutcome string

const (
	// CancelAccepted: this request set the intent. A Run that was not
	// executing (created, queued, retry_wait, lost) is cancelled at once; a
	// dispatching or running one stops when its worker gets cancel at the
	// next heartbeat (or, unstarted, when the sweeper releases its lease).
	CancelAccepted CancelOutcome = "accepted"
	// CancelAlreadyRequested: an intent was already set; nothing changed.
	CancelAlreadyRequested CancelOutcome = "already_requested"
	// CancelAlreadyFinished: the Run had ended; nothing changed.
	CancelAlreadyFinished CancelOutcome = "already_finished"
)

// RunNowInput is a manual run request.
type RunNowInput struct {
	TaskID string
	// IdempotencyKey is the client's key (1..128 printable ASCII): the same
	// key with the same request returns the same Run; with another request
	// it is a conflict.
	IdempotencyKey string
	// RerunOf, when set, names the Run this one re-runs (same project).
	RerunOf string
	Actor   string
}

// RunNowResult is the admitted (or earlier) Run.
type RunNowResult struct {
	RunID   string
	Created bool
	// Status as written: queued, created (held by concurrency replace) or
	// cancelled (skipped by concurrency forbid).
	Status string
}
