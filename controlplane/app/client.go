package app

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
	"time"

	"github.com/ql3/ql3/controlplane/adminapi"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/core/errs"
)

// cmdArgs holds the command-specific flags.
type cmdArgs struct {
	name, id, project, task, worker, credential string
	specFile, expression, timeZone, misfire     string
	tlsIdentity, mutationID                     string
	action, subject, cursor                     string
	limit                                       int
	graceMs                                     int64
	graceSet                                    bool
	expectedRevision                            int64
	disabled                                    bool
	ttl                                         time.Duration
	run                                         runArgs // run commands (runcmd.go)
	pki                                         pkiArgs // pki commands (pki.go)
	credentialFile                              string  // worker issue-credential/rotate-credentials
	json                                        bool    // --json: print the answer's JSON (present.go)
}

// clientTimeout bounds one admin API request.
const clientTimeout = 15 * time.Second

// maxResponseBytes bounds what a client command reads back.
const maxResponseBytes = 8 << 20

func clientCommands() map[string]command {
	idFlag := func(usage string) func(*flag.FlagSet, *cmdArgs) {
		return func(fs *flag.FlagSet, a *cmdArgs) { fs.StringVar(&a.id, "id", "", usage) }
	}
	mut := func(fs *flag.FlagSet, a *cmdArgs) {
		fs.StringVar(&a.mutationID, "mutation-id", "", "idempotency id: a retry with the same id and body returns the first result")
	}
	taskBody := func(fs *flag.FlagSet, a *cmdArgs) {
		fs.StringVar(&a.name, "name", "", "task name (required)")
		fs.StringVar(&a.specFile, "spec-file", "", "qinglong/command@v1 spec (JSON file; - for stdin)")
		mut(fs, a)
	}
	triggerBody := func(fs *flag.FlagSet, a *cmdArgs) {
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
	return map[string]command{
		"audit list": {summary: "list audit lines of admin mutations, newest first", flags: func(fs *flag.FlagSet, a *cmdArgs) {
			fs.StringVar(&a.action, "action", "", "only this action, e.g. task.update or api_token.create")
			fs.StringVar(&a.subject, "subject", "", "only lines about this id")
			fs.IntVar(&a.limit, "limit", 0, "lines per page (default 50)")
			fs.StringVar(&a.cursor, "cursor", "", "nextCursor of the previous page")
		}, run: get("/api/v1/audit", func(a cmdArgs) url.Values {
			v := url.Values{"action": {a.action}, "subject": {a.subject}, "cursor": {a.cursor}}
			if a.limit > 0 {
				v.Set("limit", strconv.Itoa(a.limit))
			}
			return v
		})},
		"project list": {summary: "list projects", run: get("/api/v1/projects", nil)},
		"project get":  {summary: "show a project", flags: idFlag("project id or name"), run: getPath("/api/v1/projects/")},
		"project create": {summary: "create a project", flags: func(fs *flag.FlagSet, a *cmdArgs) {
			fs.StringVar(&a.name, "name", "", "project name (required)")
			mut(fs, a)
		}, run: func(m *Main, ctx context.Context) error {
			return m.call(ctx, http.MethodPost, "/api/v1/projects", adminapi.CreateProjectRequest{MutationID: m.args.mutationID, Name: m.args.name})
		}},
		"project archive": {summary: "archive a project: nothing of it is scheduled any more", flags: func(fs *flag.FlagSet, a *cmdArgs) {
			fs.StringVar(&a.id, "id", "", "project id or name")
			mut(fs, a)
		}, run: func(m *Main, ctx context.Context) error {
			if err := required("id", m.args.id); err != nil {
				return err
			}
			return m.call(ctx, http.MethodPost, "/api/v1/projects/"+url.PathEscape(m.args.id)+"/archive",
				adminapi.ArchiveProjectRequest{MutationID: m.args.mutationID})
		}},

		"task list": {summary: "list tasks", flags: func(fs *flag.FlagSet, a *cmdArgs) {
			fs.StringVar(&a.project, "project", "", "only this project (id or name)")
		}, run: get("/api/v1/tasks", func(a cmdArgs) url.Values { return url.Values{"project": {a.project}} })},
		"task get": {summary: "show a task with its triggers", flags: idFlag("task id"), run: getPath("/api/v1/tasks/")},
		"task create": {summary: "create a task", flags: func(fs *flag.FlagSet, a *cmdArgs) {
			fs.StringVar(&a.project, "project", "", "project id or name (required)")
			fs.BoolVar(&a.disabled, "disabled", false, "create the task disabled")
			taskBody(fs, a)
		}, run: func(m *Main, ctx context.Context) error {
			spec, err := m.readSpec()
			if err != nil {
				return err
			}
			req := adminapi.CreateTaskRequest{MutationID: m.args.mutationID, Project: m.args.project, Name: m.args.name, Spec: spec}
			if m.args.disabled {
				req.Enabled = new(bool)
			}
			return m.call(ctx, http.MethodPost, "/api/v1/tasks", req)
		}},
		"task update": {summary: "publish a new revision of a task", flags: func(fs *flag.FlagSet, a *cmdArgs) {
			fs.StringVar(&a.id, "id", "", "task id (required)")
			fs.Int64Var(&a.expectedRevision, "expected-revision", 0, "the revision this update replaces (required)")
			taskBody(fs, a)
		}, run: func(m *Main, ctx context.Context) error {
			if err := required("id", m.args.id); err != nil {
				return err
			}
			spec, err := m.readSpec()
			if err != nil {
				return err
			}
			return m.call(ctx, http.MethodPut, "/api/v1/tasks/"+url.PathEscape(m.args.id), adminapi.UpdateTaskRequest{
				MutationID: m.args.mutationID, ExpectedRevision: m.args.expectedRevision, Name: m.args.name, Spec: spec})
		}},
		"task enable":  {summary: "enable a task", flags: idFlag("task id"), run: postPath("/api/v1/tasks/", "/enable")},
		"task disable": {summary: "disable a task", flags: idFlag("task id"), run: postPath("/api/v1/tasks/", "/disable")},

		"trigger list": {summary: "list a task's triggers", flags: func(fs *flag.FlagSet, a *cmdArgs) {
			fs.StringVar(&a.task, "task", "", "task id (required)")
		}, run: func(m *Main, ctx context.Context) error {
			if err := required("task", m.args.task); err != nil {
				return err
			}
			return m.call(ctx, http.MethodGet, "/api/v1/tasks/"+url.PathEscape(m.args.task)+"/triggers", nil)
		}},
		"trigger create": {summary: "create a cron trigger", flags: triggerBody, run: func(m *Main, ctx context.Context) error {
			if err := required("task", m.args.task); err != nil {
				return err
			}
			return m.call(ctx, http.MethodPost, "/api/v1/tasks/"+url.PathEscape(m.args.task)+"/triggers", m.triggerRequest())
		}},
		"trigger update": {summary: "publish a new revision of a trigger (resets its schedule)", flags: func(fs *flag.FlagSet, a *cmdArgs) {
			fs.StringVar(&a.id, "id", "", "trigger id (required)")
			fs.Int64Var(&a.expectedRevision, "expected-revision", 0, "the revision this update replaces (required)")
			triggerBody(fs, a)
		}, run: func(m *Main, ctx context.Context) error {
			if err := required("task", m.args.task, "id", m.args.id); err != nil {
				return err
			}
			return m.call(ctx, http.MethodPut, "/api/v1/tasks/"+url.PathEscape(m.args.task)+"/triggers/"+url.PathEscape(m.args.id),
				adminapi.UpdateTriggerRequest{ExpectedRevision: m.args.expectedRevision, TriggerRequest: m.triggerRequest()})
		}},

		"worker list": {summary: "list workers", run: get("/api/v1/workers", nil)},
		"worker get":  {summary: "show a worker", flags: idFlag("worker id or name"), run: getPath("/api/v1/workers/")},
		"worker register": {summary: "register a worker", flags: func(fs *flag.FlagSet, a *cmdArgs) {
			fs.StringVar(&a.name, "name", "", "worker name (required)")
			fs.StringVar(&a.tlsIdentity, "tls-identity", "", "client certificate identity bound to the worker")
		}, run: func(m *Main, ctx context.Context) error {
			return m.call(ctx, http.MethodPost, "/api/v1/workers", adminapi.RegisterWorkerRequest{Name: m.args.name, TLSIdentity: m.args.tlsIdentity})
		}},
		"worker credentials": {summary: "list a worker's credentials", flags: idFlag("worker id or name"),
			run: func(m *Main, ctx context.Context) error {
				if err := required("id", m.args.id); err != nil {
					return err
				}
				return m.call(ctx, http.MethodGet, "/api/v1/workers/"+url.PathEscape(m.args.id)+"/credentials", nil)
			}},
		"worker issue-credential": {summary: "issue a worker credential (printed once, or written to --credential-file)", flags: func(fs *flag.FlagSet, a *cmdArgs) {
			fs.StringVar(&a.id, "id", "", "worker id or name")
			credentialFileFlag(fs, a)
		}, run: func(m *Main, ctx context.Context) error {
			if err := required("id", m.args.id); err != nil {
				return err
			}
			return m.callCredential(ctx, "/api/v1/workers/"+url.PathEscape(m.args.id)+"/credentials", nil)
		}},
		"worker rotate-credentials": {summary: "issue a new credential and retire the others", flags: func(fs *flag.FlagSet, a *cmdArgs) {
			fs.StringVar(&a.id, "id", "", "worker id or name")
			credentialFileFlag(fs, a)
			fs.Func("grace-ms", "latest time the old credentials stay valid if the worker never presents the new one (ms; default: the server's, 24 h; 0: revoke now)", func(v string) error {
				a.graceSet = true
				_, err := fmt.Sscan(v, &a.graceMs)
				return err
			})
		}, run: func(m *Main, ctx context.Context) error {
			if err := required("id", m.args.id); err != nil {
				return err
			}
			var req adminapi.RotateCredentialsRequest
			if m.args.graceSet {
				g := m.args.graceMs
				req.GraceMs = &g
			}
			return m.callCredential(ctx, "/api/v1/workers/"+url.PathEscape(m.args.id)+"/credentials/rotate", req)
		}},
		"worker revoke-credential": {summary: "revoke one worker credential", flags: func(fs *flag.FlagSet, a *cmdArgs) {
			fs.StringVar(&a.id, "id", "", "worker id or name")
			fs.StringVar(&a.credential, "credential", "", "credential id")
		}, run: func(m *Main, ctx context.Context) error {
			if err := required("id", m.args.id, "credential", m.args.credential); err != nil {
				return err
			}
			return m.call(ctx, http.MethodPost, "/api/v1/workers/"+url.PathEscape(m.args.id)+"/credentials/"+
				url.PathEscape(m.args.credential)+"/revoke", nil)
		}},
	}
}

func get(path string, query func(cmdArgs) url.Values) func(*Main, context.Context) error {
	return func(m *Main, ctx context.Context) error {
		p := path
		if query != nil {
			q := query(m.args)
			for k, v := range q {
				if len(v) == 0 || v[0] == "" {
					q.Del(k)
				}
			}
			if len(q) > 0 {
				p += "?" + q.Encode()
			}
		}
		return m.call(ctx, http.MethodGet, p, nil)
	}
}

// getPath and postPath address /prefix/<--id>[suffix].
func getPath(prefix string) func(*Main, context.Context) error {
	return func(m *Main, ctx context.Context) error {
		if err := required("id", m.args.id); err != nil {
			return err
		}
		return m.call(ctx, http.MethodGet, prefix+url.PathEscape(m.args.id), nil)
	}
}

func postPath(prefix, suffix string) func(*Main, context.Context) error {
	return func(m *Main, ctx context.Context) error {
		if err := required("id", m.args.id); err != nil {
			return err
		}
		return m.call(ctx, http.MethodPost, prefix+url.PathEscape(m.args.id)+suffix, nil)
	}
}

func (m *Main) triggerRequest() adminapi.TriggerRequest {
	a := m.args
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
func (m *Main) readSpec() (json.RawMessage, error) {
	if m.args.specFile == "" {
		return nil, errs.Invalidf("spec-file", "required")
	}
	var r io.Reader
	if m.args.specFile == "-" {
		r = os.Stdin
	} else {
		f, err := os.Open(m.args.specFile)
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
func (m *Main) apiToken() (string, error) {
	tok := m.Getenv("QL3_TOKEN")
	if tok == "" && m.Config.TokenFile != "" {
		data, err := os.ReadFile(m.Config.TokenFile)
		if err != nil {
			return "", fmt.Errorf("read token file: %w", err)
		}
		tok = strings.TrimSpace(string(data))
	}
	if tok == "" {
		return "", errs.Invalidf("token-file", "client commands need an API token: set QL3_TOKEN or --token-file (create one with `ql3-control token create`)")
	}
	if _, _, err := postgres.ParseAPIToken(tok); err != nil {
		return "", errs.Invalidf("token-file", "the API token is malformed (want ql3c_<id>_<secret>)")
	}
	return tok, nil
}

func (m *Main) httpClient() (*http.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if m.Config.CAFile != "" {
		pem, err := os.ReadFile(m.Config.CAFile)
		if err != nil {
			return nil, fmt.Errorf("read CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, errs.Invalidf("ca-file", "no PEM certificates in %s", m.Config.CAFile)
		}
		tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}
	}
	return &http.Client{Transport: tr, Timeout: clientTimeout}, nil
}

// call sends one request to the admin API and prints the answer
// (present.go: text, or its JSON with --json). An error answer becomes a
// coded error with the server's code and field.
func (m *Main) call(ctx context.Context, method, path string, body any) error {
	data, err := m.fetch(ctx, method, path, body)
	if err != nil {
		return err
	}
	return m.output(data)
}

// fetch sends one request to the admin API and returns the successful
// answer's body (empty for 204).
func (m *Main) fetch(ctx context.Context, method, path string, body any) ([]byte, error) {
	tok, err := m.apiToken()
	if err != nil {
		return nil, err
	}
	base, err := url.Parse(m.Config.Server)
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
	client, err := m.httpClient()
	if err != nil {
		return nil, err
	}
	if err := guardCleartext(base, m.Config.Insecure, client.Transport.(*http.Transport)); err != nil {
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
