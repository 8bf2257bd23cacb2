package schedule

import (
	"testing"
	"time"
)

func BenchmarkDecide(b *testing.B) {
	ny := loadZone(b, "America/New_York")
	T := ms("2026-06-01T12:00:00Z")
	cases := []struct {
		name  string
		expr  string
		loc   *time.Location
		state State
		now   int64
	}{
		{"wait", "*/5 * * * *", time.UTC, State{TriggerRevision: 1, Initialized: true, NextFireAtMs: T + 60_000}, T},
		{"fire_on_time", "*/5 * * * *", time.UTC, State{TriggerRevision: 1, Initialized: true, NextFireAtMs: T}, T + 400},
		{"fire_on_time_NewYork", "*/15 * * * *", ny, State{TriggerRevision: 1, Initialized: true, NextFireAtMs: T}, T + 400},
		{"init", "30 2 * * *", ny, State{}, T},
		{"late_100_missed", "* * * * *", time.UTC, State{TriggerRevision: 1, Initialized: true, NextFireAtMs: T}, T + 100*60_000 + 45_000},
	}
	for _, c := range cases {
		tr := Trigger{ID: "bench", Revision: 1, Cron: mustCron(b, c.expr, c.loc), Misfire: MisfireFireOnce, GraceMs: DefaultEdgeGraceMs}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Decide(tr, c.state, c.now); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("IdempotencyKey", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = IdempotencyKey("7d0c5a1e-2f6b-4a57-9a3e-0c2b6b1f0e11", 3, T)
		}
	})
}
