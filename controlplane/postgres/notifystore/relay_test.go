package notifystore_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres/internal/pgfixture"
	"github.com/ql3/ql3/controlplane/postgres/notifystore"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/fence"
	cn "github.com/ql3/ql3/core/notify"
	"github.com/ql3/ql3/core/notify/channel"
	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/notifykit"
)

// liveLease writes a running Run with a live lease on the fixture's
// session and returns the worker's proof of it.
func (f *fixture) liveLease(t *testing.T) protocol.LeaseRef {
	t.Helper()
	runID, attemptID := f.Run(t, pgfixture.LifeRun{Status: "running", Attempt: "running", Lease: "live"})
	token, err := fence.NewLeaseToken(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	offerID, digest := uuid.New(), token.Digest()
	f.Exec(t, `UPDATE ql3.run_leases SET offer_id = $2, token_digest = $3 WHERE attempt_id = $1::uuid`, attemptID, offerID.String(), digest[:])
	return protocol.LeaseRef{SessionID: f.SessionID.String(), Generation: 1, RunID: runID.String(), AttemptID: attemptID.String(),
		OfferID: offerID.String(), LeaseGeneration: 1, LeaseToken: token}
}

func notifyCall(t *testing.T, ref protocol.LeaseRef, seq int64, title, content string) protocol.NotifySendRequest {
	t.Helper()
	body, err := json.Marshal(map[string]string{"title": title, "content": content})
	if err != nil {
		t.Fatal(err)
	}
	return protocol.NotifySendRequest{V: protocol.Version, LeaseRef: ref, Seq: seq, Message: string(body)}
}

// TestRemoteSendNotify: a remote script's sendNotify, relayed under its
// attempt's lease, reaches the task's script channel through the outbox;
// a resent call is queued once; the token of another Run, a wrong lease
// token and an ended lease are refused; the per-Run limit and the
// message's bounds answer clear errors.
func TestRemoteSendNotify(t *testing.T) {
	t.Parallel()
	hook := newReceiver(t)
	f := newFixture(t, hook, cn.Rule{Kinds: []cn.Kind{cn.KindScript}})
	ctx := context.Background()
	kicked := 0
	relay := notifystore.NewRelay(f.Runtime, notifykit.Policy{}, nil, func() { kicked++ })
	p := controlplane.Principal{WorkerID: f.WorkerID.String()}

	ref := f.liveLease(t)
	for _, q := range []protocol.NotifySendRequest{
		notifyCall(t, ref, 1, "t", "c"),
		notifyCall(t, ref, 1, "t", "c"), // the relay resent a call whose answer was lost
		notifyCall(t, ref, 2, "t2", "c2"),
	} {
		if n, err := relay.LeaseNotify(ctx, p, q); err != nil || n != 1 {
			t.Fatalf("seq %d: queued %d, %v", q.Seq, n, err)
		}
	}
	if kicked != 3 {
		t.Errorf("the deliverer was woken %d times, want 3", kicked)
	}
	f.replica(t, "r1")
	ds := f.settled(t, 2)
	if len(ds) != 2 {
		t.Fatalf("%d rows, want 2 (a resent call is queued once): %+v", len(ds), ds)
	}
	for _, d := range ds {
		if d.Status != notifykit.StatusDelivered || d.Kind != string(cn.KindScript) || d.RunID != ref.RunID ||
			!strings.Contains(d.Key, ref.AttemptID) || hook.accepted(d.Key) != 1 {
			t.Errorf("row %+v (accepted %d)", d, hook.accepted(d.Key))
		}
	}

	other := f.liveLease(t)
	stolen := ref
	stolen.AttemptID, stolen.OfferID = other.AttemptID, other.OfferID // another Run's attempt with this token
	wrongToken := ref
	wrongToken.LeaseToken = other.LeaseToken
	for name, r := range map[string]protocol.LeaseRef{"another run": stolen, "a wrong token": wrongToken} {
		if _, err := relay.LeaseNotify(ctx, p, notifyCall(t, r, 3, "x", "y")); errs.Code(err) != errs.Conflict {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := relay.LeaseNotify(ctx, controlplane.Principal{WorkerID: uuid.NewString()}, notifyCall(t, ref, 3, "x", "y")); errs.Code(err) != errs.Conflict {
		t.Errorf("another worker: %v", err)
	}

	big := notifyCall(t, other, 1, "t", strings.Repeat("x", channel.MaxContentBytes+1))
	if _, err := relay.LeaseNotify(ctx, p, big); errs.Code(err) != errs.TooLarge || errs.Field(err) != "content" ||
		!strings.Contains(err.Error(), "16384") {
		t.Errorf("oversize content: %v", err)
	}
	for i := range notifykit.ScriptCallsPerWindow {
		if _, err := relay.LeaseNotify(ctx, p, notifyCall(t, other, int64(i+1), "t", "c")); err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
	}
	_, err := relay.LeaseNotify(ctx, p, notifyCall(t, other, 99, "t", "c"))
	if errs.Code(err) != errs.Unavailable || errs.Field(err) != controlplane.ErrNotifyRateLimited || !strings.Contains(err.Error(), "rate limited") {
		t.Errorf("over the per-Run limit: %v", err)
	}

	f.Exec(t, `UPDATE ql3.run_leases SET status = 'completed', ended_at_ms = 1 WHERE attempt_id = $1::uuid`, ref.AttemptID)
	if _, err := relay.LeaseNotify(ctx, p, notifyCall(t, ref, 4, "late", "c")); errs.Code(err) != errs.Conflict {
		t.Errorf("after the attempt ended: %v", err)
	}
}
