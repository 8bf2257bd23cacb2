//go:build linux

package notifyrelay

import (
	"bufio"
	"io"
	"os"
	"strconv"
	"syscall"
	"time"
)

// Listen opens the loopback listener on 127.0.0.1 (an ephemeral port).
func Listen(c Poster) (*Relay, error) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	var sa syscall.Sockaddr
	if err == nil {
		err = syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}})
	}
	if err == nil {
		err = syscall.Listen(fd, 16)
	}
	if err == nil {
		sa, err = syscall.Getsockname(fd)
	}
	in, ok := sa.(*syscall.SockaddrInet4)
	if err == nil && !ok {
		err = syscall.EAFNOSUPPORT
	}
	if err != nil {
		_ = syscall.Close(fd) // -1 when socket failed: EBADF, nothing to close
		return nil, os.NewSyscallError("listen on 127.0.0.1", err)
	}
	return &Relay{fd: fd, URL: "http://127.0.0.1:" + strconv.Itoa(in.Port) + Path, c: c}, nil
}

// Serve accepts and answers connections, one at a time, until the
// listener is closed.
func (r *Relay) Serve() {
	for {
		nfd, _, err := syscall.Accept4(r.fd, syscall.SOCK_CLOEXEC|syscall.SOCK_NONBLOCK)
		if err == syscall.EINTR || err == syscall.ECONNABORTED {
			continue
		}
		if err != nil {
			return // closed
		}
		// Non-blocking, so the file joins the runtime's poller and its
		// deadline holds.
		f := os.NewFile(uintptr(nfd), "sendNotify")
		_ = f.SetDeadline(time.Now().Add(ConnTimeout))
		status, body := r.handle(bufio.NewReader(f))
		if status != 202 {
			body = `{"code":"` + body + `"}`
		}
		_, _ = io.WriteString(f, "HTTP/1.1 "+strconv.Itoa(status)+" ql3\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: "+
			strconv.Itoa(len(body))+"\r\n\r\n"+body)
		_ = f.Close()
	}
}
