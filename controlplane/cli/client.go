package cli

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/ql3/ql3/controlplane/adminapi"
	"github.com/ql3/ql3/core/errs"
)

// Args holds the client commands' flags.
type Args struct {
	name, id, project, task, worker, credential string
	specFile, expression, timeZone, misfire     string
	tlsIdentity, mutationID                     string
	action, subject, cursor                     string
	search, label                               string // task list filters
	limit                                       int
	graceMs                                     int64
	graceSet                                    bool
	expectedRevision                            int64
	disabled                                    bool
	run                                         runArgs    // run commands (runcmd.go)
	credentialFile                              string     // worker issue-credential/rotate-credentials
	env                                         envArgs    // env commands (envcmd.go)
	script                                      scriptArgs // script commands (scriptcmd.go)
	notify                                      notifyArgs // notify commands (notify.go)
	sub                                         subArgs    // subscription commands (subcmd.go)
	dep                                         depArgs    // dep commands (depcmd.go)
	imp                                         importArgs // import commands (importcmd.go)
	// JSON is --json: print the answer's JSON instead of text (present.go).
	JSON bool
}

func clientCommands() map[string]Command {
	idFlag := func(usage string) func(*flag.FlagSet, *Args) {
		return func(fs *flag.FlagSet, a *Args) { fs.StringVar(&a.id, "id", "", usage) }
	}
	mut := func(fs *flag.FlagSet, a *Args) {
		fs.StringVar(&a.mutationID, "mutation-id", "", "idempotency id: a retry with the same id and body returns the first result")
	}
	taskBody := func(fs *flag.FlagSet, a *Args) {
		fs.StringVar(&a.name, "name", "", "task name (required)")
		fs.StringVar(&a.specFile, "spec-file", "", "qinglong/command@v1 spec (JSON file; - for stdin)")
		mut(fs, a)
	}
	triggerBody := func(fs *flag.FlagSet, a *Args) {
		fs.StringVar(&a.task, "task", "", "task id (required)")
		fs.StringVar(&a.name, "name", "", "trigger name (default: its id)")
		fs.StringVar(&a.expression, "expression", "", "cron expression, 5 or 6 fields or @daily-style (required)")
		fs.StringVar(&a.timeZone, "time-zone", "", "IANA time zone (default UTC)")
		fs.StringVar(&a.misfire, "misfire", "", "skip (default) or fire_once")
		fs.Func("grace-ms", "misfire grace in ms (default: the server's)", func(v string) error {
			a.graceSet = true
			_, err := fmt.Sscan(v, &a.graceMs)
			return err
		})
		fs.BoolVar(&a.disabled, "disabled", false, "publish the trigger disabled")
		mut(fs, a)
	}
	return map[string]Command{
		"audit list": {Summary: "list audit lines of admin mutations, newest first", Flags: func(fs *flag.FlagSet, a *Args) {
			fs.StringVar(&a.action, "action", "", "only this action, e.g. task.update or api_token.create")
			fs.StringVar(&a.subject, "subject", "", "only lines about this id")
			fs.IntVar(&a.limit, "limit", 0, "lines per page (default 50)")
			fs.StringVar(&a.cursor, "cursor", "", "nextCursor of the previous page")
		}, Run: get("/api/v1/audit", func(a Args) url.Values {
			v := url.Values{"action": {a.action}, "subject": {a.subject}, "cursor": {a.cursor}}
			if a.limit > 0 {
				v.Set("limit", strconv.Itoa(a.limit))
			}
			return v
		})},
		"project list": {Summary: "list projects", Run: get("/api/v1/projects", nil)},
		"project get":  {Summary: "show a project", Flags: idFlag("project id or name"), Run: getPath("/api/v1/projects/")},
		"project create": {Summary: "create a project", Flags: func(fs *flag.FlagSet, a *Args) {
			fs.StringVar(&a.name, "name", "", "project name (required)")
			mut(fs, a)
		}, Run: func(c *Client, ctx context.Context) error {
			return c.call(ctx, http.MethodPost, "/api/v1/projects", adminapi.CreateProjectRequest{MutationID: c.Args.mutationID, Name: c.Args.name})
		}},
		"project archive": {Summary: "archive a project: nothing of it is scheduled any more", Flags: func(fs *flag.FlagSet, a *Args) {
			fs.StringVar(&a.id, "id", "", "project id or name")
			mut(fs, a)
		}, Run: func(c *Client, ctx context.Context) error {
			if err := required("id", c.Args.id); err != nil {
				return err
			}
			return c.call(ctx, http.MethodPost, "/api/v1/projects/"+url.PathEscape(c.Args.id)+"/archive",
				adminapi.ArchiveProjectRequest{MutationID: c.Args.mutationID})
		}},

		"task list": {Summary: "list tasks", Flags: func(fs *flag.FlagSet, a *Args) {
			fs.StringVar(&a.project, "project", "", "only this project (id or name)")
			fs.StringVar(&a.search, "search", "", "a substring of the name, the command or a label")
			fs.StringVar(&a.label, "label", "", "only tasks with this label")
		}, Run: get("/api/v1/tasks", func(a Args) url.Values {
			return url.Values{"project": {a.project}, "q": {a.search}, "label": {a.label}}
		})},
		"task get": {Summary: "show a task with its triggers", Flags: idFlag("task id"), Run: getPath("/api/v1/tasks/")},
		"task create": {Summary: "create a task", Flags: func(fs *flag.FlagSet, a *Args) {
			fs.StringVar(&a.project, "project", "", "project id or name (required)")
			fs.BoolVar(&a.disabled, "disabled", false, "create the task disabled")
			taskBody(fs, a)
		}, Run: func(c *Client, ctx context.Context) error {
			spec, err := c.readSpec()
			if err != nil {
				return err
			}
			req := adminapi.CreateTaskRequest{MutationID: c.Args.mutationID, Project: c.Args.project, Name: c.Args.name, Spec: spec}
			if c.Args.disabled {
				req.Enabled = new(bool)
			}
			return c.call(ctx, http.MethodPost, "/api/v1/tasks", req)
		}},
		"task update": {Summary: "publish a new revision of a task", Flags: func(fs *flag.FlagSet, a *Args) {
			fs.StringVar(&a.id, "id", "", "task id (required)")
			fs.Int64Var(&a.expectedRevision, "expected-revision", 0, "the revision this update replaces (required)")
			taskBody(fs, a)
		}, Run: func(c *Client, ctx context.Context) error {
			if err := required("id", c.Args.id); err != nil {
				return err
			}
			spec, err := c.readSpec()
			if err != nil {
				return err
			}
			return c.call(ctx, http.MethodPut, "/api/v1/tasks/"+url.PathEscape(c.Args.id), adminapi.UpdateTaskRequest{
				MutationID: c.Args.mutationID, ExpectedRevision: c.Args.expectedRevision, Name: c.Args.name, Spec: spec})
		}},
		"task enable":  {Summary: "enable a task", Flags: idFlag("task id"), Run: postPath("/api/v1/tasks/", "/enable")},
		"task disable": {Summary: "disable a task", Flags: idFlag("task id"), Run: postPath("/api/v1/tasks/", "/disable")},

		"trigger list": {Summary: "list a task's triggers", Flags: func(fs *flag.FlagSet, a *Args) {
			fs.StringVar(&a.task, "task", "", "task id (required)")
		}, Run: func(c *Client, ctx context.Context) error {
			if err := required("task", c.Args.task); err != nil {
				return err
			}
			return c.call(ctx, http.MethodGet, "/api/v1/tasks/"+url.PathEscape(c.Args.task)+"/triggers", nil)
		}},
		"trigger create": {Summary: "create a cron trigger", Flags: triggerBody, Run: func(c *Client, ctx context.Context) error {
			if err := required("task", c.Args.task); err != nil {
				return err
			}
			return c.call(ctx, http.MethodPost, "/api/v1/tasks/"+url.PathEscape(c.Args.task)+"/triggers", c.triggerRequest())
		}},
		"trigger update": {Summary: "publish a new revision of a trigger (resets its schedule)", Flags: func(fs *flag.FlagSet, a *Args) {
			fs.StringVar(&a.id, "id", "", "trigger id (required)")
			fs.Int64Var(&a.expectedRevision, "expected-revision", 0, "the revision this update replaces (required)")
			triggerBody(fs, a)
		}, Run: func(c *Client, ctx context.Context) error {
			if err := required("task", c.Args.task, "id", c.Args.id); err != nil {
				return err
			}
			return c.call(ctx, http.MethodPut, "/api/v1/tasks/"+url.PathEscape(c.Args.task)+"/triggers/"+url.PathEscape(c.Args.id),
				adminapi.UpdateTriggerRequest{ExpectedRevision: c.Args.expectedRevision, TriggerRequest: c.triggerRequest()})
		}},

		"worker list": {Summary: "list workers", Run: get("/api/v1/workers", nil)},
		"worker get":  {Summary: "show a worker", Flags: idFlag("worker id or name"), Run: getPath("/api/v1/workers/")},
		"worker register": {Summary: "register a worker", Flags: func(fs *flag.FlagSet, a *Args) {
			fs.StringVar(&a.name, "name", "", "worker name (required)")
			fs.StringVar(&a.tlsIdentity, "tls-identity", "", "client certificate identity bound to the worker")
		}, Run: func(c *Client, ctx context.Context) error {
			return c.call(ctx, http.MethodPost, "/api/v1/workers", adminapi.RegisterWorkerRequest{Name: c.Args.name, TLSIdentity: c.Args.tlsIdentity})
		}},
		"worker credentials": {Summary: "list a worker's credentials", Flags: idFlag("worker id or name"),
			Run: func(c *Client, ctx context.Context) error {
				if err := required("id", c.Args.id); err != nil {
					return err
				}
				return c.call(ctx, http.MethodGet, "/api/v1/workers/"+url.PathEscape(c.Args.id)+"/credentials", nil)
			}},
		"worker issue-credential": {Summary: "issue a worker credential (printed once, or written to --credential-file)", Flags: func(fs *flag.FlagSet, a *Args) {
			fs.StringVar(&a.id, "id", "", "worker id or name")
			credentialFileFlag(fs, a)
		}, Run: func(c *Client, ctx context.Context) error {
			if err := required("id", c.Args.id); err != nil {
				return err
			}
			return c.callCredential(ctx, "/api/v1/workers/"+url.PathEscape(c.Args.id)+"/credentials", nil)
		}},
		"worker rotate-credentials": {Summary: "issue a new credential and retire the others", Flags: func(fs *flag.FlagSet, a *Args) {
			fs.StringVar(&a.id, "id", "", "worker id or name")
			credentialFileFlag(fs, a)
			fs.Func("grace-ms", "latest time the old credentials stay valid if the worker never presents the new one (ms; default: the server's, 24 h; 0: revoke now)", func(v string) error {
				a.graceSet = true
				_, err := fmt.Sscan(v, &a.graceMs)
				return err
			})
		}, Run: func(c *Client, ctx context.Context) error {
			if err := required("id", c.Args.id); err != nil {
				return err
			}
			var req adminapi.RotateCredentialsRequest
			if c.Args.graceSet {
				g := c.Args.graceMs
				req.GraceMs = &g
			}
			return c.callCredential(ctx, "/api/v1/workers/"+url.PathEscape(c.Args.id)+"/credentials/rotate", req)
		}},
		"worker revoke-credential": {Summary: "revoke one worker credential", Flags: func(fs *flag.FlagSet, a *Args) {
			fs.StringVar(&a.id, "id", "", "worker id or name")
			fs.StringVar(&a.credential, "credential", "", "credential id")
		}, Run: func(c *Client, ctx context.Context) error {
			if err := required("id", c.Args.id, "credential", c.Args.credential); err != nil {
				return err
			}
			return c.call(ctx, http.MethodPost, "/api/v1/workers/"+url.PathEscape(c.Args.id)+"/credentials/"+
				url.PathEscape(c.Args.credential)+"/revoke", nil)
		}},
	}
}

