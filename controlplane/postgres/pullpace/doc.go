// Package pullpace is the pull pacing source of the worker ingress (ADR
// 0030): PullPacer implements controlplane.PullPacer on the runtime role
// from one indexed read of the scheduler's cursors per replica and TTL,
// answering empty pulls from memory.
package pullpace
