package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/depapi"
	"github.com/ql3/ql3/core/errs"
)

// depArgs are the flags of the dep commands.
type depArgs struct {
	kind, version, labels, registry, proxy string
	set                                    bool
}

// depCommands are `ql3-control dep …` (ADR 0062): a project's
// dependencies, installed by one Run per matching worker.
func depCommands() map[string]Command {
	project := func(fs *flag.FlagSet, a *Args) {
		fs.StringVar(&a.project, "project", "", "project id or name (required)")
	}
	withID := func(fs *flag.FlagSet, a *Args) {
		project(fs, a)
		fs.StringVar(&a.id, "id", "", "dependency id (required)")
	}
	kind := func(fs *flag.FlagSet, a *Args) {
		project(fs, a)
		fs.StringVar(&a.dep.kind, "kind", "", "node | python | linux (required)")
	}
	action := func(a string) Command {
		return Command{Summary: a + " on every online worker the dependency's labels select: one Run each", Flags: withID,
			Run: func(c *Client, ctx context.Context) error {
				if err := required("project", c.Args.project, "id", c.Args.id); err != nil {
					return err
				}
				return c.call(ctx, http.MethodPost, depPath(c.Args.project, "/"+url.PathEscape(c.Args.id)+"/"+a), nil)
			}}
	}
	return map[string]Command{
		"dep list": {Summary: "list a project's dependencies and how many workers have each", Flags: func(fs *flag.FlagSet, a *Args) {
			project(fs, a)
			fs.StringVar(&a.dep.kind, "kind", "", "only this kind")
		}, Run: func(c *Client, ctx context.Context) error {
			if err := required("project", c.Args.project); err != nil {
				return err
			}
			return get(depPath(c.Args.project, ""), func(a Args) url.Values { return url.Values{"kind": {a.dep.kind}} })(c, ctx)
		}},
		"dep add": {Summary: "record a dependency and install it on every online worker its --labels select", Flags: func(fs *flag.FlagSet, a *Args) {
			kind(fs, a)
			fs.StringVar(&a.name, "name", "", "package name (required)")
			fs.StringVar(&a.dep.version, "version", "", "version (default: the newest)")
			fs.StringVar(&a.dep.labels, "labels", "", "placement labels selecting workers, k=v,k=v (default: every worker)")
		}, Run: func(c *Client, ctx context.Context) error {
			a := c.Args
			if err := required("project", a.project, "kind", a.dep.kind, "name", a.name); err != nil {
				return err
			}
			labels, err := parseLabelList(a.dep.labels)
			if err != nil {
				return err
			}
			return c.call(ctx, http.MethodPost, depPath(a.project, ""),
				depapi.DependencyRequest{Kind: a.dep.kind, Name: a.name, Version: a.dep.version, Labels: labels})
		}},
		"dep show": {Summary: "what each worker has of a dependency", Flags: withID, Run: func(c *Client, ctx context.Context) error {
			if err := required("project", c.Args.project, "id", c.Args.id); err != nil {
				return err
			}
			return c.call(ctx, http.MethodGet, depPath(c.Args.project, "/"+url.PathEscape(c.Args.id)), nil)
		}},
		"dep install":   action("install"),
		"dep reinstall": action("reinstall"),
		"dep remove":    action("remove"),
		"dep cancel": func() Command {
			c := action("cancel")
			c.Summary = "cancel the dependency's Runs that have not ended"
			return c
		}(),
		"dep delete": {Summary: "forget a dependency and its system tasks (nothing is uninstalled)", Flags: withID,
			Run: func(c *Client, ctx context.Context) error {
				if err := required("project", c.Args.project, "id", c.Args.id); err != nil {
					return err
				}
				return c.call(ctx, http.MethodDelete, depPath(c.Args.project, "/"+url.PathEscape(c.Args.id)), nil)
			}},
		"dep settings": {Summary: "show a kind's registry (mirror) and proxy; with --set, change them", Flags: func(fs *flag.FlagSet, a *Args) {
			kind(fs, a)
			fs.StringVar(&a.dep.registry, "registry", "", "registry mirror (npm registry, pip index, file:///dir of wheels)")
			fs.StringVar(&a.dep.proxy, "proxy", "", "proxy URL")
			fs.BoolVar(&a.dep.set, "set", false, "set --registry and --proxy (empty: the tool's default, no proxy)")
		}, Run: func(c *Client, ctx context.Context) error {
			a := c.Args
			if err := required("project", a.project, "kind", a.dep.kind); err != nil {
				return err
			}
			p := depPath(a.project, "/settings/"+url.PathEscape(a.dep.kind))
			if !a.dep.set {
				return c.call(ctx, http.MethodGet, p, nil)
			}
			return c.call(ctx, http.MethodPut, p, controlplane.DependencySettings{Kind: a.dep.kind, Registry: a.dep.registry, Proxy: a.dep.proxy})
		}},
	}
}

