package subs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// Swap puts a staged tree at root/slug in one rename and keeps the tree
// it replaces as workDir/slug/old-* (the tree a still running script
// started from: its working directory stays valid). Only the newest old
// tree is kept; older ones go. A target that is a symbolic link is
// refused: the folder of a subscription is a real folder.
func Swap(root, workDir, slug string, st Staged) error {
	target := filepath.Join(root, slug)
	fi, err := os.Lstat(target)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := renameNoReplace(st.Dir, target); err != nil {
			return fmt.Errorf("moving the pulled tree into place: %w", err)
		}
		return nil
	case err != nil:
		return err
	case !fi.IsDir():
		return fmt.Errorf("%s exists and is not a folder: refused", target)
	}
	if err := exchange(st.Dir, target); err != nil {
		return fmt.Errorf("swapping the pulled tree into place: %w", err)
	}
	// st.Dir now holds the previous tree.
	old := filepath.Join(workDir, slug, "old-"+filepath.Base(st.Dir))
	if err := os.Rename(st.Dir, old); err != nil {
		return err
	}
	olds, _ := filepath.Glob(filepath.Join(workDir, slug, "old-*"))
	sort.Slice(olds, func(i, j int) bool { return modTime(olds[i]) > modTime(olds[j]) })
	for _, o := range olds {
		if o != old {
			os.RemoveAll(o)
		}
	}
	return nil
}

func modTime(p string) int64 {
	fi, err := os.Lstat(p)
	if err != nil {
		return 0
	}
	return fi.ModTime().UnixNano()
}
