package controlplane

import "context"

// QingLong's Open API on the control plane (ADR 0057): apps belong to one
// project; their tokens reach that project's crons, env entries and
// scripts only.

// OpenApp is an Open API client. The secret is never part of it: it is
// shown once at creation and stored as its SHA-256.
type OpenApp struct {
	ID          string   `json:"id"`
	ProjectID   string   `json:"projectId"`
	Name        string   `json:"name"`
	ClientID    string   `json:"clientId"`
	Scopes      []string `json:"scopes"`
	CreatedAtMs int64    `json:"createdAtMs"`
}

// OpenAppInput creates an app.
type OpenAppInput struct {
	ProjectID string
	Name      string
	Scopes    []string // access.AppScopes
}

// Kinds of numbered items.
const (
	OpenKindTask = "task"
	OpenKindEnv  = "env"
)

// Limits of the Open API's store.
const (
	MaxOpenApps           = 64 // per project
	MaxOpenTokensPerApp   = 5  // QingLong's rule: the oldest goes
	OpenClientIDLength    = 12
	OpenClientSecretBytes = 12 // 24 hex characters
)

// OpenApps stores apps, their tokens and QingLong's numeric ids (admin
// role). Times are the caller's clock (epoch ms), so expiry is testable.
type OpenApps interface {
	// CreateOpenApp makes an app and returns it with its client secret.
	CreateOpenApp(ctx context.Context, in OpenAppInput) (OpenApp, string, error)
	ListOpenApps(ctx context.Context, projectID string) ([]OpenApp, error)
	DeleteOpenApp(ctx context.Context, id string) error
	// OpenAppByClient returns the app of a client id and its secret's
	// digest (NotFound when none).
	OpenAppByClient(ctx context.Context, clientID string) (OpenApp, []byte, error)
	// IssueOpenToken stores a token's digest for an app, dropping the
	// oldest beyond MaxOpenTokensPerApp.
	IssueOpenToken(ctx context.Context, appID string, digest []byte, nowMs, expiresAtMs int64) error
	// OpenTokenApp returns the app of a live token (Unauthorized when the
	// token is unknown or expired at nowMs).
	OpenTokenApp(ctx context.Context, digest []byte, nowMs int64) (OpenApp, error)
	// OpenNums numbers refs of a kind in a project (new numbers for the
	// ones not seen before).
	OpenNums(ctx context.Context, projectID, kind string, refs []string) (map[string]int64, error)
	// OpenRefs resolves numbers of a kind in a project; numbers of other
	// projects or kinds are left out.
	OpenRefs(ctx context.Context, projectID, kind string, nums []int64) (map[int64]string, error)
}
