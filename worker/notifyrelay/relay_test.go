//go:build linux

package notifyrelay

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/worker/client"
)

// fakeIngress records what the relay posts and answers as told.
type fakeIngress struct {
	mu     sync.Mutex
	posted []protocol.NotifySendRequest
	err    error
}

func (f *fakeIngress) Post(_ context.Context, path string, body []byte, _ int) (client.Response, error) {
	if path != protocol.PathNotifySend {
		return client.Response{}, errors.New("wrong path " + path)
	}
	q, err := protocol.DecodeNotifySendRequest(body) // the control plane's strict decoder
	if err != nil {
		return client.Response{}, &client.StatusError{Status: 400, Code: "invalid"}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return client.Response{}, f.err
	}
	f.posted = append(f.posted, q)
	return client.Response{Status: 200, Body: []byte(`{"v":1,"queued":2}`)}, nil
}

func start(t *testing.T) (*Relay, *fakeIngress) {
	t.Helper()
	f := &fakeIngress{}
	r, err := Listen(f)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); r.Serve() }()
	t.Cleanup(func() {
		_ = syscall.Shutdown(r.fd, syscall.SHUT_RDWR)
		_ = syscall.Close(r.fd)
		<-done
	})
	return r, f
}

func send(t *testing.T, url, token, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("answer is not JSON: %q", raw)
	}
	return resp.StatusCode, out
}

func ref(attempt string) protocol.LeaseRef {
	return protocol.LeaseRef{SessionID: "3f2b1c9e-1d2a-4b7c-8e9f-0a1b2c3d4e5f", Generation: 1, RunID: "run_1", AttemptID: attempt,
		OfferID: "7d3b0c3a-52a5-4f1e-8f8e-0a7c5b9d1e22", LeaseGeneration: 1, LeaseToken: "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"}
}

func TestRelaysUnderTheAttemptsLease(t *testing.T) {
	r, f := start(t)
	url, tok := r.Register(ref("att_1"))
	_, other := r.Register(ref("att_2"))
	if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, Path) || tok == other {
		t.Fatalf("url %q, tokens %q %q", url, tok, other)
	}
	for i := range 2 {
		st, out := send(t, url, tok, `{"title":"t","content":"c 中"}`)
		if st != 202 || out["queued"] != float64(2) {
			t.Fatalf("call %d: %d %v", i, st, out)
		}
	}
	if st, _ := send(t, url, other, `{"title":"x","content":""}`); st != 202 {
		t.Fatalf("other attempt: %d", st)
	}
	if len(f.posted) != 3 {
		t.Fatalf("posted %d", len(f.posted))
	}
	for i, want := range []struct {
		attempt string
		seq     int64
	}{{"att_1", 1}, {"att_1", 2}, {"att_2", 1}} {
		q := f.posted[i]
		if q.AttemptID != want.attempt || q.Seq != want.seq || q.LeaseRef != ref(want.attempt) {
			t.Fatalf("post %d: %+v", i, q)
		}
	}
	if m, err := f.posted[0].DecodeMessage(); err != nil || m.Title != "t" || m.Content != "c 中" {
		t.Fatalf("message %+v %v", m, err)
	}
}

func TestRefusals(t *testing.T) {
	r, f := start(t)
	url, tok := r.Register(ref("att_1"))
	for name, c := range map[string]struct {
		url, token, body string
		status           int
		code             string
	}{
		"no token":      {url, "", `{"title":"t"}`, 401, "unauthorized"},
		"unknown token": {url, "ql3w_nope", `{"title":"t"}`, 401, "unauthorized"},
		"wrong path":    {strings.TrimSuffix(url, Path) + "/other", tok, `{"title":"t"}`, 400, "invalid"},
		"oversize body": {url, tok, `{"title":"` + strings.Repeat("x", protocol.MaxNotifyBodyBytes) + `"}`, 413, "too_large"},
	} {
		t.Run(name, func(t *testing.T) {
			st, out := send(t, c.url, c.token, c.body)
			if st != c.status || out["code"] != c.code || out["message"] == "" {
				t.Fatalf("got %d %v, want %d %s", st, out, c.status, c.code)
			}
		})
	}
	// The control plane's answers: the lease is over, the message is too
	// large, the run is rate limited.
	for _, c := range []struct {
		err    error
		status int
		code   string
	}{
		{&client.StatusError{Status: 409, Code: "conflict"}, 401, "unauthorized"},
		{&client.StatusError{Status: 413, Code: "too_large"}, 413, "too_large"},
		{&client.UnknownError{Status: 429, Err: errors.New("Too Many Requests")}, 429, "rate_limited"},
		{&client.UnknownError{Err: errors.New("connection refused")}, 503, "unavailable"},
	} {
		f.err = c.err
		if st, out := send(t, url, tok, `{"title":"t"}`); st != c.status || out["code"] != c.code {
			t.Fatalf("%v: got %d %v", c.err, st, out)
		}
	}
	f.err = nil
	r.Release(tok)
	if st, out := send(t, url, tok, `{"title":"t"}`); st != 401 || out["code"] != "unauthorized" {
		t.Fatalf("released token: %d %v", st, out)
	}
	if len(f.posted) != 0 {
		t.Fatalf("refused calls were relayed: %+v", f.posted)
	}
}
