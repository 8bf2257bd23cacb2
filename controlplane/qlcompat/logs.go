package qlcompat

import (
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/qlopen"
	"github.com/ql3/ql3/core/run"
	"github.com/ql3/ql3/httpkit"
)

// QingLong's /open/logs and /open/system on the control plane (ADR 0057),
// as the edge maps them: one directory per live cron of the project,
// titled with its number, one file "<run id>_<attempt>.log" per attempt
// of its newest runs; a file is the attempt's last 256 KiB of stdout,
// then of stderr. GET /open/system answers ql3's version; every other
// system item is refused one by one with QingLong's 404 shape.

// logRuns is how many of a cron's newest runs its folder lists.
const logRuns = 20

// File is QingLong's IFile (back/config/util.ts).
type File struct {
	Title      string `json:"title"`
	Key        string `json:"key"`
	Type       string `json:"type"`
	Parent     string `json:"parent"`
	CreateTime int64  `json:"createTime"`
	Children   []File `json:"children,omitempty"`
}

func (h *Handler) logRoutes() {
	h.mux.HandleFunc("GET /open/logs", h.withApp(h.withRuns(h.listLogs)))
	h.mux.HandleFunc("GET /open/logs/detail", h.withApp(h.withRuns(func(w http.ResponseWriter, r *http.Request) {
		h.readLog(w, r, r.URL.Query().Get("path"), r.URL.Query().Get("file"), true)
	})))
	h.mux.HandleFunc("GET /open/logs/{file}", h.withApp(h.withRuns(func(w http.ResponseWriter, r *http.Request) {
		h.readLog(w, r, r.URL.Query().Get("path"), r.PathValue("file"), false)
	})))
	h.mux.HandleFunc("POST /open/logs/download", h.withApp(h.withRuns(h.downloadLog)))
	h.mux.HandleFunc("DELETE /open/logs", h.withApp(func(w http.ResponseWriter, r *http.Request) {
		fail(w, http.StatusBadRequest, "ql3 keeps each attempt's log until the log retention removes it; one log cannot be deleted")
	}))
	h.mux.HandleFunc("GET /open/system", h.withApp(func(w http.ResponseWriter, r *http.Request) {
		ok(w, qlopen.SystemInfo(h.ver))
	}))
	h.mux.HandleFunc("/open/system/", h.withApp(func(w http.ResponseWriter, r *http.Request) {
		fail(w, http.StatusNotFound, qlopen.SystemRefusal(r.Method, r.URL.Path))
	}))
}

func (h *Handler) logFiles(r *http.Request, t controlplane.Task, dir string) ([]File, error) {
	page, err := h.b.ListRuns(r.Context(), controlplane.RunListFilter{ProjectID: t.ProjectID, TaskID: t.ID, Page: controlplane.ListRequest{Limit: logRuns}})
	if err != nil {
		return nil, err
	}
	out := []File{}
	for _, rn := range page.Items {
		for n := rn.AttemptCount; n >= 1; n-- {
			name := rn.ID + "_" + strconv.Itoa(n) + ".log"
			out = append(out, File{Title: name, Key: dir + "/" + name, Type: "file", Parent: dir, CreateTime: rn.CreatedAtMs})
		}
	}
	return out, nil
}

func (h *Handler) logTask(r *http.Request, dir string) (controlplane.Task, error) {
	n, err := strconv.ParseInt(dir, 10, 64)
	if err != nil || n <= 0 {
		return controlplane.Task{}, errs.Invalidf("path", "is a cron id (the folders of GET /open/logs)")
	}
	return h.task(r, n)
}

