package scripts

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/scriptpath"
)

// Precondition is what a write expects to find: a new file (IfNoneMatch)
// or the file with this ETag (IfMatch). Exactly one must be set, so a
// stale editor can never overwrite a newer version silently.
type Precondition struct {
	IfNoneMatch bool   // create only: the file must not exist
	IfMatch     string // replace only: the file's current ETag; "*" = any existing file
}

// Usage is what the folder holds.
type Usage struct {
	Entries int   // files and folders
	Bytes   int64 // of all files
}

// usage walks the whole folder (links and special files are not
// followed and not counted).
func (f *Folder) usage() (Usage, error) {
	fd, err := f.openRoot()
	if err != nil {
		return Usage{}, err
	}
	var u Usage
	err = walkAt(fd, "", func(_ string, st *unix.Stat_t, _ int, _ string) error {
		u.Entries++
		if st.Mode&unix.S_IFMT == unix.S_IFREG {
			u.Bytes += st.Size
		}
		if u.Entries > 4*scriptpath.MaxEntries {
			return errs.Invalidf("path", "the scripts folder holds more than %d entries", 4*scriptpath.MaxEntries)
		}
		return nil
	})
	unix.Close(fd)
	return u, err
}

// walkAt calls fn for every directory and regular file under dirfd
// (depth first, not following links); fn gets the entry's relative path,
// its stat, and its parent directory's descriptor and name. walkAt
// closes nothing it did not open.
func walkAt(dirfd int, prefix string, fn func(rel string, st *unix.Stat_t, parent int, name string) error) error {
	// No os.File around dirfd here: its finalizer would close a
	// descriptor this function does not own (readNames reads a dup).
	names, err := readNames(dirfd)
	if err != nil {
		return fmt.Errorf("listing %q: %w", prefix, err)
	}
	for _, name := range names {
		var st unix.Stat_t
		if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			continue
		}
		rel := name
		if prefix != "" {
			rel = prefix + "/" + name
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			if err := fn(rel, &st, dirfd, name); err != nil {
				return err
			}
		case unix.S_IFDIR:
			if err := fn(rel, &st, dirfd, name); err != nil {
				return err
			}
			sub, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				continue
			}
			err = walkAt(sub, rel, fn)
			unix.Close(sub)
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// readNames lists a directory descriptor without taking ownership of it.
func readNames(dirfd int) ([]string, error) {
	dup, err := unix.Dup(dirfd)
	if err != nil {
		return nil, err
	}
	if _, err := unix.Seek(dup, 0, 0); err != nil {
		unix.Close(dup)
		return nil, err
	}
	d := os.NewFile(uintptr(dup), "")
	defer d.Close()
	return d.Readdirnames(-1)
}

// checkLimits refuses a change that would take the folder past its
// limits; delta is what the change adds.
func checkLimits(u Usage, addEntries int, addBytes int64) error {
	return scriptpath.CheckLimits(u.Entries, u.Bytes, addEntries, addBytes)
}

// missingDirs counts the elements of segs that do not exist yet.
func (f *Folder) missingDirs(segs []string) (int, error) {
	fd, err := f.openRoot()
	if err != nil {
		return 0, err
	}
	for i, s := range segs {
		next, err := unix.Openat(fd, s, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) {
			unix.Close(fd)
			return len(segs) - i, nil
		}
		unix.Close(fd)
		if err != nil {
			return 0, pathErr("path", joinSegs(segs[:i+1]), err)
		}
		fd = next
	}
	unix.Close(fd)
	return 0, nil
}

// Write stores data at p atomically under pre and returns the new ETag
// and whether the file was created. Missing folders on the way are made.
func (f *Folder) Write(p string, data []byte, pre Precondition) (etag string, created bool, err error) {
	c, segs, err := clean("path", p, false)
	if err != nil {
		return "", false, err
	}
	if len(data) > scriptpath.MaxFileBytes {
		return "", false, errs.TooLargef("content", "is %d bytes, limit is %d (64 MiB) per file", len(data), scriptpath.MaxFileBytes)
	}
	if pre.IfNoneMatch == (pre.IfMatch != "") {
		return "", false, errs.Invalidf("If-Match", "exactly one of If-None-Match: * (create) and If-Match: <ETag> (replace) is required")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	u, err := f.usage()
	if err != nil {
		return "", false, err
	}
	missing, err := f.missingDirs(segs[:len(segs)-1])
	if err != nil {
		return "", false, err
	}
	// What is there now?
	var cur string
	var oldSize int64
	perm := uint32(0o644)
	if missing == 0 {
		dfd, err := f.openDir("path", segs[:len(segs)-1], false)
		if err != nil {
			return "", false, err
		}
		file, st, err := openFileAt(dfd, "path", c, segs[len(segs)-1])
		unix.Close(dfd)
		switch {
		case err == nil:
			h := sha256.New()
			_, cerr := file.WriteTo(h)
			file.Close()
			if cerr != nil {
				return "", false, cerr
			}
			cur, oldSize, perm = hex.EncodeToString(h.Sum(nil)), st.Size, uint32(st.Mode&0o777)
		case errs.Code(err) != errs.NotFound:
			return "", false, err
		}
	}
	switch {
	case pre.IfNoneMatch && cur != "":
		return "", false, &StaleError{Current: cur}
	case pre.IfMatch != "" && cur == "":
		return "", false, &StaleError{}
	case pre.IfMatch != "" && pre.IfMatch != "*" && pre.IfMatch != cur:
		return "", false, &StaleError{Current: cur}
	}
	add := missing
	if cur == "" {
		add++
	}
	if err := checkLimits(u, add, int64(len(data))-oldSize); err != nil {
		return "", false, err
	}
	dfd, err := f.openDir("path", segs[:len(segs)-1], true)
	if err != nil {
		return "", false, err
	}
	defer unix.Close(dfd)
	if err := writeAtomic(dfd, segs[len(segs)-1], data, perm); err != nil {
		return "", false, fmt.Errorf("writing %q: %w", c, err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), cur == "", nil
}

// tmpPrefix names the temporary files of atomic writes (left over only
// by a crash; List shows them, nothing runs them).
const tmpPrefix = ".ql3-tmp-"

// writeAtomic writes name in dirfd: temp file, fsync, rename, fsync dir.
func writeAtomic(dirfd int, name string, data []byte, perm uint32) error {
	return writeFile(dirfd, name, data, perm, true)
}

// writeFile is writeAtomic; with sync false it leaves both fsyncs to the
// caller (UploadSyncOnce).
func writeFile(dirfd int, name string, data []byte, perm uint32, sync bool) error {
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := tmpPrefix + hex.EncodeToString(rnd[:])
	fd, err := unix.Openat(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm&0o755)
	if err != nil {
		return err
	}
	file := os.NewFile(uintptr(fd), tmp)
	_, werr := file.Write(data)
	if werr == nil && sync {
		werr = file.Sync()
	}
	if cerr := file.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = unix.Renameat(dirfd, tmp, dirfd, name)
	}
	if werr != nil {
		_ = unix.Unlinkat(dirfd, tmp, 0)
		return werr
	}
	if !sync {
		return nil
	}
	return unix.Fsync(dirfd)
}

// Mkdir creates a folder (and missing parents).
func (f *Folder) Mkdir(p string) error {
	_, segs, err := clean("path", p, false)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	u, err := f.usage()
	if err != nil {
		return err
	}
	missing, err := f.missingDirs(segs)
	if err != nil {
		return err
	}
	if missing == 0 {
		return errs.Conflictf("%q already exists", p)
	}
	if err := checkLimits(u, missing, 0); err != nil {
		return err
	}
	fd, err := f.openDir("path", segs, true)
	if err != nil {
		return err
	}
	return unix.Close(fd)
}

// Move renames a file or folder; the target must not exist (never an
// overwrite) and a folder cannot move into itself.
func (f *Folder) Move(from, to string) error {
	fc, fsegs, err := clean("from", from, false)
	if err != nil {
		return err
	}
	tc, tsegs, err := clean("to", to, false)
	if err != nil {
		return err
	}
	if tc == fc || strings.HasPrefix(tc, fc+"/") {
		return errs.Invalidf("to", "%q cannot move into itself", fc)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.Stat(fc); err != nil {
		return err
	}
	u, err := f.usage()
	if err != nil {
		return err
	}
	missing, err := f.missingDirs(tsegs[:len(tsegs)-1])
	if err != nil {
		return err
	}
	if err := checkLimits(u, missing, 0); err != nil {
		return err
	}
	src, err := f.openDir("from", fsegs[:len(fsegs)-1], false)
	if err != nil {
		return err
	}
	defer unix.Close(src)
	dst, err := f.openDir("to", tsegs[:len(tsegs)-1], true)
	if err != nil {
		return err
	}
	defer unix.Close(dst)
	if err := renameNoReplace(src, fsegs[len(fsegs)-1], dst, tsegs[len(tsegs)-1]); err != nil {
		if errors.Is(err, unix.EEXIST) {
			return errs.Conflictf("%q already exists", tc)
		}
		return fmt.Errorf("moving %q to %q: %w", fc, tc, err)
	}
	if err := unix.Fsync(dst); err != nil {
		return err
	}
	return unix.Fsync(src)
}

// Delete removes a file, or a folder with everything in it when
// recursive (a non-empty folder is a conflict otherwise). Links inside a
// deleted folder are removed, never followed.
func (f *Folder) Delete(p string, recursive bool) error {
	c, segs, err := clean("path", p, false)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	e, err := f.Stat(c)
	if err != nil {
		return err
	}
	dfd, err := f.openDir("path", segs[:len(segs)-1], false)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	name := segs[len(segs)-1]
	if e.Kind == KindFile {
		if err := unix.Unlinkat(dfd, name, 0); err != nil {
			return pathErr("path", c, err)
		}
		return unix.Fsync(dfd)
	}
	if err := unix.Unlinkat(dfd, name, unix.AT_REMOVEDIR); err == nil {
		return unix.Fsync(dfd)
	} else if !errors.Is(err, unix.ENOTEMPTY) && !errors.Is(err, unix.EEXIST) {
		return pathErr("path", c, err)
	}
	if !recursive {
		return errs.Conflictf("folder %q is not empty (delete it with recursive=true)", c)
	}
	if err := removeAllAt(dfd, name); err != nil {
		return fmt.Errorf("deleting %q: %w", c, err)
	}
	return unix.Fsync(dfd)
}

func removeAllAt(parent int, name string) error {
	fd, err := unix.Openat(parent, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	names, err := readNames(fd)
	if err != nil {
		unix.Close(fd)
		return err
	}
	for _, n := range names {
		var st unix.Stat_t
		if err := unix.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			continue
		}
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			err = removeAllAt(fd, n)
		} else {
			err = unix.Unlinkat(fd, n, 0)
		}
		if err != nil {
			unix.Close(fd)
			return err
		}
	}
	unix.Close(fd)
	return unix.Unlinkat(parent, name, unix.AT_REMOVEDIR)
}
