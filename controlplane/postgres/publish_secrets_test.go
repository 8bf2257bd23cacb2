package postgres

import (
	"crypto/sha256"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/ql3/ql3/core/errs"
)

func TestAPITokenRoundTrip(t *testing.T) {
	token, id, digest, err := NewAPIToken()
	if err != nil {
		t.Fatal(err)
	}
	gotID, gotDigest, err := ParseAPIToken(token)
	if err != nil || gotID != id || gotDigest != digest || digest != sha256.Sum256([]byte(token)) {
		t.Fatalf("ParseAPIToken(new token) = %q, %x, %v; want %q and the SHA-256 of the text", gotID, gotDigest, err, id)
	}
	other, _, _, _ := NewAPIToken()
	if other == token {
		t.Fatal("two tokens are equal")
	}
}

func TestWorkerCredentialRoundTrip(t *testing.T) {
	id := uuid.Must(uuid.NewV7())
	text, digest, err := NewWorkerCredential(id)
	if err != nil {
		t.Fatal(err)
	}
	gotID, gotDigest, err := ParseWorkerCredential(text)
	if err != nil || gotID != id.String() || gotDigest != digest || digest != sha256.Sum256([]byte(text)) {
		t.Fatalf("ParseWorkerCredential = %q, %x, %v", gotID, gotDigest, err)
	}
}

func TestSecretParsersRejectMalformed(t *testing.T) {
	hex64 := strings.Repeat("ab", 32)
	id := "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
	for _, s := range []string{
		"", "ql3c_", "ql3c_0123456789abcdef", "ql3c_0123456789abcdef_" + hex64[:63],
		"ql3c_0123456789ABCDEF_" + hex64, "ql3w_0123456789abcdef_" + hex64, "Bearer ql3c_0123456789abcdef_" + hex64,
		"ql3c_0123456789abcdef_" + hex64 + "_x", "ql3c_0123456789abcdef_" + strings.ToUpper(hex64),
	} {
		if _, _, err := ParseAPIToken(s); errs.Code(err) != errs.Unauthorized {
			t.Errorf("ParseAPIToken(%q) = %v, want unauthorized", s, err)
		}
	}
	for _, s := range []string{
		"", "ql3w_" + id, "ql3w_" + id + "_" + hex64[:62], "ql3w_" + strings.ToUpper(id) + "_" + hex64,
		"ql3w_00000000-0000-0000-0000-000000000000_" + hex64, "ql3c_" + id + "_" + hex64,
		"ql3w_{" + id[1:35] + "}_" + hex64, "ql3w_" + id + "_" + hex64 + "_",
	} {
		if _, _, err := ParseWorkerCredential(s); errs.Code(err) != errs.Unauthorized {
			t.Errorf("ParseWorkerCredential(%q) = %v, want unauthorized", s, err)
		}
	}
	if _, _, err := ParseWorkerCredential("ql3w_" + id + "_" + hex64); err != nil {
		t.Errorf("well-formed credential refused: %v", err)
	}
}

// The parsers see attacker-controlled header and file contents: they must
// never panic, never echo the input in an error, and accept only texts that
// re-render identically (one spelling per credential).
func FuzzParseAPIToken(f *testing.F) {
	f.Add("ql3c_0123456789abcdef_" + strings.Repeat("0f", 32))
	f.Add("ql3c__")
	f.Add("ql3w_0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b_" + strings.Repeat("0f", 32))
	f.Fuzz(func(t *testing.T, s string) {
		id, digest, err := ParseAPIToken(s)
		if err != nil {
			if strings.Contains(err.Error(), s) && len(s) > 8 {
				t.Fatalf("error echoes the input: %v", err)
			}
			return
		}
		if APITokenPrefix+id+"_"+s[len(APITokenPrefix)+len(id)+1:] != s || digest != sha256.Sum256([]byte(s)) || len(s) != 5+16+1+64 {
			t.Fatalf("accepted %q as id %q", s, id)
		}
	})
}

func FuzzParseWorkerCredential(f *testing.F) {
	f.Add("ql3w_0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b_" + strings.Repeat("0f", 32))
	f.Add("ql3w_0190A1B2-c3d4-7e5f-8a9b-0c1d2e3f4a5b_" + strings.Repeat("0f", 32))
	f.Add("ql3w___")
	f.Fuzz(func(t *testing.T, s string) {
		id, digest, err := ParseWorkerCredential(s)
		if err != nil {
			if strings.Contains(err.Error(), s) && len(s) > 8 {
				t.Fatalf("error echoes the input: %v", err)
			}
			return
		}
		u, perr := uuid.Parse(id)
		if perr != nil || u.String() != id || s[:len(WorkerCredentialPrefix)+36] != WorkerCredentialPrefix+id ||
			digest != sha256.Sum256([]byte(s)) || len(s) != 5+36+1+64 {
			t.Fatalf("accepted %q as id %q", s, id)
		}
	})
}
