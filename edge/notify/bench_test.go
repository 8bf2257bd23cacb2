package notify_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	cn "github.com/ql3/ql3/core/notify"
	"github.com/ql3/ql3/core/notify/channel"
	"github.com/ql3/ql3/core/run"
	"github.com/ql3/ql3/edge/notify"
)

func okServer(b *testing.B) *httptest.Server {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.Copy(io.Discard, r.Body) }))
	b.Cleanup(ts.Close)
	return ts
}

// BenchmarkDeliverToLocalWebhook: outbox rows delivered per second to a
// local webhook (signed), each attempt recorded in the delivery log.
func BenchmarkDeliverToLocalWebhook(b *testing.B) {
	e := newEnv(b)
	ts := okServer(b)
	ch := e.channel("hook", channel.Settings{Kind: channel.Webhook, Server: ts.URL, Secret: "s"})
	now := e.clk.Now().UnixMilli()
	rows := make([]notify.NewDelivery, b.N)
	for i := range rows {
		rows[i] = notify.NewDelivery{Key: fmt.Sprintf("bench:%d", i), ChannelID: ch.ID, Kind: "failed", Title: "ql3: bench failed",
			Content: "task: bench\nexit code: 1", Status: notify.StatusPending, NextAtMs: now, CreatedMs: now, GiveUpMs: now + 3600_000}
	}
	if _, err := e.store.AddDeliveries(e.ctx, rows); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for {
		due, err := e.store.Due(e.ctx, now, 1)
		if err != nil {
			b.Fatal(err)
		}
		if len(due) == 0 {
			break
		}
		e.step()
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "notifications/s")
	if n := len(e.deliveries(notify.DeliveryFilter{Status: notify.StatusDelivered, Limit: 1})); n != 1 {
		b.Fatal("nothing delivered")
	}
}

// BenchmarkFailingRun: what notifying adds to a failing run. "plain": the
// run fails and the deliverer reads its events with no rule; "notified":
// the same with a rule, so the failure is derived, written to the outbox
// with the cursor, and delivered to a local webhook. The run's own write
// path is the same in both (notifications are read from the feed).
func BenchmarkFailingRun(b *testing.B) {
	for _, withRule := range []bool{false, true} {
		name := map[bool]string{false: "plain", true: "notified"}[withRule]
		b.Run(name, func(b *testing.B) {
			e := newEnv(b)
			if withRule {
				ts := okServer(b)
				ch := e.channel("hook", channel.Settings{Kind: channel.Webhook, Server: ts.URL, Secret: "s"})
				e.rule("all", notify.RuleInput{Rule: cn.Rule{Channels: []string{ch.ID}}})
			}
			b.ResetTimer()
			for range b.N {
				e.finish(run.AttemptFailed)
				e.step()
			}
		})
	}
}
