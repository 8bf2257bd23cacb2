package ingress_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"sync"
	"testing"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/fence"
	"github.com/ql3/ql3/core/protocol"
)

// fakeNotify answers a remote sendNotify as told.
type fakeNotify struct {
	mu   sync.Mutex
	got  []protocol.NotifySendRequest
	errs []error // per call, then nil
}

func (f *fakeNotify) LeaseNotify(_ context.Context, p controlplane.Principal, q protocol.NotifySendRequest) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, q)
	if len(f.errs) > 0 {
		err := f.errs[0]
		f.errs = f.errs[1:]
		if err != nil {
			return 0, err
		}
	}
	return 2, nil
}

// TestNotifySendRoute: the route decodes strictly, hands the call to the
// port and answers its receipt; the per-Run limit is 429 with a
// Retry-After, a lease that is over is 409, a body past its limit is
// refused before the port.
func TestNotifySendRoute(t *testing.T) {
	t.Parallel()
	fn := &fakeNotify{errs: []error{nil,
		errs.E(errs.Unavailable, controlplane.ErrNotifyRateLimited, "rate limited: this run sent 20 notifications within a minute; the limit is 20"),
		errs.E(errs.Conflict, "leaseGeneration", "the attempt is over: its lease is no longer live")}}
	e := newEnv(t, envOptions{notify: fn})
	w := e.worker("router-n")
	c := e.client(w.cert)
	token, err := fence.NewLeaseToken(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	q := protocol.NotifySendRequest{LeaseRef: protocol.LeaseRef{SessionID: "3f2b1c9e-1d2a-4b7c-8e9f-0a1b2c3d4e5f", Generation: 1,
		RunID: "run_1", AttemptID: "att_1", OfferID: "7d3b0c3a-52a5-4f1e-8f8e-0a7c5b9d1e22", LeaseGeneration: 1, LeaseToken: token},
		Seq: 1, Message: `{"title":"t","content":"c"}`}
	body, err := q.Encode()
	if err != nil {
		t.Fatal(err)
	}
	rc, err := protocol.DecodeNotifySendReceipt(e.must(c, protocol.PathNotifySend, w.cred, body, http.StatusOK))
	if err != nil || rc.Queued != 2 {
		t.Fatalf("receipt %+v %v", rc, err)
	}
	r, _, err := e.post(c, protocol.PathNotifySend, w.cred, body)
	if err != nil || r.status != http.StatusTooManyRequests || r.header.Get(protocol.HeaderRetryAfter) == "" {
		t.Fatalf("rate limited: %+v %v", r, err)
	}
	var eb errs.Body
	if json.Unmarshal(r.body, &eb) != nil || eb.Field != controlplane.ErrNotifyRateLimited {
		t.Fatalf("rate limited body: %s", r.body)
	}
	e.must(c, protocol.PathNotifySend, w.cred, body, http.StatusConflict)
	big := make([]byte, protocol.MaxNotifySendBytes+1)
	if r, _, err := e.post(c, protocol.PathNotifySend, w.cred, big); err != nil || r.status != http.StatusRequestEntityTooLarge {
		t.Fatalf("oversize: %+v %v", r.status, err)
	}
	if len(fn.got) != 3 || fn.got[0].AttemptID != "att_1" || fn.got[0].Message != q.Message {
		t.Fatalf("port saw %+v", fn.got)
	}
}
