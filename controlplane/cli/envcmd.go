package cli

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/ql3/ql3/controlplane/adminapi"
	"github.com/ql3/ql3/core/env"
	"github.com/ql3/ql3/core/errs"
)

// The env store commands (ADR 0051): a project's entries through
// /api/v1/projects/{project}/envs. Values come from --value-file or stdin,
// never from the command line (ps, shell history); a value is printed only
// by `env export --values`.
//
//	env list    --project P [--q TEXT]
//	env add     --project P --name N [--value-file F | stdin] [--remarks R] [--disabled]
//	env edit    --project P --id ID [--name N] [--value-file F] [--remarks R]
//	env rm      --project P --id ID
//	env enable | disable --project P --id ID
//	env import  --project P [--file F | stdin] [--format lines|json] [--disabled]
//	env export  --project P [--format json|lines] [--values]

type envArgs struct {
	valueFile, remarks, file, format, query string
	values                                  bool
}

// maxValueInput bounds what a value or an import is read from.
const maxValueInput = 4 << 20

func envCommands() map[string]Command {
	project := func(fs *flag.FlagSet, a *Args) {
		fs.StringVar(&a.project, "project", "", "project id or name (required)")
	}
	entry := func(fs *flag.FlagSet, a *Args) {
		project(fs, a)
		fs.StringVar(&a.id, "id", "", "env entry id (required)")
	}
	return map[string]Command{
		"env list": {Summary: "list a project's env entries (never their values)", Flags: func(fs *flag.FlagSet, a *Args) {
			project(fs, a)
			fs.StringVar(&a.env.query, "q", "", "only entries whose name or remarks contain this")
			fs.IntVar(&a.limit, "limit", 0, "entries per page (default 50, at most 200)")
			fs.StringVar(&a.cursor, "cursor", "", "nextCursor of the previous page")
		}, Run: func(c *Client, ctx context.Context) error {
			if err := required("project", c.Args.project); err != nil {
				return err
			}
			q := url.Values{}
			for k, v := range map[string]string{"q": c.Args.env.query, "cursor": c.Args.cursor} {
				if v != "" {
					q.Set(k, v)
				}
			}
			if c.Args.limit > 0 {
				q.Set("limit", strconv.Itoa(c.Args.limit))
			}
			p := envPath(c.Args.project, "")
			if len(q) > 0 {
				p += "?" + q.Encode()
			}
			return c.call(ctx, http.MethodGet, p, nil)
		}},
		"env add": {Summary: "add an env entry; the value from --value-file or stdin", Flags: func(fs *flag.FlagSet, a *Args) {
			project(fs, a)
			fs.StringVar(&a.name, "name", "", "variable name (required)")
			fs.StringVar(&a.env.valueFile, "value-file", "", "file holding the value (default: stdin; one trailing line break is dropped)")
			fs.StringVar(&a.env.remarks, "remarks", "", "remarks")
			fs.BoolVar(&a.disabled, "disabled", false, "create it disabled")
		}, Run: func(c *Client, ctx context.Context) error {
			if err := required("project", c.Args.project, "name", c.Args.name); err != nil {
				return err
			}
			v, err := c.readValue(true)
			if err != nil {
				return err
			}
			enabled := !c.Args.disabled
			return c.call(ctx, http.MethodPost, envPath(c.Args.project, ""), adminapi.CreateEnvRequest{Name: c.Args.name, Value: v,
				Remarks: c.Args.env.remarks, Enabled: &enabled})
		}},
		"env edit": {Summary: "change an env entry (a new value only from --value-file)", Flags: func(fs *flag.FlagSet, a *Args) {
			entry(fs, a)
			fs.StringVar(&a.name, "name", "", "new name")
			fs.StringVar(&a.env.valueFile, "value-file", "", "file holding the new value (- for stdin)")
			fs.StringVar(&a.env.remarks, "remarks", "", "new remarks")
		}, Run: func(c *Client, ctx context.Context) error {
			if err := required("project", c.Args.project, "id", c.Args.id); err != nil {
				return err
			}
			var p adminapi.PatchEnvRequest
			if c.Args.name != "" {
				p.Name = &c.Args.name
			}
			if c.Args.env.remarks != "" {
				p.Remarks = &c.Args.env.remarks
			}
			if c.Args.env.valueFile != "" {
				v, err := c.readValue(false)
				if err != nil {
					return err
				}
				p.Value = &v
			}
			return c.call(ctx, http.MethodPatch, envPath(c.Args.project, c.Args.id), p)
		}},
		"env rm": {Summary: "delete an env entry", Flags: entry, Run: func(c *Client, ctx context.Context) error {
			if err := required("project", c.Args.project, "id", c.Args.id); err != nil {
				return err
			}
			return c.call(ctx, http.MethodDelete, envPath(c.Args.project, c.Args.id), nil)
		}},
		"env enable":  {Summary: "enable an env entry", Flags: entry, Run: envToggle("/enable")},
		"env disable": {Summary: "disable an env entry", Flags: entry, Run: envToggle("/disable")},
		"env import": {Summary: "import NAME=value lines or a JSON export (all or nothing) from --file or stdin", Flags: func(fs *flag.FlagSet, a *Args) {
			project(fs, a)
			fs.StringVar(&a.env.file, "file", "", "file to import (default: stdin)")
			fs.StringVar(&a.env.format, "format", "lines", "lines (NAME=value) or json (an env export's entries)")
			fs.BoolVar(&a.disabled, "disabled", false, "create the lines' entries disabled")
		}, Run: (*Client).envImport},
		"env export": {Summary: "export a project's env entries; --values includes them (audited)", Flags: func(fs *flag.FlagSet, a *Args) {
			project(fs, a)
			fs.StringVar(&a.env.format, "format", "json", "json or lines (NAME=value, needs --values)")
			fs.BoolVar(&a.env.values, "values", false, "include the values (an audited read)")
		}, Run: func(c *Client, ctx context.Context) error {
			if err := required("project", c.Args.project); err != nil {
				return err
			}
			return c.call(ctx, http.MethodPost, envPath(c.Args.project, "")+"/export",
				adminapi.ExportEnvRequest{Format: c.Args.env.format, Values: c.Args.env.values})
		}},
	}
}

