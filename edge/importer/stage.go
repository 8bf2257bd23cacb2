package importer

import (
	"archive/tar"
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/qlimport"
	"github.com/ql3/ql3/core/scriptpath"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/edge/scripts"
	"github.com/ql3/ql3/qlsource"
)

const (
	stagePrefix = "plan-"
	stageSuffix = ".tar"
)

func stageName(digest string) string {
	return stagePrefix + strings.TrimPrefix(digest, "sha256:") + stageSuffix
}

func digestOfStage(name string) (string, bool) {
	h, ok := strings.CutPrefix(name, stagePrefix)
	if !ok {
		return "", false
	}
	if h, ok = strings.CutSuffix(h, stageSuffix); !ok || len(h) != 64 {
		return "", false
	}
	return "sha256:" + h, true
}

// stage copies the files to copy from the source into one tar file of the
// staging folder, checking each against the plan (type, links, mode, size,
// SHA-256) as it is read, and makes it durable: written to a temporary
// name, fsynced, renamed, the folder fsynced. A stage left by a crash
// before the commit is replaced.
func (im *Importer) stage(from, digest string, files []qlimport.FilePlan) error {
	if err := os.MkdirAll(im.StagingDir, 0o700); err != nil {
		return err
	}
	final := filepath.Join(im.StagingDir, stageName(digest))
	tmp := final + ".tmp"
	_ = os.Remove(tmp)
	_ = os.Remove(final)
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		out.Close()
		_ = os.Remove(tmp)
	}()
	im.hook("staging")
	tw := tar.NewWriter(out)
	for _, f := range files {
		if err := stageFile(tw, from, f); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := out.Sync(); err != nil {
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, final); err != nil {
		return err
	}
	if err := syncDir(im.StagingDir); err != nil {
		return err
	}
	im.hook("staged")
	return nil
}

func stageFile(tw *tar.Writer, dataDir string, f qlimport.FilePlan) error {
	cf, err := qlsource.OpenChecked(dataDir, f)
	if err != nil {
		return err
	}
	defer cf.Close()
	mode := int64(0o644)
	if cf.Executable {
		mode = 0o755
	}
	if err := tw.WriteHeader(&tar.Header{Name: f.Path, Mode: mode, Size: f.Size, Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
		return err
	}
	return cf.CopyTo(tw)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// finish moves the staged files of a committed import into the scripts
// folder (edge/scripts' archive upload: checked whole, each file written
// atomically, replacing what an interrupted finish already wrote; one
// file-system sync at the end, since a crash before it only means the
// ledger row is still pending and the upload is redone), then marks the
// ledger row and drops the stage. It is idempotent.
func (im *Importer) finish(ctx context.Context, rec edge.ImportRecord, actor string) error {
	if !rec.FilesPending {
		return nil
	}
	final := filepath.Join(im.StagingDir, stageName(rec.PlanDigest))
	src, err := os.Open(final)
	if err != nil {
		return errs.E(errs.Internal, "files", "the staged script files of import %s are gone (%v): copy them from the QingLong scripts folder by hand", rec.PlanDigest, err)
	}
	defer src.Close()
	res, err := im.Folder.UploadSyncOnce("", scripts.FormatTar, src, true)
	if err != nil {
		return errs.Prefix("files", err)
	}
	im.hook("moved")
	if err := im.Store.FinishImportFiles(ctx, rec.PlanDigest, res.Files, actor); err != nil {
		return err
	}
	src.Close()
	_ = os.Remove(final)
	return nil
}

// scriptsLimits checks the scripts folder's limits for entries and bytes
// after the copy.
func scriptsLimits(entries int, total int64) error {
	if entries > scriptpath.MaxEntries {
		return errs.TooLargef("files", "the scripts folder would hold %d entries, limit is %d", entries, scriptpath.MaxEntries)
	}
	if total > scriptpath.MaxTotalBytes {
		return errs.TooLargef("files", "the scripts folder would hold %d bytes, limit is %d", total, int64(scriptpath.MaxTotalBytes))
	}
	return nil
}
