package controlplane

import (
	"context"
	"log/slog"
)

// Denial reasons: low-cardinality categories for audit lines and logs.
const (
	ReasonTLSVersion         = "tls_version"
	ReasonNoClientCert       = "no_client_cert"
	ReasonUntrustedCert      = "untrusted_cert"
	ReasonCertExpired        = "cert_expired"
	ReasonCertRevoked        = "cert_revoked"
	ReasonRateLimited        = "rate_limited"
	ReasonNoCredential       = "no_credential"
	ReasonMalformed          = "malformed_credential"
	ReasonUnknownCredential  = "unknown_credential"
	ReasonWrongSecret        = "wrong_secret"
	ReasonCredentialRevoked  = "credential_revoked"
	ReasonCredentialExpired  = "credential_expired"
	ReasonCredentialReplaced = "credential_superseded"
	ReasonWorkerDisabled     = "worker_disabled"
	ReasonCertNotBound       = "cert_not_bound"
)

// Credential is a presented credential's text. It formats as [redacted] in
// fmt and slog, so it cannot reach a log line by accident.
type Credential string

func (Credential) String() string { return "[redacted]" }

func (Credential) GoString() string { return "[redacted]" }

func (Credential) LogValue() slog.Value { return slog.StringValue("[redacted]") }

// Presented is what a request offers as identity: the identities of its
// verified client certificate and the Authorization credential.
type Presented struct {
	// CertIdentities are the leaf certificate's URI SANs, DNS SANs and
	// subject common name, sorted and deduplicated; the worker's
	// tls_identity must be one of them.
	CertIdentities []string
	Credential     Credential
}

// Denied is the refusal an Authenticator returns; Reason is one of the
// Reason* categories. WorkerID is set when the credential named a worker.
type Denied struct {
	Reason   string
	WorkerID string
}

func (d *Denied) Error() string { return "worker authentication refused: " + d.Reason }

// Authenticator resolves a Presented identity to a Principal. A refusal is
// a *Denied; any other error is a dependency failure (503).
type Authenticator interface {
	Authenticate(ctx context.Context, p Presented) (Principal, error)
}

// Denial is one refused request or handshake, for the audit log. It holds
// nothing secret.
type Denial struct {
	Reason          string
	Route           string // "" for a refused handshake
	RemoteAddr      string
	CertIdentity    string // first certificate identity, when there was a certificate
	WorkerID        string
	TrustGeneration uint64
}

// Auditor writes denial lines (ql3.audit_log on the ingress role).
type Auditor interface {
	AuditDenied(ctx context.Context, d Denial) error
}

// Principal is the authenticated worker behind one request. It comes from
// the transport and the Authorization header only, never from a body; ids
// in bodies are compared with it by the ports.
type Principal struct {
	// WorkerID is workers.worker_id (canonical UUID text): the worker the
	// client certificate is bound to AND the credential belongs to.
	WorkerID string
	// CredentialID is the id of the ql3w credential the request presented
	// (canonical UUID text). The secret and its digest never leave the
	// authenticator.
	CredentialID string
	// TLSIdentity is the certificate identity that matched
	// workers.tls_identity (low sensitivity; used in audit lines).
	TLSIdentity string
	// TrustGeneration is the CA bundle generation the connection was
	// verified under (for diagnostics; stale generations never reach a port).
	TrustGeneration uint64
	// RemoteAddr is the peer's IP address (audit only).
	RemoteAddr string
}
