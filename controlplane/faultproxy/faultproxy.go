// Package faultproxy is a TCP proxy between a PostgreSQL client and server
// for fault tests. It relays bytes unchanged, and can be armed to lose the
// response to one COMMIT: it forwards the client's COMMIT to the server,
// waits until the server has answered (so the transaction is committed),
// swallows that answer and drops both connections. The client then sees a
// connection error for a transaction that did commit: the "COMMIT-response
// loss" of DESIGN.md §7.
//
// It understands just enough of the frontend protocol to find message
// boundaries (the untyped startup packet, SSL/GSS negotiation requests and
// typed messages) and to recognise a COMMIT being run: a simple Query ('Q'),
// or an extended-protocol Bind ('B') of a statement prepared (Parse, 'P')
// from COMMIT — drivers with a statement cache (pgx) prepare COMMIT once and
// then only bind it, also inside a pipeline. Use sslmode=disable: an
// encrypted stream cannot be inspected.
package faultproxy

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
)

// maxMessage bounds one frontend message the proxy will buffer.
const maxMessage = 64 << 20

// Proxy forwards connections accepted on a loopback port to a target.
type Proxy struct {
	ln     net.Listener
	target string

	armed atomic.Bool
	fired chan struct{} // closed when an armed COMMIT response was lost
	once  sync.Once

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup

	commits atomic.Int64
}

// Start listens on 127.0.0.1 (a free port) and forwards every accepted
// connection to target ("host:port").
func Start(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, fired: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Port is the proxy's listening port on 127.0.0.1.
func (p *Proxy) Port() int { return p.ln.Addr().(*net.TCPAddr).Port }

// ArmCommitLoss makes the next COMMIT lose its response (once).
func (p *Proxy) ArmCommitLoss() { p.armed.Store(true) }

// Fired is closed once an armed COMMIT's response has been swallowed, just
// before its connection is dropped (so a client that saw the drop can rely
// on Fired being closed).
func (p *Proxy) Fired() <-chan struct{} { return p.fired }

// Commits counts the COMMIT messages forwarded so far.
func (p *Proxy) Commits() int64 { return p.commits.Load() }

// Close stops accepting, drops every connection and waits for the relay
// goroutines.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = client.Close()
			continue
		}
		if !p.track(client) || !p.track(server) {
			_ = client.Close()
			_ = server.Close()
			return
		}
		s := &session{p: p, client: client, server: server}
		p.wg.Add(2)
		go s.clientToServer()
		go s.serverToClient()
	}
}

// session is one proxied connection.
type session struct {
	p              *Proxy
	client, server net.Conn
	// blackhole: an armed COMMIT was forwarded; whatever the server sends
	// now is its response, which must not reach the client.
	blackhole atomic.Bool
	closeOnce sync.Once
	commits   commitTracker // used by clientToServer only
}

func (s *session) close() {
	s.closeOnce.Do(func() {
		_ = s.client.Close()
		_ = s.server.Close()
		s.p.untrack(s.client)
		s.p.untrack(s.server)
	})
}

func (s *session) serverToClient() {
	defer s.p.wg.Done()
	defer s.close()
	buf := make([]byte, 32<<10)
	for {
		n, err := s.server.Read(buf)
		if n > 0 {
			if s.blackhole.Load() {
				// The server answered the COMMIT: it committed (or refused,
				// which the test then sees as "no Run"). Drop everything.
				s.p.once.Do(func() { close(s.p.fired) })
				s.close()
				return
			}
			if _, werr := s.client.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (s *session) clientToServer() {
	defer s.p.wg.Done()
	defer s.close()
	if err := s.relayStartup(); err != nil {
		return
	}
	for {
		msg, err := readTyped(s.client)
		if err != nil {
			return
		}
		if s.commits.runsCommit(msg) {
			s.p.commits.Add(1)
			if s.p.armed.CompareAndSwap(true, false) {
				s.blackhole.Store(true)
			}
		}
		if _, err := s.server.Write(msg); err != nil {
			return
		}
	}
}

// Startup-phase request codes that are answered by a single byte and
// followed by another startup packet.
const (
	sslRequestCode    = 80877103
	gssEncRequestCode = 80877104
)

// relayStartup forwards the untyped startup packet(s).
func (s *session) relayStartup() error {
	for {
		var hdr [8]byte
		if _, err := io.ReadFull(s.client, hdr[:4]); err != nil {
			return err
		}
		n := binary.BigEndian.Uint32(hdr[:4])
		if n < 8 || n > maxMessage {
			return fmt.Errorf("faultproxy: startup packet of %d bytes", n)
		}
		rest := make([]byte, n-4)
		if _, err := io.ReadFull(s.client, rest); err != nil {
			return err
		}
		if _, err := s.server.Write(append(hdr[:4], rest...)); err != nil {
			return err
		}
		code := binary.BigEndian.Uint32(rest[:4])
		if code != sslRequestCode && code != gssEncRequestCode {
			return nil
		}
	}
}

// readTyped reads one typed frontend message (type byte, int32 length that
// includes itself, body).
func readTyped(r io.Reader) ([]byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n < 4 || n > maxMessage {
		return nil, errors.New("faultproxy: bad message length")
	}
	msg := make([]byte, 5+n-4)
	copy(msg, hdr[:])
	if _, err := io.ReadFull(r, msg[5:]); err != nil {
		return nil, err
	}
	return msg, nil
}

// commitTracker remembers which prepared statements are COMMITs, so that a
// Bind of one is recognised as running COMMIT.
type commitTracker struct {
	prepared map[string]bool // statement name ("" = unnamed) → is COMMIT
}

// maxTracked bounds the statement names remembered per session.
const maxTracked = 4096

// runsCommit tells whether msg runs a COMMIT: a simple Query of one, or a
// Bind of a statement prepared from one. A Parse only prepares it.
func (t *commitTracker) runsCommit(msg []byte) bool {
	switch msg[0] {
	case 'Q':
		return isCommit(msg)
	case 'P':
		name, _, ok := cstring(msg[5:])
		if !ok {
			return false
		}
		if t.prepared == nil || len(t.prepared) >= maxTracked {
			t.prepared = map[string]bool{}
		}
		if isCommit(msg) {
			t.prepared[name] = true
		} else {
			delete(t.prepared, name)
		}
	case 'B':
		_, rest, ok := cstring(msg[5:]) // portal
		if !ok {
			return false
		}
		stmt, _, ok := cstring(rest)
		return ok && t.prepared[stmt]
	}
	return false
}

// cstring splits a NUL-terminated string off b.
func cstring(b []byte) (s string, rest []byte, ok bool) {
	i := bytes.IndexByte(b, 0)
	if i < 0 {
		return "", nil, false
	}
	return string(b[:i]), b[i+1:], true
}

// isCommit recognises "COMMIT" (any case, optional semicolon, or END /
// COMMIT TRANSACTION / COMMIT WORK) sent as a Query, or prepared by Parse.
func isCommit(msg []byte) bool {
	var sql []byte
	switch msg[0] {
	case 'Q':
		sql = msg[5:]
	case 'P':
		body := msg[5:]
		i := bytes.IndexByte(body, 0) // statement name
		if i < 0 {
			return false
		}
		sql = body[i+1:]
	default:
		return false
	}
	if i := bytes.IndexByte(sql, 0); i >= 0 {
		sql = sql[:i]
	}
	q := strings.ToLower(strings.TrimSpace(strings.TrimRight(strings.TrimSpace(string(sql)), ";")))
	switch q {
	case "commit", "commit transaction", "commit work", "end", "end transaction", "end work":
		return true
	}
	return false
}
