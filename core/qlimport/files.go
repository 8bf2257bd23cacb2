package qlimport

import (
	"sort"
	"strings"

	"github.com/ql3/ql3/core/scriptpath"
)

// FilePlan is one entry of the scripts folder: copied (lossless) or
// refused with the reason (requires_manual_action).
type FilePlan struct {
	Path    string   `json:"path"`
	Class   Class    `json:"class"`
	Reasons []string `json:"reasons,omitempty"`
	Dir     bool     `json:"dir,omitempty"`
	Size    int64    `json:"size,omitempty"`
	SHA256  string   `json:"sha256,omitempty"`
}

// skippedDirs are folders of a QingLong scripts folder that hold what its
// package managers and interpreters made, not scripts: they are listed
// and not copied (ql3 installs dependencies itself).
var skippedDirs = map[string]string{
	"node_modules": "installed Node.js packages",
	"__pycache__":  "Python's byte-code cache",
	".git":         "a git repository's metadata",
	".pnpm-store":  "pnpm's package store",
}

// SkipDir reports whether a folder of this name is listed but neither
// entered nor copied.
func SkipDir(name string) bool { _, ok := skippedDirs[name]; return ok }

// Copied reports whether apply copies the entry.
func (f FilePlan) Copied() bool { return f.Class == Lossless }

// planFiles refuses what is unsafe to copy (links, special files,
// group/world-writable files, over the limits) file by file; the rest is
// copied with its digest, which apply verifies after copying.
func planFiles(files []File) []FilePlan {
	files = append([]File(nil), files...)
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	out := make([]FilePlan, 0, len(files))
	var entries int
	var total int64
	for _, f := range files {
		v := verdict{class: Lossless}
		p := FilePlan{Path: f.Path, Dir: f.Mode == ModeDir, Size: f.Size, SHA256: f.SHA256}
		if _, err := scriptpath.Clean("path", f.Path, false); err != nil {
			v.add(RequiresManual, "%v", err)
		}
		switch f.Mode {
		case ModeDir:
			if what, ok := skippedDirs[pathBase(f.Path)]; ok {
				v.add(RequiresManual, "%s (%s): not copied; install the dependencies in ql3", pathBase(f.Path), what)
			}
		case ModeSymlink:
			v.add(RequiresManual, "a symbolic link: never followed or copied")
		case ModeSpecial:
			v.add(RequiresManual, "a device, socket or pipe")
		case ModeFile:
			switch {
			case f.Links > 1:
				v.add(RequiresManual, "has %d hard links", f.Links)
			case f.Writable:
				v.add(RequiresManual, "is group- or world-writable")
			case f.Size > scriptpath.MaxFileBytes:
				v.add(RequiresManual, "is %d bytes, limit is %d", f.Size, scriptpath.MaxFileBytes)
			case len(f.SHA256) != 64:
				v.add(Malformed, "no digest was taken")
			}
		}
		if v.class == Lossless {
			if entries+1 > scriptpath.MaxEntries {
				v.add(RequiresManual, "beyond %d entries in the scripts folder", scriptpath.MaxEntries)
			} else if f.Mode == ModeFile && total+f.Size > scriptpath.MaxTotalBytes {
				v.add(RequiresManual, "beyond %d bytes in the scripts folder", int64(scriptpath.MaxTotalBytes))
			} else {
				entries++
				total += f.Size
			}
		}
		p.Class, p.Reasons = v.class, v.reasons
		if p.Class != Lossless {
			p.SHA256 = ""
		}
		out = append(out, p)
	}
	return out
}

func pathBase(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}
