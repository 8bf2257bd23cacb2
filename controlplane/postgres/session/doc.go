// Package session holds worker sessions (open, heartbeat, transitions) and
// worker authentication with its denial audit, on the worker-ingress role.
// It implements controlplane.SessionPort and controlplane.Authenticator.
package session
