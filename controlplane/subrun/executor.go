package subrun

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/fence"
	"github.com/ql3/ql3/core/placement"
	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/core/run"
)

// Executor is the control plane's own in-process worker for pulls (ADR
// 0061). It holds a session of a worker of its own (Principal) through the
// ordinary session port, advertising only placement.SubscriptionExecutor,
// so the dispatcher offers it the Runs of subscriptions' system tasks and
// nothing else (and no remote worker can claim those: the reserved
// executor is refused over the wire). Each offer is one pull: acked, its
// log streamed into the Run's log, completed under the lease fence; a
// cancel (or the timeout) arriving with a heartbeat cancels the pull.
type Executor struct {
	Puller    *Puller
	Sessions  controlplane.SessionPort
	Leases    controlplane.LeasePort
	Principal controlplane.Principal // the executor's worker and credential
	Now       func() time.Time       // nil = time.Now (completion timestamps)
	Log       *slog.Logger

	mu         sync.Mutex
	state      protocol.SessionState
	caps       placement.Capabilities
	running    string             // the attempt in progress, "" when idle
	cancelPull context.CancelFunc // cancels it
}

func (e *Executor) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

func (e *Executor) logger() *slog.Logger {
	if e.Log != nil {
		return e.Log
	}
	return slog.Default()
}

// Open opens (or replaces) the executor's session.
func (e *Executor) Open(ctx context.Context) error {
	e.caps = placement.Capabilities{OS: runtime.GOOS, Arch: runtime.GOARCH, Executors: []string{placement.SubscriptionExecutor}}
	st, err := e.Sessions.Open(ctx, e.Principal, protocol.SessionOpen{V: protocol.Version, AgentVersion: "ql3-control/subscriptions",
		CredentialID: e.Principal.CredentialID, Capacity: 1, Capabilities: e.caps})
	if err != nil {
		return err
	}
	e.mu.Lock()
	e.state = st
	e.mu.Unlock()
	return nil
}

// Heartbeat renews the session and the lease of the pull in progress; a
// cancel or revoke of that lease cancels the pull.
func (e *Executor) Heartbeat(ctx context.Context) error {
	e.mu.Lock()
	st, attempt := e.state, e.running
	e.mu.Unlock()
	digest, err := e.caps.Digest()
	if err != nil {
		return err
	}
	hb := protocol.SessionHeartbeat{V: protocol.Version, SessionID: st.SessionID, Generation: st.Generation,
		CapabilitiesDigest: digest, CredentialID: e.Principal.CredentialID}
	if attempt != "" {
		hb.RunningAttemptIDs = []string{attempt}
	}
	next, err := e.Sessions.Heartbeat(ctx, e.Principal, hb)
	if err != nil {
		return err
	}
	if next.Status == protocol.SessionOffline || next.Replaced {
		return e.Open(ctx)
	}
	if attempt != "" {
		controls, err := e.Leases.RenewForHeartbeat(ctx, e.Principal, st.SessionID, st.Generation, hb.RunningAttemptIDs)
		if err != nil {
			return err
		}
		for _, c := range controls {
			if c.AttemptID == attempt && c.Action != protocol.LeaseExtend {
				e.mu.Lock()
				if e.running == attempt && e.cancelPull != nil {
					e.cancelPull()
				}
				e.mu.Unlock()
			}
		}
	}
	e.mu.Lock()
	e.state.LeaseExpiresAtMs = next.LeaseExpiresAtMs
	e.mu.Unlock()
	return nil
}

// Interval is the heartbeat interval the session asks for.
func (e *Executor) Interval() time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.state.HeartbeatIntervalMs <= 0 {
		return 15 * time.Second
	}
	return time.Duration(e.state.HeartbeatIntervalMs) * time.Millisecond
}

// RunOne claims at most one offer and runs its pull; it reports whether
// there was one and, when not, the pause the dispatcher asks for.
func (e *Executor) RunOne(ctx context.Context) (bool, time.Duration, error) {
	e.mu.Lock()
	st := e.state
	e.mu.Unlock()
	token, err := fence.NewLeaseToken(rand.Reader)
	if err != nil {
		return false, 0, err
	}
	offerID, err := uuid.NewV7()
	if err != nil {
		return false, 0, err
	}
	offer, pause, err := e.Leases.Pull(ctx, e.Principal, protocol.OfferPullRequest{V: protocol.Version, SessionID: st.SessionID,
		Generation: st.Generation, OfferID: offerID.String(), LeaseToken: token})
	if err != nil || offer == nil {
		return false, pause, err
	}
	ref := protocol.LeaseRef{SessionID: st.SessionID, Generation: st.Generation, RunID: offer.RunID, AttemptID: offer.AttemptID,
		OfferID: offer.OfferID, LeaseGeneration: offer.LeaseGeneration, LeaseToken: token}
	return true, 0, e.runOffer(ctx, offer, ref)
}

