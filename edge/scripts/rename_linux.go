package scripts

import "golang.org/x/sys/unix"

// renameNoReplace renames without ever replacing an existing target
// (EEXIST instead), in one system call.
func renameNoReplace(fromDir int, from string, toDir int, to string) error {
	return unix.Renameat2(fromDir, from, toDir, to, unix.RENAME_NOREPLACE)
}
