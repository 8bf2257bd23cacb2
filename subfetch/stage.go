// Package subfetch fetches subscriptions for both binaries (ADR 0054, ADR
// 0061): a git repository (the system git, a private shallow forced-fetch
// cache) or a raw file is staged in a private folder, every tree entry
// checked before a byte is written (paths through core/scriptpath.Clean,
// no ".git" element, regular files only, bounded). The edge swaps the
// staged tree into scripts/<slug>/; the control plane publishes it into
// the project's script store. Scan reads the staged scripts' cron
// comments for core/subplan.
package subfetch

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/scriptpath"
)

// Limits bound one pulled tree.
type Limits struct {
	MaxFiles      int   // regular files kept; more refuses the pull
	MaxFileBytes  int64 // one file; a larger one is skipped
	MaxTotalBytes int64 // all files kept; more refuses the pull
	MaxDepth      int   // folders deep; a deeper file is skipped
}

// DefaultLimits fit inside the scripts folder's own (scriptpath).
var DefaultLimits = Limits{MaxFiles: 4000, MaxFileBytes: 8 << 20, MaxTotalBytes: 256 << 20, MaxDepth: 16}

func (l Limits) WithDefaults() Limits {
	d := DefaultLimits
	if l.MaxFiles > 0 {
		d.MaxFiles = min(l.MaxFiles, scriptpath.MaxEntries)
	}
	if l.MaxFileBytes > 0 {
		d.MaxFileBytes = min(l.MaxFileBytes, scriptpath.MaxFileBytes)
	}
	if l.MaxTotalBytes > 0 {
		d.MaxTotalBytes = min(l.MaxTotalBytes, scriptpath.MaxTotalBytes)
	}
	if l.MaxDepth > 0 {
		d.MaxDepth = min(l.MaxDepth, scriptpath.MaxDepth)
	}
	return d
}

// Skip is a tree entry left out, with the reason (shown in the Run's log).
type Skip struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// Staged is a checked tree waiting to be swapped in (or discarded).
type Staged struct {
	Dir     string
	Commit  string // git: the commit; file: "sha256:<hex>" of the content
	Files   int
	Bytes   int64
	Skipped []Skip
}

// Discard removes a staged tree.
func (s Staged) Discard() error {
	if s.Dir == "" {
		return nil
	}
	return os.RemoveAll(s.Dir)
}

// entry is one regular file of a tree to write.
type entry struct {
	path string
	exec bool
	size int64
	ref  string // git object id
}

// checkEntries applies the limits and the path rules to a listing: what
// can be skipped is skipped with its reason, a tree that cannot be kept
// as a whole (a path escaping the folder, too many files, too many bytes)
// is refused with an error naming the rule.
func checkEntries(raw []rawEntry, l Limits) ([]entry, []Skip, error) {
	var keep []entry
	var skip []Skip
	var total int64
	for _, r := range raw {
		p, err := scriptpath.Clean("path", r.path, false)
		if err != nil || p != r.path {
			return nil, nil, errs.Invalidf("tree", "entry %.200q is refused: %s", r.path, reasonOf(err, "not in its clean form"))
		}
		if hasGitElement(p) {
			return nil, nil, errs.Invalidf("tree", "entry %.200q is refused: a .git element", r.path)
		}
		switch {
		case r.kind == kindLink:
			skip = append(skip, Skip{p, "a symbolic link: links are never written"})
			continue
		case r.kind == kindSubmodule:
			skip = append(skip, Skip{p, "a submodule: submodules are not fetched"})
			continue
		case r.kind != kindFile:
			skip = append(skip, Skip{p, "not a regular file"})
			continue
		case strings.Count(p, "/") >= l.MaxDepth:
			skip = append(skip, Skip{p, fmt.Sprintf("deeper than %d folders", l.MaxDepth)})
			continue
		case r.size > l.MaxFileBytes:
			skip = append(skip, Skip{p, fmt.Sprintf("%d bytes, the limit per file is %d", r.size, l.MaxFileBytes)})
			continue
		}
		if len(keep) == l.MaxFiles {
			return nil, nil, errs.TooLargef("tree", "holds more than %d files, the limit of a subscription", l.MaxFiles)
		}
		total += r.size
		if total > l.MaxTotalBytes {
			return nil, nil, errs.TooLargef("tree", "holds more than %d bytes, the limit of a subscription", l.MaxTotalBytes)
		}
		keep = append(keep, entry{path: p, exec: r.exec, size: r.size, ref: r.ref})
	}
	return keep, skip, nil
}

func reasonOf(err error, fallback string) string {
	if err == nil {
		return fallback
	}
	var e *errs.Error
	if errors.As(err, &e) {
		return e.Message
	}
	return err.Error()
}

func hasGitElement(p string) bool {
	for _, s := range strings.Split(p, "/") {
		if strings.EqualFold(s, ".git") {
			return true
		}
	}
	return false
}

// writeFile writes one checked file into the stage: its parents are made
// fresh (the stage holds no link, nothing is followed), the file is
// created exclusively and gets exactly size bytes from r.
func writeFile(stage string, e entry, r io.Reader) error {
	full := filepath.Join(stage, filepath.FromSlash(e.path))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return err
	}
	mode := os.FileMode(0o644)
	if e.exec {
		mode = 0o755
	}
	f, err := os.OpenFile(full, os.O_WRONLY|os.O_CREATE|os.O_EXCL|noFollow, mode)
	if err != nil {
		return err
	}
	n, err := io.Copy(f, io.LimitReader(r, e.size))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && n != e.size {
		err = fmt.Errorf("%s: got %d bytes, the tree says %d", e.path, n, e.size)
	}
	return err
}

// Kinds of a raw tree entry.
const (
	kindFile = iota
	kindLink
	kindSubmodule
	kindOther
)

type rawEntry struct {
	path string
	kind int
	exec bool
	size int64
	ref  string
}
