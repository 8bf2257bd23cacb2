package cli

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"text/tabwriter"

	"github.com/ql3/ql3/edge/httpapi"
)

const depUsage = `Usage: ql3-edge dep <list|add|install|reinstall|remove|cancel|rm|settings> ...

  list [--kind K]            dependencies and the state of their last Run
  add KIND NAME [--version V]  add a node, python or linux package and install it (a Run)
  install|reinstall|remove ID  start that action: a Run of the dependency's system task
  cancel ID                  cancel its running action
  rm ID                      forget it (remove uninstalls)
  settings KIND [--registry URL] [--proxy URL]   show or set a kind's registry mirror and proxy

node packages go into the scripts folder's node_modules, python packages into a virtual
environment that leads every process's PATH, linux packages through apk, opkg or apt-get.
`

func depCmd(ctx context.Context, e Env, args []string) error {
	return dispatch(ctx, e, "dep", depUsage, args, map[string]subcommand{
		"list": depList, "ls": depList, "add": depAdd, "rm": depRemove, "delete": depRemove,
		"install": depAction("install"), "reinstall": depAction("reinstall"), "remove": depAction("remove"),
		"cancel": depCancel, "settings": depSettings,
	})
}

func depList(ctx context.Context, e Env, args []string) error {
	fs := newFlagSet(e, "dep list", "[--kind K]", "List dependencies.")
	var cf clientFlags
	cf.register(fs)
	kind := fs.String("kind", "", "node, python or linux")
	out, done, err := fetch[httpapi.DependencyList](ctx, e, fs, &cf, args, 0, "no arguments",
		func(_ []string) request {
			q := url.Values{}
			if *kind != "" {
				q.Set("kind", *kind)
			}
			return request{method: http.MethodGet, path: "/api/v1/dependencies", query: q}
		})
	if err != nil || done {
		return err
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tKIND\tNAME\tVERSION\tSTATE\tLAST RUN")
	for _, d := range out.Dependencies {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", d.ID, d.Kind, d.Name, dash(d.Version), d.State, dash(d.LastRunID))
	}
	return tw.Flush()
}

func printAction(e Env, a httpapi.DependencyAction, what string) {
	fmt.Fprintf(e.Stdout, "%s %s %s: run %s (%s); follow it with: ql3-edge logs -f %s\n", what, a.Dependency.Kind, a.Dependency.Name,
		a.Run.ID, a.Run.Status, a.Run.ID)
}

func depAdd(ctx context.Context, e Env, args []string) error {
	fs := newFlagSet(e, "dep add", "KIND NAME [--version V]", "Add a package and install it.")
	var cf clientFlags
	cf.register(fs)
	version := fs.String("version", "", "version or range (npm: ^1.6.0; pip: 2.31.0 or >=2)")
	out, done, err := fetch[httpapi.DependencyAction](ctx, e, fs, &cf, args, 2, "KIND and NAME",
		func(pos []string) request {
			return request{method: http.MethodPost, path: "/api/v1/dependencies",
				body: httpapi.DependencyRequest{Kind: pos[0], Name: pos[1], Version: *version}}
		})
	if err != nil || done {
		return err
	}
	printAction(e, out, "install")
	return nil
}

func depAction(action string) subcommand {
	return func(ctx context.Context, e Env, args []string) error {
		fs := newFlagSet(e, "dep "+action, "ID", "Start a "+action+": a Run of the dependency's system task.")
		var cf clientFlags
		cf.register(fs)
		out, done, err := fetch[httpapi.DependencyAction](ctx, e, fs, &cf, args, 1, "a dependency id",
			func(pos []string) request {
				return request{method: http.MethodPost, path: "/api/v1/dependencies/" + url.PathEscape(pos[0]) + "/" + action}
			})
		if err != nil || done {
			return err
		}
		printAction(e, out, action)
		return nil
	}
}

func depCancel(ctx context.Context, e Env, args []string) error {
	fs := newFlagSet(e, "dep cancel", "ID", "Cancel the dependency's running action.")
	var cf clientFlags
	cf.register(fs)
	out, done, err := fetch[httpapi.Run](ctx, e, fs, &cf, args, 1, "a dependency id",
		func(pos []string) request {
			return request{method: http.MethodPost, path: "/api/v1/dependencies/" + url.PathEscape(pos[0]) + "/cancel"}
		})
	if err != nil || done {
		return err
	}
	fmt.Fprintf(e.Stdout, "run %s: %s\n", out.ID, out.Status)
	return nil
}

func depRemove(ctx context.Context, e Env, args []string) error {
	fs := newFlagSet(e, "dep rm", "ID", "Forget a dependency (it stays installed; remove uninstalls).")
	var cf clientFlags
	cf.register(fs)
	pos, c, ctx, cancel, err := cf.connect(ctx, e, fs, args, 1, "a dependency id")
	if err != nil {
		return err
	}
	defer cancel()
	if err := c.do(ctx, request{method: http.MethodDelete, path: "/api/v1/dependencies/" + url.PathEscape(pos[0])}, nil); err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "dependency %s removed\n", pos[0])
	return nil
}

func depSettings(ctx context.Context, e Env, args []string) error {
	fs := newFlagSet(e, "dep settings", "KIND [--registry URL] [--proxy URL]", "Show or set a kind's registry mirror and proxy.")
	var cf clientFlags
	cf.register(fs)
	registry := fs.String("registry", "", "npm registry or pip index URL (file:///dir: a local wheel folder)")
	proxy := fs.String("proxy", "", "proxy of the installs")
	out, done, err := fetch[httpapi.DependencySettings](ctx, e, fs, &cf, args, 1, "KIND",
		func(pos []string) request {
			set := false
			fs.Visit(func(f *flag.Flag) { set = set || f.Name == "registry" || f.Name == "proxy" })
			if !set {
				return request{method: http.MethodGet, path: "/api/v1/dependencies/settings/" + url.PathEscape(pos[0])}
			}
			return request{method: http.MethodPut, path: "/api/v1/dependencies/settings/" + url.PathEscape(pos[0]),
				body: httpapi.DependencySettings{Kind: pos[0], Registry: *registry, Proxy: *proxy}}
		})
	if err != nil || done {
		return err
	}
	fmt.Fprintf(e.Stdout, "%s: registry %s, proxy %s\n", out.Kind, dash(out.Registry), dash(out.Proxy))
	return nil
}
