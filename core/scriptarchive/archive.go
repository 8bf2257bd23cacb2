// Package scriptarchive checks and reads an uploaded archive of a scripts
// folder (tar, tar.gz or zip) for both stores — the edge's directory and
// the cluster's content-addressed folder — so the rules of what an archive
// may hold exist once (ADR 0044, ADR 0052). It is kept out of
// core/scriptpath so the worker, which links scriptpath through core/spec,
// does not link the archive and compression packages.
package scriptarchive

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/scriptpath"
)

// Archive formats an upload of a folder may use (standard library only).
const (
	FormatTar   = "tar"
	FormatTarGz = "tar.gz"
	FormatZip   = "zip"
)

// MaxArchiveBytes bounds an uploaded archive (the folder's whole budget).
const MaxArchiveBytes = scriptpath.MaxTotalBytes

// ArchiveMember is one checked member of an archive: a clean relative
// path, a folder or a regular file within the limits.
type ArchiveMember struct {
	Path       string
	Dir        bool
	Size       int64
	Executable bool
}

// CheckFormat refuses an archive format no store reads.
func CheckFormat(format string) error {
	switch format {
	case FormatTar, FormatTarGz, FormatZip:
		return nil
	}
	return errs.Invalidf("format", "must be tar, tar.gz or zip, got %q (a single file is PUT to .../scripts/content)", format)
}

// ReadArchive lists and checks every member of an archive (tar, tar.gz or
// zip, size bytes of src) before anything is written: every name through
// Clean, only regular files and folders (a symlink, hard link, device or
// fifo refuses the archive), at most scriptpath.MaxEntries entries, scriptpath.MaxFileBytes per
// file and scriptpath.MaxTotalBytes in all, no file twice. Both stores call it; the
// contents are read afterwards with WalkArchiveFiles.
func ReadArchive(format string, src io.ReaderAt, size int64) ([]ArchiveMember, error) {
	if err := CheckFormat(format); err != nil {
		return nil, err
	}
	if size > MaxArchiveBytes {
		return nil, errs.TooLargef("archive", "is %d bytes, limit is %d", size, int64(MaxArchiveBytes))
	}
	var out []ArchiveMember
	seen := make(map[string]bool)
	var total int64
	add := func(name string, dir bool, size int64, exec bool, kind string) error {
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
		out = append(out, ArchiveMember{Path: p, Dir: dir, Size: size, Executable: exec})
		return nil
	}
	if format == FormatZip {
		zr, err := zip.NewReader(src, size)
		if err != nil {
			return nil, errs.Invalidf("archive", "is not a zip archive: %v", err)
		}
		if n := len(zr.File); n > scriptpath.MaxEntries {
			return nil, errs.Invalidf("archive", "has %d entries, limit is %d", n, scriptpath.MaxEntries)
		}
		for _, zf := range zr.File {
			mode := zf.Mode()
			kind := ""
			// The type bits by their letters (FileMode.String): the
			// package stays off io/fs, as core does no I/O.
			if t := mode.Type(); t != 0 && !mode.IsDir() {
				switch tl := t.String(); {
				case strings.HasPrefix(tl, "L"):
					kind = "symbolic link"
				case strings.HasPrefix(tl, "D"):
					kind = "device"
				default:
					kind = "special file"
				}
			}
			dir := mode.IsDir() || strings.HasSuffix(zf.Name, "/")
			if err := add(zf.Name, dir, int64(zf.UncompressedSize64), mode&0o111 != 0, kind); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	tr, closeFn, err := openTar(format, src, size)
	if err != nil {
		return nil, err
	}
	defer closeFn()
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, errs.Invalidf("archive", "is not a valid tar archive: %v", err)
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
		if err := add(h.Name, h.Typeflag == tar.TypeDir, h.Size, h.Mode&0o111 != 0, kind); err != nil {
			return nil, err
		}
	}
}

// WalkArchiveFiles calls fn for each regular file of an archive that
// ReadArchive accepted, in archive order, with a reader of exactly its
// content (a member whose content is not as long as its header says is an
// error).
func WalkArchiveFiles(format string, src io.ReaderAt, size int64, fn func(m ArchiveMember, r io.Reader) error) error {
	check := func(m ArchiveMember, rc io.Reader) error {
		lr := &countingReader{r: io.LimitReader(rc, m.Size+1)}
		if err := fn(m, io.LimitReader(lr, m.Size)); err != nil {
			return err
		}
		if _, err := io.Copy(io.Discard, lr); err != nil {
			return fmt.Errorf("archive: reading %q: %w", m.Path, err)
		}
		if lr.n != m.Size {
			return errs.Invalidf("archive", "%q holds %d bytes, its header says %d", m.Path, lr.n, m.Size)
		}
		return nil
	}
	if format == FormatZip {
		zr, err := zip.NewReader(src, size)
		if err != nil {
			return errs.Invalidf("archive", "is not a zip archive: %v", err)
		}
		for _, zf := range zr.File {
			if zf.Mode().IsDir() || strings.HasSuffix(zf.Name, "/") {
				continue
			}
			rc, err := zf.Open()
			if err != nil {
				return fmt.Errorf("archive: %q: %w", zf.Name, err)
			}
			err = check(ArchiveMember{Path: memberName(zf.Name), Size: int64(zf.UncompressedSize64), Executable: zf.Mode()&0o111 != 0}, rc)
			rc.Close()
			if err != nil {
				return err
			}
		}
		return nil
	}
	tr, closeFn, err := openTar(format, src, size)
	if err != nil {
		return err
	}
	defer closeFn()
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return errs.Invalidf("archive", "is not a valid tar archive: %v", err)
		}
		if h.Typeflag != tar.TypeReg && h.Typeflag != tar.TypeRegA {
			continue
		}
		if err := check(ArchiveMember{Path: memberName(h.Name), Size: h.Size, Executable: h.Mode&0o111 != 0}, tr); err != nil {
			return err
		}
	}
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func openTar(format string, src io.ReaderAt, size int64) (*tar.Reader, func(), error) {
	r := io.Reader(io.NewSectionReader(src, 0, size))
	if format == FormatTarGz {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, func() {}, errs.Invalidf("archive", "is not gzip-compressed: %v", err)
		}
		return tar.NewReader(zr), func() { zr.Close() }, nil
	}
	return tar.NewReader(r), func() {}, nil
}

// memberName strips what archivers put in front of a relative name.
func memberName(n string) string {
	for strings.HasPrefix(n, "./") {
		n = n[2:]
	}
	return strings.TrimSuffix(n, "/")
}
