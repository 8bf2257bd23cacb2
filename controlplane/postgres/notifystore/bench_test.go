package notifystore_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/notifyd"
	"github.com/ql3/ql3/controlplane/pgtest"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/notifystore"
	"github.com/ql3/ql3/controlplane/postgres/publication"
	"github.com/ql3/ql3/core/envseal"
	"github.com/ql3/ql3/core/notify/channel"
	"github.com/ql3/ql3/notifykit"
	"github.com/ql3/ql3/notifykit/sender"
)

// BenchmarkDeliveriesToLocalWebhook: b.N outbox rows to a signed local
// webhook, delivered by 1 and by 2 replicas (claim, send, fenced record
// per row). Reports deliveries/s.
func BenchmarkDeliveriesToLocalWebhook(b *testing.B) {
	for _, replicas := range []int{1, 2} {
		b.Run(fmt.Sprintf("replicas=%d", replicas), func(b *testing.B) {
			ctx := context.Background()
			db := pgtest.NewDB(b)
			admin, runtime := db.Pool(b, postgres.RoleAdmin), db.Pool(b, postgres.RoleRuntime)
			p, err := publication.NewPublisher(admin, publication.PublisherOptions{}).PublishProject(ctx, controlplane.ProjectInput{Name: "bench"})
			if err != nil {
				b.Fatal(err)
			}
			var got atomic.Int64
			hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got.Add(1) }))
			defer hook.Close()
			kek, _ := envseal.NewKEK()
			c, err := notifystore.OpenCipher(ctx, runtime, kek)
			if err != nil {
				b.Fatal(err)
			}
			cfg := notifystore.NewConfig(admin, c)
			ch, err := cfg.CreateChannel(ctx, p.ID, notifykit.ChannelInput{Name: "hook", Enabled: true,
				Settings: channel.Settings{Kind: channel.Webhook, Server: hook.URL, Secret: "s3cret"}})
			if err != nil {
				b.Fatal(err)
			}
			now := time.Now().UnixMilli()
			rows := make([]notifykit.NewDelivery, b.N)
			for i := range rows {
				rows[i] = notifykit.NewDelivery{ProjectID: p.ID, Key: fmt.Sprintf("bench:%d", i), ChannelID: ch.ID, Kind: "failed",
					Title: "t", Content: "c", Status: notifykit.StatusPending, NextAtMs: now, CreatedMs: now, GiveUpMs: now + 3_600_000}
			}
			if err := notifystore.NewOutbox(runtime, c).AddDeliveries(ctx, rows); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			rctx, cancel := context.WithCancel(ctx)
			done := make(chan struct{}, replicas)
			for r := range replicas {
				pool := db.Pool(b, postgres.RoleRuntime)
				d, err := notifyd.New(notifyd.Config{Feed: postgres.NewFeed(pool), Consumers: postgres.NewFeed(pool),
					Outbox: notifystore.NewOutbox(pool, c), Owner: fmt.Sprintf("r%d", r), Sender: &sender.Sender{}, Batch: 64})
				if err != nil {
					b.Fatal(err)
				}
				go func() { _ = d.Run(rctx); done <- struct{}{} }()
			}
			tick := time.NewTicker(5 * time.Millisecond)
			for {
				var left int
				if err := runtime.QueryRow(ctx, `SELECT count(*) FROM ql3.notify_outbox WHERE status = 'pending'`).Scan(&left); err != nil {
					b.Fatal(err)
				}
				if left == 0 {
					break
				}
				<-tick.C
			}
			b.StopTimer()
			tick.Stop()
			cancel()
			for range replicas {
				<-done
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "deliveries/s")
			if got.Load() < int64(b.N) {
				b.Fatalf("receiver got %d of %d", got.Load(), b.N)
			}
		})
	}
}
