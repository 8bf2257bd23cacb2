package client_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

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
