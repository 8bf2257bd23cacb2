package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/google/uuid"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/adminapi"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/scriptarchive"
	"github.com/ql3/ql3/core/scriptpath"
)

// scriptArgs are the flags of the script commands.
type scriptArgs struct {
	path, from, to, file, ifMatch, format, key string
	create, recursive, overwrite               bool
	args                                       stringList
}

type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, " ") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

// scriptCommands are a project's scripts folder (ADR 0052): script
// ls|cat|put|mv|rm|upload|run, the edge's commands under --project.
func scriptCommands() map[string]Command {
	proj := func(fs *flag.FlagSet, a *Args) {
		fs.StringVar(&a.project, "project", "", "project id or name (required)")
	}
	path := func(usage string) func(*flag.FlagSet, *Args) {
		return func(fs *flag.FlagSet, a *Args) { proj(fs, a); fs.StringVar(&a.script.path, "path", "", usage) }
	}
	return map[string]Command{
		"script ls": {Summary: "list one folder of a project's scripts (folders first)", Flags: path("folder (default: the top)"),
			Run: func(c *Client, ctx context.Context) error {
				return c.scriptCall(ctx, http.MethodGet, "", url.Values{"path": {c.Args.script.path}}, nil, nil)
			}},
		"script cat": {Summary: "print a script's bytes", Flags: path("file (required)"), Run: (*Client).scriptCat},
		"script put": {Summary: "write a script from --file (or stdin): a new one, or --if-match ETAG / --replace for an existing one",
			Flags: func(fs *flag.FlagSet, a *Args) {
				path("file (required)")(fs, a)
				fs.StringVar(&a.script.file, "file", "-", "local file to send (- for stdin)")
				fs.StringVar(&a.script.ifMatch, "if-match", "", "replace only this content (the ETag cat/ls show)")
				fs.BoolVar(&a.script.create, "replace", false, "replace whatever is there (If-Match: *)")
			}, Run: (*Client).scriptPut},
		"script mv": {Summary: "rename a script or folder", Flags: func(fs *flag.FlagSet, a *Args) {
			proj(fs, a)
			fs.StringVar(&a.script.from, "from", "", "current path (required)")
			fs.StringVar(&a.script.to, "to", "", "new path (required)")
		}, Run: func(c *Client, ctx context.Context) error {
			if err := required("from", c.Args.script.from, "to", c.Args.script.to); err != nil {
				return err
			}
			return c.scriptCall(ctx, http.MethodPost, "/move", nil, adminapi.ScriptMoveRequest{From: c.Args.script.from, To: c.Args.script.to}, nil)
		}},
		"script rm": {Summary: "delete a script, or a folder (--recursive when not empty)", Flags: func(fs *flag.FlagSet, a *Args) {
			path("file or folder (required)")(fs, a)
			fs.BoolVar(&a.script.recursive, "recursive", false, "delete a folder with its content")
		}, Run: func(c *Client, ctx context.Context) error {
			if err := required("path", c.Args.script.path); err != nil {
				return err
			}
			q := url.Values{"path": {c.Args.script.path}}
			if c.Args.script.recursive {
				q.Set("recursive", "true")
			}
			if err := c.scriptCall(ctx, http.MethodDelete, "", q, nil, nil); err != nil {
				return err
			}
			// 204 has no body: say what was deleted, as text or JSON.
			data, _ := json.Marshal(scriptDeleted{Path: c.Args.script.path, Deleted: true})
			return c.output(data)
		}},
		"script upload": {Summary: "unpack a tar, tar.gz or zip archive into a folder (checked whole first)", Flags: func(fs *flag.FlagSet, a *Args) {
			path("target folder (default: the top)")(fs, a)
			fs.StringVar(&a.script.file, "file", "", "archive (required)")
			fs.StringVar(&a.script.format, "format", "", "tar, tar.gz or zip (default: from the file name)")
			fs.BoolVar(&a.script.overwrite, "overwrite", false, "replace existing files")
		}, Run: (*Client).scriptUpload},
		"script run": {Summary: "run a script now: a normal run of the project's task \"script: PATH\"", Flags: func(fs *flag.FlagSet, a *Args) {
			path("file (required)")(fs, a)
			fs.Var(&a.script.args, "arg", "an argument for the script (repeat for more)")
			fs.StringVar(&a.script.key, "idempotency-key", "", "client key (default: a new random key)")
		}, Run: func(c *Client, ctx context.Context) error {
			if err := required("path", c.Args.script.path); err != nil {
				return err
			}
			key := c.Args.script.key
			if key == "" {
				key = "cli-" + uuid.NewString()
			}
			return c.scriptCall(ctx, http.MethodPost, "/run", nil, adminapi.ScriptRunRequest{Path: c.Args.script.path, Args: c.Args.script.args, IdempotencyKey: key}, nil)
		}},
	}
}

// scriptCall sends one request under /api/v1/projects/{project}/scripts
// and prints the JSON answer: body is JSON (any) or raw (an io.Reader in
// raw, with its headers).
func (c *Client) scriptCall(ctx context.Context, method, suffix string, q url.Values, body any, raw *rawBody) error {
	if err := required("project", c.Args.project); err != nil {
		return err
	}
	p := "/api/v1/projects/" + url.PathEscape(c.Args.project) + "/scripts" + suffix
	if len(q) > 0 {
		p += "?" + q.Encode()
	}
	var resp *http.Response
	var err error
	if raw != nil {
		resp, err = c.sendRaw(ctx, method, p, raw.r, raw.hdr, true)
	} else {
		resp, err = c.send(ctx, method, p, body, true)
	}
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return errs.E(errs.Unavailable, "server", "reading the response: %v", err)
	}
	if len(data) == 0 {
		return nil
	}
	return c.output(data)
}

