package fence

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/ql3/ql3/core/errs"
)

const now = int64(1_764_400_000_000)

func claim() ClaimFence {
	return ClaimFence{Owner: "control-a:4711", Token: [16]byte{0x7d, 1, 2, 3, 4, 5, 0x40, 7, 0x80, 9, 10, 11, 12, 13, 14, 15},
		Version: 42, ExpiresAtMs: now + 30_000}
}

func TestClaimHolds(t *testing.T) {
	cases := []struct {
		name   string
		mine   func(*ClaimFence)
		row    func(*ClaimFence)
		nowMs  int64
		reason Reason
	}{
		{"identical and live", nil, nil, now, ""},
		{"one ms before expiry", nil, nil, now + 29_999, ""},
		{"expiry instant is expired", nil, nil, now + 30_000, ReasonExpired},
		{"after expiry", nil, nil, now + 60_000, ReasonExpired},
		{"owner drifted", nil, func(c *ClaimFence) { c.Owner = "control-b:1" }, now, ReasonOwner},
		{"claim cleared", nil, func(c *ClaimFence) { *c = ClaimFence{} }, now, ReasonOwner},
		{"token drifted", nil, func(c *ClaimFence) { c.Token[15] ^= 1 }, now, ReasonToken},
		{"version drifted", nil, func(c *ClaimFence) { c.Version++ }, now, ReasonVersion},
		{"expiry moved without version", nil, func(c *ClaimFence) { c.ExpiresAtMs += 1 }, now, ReasonExpiry},
		{"owner checked before token", nil, func(c *ClaimFence) { c.Owner = "x"; c.Token[0] = 0 }, now, ReasonOwner},
		{"token checked before version", nil, func(c *ClaimFence) { c.Token[0] = 0; c.Version = 1 }, now, ReasonToken},
		{"version checked before expired", nil, func(c *ClaimFence) { c.Version = 1 }, now + 60_000, ReasonVersion},
		{"caller holds nothing", func(c *ClaimFence) { *c = ClaimFence{} }, func(c *ClaimFence) { *c = ClaimFence{} }, now, ReasonUnset},
		{"caller has no token", func(c *ClaimFence) { c.Token = [16]byte{} }, func(c *ClaimFence) { c.Token = [16]byte{} }, now, ReasonUnset},
		{"caller has no owner", func(c *ClaimFence) { c.Owner = "" }, func(c *ClaimFence) { c.Owner = "" }, now, ReasonUnset},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mine, row := claim(), claim()
			if c.mine != nil {
				c.mine(&mine)
			}
			if c.row != nil {
				c.row(&row)
			}
			checkDrift(t, "claim", mine.Holds(row, c.nowMs), c.reason)
		})
	}
}

func checkDrift(t *testing.T, fenceName string, err error, want Reason) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatalf("Holds = %v, want nil", err)
		}
		return
	}
	got, ok := ReasonOf(err)
	if !ok || got != want {
		t.Fatalf("Holds = %v (reason %q), want reason %q", err, got, want)
	}
	if errs.Code(err) != errs.Conflict {
		t.Fatalf("errs.Code = %q, want conflict", errs.Code(err))
	}
	var d *DriftError
	if !errors.As(err, &d) || d.Fence != fenceName {
		t.Fatalf("error %v is not a %s DriftError", err, fenceName)
	}
	if !strings.Contains(err.Error(), string(want)) {
		t.Fatalf("message %q does not name the reason", err.Error())
	}
}

func lease() LeaseFence {
	return LeaseFence{
		RunID: "run_1", AttemptID: "att_1", WorkerID: "w-router-1",
		SessionID: "3f2b1c9e-1d2a-4b7c-8e9f-0a1b2c3d4e5f", SessionGeneration: 3,
		LeaseGeneration: 2, LeaseVersion: 5, ExpiresAtMs: now + 45_000,
		TokenDigest: DigestLeaseToken([]byte("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8")),
		OfferID:     "7d3b0c3a-52a5-4f1e-8f8e-0a7c5b9d1e22",
	}
}

