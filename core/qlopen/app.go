package qlopen

import (
	"crypto/rand"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/names"
)

// Sizes of an app's credentials (QingLong's): a 12-character client_id
// and a 24-character client_secret of letters and digits.
const (
	ClientIDLength     = 12
	ClientSecretLength = 24
)

const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// RandomAlnum returns n random letters and digits.
func RandomAlnum(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	for i := range b {
		b[i] = alnum[int(b[i])%len(alnum)] // 256 % 62: a bias of < 2 %, over 24 characters harmless
	}
	return string(b), nil
}

// NewClient returns a fresh client_id and client_secret.
func NewClient() (id, secret string, err error) {
	if id, err = RandomAlnum(ClientIDLength); err != nil {
		return "", "", err
	}
	secret, err = RandomAlnum(ClientSecretLength)
	return id, secret, err
}

// CheckAppName checks an app's name: a readable name, not "system"
// (QingLong's own app).
func CheckAppName(field, name string) (string, error) {
	n, err := names.CheckDisplay(field, name)
	if err == nil && n == "system" {
		err = errs.Invalidf(field, "system is reserved (QingLong's own app)")
	}
	return n, err
}
