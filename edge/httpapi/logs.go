package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/edge/logstore"
	"github.com/ql3/ql3/httpkit"
)

// Log responses are the raw bytes of the range (text/plain), described by
// headers so `curl` shows the output as is:
//
//	X-Log-Offset       where the body starts
//	X-Log-Next-Offset  where the next read starts (range reads)
//	X-Log-Size         bytes in the file when read
//	X-Log-Complete     "true" when the attempt's output can no longer grow
//	X-Log-Truncated    "true" when the size cap discarded output
//
// With ?follow=1 the body streams (chunked, flushed as bytes arrive) until
// the attempt's log is complete or the client goes away; the headers then
// describe the start only.
const (
	followChunkBytes = 64 << 10
	// followWriteTimeout bounds one write of a follow stream; the server's
	// WriteTimeout would otherwise cut long follows.
	followWriteTimeout = 30 * time.Second
	// pendingLogPoll is how often a follow re-checks an attempt whose log
	// file does not exist yet (claimed, not yet spawned).
	pendingLogPoll = 200 * time.Millisecond
)

func (s *Server) readLog(w http.ResponseWriter, r *http.Request) {
	runID := r.PathValue("run")
	n, err := strconv.Atoi(r.PathValue("n"))
	if err != nil || n < 1 || n > logstore.MaxAttempt {
		httpkit.Fail(w, r, s.log, errs.Invalidf("attempt", "must be an attempt number >= 1, got %q", r.PathValue("n")))
		return
	}
	offset, err := httpkit.QueryInt64(r, "offset", 0)
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	limit, err := httpkit.QueryInt64(r, "limit", 1)
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	if limit > logstore.MaxReadBytes {
		httpkit.Fail(w, r, s.log, errs.Invalidf("limit", "must be at most %d bytes, got %d", logstore.MaxReadBytes, limit))
		return
	}
	follow, err := queryBool(r, "follow")
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	att, err := s.store.GetAttempt(r.Context(), edge.AttemptRef{RunID: runID, Number: n})
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	if follow {
		s.followLog(w, r, att, offset)
		return
	}
	c, err := s.logs.Read(runID, n, offset, limit)
	if errs.Code(err) == errs.NotFound {
		// No file: the attempt has not started yet, or ended before it
		// produced a log (cancelled while queued, failed to start).
		c, err = logstore.Chunk{Offset: offset, NextOffset: offset, Complete: att.Status.Terminal()}, nil
		if offset > 0 && c.Complete {
			err = errs.Invalidf("offset", "%d is past the end of the log (0 bytes)", offset)
		}
	}
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Log-Offset", strconv.FormatInt(c.Offset, 10))
	h.Set("X-Log-Next-Offset", strconv.FormatInt(c.NextOffset, 10))
	h.Set("X-Log-Size", strconv.FormatInt(c.Size, 10))
	h.Set("X-Log-Complete", strconv.FormatBool(c.Complete))
	h.Set("X-Log-Truncated", strconv.FormatBool(c.Truncated))
	h.Set("Content-Length", strconv.Itoa(len(c.Data)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(c.Data)
}

// followLog streams the attempt's output from offset until its log is
// complete. The first range is read without blocking so a bad offset is
// still a JSON error; after that the header is sent at once (a client sees
// the stream open even while the attempt is silent), and errors can only end
// the stream without the completion trailer.
func (s *Server) followLog(w http.ResponseWriter, r *http.Request, att edge.Attempt, offset int64) {
	ctx := r.Context()
	first, err := s.logs.Read(att.RunID, att.Number, offset, followChunkBytes)
	if errs.Code(err) == errs.NotFound {
		first, err = logstore.Chunk{Offset: offset, NextOffset: offset}, nil
		if offset > 0 && att.Status.Terminal() {
			err = errs.Invalidf("offset", "%d is past the end of the log (0 bytes)", offset)
		}
	}
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	rc := http.NewResponseController(w)
	// A follow may outlive the server's read and write timeouts: the
	// request was read completely, so drop the read deadline, and give each
	// write its own deadline below.
	_ = rc.SetReadDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Log-Offset", strconv.FormatInt(offset, 10))
	// Trailers tell a client whether the stream ended because the log is
	// complete or because something broke (then it may resume at the
	// next offset).
	h.Set("Trailer", "X-Log-Complete, X-Log-Next-Offset, X-Log-Truncated")
	w.WriteHeader(http.StatusOK)
	truncated := first.Truncated
	finish := func() {
		h.Set("X-Log-Complete", "true")
		h.Set("X-Log-Next-Offset", strconv.FormatInt(offset, 10))
		h.Set("X-Log-Truncated", strconv.FormatBool(truncated))
	}
	write := func(data []byte) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(followWriteTimeout))
		if _, err := w.Write(data); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !write(first.Data) {
		return
	}
	offset = first.NextOffset
	if first.EOF {
		finish()
		return
	}
	for {
		c, err := s.logs.Follow(ctx, att.RunID, att.Number, offset, followChunkBytes)
		if errs.Code(err) == errs.NotFound {
			done, werr := s.waitForLog(ctx, att)
			if werr != nil {
				return
			}
			if done {
				finish()
				return
			}
			continue
		}
		if err != nil {
			if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
				s.log.WarnContext(ctx, "log follow ended early", "run", att.RunID, "attempt", att.Number, "err", err)
			}
			return
		}
		if len(c.Data) > 0 && !write(c.Data) {
			return
		}
		offset = c.NextOffset
		truncated = c.Truncated
		if c.EOF || (c.Complete && len(c.Data) == 0) {
			finish()
			return
		}
	}
}

// waitForLog waits until the attempt's log file may exist. It reports done
// when the attempt ended without one. The poll uses the wall clock: it paces
// I/O, it decides nothing.
func (s *Server) waitForLog(ctx context.Context, att edge.Attempt) (done bool, err error) {
	cur, err := s.store.GetAttempt(ctx, edge.AttemptRef{RunID: att.RunID, Number: att.Number})
	if err != nil {
		return false, err
	}
	if cur.Status.Terminal() {
		// Re-check once: the log may have been created and closed between
		// the read and this status check.
		if _, rerr := s.logs.Read(att.RunID, att.Number, 0, 1); rerr == nil {
			return false, nil
		}
		return true, nil
	}
	t := time.NewTimer(pendingLogPoll)
	defer t.Stop()
	select {
	case <-t.C:
		return false, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}
