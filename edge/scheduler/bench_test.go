package scheduler

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/worker/clock"
)

// BenchmarkAdmission measures whole scheduler rounds: 256 every-second
// triggers, the fake clock stepped one second per iteration, rounds run
// until the batch is drained. Reported as admissions/s and admissions per
// commit (a round's admissions share one group commit, ADR 0065; each is a
// cursor compare-and-set + run + attempt + events in its own savepoint).
func BenchmarkAdmission(b *testing.B) {
	const triggers = 256
	ctx := context.Background()
	clk := clock.NewFake(t0)
	s := openStore(b, filepath.Join(b.TempDir(), "edge.db"), clk)
	for i := 0; i < triggers; i++ {
		addTrigger(b, s, fmt.Sprintf("t%03d", i), edge.TriggerInput{Expression: "* * * * * *"})
	}
	sc, err := New(Config{Store: s, Clock: clk, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	drain := func() {
		for {
			r, err := sc.RunRound(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if !r.Full {
				return
			}
		}
	}
	drain() // initialise every cursor
	commits0, members0 := s.WriteGroups()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		clk.Advance(time.Second)
		drain()
	}
	elapsed := time.Since(start)
	b.StopTimer()
	if got := sc.Stats().Admitted; got != int64(b.N*triggers) {
		b.Fatalf("admitted %d, want %d", got, b.N*triggers)
	}
	b.ReportMetric(float64(b.N*triggers)/elapsed.Seconds(), "admissions/s")
	commits, members := s.WriteGroups()
	b.ReportMetric(float64(members-members0)/float64(commits-commits0), "admissions/commit")
}

// BenchmarkFireLag runs the real loop on the real clock: 32 every-second
// triggers for b.N seconds (use -benchtime=10x). Lag is a run's creation
// time minus its occurrence time (ms resolution), reported as p50/p99.
func BenchmarkFireLag(b *testing.B) {
	const triggers = 32
	clk := clock.Real{}
	s := openStore(b, filepath.Join(b.TempDir(), "edge.db"), clk)
	for i := 0; i < triggers; i++ {
		addTrigger(b, s, fmt.Sprintf("t%03d", i), edge.TriggerInput{Expression: "* * * * * *"})
	}
	sc, err := New(Config{Store: s, Clock: clk, Changes: s.SchedulesChanged(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	b.ResetTimer()
	go func() { done <- sc.Run(ctx) }()
	time.Sleep(time.Duration(b.N)*time.Second + 100*time.Millisecond) // a benchmark of the wall clock, by design
	cancel()
	<-done
	b.StopTimer()
	var lags []int64
	for _, r := range allRuns(b, s) {
		lags = append(lags, r.CreatedAtMs-r.ScheduledForMs)
	}
	if len(lags) == 0 {
		b.Fatal("no runs")
	}
	slices.Sort(lags)
	b.ReportMetric(float64(lags[len(lags)/2]), "p50-ms")
	b.ReportMetric(float64(lags[len(lags)*99/100]), "p99-ms")
	b.ReportMetric(float64(len(lags)), "runs")
}
