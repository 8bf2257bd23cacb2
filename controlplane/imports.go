package controlplane

import (
	"context"
	"io"

	"github.com/ql3/ql3/core/qlimport"
	"github.com/ql3/ql3/core/subdef"
)

// The cluster's QingLong import (ADR 0056 for the import, ADR 0063 for the
// cluster): a plan of core/qlimport applied to one project in one
// PostgreSQL transaction, replayed through the import ledger.

// Import statuses.
const (
	ImportApplied  = "applied"
	ImportExisting = "existing"
)

// ImportFile is a script file an import copies into the project's scripts
// folder; Read returns its bytes as checked against the plan (called
// inside the transaction, again on a retry).
type ImportFile struct {
	Index  int64 // the file's index in the plan (import_rows.source_id)
	Path   string
	Size   int64
	SHA256 string
	Read   func() (data []byte, executable bool, err error)
}

// ImportTask is a task (with its triggers) an import creates.
type ImportTask struct {
	SourceID int64
	Task     TaskInput
	Labels   []string
}

// ImportEnv is an env entry an import creates.
type ImportEnv struct {
	SourceID int64 // minus the config.sh line for a draft
	Entry    EnvInput
}

// ImportDependency is a dependency record an import creates (no install
// starts: the operator installs from the dependencies page).
type ImportDependency struct {
	SourceID   int64
	Dependency DependencyInput
}

// ImportSubscription is a subscription row to create (its system task is
// published after the commit).
type ImportSubscription struct {
	SourceID     int64
	Subscription subdef.Def
}

// ImportBatch is everything one apply writes, in one transaction.
type ImportBatch struct {
	ProjectID  string
	PlanDigest string
	Zone       string
	Source     string
	Summary    string // JSON
	Files      []ImportFile
	Tasks      []ImportTask
	Envs       []ImportEnv
	Deps       []ImportDependency
	Subs       []ImportSubscription
}

// ImportRow is what one source row became.
type ImportRow struct {
	Kind     string `json:"kind"` // task | env | subscription | dependency | script
	SourceID int64  `json:"sourceId"`
	TargetID string `json:"targetId"`
}

// ImportRecord is a ledger row with its rows.
type ImportRecord struct {
	ProjectID   string      `json:"projectId"`
	PlanDigest  string      `json:"planDigest"`
	Zone        string      `json:"zone"`
	Source      string      `json:"source"`
	Actor       string      `json:"actor"`
	AppliedAtMs int64       `json:"appliedAtMs"`
	Summary     string      `json:"-"`
	Rows        []ImportRow `json:"rows"`
}

// ImportStore is the ledger and the transaction of an apply.
type ImportStore interface {
	// ImportRecord returns the ledger row of the project's plan, or
	// errs.NotFound.
	ImportRecord(ctx context.Context, projectID, planDigest string) (ImportRecord, error)
	// ApplyImport writes the batch with its ledger row in one transaction;
	// existing is true (and nothing written) when the ledger already holds
	// the plan.
	ApplyImport(ctx context.Context, b ImportBatch) (rec ImportRecord, existing bool, err error)
}

// ImportInspection is what an inspect returns.
type ImportInspection struct {
	From    string        `json:"from"` // the path, or upload:<id>
	Plan    qlimport.Plan `json:"plan"`
	Digest  string        `json:"planDigest"`
	Skipped []string      `json:"skipped"` // archive members not unpacked
}

// ImportResult is what an apply did.
type ImportResult struct {
	Status      string              `json:"status"` // applied | existing
	ProjectID   string              `json:"projectId"`
	PlanDigest  string              `json:"planDigest"`
	Zone        string              `json:"zone"`
	Tasks       int                 `json:"tasks"`
	Envs        int                 `json:"envs"`
	Subs        int                 `json:"subscriptions"`
	Deps        int                 `json:"dependencies"`
	Files       int                 `json:"files"`
	Refused     []qlimport.FilePlan `json:"refusedFiles"`
	Rows        []ImportRow         `json:"rows"`
	AppliedAtMs int64               `json:"appliedAtMs"`
	Warnings    []string            `json:"warnings"`
}

// Imports is the import as the admin API offers it.
type Imports interface {
	InspectPath(ctx context.Context, projectID, from, zone string) (ImportInspection, error)
	InspectUpload(ctx context.Context, projectID string, r io.Reader, format, zone string) (ImportInspection, error)
	Apply(ctx context.Context, projectID, from, zone, digest string) (ImportResult, error)
}
