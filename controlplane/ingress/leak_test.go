package ingress_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"

	"github.com/ql3/ql3/core/fence"
	"github.com/ql3/ql3/core/protocol"
)

// TestNothingSecretLeaks: after a session flow with rotation, refusals,
// a pull and transitions, neither the credentials' text (nor their secret
// part) nor the lease token appears in any table, the server log or any
// response. (With the dispatcher wired in, the full-flow version of this
// test also covers leases, acks, logs and completion.)
func TestNothingSecretLeaks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, envOptions{})
	w := e.worker("w")
	c := e.client(w.cert)
	st := e.open(c, w)
	token, err := fence.NewLeaseToken(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pull, err := protocol.OfferPullRequest{SessionID: st.SessionID, Generation: st.Generation,
		OfferID: "7d3b0c3a-52a5-4f1e-8f8e-0a7c5b9d1e22", LeaseToken: token}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	e.must(c, protocol.PathOfferPull, w.cred, pull, http.StatusNoContent)
	e.must(c, protocol.PathSessionHeartbeat, w.cred, heartbeatBody(t, st, w.credID, "att-1"), http.StatusOK)
	b, textB, err := e.pub.RotateWorkerCredentials(ctx, w.id, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.must(c, protocol.PathSessionHeartbeat, textB, heartbeatBody(t, st, b.ID), http.StatusOK)
	e.must(c, protocol.PathSessionHeartbeat, w.cred, heartbeatBody(t, st, w.credID), http.StatusUnauthorized)
	if _, err := e.pub.ReconcileCredentials(ctx); err != nil {
		t.Fatal(err)
	}
	e.must(c, protocol.PathSessionHeartbeat, w.cred[:len(w.cred)-2]+"00", heartbeatBody(t, st, w.credID), http.StatusUnauthorized)
	e.must(c, protocol.PathSessionTransition, textB, transitionBody(t, st, protocol.SessionDraining), http.StatusOK)
	e.must(c, protocol.PathSessionTransition, textB, transitionBody(t, st, protocol.SessionOffline), http.StatusOK)

	dump, logs, answers := e.dumpAll(), e.log.String(), e.everything()
	if !strings.Contains(dump, "session.open") || !strings.Contains(logs, "refused") || !strings.Contains(answers, st.SessionID) {
		t.Fatal("the evidence is empty; the check would be vacuous")
	}
	secrets := map[string]string{
		"credential A": w.cred, "credential B": textB,
		"secret A": w.cred[len(w.cred)-64:], "secret B": textB[len(textB)-64:],
		"lease token": string(token), "lease token hex": hex.EncodeToString([]byte(token)),
	}
	for name, s := range secrets {
		for where, text := range map[string]string{"database": dump, "server log": logs, "responses": answers} {
			if strings.Contains(text, s) {
				t.Errorf("%s appears in the %s", name, where)
			}
		}
	}
}
