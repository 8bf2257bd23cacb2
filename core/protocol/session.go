package protocol

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/placement"
)

// SessionStatus is a worker session's stored status. "expired" is derived
// from the heartbeat lease and the database clock; it is never sent.
type SessionStatus string

// Session statuses: online → draining → offline.
const (
	SessionOnline   SessionStatus = "online"
	SessionDraining SessionStatus = "draining"
	SessionOffline  SessionStatus = "offline"
)

func (s SessionStatus) valid() bool {
	return s == SessionOnline || s == SessionDraining || s == SessionOffline
}

// SessionOpen registers a new session (PathSessionOpen). It carries no
// worker id: the ingress takes identity from the client certificate.
type SessionOpen struct {
	V            int                    `json:"v"`
	AgentVersion string                 `json:"agentVersion"` // e.g. "ql3-worker/0.3.1 linux/mipsle"
	CredentialID string                 `json:"credentialId"` // id part of the credential the worker read; never the secret
	Capacity     int                    `json:"capacity"`     // concurrent attempts, 1..MaxCapacity
	Capabilities placement.Capabilities `json:"capabilities"`
}

type sessionOpenWire struct {
	V            int             `json:"v"`
	AgentVersion string          `json:"agentVersion"`
	CredentialID string          `json:"credentialId"`
	Capacity     int             `json:"capacity"`
	Capabilities json.RawMessage `json:"capabilities"`
}

var sessionOpenLimits = limits(MaxSessionOpenSize, 3, placement.MaxRuntimes, placement.MaxConstraintLen)

// DecodeSessionOpen strictly decodes and validates a SessionOpen; the
// capabilities come back normalized.
func DecodeSessionOpen(data []byte) (SessionOpen, error) {
	var w sessionOpenWire
	if err := decode(data, sessionOpenLimits, &w, &w.V); err != nil {
		return SessionOpen{}, err
	}
	if len(w.Capabilities) == 0 || string(w.Capabilities) == "null" {
		return SessionOpen{}, errs.Invalidf("capabilities", "is required")
	}
	caps, err := placement.DecodeCapabilities(w.Capabilities)
	if err != nil {
		return SessionOpen{}, errs.Prefix("capabilities", err)
	}
	if caps.System() {
		// Reserved for the control plane's own executors (ADR 0061): a
		// worker over the wire never claims a system Run.
		return SessionOpen{}, errs.Invalidf("capabilities.executors", "names starting with %q are reserved for the control plane",
			placement.SystemExecutorPrefix)
	}
	s := SessionOpen{V: w.V, AgentVersion: w.AgentVersion, CredentialID: w.CredentialID,
		Capacity: w.Capacity, Capabilities: caps}
	if err := s.Validate(); err != nil {
		return SessionOpen{}, err
	}
	return s, nil
}

// Validate checks every field.
func (s SessionOpen) Validate() error {
	if err := checkVersion(s.V); err != nil {
		return err
	}
	if err := checkPrintable("agentVersion", s.AgentVersion, MaxAgentVersionLen); err != nil {
		return err
	}
	if err := checkCredentialID(s.CredentialID); err != nil {
		return err
	}
	if err := checkRange("capacity", int64(s.Capacity), 1, MaxCapacity); err != nil {
		return err
	}
	return errs.Prefix("capabilities", s.Capabilities.Validate())
}

// Encode validates s (with v set) and returns its JSON, capabilities
// normalized.
func (s SessionOpen) Encode() ([]byte, error) {
	s.V = Version
	s.Capabilities = s.Capabilities.Normalize()
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return encode(s, MaxSessionOpenSize, "session open")
}

// checkCredentialID refuses anything that looks like a whole credential
// (ql3w_<id>_<secret>): only the id may travel in a body.
func checkCredentialID(id string) error {
	if err := checkID("credentialId", id); err != nil {
		return err
	}
	if strings.HasPrefix(id, "ql3w_") || strings.HasPrefix(id, "ql3c_") {
		return errs.Invalidf("credentialId", "must be the credential's id, never the credential itself")
	}
	return nil
}

