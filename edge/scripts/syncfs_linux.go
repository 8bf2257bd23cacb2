package scripts

import "golang.org/x/sys/unix"

// syncFS makes every write of the file system holding fd durable.
func syncFS(fd int) error { return unix.Syncfs(fd) }
