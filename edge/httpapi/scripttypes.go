package httpapi

import "github.com/ql3/ql3/edge/scripts"

// ScriptEntry is one element of a folder listing.
type ScriptEntry struct {
	Name    string `json:"name"`
	Kind    string `json:"kind"` // file or dir
	Size    int64  `json:"size"`
	MtimeMs int64  `json:"mtimeMs"`
	SHA256  string `json:"sha256,omitempty"` // files: hex SHA-256 of the content, its ETag
}

var _ = ScriptEntry(scripts.Entry{})

// ScriptList is one level of the scripts folder.
type ScriptList struct {
	Path    string        `json:"path"`
	Entries []ScriptEntry `json:"entries"`
}

// ScriptTreeFile is one file of a tree.
type ScriptTreeFile struct {
	Path       string `json:"path"`
	Size       int64  `json:"size"`
	Executable bool   `json:"executable,omitempty"`
	SHA256     string `json:"sha256"`
}

// ScriptTree is every file under a folder with the tree digest
// (core/scriptpath.TreeDigest, also the response's ETag).
type ScriptTree struct {
	Path   string           `json:"path"`
	Digest string           `json:"digest"`
	Bytes  int64            `json:"bytes"`
	Files  []ScriptTreeFile `json:"files"`
}

// ScriptWritten answers a PUT of a script's content.
type ScriptWritten struct {
	Path    string `json:"path"`
	ETag    string `json:"etag"`
	Size    int64  `json:"size"`
	Created bool   `json:"created"`
}

// ScriptFolderRequest creates a folder.
type ScriptFolderRequest struct {
	Path string `json:"path"`
}

// ScriptMoveRequest renames a file or folder.
type ScriptMoveRequest struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// ScriptUploadResult says what an upload wrote.
type ScriptUploadResult struct {
	Files   int   `json:"files"`
	Folders int   `json:"folders"`
	Bytes   int64 `json:"bytes"`
}

var _ = ScriptUploadResult(scripts.UploadResult{})

// ScriptRunRequest runs a script now.
type ScriptRunRequest struct {
	Path           string   `json:"path"`
	Args           []string `json:"args,omitempty"`
	IdempotencyKey string   `json:"idempotencyKey,omitempty"`
}
