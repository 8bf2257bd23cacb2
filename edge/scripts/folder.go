// Package scripts is the edge's scripts folder (<data-dir>/scripts): the
// files script tasks run and the panel's editor changes (ADR 0044).
//
// Safe by construction. Every path is checked by core/scriptpath.Clean
// (relative, no "..", no NUL, bounded) and then walked one element at a
// time from a descriptor of the folder with openat(2) and O_NOFOLLOW, so
// a symlink anywhere on the path — planted by a script, say — is refused,
// never followed; a regular file with more than one link is refused too
// (its other name may be outside). Nothing here creates a symlink or a
// hard link. Writes are atomic: a temporary file in the target's folder,
// fsync, rename over the target, fsync of the folder. One writer at a
// time (a mutex): the limits of the whole folder (scriptpath.MaxEntries,
// MaxFileBytes, MaxTotalBytes) are checked against a fresh count before
// each change, so a refused change writes nothing.
package scripts

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/scriptpath"
)

// Kinds of an Entry.
const (
	KindFile = "file"
	KindDir  = "dir"
)

// Entry is one element of a folder listing.
type Entry struct {
	Name    string `json:"name"`
	Kind    string `json:"kind"` // file or dir
	Size    int64  `json:"size"`
	MtimeMs int64  `json:"mtimeMs"`
	SHA256  string `json:"sha256,omitempty"` // files: hex of the content (the content's ETag)
}

// ErrStale is returned by Write when the caller's precondition no longer
// holds (the file changed since it was read, or exists when it should
// not): the HTTP layer answers 412.
var ErrStale = errors.New("the file changed since it was read")

// StaleError carries the current ETag ("" when the file does not exist).
type StaleError struct{ Current string }

func (e *StaleError) Error() string {
	if e.Current == "" {
		return "precondition failed: the file does not exist (any more)"
	}
	return "precondition failed: the file changed since it was read (its ETag is now " + e.Current + ")"
}

func (e *StaleError) Unwrap() error { return ErrStale }

// Folder is one scripts folder.
type Folder struct {
	root string
	mu   sync.Mutex // one change at a time
}

// Open opens (creating 0700 if missing) the scripts folder at dir, which
// must be an absolute path to a real directory, not a symlink.
func Open(dir string) (*Folder, error) {
	if !filepath.IsAbs(dir) {
		return nil, errs.Invalidf("scriptsDir", "must be an absolute path, got %q", dir)
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("scripts folder: %w", err)
	}
	st, err := os.Lstat(dir)
	if err != nil {
		return nil, fmt.Errorf("scripts folder: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("scripts folder %s is not a directory (a symlink is not accepted)", dir)
	}
	return &Folder{root: dir}, nil
}

// Root is the folder's absolute path on disk.
func (f *Folder) Root() string { return f.root }

// openRoot opens the folder itself.
func (f *Folder) openRoot() (int, error) {
	fd, err := unix.Open(f.root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("scripts folder: %w", err)
	}
	return fd, nil
}

// openDir walks segs from the folder with O_NOFOLLOW and returns a
// descriptor of the directory they name. A symlink or a non-directory on
// the way is errs.Invalid naming field; a missing element is NotFound
// (or, with create, made 0700).
func (f *Folder) openDir(field string, segs []string, create bool) (int, error) {
	fd, err := f.openRoot()
	if err != nil {
		return -1, err
	}
	for i, s := range segs {
		next, err := unix.Openat(fd, s, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) && create {
			if err = unix.Mkdirat(fd, s, 0o700); err == nil || errors.Is(err, unix.EEXIST) {
				next, err = unix.Openat(fd, s, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			}
		}
		if err != nil {
			unix.Close(fd)
			return -1, pathErr(field, joinSegs(segs[:i+1]), err)
		}
		unix.Close(fd)
		fd = next
	}
	return fd, nil
}

// pathErr turns an openat error into a coded error naming the path.
func pathErr(field, p string, err error) error {
	switch {
	case errors.Is(err, unix.ELOOP):
		return errs.Invalidf(field, "%q is a symbolic link: links are never followed in the scripts folder", p)
	case errors.Is(err, unix.ENOTDIR):
		return errs.Invalidf(field, "%q is not a folder (or a symbolic link)", p)
	case errors.Is(err, unix.ENOENT):
		return errs.NotFoundf("%q does not exist in the scripts folder", p)
	case errors.Is(err, unix.EISDIR):
		return errs.Invalidf(field, "%q is a folder", p)
	}
	return fmt.Errorf("scripts folder %q: %w", p, err)
}

func joinSegs(segs []string) string {
	var b bytes.Buffer
	for i, s := range segs {
		if i > 0 {
			b.WriteByte('/')
		}
		b.WriteString(s)
	}
	return b.String()
}

func split(p string) []string {
	if p == "" {
		return nil
	}
	var out []string
	for len(p) > 0 {
		i := bytes.IndexByte([]byte(p), '/')
		if i < 0 {
			return append(out, p)
		}
		out = append(out, p[:i])
		p = p[i+1:]
	}
	return out
}

// clean checks a path of a request: a file or folder inside the folder.
func clean(field, p string, root bool) (string, []string, error) {
	c, err := scriptpath.Clean(field, p, root)
	if err != nil {
		return "", nil, err
	}
	return c, split(c), nil
}

// List returns the entries of one folder (one level), folders first, then
// by name. Symlinks and special files are listed as what they are not:
// they are left out (they cannot be read or run from here).
func (f *Folder) List(dir string) ([]Entry, error) {
	_, segs, err := clean("path", dir, true)
	if err != nil {
		return nil, err
	}
	fd, err := f.openDir("path", segs, false)
	if err != nil {
		return nil, err
	}
	d := os.NewFile(uintptr(fd), dir)
	defer d.Close()
	names, err := d.Readdirnames(scriptpath.MaxEntries + 1)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("listing %q: %w", dir, err)
	}
	out := make([]Entry, 0, len(names))
	for _, name := range names {
		var st unix.Stat_t
		if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			continue // gone meanwhile
		}
		e := Entry{Name: name, Size: st.Size, MtimeMs: int64(st.Mtim.Sec)*1000 + int64(st.Mtim.Nsec)/1e6}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			e.Kind, e.Size = KindDir, 0
		case unix.S_IFREG:
			e.Kind = KindFile
			if sum, err := hashAt(fd, name); err == nil {
				e.SHA256 = sum
			}
		default:
			continue
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind == KindDir
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

// openFileAt opens a regular file in dirfd without following a link and
// refuses one with other hard links.
func openFileAt(dirfd int, field, p, name string) (*os.File, unix.Stat_t, error) {
	var st unix.Stat_t
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, st, pathErr(field, p, err)
	}
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, st, err
	}
	switch {
	case st.Mode&unix.S_IFMT == unix.S_IFDIR:
		unix.Close(fd)
		return nil, st, errs.Invalidf(field, "%q is a folder", p)
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		unix.Close(fd)
		return nil, st, errs.Invalidf(field, "%q is not a regular file", p)
	case st.Nlink > 1:
		unix.Close(fd)
		return nil, st, errs.Invalidf(field, "%q has %d hard links: a linked file is never read or replaced in the scripts folder", p, st.Nlink)
	case st.Size > scriptpath.MaxFileBytes:
		unix.Close(fd)
		return nil, st, errs.TooLargef(field, "%q is %d bytes, limit is %d per file", p, st.Size, scriptpath.MaxFileBytes)
	}
	return os.NewFile(uintptr(fd), p), st, nil
}

