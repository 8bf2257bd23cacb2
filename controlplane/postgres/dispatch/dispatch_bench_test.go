package dispatch_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/ql3/ql3/controlplane/postgres/dispatch"
	"github.com/ql3/ql3/core/protocol"
)

// BenchmarkDispatchRunCycle is one no-op remote run on the runtime role
// without the ingress (pull, starting, running, completion), in parallel
// sessions; BenchmarkBaselineWriteTx is a pgbench -N-like write
// transaction (UPDATE, SELECT, INSERT) on the same harness, so the two are
// read as a ratio in one run:
//
//	go test ./postgres/ -run XXX -bench 'DispatchRunCycle|BaselineWriteTx' -benchtime 3s
func BenchmarkDispatchRunCycle(b *testing.B) {
	e := newDispatchEnv(b, dispatch.DispatchOptions{})
	rev := e.revision(testSpec())
	b.StopTimer()
	for range b.N + 64 {
		e.queue(rev, 0)
	}
	e.exec(`VACUUM ANALYZE ql3.runs, ql3.attempts, ql3.run_events`)
	var n atomic.Int64
	workers := make([]*dispatchWorker, 64)
	for i := range workers {
		workers[i] = e.worker(linuxCaps(), 1)
	}
	var pullNs, startNs, runNs, doneNs atomic.Int64
	lap := func(acc *atomic.Int64, t0 time.Time) time.Time {
		now := time.Now()
		acc.Add(int64(now.Sub(t0)))
		return now
	}
	defer func() {
		for name, v := range map[string]*atomic.Int64{"pull-ms/op": &pullNs, "starting-ms/op": &startNs, "running-ms/op": &runNs, "complete-ms/op": &doneNs} {
			b.ReportMetric(float64(v.Load())/1e6/float64(b.N), name)
		}
	}()
	b.StartTimer()
	b.SetParallelism(1)
	b.RunParallel(func(pb *testing.PB) {
		w := workers[n.Add(1)-1]
		for pb.Next() {
			for {
				req := w.pullReq(e.t)
				t0 := time.Now()
				o, _, err := e.d.Pull(e.ctx, w.p, req)
				t0 = lap(&pullNs, t0)
				if err != nil {
					b.Error(err)
					return
				}
				if o == nil {
					continue
				}
				h := held{w, o, req.LeaseToken}
				for i, ph := range []protocol.AckPhase{protocol.AckStarting, protocol.AckRunning} {
					if _, err := e.ack(h, ph); err != nil {
						b.Error(err)
						return
					}
					t0 = lap([]*atomic.Int64{&startNs, &runNs}[i], t0)
				}
				_, err = e.complete(h, succeeded(h, 0, 0))
				lap(&doneNs, t0)
				if err != nil {
					b.Error(err)
					return
				}
				break
			}
		}
	})
}

func BenchmarkBaselineWriteTx(b *testing.B) {
	e := newDispatchEnv(b, dispatch.DispatchOptions{})
	e.exec(`CREATE TABLE public.acc (id int PRIMARY KEY, balance bigint NOT NULL, filler char(84) NOT NULL DEFAULT '')`)
	e.exec(`CREATE TABLE public.hist (id int, delta bigint, at timestamptz DEFAULT now(), filler char(22) DEFAULT '')`)
	e.exec(`INSERT INTO public.acc (id, balance) SELECT g, 0 FROM generate_series(1, 100000) g`)
	pool := e.db.Pool(e.t, "")
	var k atomic.Int64
	b.ResetTimer()
	b.SetParallelism(1)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := int(k.Add(7919)%100000) + 1
			tx, err := pool.Begin(e.ctx)
			if err != nil {
				b.Error(err)
				return
			}
			var bal int64
			if _, err := tx.Exec(e.ctx, `UPDATE public.acc SET balance = balance + 1 WHERE id = $1::int`, id); err == nil {
				err = tx.QueryRow(e.ctx, `SELECT balance FROM public.acc WHERE id = $1::int`, id).Scan(&bal)
				if err == nil {
					_, err = tx.Exec(e.ctx, `INSERT INTO public.hist (id, delta) VALUES ($1::int, 1)`, id)
				}
				if err == nil {
					err = tx.Commit(e.ctx)
				}
			}
			if err != nil {
				_ = tx.Rollback(e.ctx)
				b.Error(err)
				return
			}
		}
	})
}
