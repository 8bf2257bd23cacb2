package adminapi

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/httpkit"
)

// The operator's run and worker actions (issue 10, ADR 0014):
//
//	POST /api/v1/tasks/{task}/runs                 run now (Idempotency-Key header or body idempotencyKey; rerunOf)
//	POST /api/v1/runs/{run}/cancel                 202 when this request asked, 200 when already asked or finished
//	GET  /api/v1/runs/{run}/log                    ?attempt=&stream=stdout|stderr&offset=&limit=&follow=1
//	GET  /api/v1/runs/{run}/attempts/{n}/log       the same for attempt n
//	POST /api/v1/workers/{worker}/disable          disable, revoke its credentials
//	DELETE /api/v1/tasks/{task}                    delete a task and its triggers (204)
//	DELETE /api/v1/tasks/{task}/triggers/{trigger} delete a trigger (204)
//
// GET /api/v1/runs/{run} adds "waiting" (why a Run has not started) and
// GET /api/v1/workers[/{worker}] add "session" (the newest session).
// Writes to runs go through RunControl, a port on the runtime pool: the
// admin role itself only reads runs.

// RunControl is the runtime-role port (controlplane.RunOperations).
type RunControl interface {
	controlplane.RunOperations
}

// WorkerControl disables workers (on the admin pool).
type WorkerControl func(ctx context.Context, workerRef string) (changed bool, err error)

// RunView is a Run as the API shows it.
type RunView struct {
	RunRecord
	// Created is set on run-now: whether this request admitted the Run.
	Created *bool `json:"created,omitempty"`
	// Waiting explains a Run that has not started (created, queued,
	// retry_wait).
	Waiting *controlplane.WaitReason `json:"waiting,omitempty"`
}

// RunListItem is a row of GET /api/v1/runs: the Run and, for one that has
// not started (created, queued, retry_wait), the short reason it waits
// (controlplane.WaitReason.Reason; GET /api/v1/runs/{run} has the details).
type RunListItem struct {
	RunRecord
	WaitReason string `json:"waitReason,omitempty"`
}

// WorkerView is a worker with its newest session.
type WorkerView struct {
	WorkerRecord
	Session *controlplane.WorkerSession `json:"session,omitempty"`
}

// RunNowRequest is the optional body of run-now (the edge's shape).
type RunNowRequest struct {
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
	RerunOf        string `json:"rerunOf,omitempty"`
}

func (s *Server) lifecycleRoutes(mux httpkit.Mux) {
	mux.HandleFunc("POST /api/v1/tasks/{task}/runs", s.runNow)
	mux.HandleFunc("POST /api/v1/runs/{run}/cancel", s.cancelRun)
	mux.HandleFunc("GET /api/v1/runs/{run}/log", s.readLog)
	mux.HandleFunc("GET /api/v1/runs/{run}/attempts/{n}/log", s.readLog)
	mux.HandleFunc("POST /api/v1/workers/{worker}/disable", s.disableWorker)
	mux.HandleFunc("DELETE /api/v1/tasks/{task}", s.deleteTask)
	mux.HandleFunc("DELETE /api/v1/tasks/{task}/triggers/{trigger}", s.deleteTrigger)
}

