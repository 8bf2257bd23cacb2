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

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/qlimport"
	"github.com/ql3/ql3/qlsource"
)

// UploadPrefix marks a source that is an uploaded data directory:
// "upload:<id>".
const UploadPrefix = "upload:"

// Bounds of the service's memory.
const (
	maxRemembered = 32 // inspections whose zone and source apply may omit
	maxUploads    = 4  // unpacked uploads kept (oldest removed first)
)

// Service is the import as the API offers it: inspect a path on the
// server or an uploaded archive of a data directory, then apply a plan by
// its digest. It remembers the last inspections, so an apply may name only
// the digest (and the source) it inspected.
type Service struct {
	Importer *Importer
	// UploadDir holds unpacked uploads (<data-dir>/import/uploads).
	UploadDir string
	// AfterApply, when set, runs after an apply that wrote records (the
	// edge publishes the system tasks of the imported subscriptions); its
	// error is a warning of the result, the import itself stands.
	AfterApply func(ctx context.Context) error

	mu      sync.Mutex
	plans   []remembered // oldest first
	uploads []string     // ids, oldest first
}

type remembered struct {
	digest, from, zone string
}

// Inspection is what an inspect returns.
type Inspection struct {
	From    string        `json:"from"` // the path, or upload:<id>
	Plan    qlimport.Plan `json:"plan"`
	Digest  string        `json:"planDigest"`
	Skipped []string      `json:"skipped"` // archive members not unpacked (links, special files)
}

// InspectPath inspects a data directory on the server.
func (s *Service) InspectPath(ctx context.Context, from, zone string) (Inspection, error) {
	if strings.TrimSpace(from) == "" {
		return Inspection{}, errs.Invalidf("from", "is required: the QingLong data directory (the folder holding db/database.sqlite)")
	}
	if !filepath.IsAbs(from) {
		return Inspection{}, errs.Invalidf("from", "must be an absolute path on the server, got %q", from)
	}
	return s.inspect(ctx, from, filepath.Clean(from), zone, nil)
}

// InspectUpload unpacks an archive of a data directory and inspects it.
func (s *Service) InspectUpload(ctx context.Context, r io.Reader, format, zone string) (Inspection, error) {
	if _, err := zoneRequired(zone); err != nil {
		return Inspection{}, err
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	id := hex.EncodeToString(rnd[:])
	dir := filepath.Join(s.UploadDir, id)
	if err := os.MkdirAll(s.UploadDir, 0o700); err != nil {
		return Inspection{}, err
	}
	root, skipped, err := qlsource.Unpack(r, format, dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		return Inspection{}, err
	}
	s.keepUpload(id)
	return s.inspect(ctx, UploadPrefix+id, root, zone, skipped)
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

func (s *Service) inspect(ctx context.Context, from, dir, zone string, skipped []string) (Inspection, error) {
	p, _, err := Inspect(ctx, dir, zone)
	if err != nil {
		return Inspection{}, err
	}
	s.mu.Lock()
	s.plans = append(s.plans, remembered{digest: p.Digest, from: from, zone: zone})
	if len(s.plans) > maxRemembered {
		s.plans = s.plans[1:]
	}
	s.mu.Unlock()
	if skipped == nil {
		skipped = []string{}
	}
	return Inspection{From: from, Plan: p, Digest: p.Digest, Skipped: skipped}, nil
}

// Apply applies the plan digest. from and zone may be empty when this
// service inspected the digest (its remembered source and zone are used).
func (s *Service) Apply(ctx context.Context, from, zone, digest, actor string) (Result, error) {
	if digest == "" {
		return Result{}, errs.Invalidf("plan", "is required: the planDigest inspect returned")
	}
	if from == "" || zone == "" {
		s.mu.Lock()
		for i := len(s.plans) - 1; i >= 0; i-- {
			if p := s.plans[i]; p.digest == digest && (from == "" || from == p.from) {
				from, zone = p.from, p.zone
				break
			}
		}
		s.mu.Unlock()
	}
	if from == "" || zone == "" {
		// A plan already applied needs neither: the ledger answers.
		if rec, err := s.Importer.Store.ImportRecord(ctx, digest); err == nil {
			return s.Importer.Apply(ctx, rec.Source, rec.Zone, digest, actor)
		}
		return Result{}, errs.Invalidf("zone", "this server has no inspection of plan %s (it restarted, or the plan is older than its last %d inspections): inspect again, or give from and zone", digest, maxRemembered)
	}
	dir := from
	if id, ok := strings.CutPrefix(from, UploadPrefix); ok {
		if len(id) != 16 || strings.Trim(id, "0123456789abcdef") != "" {
			return Result{}, errs.Invalidf("from", "%q is not an upload of this server", from)
		}
		root, err := qlsource.UploadRoot(filepath.Join(s.UploadDir, id))
		if err != nil {
			return Result{}, errs.Invalidf("from", "upload %s is gone (only the last %d are kept): upload it again", id, maxUploads)
		}
		dir = root
	} else if !filepath.IsAbs(from) {
		return Result{}, errs.Invalidf("from", "must be an absolute path on the server, got %q", from)
	}
	res, err := s.Importer.Apply(ctx, dir, zone, digest, actor)
	if err == nil && res.Status == StatusApplied && s.AfterApply != nil {
		if aerr := s.AfterApply(ctx); aerr != nil {
			res.Warnings = append(res.Warnings, "the import is applied; publishing the subscriptions' pull tasks failed ("+aerr.Error()+"): they are published at the next start")
		}
	}
	return res, err
}

func zoneRequired(zone string) (string, error) {
	if zone == "" {
		return "", errs.Invalidf("zone", "is required: name the time zone QingLong ran in (e.g. Asia/Shanghai)")
	}
	return zone, nil
}

// Archive formats and bounds of an uploaded data directory (qlsource's,
// which the cluster's import shares).
const (
	FormatTar      = qlsource.FormatTar
	FormatTarGz    = qlsource.FormatTarGz
	MaxUploadBytes = qlsource.MaxUploadBytes
)
