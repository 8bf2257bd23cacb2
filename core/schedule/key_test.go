package schedule

import (
	"strings"
	"testing"

	"github.com/ql3/ql3/core/errs"
)

func TestIdempotencyKey(t *testing.T) {
	cases := []struct {
		id       string
		rev, ms  int64
		want     string
		reparsed bool
	}{
		{"7d0c5a1e-2f6b-4a57-9a3e-0c2b6b1f0e11", 3, 1780272000000, "ql3:cron:v1:7d0c5a1e-2f6b-4a57-9a3e-0c2b6b1f0e11:3:1780272000000", true},
		{"t", 0, 0, "ql3:cron:v1:t:0:0", true},
		{"a.b_c-D", 9223372036854775807, -1000, "ql3:cron:v1:a.b_c-D:9223372036854775807:-1000", true},
	}
	for _, c := range cases {
		got := IdempotencyKey(c.id, c.rev, c.ms)
		if got != c.want {
			t.Errorf("IdempotencyKey = %q, want %q", got, c.want)
		}
		id, rev, ms, err := ParseIdempotencyKey(got)
		if err != nil || id != c.id || rev != c.rev || ms != c.ms {
			t.Errorf("ParseIdempotencyKey(%q) = %q %d %d %v", got, id, rev, ms, err)
		}
	}
}

func TestParseIdempotencyKeyRejects(t *testing.T) {
	for _, key := range []string{
		"",
		"ql3:cron:v1:",
		"ql3:cron:v2:t:1:2",
		"QL3:cron:v1:t:1:2",
		" ql3:cron:v1:t:1:2",
		"ql3:cron:v1:t:1:2 ",
		"ql3:cron:v1:t:1",
		"ql3:cron:v1:t:1:2:3",
		"ql3:cron:v1::1:2",
		"ql3:cron:v1:a b:1:2",
		"ql3:cron:v1:t/x:1:2",
		"ql3:cron:v1:t:-1:2",
		"ql3:cron:v1:t:+1:2",
		"ql3:cron:v1:t:01:2",
		"ql3:cron:v1:t:1:02",
		"ql3:cron:v1:t:1:-0",
		"ql3:cron:v1:t:1:+2",
		"ql3:cron:v1:t:1:",
		"ql3:cron:v1:t::2",
		"ql3:cron:v1:t:1:2.5",
		"ql3:cron:v1:t:1:9223372036854775808",
		"ql3:cron:v1:t:1:0x10",
		"ql3:cron:v1:" + strings.Repeat("a", MaxTriggerIDBytes+1) + ":1:2",
		"ql3:cron:v1:" + strings.Repeat("9", 400),
	} {
		if id, rev, ms, err := ParseIdempotencyKey(key); errs.Code(err) != errs.Invalid || errs.Field(err) != "idempotencyKey" {
			t.Errorf("ParseIdempotencyKey(%q) = %q %d %d %v, want invalid idempotencyKey", key, id, rev, ms, err)
		}
	}
}

// FuzzParseIdempotencyKey: the parser never panics, and whatever it accepts
// is exactly what IdempotencyKey produces for the parsed parts.
func FuzzParseIdempotencyKey(f *testing.F) {
	f.Fuzz(func(t *testing.T, key string) {
		id, rev, ms, err := ParseIdempotencyKey(key)
		if err != nil {
			if errs.Code(err) != errs.Invalid {
				t.Fatalf("ParseIdempotencyKey(%q): %v has code %q", key, err, errs.Code(err))
			}
			return
		}
		if again := IdempotencyKey(id, rev, ms); again != key {
			t.Fatalf("ParseIdempotencyKey(%q) round-trips to %q", key, again)
		}
		if !validTriggerID(id) || rev < 0 {
			t.Fatalf("ParseIdempotencyKey(%q) accepted id %q revision %d", key, id, rev)
		}
	})
}
