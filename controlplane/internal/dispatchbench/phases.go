package main

import (
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ql3/ql3/core/fence"
	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/core/run"
)

// The two measured phases (see the package comment).

func (b *bench) claims() error {
	if err := b.seed(b.o.runs); err != nil {
		return err
	}
	if b.o.batch < 1 || b.o.batch > protocol.MaxBatchItems {
		return fmt.Errorf("-batch must be 1 to %d", protocol.MaxBatchItems)
	}
	ws, err := b.workers(b.o.sessions, b.o.batch, "claim")
	if err != nil {
		return err
	}
	before, err := b.settle()
	if err != nil {
		return err
	}
	s, err := b.start()
	if err != nil {
		return err
	}
	var done, empty atomic.Int64
	var mu sync.Mutex
	var pulls []time.Duration
	deadline := time.Now().Add(b.o.window)
	start := time.Now()
	var wg sync.WaitGroup
	errc := make(chan error, len(ws))
	for _, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			defer func() { mu.Lock(); pulls = append(pulls, mine...); mu.Unlock() }()
			for b.o.batch > 1 && time.Now().Before(deadline) {
				t0 := time.Now()
				n, err := w.batchRound(s, b.o.batch)
				mine = append(mine, time.Since(t0))
				if err != nil {
					errc <- err
					return
				}
				if n == 0 {
					empty.Add(1)
				}
				done.Add(int64(n))
			}
			for b.o.batch == 1 && time.Now().Before(deadline) {
				body, tok, err := w.pullBody()
				if err != nil {
					errc <- err
					return
				}
				t0 := time.Now()
				raw, status, err := w.post(s, protocol.PathOfferPull, body)
				mine = append(mine, time.Since(t0))
				if err != nil {
					errc <- err
					return
				}
				if status == http.StatusNoContent {
					empty.Add(1)
					continue // lost the race for the queue head: ask again
				}
				if status != http.StatusOK {
					errc <- fmt.Errorf("pull: %d %s", status, raw)
					return
				}
				if err := w.execute(s, raw, tok); err != nil {
					errc <- err
					return
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errc)
	for err := range errc {
		s.stop()
		return err
	}
	s.stop()
	st := s.dispatcher.Stats()
	after, err := b.settle()
	if err != nil {
		return err
	}
	n := done.Load()
	if n == 0 {
		return errors.New("no run completed")
	}
	if int(n) >= b.o.runs {
		return fmt.Errorf("the %d seeded runs ran out before the window ended: raise -runs", b.o.runs)
	}
	rate := float64(n) / elapsed.Seconds()
	row("claims", "sessions (TLS 1.3) × capacity (= batch size; 1: single routes)", "%d × %d", b.o.sessions, b.o.batch)
	row("claims", "ingress principal cache TTL (0 = every request authenticates)", "%v", b.o.authCache)
	row("claims", "no-op runs completed (pull → starting → running → completion)", "%d in %.1f s", n, elapsed.Seconds())
	row("claims", "runs/s", "%.0f", rate)
	if b.o.baseline > 0 {
		row("claims", "ratio to pgbench -N TPS (goal ≥ 0.15)", "%.3f (%.0f / %.0f)", rate/b.o.baseline, rate, b.o.baseline)
	}
	row("claims", "batched pulls / offers they claimed in one transaction / lease batches, per run", "%.2f / %.2f / %.2f",
		float64(st.BatchPulls)/float64(n), float64(st.BatchOffers)/float64(n), float64(st.LeaseBatches)/float64(n))
	row("claims", "running acks written with their completion in one statement (rides) per run", "%.2f", float64(st.Rides)/float64(n))
	row("claims", "pull latency p50 / p99 (batch > 1: a whole round, pull → starting → running + completion)", "%s / %s", percentile(pulls, 0.5).Round(10*time.Microsecond), percentile(pulls, 0.99).Round(10*time.Microsecond))
	row("claims", "empty pulls (lost races) per run", "%.2f", float64(empty.Load())/float64(n))
	row("claims", "claim statements / candidates passed over / fresh re-reads per run", "%.2f / %.2f / %.2f",
		float64(st.ClaimStatements)/float64(n), float64(st.ClaimMisses)/float64(n), float64(st.Rereads)/float64(n))
	row("claims", "acks / completions written in one round trip (fenced path) per run", "%.2f / %.2f",
		float64(st.FencedAcks)/float64(n), float64(st.FencedCompletions)/float64(n))
	row("claims", "database commits per run (all, read-only included)", "%.2f", float64(after.commits-before.commits)/float64(n))
	row("claims", "WAL records per run", "%.1f", float64(after.walRecords-before.walRecords)/float64(n))
	row("claims", "tuples written per run", "%.1f", float64(after.tuples-before.tuples)/float64(n))
	row("claims", "of which heap-only (HOT) updates", "%.1f", float64(after.hotUpdates-before.hotUpdates)/float64(n))
	if ie := b.indexEntries(before, after); ie >= 0 {
		row("claims", "B-tree index entries written per run (WAL INSERT_LEAF + INSERT_POST)", "%.1f", float64(ie)/float64(n))
	}
	// CPU time per run is the cost figure the box's other load disturbs
	// least (throughput swings with whatever else runs on it).
	srvPerRun := (after.serverCPU - before.serverCPU) / time.Duration(n)
	row("claims", "PostgreSQL CPU per run (all backends)", "%s", srvPerRun.Round(time.Microsecond))
	if b.o.baselineCPU > 0 {
		row("claims", "PostgreSQL CPU per pgbench -N transaction (same run) / cost ratio (goal ≥ 0.15)", "%s / %.3f",
			b.o.baselineCPU.Round(time.Microsecond), float64(b.o.baselineCPU)/float64(srvPerRun))
	}
	row("claims", "benchmark process CPU per run (TLS clients + ingress + dispatcher)", "%s",
		((after.benchCPU - before.benchCPU) / time.Duration(n)).Round(time.Microsecond))
	return nil
}

// execute acks and completes an offer as a no-op run would.
func (w *worker) execute(s *stack, offerJSON []byte, tok fence.LeaseToken) error {
	offer, err := protocol.DecodeOffer(offerJSON)
	if err != nil {
		return err
	}
	ref := offer.Lease(tok)
	for _, phase := range []protocol.AckPhase{protocol.AckStarting, protocol.AckRunning} {
		raw, err := protocol.Ack{LeaseRef: ref, Phase: phase}.Encode()
		if err != nil {
			return err
		}
		if body, status, err := w.post(s, protocol.PathLeaseAck, raw); err != nil || status != http.StatusOK {
			return fmt.Errorf("ack %s: %d %s %v", phase, status, body, err)
		}
	}
	zero := 0
	raw, err := protocol.Completion{LeaseRef: ref, Status: run.AttemptSucceeded, ExitCode: &zero,
		FinishedAtMs: time.Now().UnixMilli()}.Encode()
	if err != nil {
		return err
	}
	if body, status, err := w.post(s, protocol.PathLeaseComplete, raw); err != nil || status != http.StatusOK {
		return fmt.Errorf("complete: %d %s %v", status, body, err)
	}
	return nil
}

func (b *bench) idle() error {
	// Nothing runnable: whatever the claims phase left is cancelled.
	if _, err := b.su.Exec(b.ctx, `UPDATE ql3.runs SET status = 'cancelled', finished_at_ms = 1, cancel_requested_at_ms = 1,
		cancel_reason = 'shutdown' WHERE status IN ('queued', 'dispatching')`); err != nil {
		return err
	}
	ws, err := b.workers(b.o.idleSessions, 1, "idle")
	if err != nil {
		return err
	}
	// Leave autovacuum nothing to do in the window: the claims phase
	// churned every dispatch table, and its clean-up WAL is not an idle
	// pull's.
	if _, err := b.su.Exec(b.ctx, "VACUUM (ANALYZE)"); err != nil {
		return err
	}
	before, err := b.settle()
	if err != nil {
		return err
	}
	s, err := b.start()
	if err != nil {
		return err
	}
	// Warm-up, not measured: every session makes its TLS connection (16
	// at a time) with one pull, as a running worker has long since done;
	// otherwise 1,000 handshakes in the first cadence are the measurement.
	var warm atomic.Int64
	{
		var wg sync.WaitGroup
		sem := make(chan struct{}, 16)
		for _, w := range ws {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				if body, _, err := w.pullBody(); err == nil {
					if _, status, err := w.post(s, protocol.PathOfferPull, body); err == nil && status == http.StatusNoContent {
						warm.Add(1)
					}
				}
			}()
		}
		wg.Wait()
	}
	var pulls, shed atomic.Int64
	deadline := time.Now().Add(b.o.idleWindow)
	var wg sync.WaitGroup
	errc := make(chan error, 2*len(ws)) // pulls and probes
	var lat, probeLat latencies
	for _, w := range ws {
		paced(&wg, deadline, b.o.idleCadence, &lat, errc, func(timed timer) error {
			body, _, err := w.pullBody()
			if err != nil {
				return err
			}
			raw, status, err := timed(func() ([]byte, int, error) { return w.post(s, protocol.PathOfferPull, body) })
			switch {
			case err == nil && status == http.StatusServiceUnavailable:
				shed.Add(1) // the in-flight bound shed it; a worker backs off and retries
			case err != nil || status != http.StatusNoContent:
				return fmt.Errorf("idle pull: %d %s %v", status, raw, err)
			default:
				pulls.Add(1)
			}
			return nil
		})
	}
	// Same-run baseline of the box: every fifth session also sends, at the
	// same cadence, a request the listener answers 404 after TLS and
	// routing, before authentication and PostgreSQL. Its latency is what
	// the machine and the HTTP/TLS stack cost at this concurrency; the
	// pull's latency above it is ours.
	for i, w := range ws {
		if i%5 != 0 {
			continue
		}
		paced(&wg, deadline, b.o.idleCadence, &probeLat, errc, func(timed timer) error {
			raw, status, err := timed(func() ([]byte, int, error) { return w.post(s, "/v1/dispatchbench-probe", []byte("{}")) })
			if err != nil || status != http.StatusNotFound {
				return fmt.Errorf("probe: %d %s %v", status, raw, err)
			}
			return nil
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		s.stop()
		return err
	}
	s.stop()
	after, err := b.settle()
	if err != nil {
		return err
	}
	n := pulls.Load()
	if n == 0 {
		return errors.New("no idle pull")
	}
	// The write ratios count the warm-up pulls too (they ran between the
	// two counter readings); latency counts only the measured window.
	all := n + warm.Load()
	row("idle", "sessions × cadence", "%d × %s (%.0f pulls/s offered)", b.o.idleSessions, b.o.idleCadence,
		float64(b.o.idleSessions)/b.o.idleCadence.Seconds())
	row("idle", "warm-up pulls (one per session, not timed)", "%d", warm.Load())
	row("idle", "pulls answered 204 / shed with 503 (in-flight bound)", "%d / %d", n, shed.Load())
	row("idle", "latency of every answer p50 / p99 / max (goal p99 ≤ 10 ms)", "%s / %s / %s", percentile(lat.d, 0.5).Round(10*time.Microsecond),
		percentile(lat.d, 0.99).Round(10*time.Microsecond), percentile(lat.d, 1).Round(10*time.Microsecond))
	row("idle", "same-run baseline: 404 probe (TLS + HTTP, no auth, no database), 1 per 5 sessions, p50 / p99 / max", "%d probes: %s / %s / %s",
		len(probeLat.d), percentile(probeLat.d, 0.5).Round(10*time.Microsecond), percentile(probeLat.d, 0.99).Round(10*time.Microsecond),
		percentile(probeLat.d, 1).Round(10*time.Microsecond))
	row("idle", "WAL records per idle pull (goal 0)", "%.3f", float64(after.walRecords-before.walRecords)/float64(all))
	row("idle", "tuples written per idle pull (goal 0)", "%.3f", float64(after.tuples-before.tuples)/float64(all))
	row("idle", "database commits per idle pull (read-only included)", "%.2f", float64(after.commits-before.commits)/float64(all))
	return nil
}

// latencies collects the timings of several goroutines.
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

// timer runs one request and records its latency.
type timer func(req func() ([]byte, int, error)) ([]byte, int, error)

// paced runs step in its own goroutine once per cadence, from a random
// offset within the first cadence until deadline, adding the latency of
// each request step times to lat; an error is sent to errc and ends that
// goroutine.
func paced(wg *sync.WaitGroup, deadline time.Time, cadence time.Duration, lat *latencies, errc chan<- error, step func(timed timer) error) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		var mine []time.Duration
		defer func() { lat.mu.Lock(); lat.d = append(lat.d, mine...); lat.mu.Unlock() }()
		timed := func(req func() ([]byte, int, error)) ([]byte, int, error) {
			t0 := time.Now()
			raw, status, err := req()
			mine = append(mine, time.Since(t0))
			return raw, status, err
		}
		next := time.Now().Add(time.Duration(mrand.Int64N(int64(cadence))))
		for {
			time.Sleep(time.Until(next))
			if time.Now().After(deadline) {
				return
			}
			if err := step(timed); err != nil {
				errc <- err
				return
			}
			next = next.Add(cadence)
		}
	}()
}
