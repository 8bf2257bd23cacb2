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
	"text/tabwriter"

	"github.com/ql3/ql3/core/env"
	"github.com/ql3/ql3/edge/httpapi"
)

const envUsage = `Usage: ql3-edge env <list|add|edit|rm|enable|disable|move|import|export|reveal|rotate-key> [flags] [arguments]

  list        list entries, never their values:  env list --search jd
  add         add an entry; the value comes from stdin or --value-file, never from argv:
                 env add --name JD_COOKIE --remarks account1 < cookie.txt
  edit        change an entry:  env edit ID --remarks new  |  env edit ID --value-file new.txt
  rm          delete entries:  env rm ID [ID...]
  enable      export the entry to tasks again
  disable     keep the entry but export it no more
  move        reorder:  env move ID --before OTHER_ID  (no --before: last)
  import      create entries from NAME=value lines (# comments, export, quotes) or --format json:
                 env import --file envs.txt
  export      print every entry: JSON without values, or --values (audited) as JSON or --format lines
  reveal      print one value (audited):  env reveal ID
  rotate-key  replace the env key file without downtime (the data key is re-wrapped)

Enabled entries reach every task (several with one name joined with &, pinned first, then
higher position, then older), unless a task's spec narrows them with "env": {"use": [...]}.
A value read from a file or stdin loses one trailing newline.
`

func envCmd(ctx context.Context, envr Env, args []string) error {
	enabled := func(on bool) subcommand {
		return func(ctx context.Context, e Env, args []string) error { return envSetEnabled(ctx, e, args, on) }
	}
	return dispatch(ctx, envr, "env", envUsage, args, map[string]subcommand{
		"list": envList, "ls": envList, "add": envAdd, "edit": envEdit, "rm": envRemove, "delete": envRemove,
		"enable": enabled(true), "disable": enabled(false), "move": envMove, "import": envImport,
		"export": envExport, "reveal": envReveal, "rotate-key": envRotateKey,
	})
}

func envPath(id string) string { return "/api/v1/envs/" + url.PathEscape(id) }

// readValue reads a value from path ("-" or "" → stdin), drops one
// trailing newline and bounds it.
func readValue(e Env, path string) (string, error) {
	var r io.Reader = e.Stdin
	if path != "" && path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return "", err
		}
		defer f.Close()
		r = f
	}
	data, err := readAllLimited(r, env.MaxValueBytes+2)
	if err != nil {
		return "", fmt.Errorf("reading the value: %w (a value is at most %d bytes)", err, env.MaxValueBytes)
	}
	v := strings.TrimSuffix(string(data), "\n")
	return strings.TrimSuffix(v, "\r"), nil
}

func printEnvEntry(e Env, cf clientFlags, v httpapi.EnvEntry, verb string) error {
	if cf.json {
		return printJSON(e.Stdout, v)
	}
	fmt.Fprintf(e.Stdout, "%s %s (%s), enabled %v\n", verb, v.Name, v.ID, v.Enabled)
	return nil
}

func envList(ctx context.Context, e Env, args []string) error {
	fs := newFlagSet(e, "env list", "[flags]", "List env entries in the order tasks see them (pinned first); values are never shown.")
	var cf clientFlags
	cf.register(fs)
	search := fs.String("search", "", "only entries whose name or remarks contain this (case-insensitive)")
	limit := fs.Int("limit", 0, "page size (default 50, max 200)")
	cursor := fs.String("cursor", "", "continue after this cursor (printed at the end of a full page)")
	_, c, ctx, cancel, err := cf.connect(ctx, e, fs, args, 0, "no arguments")
	if err != nil {
		return err
	}
	defer cancel()
	q := url.Values{}
	if *search != "" {
		q.Set("q", *search)
	}
	if *limit != 0 {
		q.Set("limit", fmt.Sprint(*limit))
	}
	if *cursor != "" {
		q.Set("cursor", *cursor)
	}
	var page httpapi.EnvList
	if err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/envs", query: q}, &page); err != nil {
		return err
	}
	if cf.json {
		return printJSON(e.Stdout, page)
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tENABLED\tPINNED\tREMARKS")
	for _, v := range page.Items {
		fmt.Fprintf(tw, "%s\t%s\t%v\t%v\t%s\n", v.ID, v.Name, v.Enabled, v.Pinned, oneLine(v.Remarks, 60))
	}
	return endPage(e, tw, page.NextCursor)
}

