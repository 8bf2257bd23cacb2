// Package identity reads the worker's identity from files on every use, so
// an operator (or a provisioning agent) rotates it by replacing files, with
// no restart: the ql3w_ credential, the client certificate and key, and the
// CA bundle that anchors the ingress certificate.
//
// Every file is opened with O_NOFOLLOW and must be a regular file owned by
// the worker's user, within its size limit; the credential and the key must
// be 0600 (no group or other bits) in a directory that is 0700. Anything
// else is refused with an error that names the file's role and the rule,
// never its path or content (paths of secrets are not logged).
//
// Cert and key are two files, so a rotation that renames one and then the
// other is briefly torn: a pair that does not parse or whose key does not
// match the certificate keeps the last good pair (logged once per change).
package identity

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// Limits (DESIGN.md §8, ADR 0020).
const (
	MaxCredentialBytes = 256
	MaxPEMBytes        = 1 << 20 // certificate, key and CA bundle files
	MinAnchors         = 1
	MaxAnchors         = 8
)

// FileError is a refused identity file. It names the file's role
// ("credential", "key", ...) and the rule, never the path.
type FileError struct {
	Role string
	Rule string
}

func (e *FileError) Error() string { return "identity " + e.Role + ": " + e.Rule }

// fileStamp identifies one version of a file cheaply (no read).
type fileStamp struct {
	dev, ino uint64
	size     int64
	mtimeNs  int64
	ctimeNs  int64
}

// readFile reads a regular identity file under the rules in the package
// doc. secret adds the 0600-in-0700 rule.
func readFile(role, path string, max int64, secret bool) ([]byte, fileStamp, error) {
	var zero fileStamp
	if path == "" {
		return nil, zero, &FileError{role, "no file configured"}
	}
	if !filepath.IsAbs(path) {
		return nil, zero, &FileError{role, "path must be absolute"}
	}
	if err := checkDir(role, filepath.Dir(path), secret); err != nil {
		return nil, zero, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, zero, &FileError{role, "is a symbolic link (refused)"}
		}
		if errors.Is(err, os.ErrNotExist) {
			return nil, zero, &FileError{role, "file does not exist"}
		}
		return nil, zero, &FileError{role, "cannot be opened: " + errnoText(err)}
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, zero, &FileError{role, "cannot be inspected"}
	}
	if !st.Mode().IsRegular() {
		return nil, zero, &FileError{role, "is not a regular file"}
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return nil, zero, &FileError{role, "cannot be inspected"}
	}
	if int(sys.Uid) != os.Geteuid() {
		return nil, zero, &FileError{role, "is not owned by the worker's user"}
	}
	perm := st.Mode().Perm()
	if secret && perm&0o077 != 0 {
		return nil, zero, &FileError{role, fmt.Sprintf("mode is %04o; it must be 0600 (no group or other access)", perm)}
	}
	if !secret && perm&0o022 != 0 {
		return nil, zero, &FileError{role, fmt.Sprintf("mode is %04o; it must not be group- or world-writable", perm)}
	}
	if st.Size() > max {
		return nil, zero, &FileError{role, fmt.Sprintf("is %d bytes, limit is %d", st.Size(), max)}
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, zero, &FileError{role, "cannot be read: " + errnoText(err)}
	}
	if int64(len(data)) > max {
		return nil, zero, &FileError{role, fmt.Sprintf("is larger than the limit of %d bytes", max)}
	}
	return data, stampOf(sys), nil
}

// statFile returns the stamp of path without reading it (O_NOFOLLOW is
// applied by the later read; Lstat here so a symlink changes the stamp).
func statFile(path string) (fileStamp, error) {
	st, err := os.Lstat(path)
	if err != nil {
		return fileStamp{}, err
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return fileStamp{}, errors.New("no stat")
	}
	return stampOf(sys), nil
}

// checkDir refuses a parent directory that is a symlink, not owned by the
// worker's user, or (for secrets) open to group or others.
func checkDir(role, dir string, secret bool) error {
	st, err := os.Lstat(dir)
	if err != nil {
		return &FileError{role, "its directory cannot be inspected"}
	}
	if st.Mode()&os.ModeSymlink != 0 {
		return &FileError{role, "its directory is a symbolic link (refused)"}
	}
	if !st.IsDir() {
		return &FileError{role, "its parent is not a directory"}
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok || int(sys.Uid) != os.Geteuid() {
		return &FileError{role, "its directory is not owned by the worker's user"}
	}
	perm := st.Mode().Perm()
	if secret && perm&0o077 != 0 {
		return &FileError{role, fmt.Sprintf("its directory mode is %04o; it must be 0700", perm)}
	}
	if !secret && perm&0o022 != 0 {
		return &FileError{role, fmt.Sprintf("its directory mode is %04o; it must not be group- or world-writable", perm)}
	}
	return nil
}

func errnoText(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno.Error()
	}
	return "I/O error"
}
