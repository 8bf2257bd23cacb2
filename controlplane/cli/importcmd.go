package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/importapi"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/qlimport"
)

// importArgs are the flags of the import commands.
type importArgs struct {
	from, archive, zone, plan string
	all                       bool
}

// uploadPrefix marks a source the server unpacked from an upload.
const uploadPrefix = "upload:"

// importCommands move a QingLong 2 installation into a project (ADR
// 0056, ADR 0063): import inspect|apply, the edge's commands under
// --project. The server reads the path, on its own machine.
func importCommands() map[string]Command {
	proj := func(fs *flag.FlagSet, a *Args) {
		fs.StringVar(&a.project, "project", "", "project id or name (required)")
	}
	return map[string]Command{
		"import inspect": {Summary: "print the plan of a QingLong data directory (read-only): every row classified, the plan digest",
			Flags: func(fs *flag.FlagSet, a *Args) {
				proj(fs, a)
				fs.StringVar(&a.imp.from, "from", "", "the QingLong data directory, on the server's machine")
				fs.StringVar(&a.imp.archive, "archive", "", "a tar or tar.gz of the data directory, uploaded to the server")
				fs.StringVar(&a.imp.zone, "zone", "", "the IANA time zone QingLong ran in (required), e.g. Asia/Shanghai")
				fs.BoolVar(&a.imp.all, "all", false, "list every row, lossless ones too (default: only rows that need attention, and counts)")
			}, Run: (*Client).importInspect},
		"import apply": {Summary: "apply the plan with that digest in one transaction; refused if the source changed; a replay answers existing",
			Flags: func(fs *flag.FlagSet, a *Args) {
				proj(fs, a)
				fs.StringVar(&a.imp.from, "from", "", "the data directory inspected (or upload:ID)")
				fs.StringVar(&a.imp.plan, "plan", "", "the plan digest inspect printed (required)")
				fs.StringVar(&a.imp.zone, "zone", "", "the zone inspected (default: the one the server remembers for this plan)")
			}, Run: (*Client).importApply},
	}
}

// serverPath makes a local path absolute: the server reads it, on this
// machine.
func serverPath(p string) (string, error) {
	if p == "" || strings.HasPrefix(p, uploadPrefix) {
		return p, nil
	}
	return filepath.Abs(p)
}

func (c *Client) importInspect(ctx context.Context) error {
	a := c.Args.imp
	if err := required("project", c.Args.project, "zone", a.zone); err != nil {
		return err
	}
	if (a.from == "") == (a.archive == "") {
		return errs.Invalidf("from", "give exactly one of --from and --archive")
	}
	if a.archive != "" {
		format := qlimport.FormatTar
		if strings.HasSuffix(a.archive, ".tar.gz") || strings.HasSuffix(a.archive, ".tgz") {
			format = qlimport.FormatTarGz
		}
		f, err := os.Open(a.archive)
		if err != nil {
			return errs.Invalidf("archive", "%v", err)
		}
		defer f.Close()
		return c.importCall(ctx, "upload", url.Values{"zone": {a.zone}, "format": {format}}, nil,
			&rawBody{r: f, hdr: http.Header{"Content-Type": {"application/octet-stream"}}})
	}
	dir, err := serverPath(a.from)
	if err != nil {
		return err
	}
	return c.importCall(ctx, "inspect", nil, importapi.ImportInspectRequest{From: dir, Zone: a.zone}, nil)
}

func (c *Client) importApply(ctx context.Context) error {
	a := c.Args.imp
	if err := required("project", c.Args.project, "plan", a.plan); err != nil {
		return err
	}
	dir, err := serverPath(a.from)
	if err != nil {
		return err
	}
	return c.importCall(ctx, "apply", nil, importapi.ImportApplyRequest{Plan: a.plan, From: dir, Zone: a.zone}, nil)
}

// importCall sends one request under /api/v1/projects/{project}/import
// and prints the answer. An upload and an apply take as long as the
// archive and the plan need: the client's request timeout does not apply
// to them (the server's write timeout and ctx do); an inspect of a path
// keeps it.
func (c *Client) importCall(ctx context.Context, suffix string, q url.Values, body any, raw *rawBody) error {
	p := "/api/v1/projects/" + url.PathEscape(c.Args.project) + "/import/" + suffix
	if len(q) > 0 {
		p += "?" + q.Encode()
	}
	var resp *http.Response
	var err error
	if raw != nil {
		resp, err = c.sendRaw(ctx, http.MethodPost, p, raw.r, raw.hdr, false)
	} else {
		resp, err = c.send(ctx, http.MethodPost, p, body, suffix == "inspect")
	}
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return errs.E(errs.Unavailable, "server", "reading the response: %v", err)
	}
	return c.output(data)
}

// importPrinters are the text forms of the import commands.
func importPrinters() map[string]Printer {
	plan := one(func(w io.Writer, a Args, in controlplane.ImportInspection) error {
		qlimport.WritePlan(w, in.Plan, a.imp.all)
		for _, s := range in.Skipped {
			fmt.Fprintf(w, "not unpacked (a link or special file): %s\n", s)
		}
		_, err := fmt.Fprintf(w, "zone: %s\nplan: %s\napply: ql3-control import apply --project %s --from %s --plan %s\n",
			in.Plan.Zone, in.Digest, a.project, in.From, in.Digest)
		return err
	})
	return map[string]Printer{
		"import inspect": plan,
		"import apply": one(func(w io.Writer, _ Args, r controlplane.ImportResult) error {
			fmt.Fprintf(w, "%s: %d tasks, %d env entries, %d dependency records, %d script files into project %s (zone %s)\n",
				r.Status, r.Tasks, r.Envs, r.Deps, r.Files, r.ProjectID, r.Zone)
			for _, f := range r.Refused {
				fmt.Fprintf(w, "not copied: scripts/%s: %s\n", f.Path, strings.Join(f.Reasons, "; "))
			}
			for _, x := range r.Warnings {
				fmt.Fprintf(w, "warning: %s\n", x)
			}
			return nil
		}),
	}
}
