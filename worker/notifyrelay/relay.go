// Package notifyrelay is a worker's loopback endpoint for scripts'
// sendNotify (ADR 0053): the shipped sendNotify.js / notify.py modules
// POST {title, content} to QL3_NOTIFY_URL with QL3_NOTIFY_TOKEN, exactly
// as on the edge; the relay finds the attempt by its token and sends the
// body, verbatim, over the worker's ingress session under the attempt's
// lease (protocol.PathNotifySend), where the control plane decodes and
// bounds it. Nothing is written to disk.
//
// Size is the constraint (the mipsle worker's limit is hard; ADR 0053
// has the figures): net/http's server costs 196,608 bytes and net's
// listener alone pushes the binary over the limit. So the listener is the
// socket system calls the worker already links, connections are served
// one at a time (each within ConnTimeout; the kernel's backlog holds the
// next), and the reader is a minimal HTTP/1.1 POST reader on bufio: one
// request per connection, a Content-Length body within
// protocol.MaxNotifyBodyBytes, Connection: close.
package notifyrelay

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/worker/client"
)

// The endpoint's path (the edge's, so the same modules work unchanged);
// the variables are QL3_NOTIFY_URL and QL3_NOTIFY_TOKEN.
const Path = "/api/v1/notify/send"

// ConnTimeout bounds one connection, the upstream call included (the
// modules give up after 15 s). A request's head is at most 64 lines of at
// most 4 KiB.
const ConnTimeout = 14 * time.Second

// Poster sends a request over the worker's ingress session.
type Poster interface {
	Post(ctx context.Context, path string, body []byte, maxResp int) (client.Response, error)
}

// entry is one registered attempt. The zero-length func array makes it
// incomparable: no generated equality function (size).
type entry struct {
	_     [0]func()
	token string
	seq   int64
	ref   *protocol.LeaseRef
}

// Relay is one worker's listener, shared by its attempts: each attempt is
// registered under a fresh random token and released when it ends.
type Relay struct {
	fd  int
	URL string // QL3_NOTIFY_URL
	c   Poster

	mu      sync.Mutex
	entries []entry // one per running attempt: a few, scanned
}

// Register makes a fresh token for the attempt ref names.
func (r *Relay) Register(ref protocol.LeaseRef) (url, token string) {
	var b [24]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail on Linux
	token = "ql3w_" + hex.EncodeToString(b[:])
	r.mu.Lock()
	r.entries = append(r.entries, entry{token: token, ref: &ref})
	r.mu.Unlock()
	return r.URL, token
}

// Release refuses token from now on.
func (r *Relay) Release(token string) {
	r.mu.Lock()
	for i := range r.entries {
		if r.entries[i].token == token {
			r.entries = append(r.entries[:i], r.entries[i+1:]...)
			break
		}
	}
	r.mu.Unlock()
}

// Refusals: the error body's code and message (JSON-safe text).
const (
	badHead   = `invalid","message":"expected a POST to ` + Path + ` with a Content-Length`
	noToken   = `unauthorized","message":"QL3_NOTIFY_TOKEN is not a running attempt's token`
	tooLarge  = `too_large","message":"limits: body 98304, title 256, content 16384 bytes`
	badBody   = `invalid","message":"expected {\"title\": string, \"content\": string}`
	limited   = `rate_limited","message":"rate limited: too many notifications from this run within a minute`
	unrelayed = `unavailable","message":"the control plane could not be reached`
)

// handle reads one request and relays it: 202 with the control plane's
// receipt ({"queued": n}), or a refusal.
func (r *Relay) handle(br *bufio.Reader) (int, string) {
	length, auth := -1, ""
	for i := 0; ; i++ {
		line, err := br.ReadSlice('\n') // ErrBufferFull past 4 KiB a line
		s := strings.TrimSpace(string(line))
		if err != nil || i > 64 || i == 0 && !strings.HasPrefix(s, "POST "+Path+" HTTP/1.") {
			return 400, badHead
		}
		if s == "" {
			break
		}
		name, value, _ := strings.Cut(s, ":")
		value = strings.TrimSpace(value)
		if strings.EqualFold(name, "Content-Length") {
			if length, err = strconv.Atoi(value); err != nil {
				return 400, badHead
			}
		} else if strings.EqualFold(name, "Authorization") {
			auth = strings.TrimPrefix(value, "Bearer ")
		}
	}
	switch {
	case length < 0:
		return 400, badHead
	case length > protocol.MaxNotifyBodyBytes:
		// Read (up to 1 MiB of) it first, so the client sees the answer
		// rather than a reset while it still writes.
		_, _ = io.CopyN(io.Discard, br, min(int64(length), 1<<20))
		return 413, tooLarge
	}
	// The body is read before the token is checked (at most 96 KiB from a
	// local process): an answer sent with unread bytes behind it would
	// reach the client as a reset.
	body := make([]byte, length)
	if _, err := io.ReadFull(br, body); err != nil {
		return 400, badHead
	}
	var ref *protocol.LeaseRef
	seq := 0
	r.mu.Lock()
	for i := range r.entries {
		if e := &r.entries[i]; auth != "" && e.token == auth {
			e.seq++
			ref, seq = e.ref, int(e.seq)
		}
	}
	r.mu.Unlock()
	if ref == nil {
		return 401, noToken
	}
	// A protocol.NotifySendRequest, written out by hand (not Encode): the
	// worker's binary has no room for the validation and type the control
	// plane checks anyway.
	lease, err := json.Marshal(ref)
	msg, err2 := json.Marshal(string(body))
	if err != nil || err2 != nil {
		return 400, badBody
	}
	req := append(append([]byte(`{"v":`+strconv.Itoa(protocol.Version)+`,"seq":`+strconv.Itoa(seq)+`,"message":`), msg...), ',')
	req = append(req, lease[1:]...)
	ctx, cancel := context.WithTimeout(context.Background(), ConnTimeout-2*time.Second)
	defer cancel()
	resp, err := r.c.Post(ctx, protocol.PathNotifySend, req, protocol.DefaultBodyBytes)
	var unknown *client.UnknownError
	switch st := client.StatusOf(err); {
	case err == nil:
		return 202, string(resp.Body)
	case st == 409: // the lease is over
		return 401, noToken
	case st == 413:
		return 413, tooLarge
	case st != 0:
		return st, badBody
	case errors.As(err, &unknown) && unknown.Status == 429:
		return 429, limited
	}
	return 503, unrelayed
}
