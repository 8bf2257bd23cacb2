package ingress_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/ql3/ql3/controlplane/internal/devpki"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/core/protocol"
)

// A peer that connects and never sends a ClientHello is closed by the
// handshake timeout (10 s by default; 300 ms here).
func TestHandshakeTimeoutClosesSilentPeers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{handshake: 300 * time.Millisecond})
	conn, err := net.Dial("tcp", e.srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second)) // a safety net, not the assertion
	_, err = conn.Read(make([]byte, 1))
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("the server kept a silent peer open")
	}
	if err == nil {
		t.Fatal("the server sent data to a peer that never said hello")
	}
	if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
		t.Logf("closed with %v", err)
	}
}

// The periodic file check reloads changed material without a signal.
func TestFileCheckReloadsChangedTrust(t *testing.T) {
	t.Parallel()
	ticks := make(chan time.Time)
	e := newEnv(t, envOptions{reloadTicks: ticks})
	w := e.worker("w")
	caB, err := devpki.NewCA("B", devpki.For(e.now, time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	tick := func() {
		// The loop takes the second tick only after it handled the first.
		ticks <- time.Now()
		ticks <- time.Now()
	}
	tick()
	if g := e.srv.TrustGeneration(); g != 1 {
		t.Fatalf("unchanged files moved the generation to %d", g)
	}
	e.writeBundle(e.ca.CertPEM(), caB.CertPEM())
	tick()
	if g := e.srv.TrustGeneration(); g != 2 {
		t.Fatalf("a changed bundle: generation %d, want 2", g)
	}
	e.open(e.client(w.cert), w)
	e.writeBundle([]byte("garbage"))
	tick()
	if g := e.srv.TrustGeneration(); g != 2 {
		t.Fatalf("bad material moved the generation to %d", g)
	}
	e.must(e.client(w.cert), protocol.PathSessionOpen, w.cred, openBody(t, w.credID), http.StatusOK)
}

// Beyond MaxInFlight requests a request is answered 503 with Retry-After
// at once (it never queues without bound).
func TestInFlightLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, envOptions{maxInFlight: 1, requestTimeout: 5 * time.Second})
	w := e.worker("w")
	c := e.client(w.cert)
	st := e.open(c, w)
	tx, err := e.db.Conn(t).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if err := postgres.LockSession(ctx, tx, mustUUID(t, st.SessionID), false); err != nil {
		t.Fatal(err)
	}
	done := make(chan int, 1)
	go func() {
		r, _, _ := e.post(e.client(w.cert), protocol.PathSessionTransition, w.cred, transitionBody(t, st, protocol.SessionDraining))
		done <- r.status
	}()
	// Wait until the first request is inside the database, waiting for the lock.
	watch := e.db.Conn(t)
	for {
		var waiting int
		if err := watch.QueryRow(ctx, `SELECT count(*) FROM pg_catalog.pg_stat_activity WHERE usename = 'ql3_worker_ingress' AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		select {
		case s := <-done:
			t.Fatalf("the first request finished (%d) before it could be observed waiting", s)
		case <-time.After(10 * time.Millisecond):
		}
	}
	r, _, err := e.post(c, protocol.PathSessionHeartbeat, w.cred, heartbeatBody(t, st, w.credID))
	if err != nil || r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" {
		t.Fatalf("second request over the limit: %+v %v", r, err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if s := <-done; s != http.StatusOK {
		t.Fatalf("the first request: %d", s)
	}
}
