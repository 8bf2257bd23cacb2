// Package controlplane is the cluster control plane's domain room: the
// records the admin API reads and writes (projects, tasks, triggers, runs,
// attempts, workers, credentials, audit lines, pages), the scheduler's
// admission decision (AdmissionFor: ids, idempotency key and event payloads
// for one core decision on a claimed schedule row), the worker principal
// with the ingress's denial reasons, and the ports the adapters implement
// (ports.go, worker_ports.go, feed.go). It imports the standard library,
// core and the uuid package only.
//
// Dependency direction (DESIGN.md §1, checked by cmd/ql3-control's deps
// test): postgres implements the ports; coordinator, adminapi and ingress
// import this package and core, never postgres; postgres never imports
// ingress; app wires the implementations in.
package controlplane
