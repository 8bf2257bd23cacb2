package qlsource

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/qlimport"
)

// CheckedFile is a script file of the plan opened for its copy: a regular
// file, one link, not group/world-writable, of the planned size; CopyTo
// checks its content against the planned SHA-256.
type CheckedFile struct {
	f    *os.File
	plan qlimport.FilePlan
	// Executable is whether any execute bit is set (the copy keeps it).
	Executable bool
}

// OpenChecked opens scripts/<f.Path> of the data directory dataDir through
// an O_NOFOLLOW descriptor and checks it is still what the plan saw. Any
// difference is a conflict asking for a new inspect.
func OpenChecked(dataDir string, f qlimport.FilePlan) (*CheckedFile, error) {
	abs := filepath.Join(dataDir, ScriptsDir, filepath.FromSlash(f.Path))
	fh, err := os.OpenFile(abs, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, changed(f, "cannot be opened ("+err.Error()+")")
	}
	st, err := fh.Stat()
	if err != nil {
		fh.Close()
		return nil, err
	}
	d := Describe(f.Path, st)
	if d.Mode != qlimport.ModeFile || d.Links != 1 || d.Writable || d.Size != f.Size {
		fh.Close()
		return nil, changed(f, "changed type, links, mode or size")
	}
	return &CheckedFile{f: fh, plan: f, Executable: st.Mode().Perm()&0o111 != 0}, nil
}

func changed(f qlimport.FilePlan, what string) error {
	return errs.E(errs.Conflict, "plan", "scripts/%s %s since it was inspected: inspect again", f.Path, what)
}

// CopyTo copies the file's planned bytes to w and refuses (after the copy:
// the caller discards what it wrote) when they are not the planned ones.
func (c *CheckedFile) CopyTo(w io.Writer) error {
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(w, h), io.LimitReader(c.f, c.plan.Size+1))
	if err != nil {
		return err
	}
	if n != c.plan.Size || hex.EncodeToString(h.Sum(nil)) != c.plan.SHA256 {
		return changed(c.plan, "changed content")
	}
	return nil
}

// ReadAll returns the file's planned bytes (CopyTo into memory; the plan
// bounds the size).
func (c *CheckedFile) ReadAll() ([]byte, error) {
	buf := make([]byte, 0, c.plan.Size)
	w := &sliceWriter{b: buf}
	if err := c.CopyTo(w); err != nil {
		return nil, err
	}
	return w.b, nil
}

type sliceWriter struct{ b []byte }

func (s *sliceWriter) Write(p []byte) (int, error) {
	s.b = append(s.b, p...)
	return len(p), nil
}

// Close closes the descriptor.
func (c *CheckedFile) Close() error { return c.f.Close() }
