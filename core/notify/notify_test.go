package notify

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestKindsOf(t *testing.T) {
	for _, tc := range []struct {
		ev   string
		prev bool
		want []Kind
	}{
		{"run.failed", false, []Kind{KindFailed}},
		{"run.timed_out", false, []Kind{KindTimedOut}},
		{"run.lost", true, []Kind{KindLost}},
		{"run.cancelled", false, []Kind{KindCancelled}},
		{"run.succeeded", false, []Kind{KindSucceeded}},
		{"run.succeeded", true, []Kind{KindSucceeded, KindRecovered}},
		{"run.queued", true, nil},
		{"run.running", false, nil},
	} {
		if got := KindsOf(tc.ev, tc.prev); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("KindsOf(%s, %v) = %v, want %v", tc.ev, tc.prev, got, tc.want)
		}
	}
}

func TestRuleMatches(t *testing.T) {
	global, err := Rule{ID: "g", Channels: []string{"tg"}, Enabled: true}.Validate()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(global.Kinds, []Kind{KindFailed, KindLost, KindTimedOut}) {
		t.Fatalf("default kinds %v", global.Kinds)
	}
	byTask, _ := Rule{ID: "t", Channels: []string{"tg"}, TaskIDs: []string{"t1"}, Kinds: []Kind{KindRecovered}, Enabled: true}.Validate()
	byLabel, _ := Rule{ID: "l", Channels: []string{"tg"}, Labels: []string{"jd"}, Kinds: []Kind{KindFailed}, Enabled: true}.Validate()
	off, _ := Rule{ID: "o", Channels: []string{"tg"}}.Validate()
	for _, tc := range []struct {
		r    Rule
		k    Kind
		s    Subject
		want bool
	}{
		{global, KindFailed, Subject{TaskID: "x"}, true},
		{global, KindSucceeded, Subject{TaskID: "x"}, false},
		{global, KindCancelled, Subject{TaskID: "x"}, false},
		{byTask, KindRecovered, Subject{TaskID: "t1"}, true},
		{byTask, KindRecovered, Subject{TaskID: "t2"}, false},
		{byLabel, KindFailed, Subject{TaskID: "t2", Labels: []string{"a", "jd"}}, true},
		{byLabel, KindFailed, Subject{TaskID: "t2", Labels: []string{"a"}}, false},
		{off, KindFailed, Subject{TaskID: "x"}, false},
	} {
		if got := tc.r.Matches(tc.k, tc.s); got != tc.want {
			t.Errorf("rule %s Matches(%s, %+v) = %v", tc.r.ID, tc.k, tc.s, got)
		}
	}
}

func TestRuleValidate(t *testing.T) {
	for _, tc := range []struct {
		r    Rule
		want string
	}{
		{Rule{}, "channels: must name at least one channel"},
		{Rule{Channels: make([]string, 17)}, "channels: has 17 entries, limit is 16"},
		{Rule{Channels: []string{"c"}, Kinds: []Kind{"exploded"}}, `kinds[0]: must be one of`},
		{Rule{Channels: []string{"c"}, Quiet: &QuietHours{Zone: "Mars/Base", Start: "22:00", End: "07:00"}}, "quiet.zone: must be an IANA"},
		{Rule{Channels: []string{"c"}, Quiet: &QuietHours{Zone: "UTC", Start: "22:00", End: "22:00"}}, "quiet.end: must differ"},
		{Rule{Channels: []string{"c"}, Quiet: &QuietHours{Zone: "UTC", Start: "24:00", End: "07:00"}}, "quiet.start: must be HH:MM"},
		{Rule{Channels: []string{"c"}, Quiet: &QuietHours{Zone: "UTC", Start: "22:00", End: "07:00", Mode: "mute"}}, "quiet.mode: must be"},
		{Rule{Channels: []string{"c"}, Coalesce: Coalesce{Max: 3}}, "coalesce.windowMs: must be 1000.."},
		{Rule{Channels: []string{"c"}, Coalesce: Coalesce{WindowMs: 5000}}, "coalesce.windowMs: needs max"},
		{Rule{Channels: []string{"c"}, Coalesce: Coalesce{Max: 1001, WindowMs: 5000}}, "coalesce.max: must be 0..1000"},
	} {
		if _, err := tc.r.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%+v) = %v, want %q", tc.r, err, tc.want)
		}
	}
}

func ms(t *testing.T, s string) int64 {
	t.Helper()
	at, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return at.UnixMilli()
}

