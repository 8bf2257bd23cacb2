package password

import (
	"strings"
	"testing"
)

func TestHashAndVerify(t *testing.T) {
	h, err := Hash("correct horse")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h, "$argon2id$v=19$m=19456,t=2,p=1$") {
		t.Fatalf("hash %s", h)
	}
	if !Verify(h, "correct horse") || Verify(h, "correct horsE") {
		t.Fatal("verify")
	}
	h2, _ := Hash("correct horse")
	if h2 == h {
		t.Fatal("no fresh salt")
	}
	for _, bad := range []string{"", "$argon2i$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ$a2V5a2V5a2V5a2V5a2V5", "$argon2id$v=19$m=999999999,t=2,p=1$c2FsdHNhbHQ$a2V5a2V5a2V5a2V5a2V5a2V5",
		strings.Replace(h, "$v=19$", "$v=16$", 1)} {
		if Verify(bad, "correct horse") {
			t.Errorf("malformed hash %q matched", bad)
		}
	}
	if _, err := Hash("short"); err == nil {
		t.Error("a 5-character password was accepted")
	}
}

// A fixed salt gives a fixed hash: the encoding is stable across releases
// (a stored hash from the edge's SQLite or the cluster's PostgreSQL
// verifies in either binary).
func TestHashEncodingIsStable(t *testing.T) {
	h, err := HashWith(strings.NewReader("0123456789abcdef"), "correct horse")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h, "$argon2id$v=19$m=19456,t=2,p=1$MDEyMzQ1Njc4OWFiY2RlZg$") || !Verify(h, "correct horse") {
		t.Fatalf("hash %s", h)
	}
}

func TestCheckUsername(t *testing.T) {
	for _, ok := range []string{"a", "alice", "ops.bot@example_1-x", strings.Repeat("a", 64)} {
		if err := CheckUsername(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".a", "a b", "名字", strings.Repeat("a", 65)} {
		if err := CheckUsername(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func FuzzVerify(f *testing.F) {
	f.Add("$argon2id$v=19$m=8,t=1,p=1$c2FsdHNhbHQ$a2V5a2V5a2V5a2V5a2V5", "pw")
	f.Fuzz(func(t *testing.T, hash, pw string) {
		if strings.Contains(hash, "m=") && !strings.Contains(hash, "m=8,") {
			return // keep the fuzzer off large memory costs
		}
		Verify(hash, pw)
	})
}