func get(path string, query func(Args) url.Values) func(*Client, context.Context) error {
	return func(c *Client, ctx context.Context) error {
		p := path
		if query != nil {
			q := query(c.Args)
			for k, v := range q {
				if len(v) == 0 || v[0] == "" {
					q.Del(k)
				}
			}
			if len(q) > 0 {
				p += "?" + q.Encode()
			}
		}
		return c.call(ctx, http.MethodGet, p, nil)
	}
}

// getPath and postPath address /prefix/<--id>[suffix].
func getPath(prefix string) func(*Client, context.Context) error {
	return func(c *Client, ctx context.Context) error {
		if err := required("id", c.Args.id); err != nil {
			return err
		}
		return c.call(ctx, http.MethodGet, prefix+url.PathEscape(c.Args.id), nil)
	}
}

func postPath(prefix, suffix string) func(*Client, context.Context) error {
	return func(c *Client, ctx context.Context) error {
		if err := required("id", c.Args.id); err != nil {
			return err
		}
		return c.call(ctx, http.MethodPost, prefix+url.PathEscape(c.Args.id)+suffix, nil)
	}
}

func (c *Client) triggerRequest() adminapi.TriggerRequest {
	a := c.Args
	req := adminapi.TriggerRequest{MutationID: a.mutationID, Name: a.name, Expression: a.expression, TimeZone: a.timeZone, Misfire: a.misfire}
	if a.graceSet {
		g := a.graceMs
		req.GraceMs = &g
	}
	if a.disabled {
		req.Enabled = new(bool)
	}
	return req
}

