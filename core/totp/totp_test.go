package totp

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// The test vectors of RFC 6238 Appendix B (8 digits; the seeds are the
// ASCII digits repeated to the hash's block-key length).
func TestRFC6238Vectors(t *testing.T) {
	seeds := map[Algorithm][]byte{
		SHA1:   []byte("12345678901234567890"),
		SHA256: []byte("12345678901234567890123456789012"),
		SHA512: []byte("1234567890123456789012345678901234567890123456789012345678901234"),
	}
	cases := []struct {
		unix int64
		alg  Algorithm
		want string
	}{
		{59, SHA1, "94287082"}, {59, SHA256, "46119246"}, {59, SHA512, "90693936"},
		{1111111109, SHA1, "07081804"}, {1111111109, SHA256, "68084774"}, {1111111109, SHA512, "25091201"},
		{1111111111, SHA1, "14050471"}, {1111111111, SHA256, "67062674"}, {1111111111, SHA512, "99943326"},
		{1234567890, SHA1, "89005924"}, {1234567890, SHA256, "91819424"}, {1234567890, SHA512, "93441116"},
		{2000000000, SHA1, "69279037"}, {2000000000, SHA256, "90698825"}, {2000000000, SHA512, "38618901"},
		{20000000000, SHA1, "65353130"}, {20000000000, SHA256, "77737706"}, {20000000000, SHA512, "47863826"},
	}
	for _, c := range cases {
		got := HOTP(seeds[c.alg], Counter(time.Unix(c.unix, 0), 30*time.Second), 8, c.alg)
		if got != c.want {
			t.Errorf("T=%d %s: got %s, want %s", c.unix, c.alg, got, c.want)
		}
	}
}

// RFC 4226 Appendix D: HOTP values of the SHA-1 seed for counters 0..9.
func TestRFC4226Vectors(t *testing.T) {
	want := []string{"755224", "287082", "359152", "969429", "338314", "254676", "287922", "162583", "399871", "520489"}
	for i, w := range want {
		if got := HOTP([]byte("12345678901234567890"), uint64(i), 6, SHA1); got != w {
			t.Errorf("counter %d: got %s, want %s", i, got, w)
		}
	}
}

func TestVerifySkewAndReplay(t *testing.T) {
	key := []byte("12345678901234567890")
	now := time.Unix(1111111111, 0)
	c := Counter(now, DefaultPeriod)
	cases := []struct {
		name string
		code string
		last uint64
		ok   bool
	}{
		{"current", HOTP(key, c, 6, SHA1), 0, true},
		{"previous period", HOTP(key, c-1, 6, SHA1), 0, true},
		{"next period", HOTP(key, c+1, 6, SHA1), 0, true},
		{"two periods old", HOTP(key, c-2, 6, SHA1), 0, false},
		{"replayed", HOTP(key, c, 6, SHA1), c, false},
		{"wrong length", "12345", 0, false},
		{"wrong code", "000000", 0, HOTP(key, c-1, 6, SHA1) == "000000" || HOTP(key, c, 6, SHA1) == "000000" || HOTP(key, c+1, 6, SHA1) == "000000"},
	}
	for _, tc := range cases {
		n, ok := Verify(key, tc.code, now, tc.last)
		if ok != tc.ok {
			t.Errorf("%s: ok = %v, want %v", tc.name, ok, tc.ok)
		}
		if ok && (n+1 < c || n > c+1) {
			t.Errorf("%s: matched counter %d outside %d±1", tc.name, n, c)
		}
	}
}

func TestSecretRoundTripAndURI(t *testing.T) {
	s, err := NewSecret(bytes.NewReader(bytes.Repeat([]byte{0xA5}, 32)))
	if err != nil {
		t.Fatal(err)
	}
	key, err := DecodeSecret(strings.ToLower(s[:8]) + " " + s[8:])
	if err != nil || len(key) != SecretBytes || key[0] != 0xA5 {
		t.Fatalf("decode %q: %v %x", s, err, key)
	}
	for _, bad := range []string{"", "1!", "AAAA", strings.Repeat("A", 200)} {
		if _, err := DecodeSecret(bad); err == nil {
			t.Errorf("DecodeSecret(%q) accepted", bad)
		}
	}
	u := URI("ql3 edge", "alice@home", s)
	want := "otpauth://totp/ql3%20edge:alice@home?algorithm=SHA1&digits=6&issuer=ql3+edge&period=30&secret=" + s
	if u != want {
		t.Errorf("URI:\n got %s\nwant %s", u, want)
	}
}

func FuzzDecodeSecret(f *testing.F) {
	f.Add("JBSWY3DPEHPK3PXP")
	f.Add("jbsw y3dp ehpk 3pxp====")
	f.Fuzz(func(t *testing.T, s string) {
		key, err := DecodeSecret(s)
		if err != nil {
			return
		}
		again, err := DecodeSecret(b32.EncodeToString(key))
		if err != nil || !bytes.Equal(again, key) {
			t.Fatalf("round trip of %q failed", s)
		}
	})
}
