package ingress

import (
	"context"
	"net/http"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/httpkit"
)

// notifySend relays a remote script's sendNotify (protocol.PathNotifySend,
// ADR 0053): the port proves the lease and queues the message. A call over
// the per-Run limit is answered 429, so the worker can tell the script
// apart from an unavailable replica.
func (s *Server) notifySend(ctx context.Context, w http.ResponseWriter, r *http.Request, p controlplane.Principal, body []byte) ([]byte, bool) {
	if s.cfg.Notify == nil {
		s.fail(ctx, w, r, p.WorkerID, errs.E(errs.Unavailable, "", "notifications are off on this replica (no --secret-key-file)"))
		return nil, false
	}
	q, err := protocol.DecodeNotifySendRequest(body)
	if err != nil {
		s.fail(ctx, w, r, p.WorkerID, err)
		return nil, false
	}
	n, err := s.cfg.Notify.LeaseNotify(ctx, p, q)
	if errs.Code(err) == errs.Unavailable && errs.Field(err) == controlplane.ErrNotifyRateLimited {
		w.Header().Set(protocol.HeaderRetryAfter, "60")
		body, _ := errs.Public(err)
		httpkit.WriteErrorStatus(w, http.StatusTooManyRequests, errs.FromBody(body))
		return nil, false
	}
	if err != nil {
		s.fail(ctx, w, r, p.WorkerID, err)
		return nil, false
	}
	out, err := protocol.NotifySendReceipt{Queued: n}.Encode()
	if err != nil {
		s.fail(ctx, w, r, p.WorkerID, errs.E(errs.Internal, "", "encode notify receipt: %v", err))
		return nil, false
	}
	return out, true
}
