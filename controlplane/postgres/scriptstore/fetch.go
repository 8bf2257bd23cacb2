package scriptstore

import (
	"context"
	"crypto/sha256"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/fence"
	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/core/scriptpath"
)

// Fetch serves a worker the tree its leased attempt runs (runtime role,
// as the rest of the lease protocol): the manifest, and byte ranges of the
// tree's blobs. Every read proves the lease (the LeaseRef: session,
// attempt, offer, generation and token, against the durable lease, which
// must still be live) and may only name a blob of the tree the Run's
// execution revision pins — a worker reads nothing else of the project.
// Reads are bounded (MaxBlobRange) and addressed by offset, so a transfer
// cut in the middle resumes where it stopped.
type Fetch struct{ db postgres.DB }

var _ controlplane.ScriptFetch = (*Fetch)(nil)

// NewFetch returns a Fetch over a runtime pool.
func NewFetch(db postgres.DB) *Fetch { return &Fetch{db: db} }

// MaxBlobRange bounds one blob read (the worker asks again from where it
// stopped).
const MaxBlobRange = 1 << 20

const sqlLeaseTree = `SELECT l.worker_id::text, l.session_id::text, l.session_generation, l.offer_id::text, l.token_digest,
	l.lease_generation, l.version, l.status, l.expires_at_ms, l.run_id::text, e.project_id, e.script_tree
FROM ql3.run_leases l
JOIN ql3.runs r ON r.run_id = l.run_id
JOIN ql3.execution_revisions e ON e.execution_revision_id = r.execution_revision_id
WHERE l.attempt_id = $1::uuid AND l.lease_generation = $2::bigint`

type leaseTree struct {
	project [16]byte
	tree    []byte
}

// prove checks ref against the durable lease and returns the tree the
// Run pins.
func (f *Fetch) prove(ctx context.Context, p controlplane.Principal, ref protocol.LeaseRef) (leaseTree, error) {
	if err := ref.Validate(); err != nil {
		return leaseTree{}, err
	}
	var obs fence.LeaseFence
	var token []byte
	var status string
	var lt leaseTree
	err := f.db.QueryRow(ctx, sqlLeaseTree, ref.AttemptID, ref.LeaseGeneration).Scan(&obs.WorkerID, &obs.SessionID,
		&obs.SessionGeneration, &obs.OfferID, &token, &obs.LeaseGeneration, &obs.LeaseVersion, &status, &obs.ExpiresAtMs,
		&obs.RunID, &lt.project, &lt.tree)
	if errors.Is(err, pgx.ErrNoRows) {
		return leaseTree{}, errs.E(errs.Conflict, "attemptId", "no such lease")
	}
	if err != nil {
		return leaseTree{}, postgres.TranslateDriver(err)
	}
	obs.AttemptID = ref.AttemptID
	if len(token) == sha256.Size {
		copy(obs.TokenDigest[:], token)
	}
	if err := ref.Fence(p.WorkerID, obs.LeaseVersion, obs.ExpiresAtMs).Holds(obs, 0); err != nil {
		return leaseTree{}, err
	}
	if status != "leased" {
		return leaseTree{}, errs.E(errs.Conflict, "leaseGeneration", "the lease is no longer live")
	}
	if lt.tree == nil {
		return leaseTree{}, errs.NotFoundf("the Run of attempt %s runs no script", ref.AttemptID)
	}
	return lt, nil
}

// LeaseScriptTree returns the manifest of the leased Run's tree.
func (f *Fetch) LeaseScriptTree(ctx context.Context, p controlplane.Principal, ref protocol.LeaseRef) (controlplane.ScriptTree, error) {
	lt, err := f.prove(ctx, p, ref)
	if err != nil {
		return controlplane.ScriptTree{}, err
	}
	rows, err := f.db.Query(ctx, `SELECT path, sha256, size, executable FROM ql3.script_tree_files
		WHERE project_id = $1 AND tree_digest = $2 ORDER BY path`, lt.project, lt.tree)
	if err != nil {
		return controlplane.ScriptTree{}, postgres.TranslateDriver(err)
	}
	files, err := collectTreeFiles(rows)
	if err != nil {
		return controlplane.ScriptTree{}, postgres.TranslateDriver(err)
	}
	var d canonjson.Digest
	copy(d[:], lt.tree)
	return controlplane.ScriptTree{Digest: d, Files: files}, nil
}

// LeaseScriptBlob returns up to limit (≤ MaxBlobRange) bytes of a blob of
// the leased Run's tree from offset, and the blob's size.
func (f *Fetch) LeaseScriptBlob(ctx context.Context, p controlplane.Principal, ref protocol.LeaseRef, sum [32]byte, offset, limit int64) ([]byte, int64, error) {
	if offset < 0 || offset > scriptpath.MaxFileBytes {
		return nil, 0, errs.Invalidf("offset", "must be 0..%d, got %d", scriptpath.MaxFileBytes, offset)
	}
	if limit <= 0 || limit > MaxBlobRange {
		limit = MaxBlobRange
	}
	lt, err := f.prove(ctx, p, ref)
	if err != nil {
		return nil, 0, err
	}
	var size int64
	var data []byte
	err = f.db.QueryRow(ctx, `SELECT b.size, substring(b.content FROM $4::int + 1 FOR $5::int)
		FROM ql3.script_blobs b
		WHERE b.project_id = $1 AND b.sha256 = $3
		  AND EXISTS (SELECT 1 FROM ql3.script_tree_files t WHERE t.project_id = $1 AND t.tree_digest = $2 AND t.sha256 = $3)`,
		lt.project, lt.tree, sum[:], offset, limit).Scan(&size, &data)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, 0, errs.NotFoundf("no blob %x in the Run's script tree", sum[:8])
	}
	if err != nil {
		return nil, 0, postgres.TranslateDriver(err)
	}
	if offset > size {
		return nil, size, errs.Invalidf("offset", "is past the end of the blob (%d bytes)", size)
	}
	return data, size, nil
}
