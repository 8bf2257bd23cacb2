package controlplane

import (
	"context"
	"io"

	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/core/scriptpath"
)

// The project's scripts folder (issue 22, ADR 0052): content-addressed
// blobs and a folder of paths in PostgreSQL, one per project, never on a
// replica's disk. Paths obey core/scriptpath.Clean; the limits are
// scriptpath's (MaxEntries, MaxFileBytes, MaxTotalBytes). Every change is
// one SERIALIZABLE transaction that writes its audit line and re-pins the
// script tasks whose tree it changed (a new execution revision; Runs in
// flight keep the tree they started from).

// ScriptEntry is one element of a folder listing, as on the edge.
type ScriptEntry struct {
	Name    string `json:"name"`
	Kind    string `json:"kind"` // file or dir
	Size    int64  `json:"size"`
	MtimeMs int64  `json:"mtimeMs"`
	SHA256  string `json:"sha256,omitempty"`
}

// Kinds of a ScriptEntry.
const (
	ScriptKindFile = "file"
	ScriptKindDir  = "dir"
)

// ScriptPrecondition guards a write: IfNoneMatch creates only; IfMatch
// (a content SHA-256 hex, or "*") replaces only that content.
type ScriptPrecondition struct {
	IfNoneMatch bool
	IfMatch     string
}

// ScriptStaleError is a failed precondition (the HTTP layer answers 412
// with Current as the ETag; "" when the file does not exist).
type ScriptStaleError struct{ Current string }

func (e *ScriptStaleError) Error() string {
	if e.Current == "" {
		return "precondition failed: the file does not exist (any more)"
	}
	return "precondition failed: the file changed since it was read (its ETag is now " + e.Current + ")"
}

// ScriptWriteResult says what a write did.
type ScriptWriteResult struct {
	ETag    string
	Created bool
	// Repinned counts the script tasks that got a new execution revision.
	Repinned int
}

// ScriptUploadResult says what an upload wrote.
type ScriptUploadResult struct {
	Files   int   `json:"files"`
	Folders int   `json:"folders"`
	Bytes   int64 `json:"bytes"`
}

// ScriptTreeFile is one file of a pinned tree, relative to its root.
type ScriptTreeFile = scriptpath.TreeFile

// ScriptTree is a folder's files and their tree digest.
type ScriptTree struct {
	Digest canonjson.Digest
	Files  []ScriptTreeFile
}

// Scripts is the per-project scripts folder (admin role).
type Scripts interface {
	ListScripts(ctx context.Context, projectID, dir string) ([]ScriptEntry, error)
	ReadScript(ctx context.Context, projectID, path string) (data []byte, etag string, err error)
	WriteScript(ctx context.Context, projectID, path string, data []byte, pre ScriptPrecondition) (ScriptWriteResult, error)
	MkdirScript(ctx context.Context, projectID, path string) error
	MoveScript(ctx context.Context, projectID, from, to string) error
	DeleteScript(ctx context.Context, projectID, path string, recursive bool) error
	// UploadScripts unpacks an archive (core/scriptarchive: checked whole
	// before anything is written) of size bytes into dir.
	UploadScripts(ctx context.Context, projectID, dir, format string, src io.ReaderAt, size int64, overwrite bool) (ScriptUploadResult, error)
	ScriptTreeOf(ctx context.Context, projectID, dir string) (ScriptTree, error)
}

// ScriptFetch is what a worker's lease may read of the tree its Run is
// pinned to (ingress role): the manifest, and byte ranges of its blobs.
type ScriptFetch interface {
	// LeaseScriptTree returns the manifest of the tree the leased attempt's
	// execution revision pins (NotFound when it pins none).
	LeaseScriptTree(ctx context.Context, p Principal, ref protocol.LeaseRef) (ScriptTree, error)
	// LeaseScriptBlob returns up to limit bytes of a blob of that tree from
	// offset, and the blob's size.
	LeaseScriptBlob(ctx context.Context, p Principal, ref protocol.LeaseRef, sha256 [32]byte, offset, limit int64) (data []byte, size int64, err error)
}
