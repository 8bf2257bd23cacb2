// Package runops holds the operator's run operations (cancel, run now) and
// the reads that explain a Run (wait reasons, logs, worker sessions). It
// implements controlplane.RunOperations on the runtime role.
package runops