// SessionHeartbeat renews a session's heartbeat lease
// (PathSessionHeartbeat) and the leases of the attempts it still runs.
type SessionHeartbeat struct {
	V                  int              `json:"v"`
	SessionID          string           `json:"sessionId"`
	Generation         int64            `json:"generation"`
	CapabilitiesDigest canonjson.Digest `json:"capabilitiesDigest"` // digest of the capabilities the worker holds now
	CredentialID       string           `json:"credentialId"`       // id of the credential the worker read for this request
	// RunningAttemptIDs lists the attempts (a RunLease is keyed by its
	// attempt) this session is executing; their leases are extended and
	// any control for them is returned in SessionState.Controls.
	RunningAttemptIDs []string `json:"runningAttemptIds,omitempty"`
}

type sessionHeartbeatWire struct {
	V                  int      `json:"v"`
	SessionID          string   `json:"sessionId"`
	Generation         int64    `json:"generation"`
	CapabilitiesDigest string   `json:"capabilitiesDigest"`
	CredentialID       string   `json:"credentialId"`
	RunningAttemptIDs  []string `json:"runningAttemptIds"`
}

var heartbeatLimits = limits(MaxHeartbeatBytes, 2, 32+MaxCapacity, 256)

// DecodeSessionHeartbeat strictly decodes and validates a heartbeat.
func DecodeSessionHeartbeat(data []byte) (SessionHeartbeat, error) {
	var w sessionHeartbeatWire
	if err := decode(data, heartbeatLimits, &w, &w.V); err != nil {
		return SessionHeartbeat{}, err
	}
	d, err := parseDigest("capabilitiesDigest", w.CapabilitiesDigest)
	if err != nil {
		return SessionHeartbeat{}, err
	}
	h := SessionHeartbeat{V: w.V, SessionID: w.SessionID, Generation: w.Generation,
		CapabilitiesDigest: d, CredentialID: w.CredentialID, RunningAttemptIDs: w.RunningAttemptIDs}
	if len(h.RunningAttemptIDs) == 0 {
		h.RunningAttemptIDs = nil
	}
	if err := h.Validate(); err != nil {
		return SessionHeartbeat{}, err
	}
	return h, nil
}

// Validate checks every field; attempt ids must be unique.
func (h SessionHeartbeat) Validate() error {
	if err := checkVersion(h.V); err != nil {
		return err
	}
	if err := checkSession(h.SessionID, h.Generation); err != nil {
		return err
	}
	if h.CapabilitiesDigest == (canonjson.Digest{}) {
		return errs.Invalidf("capabilitiesDigest", "is required")
	}
	if err := checkCredentialID(h.CredentialID); err != nil {
		return err
	}
	return checkIDList("runningAttemptIds", h.RunningAttemptIDs, MaxCapacity)
}

// Encode validates h (with v set) and returns its JSON.
func (h SessionHeartbeat) Encode() ([]byte, error) {
	h.V = Version
	if err := h.Validate(); err != nil {
		return nil, err
	}
	return encode(h, MaxHeartbeatBytes, "session heartbeat")
}

// SessionTransition asks to move a session to draining or offline
// (PathSessionTransition). A worker treats anything but a SessionState
// with the requested status as "not done yet" and retries.
type SessionTransition struct {
	V          int           `json:"v"`
	SessionID  string        `json:"sessionId"`
	Generation int64         `json:"generation"`
	To         SessionStatus `json:"to"` // draining | offline
}

// DecodeSessionTransition strictly decodes and validates a transition.
func DecodeSessionTransition(data []byte) (SessionTransition, error) {
	var t SessionTransition
	if err := decode(data, flat, &t, &t.V); err != nil {
		return SessionTransition{}, err
	}
	if err := t.Validate(); err != nil {
		return SessionTransition{}, err
	}
	return t, nil
}

// Validate checks every field.
func (t SessionTransition) Validate() error {
	if err := checkVersion(t.V); err != nil {
		return err
	}
	if err := checkSession(t.SessionID, t.Generation); err != nil {
		return err
	}
	if t.To != SessionDraining && t.To != SessionOffline {
		return errs.Invalidf("to", "must be draining or offline")
	}
	return nil
}

// Encode validates t (with v set) and returns its JSON.
func (t SessionTransition) Encode() ([]byte, error) {
	t.V = Version
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return encode(t, DefaultBodyBytes, "session transition")
}

