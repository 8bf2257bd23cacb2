package httpapi

import (
	"strings"
	"testing"
)

func TestPasswordHash(t *testing.T) {
	h, err := HashPassword("correct horse")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h, "$argon2id$v=19$m=19456,t=2,p=1$") {
		t.Fatalf("hash %s", h)
	}
	if !VerifyPassword(h, "correct horse") || VerifyPassword(h, "correct horsE") {
		t.Fatal("verify")
	}
	h2, _ := HashPassword("correct horse")
	if h2 == h {
		t.Fatal("no fresh salt")
	}
	for _, bad := range []string{"", "$argon2i$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ$a2V5a2V5a2V5a2V5a2V5", "$argon2id$v=19$m=999999999,t=2,p=1$c2FsdHNhbHQ$a2V5a2V5a2V5a2V5a2V5a2V5",
		strings.Replace(h, "$v=19$", "$v=16$", 1)} {
		if VerifyPassword(bad, "correct horse") {
			t.Errorf("malformed hash %q matched", bad)
		}
	}
	if _, err := HashPassword("short"); err == nil {
		t.Error("a 5-character password was accepted")
	}
}