func TestLeaseHoldsEveryField(t *testing.T) {
	cases := []struct {
		name   string
		row    func(*LeaseFence)
		nowMs  int64
		reason Reason
	}{
		{"identical and live", nil, now, ""},
		{"one ms before expiry", nil, now + 44_999, ""},
		{"expiry instant is expired", nil, now + 45_000, ReasonExpired},
		{"run", func(l *LeaseFence) { l.RunID = "run_2" }, now, ReasonRun},
		{"attempt", func(l *LeaseFence) { l.AttemptID = "att_2" }, now, ReasonAttempt},
		{"worker", func(l *LeaseFence) { l.WorkerID = "w-other" }, now, ReasonWorker},
		{"session", func(l *LeaseFence) { l.SessionID = "00000000-0000-4000-8000-000000000001" }, now, ReasonSession},
		{"session generation", func(l *LeaseFence) { l.SessionGeneration++ }, now, ReasonSessionGeneration},
		{"offer", func(l *LeaseFence) { l.OfferID = "00000000-0000-4000-8000-000000000002" }, now, ReasonOffer},
		{"token digest first byte", func(l *LeaseFence) { l.TokenDigest[0] ^= 0x80 }, now, ReasonToken},
		{"token digest last byte", func(l *LeaseFence) { l.TokenDigest[31] ^= 1 }, now, ReasonToken},
		{"token digest zero", func(l *LeaseFence) { l.TokenDigest = [32]byte{} }, now, ReasonToken},
		{"lease generation", func(l *LeaseFence) { l.LeaseGeneration++ }, now, ReasonLeaseGeneration},
		{"lease version", func(l *LeaseFence) { l.LeaseVersion++ }, now, ReasonVersion},
		{"expiry moved without version", func(l *LeaseFence) { l.ExpiresAtMs -= 1 }, now, ReasonExpiry},
		{"identity before freshness", func(l *LeaseFence) { l.LeaseVersion++; l.SessionGeneration++ }, now + 90_000, ReasonSessionGeneration},
		{"token before lease generation", func(l *LeaseFence) { l.TokenDigest[3]++; l.LeaseGeneration++ }, now, ReasonToken},
		{"offer before token", func(l *LeaseFence) { l.OfferID = "x"; l.TokenDigest[3]++ }, now, ReasonOffer},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mine, row := lease(), lease()
			if c.row != nil {
				c.row(&row)
			}
			checkDrift(t, "lease", mine.Holds(row, c.nowMs), c.reason)
		})
	}
}

func TestLeaseUnsetCallerNeverHolds(t *testing.T) {
	blank := []func(*LeaseFence){
		func(l *LeaseFence) { l.RunID = "" },
		func(l *LeaseFence) { l.AttemptID = "" },
		func(l *LeaseFence) { l.WorkerID = "" },
		func(l *LeaseFence) { l.SessionID = "" },
		func(l *LeaseFence) { l.OfferID = "" },
		func(l *LeaseFence) { l.TokenDigest = [32]byte{} },
	}
	for i, b := range blank {
		mine := lease()
		b(&mine)
		row := mine // even an identical row must not grant authority to an empty fence
		t.Run(fmt.Sprint(i), func(t *testing.T) { checkDrift(t, "lease", mine.Holds(row, now), ReasonUnset) })
	}
}

func TestExpiredBoundary(t *testing.T) {
	for _, c := range []struct {
		exp, now int64
		want     bool
	}{{100, 99, false}, {100, 100, true}, {100, 101, true}, {0, -1, false}, {0, 0, true}} {
		if got := Expired(c.exp, c.now); got != c.want {
			t.Errorf("Expired(%d, %d) = %v, want %v", c.exp, c.now, got, c.want)
		}
	}
}

const goodToken = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8" // bytes 0..31

func TestLeaseTokenValidate(t *testing.T) {
	cases := []struct {
		name, token string
		ok          bool
	}{
		{"32 bytes", goodToken, true},
		{"64 bytes", goodToken + goodToken[:42] + "w", true},
		{"85 chars", goodToken + goodToken[:42], false}, // no whole byte count
		{"48 bytes", strings.Repeat("AQIDBAUG", 8), true},
		{"31 bytes", goodToken[:41] + "w", false},
		{"empty", "", false},
		{"padding", goodToken + "=", false},
		{"std alphabet", "+" + goodToken[1:], false},
		{"non-canonical trailing bits", goodToken[:42] + "f", false},
		{"all zero", strings.Repeat("A", 43), false},
		{"all ones", "_____________________________________________w"[:43], false},
		{"too long", strings.Repeat("AQID", 22), false},
		{"space", goodToken[:42] + " ", false},
		// found by FuzzLeaseTokenValidate: the base64 decoder skips \r and \n
		{"carriage return", goodToken[:7] + "\r" + goodToken[7:], false},
		{"newline", goodToken + "\n", false},
	}
	for _, c := range cases {
		err := LeaseToken(c.token).Validate()
		if (err == nil) != c.ok {
			t.Errorf("%s: Validate(%d chars) = %v, want ok=%v", c.name, len(c.token), err, c.ok)
		}
		if err != nil {
			if errs.Field(err) != "leaseToken" || errs.Code(err) != errs.Invalid {
				t.Errorf("%s: error %v lacks field/code", c.name, err)
			}
			if c.token != "" && strings.Contains(err.Error(), c.token) {
				t.Errorf("%s: error echoes the token", c.name)
			}
		}
	}
}

func TestDigestLeaseTokenIsDomainSeparated(t *testing.T) {
	got := DigestLeaseToken([]byte(goodToken))
	plain := sha256.Sum256([]byte(goodToken))
	if got == plain {
		t.Fatal("digest equals plain SHA-256: no domain separation")
	}
	want := sha256.Sum256([]byte("ql3/lease-token/v1\x00" + goodToken))
	if got != want {
		t.Fatalf("digest = %x, want sha256(domain||0||token) = %x", got, want)
	}
	if LeaseToken(goodToken).Digest() != got {
		t.Fatal("LeaseToken.Digest differs from DigestLeaseToken")
	}
	if DigestLeaseToken([]byte(goodToken[:42]+"g")) == got {
		t.Fatal("different tokens share a digest")
	}
}

