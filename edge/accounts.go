package edge

import (
	"context"

	"github.com/ql3/ql3/core/access"
	"github.com/ql3/ql3/core/env"
	"github.com/ql3/ql3/core/signin"
)

// Bounds of the access tables: every list answers in one bounded page.
const (
	MaxOpenApps         = 64
	MaxOpenTokensPerApp = 5 // QingLong keeps five live tokens per app
	MaxAPITokens        = 256
	MaxUsers            = 64
	MaxSignInPage       = 200
)

// OpenApp is a QingLong-compatible Open API client (ADR 0048). Its secret
// is stored only as a SHA-256 digest and shown once, at creation.
type OpenApp struct {
	ID          int64
	Name        string
	Scopes      []string // access.AppScopes
	ClientID    string
	CreatedAtMs int64
}

// Kinds of the stable numeric ids the Open API shows for string ids.
const (
	OpenKindTask = "task"
	OpenKindEnv  = "env"
)

// APIToken is a scoped native API token (ADR 0049), stored as a digest.
type APIToken struct {
	ID          string
	Name        string
	Scopes      []access.Scope
	CreatedAtMs int64
	ExpiresAtMs int64 // 0: never
	RevokedAtMs int64 // 0: live
}

// Live reports whether the token authorizes requests at nowMs.
func (t APIToken) Live(nowMs int64) bool {
	return t.RevokedAtMs == 0 && (t.ExpiresAtMs == 0 || nowMs < t.ExpiresAtMs)
}

// User is a panel account: username, argon2id password hash, optional
// TOTP secret (base32; "" when the second factor is off) and its lockout
// state.
type User struct {
	Username        string
	PasswordHash    string
	TOTPSecret      string
	TOTPLastCounter uint64 // the last accepted TOTP step: a code is good once
	Lock            signin.State
	CreatedAtMs     int64
	UpdatedAtMs     int64
}

// Sign-in outcomes recorded in the sign-in log.
const (
	SignInOK          = "ok"
	SignInBadPassword = "bad_password"
	SignInBadTOTP     = "bad_totp"
	SignInLocked      = "locked"
	SignInUnknownUser = "unknown_user"
)

// SignInEvent is one line of the sign-in log. Never a password or a code.
type SignInEvent struct {
	Seq      int64
	AtMs     int64
	Username string
	Outcome  string
	Remote   string // the peer's address without port
}

// AccessStore keeps Open API apps and tokens, native API tokens, accounts
// and the sign-in log. Digests are SHA-256 of the secret text.
type AccessStore interface {
	CreateOpenApp(ctx context.Context, name string, scopes []string, clientID string, secretDigest []byte) (OpenApp, error)
	ListOpenApps(ctx context.Context) ([]OpenApp, error)
	DeleteOpenApp(ctx context.Context, id int64) error
	// OpenAppByClient returns the app with clientID and its secret digest.
	OpenAppByClient(ctx context.Context, clientID string) (OpenApp, []byte, error)
	// IssueOpenToken stores a token digest for app, dropping expired ones
	// and, beyond MaxOpenTokensPerApp live tokens, the oldest.
	IssueOpenToken(ctx context.Context, appID int64, digest []byte, nowMs, expiresAtMs int64) error
	// OpenTokenApp returns the app a live token belongs to
	// (errs.Unauthorized when unknown or expired at nowMs).
	OpenTokenApp(ctx context.Context, digest []byte, nowMs int64) (OpenApp, error)
	// OpenNums returns the numeric id of each ref of kind, allocating new
	// ones; OpenRefs maps numbers back (unknown numbers are left out).
	OpenNums(ctx context.Context, kind string, refs []string) (map[string]int64, error)
	OpenRefs(ctx context.Context, kind string, nums []int64) (map[int64]string, error)
	// OpenReadEnvs returns the env entries (with values) that match, in
	// list order, and writes one audit line naming the app and the
	// entries in the same transaction.
	OpenReadEnvs(ctx context.Context, app string, match func(env.Entry) bool) ([]env.Entry, error)

	CreateAPIToken(ctx context.Context, t APIToken, digest []byte) (APIToken, error)
	ListAPITokens(ctx context.Context) ([]APIToken, error)
	RevokeAPIToken(ctx context.Context, id string, nowMs int64) error
	// APITokenByDigest returns the token (live or not) with digest.
	APITokenByDigest(ctx context.Context, digest []byte) (APIToken, error)

	CreateUser(ctx context.Context, username, passwordHash string) (User, error)
	GetUser(ctx context.Context, username string) (User, error)
	ListUsers(ctx context.Context) ([]User, error)
	DeleteUser(ctx context.Context, username string) error
	SetPassword(ctx context.Context, username, passwordHash string) error
	// SetTOTP sets (or with "" clears) the second factor's secret.
	SetTOTP(ctx context.Context, username, secret string) error
	// RecordSignIn stores the account's new lockout state (and the
	// accepted TOTP step, when not 0) with a sign-in log line, in one
	// transaction. An unknown username only logs.
	RecordSignIn(ctx context.Context, ev SignInEvent, lock signin.State, totpCounter uint64) error
	// ListSignIns returns log lines newest first, below beforeSeq (0: from
	// the newest).
	ListSignIns(ctx context.Context, beforeSeq int64, limit int) ([]SignInEvent, error)
}
