package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/adminapi"
)

// QingLong Open API apps of a project (ADR 0057) through /api/v1/apps:
//
//	app list    [--project P]
//	app create  --project P --name N --scopes envs,crons    prints the client secret once
//	app delete  --id ID

func appCommands() map[string]Command {
	return map[string]Command{
		"app list": {Summary: "list QingLong Open API apps (never their secrets)", Flags: func(fs *flag.FlagSet, a *Args) {
			fs.StringVar(&a.project, "project", "", "only this project's apps (id or name)")
		}, Run: func(c *Client, ctx context.Context) error {
			p := "/api/v1/apps"
			if c.Args.project != "" {
				p += "?project=" + url.QueryEscape(c.Args.project)
			}
			return c.call(ctx, http.MethodGet, p, nil)
		}},
		"app create": {Summary: "create an Open API app of a project; its client secret is printed once", Flags: func(fs *flag.FlagSet, a *Args) {
			fs.StringVar(&a.project, "project", "", "project id or name (required)")
			fs.StringVar(&a.name, "name", "", "app name (required)")
			fs.StringVar(&a.subject, "scopes", "", "comma-separated: envs, crons, scripts, logs, system (required)")
		}, Run: func(c *Client, ctx context.Context) error {
			if err := required("project", c.Args.project, "name", c.Args.name, "scopes", c.Args.subject); err != nil {
				return err
			}
			var scopes []string
			for _, s := range strings.Split(c.Args.subject, ",") {
				if s = strings.TrimSpace(s); s != "" {
					scopes = append(scopes, s)
				}
			}
			return c.call(ctx, http.MethodPost, "/api/v1/apps", adminapi.CreateAppRequest{Project: c.Args.project, Name: c.Args.name, Scopes: scopes})
		}},
		"app delete": {Summary: "delete an Open API app (its tokens end with it)", Flags: func(fs *flag.FlagSet, a *Args) {
			fs.StringVar(&a.id, "id", "", "app id (required)")
		}, Run: func(c *Client, ctx context.Context) error {
			if err := required("id", c.Args.id); err != nil {
				return err
			}
			return c.call(ctx, http.MethodDelete, "/api/v1/apps/"+url.PathEscape(c.Args.id), nil)
		}},
	}
}

func appPrinters() map[string]Printer {
	return map[string]Printer{
		"app list": one(func(w io.Writer, _ Args, page adminapi.List[controlplane.OpenApp]) error {
			t := newTable(w, "ID", "NAME", "PROJECT", "CLIENT ID", "SCOPES", "CREATED")
			for _, a := range page.Items {
				t.row(a.ID, a.Name, a.ProjectID, a.ClientID, strings.Join(a.Scopes, ","), fmtTime(a.CreatedAtMs))
			}
			return t.end(w, page.NextCursor)
		}),
		"app create": one(func(w io.Writer, _ Args, a adminapi.CreatedApp) error {
			_, err := fmt.Fprintf(w, "created app %s (scopes %s)\nclient_id     %s\nclient_secret %s   (shown once)\n",
				named(a.Name, a.ID), strings.Join(a.Scopes, ","), a.ClientID, a.ClientSecret)
			return err
		}),
		"app delete": func(w io.Writer, a Args, _ []byte) error {
			_, err := fmt.Fprintf(w, "deleted app %s\n", a.id)
			return err
		},
	}
}
