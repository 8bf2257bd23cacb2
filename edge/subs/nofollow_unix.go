//go:build unix

package subs

import "syscall"

const noFollow = syscall.O_NOFOLLOW
