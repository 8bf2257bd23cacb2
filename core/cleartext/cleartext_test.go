package cleartext

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	cases := []struct {
		scheme, host string
		refused      bool
	}{
		{"http", "192.0.2.10", true},
		{"http", "10.0.0.1", true},
		{"http", "0.0.0.0", true},
		{"http", "2001:db8::1", true},
		{"http", "::", true},
		{"http", "127.0.0.1", false},
		{"http", "127.8.9.10", false},
		{"http", "::1", false},
		{"http", "::ffff:127.0.0.1", false},
		{"http", "localhost", false},   // judged by GuardDial at connect time
		{"http", "example.com", false}, // idem
		{"https", "192.0.2.10", false},
	}
	for _, c := range cases {
		err := Check(c.scheme, c.host)
		if got := errors.Is(err, ErrToken); got != c.refused {
			t.Errorf("Check(%q, %q) = %v, want refused %v", c.scheme, c.host, err, c.refused)
		}
		if c.refused && !strings.Contains(err.Error(), c.host) {
			t.Errorf("Check(%q, %q) = %q does not name the host", c.scheme, c.host, err)
		}
	}
}

type fakeConn struct {
	peer   string
	closed bool
}

func (c *fakeConn) Close() error { c.closed = true; return nil }

func TestGuardDial(t *testing.T) {
	for _, c := range []struct {
		peer    string
		refused bool
	}{
		{"127.0.0.1:5700", false},
		{"[::1]:5700", false},
		{"[::ffff:127.0.0.1]:5700", false},
		{"192.0.2.10:5700", true},
		{"[2001:db8::1]:5700", true},
		{"[fe80::1%eth0]:5700", true},
		{"not an address", true},
	} {
		conn := &fakeConn{peer: c.peer}
		dial := GuardDial(func(context.Context, string, string) (*fakeConn, error) { return conn, nil },
			func(c *fakeConn) string { return c.peer })
		got, err := dial(context.Background(), "tcp", "server.example:5700")
		if c.refused {
			if !errors.Is(err, ErrToken) || got != nil || !conn.closed ||
				!strings.Contains(err.Error(), "server.example:5700 connects to "+c.peer) {
				t.Errorf("peer %s: conn %v, closed %v, err %v; want refused and closed", c.peer, got, conn.closed, err)
			}
			continue
		}
		if err != nil || got != conn || conn.closed {
			t.Errorf("peer %s: conn %v, err %v; want the open connection", c.peer, got, err)
		}
	}
	failed := errors.New("connection refused")
	dial := GuardDial(func(context.Context, string, string) (*fakeConn, error) { return nil, failed },
		func(c *fakeConn) string { return c.peer })
	if _, err := dial(context.Background(), "tcp", "x:1"); !errors.Is(err, failed) {
		t.Errorf("a failed dial: %v, want its own error", err)
	}
}