// SessionState answers SessionOpen, SessionHeartbeat and
// SessionTransition: the session as the authority sees it, with the
// controls for the attempts the heartbeat listed. Times are the
// authority's clock; a worker uses them only relative to each other.
type SessionState struct {
	V                   int           `json:"v"`
	SessionID           string        `json:"sessionId"`
	Generation          int64         `json:"generation"`
	Status              SessionStatus `json:"status"`
	HeartbeatIntervalMs int64         `json:"heartbeatIntervalMs"`
	LeaseExpiresAtMs    int64         `json:"leaseExpiresAtMs"`
	// Replaced: this session (SessionID, Generation) was replaced by a newer
	// generation of the same worker, opened by a later SessionOpen. Status
	// is then offline and every control is a revoke. The worker stops
	// pulling, settles what it runs and opens a new session itself.
	Replaced bool           `json:"replaced,omitempty"`
	Controls []LeaseControl `json:"controls,omitempty"`
}

var sessionStateLimits = limits(MaxSessionState, 3, 32+MaxCapacity, 256)

// DecodeSessionState strictly decodes and validates a SessionState.
func DecodeSessionState(data []byte) (SessionState, error) {
	var s SessionState
	if err := decode(data, sessionStateLimits, &s, &s.V); err != nil {
		return SessionState{}, err
	}
	if len(s.Controls) == 0 {
		s.Controls = nil
	}
	if err := s.Validate(); err != nil {
		return SessionState{}, err
	}
	return s, nil
}

// Validate checks every field, including each control.
func (s SessionState) Validate() error {
	if err := checkVersion(s.V); err != nil {
		return err
	}
	if err := checkSession(s.SessionID, s.Generation); err != nil {
		return err
	}
	if !s.Status.valid() {
		return errs.Invalidf("status", "must be online, draining or offline")
	}
	if err := checkRange("heartbeatIntervalMs", s.HeartbeatIntervalMs, MinHeartbeatMs, MaxHeartbeatMs); err != nil {
		return err
	}
	if err := checkPositive("leaseExpiresAtMs", s.LeaseExpiresAtMs); err != nil {
		return err
	}
	if s.Replaced && s.Status != SessionOffline {
		return errs.Invalidf("replaced", "a replaced session is offline, got status %s", s.Status)
	}
	if len(s.Controls) > MaxCapacity {
		return errs.TooLargef("controls", "has %d entries, limit is %d", len(s.Controls), MaxCapacity)
	}
	seen := make(map[string]struct{}, len(s.Controls))
	for i, c := range s.Controls {
		field := "controls[" + strconv.Itoa(i) + "]"
		if err := c.Validate(); err != nil {
			return errs.Prefix(field, err)
		}
		if _, dup := seen[c.AttemptID]; dup {
			return errs.Invalidf(field+".attemptId", "duplicate attempt")
		}
		// An offline session holds no lease: everything it still runs is
		// revoked.
		if s.Status == SessionOffline && c.Action != LeaseRevoke {
			return errs.Invalidf(field+".action", "an offline session's controls are revoke, got %s", c.Action)
		}
		seen[c.AttemptID] = struct{}{}
	}
	return nil
}

// Encode validates s (with v set on it and its controls) and returns its
// JSON.
func (s SessionState) Encode() ([]byte, error) {
	s.V = Version
	if len(s.Controls) > 0 {
		controls := make([]LeaseControl, len(s.Controls))
		for i, c := range s.Controls {
			c.V = Version
			controls[i] = c
		}
		s.Controls = controls
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return encode(s, MaxSessionState, "session state")
}

func checkSession(id string, generation int64) error {
	if err := checkID("sessionId", id); err != nil {
		return err
	}
	return checkPositive("generation", generation)
}

func checkIDList(field string, ids []string, max int) error {
	if len(ids) > max {
		return errs.TooLargef(field, "has %d entries, limit is %d", len(ids), max)
	}
	seen := make(map[string]struct{}, len(ids))
	for i, id := range ids {
		f := field + "[" + strconv.Itoa(i) + "]"
		if err := checkID(f, id); err != nil {
			return err
		}
		if _, dup := seen[id]; dup {
			return errs.Invalidf(f, "duplicate id")
		}
		seen[id] = struct{}{}
	}
	return nil
}