func hashAt(dirfd int, name string) (string, error) {
	file, _, err := openFileAt(dirfd, "path", name, name)
	if err != nil {
		return "", err
	}
	defer file.Close()
	h := sha256.New()
	if _, err := io.Copy(h, io.LimitReader(file, scriptpath.MaxFileBytes+1)); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Read returns a file's content and its ETag (hex SHA-256).
func (f *Folder) Read(p string) ([]byte, string, error) {
	c, segs, err := clean("path", p, false)
	if err != nil {
		return nil, "", err
	}
	dfd, err := f.openDir("path", segs[:len(segs)-1], false)
	if err != nil {
		return nil, "", err
	}
	defer unix.Close(dfd)
	file, st, err := openFileAt(dfd, "path", c, segs[len(segs)-1])
	if err != nil {
		return nil, "", err
	}
	defer file.Close()
	data := make([]byte, 0, st.Size)
	buf := bytes.NewBuffer(data)
	if _, err := io.Copy(buf, io.LimitReader(file, scriptpath.MaxFileBytes+1)); err != nil {
		return nil, "", err
	}
	if buf.Len() > scriptpath.MaxFileBytes {
		return nil, "", errs.TooLargef("path", "%q is over %d bytes", c, scriptpath.MaxFileBytes)
	}
	sum := sha256.Sum256(buf.Bytes())
	return buf.Bytes(), hex.EncodeToString(sum[:]), nil
}

// Stat reports what p is: KindFile, KindDir, or an error (NotFound,
// Invalid for a link or a special file).
func (f *Folder) Stat(p string) (Entry, error) {
	c, segs, err := clean("path", p, false)
	if err != nil {
		return Entry{}, err
	}
	dfd, err := f.openDir("path", segs[:len(segs)-1], false)
	if err != nil {
		return Entry{}, err
	}
	defer unix.Close(dfd)
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, segs[len(segs)-1], &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return Entry{}, pathErr("path", c, err)
	}
	e := Entry{Name: segs[len(segs)-1], Size: st.Size, MtimeMs: int64(st.Mtim.Sec)*1000 + int64(st.Mtim.Nsec)/1e6}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		e.Kind, e.Size = KindDir, 0
	case unix.S_IFREG:
		e.Kind = KindFile
		if st.Nlink > 1 {
			return Entry{}, errs.Invalidf("path", "%q has %d hard links: a linked file is never read, moved or replaced in the scripts folder", c, st.Nlink)
		}
	case unix.S_IFLNK:
		return Entry{}, errs.Invalidf("path", "%q is a symbolic link: links are never followed in the scripts folder", c)
	default:
		return Entry{}, errs.Invalidf("path", "%q is not a regular file or folder", c)
	}
	return e, nil
}
