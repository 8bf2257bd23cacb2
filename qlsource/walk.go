package qlsource

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"syscall"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/qlimport"
	"github.com/ql3/ql3/core/scriptpath"
)

// MaxWalkEntries bounds the entries a walk lists (refused ones
// included); beyond it the source is refused as a whole.
const MaxWalkEntries = 4 * scriptpath.MaxEntries

// Walk lists the scripts folder root as the import sees it: every entry
// by lstat (a link is listed as a link, never followed), regular files
// hashed through O_NOFOLLOW descriptors, folders qlimport.SkipDir names
// listed but not entered. A missing folder is an empty list.
func Walk(root string) ([]qlimport.File, error) {
	if _, err := os.Lstat(root); os.IsNotExist(err) {
		return nil, nil
	}
	var out []qlimport.File
	err := walkDir(root, "", &out)
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, err
}

func walkDir(root, rel string, out *[]qlimport.File) error {
	entries, err := os.ReadDir(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		return errs.Invalidf("from", "reading scripts/%s: %v", rel, err)
	}
	for _, de := range entries {
		if len(*out) >= MaxWalkEntries {
			return errs.TooLargef("from", "the scripts folder has more than %d entries", MaxWalkEntries)
		}
		p := path.Join(rel, de.Name())
		abs := filepath.Join(root, filepath.FromSlash(p))
		st, err := os.Lstat(abs)
		if err != nil {
			return errs.Invalidf("from", "scripts/%s: %v", p, err)
		}
		f := Describe(p, st)
		switch f.Mode {
		case qlimport.ModeDir:
			*out = append(*out, f)
			if !qlimport.SkipDir(de.Name()) {
				if err := walkDir(root, p, out); err != nil {
					return err
				}
			}
			continue
		case qlimport.ModeFile:
			if f.Links == 1 && !f.Writable && f.Size <= scriptpath.MaxFileBytes {
				sum, err := HashFile(abs, st)
				if err != nil {
					return errs.Invalidf("from", "scripts/%s: %v", p, err)
				}
				f.SHA256 = sum
			}
		}
		*out = append(*out, f)
	}
	return nil
}

// Describe is what lstat says about one entry, in the import's terms.
func Describe(rel string, st fs.FileInfo) qlimport.File {
	f := qlimport.File{Path: rel, Size: st.Size(), Links: 1}
	m := st.Mode()
	switch {
	case m&fs.ModeSymlink != 0:
		f.Mode = qlimport.ModeSymlink
	case m.IsDir():
		f.Mode, f.Size = qlimport.ModeDir, 0
	case m.IsRegular():
		f.Mode = qlimport.ModeFile
	default:
		f.Mode = qlimport.ModeSpecial
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		f.Links = int(sys.Nlink)
	}
	f.Writable = f.Mode == qlimport.ModeFile && m.Perm()&0o022 != 0
	return f
}

// HashFile hashes the regular file at abs through an O_NOFOLLOW
// descriptor, checking that it is still the entry lstat saw.
func HashFile(abs string, seen fs.FileInfo) (string, error) {
	fh, err := openNoFollow(abs)
	if err != nil {
		return "", err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return "", err
	}
	if !os.SameFile(st, seen) || !st.Mode().IsRegular() {
		return "", errs.E(errs.Conflict, "from", "changed while it was read")
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.LimitReader(fh, scriptpath.MaxFileBytes+1)); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
