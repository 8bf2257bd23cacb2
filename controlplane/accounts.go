package controlplane

import (
	"context"

	"github.com/ql3/ql3/core/signin"
)

// Accounts on the control plane (ADR 0060, the edge's ADR 0049): a
// username, an argon2id hash (core/password), an optional TOTP second
// factor (core/totp) and the lockout state (core/signin).

// MaxAccounts bounds the accounts; MaxSignInLog the sign-in lines kept.
const (
	MaxAccounts  = 64
	MaxSignInLog = 10000
)

// Sign-in outcomes (the sign-in log's outcome column).
const (
	SignInOK          = "ok"
	SignInBadPassword = "bad_password"
	SignInBadTOTP     = "bad_totp"
	SignInLocked      = "locked"
	SignInUnknownUser = "unknown_user"
)

// Account is a stored account. PasswordHash and TOTPSecret never leave
// the server (AccountView is what the API shows).
type Account struct {
	Username        string
	PasswordHash    string
	TOTPSecret      string // base32; "" when the second factor is off
	TOTPLastCounter uint64
	Lock            signin.State
	CreatedAtMs     int64
}

// SignIn is one line of the sign-in log: never a password or a code.
type SignIn struct {
	Seq      int64  `json:"seq"`
	AtMs     int64  `json:"atMs"`
	Username string `json:"username"`
	Outcome  string `json:"outcome"`
	Remote   string `json:"remote"`
}

// Accounts stores accounts and the sign-in log. Mutations are audited;
// times are the caller's (the API's clock).
type Accounts interface {
	CreateAccount(ctx context.Context, username, hash string, nowMs int64) (Account, error)
	DeleteAccount(ctx context.Context, username string) error
	GetAccount(ctx context.Context, username string) (Account, error)
	ListAccounts(ctx context.Context) ([]Account, error)
	// SetPassword replaces the hash and lifts a lock.
	SetPassword(ctx context.Context, username, hash string) error
	// SetTOTP turns the second factor on (a secret) or off ("").
	SetTOTP(ctx context.Context, username, secret string) error
	// RecordSignIn appends ev to the log and, when the account exists,
	// stores its lock state and (when counter > 0) the TOTP step used.
	RecordSignIn(ctx context.Context, ev SignIn, lock signin.State, counter uint64) error
	ListSignIns(ctx context.Context, beforeSeq int64, limit int) ([]SignIn, error)
}