// readSpec reads --spec-file (or stdin for "-"), bounded.
func (c *Client) readSpec() (json.RawMessage, error) {
	if c.Args.specFile == "" {
		return nil, errs.Invalidf("spec-file", "required")
	}
	var r io.Reader
	if c.Args.specFile == "-" {
		r = os.Stdin
	} else {
		f, err := os.Open(c.Args.specFile)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, adminapi.DefaultMaxBodyBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > adminapi.DefaultMaxBodyBytes {
		return nil, errs.TooLargef("spec-file", "larger than %d bytes", adminapi.DefaultMaxBodyBytes)
	}
	return json.RawMessage(bytes.TrimSpace(data)), nil
}

// apiToken returns QL3_TOKEN, else the token file's content.
func (c *Client) apiToken() (string, error) {
	tok := c.Getenv("QL3_TOKEN")
	if tok == "" && c.TokenFile != "" {
		data, err := os.ReadFile(c.TokenFile)
		if err != nil {
			return "", fmt.Errorf("read token file: %w", err)
		}
		tok = strings.TrimSpace(string(data))
	}
	if tok == "" {
		return "", errs.Invalidf("token-file", "client commands need an API token: set QL3_TOKEN or --token-file (create one with `ql3-control token create`)")
	}
	if err := c.CheckToken(tok); err != nil {
		return "", errs.Invalidf("token-file", "the API token is malformed (want ql3c_<id>_<secret>)")
	}
	return tok, nil
}

func (c *Client) httpClient() (*http.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("read CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, errs.Invalidf("ca-file", "no PEM certificates in %s", c.CAFile)
		}
		tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}
	}
	return &http.Client{Transport: tr, Timeout: clientTimeout}, nil
}