func (e *Executor) runOffer(ctx context.Context, offer *protocol.Offer, ref protocol.LeaseRef) error {
	started := e.now().UnixMilli()
	for _, phase := range []protocol.AckPhase{protocol.AckStarting, protocol.AckRunning} {
		ctl, err := e.Leases.Ack(ctx, e.Principal, protocol.Ack{V: protocol.Version, LeaseRef: ref, Phase: phase})
		if err != nil {
			return err
		}
		if ctl.Action == protocol.LeaseRevoke {
			return nil // the lease is gone: nothing to run, nothing to report
		}
	}
	pullCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	e.mu.Lock()
	e.running, e.cancelPull = offer.AttemptID, cancel
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		e.running, e.cancelPull = "", nil
		e.mu.Unlock()
	}()
	log := &runLog{ctx: ctx, e: e, ref: ref}
	var perr error
	if sub, err := e.Puller.Subs.GetSubscriptionByTask(pullCtx, offer.TaskID); err != nil {
		perr = err
	} else {
		_, perr = e.Puller.Pull(pullCtx, sub.ID, log)
	}
	c := protocol.Completion{V: protocol.Version, LeaseRef: ref, StartedAtMs: started}
	switch {
	case perr == nil:
		zero := 0
		c.Status, c.ExitCode = run.AttemptSucceeded, &zero
	case pullCtx.Err() != nil && ctx.Err() == nil:
		fmt.Fprintf(log, "cancelled: %v\n", perr)
		c.Status, c.ErrorClass = run.AttemptCancelled, run.ErrorCancelledByUser
	default:
		fmt.Fprintf(log, "pull failed: %v\n", perr)
		one := 1
		c.Status, c.ErrorClass, c.ExitCode = run.AttemptFailed, run.ErrorProcessExit, &one
	}
	if err := log.close(); err != nil {
		return err
	}
	c.StdoutBytes = log.offset
	c.FinishedAtMs = max(e.now().UnixMilli(), started, 1)
	rc, err := e.Leases.Complete(ctx, e.Principal, c)
	if err != nil {
		return err
	}
	e.logger().Info("subscription pull", "run", offer.RunID, "status", string(c.Status), "receipt", string(rc.Disposition))
	return nil
}

// Serve keeps the session, heartbeats and runs pulls one at a time until
// ctx ends; idle is the longest pause between empty pulls.
func (e *Executor) Serve(ctx context.Context, idle time.Duration) error {
	for {
		if err := e.Open(ctx); err == nil {
			break
		} else if !sleep(ctx, idle) {
			return ctx.Err()
		}
	}
	hbCtx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		for sleep(hbCtx, e.Interval()) {
			if err := e.Heartbeat(hbCtx); err != nil && hbCtx.Err() == nil {
				e.logger().Warn("subscription executor heartbeat", "err", err)
			}
		}
	}()
	for ctx.Err() == nil {
		got, pause, err := e.RunOne(ctx)
		if err != nil && ctx.Err() == nil {
			e.logger().Warn("subscription executor", "err", err)
			if errs.Code(err) == errs.Conflict {
				_ = e.Open(ctx) // a replaced session: open a new one
			}
			pause = idle
		}
		if got {
			continue
		}
		if pause <= 0 || pause > idle {
			pause = idle
		}
		if !sleep(ctx, pause) {
			break
		}
	}
	return ctx.Err()
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// runLog streams a pull's log into the Run's stdout, in chunks of at most
// protocol.MaxLogChunkBytes, under the lease fence.
type runLog struct {
	ctx    context.Context
	e      *Executor
	ref    protocol.LeaseRef
	buf    []byte
	offset int64
	err    error
}

func (l *runLog) Write(p []byte) (int, error) {
	l.buf = append(l.buf, p...)
	for l.err == nil && len(l.buf) >= protocol.MaxLogChunkBytes {
		l.flush(protocol.MaxLogChunkBytes, false)
	}
	return len(p), nil
}

func (l *runLog) flush(n int, eof bool) {
	if l.err != nil {
		return
	}
	chunk := protocol.LogChunk{V: protocol.Version, LeaseRef: l.ref, Stream: protocol.Stdout, Offset: l.offset,
		Data: append([]byte(nil), l.buf[:n]...), EOF: eof}
	if _, err := l.e.Leases.Log(l.ctx, l.e.Principal, chunk); err != nil {
		l.err = err
		return
	}
	l.offset += int64(n)
	l.buf = l.buf[n:]
}

func (l *runLog) close() error {
	for l.err == nil && len(l.buf) > protocol.MaxLogChunkBytes {
		l.flush(protocol.MaxLogChunkBytes, false)
	}
	l.flush(len(l.buf), true)
	return l.err
}
