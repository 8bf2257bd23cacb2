package placement

import "strings"

// System executors (ADR 0061): executor names starting with
// SystemExecutorPrefix are advertised only by the control plane's own
// in-process executors (the subscription puller), never by a worker over
// the wire (protocol.DecodeSessionOpen refuses them). A session that
// advertises one is offered only Runs whose placement requires one; a Run
// that requires one is offered only to such a session.
const (
	SystemExecutorPrefix = "ql3."
	// SubscriptionExecutor runs the pulls of subscriptions.
	SubscriptionExecutor = SystemExecutorPrefix + "subscription"
)

// IsSystemExecutor reports whether name is reserved for a system executor.
func IsSystemExecutor(name string) bool { return strings.HasPrefix(name, SystemExecutorPrefix) }

// System reports whether c advertises a system executor.
func (c Capabilities) System() bool { return anySystem(c.Executors) }

// System reports whether r requires a system executor.
func (r Required) System() bool { return anySystem(r.Executors) }

func anySystem(executors []string) bool {
	for _, e := range executors {
		if IsSystemExecutor(e) {
			return true
		}
	}
	return false
}
