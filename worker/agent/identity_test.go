package agent_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/worker/internal/fakeingress"
)

// Credential and certificate swapped mid-run: the next request presents
// both new ones, without a restart, and the old connection is closed.
func TestCredentialAndCertRotationWithoutRestart(t *testing.T) {
	r := newFakeRunner("")
	r.hold = true
	h := newHarness(t, r)
	h.srv.AddRun("run-1", "true", 600_000)
	h.start(nil)
	if !h.drive(time.Second, 100, func() bool { return len(h.requestsTo(protocol.PathSessionHeartbeat)) >= 1 }) {
		t.Fatal("no heartbeat")
	}
	var before fakeingress.Request
	h.srv.With(func(s *fakeingress.Server) { reqs := s.Requests(); before = reqs[len(reqs)-1] })
	mark := 0
	h.srv.With(func(s *fakeingress.Server) { mark = len(s.Requests()) })

	cert, key := h.pki.Issue(t, "worker-1", false, h.pki.CA.NotBefore)
	fakeingress.Replace(t, h.files.Credential, []byte(fakeingress.Credential("cred-b")), 0o600)
	fakeingress.Replace(t, h.files.Cert, cert, 0o600)
	fakeingress.Replace(t, h.files.Key, key, 0o600)

	if !h.drive(time.Second, 100, func() bool {
		n := 0
		h.srv.With(func(s *fakeingress.Server) {
			for _, q := range s.Requests()[mark:] {
				if q.Path == protocol.PathSessionHeartbeat {
					n++
				}
			}
		})
		return n >= 1
	}) {
		t.Fatal("no heartbeat after the rotation")
	}
	var after []fakeingress.Request
	h.srv.With(func(s *fakeingress.Server) { after = append(after, s.Requests()[mark:]...) })
	// The server sees the close when its read returns: an event in real
	// time, waited for with a bound.
	closed := false
	for deadline := time.Now().Add(realWait); !closed && time.Now().Before(deadline); {
		h.srv.With(func(s *fakeingress.Server) { closed = s.Closed(before.Conn) })
		if !closed {
			time.Sleep(time.Millisecond)
		}
	}
	first := after[0]
	if !strings.Contains(first.Credential, "ql3w_cred-b_") || first.CertSerial == before.CertSerial || first.Conn == before.Conn {
		t.Fatalf("first request after the rotation: credential %q serial %s conn %s (before: serial %s conn %s)",
			first.Credential[:min(len(first.Credential), 20)], first.CertSerial, first.Conn, before.CertSerial, before.Conn)
	}
	if !closed {
		t.Fatal("the connection made with the old identity was not closed")
	}
	for _, q := range after {
		if q.Path == protocol.PathSessionHeartbeat && !strings.Contains(string(q.Body), `"credentialId":"cred-b"`) {
			t.Fatalf("heartbeat after the rotation reports %s", q.Body)
		}
	}
	if _, gen, _ := sessionOf(h); gen != 1 {
		t.Fatalf("the rotation reopened the session (generation %d); it must continue", gen)
	}
}
