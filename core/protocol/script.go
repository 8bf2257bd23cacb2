package protocol

import (
	"encoding/hex"
	"strconv"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/scriptpath"
	"github.com/ql3/ql3/core/spec"
)

// Script trees over the ingress (ADR 0052). A script task's offer carries
// the digest of the tree its execution revision pins (Offer.ScriptTree);
// the worker reads the tree's manifest a page at a time and the blobs it
// lacks a range at a time, each request proving the lease (LeaseRef) — a
// worker reads nothing of a project but the tree of a Run it holds. A
// transfer cut in the middle resumes from the bytes already on disk; the
// worker checks every blob's SHA-256 and the manifest's TreeDigest before
// anything runs.
const (
	PathScriptTree = "/v1/scripts/tree" // ScriptTreeRequest → ScriptTreePage
	PathScriptBlob = "/v1/scripts/blob" // ScriptBlobRequest → raw bytes, HeaderScriptBlobSize

	// MaxScriptTreePage bounds the files of one manifest page.
	MaxScriptTreePage = 256
	// MaxScriptTreePageBytes bounds a manifest page's JSON (paths are at
	// most scriptpath.MaxPathBytes).
	MaxScriptTreePageBytes = 512 << 10
	// MaxScriptBlobChunk bounds one blob range (the answer is raw bytes).
	MaxScriptBlobChunk = 256 << 10
	// HeaderScriptBlobSize is the whole blob's size on a range answer.
	HeaderScriptBlobSize = "X-Ql3-Blob-Size"
)

// checkScriptTree: a script task's offer names its tree; a shell task's
// whose command is a `task FILE [ARGS]` line (scriptpath.RunsAsScript) may (it
// does when its revision was published with the tree pinned); no other
// does.
func checkScriptTree(c spec.Command, tree string) error {
	if tree == "" && isShellTask(c) {
		return nil
	}
	if c.Script == nil && !isShellTask(c) {
		if tree != "" {
			return errs.Invalidf("scriptTree", "only a script task's offer names a script tree")
		}
		return nil
	}
	_, err := parseDigest("scriptTree", tree)
	return err
}

func isShellTask(c spec.Command) bool {
	if c.Shell == nil {
		return false
	}
	_, ok := scriptpath.RunsAsScript(c.Shell.Command)
	return ok
}

// ScriptTreeRequest asks for a page of the leased Run's tree manifest:
// the files after path After (bytewise order), "" for the first page.
type ScriptTreeRequest struct {
	V int `json:"v"`
	LeaseRef
	After string `json:"after,omitempty"`
}

// Validate checks every field.
func (q ScriptTreeRequest) Validate() error {
	if err := checkVersion(q.V); err != nil {
		return err
	}
	if q.After != "" {
		if _, err := scriptpath.Clean("after", q.After, false); err != nil {
			return err
		}
	}
	return q.LeaseRef.Validate()
}

// Encode validates q (with v set) and returns its JSON.
func (q ScriptTreeRequest) Encode() ([]byte, error) {
	q.V = Version
	if err := q.Validate(); err != nil {
		return nil, err
	}
	return encode(q, DefaultBodyBytes, "script tree request")
}

// DecodeScriptTreeRequest strictly decodes and validates a request.
func DecodeScriptTreeRequest(data []byte) (ScriptTreeRequest, error) {
	var q ScriptTreeRequest
	if err := decode(data, limits(DefaultBodyBytes, 1, 32, scriptpath.MaxPathBytes), &q, &q.V); err != nil {
		return ScriptTreeRequest{}, err
	}
	return q, q.Validate()
}

// ScriptTreeFile is one file of a manifest (paths relative to the tree).
type ScriptTreeFile struct {
	Path       string `json:"path"`
	Size       int64  `json:"size"`
	Executable bool   `json:"executable,omitempty"`
	SHA256     string `json:"sha256"` // 64 lowercase hex digits
}

