package controlplane

// Worker is a registered worker.
type Worker struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	TLSIdentity  string `json:"tlsIdentity,omitempty"`
	Status       string `json:"status"`
	Version      int64  `json:"version"`
	CreatedAtMs  int64  `json:"createdAtMs"`
	UpdatedAtMs  int64  `json:"updatedAtMs"`
	DisabledAtMs int64  `json:"disabledAtMs,omitempty"`
}

// WorkerInput registers a worker. TLSIdentity is the certificate identity
// (e.g. its subject common name or URI SAN) the ingress binds to it.
type WorkerInput struct {
	Name        string
	TLSIdentity string
}

// WorkerCredential describes a credential; the secret itself is returned
// once, by IssueWorkerCredential and RotateWorkerCredentials, and never
// stored.
type WorkerCredential struct {
	ID          string `json:"id"`
	WorkerID    string `json:"workerId"`
	Status      string `json:"status"`
	CreatedAtMs int64  `json:"createdAtMs"`
	ExpiresAtMs int64  `json:"expiresAtMs,omitempty"`
	RevokedAtMs int64  `json:"revokedAtMs,omitempty"`
	// Rotation (ADR 0010): the credential that supersedes this one, the
	// latest time this one stays valid, and why it was revoked.
	SupersededBy  string `json:"supersededBy,omitempty"`
	RevokeAfterMs int64  `json:"revokeAfterMs,omitempty"`
	RevokeReason  string `json:"revokeReason,omitempty"`
}

// APIToken describes an admin API token; its text is returned once by
// CreateAPIToken and never stored.
type APIToken struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Status      string `json:"status"`
	CreatedAtMs int64  `json:"createdAtMs"`
	ExpiresAtMs int64  `json:"expiresAtMs,omitempty"`
	RevokedAtMs int64  `json:"revokedAtMs,omitempty"`
	// Scopes are core/access's native scopes (ADR 0060); a token made
	// before them is admin.
	Scopes []string `json:"scopes"`
	// Live: active and not expired when read.
	Live bool `json:"live"`
}
