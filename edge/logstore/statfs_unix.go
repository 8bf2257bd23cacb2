//go:build linux || darwin || freebsd || netbsd || openbsd

package logstore

import "syscall"

// statfsFree reports free (available to unprivileged users) and total bytes
// of the file system holding dir.
func statfsFree(dir string) (free, total uint64, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, 0, err
	}
	bsize := uint64(st.Bsize)
	return uint64(st.Bavail) * bsize, uint64(st.Blocks) * bsize, nil
}
