package scripts

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/scriptpath"
)

// Archive formats Upload reads.
const (
	FormatTar   = "tar"
	FormatTarGz = "tar.gz"
	FormatZip   = "zip"
)

// MaxArchiveBytes bounds an uploaded archive (the folder's whole budget).
const MaxArchiveBytes = scriptpath.MaxTotalBytes

// UploadResult says what an upload wrote.
type UploadResult struct {
	Files   int   `json:"files"`
	Folders int   `json:"folders"`
	Bytes   int64 `json:"bytes"`
}

type member struct {
	path string
	dir  bool
	size int64
	exec bool
	open func() (io.ReadCloser, error) // zip; tar members are read in order
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
	members, closeFn, err := readMembers(format, src)
	if err != nil {
		return UploadResult{}, err
	}
	defer closeFn()
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
		full := m.path
		if dc != "" {
			full = dc + "/" + m.path
		}
		if _, err := scriptpath.Clean("archive", full, false); err != nil {
			return UploadResult{}, err
		}
		e, err := f.Stat(full)
		switch {
		case err == nil && m.dir && e.Kind == KindDir:
			continue
		case err == nil && m.dir:
			return UploadResult{}, errs.Conflictf("archive: %q is a file in the scripts folder, the archive has a folder there", full)
		case err == nil && e.Kind == KindDir:
			return UploadResult{}, errs.Conflictf("archive: %q is a folder in the scripts folder, the archive has a file there", full)
		case err == nil && !overwrite:
			return UploadResult{}, errs.Conflictf("archive: %q already exists (upload with overwrite=true to replace it)", full)
		case err == nil:
			addBytes += m.size - e.Size
		case errs.Code(err) == errs.NotFound:
			addEntries++
			addBytes += m.size
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
	// Second pass: write. Tar members are read again from the start.
	tr, err := tarReaderOf(format, src)
	if err != nil {
		return UploadResult{}, err
	}
	for _, m := range members {
		full := m.path
		if dc != "" {
			full = dc + "/" + m.path
		}
		segs := split(full)
		if m.dir {
			fd, err := f.openDir("archive", segs, true)
			if err != nil {
				return res, err
			}
			unix.Close(fd)
			res.Folders++
			continue
		}
		var rc io.ReadCloser
		if m.open != nil {
			if rc, err = m.open(); err != nil {
				return res, err
			}
		} else {
			if rc, err = nextTarFile(tr, m.path); err != nil {
				return res, err
			}
		}
		data, err := io.ReadAll(io.LimitReader(rc, scriptpath.MaxFileBytes+1))
		rc.Close()
		if err != nil {
			return res, fmt.Errorf("archive: reading %q: %w", m.path, err)
		}
		if int64(len(data)) != m.size {
			return res, errs.Invalidf("archive", "%q holds %d bytes, its header says %d", m.path, len(data), m.size)
		}
		dfd, err := f.openDir("archive", segs[:len(segs)-1], true)
		if err != nil {
			return res, err
		}
		perm := uint32(0o644)
		if m.exec {
			perm = 0o755
		}
		err = writeFile(dfd, segs[len(segs)-1], data, perm, syncEach)
		unix.Close(dfd)
		if err != nil {
			return res, fmt.Errorf("archive: writing %q: %w", full, err)
		}
		res.Files++
		res.Bytes += m.size
	}
	return res, nil
}

// tarReaderOf positions a tar reader for the write pass (members were
// listed by readMembers from the same start).
func tarReaderOf(format string, src *os.File) (*tar.Reader, error) {
	switch format {
	case FormatTar:
		if _, err := src.Seek(0, io.SeekStart); err != nil {
			return nil, err
		}
		return tar.NewReader(src), nil
	case FormatTarGz:
		if _, err := src.Seek(0, io.SeekStart); err != nil {
			return nil, err
		}
		zr, err := gzip.NewReader(src)
		if err != nil {
			return nil, err
		}
		return tar.NewReader(zr), nil
	}
	return nil, nil
}

// nextTarFile advances tr to the regular file named want.
func nextTarFile(tr *tar.Reader, want string) (io.ReadCloser, error) {
	for {
		h, err := tr.Next()
		if err != nil {
			return nil, fmt.Errorf("archive: %q: %w", want, err)
		}
		if memberName(h.Name) == want && (h.Typeflag == tar.TypeReg || h.Typeflag == tar.TypeRegA) {
			return io.NopCloser(tr), nil
		}
	}
}

// memberName strips what archivers put in front of a relative name.
func memberName(n string) string {
	for strings.HasPrefix(n, "./") {
		n = n[2:]
	}
	return strings.TrimSuffix(n, "/")
}

// readMembers lists and checks every member of the archive.
func readMembers(format string, src *os.File) ([]member, func(), error) {
	noop := func() {}
	st, err := src.Stat()
	if err != nil {
		return nil, noop, err
	}
	if st.Size() > MaxArchiveBytes {
		return nil, noop, errs.TooLargef("archive", "is %d bytes, limit is %d", st.Size(), int64(MaxArchiveBytes))
	}
	var out []member
	seen := make(map[string]bool)
	var total int64
	add := func(name string, dir bool, size int64, exec bool, kind string, open func() (io.ReadCloser, error)) error {
		if len(out) >= scriptpath.MaxEntries {
			return errs.Invalidf("archive", "has more than %d entries, limit is %d", scriptpath.MaxEntries, scriptpath.MaxEntries)
		}
		field := "archive[" + strconv.Itoa(len(out)) + "]"
		if kind != "" {
			return errs.Invalidf(field, "%q is a %s: an archive may hold only files and folders", name, kind)
		}
		p, err := scriptpath.Clean(field, memberName(name), false)
		if err != nil {
			return err
		}
		if !dir {
			if size < 0 || size > scriptpath.MaxFileBytes {
				return errs.TooLargef(field, "%q is %d bytes, limit is %d per file", p, size, scriptpath.MaxFileBytes)
			}
			total += size
			if total > scriptpath.MaxTotalBytes {
				return errs.TooLargef("archive", "unpacks to more than %d bytes, limit is %d", int64(scriptpath.MaxTotalBytes), int64(scriptpath.MaxTotalBytes))
			}
		}
		if seen[p] && !dir {
			return errs.Invalidf(field, "%q appears twice in the archive", p)
		}
		seen[p] = true
		out = append(out, member{path: p, dir: dir, size: size, exec: exec, open: open})
		return nil
	}
	switch format {
	case FormatZip:
		zr, err := zip.NewReader(src, st.Size())
		if err != nil {
			return nil, noop, errs.Invalidf("archive", "is not a zip archive: %v", err)
		}
		if n := len(zr.File); n > scriptpath.MaxEntries {
			return nil, noop, errs.Invalidf("archive", "has %d entries, limit is %d", n, scriptpath.MaxEntries)
		}
		for _, zf := range zr.File {
			mode := zf.Mode()
			kind := ""
			switch {
			case mode&os.ModeSymlink != 0:
				kind = "symbolic link"
			case mode&(os.ModeDevice|os.ModeCharDevice) != 0:
				kind = "device"
			case mode&(os.ModeNamedPipe|os.ModeSocket|os.ModeIrregular) != 0:
				kind = "special file"
			}
			dir := mode.IsDir() || strings.HasSuffix(zf.Name, "/")
			if err := add(zf.Name, dir, int64(zf.UncompressedSize64), mode&0o111 != 0, kind, zf.Open); err != nil {
				return nil, noop, err
			}
		}
		return out, noop, nil
	case FormatTar, FormatTarGz:
		var r io.Reader = src
		closeFn := noop
		if format == FormatTarGz {
			zr, err := gzip.NewReader(src)
			if err != nil {
				return nil, noop, errs.Invalidf("archive", "is not gzip-compressed: %v", err)
			}
			r, closeFn = zr, func() { zr.Close() }
		}
		tr := tar.NewReader(r)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				return out, closeFn, nil
			}
			if err != nil {
				closeFn()
				return nil, noop, errs.Invalidf("archive", "is not a valid tar archive: %v", err)
			}
			kind := ""
			switch h.Typeflag {
			case tar.TypeReg, tar.TypeRegA, tar.TypeDir:
			case tar.TypeSymlink:
				kind = "symbolic link"
			case tar.TypeLink:
				kind = "hard link"
			case tar.TypeChar, tar.TypeBlock:
				kind = "device"
			default:
				kind = "special entry (type " + strconv.Quote(string(h.Typeflag)) + ")"
			}
			if err := add(h.Name, h.Typeflag == tar.TypeDir, h.Size, h.Mode&0o111 != 0, kind, nil); err != nil {
				closeFn()
				return nil, noop, err
			}
		}
	}
	return nil, noop, errs.Invalidf("format", "must be tar, tar.gz or zip, got %q", format)
}
