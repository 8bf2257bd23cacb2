// Package scriptpath holds the rules of the scripts folder that both
// binaries share: which paths may name a script, which interpreter runs a
// file, how QingLong's `task <file> [args]` command line reads, and the
// deterministic per-occurrence start delay (QingLong's RandomDelay).
//
// It is pure: no file system access. The stores (a directory on the edge,
// content-addressed trees on the cluster) call Clean before every
// operation, and refuse symlinks and special files themselves.
package scriptpath

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ql3/ql3/core/errs"
)

// Limits of one scripts folder (DESIGN.md §8).
const (
	MaxEntries     = 8192      // files and folders
	MaxFileBytes   = 64 << 20  // one file
	MaxTotalBytes  = 512 << 20 // all files
	MaxPathBytes   = 1024      // a relative path
	MaxSegmentByte = 255       // one path element (NAME_MAX)
	MaxDepth       = 32        // folders deep
)

// Clean validates a path inside the scripts folder and returns its
// canonical form: relative, '/'-separated, no empty, "." or ".." element,
// no NUL or control character, no backslash (a Windows separator on
// another system would name a different file), bounded. The empty path
// (or ".") is the folder itself and is allowed only when root is true.
//
// Clean refuses rather than repairs: "a/../b" is an error, not "b", so a
// request names exactly the file it touches.
func Clean(field, p string, root bool) (string, error) {
	if p == "" || p == "." {
		if root {
			return "", nil
		}
		return "", errs.Invalidf(field, "must name a file or folder inside the scripts folder")
	}
	if len(p) > MaxPathBytes {
		return "", errs.TooLargef(field, "is %d bytes, limit is %d", len(p), MaxPathBytes)
	}
	if !utf8.ValidString(p) {
		return "", errs.Invalidf(field, "is not valid UTF-8")
	}
	if strings.HasPrefix(p, "/") {
		return "", errs.Invalidf(field, "must be relative to the scripts folder, got an absolute path")
	}
	for i, r := range p {
		switch {
		case r == 0:
			return "", errs.Invalidf(field, "must not contain NUL (byte %d)", i)
		case r == '\\':
			return "", errs.Invalidf(field, "must use '/' as separator, not '\\' (byte %d)", i)
		case unicode.IsControl(r):
			return "", errs.Invalidf(field, "must not contain control characters (byte %d)", i)
		}
	}
	p = strings.TrimSuffix(p, "/")
	segs := strings.Split(p, "/")
	if len(segs) > MaxDepth {
		return "", errs.TooLargef(field, "is %d levels deep, limit is %d", len(segs), MaxDepth)
	}
	for _, s := range segs {
		switch {
		case s == "":
			return "", errs.Invalidf(field, "must not contain an empty element ('//')")
		case s == "." || s == "..":
			return "", errs.Invalidf(field, "must not contain %q: paths stay inside the scripts folder", s)
		case len(s) > MaxSegmentByte:
			return "", errs.TooLargef(field, "has an element of %d bytes, limit is %d", len(s), MaxSegmentByte)
		}
	}
	return p, nil
}

// Dir is the folder of a cleaned path ("" for the scripts folder itself).
func Dir(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return ""
}

// Base is the last element of a cleaned path.
func Base(p string) string {
	return p[strings.LastIndexByte(p, '/')+1:]
}
