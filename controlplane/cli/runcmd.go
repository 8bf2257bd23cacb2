package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/ql3/ql3/controlplane/adminapi"
	"github.com/ql3/ql3/core/errs"
)

// runArgs are the flags of the run commands.
type runArgs struct {
	trigger, status, key, rerunOf, stream string
	attempt                               int
	offset                                int64
	follow                                bool
}

// lifecycleCommands are the operator's run and worker commands (issue 10):
// run list|show|now|cancel|logs, worker show|disable, task and trigger
// delete.
func lifecycleCommands() map[string]Command {
	id := func(usage string) func(*flag.FlagSet, *Args) {
		return func(fs *flag.FlagSet, a *Args) { fs.StringVar(&a.id, "id", "", usage) }
	}
	return map[string]Command{
		"run list": {Summary: "list runs, newest first (waitReason: why one has not started; run show explains it)", Flags: func(fs *flag.FlagSet, a *Args) {
			fs.StringVar(&a.project, "project", "", "only this project (id or name)")
			fs.StringVar(&a.task, "task", "", "only this task (id)")
			fs.StringVar(&a.run.trigger, "trigger", "", "only this trigger (id)")
			fs.StringVar(&a.run.status, "status", "", "only these statuses, comma-separated (e.g. queued,running)")
			fs.IntVar(&a.limit, "limit", 0, "runs per page (default 50, at most 200)")
			fs.StringVar(&a.cursor, "cursor", "", "nextCursor of the previous page")
		}, Run: get("/api/v1/runs", func(a Args) url.Values {
			v := url.Values{"project": {a.project}, "task": {a.task}, "trigger": {a.run.trigger},
				"status": {a.run.status}, "cursor": {a.cursor}}
			if a.limit > 0 {
				v.Set("limit", strconv.Itoa(a.limit))
			}
			return v
		})},
		"run show": {Summary: "show a run with its attempts and, if it has not started, why it waits",
			Flags: id("run id"), Run: getPath("/api/v1/runs/")},
		"run now": {Summary: "run a task now (idempotent per --idempotency-key)", Flags: func(fs *flag.FlagSet, a *Args) {
			fs.StringVar(&a.task, "task", "", "task id (required)")
			fs.StringVar(&a.run.key, "idempotency-key", "", "client key: a retry with the same key returns the same run (default: a new random key, printed in the run)")
			fs.StringVar(&a.run.rerunOf, "rerun-of", "", "run id this run re-runs")
		}, Run: func(c *Client, ctx context.Context) error {
			if err := required("task", c.Args.task); err != nil {
				return err
			}
			key := c.Args.run.key
			if key == "" {
				key = "cli-" + uuid.NewString()
			}
			return c.call(ctx, http.MethodPost, "/api/v1/tasks/"+url.PathEscape(c.Args.task)+"/runs",
				adminapi.RunNowRequest{IdempotencyKey: key, RerunOf: c.Args.run.rerunOf})
		}},
		"run cancel": {Summary: "cancel a run (a running one stops at its worker's next heartbeat)",
			Flags: id("run id"), Run: postPath("/api/v1/runs/", "/cancel")},
		"run logs": {Summary: "print a run's log; -f follows it until the attempt ends", Flags: func(fs *flag.FlagSet, a *Args) {
			fs.StringVar(&a.id, "id", "", "run id (required)")
			fs.IntVar(&a.run.attempt, "attempt", 0, "attempt number (default: the current one)")
			fs.StringVar(&a.run.stream, "stream", "stdout", "stdout or stderr")
			fs.Int64Var(&a.run.offset, "offset", 0, "first byte to print")
			fs.BoolVar(&a.run.follow, "f", false, "follow until the attempt's log is complete")
			fs.BoolVar(&a.run.follow, "follow", false, "same as -f")
		}, Run: (*Client).runLogs},
		"worker show": {Summary: "show a worker with its newest session (expired, capacity, leases, credential, agent)",
			Flags: id("worker id or name"), Run: getPath("/api/v1/workers/")},
		"worker disable": {Summary: "disable a worker and revoke its credentials",
			Flags: id("worker id or name"), Run: postPath("/api/v1/workers/", "/disable")},
		"task delete": {Summary: "delete a task and its triggers (its waiting runs are cancelled by the next sweep, within one coordinator round; running ones finish)",
			Flags: id("task id"), Run: func(c *Client, ctx context.Context) error {
				if err := required("id", c.Args.id); err != nil {
					return err
				}
				return c.call(ctx, http.MethodDelete, "/api/v1/tasks/"+url.PathEscape(c.Args.id), nil)
			}},
		"trigger delete": {Summary: "delete a trigger", Flags: func(fs *flag.FlagSet, a *Args) {
			fs.StringVar(&a.task, "task", "", "task id (required)")
			fs.StringVar(&a.id, "id", "", "trigger id (required)")
		}, Run: func(c *Client, ctx context.Context) error {
			if err := required("task", c.Args.task, "id", c.Args.id); err != nil {
				return err
			}
			return c.call(ctx, http.MethodDelete, "/api/v1/tasks/"+url.PathEscape(c.Args.task)+"/triggers/"+url.PathEscape(c.Args.id), nil)
		}},
	}
}

