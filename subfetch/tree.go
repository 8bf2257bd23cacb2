package subfetch

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// WalkTree calls fn for every regular file of a staged tree in path
// order, with its path relative to dir (slashes), its executable bit and
// its content; a link or other special file is never followed (the stage
// holds none: Stage writes regular files only). A file over maxBytes is
// an error naming it.
func WalkTree(dir string, maxBytes int64, fn func(path string, executable bool, data []byte) error) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		f, err := os.OpenFile(p, os.O_RDONLY|noFollow, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		if fi.Size() > maxBytes {
			return fmt.Errorf("%s: %d bytes, the limit per file is %d", rel, fi.Size(), maxBytes)
		}
		data, err := io.ReadAll(io.LimitReader(f, maxBytes+1))
		if err != nil {
			return err
		}
		if int64(len(data)) > maxBytes {
			return fmt.Errorf("%s: over %d bytes", rel, maxBytes)
		}
		return fn(filepath.ToSlash(rel), fi.Mode()&0o111 != 0, data)
	})
}
