package scriptpath

import (
	"encoding/hex"
	"sort"
	"strconv"

	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/errs"
)

// TreeDigestDomain separates script tree digests from every other digest.
const TreeDigestDomain = "ql3/scripts/tree/v1"

// TreeFile is one regular file of a scripts tree, as the tree digest sees
// it: where it is, whether it is executable, and what it holds.
type TreeFile struct {
	Path       string // cleaned, relative to the tree's root (Clean)
	Executable bool   // any execute bit; the only mode bit a tree keeps
	Size       int64
	SHA256     [32]byte // of the content
}

// TreeDigest is the content address of a folder of scripts: the same
// files (paths, executable bits, contents) give the same digest on every
// binary, whatever order they were listed in, and any difference — one
// byte, a rename, a chmod +x — gives another. Folders are implied by the
// paths (an empty folder does not change a tree). Both stores compute it
// with this function: the edge from its folder, the cluster from its
// blob rows, so a Run can pin the tree it started from and a worker can
// check the tree it materialized.
//
// The canonical form is one line per file in bytewise path order:
// "<x|->" SP size SP hex(sha256) SP path LF, hashed under TreeDigestDomain.
// Paths must be clean and distinct, and the tree within MaxEntries.
func TreeDigest(files []TreeFile) (canonjson.Digest, error) {
	if len(files) > MaxEntries {
		return canonjson.Digest{}, errs.TooLargef("files", "a tree has %d files, limit is %d", len(files), MaxEntries)
	}
	// sort.Slice, not slices.SortFunc: the worker links this, and the
	// generic sort's instantiation costs it 12 KB.
	sorted := append([]TreeFile(nil), files...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Path < sorted[j].Path })
	var b []byte
	for i, f := range sorted {
		if _, err := Clean("files["+strconv.Itoa(i)+"].path", f.Path, false); err != nil {
			return canonjson.Digest{}, err
		}
		if c, _ := Clean("", f.Path, false); c != f.Path {
			return canonjson.Digest{}, errs.Invalidf("files["+strconv.Itoa(i)+"].path", "must be written as %q", c)
		}
		if i > 0 && sorted[i-1].Path == f.Path {
			return canonjson.Digest{}, errs.Invalidf("files", "%q is listed twice", f.Path)
		}
		if f.Size < 0 || f.Size > MaxFileBytes {
			return canonjson.Digest{}, errs.TooLargef("files", "%q is %d bytes, limit is %d", f.Path, f.Size, MaxFileBytes)
		}
		mode := byte('-')
		if f.Executable {
			mode = 'x'
		}
		b = append(b, mode, ' ')
		b = strconv.AppendInt(b, f.Size, 10)
		b = append(b, ' ')
		b = hex.AppendEncode(b, f.SHA256[:])
		b = append(b, ' ')
		b = append(b, f.Path...)
		b = append(b, '\n')
	}
	return canonjson.Sum(TreeDigestDomain, b), nil
}
