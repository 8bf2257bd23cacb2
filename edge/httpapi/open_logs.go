package httpapi

import (
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/qlopen"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/httpkit"
)

// QingLong's /open/logs (back/api/log.ts, called as its panel does in
// src/pages/log/index.tsx) over ql3's attempt logs (ADR 0057). QingLong's
// log folder holds one directory per script with one file per run; ql3's
// tree holds one directory per cron, titled with the cron's numeric id
// (the id /open/crons shows), and one file per attempt of its newest
// runs, titled "<run id>_<attempt>.log":
//
//	GET    /open/logs[?path=<cron id>]        the tree (every live cron, ≤ 1,000) or one cron's files
//	GET    /open/logs/detail?file=&path=      → data: the attempt's log (its last 256 KiB), logStatus "running" while it runs
//	GET    /open/logs/{file}?path=            → data
//	POST   /open/logs/download                {filename, path} → the log
//	DELETE /open/logs                         refused: logs go by retention (ADR 0042)

// openLogRuns is how many of a cron's newest runs its folder lists.
const openLogRuns = 20

func (s *Server) openLogRoutes(mux httpkit.Mux) {
	mux.HandleFunc("GET /open/logs", s.withLogs(s.openListLogs))
	mux.HandleFunc("GET /open/logs/detail", s.withLogs(func(w http.ResponseWriter, r *http.Request) {
		s.openReadLog(w, r, r.URL.Query().Get("path"), r.URL.Query().Get("file"), true)
	}))
	mux.HandleFunc("GET /open/logs/{file}", s.withLogs(func(w http.ResponseWriter, r *http.Request) {
		s.openReadLog(w, r, r.URL.Query().Get("path"), r.PathValue("file"), false)
	}))
	mux.HandleFunc("POST /open/logs/download", s.withLogs(s.openDownloadLog))
	mux.HandleFunc("DELETE /open/logs", s.withLogs(func(w http.ResponseWriter, r *http.Request) {
		openFail(w, http.StatusBadRequest, "ql3 keeps each attempt's log until the log retention removes it (ADR 0042); one log cannot be deleted")
	}))
}

func (s *Server) withLogs(h http.HandlerFunc) http.HandlerFunc {
	return s.withApp(func(w http.ResponseWriter, r *http.Request) {
		if s.logs == nil {
			openFail(w, http.StatusServiceUnavailable, "this server keeps no logs")
			return
		}
		h(w, r)
	})
}

// openLogFiles lists the attempts of a task's newest runs, newest first.
func (s *Server) openLogFiles(r *http.Request, t edge.Task, dir string) ([]OpenFile, error) {
	page, err := s.store.ListRuns(r.Context(), edge.RunFilter{TaskID: t.ID, Limit: openLogRuns})
	if err != nil {
		return nil, err
	}
	out := []OpenFile{}
	for _, rn := range page.Runs {
		for n := rn.AttemptCount; n >= 1; n-- {
			name := rn.ID + "_" + strconv.Itoa(n) + ".log"
			out = append(out, OpenFile{Title: name, Key: dir + "/" + name, Type: "file", Parent: dir, CreateTime: rn.CreatedAtMs})
		}
	}
	return out, nil
}