// call sends one request to the admin API and prints the answer
// (present.go: text, or its JSON with --json). An error answer becomes a
// coded error with the server's code and field.
func (c *Client) call(ctx context.Context, method, path string, body any) error {
	data, err := c.fetch(ctx, method, path, body)
	if err != nil {
		return err
	}
	return c.output(data)
}

// fetch sends one request to the admin API and returns the successful
// answer's body (empty for 204).
func (c *Client) fetch(ctx context.Context, method, path string, body any) ([]byte, error) {
	tok, err := c.apiToken()
	if err != nil {
		return nil, err
	}
	base, err := url.Parse(c.Server)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, errs.Invalidf("server", "must be an http(s) URL such as %s", DefaultServer)
	}
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(base.String(), "/")+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	client, err := c.httpClient()
	if err != nil {
		return nil, err
	}
	if err := guardCleartext(base, c.Insecure, client.Transport.(*http.Transport)); err != nil {
		return nil, err
	}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if errors.Is(err, errCleartextToken) {
		return nil, errs.Invalidf("server", "%v; %s", errors.Unwrap(err), cleartextRemedy)
	}
	if err != nil {
		return nil, errs.E(errs.Unavailable, "server", "admin API unreachable: %v", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return nil, errs.E(errs.Unavailable, "server", "reading the response: %v", err)
	}
	if resp.StatusCode >= 300 {
		var eb adminapi.ErrorBody
		if json.Unmarshal(data, &eb) != nil || eb.Code == "" {
			return nil, errs.E(errs.Internal, "", "admin API answered %s", resp.Status)
		}
		return nil, errs.E(eb.Code, eb.Field, "%s", eb.Message)
	}
	return data, nil
}

// required checks flag/value pairs: a path segment must never be empty.
func required(pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] == "" {
			return errs.Invalidf(pairs[i], "--%s is required", pairs[i])
		}
	}
	return nil
}