// runLogs copies the log to stdout: range reads until the stored bytes are
// read, or one follow stream until the attempt ended.
func (c *Client) runLogs(ctx context.Context) error {
	a := c.Args
	if err := required("id", a.id); err != nil {
		return err
	}
	path := "/api/v1/runs/" + url.PathEscape(a.id) + "/log"
	if a.run.attempt > 0 {
		path = "/api/v1/runs/" + url.PathEscape(a.id) + "/attempts/" + strconv.Itoa(a.run.attempt) + "/log"
	}
	offset := a.run.offset
	for {
		q := url.Values{"stream": {a.run.stream}, "offset": {strconv.FormatInt(offset, 10)}}
		if a.run.follow {
			q.Set("follow", "1")
		} else {
			q.Set("limit", strconv.Itoa(1<<20))
		}
		resp, err := c.send(ctx, http.MethodGet, path+"?"+q.Encode(), nil, !a.run.follow)
		if err != nil {
			return err
		}
		n, err := io.Copy(c.Stdout, resp.Body)
		resp.Body.Close()
		if err != nil {
			return errs.E(errs.Unavailable, "server", "reading the log: %v", err)
		}
		if a.run.follow {
			if resp.Trailer.Get("X-Log-Complete") != "true" {
				return errs.E(errs.Unavailable, "server", "the log stream ended early at offset %d; resume with --offset", offset+n)
			}
			return nil
		}
		next, err := strconv.ParseInt(resp.Header.Get("X-Log-Next-Offset"), 10, 64)
		if err != nil || next <= offset || resp.Header.Get("X-Log-Next-Offset") == resp.Header.Get("X-Log-Size") {
			return nil
		}
		offset = next
	}
}

// send is call without the JSON printing: it returns the successful
// response (the caller closes it). bounded: the client's request timeout
// applies (a follow is bounded by ctx and the server instead).
func (c *Client) send(ctx context.Context, method, path string, body any, bounded bool) (*http.Response, error) {
	var rd io.Reader
	hdr := http.Header{}
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = strings.NewReader(string(data))
		hdr.Set("Content-Type", "application/json")
	}
	return c.sendRaw(ctx, method, path, rd, hdr, bounded)
}

// sendRaw is send with a body of any type (hdr carries its Content-Type
// and any precondition): the scripts commands send raw bytes.
func (c *Client) sendRaw(ctx context.Context, method, path string, rd io.Reader, hdr http.Header, bounded bool) (*http.Response, error) {
	tok, err := c.apiToken()
	if err != nil {
		return nil, err
	}
	base, err := url.Parse(c.Server)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, errs.Invalidf("server", "must be an http(s) URL such as %s", DefaultServer)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(base.String(), "/")+path, rd)
	if err != nil {
		return nil, err
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	client, err := c.httpClient()
	if err != nil {
		return nil, err
	}
	if !bounded {
		client.Timeout = 0
	}
	if err := guardCleartext(base, c.Insecure, client.Transport.(*http.Transport)); err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if errors.Is(err, errCleartextToken) {
		return nil, errs.Invalidf("server", "%v; %s", errors.Unwrap(err), cleartextRemedy)
	}
	if err != nil {
		return nil, errs.E(errs.Unavailable, "server", "admin API unreachable: %v", err)
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		data, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
		var eb adminapi.ErrorBody
		if json.Unmarshal(data, &eb) != nil || eb.Code == "" {
			return nil, errs.E(errs.Internal, "", "admin API answered %s", resp.Status)
		}
		return nil, errs.E(eb.Code, eb.Field, "%s", eb.Message)
	}
	return resp, nil
}