func (s *Server) openListLogs(w http.ResponseWriter, r *http.Request) {
	if p := r.URL.Query().Get("path"); p != "" {
		t, err := s.openLogTask(r, p)
		if err != nil {
			s.openErr(w, r, err)
			return
		}
		files, err := s.openLogFiles(r, t, p)
		if err != nil {
			s.openErr(w, r, err)
			return
		}
		openOK(w, files)
		return
	}
	var tasks []edge.Task
	for cursor := ""; ; {
		p, err := s.store.ListTasks(r.Context(), edge.TaskFilter{Limit: edge.MaxPageSize, Cursor: cursor})
		if err != nil {
			s.openErr(w, r, err)
			return
		}
		tasks = append(tasks, p.Tasks...)
		if len(tasks) > openMaxUnpaged {
			openFail(w, http.StatusBadRequest, "more than 1000 crons: list one cron's logs with ?path=<cron id>")
			return
		}
		if cursor = p.NextCursor; cursor == "" {
			break
		}
	}
	refs := make([]string, len(tasks))
	for i, t := range tasks {
		refs[i] = t.ID
	}
	nums, err := s.access.OpenNums(r.Context(), edge.OpenKindTask, refs)
	if err != nil {
		s.openErr(w, r, err)
		return
	}
	out := make([]OpenFile, 0, len(tasks))
	for _, t := range tasks {
		dir := strconv.FormatInt(nums[t.ID], 10)
		files, err := s.openLogFiles(r, t, dir)
		if err != nil {
			s.openErr(w, r, err)
			return
		}
		out = append(out, OpenFile{Title: dir, Key: dir, Type: "directory", CreateTime: t.CreatedAtMs, Children: files})
	}
	openOK(w, out)
}

func (s *Server) openLogTask(r *http.Request, dir string) (edge.Task, error) {
	n, err := strconv.ParseInt(dir, 10, 64)
	if err != nil || n <= 0 {
		return edge.Task{}, errs.Invalidf("path", "is a cron id (the folders of GET /open/logs)")
	}
	return s.openTask(r, n)
}

// openLogAttempt resolves (path, file) to a run of the cron and an
// attempt number.
func (s *Server) openLogAttempt(r *http.Request, dir, file string) (edge.Run, int, error) {
	t, err := s.openLogTask(r, dir)
	if err != nil {
		return edge.Run{}, 0, err
	}
	id, num, ok := strings.Cut(strings.TrimSuffix(file, ".log"), "_")
	n, nerr := strconv.Atoi(num)
	if !ok || nerr != nil || n < 1 || !strings.HasSuffix(file, ".log") {
		return edge.Run{}, 0, errs.Invalidf("file", "is <run id>_<attempt>.log (the files of GET /open/logs)")
	}
	rn, err := s.store.GetRun(r.Context(), id)
	if err == nil && (rn.TaskID != t.ID || n > rn.AttemptCount) {
		err = errs.NotFoundf("cron %s has no log %s", dir, file)
	}
	return rn, n, err
}

// openLogTail reads the last openLogTail bytes of an attempt's log ("" when
// it has none yet).
func (s *Server) openLogText(r *http.Request, rn edge.Run, n int) (string, error) {
	att, err := s.store.GetAttempt(r.Context(), edge.AttemptRef{RunID: rn.ID, Number: n})
	if err != nil {
		return "", err
	}
	c, err := s.logs.Read(rn.ID, n, max(0, att.LogSize-openLogTail), openLogTail)
	if errs.Code(err) == errs.NotFound || errs.Code(err) == errs.Invalid {
		return "", nil
	}
	return string(c.Data), err
}

func (s *Server) openReadLog(w http.ResponseWriter, r *http.Request, dir, file string, detail bool) {
	rn, n, err := s.openLogAttempt(r, dir, file)
	var text string
	if err == nil {
		text, err = s.openLogText(r, rn, n)
	}
	if err != nil {
		s.openErr(w, r, err)
		return
	}
	type logAnswer struct {
		Code      int    `json:"code"`
		Data      string `json:"data"`
		LogStatus string `json:"logStatus,omitempty"`
	}
	a := logAnswer{Code: 200, Data: text}
	if detail && !rn.Status.Terminal() && n == rn.AttemptCount {
		a.LogStatus = "running"
	}
	httpkit.WriteJSON(w, http.StatusOK, a)
}

func (s *Server) openDownloadLog(w http.ResponseWriter, r *http.Request) {
	var in qlopen.ScriptRef
	if err := decodeOpen(w, r, &in); err != nil {
		s.openErr(w, r, err)
		return
	}
	rn, n, err := s.openLogAttempt(r, in.Path, in.Filename)
	var text string
	if err == nil {
		text, err = s.openLogText(r, rn, n)
	}
	if err != nil {
		s.openErr(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": in.Filename}))
	_, _ = w.Write([]byte(text))
}