func envPath(project, id string) string {
	p := "/api/v1/projects/" + url.PathEscape(project) + "/envs"
	if id != "" {
		p += "/" + url.PathEscape(id)
	}
	return p
}

func envToggle(suffix string) func(*Client, context.Context) error {
	return func(c *Client, ctx context.Context) error {
		if err := required("project", c.Args.project, "id", c.Args.id); err != nil {
			return err
		}
		return c.call(ctx, http.MethodPost, envPath(c.Args.project, c.Args.id)+suffix, nil)
	}
}

// readInput reads path ("" or "-" → stdin), bounded.
func (c *Client) readInput(field, path string) ([]byte, error) {
	var r io.Reader = os.Stdin
	if path != "" && path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, errs.Invalidf(field, "%v", err)
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, maxValueInput+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxValueInput {
		return nil, errs.TooLargef(field, "larger than %d bytes", maxValueInput)
	}
	return data, nil
}

// readValue reads a value from --value-file (or stdin when none is given
// and stdinDefault); one trailing line break is dropped ("echo v |").
func (c *Client) readValue(stdinDefault bool) (string, error) {
	if c.Args.env.valueFile == "" && !stdinDefault {
		return "", errs.Invalidf("value-file", "required")
	}
	data, err := c.readInput("value-file", c.Args.env.valueFile)
	if err != nil {
		return "", err
	}
	data = bytes.TrimSuffix(bytes.TrimSuffix(data, []byte("\n")), []byte("\r"))
	if len(data) > env.MaxValueBytes {
		return "", errs.Invalidf("value", "is %d bytes, limit is %d (128 KiB)", len(data), env.MaxValueBytes)
	}
	return string(data), nil
}

func (c *Client) envImport(ctx context.Context) error {
	if err := required("project", c.Args.project); err != nil {
		return err
	}
	data, err := c.readInput("file", c.Args.env.file)
	if err != nil {
		return err
	}
	req := adminapi.ImportEnvRequest{Disabled: c.Args.disabled}
	switch c.Args.env.format {
	case "lines":
		req.Lines = string(data)
	case "json":
		var export adminapi.EnvExport
		if err := decode(data, &export); err != nil {
			return errs.Invalidf("file", "not an env export: %v", err)
		}
		for _, e := range export.Entries {
			if e.Value == nil {
				return errs.Invalidf("file", "the entry %s has no value (export with --values)", e.Name)
			}
			enabled := e.Enabled
			req.Entries = append(req.Entries, adminapi.CreateEnvRequest{Name: e.Name, Value: *e.Value, Remarks: e.Remarks,
				Enabled: &enabled, Pinned: e.Pinned, Labels: e.Labels})
		}
	default:
		return errs.Invalidf("format", "must be lines or json, got %.16q", c.Args.env.format)
	}
	return c.call(ctx, http.MethodPost, envPath(c.Args.project, "")+"/import", req)
}

// envPrinters are the env commands' text forms. An export prints its
// answer as is (JSON, or the NAME=value lines).
func envPrinters() map[string]Printer {
	entry := func(verb string) Printer {
		return one(said[adminapi.EnvEntry](func(e adminapi.EnvEntry) string { return verb + " env entry " + named(e.Name, e.ID) }))
	}
	return map[string]Printer{
		"env list": one(func(w io.Writer, _ Args, page adminapi.EnvList) error {
			t := newTable(w, "ID", "NAME", "ENABLED", "PINNED", "REMARKS", "UPDATED")
			for _, e := range page.Items {
				t.row(e.ID, e.Name, strconv.FormatBool(e.Enabled), strconv.FormatBool(e.Pinned), oneLine(e.Remarks, 40), fmtTime(e.UpdatedAtMs))
			}
			return t.end(w, page.NextCursor)
		}),
		"env add":     entry("added"),
		"env edit":    entry("changed"),
		"env enable":  entry("enabled"),
		"env disable": entry("disabled"),
		"env rm": func(w io.Writer, a Args, _ []byte) error {
			_, err := fmt.Fprintf(w, "deleted env entry %s\n", a.id)
			return err
		},
		"env import": one(func(w io.Writer, _ Args, r adminapi.ImportEnvResponse) error {
			_, err := fmt.Fprintf(w, "imported %d env entries\n", r.Created)
			return err
		}),
		"env export": one(func(w io.Writer, _ Args, x adminapi.EnvExport) error {
			if x.Format == "lines" {
				_, err := io.WriteString(w, x.Lines)
				return err
			}
			var b strings.Builder
			for _, e := range x.Entries {
				fmt.Fprintf(&b, "%s\tenabled=%t\n", e.Name, e.Enabled)
			}
			_, err := io.WriteString(w, b.String())
			return err
		}),
	}
}
