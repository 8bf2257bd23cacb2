package client_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ql3/ql3/core/fence"
	"github.com/ql3/ql3/core/placement"
	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/worker/client"
	"github.com/ql3/ql3/worker/clock"
	"github.com/ql3/ql3/worker/identity"
	"github.com/ql3/ql3/worker/internal/fakeingress"
)

// A router without an RTC boots before the ingress certificate's
// notBefore: the failure is an unknown (retryable) outcome, recognised as
// "not yet valid" and logged once.
func TestCertificateNotYetValidIsRetryableAndLoggedOnce(t *testing.T) {
	pki := fakeingress.NewPKI(t, time.Now().Add(24*time.Hour)) // valid from tomorrow
	srv := fakeingress.New(t, pki, clock.NewFake(time.Now()))
	f := pki.WriteIdentity(t, fakeingress.Credential("cred-a"))
	ident, err := identity.NewProvider(identity.Paths{Credential: f.Credential, Cert: f.Cert, Key: f.Key, CABundle: f.CA}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	c, err := client.New(client.Config{BaseURL: srv.URL(), Identity: ident, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for range 3 {
		_, err = c.Post(context.Background(), protocol.PathSessionOpen, []byte(`{}`), 1024)
		if !client.IsUnknown(err) || !client.NotYetValid(err) {
			t.Fatalf("got %v, want an unknown outcome caused by a not-yet-valid certificate", err)
		}
	}
	if n := strings.Count(logs.String(), "not valid yet"); n != 1 {
		t.Fatalf("logged %d times, want once:\n%s", n, logs.String())
	}
}

func TestConfigRefusesPlainHTTPAndPaths(t *testing.T) {
	for _, u := range []string{"http://127.0.0.1:5801", "https://h:5801/x", "https://u@h:5801", "https://h:5801?q=1"} {
		if _, err := client.New(client.Config{BaseURL: u, Identity: &identity.Provider{}}); err == nil {
			t.Errorf("%s accepted", u)
		}
	}
}

// One kept-alive connection carries many requests; a large (chunked)
// answer is read whole; an answer beyond the route's limit is an unknown
// outcome, never a truncated success.
func TestOneConnectionAndBoundedAnswers(t *testing.T) {
	pki := fakeingress.NewPKI(t, time.Now().Add(-time.Hour))
	srv := fakeingress.New(t, pki, clock.NewFake(time.Now()))
	f := pki.WriteIdentity(t, fakeingress.Credential("cred-a"))
	ident, err := identity.NewProvider(identity.Paths{Credential: f.Credential, Cert: f.Cert, Key: f.Key, CABundle: f.CA}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(client.Config{BaseURL: srv.URL(), Identity: ident})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	big := strings.Repeat("x", 15_000)
	srv.AddRun("run-1", "echo "+big, 60_000) // a ~15 KiB offer: a chunked answer
	open, _ := protocol.SessionOpen{AgentVersion: "t", CredentialID: "cred-a", Capacity: 1,
		Capabilities: placement.Capabilities{OS: "linux", Arch: "amd64"}}.Encode()
	resp, err := c.Post(context.Background(), protocol.PathSessionOpen, open, protocol.MaxSessionState)
	if err != nil {
		t.Fatal(err)
	}
	st, err := protocol.DecodeSessionState(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := fence.NewLeaseToken(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pull, _ := protocol.OfferPullRequest{SessionID: st.SessionID, Generation: st.Generation,
		OfferID: "9b2f0d3e-1c4a-4b5e-8f6a-0d1e2f3a4b5c", LeaseToken: tok}.Encode()
	if _, err := c.Post(context.Background(), protocol.PathOfferPull, pull, 1024); !client.IsUnknown(err) {
		t.Fatalf("an offer beyond the limit: %v, want an unknown outcome", err)
	}
	resp, err = c.Post(context.Background(), protocol.PathOfferPull, pull, protocol.MaxOfferBytes)
	if err != nil {
		t.Fatal(err)
	}
	if o, err := protocol.DecodeOffer(resp.Body); err != nil || !strings.Contains(o.Spec.Shell.Command, big) {
		t.Fatalf("offer: %v", err)
	}
	for range 5 {
		if _, err := c.Post(context.Background(), protocol.PathOfferPull, pull, protocol.MaxOfferBytes); err != nil {
			t.Fatal(err)
		}
	}
	// The oversized answer closed its connection (it was not read to the
	// end); everything after shares one.
	if n := c.Dials(); n != 2 {
		t.Fatalf("%d connections, want 2", n)
	}
}
