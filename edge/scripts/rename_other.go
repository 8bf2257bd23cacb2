//go:build !linux

package scripts

import (
	"errors"

	"golang.org/x/sys/unix"
)

// renameNoReplace renames unless the target exists (EEXIST). Without
// renameat2 the check and the rename are two calls: the folder's own
// writes are serialised by Folder.mu, a process writing the folder
// directly could still race it.
func renameNoReplace(fromDir int, from string, toDir int, to string) error {
	var st unix.Stat_t
	switch err := unix.Fstatat(toDir, to, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case err == nil:
		return unix.EEXIST
	case !errors.Is(err, unix.ENOENT):
		return err
	}
	return unix.Renameat(fromDir, from, toDir, to)
}