// TreeFile converts f to the form TreeDigest reads.
func (f ScriptTreeFile) TreeFile(field string) (scriptpath.TreeFile, error) {
	t := scriptpath.TreeFile{Path: f.Path, Size: f.Size, Executable: f.Executable}
	if c, err := scriptpath.Clean(field+".path", f.Path, false); err != nil || c != f.Path {
		if err == nil {
			err = errs.Invalidf(field+".path", "must be written %q", c)
		}
		return t, err
	}
	if f.Size < 0 || f.Size > scriptpath.MaxFileBytes {
		return t, errs.TooLargef(field+".size", "must be 0..%d, got %d", scriptpath.MaxFileBytes, f.Size)
	}
	if len(f.SHA256) != 64 {
		return t, errs.Invalidf(field+".sha256", "must be 64 lowercase hex digits")
	}
	if _, err := hex.Decode(t.SHA256[:], []byte(f.SHA256)); err != nil || hex.EncodeToString(t.SHA256[:]) != f.SHA256 {
		return t, errs.Invalidf(field+".sha256", "must be 64 lowercase hex digits")
	}
	return t, nil
}

// ScriptTreePage is a page of a tree's manifest, in path order; More
// says another page follows (ask with After = the last path).
type ScriptTreePage struct {
	V      int              `json:"v"`
	Digest string           `json:"digest"` // the tree's, sha256:<hex>
	Files  []ScriptTreeFile `json:"files"`
	More   bool             `json:"more,omitempty"`
}

// Validate checks every field.
func (p ScriptTreePage) Validate() error {
	if err := checkVersion(p.V); err != nil {
		return err
	}
	if _, err := parseDigest("digest", p.Digest); err != nil {
		return err
	}
	if len(p.Files) > MaxScriptTreePage {
		return errs.TooLargef("files", "a page holds at most %d files, got %d", MaxScriptTreePage, len(p.Files))
	}
	for i, f := range p.Files {
		field := "files[" + strconv.Itoa(i) + "]"
		if _, err := f.TreeFile(field); err != nil {
			return err
		}
		if i > 0 && p.Files[i-1].Path >= f.Path {
			return errs.Invalidf(field+".path", "pages list files in strictly increasing path order")
		}
	}
	return nil
}

// Encode validates p (with v set) and returns its JSON.
func (p ScriptTreePage) Encode() ([]byte, error) {
	p.V = Version
	if p.Files == nil {
		p.Files = []ScriptTreeFile{}
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return encode(p, MaxScriptTreePageBytes, "script tree page")
}

// DecodeScriptTreePage strictly decodes and validates a page.
func DecodeScriptTreePage(data []byte) (ScriptTreePage, error) {
	var p ScriptTreePage
	if err := decode(data, limits(MaxScriptTreePageBytes, 3, MaxScriptTreePage, scriptpath.MaxPathBytes), &p, &p.V); err != nil {
		return ScriptTreePage{}, err
	}
	return p, p.Validate()
}

// ScriptBlobRequest asks for up to Limit bytes (≤ MaxScriptBlobChunk; 0
// means that much) of a blob of the leased Run's tree, from Offset.
type ScriptBlobRequest struct {
	V int `json:"v"`
	LeaseRef
	SHA256 string `json:"sha256"`
	Offset int64  `json:"offset"`
	Limit  int64  `json:"limit,omitempty"`
}

// Validate checks every field.
func (q ScriptBlobRequest) Validate() error {
	if err := checkVersion(q.V); err != nil {
		return err
	}
	if _, err := q.Sum(); err != nil {
		return err
	}
	if err := checkRange("offset", q.Offset, 0, scriptpath.MaxFileBytes); err != nil {
		return err
	}
	if err := checkRange("limit", q.Limit, 0, MaxScriptBlobChunk); err != nil {
		return err
	}
	return q.LeaseRef.Validate()
}

// Sum is the blob's SHA-256.
func (q ScriptBlobRequest) Sum() ([32]byte, error) {
	var sum [32]byte
	if len(q.SHA256) != 64 {
		return sum, errs.Invalidf("sha256", "must be 64 lowercase hex digits")
	}
	if _, err := hex.Decode(sum[:], []byte(q.SHA256)); err != nil || hex.EncodeToString(sum[:]) != q.SHA256 {
		return sum, errs.Invalidf("sha256", "must be 64 lowercase hex digits")
	}
	return sum, nil
}

// Encode validates q (with v set) and returns its JSON.
func (q ScriptBlobRequest) Encode() ([]byte, error) {
	q.V = Version
	if err := q.Validate(); err != nil {
		return nil, err
	}
	return encode(q, DefaultBodyBytes, "script blob request")
}

// DecodeScriptBlobRequest strictly decodes and validates a request.
func DecodeScriptBlobRequest(data []byte) (ScriptBlobRequest, error) {
	var q ScriptBlobRequest
	if err := decode(data, flat, &q, &q.V); err != nil {
		return ScriptBlobRequest{}, err
	}
	return q, q.Validate()
}
