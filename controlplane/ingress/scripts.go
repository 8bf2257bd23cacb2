package ingress

import (
	"context"
	"encoding/hex"
	"net/http"
	"sort"
	"strconv"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/protocol"
)

// The script tree routes (ADR 0052): a worker holding a lease reads the
// manifest of its Run's pinned tree a page at a time and the blobs a range
// at a time (protocol.PathScriptTree, PathScriptBlob). The port proves the
// lease on every request.

func (s *Server) scriptFetch() (controlplane.ScriptFetch, error) {
	if s.cfg.Scripts == nil {
		return nil, errs.E(errs.Unavailable, "", "this replica serves no script trees")
	}
	return s.cfg.Scripts, nil
}

// scriptTree answers one manifest page: the files after req.After.
func (s *Server) scriptTree(ctx context.Context, p controlplane.Principal, body []byte) ([]byte, error) {
	f, err := s.scriptFetch()
	if err != nil {
		return nil, err
	}
	req, err := protocol.DecodeScriptTreeRequest(body)
	if err != nil {
		return nil, err
	}
	tree, err := f.LeaseScriptTree(ctx, p, req.LeaseRef)
	if err != nil {
		return nil, err
	}
	files := tree.Files
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	start := sort.Search(len(files), func(i int) bool { return files[i].Path > req.After })
	page := protocol.ScriptTreePage{V: protocol.Version, Digest: tree.Digest.String(), Files: []protocol.ScriptTreeFile{}}
	for _, tf := range files[start:] {
		if len(page.Files) == protocol.MaxScriptTreePage {
			page.More = true
			break
		}
		page.Files = append(page.Files, protocol.ScriptTreeFile{Path: tf.Path, Size: tf.Size, Executable: tf.Executable,
			SHA256: hex.EncodeToString(tf.SHA256[:])})
	}
	out, err := page.Encode()
	if err != nil {
		return nil, errs.E(errs.Internal, "", "encode script tree page: %v", err)
	}
	return out, nil
}

// scriptBlob writes one range of a blob as raw bytes, the blob's size in
// protocol.HeaderScriptBlobSize.
func (s *Server) scriptBlob(ctx context.Context, w http.ResponseWriter, p controlplane.Principal, body []byte) error {
	f, err := s.scriptFetch()
	if err != nil {
		return err
	}
	req, err := protocol.DecodeScriptBlobRequest(body)
	if err != nil {
		return err
	}
	sum, err := req.Sum()
	if err != nil {
		return err
	}
	limit := req.Limit
	if limit == 0 {
		limit = protocol.MaxScriptBlobChunk
	}
	data, size, err := f.LeaseScriptBlob(ctx, p, req.LeaseRef, sum, req.Offset, limit)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set(protocol.HeaderScriptBlobSize, strconv.FormatInt(size, 10))
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(data)
	return nil
}