func envAdd(ctx context.Context, e Env, args []string) error {
	fs := newFlagSet(e, "env add", "--name NAME [--value-file FILE] [flags]",
		"Add an env entry. The value is read from --value-file, or from stdin: never from the command line.")
	var cf clientFlags
	cf.register(fs)
	name := fs.String("name", "", "variable name (POSIX; the QL3_ prefix is reserved)")
	valueFile := fs.String("value-file", "", "file holding the value (- or omitted: stdin)")
	remarks := fs.String("remarks", "", "a note shown next to the entry")
	disabled := fs.Bool("disabled", false, "add it disabled")
	pinned := fs.Bool("pinned", false, "pin it (pinned entries come first)")
	var labels stringList
	fs.Var(&labels, "label", "a label (repeatable)")
	_, c, ctx, cancel, err := cf.connect(ctx, e, fs, args, 0, "no arguments (the value comes from stdin or --value-file)")
	if err != nil {
		return err
	}
	defer cancel()
	if *name == "" {
		return usagef("--name is required")
	}
	v, err := readValue(e, *valueFile)
	if err != nil {
		return err
	}
	on := !*disabled
	req := httpapi.CreateEnvRequest{Name: *name, Value: v, Remarks: *remarks, Enabled: &on, Pinned: *pinned, Labels: labels}
	var out httpapi.EnvEntry
	if err := c.do(ctx, request{method: http.MethodPost, path: "/api/v1/envs", body: req}, &out); err != nil {
		return err
	}
	return printEnvEntry(e, cf, out, "added")
}

func envEdit(ctx context.Context, e Env, args []string) error {
	fs := newFlagSet(e, "env edit", "ID [flags]", "Change an env entry; only the flags given change.")
	var cf clientFlags
	cf.register(fs)
	var req httpapi.PatchEnvRequest
	name := fs.String("name", "", "new name")
	valueFile := fs.String("value-file", "", "file holding the new value (- : stdin)")
	remarks := fs.String("remarks", "", "new remarks")
	pinned := fs.Bool("pinned", false, "pin (--pinned=false unpins)")
	var labels stringList
	fs.Var(&labels, "label", "replace the labels (repeatable)")
	pos, c, ctx, cancel, err := cf.connect(ctx, e, fs, args, 1, "ID")
	if err != nil {
		return err
	}
	defer cancel()
	var set []string
	fs.Visit(func(f *flag.Flag) { set = append(set, f.Name) })
	for _, f := range set {
		switch f {
		case "name":
			req.Name = name
		case "value-file":
			v, err := readValue(e, *valueFile)
			if err != nil {
				return err
			}
			req.Value = &v
		case "remarks":
			req.Remarks = remarks
		case "pinned":
			req.Pinned = pinned
		case "label":
			l := []string(labels)
			req.Labels = &l
		}
	}
	var out httpapi.EnvEntry
	if err := c.do(ctx, request{method: http.MethodPatch, path: envPath(pos[0]), body: req}, &out); err != nil {
		return err
	}
	return printEnvEntry(e, cf, out, "changed")
}

func envSetEnabled(ctx context.Context, e Env, args []string, on bool) error {
	verb := map[bool]string{true: "enable", false: "disable"}[on]
	fs := newFlagSet(e, "env "+verb, "ID", "Export the entry to tasks ("+verb+").")
	var cf clientFlags
	cf.register(fs)
	pos, c, ctx, cancel, err := cf.connect(ctx, e, fs, args, 1, "ID")
	if err != nil {
		return err
	}
	defer cancel()
	var out httpapi.EnvEntry
	if err := c.do(ctx, request{method: http.MethodPost, path: envPath(pos[0]) + "/" + verb}, &out); err != nil {
		return err
	}
	return printEnvEntry(e, cf, out, verb+"d")
}

func envRemove(ctx context.Context, e Env, args []string) error {
	fs := newFlagSet(e, "env rm", "ID [ID...]", "Delete env entries.")
	var cf clientFlags
	cf.register(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("expected at least one ID")
	}
	c, err := cf.client(e)
	if err != nil {
		return err
	}
	ctx, cancel := withTimeout(ctx, cf.timeout)
	defer cancel()
	for _, id := range pos {
		if err := c.do(ctx, request{method: http.MethodDelete, path: envPath(id)}, nil); err != nil {
			return err
		}
		fmt.Fprintf(e.Stdout, "deleted %s\n", id)
	}
	return nil
}

