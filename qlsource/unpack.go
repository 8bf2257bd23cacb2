package qlsource

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/qlimport"
)

// Archive formats of an uploaded data directory (core/qlimport's).
const (
	FormatTar   = qlimport.FormatTar
	FormatTarGz = qlimport.FormatTarGz
)

// Bounds of an uploaded data directory.
const (
	MaxUploadBytes   = qlimport.MaxUploadBytes // unpacked: a database and a full scripts folder
	MaxUploadMembers = MaxWalkEntries + 64
)

// Unpack writes the regular files and folders of a tar (or tar.gz) of a
// QingLong data directory into dir (created) and returns the folder that
// holds db/database.sqlite (dir itself or its one top folder). Links,
// devices and other special members are not written: their names are
// returned so the operator knows what the plan cannot see. Names with ".."
// or a leading "/" refuse the archive.
func Unpack(r io.Reader, format, dir string) (root string, skipped []string, err error) {
	switch format {
	case FormatTar:
	case FormatTarGz:
		zr, err := gzip.NewReader(r)
		if err != nil {
			return "", nil, errs.Invalidf("format", "not gzip data: %v", err)
		}
		defer zr.Close()
		r = zr
	default:
		return "", nil, errs.Invalidf("format", "must be tar or tar.gz, got %q", format)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", nil, err
	}
	tr := tar.NewReader(r)
	var total int64
	for n := 0; ; n++ {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", nil, errs.Invalidf("archive", "%v", err)
		}
		if n >= MaxUploadMembers {
			return "", nil, errs.TooLargef("archive", "has more than %d members", MaxUploadMembers)
		}
		name, err := memberPath(h.Name)
		if err != nil {
			return "", nil, err
		}
		if name == "" {
			continue
		}
		target := filepath.Join(dir, filepath.FromSlash(name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o700); err != nil {
				return "", nil, err
			}
		case tar.TypeReg:
			if total += h.Size; h.Size < 0 || total > MaxUploadBytes {
				return "", nil, errs.TooLargef("archive", "unpacks to more than %d bytes", int64(MaxUploadBytes))
			}
			if err := writeMember(target, h, tr); err != nil {
				return "", nil, err
			}
		default:
			skipped = append(skipped, name)
		}
	}
	root, err = UploadRoot(dir)
	return root, skipped, err
}

// memberPath checks and cleans an archive member's name ("" for the
// archive's own "./").
func memberPath(name string) (string, error) {
	n := strings.TrimSuffix(name, "/")
	for strings.HasPrefix(n, "./") {
		n = n[2:]
	}
	if n == "" || n == "." {
		return "", nil
	}
	if strings.HasPrefix(n, "/") || strings.ContainsRune(n, 0) || len(n) > 4096 {
		return "", errs.Invalidf("archive", "member %.80q is not a relative path", name)
	}
	for _, seg := range strings.Split(n, "/") {
		if seg == ".." || seg == "" || seg == "." {
			return "", errs.Invalidf("archive", "member %.80q is not a clean relative path", name)
		}
	}
	return path.Clean(n), nil
}

func writeMember(target string, h *tar.Header, r io.Reader) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o700); err != nil {
		return err
	}
	perm := os.FileMode(0o600)
	if h.Mode&0o111 != 0 {
		perm = 0o700
	}
	f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, perm)
	if err != nil {
		return errs.Invalidf("archive", "member %.80q: %v", h.Name, err)
	}
	n, err := io.Copy(f, io.LimitReader(r, h.Size))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && n != h.Size {
		err = fmt.Errorf("short member: %d of %d bytes", n, h.Size)
	}
	return err
}

// UploadRoot is the folder of dir that holds the database: dir, or its
// only top-level folder.
func UploadRoot(dir string) (string, error) {
	if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(DBFile))); err == nil {
		return dir, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	if len(entries) == 1 && entries[0].IsDir() {
		sub := filepath.Join(dir, entries[0].Name())
		if _, err := os.Lstat(filepath.Join(sub, filepath.FromSlash(DBFile))); err == nil {
			return sub, nil
		}
	}
	return "", errs.Invalidf("archive", "holds no %s (archive the QingLong data folder: db/, scripts/, config/)", DBFile)
}
