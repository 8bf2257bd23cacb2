// Package accountwire holds the JSON shapes of the account routes
// (/api/v1/users…, /api/v1/session/password), shared by the edge (ADR 0049)
// and the control plane (ADR 0060) so one panel page serves both.
package accountwire

// UserView is an account as listed: never its hash or TOTP secret.
type UserView struct {
	Username      string `json:"username"`
	TOTP          bool   `json:"totp"`
	LockedUntilMs int64  `json:"lockedUntilMs,omitempty"`
	CreatedAtMs   int64  `json:"createdAtMs"`
}

// CreateUserRequest is the body of POST /api/v1/users.
type CreateUserRequest struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

// PasswordRequest is the body of PUT /api/v1/users/{username}/password.
type PasswordRequest struct {
	Password string `json:"password"`
}

// TOTPSetup is a fresh second-factor secret (not stored until confirmed).
type TOTPSetup struct {
	Secret string `json:"secret"`
	URI    string `json:"uri"`
}

// TOTPConfirm turns the second factor on: the secret from setup and a
// current code from the authenticator app.
type TOTPConfirm struct {
	Secret string `json:"secret"`
	Code   string `json:"code"`
}

// PasswordSignIn is the body of POST /api/v1/session/password.
type PasswordSignIn struct {
	Username string `json:"username"`
	Password string `json:"password"`
	Code     string `json:"code,omitempty"`
}
