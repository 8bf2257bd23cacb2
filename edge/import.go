package edge

import "context"

// Audit actions of the import (ADR 0056).
const (
	AuditImportApply = "import.apply"
	AuditImportFiles = "import.files"
)

// ImportBatch is everything one import apply writes in one transaction
// (ADR 0056): built by edge/importer from a plan whose digest the caller
// confirmed. Entries are in the plan's order; SourceIDs name the QingLong
// rows they came from.
type ImportBatch struct {
	PlanDigest string // the ledger key: the source's identity as inspected, zone included
	Zone       string
	Source     string // the data directory as the operator named it (display only)
	Actor      string
	Summary    string // JSON: the plan's counts, kept in the ledger
	Tasks      []ImportTask
	Envs       []ImportEnv
	// Subscriptions and Dependencies are records of the subscription
	// store (ADR 0054, 0055), written in the same transaction.
	Subscriptions []ImportSubscription
	Dependencies  []ImportDependency
	// FilesPending is true when script files are staged to be moved into
	// the scripts folder after the commit (ImportStore.FinishImportFiles).
	FilesPending bool
}

// ImportTask is one adopted task.
type ImportTask struct {
	SourceID int64
	Task     NewTask
}

// ImportEnv is one adopted env entry (or a config.sh draft: SourceID is
// then the negative line number).
type ImportEnv struct {
	SourceID int64
	Entry    EnvInput
}

// ImportSubscription is one adopted subscription.
type ImportSubscription struct {
	SourceID     int64
	Subscription NewSubscription
}

// ImportDependency is one adopted dependency record.
type ImportDependency struct {
	SourceID   int64
	Dependency NewDependency
}

// ImportRecord is a ledger row.
type ImportRecord struct {
	PlanDigest   string
	Zone         string
	Source       string
	AppliedAtMs  int64
	Actor        string
	Summary      string
	FilesPending bool
	Rows         []ImportRow // what each source row became
}

// ImportRow maps a source row to what the import created.
type ImportRow struct {
	Kind     string // task | env | subscription | dependency
	SourceID int64
	TargetID string
}

// ImportStore keeps the import ledger and applies a batch (ADR 0056).
type ImportStore interface {
	// ApplyImport writes b in one durable transaction with its ledger row
	// and audit lines. If the ledger already has b.PlanDigest it writes
	// nothing and returns that record with existing = true.
	ApplyImport(ctx context.Context, b ImportBatch) (rec ImportRecord, existing bool, err error)
	// ImportRecord returns the ledger row of digest (errs.NotFound if none).
	ImportRecord(ctx context.Context, digest string) (ImportRecord, error)
	// PendingImports lists ledger rows whose files are not all in place.
	PendingImports(ctx context.Context) ([]ImportRecord, error)
	// FinishImportFiles marks digest's files as in place and audits it.
	FinishImportFiles(ctx context.Context, digest string, files int, actor string) error
}
