package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ql3/ql3/edge/importer"
	"github.com/ql3/ql3/edge/scripts"
)

// ImportDirName holds the QingLong import's staged files and uploads
// (ADR 0056).
const ImportDirName = "import"

// openImport builds the QingLong import and finishes an import a crash
// interrupted after its commit (its staged script files are moved into
// the scripts folder), before the scheduler can fire its tasks.
func (m *Main) openImport(ctx context.Context, dataDir string, folder *scripts.Folder) (*importer.Service, error) {
	dir := filepath.Join(dataDir, ImportDirName)
	im := &importer.Importer{Store: m.store, Folder: folder, StagingDir: dir}
	if err := im.Resume(ctx, "start"); err != nil {
		return nil, fmt.Errorf("finishing an interrupted QingLong import: %w", err)
	}
	// Uploads are inspected and applied within one process's life; a
	// restart forgets their plans, so their files go too.
	uploads := filepath.Join(dir, "uploads")
	_ = os.RemoveAll(uploads)
	return &importer.Service{Importer: im, UploadDir: uploads}, nil
}
