package e2e

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// dropProxy relays TCP between a worker and an ingress. Armed, it drops
// the connection instead of relaying the first server→client read of at
// least minBytes: with TLS it cannot read paths, but while nothing else is
// large an offer (the spec rides in it) is the only such answer, so the
// worker sent its pull, the authority committed the claim, and the answer
// never arrives.
//
// With stallBytes set it instead stops relaying (holds the connection open,
// forwards nothing more) once one connection has carried that many bytes
// from the server — only a script blob is that large — until resume is
// closed: a transfer caught half-way, however fast the machine.
type dropProxy struct {
	ln         net.Listener
	target     string
	minBytes   int
	armed      atomic.Bool
	fired      chan struct{}
	once       sync.Once
	stallBytes int
	stalled    chan struct{}
	resume     chan struct{}
	stallOnce  sync.Once
	wg         sync.WaitGroup
}

func startDropProxy(t *testing.T, target string, minBytes int) *dropProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &dropProxy{ln: ln, target: target, minBytes: minBytes, fired: make(chan struct{}),
		stalled: make(chan struct{}), resume: make(chan struct{})}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() { _ = ln.Close(); p.wg.Wait() })
	return p
}

// startStallProxy relays like startDropProxy but, armed, stalls the first
// connection that carries stallBytes from the server (see dropProxy).
func startStallProxy(t *testing.T, target string, stallBytes int) *dropProxy {
	p := startDropProxy(t, target, 1<<62)
	p.stallBytes = stallBytes
	return p
}

// stallHere blocks a relay that has carried relayed bytes until resume,
// once, when the proxy is armed for a stall.
func (p *dropProxy) stallHere(relayed int) {
	if p.stallBytes == 0 || relayed < p.stallBytes || !p.armed.CompareAndSwap(true, false) {
		return
	}
	p.stallOnce.Do(func() { close(p.stalled) })
	<-p.resume
}

func (p *dropProxy) addr() string { return p.ln.Addr().String() }

func (p *dropProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.DialTimeout("tcp", p.target, 5*time.Second)
		if err != nil {
			_ = c.Close()
			continue
		}
		go func() { _, _ = io.Copy(s, c); _ = s.Close() }()
		go func() {
			defer c.Close()
			defer s.Close()
			buf := make([]byte, 64<<10)
			relayed := 0
			for {
				n, err := s.Read(buf)
				if n > 0 {
					relayed += n
					p.stallHere(relayed)
					if n >= p.minBytes && p.armed.CompareAndSwap(true, false) {
						p.once.Do(func() { close(p.fired) })
						return // the answer is lost with the connection
					}
					if _, werr := c.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
	}
}

// pullAnswerDropped: the pull's answer (an offer) is lost once; the worker
// sends the identical pull again (its pending-pull journal, ADR 0018) and
// gets the same offer replayed: one lease, one dispatch event, and the
// run succeeds.
func pullAnswerDropped(t *testing.T, c *cluster) {
	c.mu.Lock()
	w1, w2, cp := c.workers["w1"], c.workers["w2"], c.controls[1]
	c.mu.Unlock()
	proxy := startDropProxy(t, cp.ingress, 700)
	w3 := c.addWorker("w3", &control{admin: cp.admin, ingress: proxy.addr()})
	c.waitOnline("w3")
	// Only w3 pulls while the run is offered.
	for _, w := range []*worker{w1, w2} {
		w.stop(t, syscall.SIGTERM, 40*time.Second) // bounded: a hung drain fails, it does not hang the suite
	}
	proxy.armed.Store(true)
	task := c.createTask("replay-me", `{"kind":"qinglong/command@v1","shell":{"command":"echo replayed"},"concurrency":"allow"}`)
	run := c.runNow(task)
	select {
	case <-proxy.fired:
	case <-time.After(60 * time.Second):
		t.Fatal("the proxy never saw an offer-sized answer to drop")
	}
	c.eventually(60*time.Second, "the run succeeded after the replayed pull", func() bool { return c.runStatus(run) == "succeeded" })
	leases := c.scalar(`SELECT count(*) FROM ql3.run_leases WHERE run_id = $1`, run)
	dispatched := c.scalar(`SELECT count(*) FROM ql3.run_events WHERE run_id = $1 AND type = 'run.dispatched'`, run)
	attempts := c.scalar(`SELECT count(*) FROM ql3.attempts WHERE run_id = $1`, run)
	t.Logf("pull answer dropped once: %d lease(s), %d dispatch event(s), %d attempt(s)", leases, dispatched, attempts)
	if leases != 1 || dispatched != 1 || attempts != 1 {
		t.Errorf("after a dropped pull answer: %d leases, %d dispatch events, %d attempts; want 1 each", leases, dispatched, attempts)
	}
	w3.stop(t, syscall.SIGTERM, 40*time.Second) // bounded: a hung drain fails, it does not hang the suite
	for _, w := range []*worker{w1, w2} {
		c.startWorkerProc(w)
	}
	c.waitOnline("w1", "w2")
}
