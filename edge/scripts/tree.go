package scripts

import (
	"crypto/sha256"
	"io"

	"golang.org/x/sys/unix"

	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/scriptpath"
)

// Tree returns the files under dir (the whole folder for "") with their
// content digests, and the tree digest of core/scriptpath.TreeDigest over
// paths relative to dir: the ETag of a folder, and what a script Run
// records as the tree it started from.
func (f *Folder) Tree(dir string) ([]scriptpath.TreeFile, canonjson.Digest, error) {
	_, segs, err := clean("path", dir, true)
	if err != nil {
		return nil, canonjson.Digest{}, err
	}
	fd, err := f.openDir("path", segs, false)
	if err != nil {
		return nil, canonjson.Digest{}, err
	}
	defer unix.Close(fd)
	var files []scriptpath.TreeFile
	err = walkAt(fd, "", func(rel string, st *unix.Stat_t, parent int, name string) error {
		if st.Mode&unix.S_IFMT != unix.S_IFREG {
			return nil
		}
		if len(files) >= scriptpath.MaxEntries {
			return errs.Invalidf("path", "%q holds more than %d files, limit is %d", dir, scriptpath.MaxEntries, scriptpath.MaxEntries)
		}
		file, fst, err := openFileAt(parent, "path", rel, name)
		if err != nil {
			return err
		}
		h := sha256.New()
		_, err = io.Copy(h, io.LimitReader(file, scriptpath.MaxFileBytes+1))
		file.Close()
		if err != nil {
			return err
		}
		tf := scriptpath.TreeFile{Path: rel, Executable: fst.Mode&0o111 != 0, Size: fst.Size}
		h.Sum(tf.SHA256[:0])
		files = append(files, tf)
		return nil
	})
	if err != nil {
		return nil, canonjson.Digest{}, err
	}
	d, err := scriptpath.TreeDigest(files)
	return files, d, err
}
