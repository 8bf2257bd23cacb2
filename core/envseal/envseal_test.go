package envseal

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestKEKText(t *testing.T) {
	k, err := NewKEK()
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseKEK(" " + k.Text() + "\n")
	if err != nil || back != k || len(k.ID()) != 16 {
		t.Fatalf("round trip: %v", err)
	}
	if strings.Contains(k.Text(), k.ID()+k.ID()) {
		t.Fatal("odd text form")
	}
	cases := map[string]error{
		"hello":                                 ErrNotKeyText,
		KeyTextPrefix + "AAAA":                  ErrDamagedKey,
		KeyTextPrefix + "0011223344556677:AAAA": ErrDamagedKey,
		KeyTextPrefix + "00112233445566ZZ:" + strings.Repeat("A", 43): ErrDamagedKey,
		KeyTextPrefix + "0011223344556677:" + strings.Repeat("A", 43): nil,
	}
	for text, want := range cases {
		if _, err := ParseKEK(text); !errors.Is(err, want) {
			t.Errorf("ParseKEK(%q) = %v, want %v", text, err, want)
		}
	}
}

func TestWrapUnwrap(t *testing.T) {
	k1, _ := NewKEK()
	k2, _ := NewKEK()
	dk, _ := NewDataKey()
	w := k1.Wrap(dk)
	if bytes.Contains(w, dk) {
		t.Fatal("wrapped key holds the key")
	}
	if got, err := k1.Unwrap(w); err != nil || !bytes.Equal(got, dk) {
		t.Fatalf("unwrap: %v", err)
	}
	if _, err := k2.Unwrap(w); !errors.Is(err, ErrWrongKEK) {
		t.Fatalf("wrong KEK: %v", err)
	}
	if _, err := k1.Unwrap(w[:10]); !errors.Is(err, ErrWrongKEK) {
		t.Fatalf("short: %v", err)
	}
}

func TestSealBindsIDAndName(t *testing.T) {
	dk, _ := NewDataKey()
	c, err := NewCipher(dk)
	if err != nil {
		t.Fatal(err)
	}
	blob := c.Seal("id1", "JD_COOKIE", "pt_key=secret")
	if bytes.Contains(blob, []byte("pt_key=secret")) {
		t.Fatal("plaintext in the ciphertext")
	}
	if v, err := c.Open("id1", "JD_COOKIE", blob); err != nil || v != "pt_key=secret" {
		t.Fatalf("open: %q %v", v, err)
	}
	for _, tc := range [][2]string{{"id2", "JD_COOKIE"}, {"id1", "OTHER"}} {
		if _, err := c.Open(tc[0], tc[1], blob); err == nil {
			t.Errorf("opened under %v", tc)
		}
	}
	if a, b := c.Seal("i", "n", "v"), c.Seal("i", "n", "v"); bytes.Equal(a, b) {
		t.Error("nonces repeat")
	}
	if _, err := NewCipher([]byte("short")); err == nil {
		t.Error("a short data key")
	}
}

func FuzzParseKEK(f *testing.F) {
	k, _ := NewKEK()
	f.Add(k.Text())
	f.Add(KeyTextPrefix + "x:y")
	f.Fuzz(func(t *testing.T, text string) {
		k, err := ParseKEK(text)
		if err != nil {
			return
		}
		if back, err := ParseKEK(k.Text()); err != nil || back != k {
			t.Fatalf("accepted %q but its text form does not round-trip", text)
		}
	})
}

func TestKeyFileProblem(t *testing.T) {
	for _, c := range []struct {
		regular bool
		perm    uint32
		size    int64
		want    string
	}{
		{true, 0o600, 60, ""},
		{true, 0o400, 60, ""},
		{true, 0o640, 60, "group or others (mode 0640)"},
		{true, 0o604, 60, "group or others (mode 0604)"},
		{false, 0o600, 60, "not a regular file"},
		{true, 0o600, MaxKeyFileBytes + 1, "larger than 256 bytes"},
	} {
		got := KeyFileProblem(c.regular, c.perm, c.size)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("KeyFileProblem(%v, %04o, %d) = %q, want %q", c.regular, c.perm, c.size, got, c.want)
		}
	}
}
