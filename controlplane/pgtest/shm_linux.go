//go:build linux && !386

package pgtest

import "syscall"

// removeSysVSegment marks a System V shared memory segment for removal
// (shmctl IPC_RMID; the kernel frees it once the last process detaches).
func removeSysVSegment(id int) error {
	const ipcRMID = 0
	if _, _, errno := syscall.Syscall(syscall.SYS_SHMCTL, uintptr(id), ipcRMID, 0); errno != 0 {
		return errno
	}
	return nil
}
