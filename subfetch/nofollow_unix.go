//go:build unix

package subfetch

import "syscall"

const noFollow = syscall.O_NOFOLLOW