func (h *Handler) listLogs(w http.ResponseWriter, r *http.Request) {
	if p := r.URL.Query().Get("path"); p != "" {
		t, err := h.logTask(r, p)
		var files []File
		if err == nil {
			files, err = h.logFiles(r, t, p)
		}
		if err != nil {
			h.fault(w, r, err)
			return
		}
		ok(w, files)
		return
	}
	var tasks []controlplane.Task
	for cursor := ""; ; {
		p, err := h.b.ListTasks(r.Context(), appOf(r).ProjectID, controlplane.ListRequest{Limit: controlplane.MaxListLimit, Cursor: cursor})
		if err != nil {
			h.fault(w, r, err)
			return
		}
		if tasks = append(tasks, p.Items...); len(tasks) > maxUnpaged {
			fail(w, http.StatusBadRequest, "more than 1000 crons: list one cron's logs with ?path=<cron id>")
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
	nums, err := h.apps.OpenNums(r.Context(), appOf(r).ProjectID, controlplane.OpenKindTask, refs)
	if err != nil {
		h.fault(w, r, err)
		return
	}
	out := make([]File, 0, len(tasks))
	for _, t := range tasks {
		dir := strconv.FormatInt(nums[t.ID], 10)
		files, err := h.logFiles(r, t, dir)
		if err != nil {
			h.fault(w, r, err)
			return
		}
		out = append(out, File{Title: dir, Key: dir, Type: "directory", CreateTime: t.CreatedAtMs, Children: files})
	}
	ok(w, out)
}

// logAttempt resolves (path, file) to a run of the cron and an attempt.
func (h *Handler) logAttempt(r *http.Request, dir, file string) (controlplane.Run, int, error) {
	t, err := h.logTask(r, dir)
	if err != nil {
		return controlplane.Run{}, 0, err
	}
	id, num, found := strings.Cut(strings.TrimSuffix(file, ".log"), "_")
	n, nerr := strconv.Atoi(num)
	if !found || nerr != nil || n < 1 || !strings.HasSuffix(file, ".log") {
		return controlplane.Run{}, 0, errs.Invalidf("file", "is <run id>_<attempt>.log (the files of GET /open/logs)")
	}
	rn, err := h.b.GetRun(r.Context(), id)
	if errs.Code(err) == errs.NotFound || (err == nil && (rn.TaskID != t.ID || n > rn.AttemptCount)) {
		return controlplane.Run{}, 0, errs.NotFoundf("cron %s has no log %s", dir, file)
	}
	return rn, n, err
}

// attemptText is an attempt's last logTail bytes of stdout, then of stderr.
func (h *Handler) attemptText(r *http.Request, runID string, attempt int) (string, error) {
	var text strings.Builder
	for _, stream := range []string{"stdout", "stderr"} {
		head, err := h.runs.ReadLog(r.Context(), runID, attempt, stream, 0, 1)
		if errs.Code(err) == errs.NotFound {
			continue
		}
		if err != nil {
			return "", err
		}
		if head.Stored == 0 {
			continue
		}
		tail, err := h.runs.ReadLog(r.Context(), runID, attempt, stream, max(0, head.Size-logTail), logTail)
		if err != nil {
			return "", err
		}
		text.Write(tail.Data)
	}
	return text.String(), nil
}

func (h *Handler) readLog(w http.ResponseWriter, r *http.Request, dir, file string, detail bool) {
	rn, n, err := h.logAttempt(r, dir, file)
	var text string
	if err == nil {
		text, err = h.attemptText(r, rn.ID, n)
	}
	if err != nil {
		h.fault(w, r, err)
		return
	}
	type logAnswer struct {
		Code      int    `json:"code"`
		Data      string `json:"data"`
		LogStatus string `json:"logStatus,omitempty"`
	}
	a := logAnswer{Code: 200, Data: text}
	if detail && !run.RunStatus(rn.Status).Terminal() && n == rn.AttemptCount {
		a.LogStatus = "running"
	}
	httpkit.WriteJSON(w, http.StatusOK, a)
}

func (h *Handler) downloadLog(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Filename string `json:"filename"`
		Path     string `json:"path"`
	}
	if err := decode(w, r, &in); err != nil {
		h.fault(w, r, err)
		return
	}
	rn, n, err := h.logAttempt(r, in.Path, in.Filename)
	var text string
	if err == nil {
		text, err = h.attemptText(r, rn.ID, n)
	}
	if err != nil {
		h.fault(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": in.Filename}))
	_, _ = w.Write([]byte(text))
}
