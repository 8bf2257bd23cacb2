package controlplane

import (
	"context"
	"encoding/json"
)

// Actor is who performs a mutation, for its audit line.
type Actor struct {
	Kind       string // admin | worker | system
	ID         string // the API token id, "cli" for the local ql3-control, a worker id
	RemoteAddr string // the peer's IP (no port), when over the network
}

type actorKey struct{}

// WithActor returns ctx carrying the actor of the mutations made with it.
func WithActor(ctx context.Context, a Actor) context.Context {
	return context.WithValue(ctx, actorKey{}, a)
}

// ActorOf is ctx's actor; without one the mutation is the system's own.
func ActorOf(ctx context.Context) Actor {
	if a, ok := ctx.Value(actorKey{}).(Actor); ok && a.Kind != "" {
		return a
	}
	return Actor{Kind: "system"}
}

// AuditRecord is one audit line as the admin API shows it.
type AuditRecord struct {
	ID          string          `json:"id"`
	AtMs        int64           `json:"atMs"`
	ActorKind   string          `json:"actorKind"`
	ActorID     string          `json:"actorId,omitempty"`
	Action      string          `json:"action"`
	SubjectKind string          `json:"subjectKind,omitempty"`
	SubjectID   string          `json:"subjectId,omitempty"`
	Outcome     string          `json:"outcome"`
	RemoteAddr  string          `json:"remoteAddr,omitempty"`
	Details     json.RawMessage `json:"details"`
}

// AuditFilter selects audit lines, newest first. Empty fields match all.
type AuditFilter struct {
	Action    string
	SubjectID string
	ActorID   string
	Page      ListRequest
}
