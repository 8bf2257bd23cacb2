package protocol

import (
	"strings"
	"testing"

	"github.com/ql3/ql3/core/errs"
)

// The v1 additions of the dispatch wave: LeaseRevoke, SessionState.Replaced
// and Retry-After (ADR 0004 amendment).

func TestLeaseRevoke(t *testing.T) {
	described := control()
	described.Action = LeaseRevoke
	bare := LeaseControl{AttemptID: "att_9", Action: LeaseRevoke}
	for name, c := range map[string]LeaseControl{"described": described, "bare": bare} {
		raw, err := c.Encode()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := DecodeLeaseControl(raw)
		if err != nil || got.Action != LeaseRevoke || got.RunID != c.RunID || got.LeaseVersion != c.LeaseVersion {
			t.Fatalf("%s: round trip %+v %v", name, got, err)
		}
	}
	raw, _ := bare.Encode()
	if strings.Contains(string(raw), "runId") || strings.Contains(string(raw), "leaseVersion") {
		t.Errorf("a bare revoke describes no lease: %s", raw)
	}
	checkFieldCases(t, described, wrap(DecodeLeaseControl), []fieldCase{
		{"revoke with grace", set("cancelGraceMs", 1000), "cancelGraceMs"},
		{"half-described: version 0", set("leaseVersion", 0), "leaseVersion"},
		{"half-described: no run", del("runId"), "runId"},
		{"revoke bad run id", set("runId", "a b"), "runId"},
	})
	// extend and cancel still need the whole lease.
	ext := control()
	checkFieldCases(t, ext, wrap(DecodeLeaseControl), []fieldCase{
		{"extend without run", del("runId"), "runId"},
		{"extend without generation", del("leaseGeneration"), "leaseGeneration"},
	})
}

func TestSessionStateReplaced(t *testing.T) {
	s := sessionState()
	s.Status, s.Replaced = SessionOffline, true
	s.Controls = []LeaseControl{{AttemptID: "att_1", Action: LeaseRevoke}}
	raw, err := s.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"replaced":true`) {
		t.Fatalf("replaced not on the wire: %s", raw)
	}
	got, err := DecodeSessionState(raw)
	if err != nil || !got.Replaced {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	live, _ := sessionState().Encode()
	if strings.Contains(string(live), "replaced") {
		t.Errorf("a live session does not mention replaced: %s", live)
	}
	checkFieldCases(t, s, wrap(DecodeSessionState), []fieldCase{
		{"replaced but online", set("status", "online"), "replaced"},
		{"replaced not bool", set("replaced", "yes"), "replaced"},
		{"offline with extend", func(m map[string]any) {
			m["controls"] = []any{map[string]any{"v": 1, "runId": "r", "attemptId": "a", "leaseGeneration": 1,
				"leaseVersion": 1, "action": "extend", "leaseExpiresAtMs": 5}}
		}, "controls[0].action"},
	})
}

func TestRetryAfter(t *testing.T) {
	for _, c := range []struct{ ms, want int64 }{
		{0, 1}, {-5, 1}, {1, 1}, {999, 1}, {1000, 1}, {1001, 2}, {2000, 2}, {59_999, 60}, {60_000, 60}, {3_600_000, 60},
	} {
		if got := RetryAfterSeconds(c.ms); got != c.want {
			t.Errorf("RetryAfterSeconds(%d) = %d, want %d", c.ms, got, c.want)
		}
	}
	for _, c := range []struct {
		in   string
		want int64
		bad  bool
	}{
		{"", 1000, false}, {"0", 1000, false}, {"2", 2000, false}, {"60", 60_000, false}, {"999999", 60_000, false},
		{"1000000", 0, true}, {"-1", 0, true}, {"1.5", 0, true}, {" 2", 0, true},
		{"Wed, 21 Oct 2015 07:28:00 GMT", 0, true},
	} {
		got, err := ParseRetryAfter(c.in)
		if c.bad {
			if errs.Field(err) != HeaderRetryAfter {
				t.Errorf("ParseRetryAfter(%q): want an error naming %s, got %v", c.in, HeaderRetryAfter, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("ParseRetryAfter(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"", "1", "60", "999999", "x", "-0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ms, err := ParseRetryAfter(s)
		if err != nil {
			return
		}
		if ms < MinRetryAfterSeconds*1000 || ms > MaxRetryAfterSeconds*1000 || ms%1000 != 0 {
			t.Fatalf("ParseRetryAfter(%q) = %d out of bounds", s, ms)
		}
	})
}
