package importer

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/qlsource"
)

var _ controlplane.Imports = (*Service)(nil)

// UploadPrefix marks a source that is an uploaded data directory:
// "upload:<id>".
const UploadPrefix = "upload:"

// Bounds of the service's memory.
const (
	maxRemembered = 32 // inspections whose source and zone apply may omit
	maxUploads    = 4  // unpacked uploads kept (oldest removed first)
)

// Service is the import as the admin API offers it: inspect a path on the
// replica or an uploaded archive of a data directory for a project, then
// apply a plan by its digest. It remembers its last inspections, so an
// apply may name only the digest. Uploads live on this replica's disk: an
// apply of an upload must reach the replica that inspected it (an
// operator behind a load balancer inspects a path, or retries the upload).
type Service struct {
	Importer *Importer
	// UploadDir holds unpacked uploads (a private folder of this replica).
	UploadDir string

	mu      sync.Mutex
	plans   []remembered // oldest first
	uploads []string     // ids, oldest first
}

type remembered struct {
	project, digest, from, zone string
}

// InspectPath implements controlplane.Imports: a data directory on the
// replica.
func (s *Service) InspectPath(ctx context.Context, projectID, from, zone string) (controlplane.ImportInspection, error) {
	if strings.TrimSpace(from) == "" {
		return controlplane.ImportInspection{}, errs.Invalidf("from", "is required: the QingLong data directory (the folder holding db/database.sqlite)")
	}
	if !filepath.IsAbs(from) {
		return controlplane.ImportInspection{}, errs.Invalidf("from", "must be an absolute path on the server, got %q", from)
	}
	return s.inspect(ctx, projectID, from, filepath.Clean(from), zone, nil)
}

// InspectUpload implements controlplane.Imports: an archive (tar or
// tar.gz) of a data directory, unpacked on the replica.
func (s *Service) InspectUpload(ctx context.Context, projectID string, r io.Reader, format, zone string) (controlplane.ImportInspection, error) {
	if zone == "" {
		return controlplane.ImportInspection{}, errs.Invalidf("zone", "is required: name the time zone QingLong ran in (e.g. Asia/Shanghai)")
	}
	if s.UploadDir == "" {
		return controlplane.ImportInspection{}, errs.E(errs.Unavailable, "", "this replica has no folder for uploads: inspect a path on the server instead")
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	id := hex.EncodeToString(rnd[:])
	dir := filepath.Join(s.UploadDir, id)
	if err := os.MkdirAll(s.UploadDir, 0o700); err != nil {
		return controlplane.ImportInspection{}, err
	}
	root, skipped, err := qlsource.Unpack(r, format, dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		return controlplane.ImportInspection{}, err
	}
	s.keepUpload(id)
	return s.inspect(ctx, projectID, UploadPrefix+id, root, zone, skipped)
}

func (s *Service) keepUpload(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.uploads = append(s.uploads, id)
	for len(s.uploads) > maxUploads {
		_ = os.RemoveAll(filepath.Join(s.UploadDir, s.uploads[0]))
		s.uploads = s.uploads[1:]
	}
}

func (s *Service) inspect(ctx context.Context, projectID, from, dir, zone string, skipped []string) (controlplane.ImportInspection, error) {
	p, _, err := Inspect(ctx, dir, zone)
	if err != nil {
		return controlplane.ImportInspection{}, err
	}
	s.mu.Lock()
	s.plans = append(s.plans, remembered{project: projectID, digest: p.Digest, from: from, zone: zone})
	if len(s.plans) > maxRemembered {
		s.plans = s.plans[1:]
	}
	s.mu.Unlock()
	if skipped == nil {
		skipped = []string{}
	}
	return controlplane.ImportInspection{From: from, Plan: p, Digest: p.Digest, Skipped: skipped}, nil
}

// Apply implements controlplane.Imports. from and zone may be empty when
// this service inspected the digest for the project.
func (s *Service) Apply(ctx context.Context, projectID, from, zone, digest string) (controlplane.ImportResult, error) {
	if digest == "" {
		return controlplane.ImportResult{}, errs.Invalidf("plan", "is required: the planDigest inspect returned")
	}
	if from == "" || zone == "" {
		s.mu.Lock()
		for i := len(s.plans) - 1; i >= 0; i-- {
			if p := s.plans[i]; p.digest == digest && p.project == projectID && (from == "" || from == p.from) {
				from, zone = p.from, p.zone
				break
			}
		}
		s.mu.Unlock()
	}
	if from == "" || zone == "" {
		// A plan already applied needs neither: the ledger answers.
		if rec, err := s.Importer.Store.ImportRecord(ctx, projectID, digest); err == nil {
			return resultOf(controlplane.ImportExisting, rec, nil), nil
		}
		return controlplane.ImportResult{}, errs.Invalidf("zone", "this replica has no inspection of plan %s for this project (it restarted, another replica inspected it, or the plan is older than its last %d inspections): inspect again, or give from and zone", digest, maxRemembered)
	}
	dir := from
	if id, ok := strings.CutPrefix(from, UploadPrefix); ok {
		if len(id) != 16 || strings.Trim(id, "0123456789abcdef") != "" {
			return controlplane.ImportResult{}, errs.Invalidf("from", "%q is not an upload of this replica", from)
		}
		root, err := qlsource.UploadRoot(filepath.Join(s.UploadDir, id))
		if err != nil {
			return controlplane.ImportResult{}, errs.Invalidf("from", "upload %s is not on this replica (only the last %d are kept): upload it again", id, maxUploads)
		}
		dir = root
	} else if !filepath.IsAbs(from) {
		return controlplane.ImportResult{}, errs.Invalidf("from", "must be an absolute path on the server, got %q", from)
	}
	return s.Importer.Apply(ctx, projectID, dir, zone, digest)
}