// deleteTask deletes a task and its triggers (204, the edge's answer); its
// waiting Runs are cancelled by the next lifecycle sweep, running ones
// finish. ?mutationId= makes a retry answer the same.
func (s *Server) deleteTask(w http.ResponseWriter, r *http.Request) {
	if _, err := s.b.DeleteTask(r.Context(), controlplane.DeleteInput{MutationID: r.URL.Query().Get("mutationId"),
		TaskID: r.PathValue("task")}); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// deleteTrigger deletes one trigger of the task (204).
func (s *Server) deleteTrigger(w http.ResponseWriter, r *http.Request) {
	if _, err := s.b.DeleteTrigger(r.Context(), controlplane.DeleteInput{MutationID: r.URL.Query().Get("mutationId"),
		TaskID: r.PathValue("task"), TriggerID: r.PathValue("trigger")}); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) runOps() (RunControl, error) {
	if s.runs == nil {
		return nil, errs.E(errs.Unavailable, "", "run control is not configured on this server")
	}
	return s.runs, nil
}

func actorID(r *http.Request) string {
	if tok, ok := r.Context().Value(tokenKey{}).(controlplane.APIToken); ok {
		return tok.ID
	}
	return "unknown"
}

func (s *Server) runNow(w http.ResponseWriter, r *http.Request) {
	ops, err := s.runOps()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var req RunNowRequest
	if err := s.decodeOptionalBody(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	key, err := idempotencyKey(r.Header.Get("Idempotency-Key"), req.IdempotencyKey)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	task, err := s.b.GetTask(r.Context(), r.PathValue("task"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	res, err := ops.RunNow(r.Context(), controlplane.RunNowInput{TaskID: task.ID, IdempotencyKey: key,
		RerunOf: req.RerunOf, Actor: actorID(r)})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	run, err := s.b.GetRun(r.Context(), res.RunID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	v := RunView{RunRecord: RunRecord(run), Created: &res.Created}
	status := http.StatusOK
	if res.Created {
		status = http.StatusCreated
		w.Header().Set("Location", "/api/v1/runs/"+run.ID)
		s.log.InfoContext(r.Context(), "run created", "run", run.ID, "task", run.TaskID, "status", run.Status, "origin", "manual")
	}
	httpkit.WriteJSON(w, status, v)
}

// idempotencyKey is httpkit.IdempotencyKey with the key required: a cluster
// manual run always carries a client key.
func idempotencyKey(header, body string) (string, error) {
	key, err := httpkit.IdempotencyKey(header, body)
	if err == nil && key == "" {
		return "", errs.Invalidf("Idempotency-Key", "required: a client key (header or body idempotencyKey)")
	}
	return key, err
}

func (s *Server) cancelRun(w http.ResponseWriter, r *http.Request) {
	ops, err := s.runOps()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var none struct{}
	if err := s.decodeOptionalBody(w, r, &none); err != nil {
		s.fail(w, r, err)
		return
	}
	out, err := ops.CancelRun(r.Context(), r.PathValue("run"), actorID(r))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	run, err := s.b.GetRun(r.Context(), r.PathValue("run"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	status := http.StatusOK
	if out == controlplane.CancelAccepted {
		status = http.StatusAccepted
		s.log.InfoContext(r.Context(), "run cancel requested", "run", run.ID, "status", run.Status)
	}
	httpkit.WriteJSON(w, status, RunView{RunRecord: RunRecord(run)})
}

// runView adds the wait explanation to a Run that has not started.
func (s *Server) runView(ctx context.Context, run controlplane.Run) (RunView, error) {
	v := RunView{RunRecord: RunRecord(run)}
	if s.runs == nil {
		return v, nil
	}
	switch run.Status {
	case "created", "queued", "retry_wait":
		wr, ok, err := s.runs.WaitReason(ctx, run.ID)
		if err != nil {
			return v, err
		}
		if ok {
			v.Waiting = &wr
		}
	}
	return v, nil
}

func (s *Server) disableWorker(w http.ResponseWriter, r *http.Request) {
	if s.disable == nil {
		s.fail(w, r, errs.E(errs.Unavailable, "", "worker control is not configured on this server"))
		return
	}
	var none struct{}
	if err := s.decodeOptionalBody(w, r, &none); err != nil {
		s.fail(w, r, err)
		return
	}
	if _, err := s.disable(r.Context(), r.PathValue("worker")); err != nil {
		s.fail(w, r, err)
		return
	}
	v, err := s.workerView(r.Context(), r.PathValue("worker"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, v)
}

// workerView is the worker with its newest session.
func (s *Server) workerView(ctx context.Context, ref string) (WorkerView, error) {
	wk, err := s.b.GetWorker(ctx, ref)
	if err != nil {
		return WorkerView{}, err
	}
	return s.withSession(ctx, wk)
}

func (s *Server) withSession(ctx context.Context, wk controlplane.Worker) (WorkerView, error) {
	v := WorkerView{WorkerRecord: WorkerRecord(wk)}
	if s.runs == nil {
		return v, nil
	}
	sess, ok, err := s.runs.WorkerSession(ctx, wk.ID)
	if err != nil {
		return v, err
	}
	if ok {
		v.Session = &sess
	}
	return v, nil
}

// Log reads. The headers are the edge API's (edge/httpapi/logs.go):
// X-Log-Offset, X-Log-Next-Offset, X-Log-Size, X-Log-Complete,
// X-Log-Truncated; with follow=1 the body streams until the stream is
// complete (the Attempt ended or its eof was recorded) or the client goes
// away, and the final values arrive as trailers.
const (
	defaultLogLimit    = 64 << 10
	followPoll         = 250 * time.Millisecond
	followWriteTimeout = 30 * time.Second
	// maxFollow bounds one follow request; a client resumes at
	// X-Log-Next-Offset.
	maxFollow = time.Hour
)

func (s *Server) readLog(w http.ResponseWriter, r *http.Request) {
	ops, err := s.runOps()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	q := r.URL.Query()
	attempt := 0
	if n := r.PathValue("n"); n != "" {
		attempt, err = strconv.Atoi(n)
		if err != nil || attempt < 1 || attempt > 16 {
			s.fail(w, r, errs.Invalidf("attempt", "must be an attempt number 1..16, got %.16q", n))
			return
		}
	} else if v := q.Get("attempt"); v != "" {
		attempt, err = strconv.Atoi(v)
		if err != nil || attempt < 1 || attempt > 16 {
			s.fail(w, r, errs.Invalidf("attempt", "must be an attempt number 1..16, got %.16q", v))
			return
		}
	}
	stream := q.Get("stream")
	if stream == "" {
		stream = "stdout"
	}
	offset, err := httpkit.QueryInt64(r, "offset", 0)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	limit := int64(defaultLogLimit)
	if q.Get("limit") != "" {
		if limit, err = httpkit.QueryInt64(r, "limit", 1); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	follow := false
	switch q.Get("follow") {
	case "", "0", "false":
	case "1", "true":
		follow = true
	default:
		s.fail(w, r, errs.Invalidf("follow", "must be 1 or 0"))
		return
	}
	c, err := ops.ReadLog(r.Context(), r.PathValue("run"), attempt, stream, offset, limit)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Log-Offset", strconv.FormatInt(c.Offset, 10))
	h.Set("X-Log-Attempt", strconv.Itoa(c.Attempt))
	if !follow {
		setLogHeaders(h, c)
		h.Set("Content-Length", strconv.Itoa(len(c.Data)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(c.Data)
		return
	}
	s.followLog(w, r, ops, c, stream)
}

func setLogHeaders(h http.Header, c controlplane.LogRange) {
	h.Set("X-Log-Next-Offset", strconv.FormatInt(c.NextOffset, 10))
	h.Set("X-Log-Size", strconv.FormatInt(c.Stored, 10))
	h.Set("X-Log-Complete", strconv.FormatBool(c.Complete))
	h.Set("X-Log-Truncated", strconv.FormatBool(c.Truncated))
}

// followLog streams from the first range until the stream is complete. The
// poll paces reads of the database; it decides nothing.
func (s *Server) followLog(w http.ResponseWriter, r *http.Request, ops RunControl, c controlplane.LogRange, stream string) {
	ctx, cancel := context.WithTimeout(r.Context(), maxFollow)
	defer cancel()
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	h := w.Header()
	h.Set("Trailer", "X-Log-Complete, X-Log-Next-Offset, X-Log-Truncated, X-Log-Size")
	w.WriteHeader(http.StatusOK)
	for {
		if len(c.Data) > 0 {
			_ = rc.SetWriteDeadline(time.Now().Add(followWriteTimeout))
			if _, err := w.Write(c.Data); err != nil {
				return
			}
		}
		if err := rc.Flush(); err != nil {
			return
		}
		if c.Complete {
			setLogHeaders(h, c)
			return
		}
		if len(c.Data) == 0 {
			t := time.NewTimer(followPoll)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		next, err := ops.ReadLog(ctx, r.PathValue("run"), c.Attempt, stream, c.NextOffset, defaultLogLimit)
		if err != nil {
			if ctx.Err() == nil {
				s.log.WarnContext(ctx, "log follow ended early", "run", r.PathValue("run"), "err", err)
			}
			return
		}
		c = next
	}
}