func TestNewLeaseToken(t *testing.T) {
	seq := make([]byte, 32)
	for i := range seq {
		seq[i] = byte(i)
	}
	tok, err := NewLeaseToken(bytes.NewReader(seq))
	if err != nil || string(tok) != goodToken {
		t.Fatalf("NewLeaseToken = %q, %v; want %q", string(tok), err, goodToken)
	}
	if _, err := NewLeaseToken(bytes.NewReader(seq[:31])); errs.Code(err) != errs.Internal {
		t.Fatalf("short random source: %v", err)
	}
	if _, err := NewLeaseToken(bytes.NewReader(make([]byte, 32))); err == nil {
		t.Fatal("an all-zero random source produced a token")
	}
}

func TestLeaseTokenRedacts(t *testing.T) {
	tok := LeaseToken(goodToken)
	type body struct{ LeaseToken LeaseToken }
	for _, s := range []string{fmt.Sprint(tok), fmt.Sprintf("%v %s %+v %#v", tok, tok, body{tok}, body{tok})} {
		if strings.Contains(s, goodToken) {
			t.Errorf("fmt output leaks the token: %s", s)
		}
	}
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("pull", "token", tok)
	slog.New(slog.NewTextHandler(&buf, nil)).Info("pull", "token", tok)
	if strings.Contains(buf.String(), goodToken) || !strings.Contains(buf.String(), "[redacted]") {
		t.Errorf("slog output leaks or lacks redaction: %s", buf.String())
	}
}

func TestUUID(t *testing.T) {
	const s = "7d3b0c3a-52a5-4f1e-8f8e-0a7c5b9d1e22"
	u, err := ParseUUID("offerId", s)
	if err != nil {
		t.Fatal(err)
	}
	if u[0] != 0x7d || u[15] != 0x22 || FormatUUID(u) != s {
		t.Fatalf("ParseUUID/FormatUUID round trip: %x %s", u, FormatUUID(u))
	}
	for _, bad := range []string{"", "7D3B0C3A-52A5-4F1E-8F8E-0A7C5B9D1E22", "{7d3b0c3a-52a5-4f1e-8f8e-0a7c5b9d1e22}",
		"7d3b0c3a52a54f1e8f8e0a7c5b9d1e22", "7d3b0c3a-52a5-4f1e-8f8e-0a7c5b9d1e2g", "7d3b0c3a-52a5-4f1e-8f8e_0a7c5b9d1e22",
		"00000000-0000-0000-0000-000000000000", "7d3b0c3a-52a5-4f1e-8f8e-0a7c5b9d1e22 ", "7d3b0c3a--52a-4f1e-8f8e-0a7c5b9d1e22",
		// found by FuzzParseUUID: a hyphen in the last pair used to index past the end
		"7d3b0c3a-52a5-4f1e-8f8e-0a7c5b9d1e-2", "7d3b0c3a-52a5-4f1e-8f8e-0a7c5b9d1e2-"} {
		if _, err := ParseUUID("offerId", bad); errs.Field(err) != "offerId" || errs.Code(err) != errs.Invalid {
			t.Errorf("ParseUUID(%q) = %v, want invalid offerId", bad, err)
		}
	}
}

func FuzzParseUUID(f *testing.F) {
	f.Add("7d3b0c3a-52a5-4f1e-8f8e-0a7c5b9d1e22")
	f.Add("00000000-0000-0000-0000-000000000000")
	f.Add("7d3b0c3a-52a5-4f1e-8f8e-0a7c5b9d1e2-")
	f.Fuzz(func(t *testing.T, s string) {
		u, err := ParseUUID("id", s)
		if err != nil {
			return
		}
		if FormatUUID(u) != s {
			t.Fatalf("accepted %q but formats as %q", s, FormatUUID(u))
		}
	})
}

func FuzzLeaseTokenValidate(f *testing.F) {
	f.Add(goodToken)
	f.Add(strings.Repeat("A", 43))
	f.Add(goodToken + "=")
	f.Fuzz(func(t *testing.T, s string) {
		err := LeaseToken(s).Validate()
		if err == nil {
			raw, derr := tokenEncoding.DecodeString(s)
			if derr != nil || len(raw) < LeaseTokenBytes || len(raw) > MaxLeaseTokenBytes ||
				tokenEncoding.EncodeToString(raw) != s {
				t.Fatalf("accepted a token that is not canonical base64url of 32..64 bytes: %q", s)
			}
			return
		}
		if len(s) >= 8 && strings.Contains(err.Error(), s) {
			t.Fatalf("error echoes the token")
		}
	})
}

func BenchmarkLeaseHolds(b *testing.B) {
	mine, row := lease(), lease()
	b.ReportAllocs()
	for b.Loop() {
		if err := mine.Holds(row, now); err != nil {
			b.Fatal(err)
		}
	}
}
