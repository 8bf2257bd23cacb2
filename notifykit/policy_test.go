package notifykit

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/notify/channel"
)

// TestDecide: an accepted attempt is delivered; a failed one is retried
// after the backoff (2 s·2^(n-1), times 0.5 + jitter/2) until the next try would pass
// the give-up time, then failed with the reason; a test is never retried;
// credentials are scrubbed from the error.
func TestDecide(t *testing.T) {
	p := Policy{RetryBase: 2 * time.Second, RetryMax: 10 * time.Minute, Jitter: func() float64 { return 0.5 }}.WithDefaults()
	start := time.UnixMilli(1_000_000)
	end := start.Add(100 * time.Millisecond)
	st := channel.Settings{Kind: channel.Telegram, Token: "bot-TOKEN-123"}
	fail := errors.New("HTTP 500 for bot-TOKEN-123")
	for _, tc := range []struct {
		name     string
		row      Delivery
		err      error
		status   string
		nextAtMs int64
		errHas   string
	}{
		{"accepted", Delivery{GiveUpAtMs: 2_000_000}, nil, StatusDelivered, 0, ""},
		{"first failure retried after 1.5 s", Delivery{GiveUpAtMs: 2_000_000}, fail, StatusPending, 1_000_100 + 1500, "HTTP 500 for ***"},
		{"third failure retried after 6 s", Delivery{Attempts: 2, GiveUpAtMs: 2_000_000}, fail, StatusPending, 1_000_100 + 6000, "***"},
		{"past the give-up time", Delivery{Attempts: 4, GiveUpAtMs: 1_000_500, CreatedAtMs: 900_000}, fail, StatusFailed, 0, "gave up after 5 attempt(s) in 1m40.1s: HTTP 500 for ***"},
		{"a test is not retried", Delivery{Kind: KindTest, GiveUpAtMs: 2_000_000}, fail, StatusFailed, 0, "HTTP 500 for ***"},
	} {
		o := p.Decide(tc.row, Attempted{Settings: st, StatusCode: 500, Err: tc.err, Start: start, End: end})
		if o.Status != tc.status || o.NextAtMs != tc.nextAtMs || !strings.Contains(o.Attempt.Error, tc.errHas) ||
			strings.Contains(o.Attempt.Error, st.Token) || o.Attempt.N != tc.row.Attempts+1 || o.Attempt.LatencyMs != 100 {
			t.Errorf("%s: %+v", tc.name, o)
		}
	}
}

// TestParseDeliveryQuery: bounds named by field.
func TestParseDeliveryQuery(t *testing.T) {
	for _, tc := range []struct {
		q     string
		field string
		limit int
	}{
		{"", "", 50},
		{"limit=200&status=failed&before=9", "", 200},
		{"limit=201", "limit", 0},
		{"limit=0", "limit", 0},
		{"before=x", "before", 0},
		{"status=lost", "status", 0},
	} {
		v, _ := url.ParseQuery(tc.q)
		f, err := ParseDeliveryQuery(v)
		if errs.Field(err) != tc.field || (err == nil && f.Limit != tc.limit) {
			t.Errorf("%q: %+v %v", tc.q, f, err)
		}
	}
}
