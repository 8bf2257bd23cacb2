// Package ingress is the worker ingress: the mTLS listener on :5801 that
// authenticates a worker (client certificate bound to workers.tls_identity
// and a ql3w credential), bounds each body, decodes it with core/protocol
// and hands it to the ports below. It never builds a database adapter
// itself: the application wires the PostgreSQL implementations in
// (ADR-0108 "worker ingress depends on injected ports only").
//
// Per request the order is fixed: route → authenticate → bounded body →
// port. A request that fails authentication is refused before a byte of
// its body is read.
package ingress
