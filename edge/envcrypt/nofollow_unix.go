//go:build unix

package envcrypt

import "syscall"

const noFollow = syscall.O_NOFOLLOW