type rawBody struct {
	r   io.Reader
	hdr http.Header
}

func (c *Client) scriptCat(ctx context.Context) error {
	if err := required("project", c.Args.project, "path", c.Args.script.path); err != nil {
		return err
	}
	resp, err := c.send(ctx, http.MethodGet, "/api/v1/projects/"+url.PathEscape(c.Args.project)+"/scripts/content?"+
		url.Values{"path": {c.Args.script.path}}.Encode(), nil, true)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, scriptpath.MaxFileBytes))
	if err != nil {
		return err
	}
	out, err := json.Marshal(scriptContent{Path: c.Args.script.path, ETag: strings.Trim(resp.Header.Get("ETag"), `"`), Content: string(data)})
	if err != nil {
		return err
	}
	return c.output(out)
}

// scriptContent is what script cat prints: the bytes as text, or this
// object with --json.
type scriptContent struct {
	Path    string `json:"path"`
	ETag    string `json:"etag"`
	Content string `json:"content"`
}

type scriptDeleted struct {
	Path    string `json:"path"`
	Deleted bool   `json:"deleted"`
}

// scriptPrinters are the text forms of the script commands.
func scriptPrinters() map[string]Printer {
	return map[string]Printer{
		"script ls": one(func(w io.Writer, _ Args, l adminapi.ScriptList) error {
			t := newTable(w, "NAME", "KIND", "SIZE", "MODIFIED", "SHA256")
			for _, e := range l.Entries {
				t.row(e.Name, e.Kind, fmt.Sprint(e.Size), fmtTime(e.MtimeMs), e.SHA256)
			}
			return t.end(w, "")
		}),
		"script cat": one(func(w io.Writer, _ Args, c scriptContent) error {
			_, err := io.WriteString(w, c.Content)
			return err
		}),
		"script put": one(said[adminapi.ScriptWritten](func(s adminapi.ScriptWritten) string {
			verb := "replaced"
			if s.Created {
				verb = "created"
			}
			line := fmt.Sprintf("%s %s (%d bytes, etag %s)", verb, s.Path, s.Size, s.ETag)
			if s.Repinned > 0 {
				line += fmt.Sprintf("; %d script task(s) now run the new tree", s.Repinned)
			}
			return line
		})),
		"script mv": one(said[adminapi.ScriptMoveRequest](func(m adminapi.ScriptMoveRequest) string { return "moved " + m.From + " to " + m.To })),
		"script rm": one(said[scriptDeleted](func(d scriptDeleted) string { return "deleted " + d.Path })),
		"script upload": one(said[controlplane.ScriptUploadResult](func(u controlplane.ScriptUploadResult) string {
			return fmt.Sprintf("unpacked %d file(s) and %d folder(s), %d bytes", u.Files, u.Folders, u.Bytes)
		})),
		"script run": one(said[runView](func(r runView) string { return "run " + r.ID + ": " + r.Status })),
	}
}

func (c *Client) scriptPut(ctx context.Context) error {
	a := c.Args.script
	if err := required("path", a.path); err != nil {
		return err
	}
	var src io.Reader = os.Stdin
	if a.file != "-" {
		f, err := os.Open(a.file)
		if err != nil {
			return errs.Invalidf("file", "%v", err)
		}
		defer f.Close()
		src = f
	}
	data, err := io.ReadAll(io.LimitReader(src, scriptpath.MaxFileBytes+1))
	if err != nil {
		return err
	}
	if len(data) > scriptpath.MaxFileBytes {
		return errs.TooLargef("file", "is larger than %d bytes (64 MiB), the limit per script", scriptpath.MaxFileBytes)
	}
	hdr := http.Header{"Content-Type": {"application/octet-stream"}}
	switch {
	case a.ifMatch != "" && a.create:
		return errs.Invalidf("if-match", "give --if-match or --replace, not both")
	case a.ifMatch != "":
		hdr.Set("If-Match", `"`+a.ifMatch+`"`)
	case a.create:
		hdr.Set("If-Match", "*")
	default:
		hdr.Set("If-None-Match", "*")
	}
	return c.scriptCall(ctx, http.MethodPut, "/content", url.Values{"path": {a.path}}, nil, &rawBody{r: strings.NewReader(string(data)), hdr: hdr})
}

func (c *Client) scriptUpload(ctx context.Context) error {
	a := c.Args.script
	if err := required("file", a.file); err != nil {
		return err
	}
	format := a.format
	if format == "" {
		switch {
		case strings.HasSuffix(a.file, ".tar.gz"), strings.HasSuffix(a.file, ".tgz"):
			format = scriptarchive.FormatTarGz
		case strings.HasSuffix(a.file, ".zip"):
			format = scriptarchive.FormatZip
		default:
			format = scriptarchive.FormatTar
		}
	}
	f, err := os.Open(a.file)
	if err != nil {
		return errs.Invalidf("file", "%v", err)
	}
	defer f.Close()
	q := url.Values{"path": {a.path}, "format": {format}}
	if a.overwrite {
		q.Set("overwrite", "true")
	}
	return c.scriptCall(ctx, http.MethodPost, "/upload", q, nil, &rawBody{r: f, hdr: http.Header{"Content-Type": {"application/octet-stream"}}})
}