// TestQuietHoursAcrossDST: the window's end is the first instant the
// zone's wall clock reads End, on nights when the clock jumps.
func TestQuietHoursAcrossDST(t *testing.T) {
	for _, tc := range []struct {
		name          string
		q             QuietHours
		at, wantUntil string // RFC 3339; wantUntil "" = not quiet
	}{
		{"plain night, Shanghai", QuietHours{Zone: "Asia/Shanghai", Start: "22:00", End: "07:00"},
			"2026-06-01T15:30:00Z", "2026-06-01T23:00:00Z"}, // 23:30 local → 07:00 local
		{"after midnight", QuietHours{Zone: "Asia/Shanghai", Start: "22:00", End: "07:00"},
			"2026-06-01T18:00:00Z", "2026-06-01T23:00:00Z"}, // 02:00 local
		{"outside", QuietHours{Zone: "Asia/Shanghai", Start: "22:00", End: "07:00"},
			"2026-06-01T04:00:00Z", ""}, // 12:00 local
		{"daytime window", QuietHours{Zone: "UTC", Start: "09:00", End: "17:00"},
			"2026-06-01T16:59:00Z", "2026-06-01T17:00:00Z"},
		{"end boundary is outside", QuietHours{Zone: "UTC", Start: "09:00", End: "17:00"},
			"2026-06-01T17:00:00Z", ""},
		// New York springs forward 2026-03-08 02:00 EST → 03:00 EDT: a window
		// ending 02:30 ends when the clock reads 03:00 (07:00Z).
		{"spring forward, end in the gap", QuietHours{Zone: "America/New_York", Start: "22:00", End: "02:30"},
			"2026-03-08T04:00:00Z", "2026-03-08T07:00:00Z"},
		// A 22:00–07:00 window on that night is one hour shorter in real time.
		{"spring forward, whole night", QuietHours{Zone: "America/New_York", Start: "22:00", End: "07:00"},
			"2026-03-08T03:30:00Z", "2026-03-08T11:00:00Z"},
		// Falls back 2026-11-01 02:00 EDT → 01:00 EST: 01:30 happens twice;
		// the window ends at the first (05:30Z).
		{"fall back, end repeated", QuietHours{Zone: "America/New_York", Start: "23:00", End: "01:30"},
			"2026-11-01T04:00:00Z", "2026-11-01T05:30:00Z"},
		// London springs forward 2026-03-29 01:00 GMT → 02:00 BST.
		{"London spring forward", QuietHours{Zone: "Europe/London", Start: "00:00", End: "01:30"},
			"2026-03-29T00:30:00Z", "2026-03-29T01:00:00Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := tc.q.Validate()
			if err != nil {
				t.Fatal(err)
			}
			until, quiet := q.Until(ms(t, tc.at))
			if tc.wantUntil == "" {
				if quiet {
					t.Fatalf("quiet until %s, want not quiet", time.UnixMilli(until).UTC())
				}
				return
			}
			if !quiet || until != ms(t, tc.wantUntil) {
				t.Fatalf("Until = %s (quiet %v), want %s", time.UnixMilli(until).UTC().Format(time.RFC3339), quiet, tc.wantUntil)
			}
		})
	}
}

// TestCoalesceCapsAFlappingTask: a task failing every second for a minute
// with a cap of 3 per 10 s sends 3 per window and one summary per window
// that held outcomes back.
func TestCoalesceCapsAFlappingTask(t *testing.T) {
	c, err := Coalesce{Max: 3, WindowMs: 10_000}.Validate()
	if err != nil {
		t.Fatal(err)
	}
	var s CoalesceState
	sent, summaries, held := 0, 0, 0
	for i := int64(0); i < 60; i++ {
		send, summary, next := c.Admit(s, 1_000_000+i*1000)
		s = next
		if send {
			sent++
		} else {
			held++
		}
		if summary > 0 {
			summaries++
			if summary != 7 {
				t.Fatalf("summary of %d held outcomes, want 7", summary)
			}
		}
	}
	if sent != 18 || held != 42 || summaries != 5 {
		t.Fatalf("sent %d, held %d, summaries %d; want 18, 42, 5", sent, held, summaries)
	}
	// The last window's 7 are flushed by the tick once the window is over.
	if n, _ := c.Flush(s, 1_000_000+59_000); n != 0 {
		t.Fatalf("flushed %d before the window ended", n)
	}
	if n, after := c.Flush(s, 1_000_000+60_000); n != 7 || after != (CoalesceState{}) {
		t.Fatalf("flush = %d, %+v", n, after)
	}
	// No cap: everything is sent.
	if send, _, _ := (Coalesce{}).Admit(CoalesceState{Sent: 99}, 0); !send {
		t.Fatal("uncapped outcome held")
	}
}

func TestIdempotencyKey(t *testing.T) {
	if k := IdempotencyKey("r1", "c1", 42, KindFailed); k != "ql3:notify:v1:r1:c1:42:failed" {
		t.Fatal(k)
	}
}

func FuzzQuietHoursUntil(f *testing.F) {
	f.Add("22:00", "07:00", int64(1772935200000))
	f.Add("00:00", "01:30", int64(1774744200000))
	f.Fuzz(func(t *testing.T, start, end string, at int64) {
		for _, zone := range []string{"America/New_York", "Europe/London", "Australia/Lord_Howe"} {
			q, err := QuietHours{Zone: zone, Start: start, End: end}.Validate()
			if err != nil {
				return
			}
			if at < 0 || at > 4102444800000 {
				return
			}
			until, quiet := q.Until(at)
			if !quiet {
				continue
			}
			if until <= at || until-at > 26*3600*1000 {
				t.Fatalf("%s %s–%s at %d: until %d", zone, start, end, at, until)
			}
			if _, still := q.Until(until); still && start < end {
				t.Fatalf("%s %s–%s: still quiet at the window's end %d", zone, start, end, until)
			}
		}
	})
}
