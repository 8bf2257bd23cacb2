package envstore_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/ql3/ql3/controlplane/postgres/envstore"
	"github.com/ql3/ql3/core/envseal"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/spec"
)

// pinnedText is what the claim statement writes to attempt_envs.entries
// for n entries named N<i % names> (PostgreSQL's base64 has a line break
// every 76 characters; Go's decoder skips them).
func pinnedText(t testing.TB, c *envseal.Cipher, n, names int) string {
	t.Helper()
	rows := make([]map[string]any, n)
	for i := range rows {
		id := fmt.Sprintf("0190a1b2-c3d4-7e5f-8a9b-%012d", i)
		name := fmt.Sprintf("N%d", i%names)
		b64 := base64.StdEncoding.EncodeToString(c.Seal(id, name, fmt.Sprintf("value-%04d-%s", i, strings.Repeat("v", 24))))
		var wrapped strings.Builder
		for len(b64) > 76 {
			wrapped.WriteString(b64[:76] + "\n")
			b64 = b64[76:]
		}
		wrapped.WriteString(b64)
		rows[i] = map[string]any{"i": id, "n": name, "c": wrapped.String(), "p": i%7 == 0, "o": int64(-i * 65536), "t": int64(1000 + i)}
	}
	raw, err := json.Marshal(rows)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

func testCipher(t testing.TB) *envseal.Cipher {
	dk, _ := envseal.NewDataKey()
	c, err := envseal.NewCipher(dk)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestOfferEnvJoinsScopesAndRefuses(t *testing.T) {
	c := testCipher(t)
	pinned := pinnedText(t, c, 6, 2) // N0: entries 0, 2, 4 (0 pinned); N1: 1, 3, 5
	cmd := spec.Command{Environment: map[string]string{"N1": "inline"}}
	vars, err := envstore.OfferEnv(pinned, c, cmd)
	if err != nil {
		t.Fatal(err)
	}
	v := strings.Repeat("v", 24)
	want := fmt.Sprintf("value-0000-%s&value-0002-%s&value-0004-%s", v, v, v)
	if len(vars) != 2 || vars[0].Name != "N0" || vars[0].Value != want || vars[1].Name != "N1" {
		t.Fatalf("vars %+v", vars)
	}
	cmd.Env = &spec.EnvScope{Use: []string{"N1"}, InlineWins: true}
	if vars, err = envstore.OfferEnv(pinned, c, cmd); err != nil || len(vars) != 0 {
		t.Fatalf("allowlist N1 with inlineWins: %+v %v", vars, err)
	}
	if vars, err = envstore.OfferEnv("", nil, cmd); err != nil || vars != nil {
		t.Fatalf("nothing pinned: %+v %v", vars, err)
	}
	if _, err := envstore.OfferEnv(pinned, nil, cmd); errs.Code(err) != errs.Unavailable || !strings.Contains(err.Error(), envstore.KeyFlag) {
		t.Fatalf("locked: %v", err)
	}
	if _, err := envstore.OfferEnv(pinned, testCipher(t), cmd); errs.Code(err) != errs.Internal {
		t.Fatalf("another data key: %v", err)
	}
}

// BenchmarkOfferEnv1000 is the offer side of a start with 1,000 enabled
// entries pinned: decode, open, join.
func BenchmarkOfferEnv1000(b *testing.B) {
	c := testCipher(b)
	pinned := pinnedText(b, c, 1000, 1000)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := envstore.OfferEnv(pinned, c, spec.Command{}); err != nil {
			b.Fatal(err)
		}
	}
}
