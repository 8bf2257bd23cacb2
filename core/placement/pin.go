package placement

import "maps"

// WorkerLabel is the reserved label that pins a task to one worker (ADR
// 0062): a required label WorkerLabel=<worker id> is satisfied by that
// worker's sessions only. The authority decides it from the session's
// worker, never from a label a worker reports, so no worker can claim
// another's pinned Runs.
const WorkerLabel = "ql3.worker"

// PinnedWorker returns the worker r's WorkerLabel requires ("" when none)
// and r without that label (the rest matches as usual).
func (r Requirements) PinnedWorker() (worker string, rest Requirements) {
	worker, ok := r.Required.Labels[WorkerLabel]
	if !ok {
		return "", r
	}
	rest = r
	rest.Required.Labels = maps.Clone(r.Required.Labels)
	delete(rest.Required.Labels, WorkerLabel)
	if len(rest.Required.Labels) == 0 {
		rest.Required.Labels = nil
	}
	return worker, rest
}
