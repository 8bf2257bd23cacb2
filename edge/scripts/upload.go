package scripts

import (
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/scriptarchive"
	"github.com/ql3/ql3/core/scriptpath"
)

// Archive formats Upload reads (core/scriptarchive, shared with the cluster).
const (
	FormatTar   = scriptarchive.FormatTar
	FormatTarGz = scriptarchive.FormatTarGz
	FormatZip   = scriptarchive.FormatZip
)

// MaxArchiveBytes bounds an uploaded archive (the folder's whole budget).
const MaxArchiveBytes = scriptarchive.MaxArchiveBytes

// UploadResult says what an upload wrote.
type UploadResult struct {
	Files   int   `json:"files"`
	Folders int   `json:"folders"`
	Bytes   int64 `json:"bytes"`
}

// Upload unpacks an archive (tar, tar.gz or zip, in src) into the folder
// dir. The whole archive is checked first — every name through
// scriptpath.Clean, only regular files and folders (a symlink, hard link,
// device or fifo refuses the archive), at most scriptpath.MaxEntries
// entries, the per-file and total limits, no existing file replaced unless
// overwrite — and nothing is written unless all of it passes. Each file is
// then written atomically.
func (f *Folder) Upload(dir, format string, src *os.File, overwrite bool) (UploadResult, error) {
	return f.upload(dir, format, src, overwrite, true)
}

// UploadSyncOnce is Upload without an fsync per file: every file is still
// written to a temporary name and renamed into place (never seen half
// written), and one sync of the whole file system at the end makes them
// durable together. For a caller that can redo the whole upload after a
// crash (the QingLong import, ADR 0056): thousands of files cost one
// sync instead of two each.
func (f *Folder) UploadSyncOnce(dir, format string, src *os.File, overwrite bool) (UploadResult, error) {
	res, err := f.upload(dir, format, src, overwrite, false)
	if err != nil {
		return res, err
	}
	fd, err := f.openRoot()
	if err != nil {
		return res, err
	}
	defer unix.Close(fd)
	return res, syncFS(fd)
}

func (f *Folder) upload(dir, format string, src *os.File, overwrite, syncEach bool) (UploadResult, error) {
	dc, dsegs, err := clean("path", dir, true)
	if err != nil {
		return UploadResult{}, err
	}
	st, err := src.Stat()
	if err != nil {
		return UploadResult{}, err
	}
	members, err := scriptarchive.ReadArchive(format, src, st.Size())
	if err != nil {
		return UploadResult{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	u, err := f.usage()
	if err != nil {
		return UploadResult{}, err
	}
	var res UploadResult
	var addEntries int
	var addBytes int64
	for _, m := range members {
		full := m.Path
		if dc != "" {
			full = dc + "/" + m.Path
		}
		if _, err := scriptpath.Clean("archive", full, false); err != nil {
			return UploadResult{}, err
		}
		e, err := f.Stat(full)
		switch {
		case err == nil && m.Dir && e.Kind == KindDir:
			continue
		case err == nil && m.Dir:
			return UploadResult{}, errs.Conflictf("archive: %q is a file in the scripts folder, the archive has a folder there", full)
		case err == nil && e.Kind == KindDir:
			return UploadResult{}, errs.Conflictf("archive: %q is a folder in the scripts folder, the archive has a file there", full)
		case err == nil && !overwrite:
			return UploadResult{}, errs.Conflictf("archive: %q already exists (upload with overwrite=true to replace it)", full)
		case err == nil:
			addBytes += m.Size - e.Size
		case errs.Code(err) == errs.NotFound:
			addEntries++
			addBytes += m.Size
		default:
			return UploadResult{}, err
		}
	}
	missing, err := f.missingDirs(dsegs)
	if err != nil {
		return UploadResult{}, err
	}
	if err := checkLimits(u, addEntries+missing, addBytes); err != nil {
		return UploadResult{}, err
	}
	// Second pass: write, folders first, then each file as it comes.
	for _, m := range members {
		if !m.Dir {
			continue
		}
		full := m.Path
		if dc != "" {
			full = dc + "/" + m.Path
		}
		fd, err := f.openDir("archive", split(full), true)
		if err != nil {
			return res, err
		}
		unix.Close(fd)
		res.Folders++
	}
	err = scriptarchive.WalkArchiveFiles(format, src, st.Size(), func(m scriptarchive.ArchiveMember, r io.Reader) error {
		full := m.Path
		if dc != "" {
			full = dc + "/" + m.Path
		}
		segs := split(full)
		data, err := io.ReadAll(r)
		if err != nil {
			return fmt.Errorf("archive: reading %q: %w", m.Path, err)
		}
		if int64(len(data)) != m.Size {
			return errs.Invalidf("archive", "%q holds %d bytes, its header says %d", m.Path, len(data), m.Size)
		}
		dfd, err := f.openDir("archive", segs[:len(segs)-1], true)
		if err != nil {
			return err
		}
		perm := uint32(0o644)
		if m.Executable {
			perm = 0o755
		}
		err = writeFile(dfd, segs[len(segs)-1], data, perm, syncEach)
		unix.Close(dfd)
		if err != nil {
			return fmt.Errorf("archive: writing %q: %w", full, err)
		}
		res.Files++
		res.Bytes += m.Size
		return nil
	})
	return res, err
}
