package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/ql3/ql3/core/schedule"
	"github.com/ql3/ql3/core/spec"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/worker/clock"
)

// BenchmarkAdmission measures Fire admissions: one transaction each with the
// schedule compare-and-set, the queued run, its claimed attempt and two
// events. Reported as admissions/s for both synchronous modes, so the cost
// of FULL is a ratio against NORMAL measured in the same run.
func BenchmarkAdmission(b *testing.B) {
	for _, mode := range []string{"NORMAL", "FULL"} {
		b.Run(mode, func(b *testing.B) {
			ctx := context.Background()
			clk := clock.NewFake(t0)
			s, err := Open(ctx, filepath.Join(b.TempDir(), "edge.db"), Options{Clock: clk, Synchronous: mode})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			sp := shellSpec("true")
			sp.Concurrency = spec.ConcurrencyAllow
			task := mustTask(b, s, "bench", sp)
			if _, err := s.CreateTrigger(ctx, task.ID, edge.TriggerInput{Expression: "* * * * * *", Enabled: true}); err != nil {
				b.Fatal(err)
			}
			items, err := s.DueSchedules(ctx, t0.UnixMilli(), 1)
			if err != nil || len(items) != 1 {
				b.Fatal(items, err)
			}
			item := items[0]
			at := t0.UnixMilli()
			adm, err := s.ApplyDecision(ctx, item, schedule.Decision{Kind: schedule.Init, NextFireAtMs: at + 1000}, at)
			if err != nil {
				b.Fatal(err)
			}
			item.Schedule = adm.Schedule
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				at += 1000
				d := schedule.Decision{Kind: schedule.Fire, ScheduledForMs: at, NextFireAtMs: at + 1000}
				adm, err := s.ApplyDecision(ctx, item, d, at)
				if err != nil || !adm.Created {
					b.Fatal(adm, err)
				}
				item.Schedule = adm.Schedule
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "admissions/s")
		})
	}
}

// BenchmarkClaim measures the runner's durable claim (synchronous=FULL
// commit) against the NORMAL-mode default writer.
func BenchmarkClaim(b *testing.B) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(b.TempDir(), "edge.db"), Options{Clock: clock.NewFake(t0)})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	sp := shellSpec("true")
	sp.Concurrency = spec.ConcurrencyAllow
	task := mustTask(b, s, "bench", sp)
	runs := make([]edge.Run, b.N)
	for i := range runs {
		runs[i] = mustRun(b, s, task.ID, "")
	}
	b.ResetTimer()
	for _, r := range runs {
		if _, err := s.ClaimRun(ctx, r.ID, r.Version, t0.UnixMilli()); err != nil {
			b.Fatal(err)
		}
	}
}
