package ingress_test

import (
	"context"
	"crypto/rand"
	"net/http"
	"testing"

	"github.com/google/uuid"

	"github.com/ql3/ql3/core/fence"
	"github.com/ql3/ql3/core/protocol"
)

// xid assigns and returns a transaction id on the superuser connection.
// Every transaction that writes anything gets one, and a read-only one
// never does, so the distance between two calls counts the writing
// transactions in between, cluster-wide. Not parallel: other tests of
// this package share the cluster.
func (e *env) xid(t *testing.T) uint64 {
	t.Helper()
	var x uint64
	if err := e.db.Conn(t).QueryRow(context.Background(), `SELECT pg_current_xact_id()::text::bigint`).Scan(&x); err != nil {
		t.Fatal(err)
	}
	return x
}

// TestRequestCosts: an authenticated idle pull (authentication + the
// dispatcher finding nothing) writes nothing; a heartbeat is exactly one
// writing transaction (session lease and observed credential in one
// statement, no audit line while the credential is unchanged).
func TestRequestCosts(t *testing.T) {
	e := newEnv(t, envOptions{dispatch: true})
	w := e.worker("w")
	c := e.client(w.cert)
	st := e.open(c, w)
	token, err := fence.NewLeaseToken(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	const n = 50
	pulls := make([][]byte, n)
	for i := range pulls {
		if pulls[i], err = (protocol.OfferPullRequest{SessionID: st.SessionID, Generation: st.Generation,
			OfferID: uuid.Must(uuid.NewRandom()).String(), LeaseToken: token}).Encode(); err != nil {
			t.Fatal(err)
		}
	}
	e.must(c, protocol.PathOfferPull, w.cred, pulls[0], http.StatusNoContent) // warm the connection and caches
	before := e.xid(t)
	for _, p := range pulls {
		e.must(c, protocol.PathOfferPull, w.cred, p, http.StatusNoContent)
	}
	if wrote := e.xid(t) - before - 1; wrote != 0 {
		t.Fatalf("%d idle pulls ran %d writing transactions, want 0", n, wrote)
	}
	before = e.xid(t)
	for i := 0; i < n; i++ {
		e.must(c, protocol.PathSessionHeartbeat, w.cred, heartbeatBody(t, st, w.credID), http.StatusOK)
	}
	if wrote := e.xid(t) - before - 1; wrote != n {
		t.Fatalf("%d heartbeats ran %d writing transactions, want exactly %d", n, wrote, n)
	}
	t.Logf("%d idle pulls: 0 writing transactions; %d heartbeats: %d", n, n, n)
}