func depPath(project, tail string) string {
	return "/api/v1/projects/" + url.PathEscape(project) + "/dependencies" + tail
}

// parseLabelList reads k=v,k=v.
func parseLabelList(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range splitList(s) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, errs.Invalidf("labels", "%.64q is not k=v", kv)
		}
		out[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return out, nil
}

func labelText(l map[string]string) string {
	if len(l) == 0 {
		return "(every worker)"
	}
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		keys[i] = k + "=" + l[k]
	}
	return strings.Join(keys, ",")
}

func depActionLine(a depapi.DependencyAction) string {
	d := a.Dependency
	names := make([]string, len(a.Runs))
	for i, r := range a.Runs {
		names[i] = r.WorkerName + " (run " + r.RunID + ")"
	}
	if len(names) == 0 {
		return fmt.Sprintf("%s dependency %s: %s, no worker matches %s yet", d.Kind, named(d.Name, d.ID), d.Status, labelText(d.Labels))
	}
	return fmt.Sprintf("%s dependency %s: %s on %s", d.Kind, named(d.Name, d.ID), d.Status, strings.Join(names, ", "))
}

func depPrinters() map[string]Printer {
	action := one(said[depapi.DependencyAction](depActionLine))
	return map[string]Printer{
		"dep list": one(func(w io.Writer, _ Args, l depapi.DependencyList) error {
			t := newTable(w, "ID", "KIND", "NAME", "VERSION", "LABELS", "STATUS", "INSTALLED")
			for _, d := range l.Dependencies {
				n := 0
				for _, in := range d.Installs {
					if in.Status == controlplane.DepStatusInstalled {
						n++
					}
				}
				t.row(d.ID, d.Kind, d.Name, d.Version, labelText(d.Labels), d.Status, strconv.Itoa(n)+"/"+strconv.Itoa(len(d.Installs)))
			}
			return t.end(w, "")
		}),
		"dep add": action, "dep install": action, "dep reinstall": action, "dep remove": action, "dep cancel": action,
		"dep show": one(func(w io.Writer, _ Args, d depapi.Dependency) error {
			if _, err := fmt.Fprintf(w, "%s dependency %s %s: %s, workers %s\n", d.Kind, named(d.Name, d.ID), d.Version, d.Status, labelText(d.Labels)); err != nil {
				return err
			}
			t := newTable(w, "WORKER", "STATUS", "ACTION", "VERSION", "RUN")
			for _, in := range d.Installs {
				t.row(in.WorkerName, in.Status, in.Action, in.Version, in.RunID)
			}
			return t.end(w, "")
		}),
		"dep delete": func(w io.Writer, a Args, _ []byte) error {
			_, err := fmt.Fprintf(w, "forgot dependency %s\n", a.id)
			return err
		},
		"dep settings": one(said[controlplane.DependencySettings](func(s controlplane.DependencySettings) string {
			return fmt.Sprintf("%s: registry %s, proxy %s", s.Kind, orNone(s.Registry), orNone(s.Proxy))
		})),
	}
}

func orNone(s string) string {
	if s == "" {
		return "(default)"
	}
	return s
}