func envMove(ctx context.Context, e Env, args []string) error {
	fs := newFlagSet(e, "env move", "ID [--before OTHER_ID]", "Place an entry directly before another one (without --before: last).")
	var cf clientFlags
	cf.register(fs)
	before := fs.String("before", "", "the entry to move in front of")
	pos, c, ctx, cancel, err := cf.connect(ctx, e, fs, args, 1, "ID")
	if err != nil {
		return err
	}
	defer cancel()
	var out httpapi.EnvEntry
	if err := c.do(ctx, request{method: http.MethodPost, path: envPath(pos[0]) + "/move", body: httpapi.MoveEnvRequest{Before: *before}}, &out); err != nil {
		return err
	}
	return printEnvEntry(e, cf, out, "moved")
}

func envImport(ctx context.Context, e Env, args []string) error {
	fs := newFlagSet(e, "env import", "[--file FILE] [--format lines|json]",
		"Create entries from a file (or stdin), all or none: NAME=value lines, or JSON (an array of {name, value, remarks, enabled, pinned, labels}).")
	var cf clientFlags
	cf.register(fs)
	file := fs.String("file", "", "input file (- or omitted: stdin)")
	format := fs.String("format", "lines", "lines or json")
	disabled := fs.Bool("disabled", false, "create the entries of lines disabled")
	_, c, ctx, cancel, err := cf.connect(ctx, e, fs, args, 0, "no arguments")
	if err != nil {
		return err
	}
	defer cancel()
	var r io.Reader = e.Stdin
	if *file != "" && *file != "-" {
		f, err := os.Open(*file)
		if err != nil {
			return err
		}
		defer f.Close()
		r = f
	}
	data, err := readAllLimited(r, 4<<20)
	if err != nil {
		return err
	}
	req := httpapi.ImportEnvRequest{Disabled: *disabled}
	switch *format {
	case "lines":
		req.Lines = string(data)
	case "json":
		if err := json.Unmarshal(data, &req.Entries); err != nil {
			return fmt.Errorf("reading the JSON entries: %w", err)
		}
	default:
		return usagef("--format must be lines or json, got %q", *format)
	}
	var out httpapi.ImportEnvResponse
	if err := c.do(ctx, request{method: http.MethodPost, path: "/api/v1/envs/import", body: req}, &out); err != nil {
		return err
	}
	if cf.json {
		return printJSON(e.Stdout, out)
	}
	fmt.Fprintf(e.Stdout, "imported %d entries\n", out.Created)
	return nil
}

func envExport(ctx context.Context, e Env, args []string) error {
	fs := newFlagSet(e, "env export", "[--values] [--format json|lines]",
		"Print every entry. Without --values: JSON without values. With --values (written to the audit log): JSON or NAME=value lines.")
	var cf clientFlags
	cf.register(fs)
	values := fs.Bool("values", false, "include the values (audited)")
	format := fs.String("format", "json", "json or lines (lines needs --values)")
	_, c, ctx, cancel, err := cf.connect(ctx, e, fs, args, 0, "no arguments")
	if err != nil {
		return err
	}
	defer cancel()
	var out httpapi.EnvExport
	if err := c.do(ctx, request{method: http.MethodPost, path: "/api/v1/envs/export", body: httpapi.ExportEnvRequest{Format: *format, Values: *values}}, &out); err != nil {
		return err
	}
	if out.Format == "lines" {
		_, err := io.WriteString(e.Stdout, out.Lines)
		return err
	}
	return printJSON(e.Stdout, out.Entries)
}

func envReveal(ctx context.Context, e Env, args []string) error {
	fs := newFlagSet(e, "env reveal", "ID", "Print one entry's value (written to the audit log).")
	var cf clientFlags
	cf.register(fs)
	out, done, err := fetch[httpapi.EnvValue](ctx, e, fs, &cf, args, 1, "ID",
		func(pos []string) request { return request{method: http.MethodPost, path: envPath(pos[0]) + "/reveal"} })
	if err != nil || done {
		return err
	}
	_, err = fmt.Fprintln(e.Stdout, out.Value)
	return err
}

func envRotateKey(ctx context.Context, e Env, args []string) error {
	fs := newFlagSet(e, "env rotate-key", "", "Write a new env key file and re-wrap the data key under it; the server keeps running.")
	var cf clientFlags
	cf.register(fs)
	out, done, err := fetch[httpapi.RotateKeyResponse](ctx, e, fs, &cf, args, 0, "no arguments",
		func(_ []string) request { return request{method: http.MethodPost, path: "/api/v1/envs/rotate-key"} })
	if err != nil || done {
		return err
	}
	fmt.Fprintf(e.Stdout, "env key rotated; new key id %s (back up the new key file)\n", out.KeyID)
	return nil
}
