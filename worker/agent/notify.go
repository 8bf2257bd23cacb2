package agent

import "github.com/ql3/ql3/core/protocol"

// sendNotify on a worker (ADR 0053): each attempt's process gets the
// loopback relay's URL and a token of its own (worker/notifyrelay); a call
// is relayed over the ingress under the attempt's lease
// (protocol.PathNotifySend), so the control plane refuses it once the
// attempt is over. The token is released when the attempt is forgotten.

// NotifyRelay registers an attempt (its process's QL3_NOTIFY_URL and
// QL3_NOTIFY_TOKEN) and releases its token.
type NotifyRelay interface {
	Register(ref protocol.LeaseRef) (url, token string)
	Release(token string)
}

// notifyEnv adds at's sendNotify variables to extra (a script task's map
// is its own; other tasks get a new one).
func (a *Agent) notifyEnv(at *attempt, extra map[string]string) map[string]string {
	if a.notify == nil {
		return extra
	}
	at.releaseNotify(a.notify)
	if extra == nil {
		extra = map[string]string{}
	}
	extra["QL3_NOTIFY_URL"], at.notifyToken = a.notify.Register(at.offer.Lease(at.e.LeaseToken))
	extra["QL3_NOTIFY_TOKEN"] = at.notifyToken
	return extra
}

// releaseNotify refuses at's token from now on.
func (at *attempt) releaseNotify(n NotifyRelay) {
	if at.notifyToken != "" {
		n.Release(at.notifyToken)
		at.notifyToken = ""
	}
}
