package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/scriptpath"
	"github.com/ql3/ql3/edge/httpapi"
	"github.com/ql3/ql3/edge/scripts"
)

const scriptUsage = `Usage: ql3-edge script <ls|cat|put|mv|rm|mkdir|upload|run> [flags] [arguments]

  ls      one level of the scripts folder:  script ls [DIR]
  cat     print a script:  script cat dir/sign.js
  put     store a script from a file or stdin:  script put dir/sign.js --from sign.js
          (a new file, or replace the current one; --etag E replaces only that version)
  mv      rename a file or folder (never over an existing one):  script mv old.js new/old.js
  rm      delete a file, or a folder with --recursive
  mkdir   create a folder
  upload  unpack a .tar, .tar.gz/.tgz or .zip into a folder:  script upload repo.zip --to repo
  run     run a script now (a Run of its own task "script: PATH"):  script run dir/sign.js a b [--follow]

Paths are relative to the server's scripts folder (<data dir>/scripts). A script task runs
FILE with the interpreter its extension names (.js .mjs .cjs node, .py python3, .sh bash,
.ts tsx or ts-node) from the file's folder; in a shell task, "task FILE ARGS" does the same.
`

func scriptCmd(ctx context.Context, envr Env, args []string) error {
	return dispatch(ctx, envr, "script", scriptUsage, args, map[string]subcommand{
		"ls": scriptList, "list": scriptList, "cat": scriptCat, "put": scriptPut, "mv": scriptMove, "move": scriptMove,
		"rm": scriptRemove, "delete": scriptRemove, "mkdir": scriptMkdir, "upload": scriptUpload, "run": scriptRun,
	})
}

func scriptList(ctx context.Context, e Env, args []string) error {
	fs := newFlagSet(e, "script ls", "[DIR] [flags]", "List one level of the scripts folder (folders first).")
	var cf clientFlags
	cf.register(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return usagef("script ls takes at most one folder")
	}
	dir := ""
	if len(pos) == 1 {
		dir = pos[0]
	}
	c, err := cf.client(e)
	if err != nil {
		return err
	}
	ctx, cancel := withTimeout(ctx, cf.timeout)
	defer cancel()
	var list httpapi.ScriptList
	if err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/scripts", query: url.Values{"path": {dir}}}, &list); err != nil {
		return err
	}
	if cf.json {
		return printJSON(e.Stdout, list)
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tKIND\tSIZE\tMODIFIED\tSHA256")
	for _, en := range list.Entries {
		name, sum := en.Name, en.SHA256
		if en.Kind == scripts.KindDir {
			name += "/"
		}
		if len(sum) > 12 {
			sum = sum[:12]
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", name, en.Kind, en.Size, fmtTime(en.MtimeMs), sum)
	}
	return tw.Flush()
}

func scriptCat(ctx context.Context, e Env, args []string) error {
	fs := newFlagSet(e, "script cat", "FILE [flags]", "Print a script's content.")
	var cf clientFlags
	cf.register(fs)
	pos, c, ctx, cancel, err := cf.connect(ctx, e, fs, args, 1, "one file")
	if err != nil {
		return err
	}
	defer cancel()
	resp, err := c.send(ctx, request{method: http.MethodGet, path: "/api/v1/scripts/content", query: url.Values{"path": {pos[0]}}})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(e.Stdout, io.LimitReader(resp.Body, scriptpath.MaxFileBytes))
	return err
}

func scriptPut(ctx context.Context, e Env, args []string) error {
	fs := newFlagSet(e, "script put", "FILE [--from LOCAL] [flags]",
		"Store a script atomically: a new file, or a replacement of the current one (--etag: only of that version).")
	var cf clientFlags
	cf.register(fs)
	from := fs.String("from", "", "local file to upload (default: stdin)")
	etag := fs.String("etag", "", "replace only if the script is still this version (its ETag); a newer one is a conflict")
	pos, c, ctx, cancel, err := cf.connect(ctx, e, fs, args, 1, "one file")
	if err != nil {
		return err
	}
	defer cancel()
	var r io.Reader = e.Stdin
	if *from != "" && *from != "-" {
		f, err := os.Open(*from)
		if err != nil {
			return err
		}
		defer f.Close()
		r = f
	}
	data, err := readAllLimited(r, scriptpath.MaxFileBytes+1)
	if err != nil {
		return fmt.Errorf("reading the script: %w (a script is at most %d bytes)", err, scriptpath.MaxFileBytes)
	}
	put := func(hdr map[string]string) (httpapi.ScriptWritten, error) {
		var out httpapi.ScriptWritten
		err := c.do(ctx, request{method: http.MethodPut, path: "/api/v1/scripts/content", query: url.Values{"path": {pos[0]}},
			raw: strings.NewReader(string(data)), headers: hdr}, &out)
		return out, err
	}
	var out httpapi.ScriptWritten
	if *etag != "" {
		out, err = put(map[string]string{"If-Match": `"` + strings.Trim(*etag, `"`) + `"`})
	} else {
		out, err = put(map[string]string{"If-None-Match": "*"})
		var ce *errs.Error
		if errors.As(err, &ce) && ce.Field == "If-Match" && ce.Code == errs.Conflict {
			out, err = put(map[string]string{"If-Match": "*"})
		}
	}
	if err != nil {
		return err
	}
	if cf.json {
		return printJSON(e.Stdout, out)
	}
	verb := "replaced"
	if out.Created {
		verb = "created"
	}
	fmt.Fprintf(e.Stdout, "%s %s (%d bytes, etag %s)\n", verb, out.Path, out.Size, out.ETag)
	return nil
}

func scriptMove(ctx context.Context, e Env, args []string) error {
	fs := newFlagSet(e, "script mv", "FROM TO [flags]", "Rename a file or folder of the scripts folder; TO must not exist.")
	var cf clientFlags
	cf.register(fs)
	pos, c, ctx, cancel, err := cf.connect(ctx, e, fs, args, 2, "FROM and TO")
	if err != nil {
		return err
	}
	defer cancel()
	if err := c.do(ctx, request{method: http.MethodPost, path: "/api/v1/scripts/move", body: httpapi.ScriptMoveRequest{From: pos[0], To: pos[1]}}, nil); err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "moved %s to %s\n", pos[0], pos[1])
	return nil
}

func scriptRemove(ctx context.Context, e Env, args []string) error {
	fs := newFlagSet(e, "script rm", "PATH [--recursive] [flags]", "Delete a file, or a folder (with --recursive when it is not empty).")
	var cf clientFlags
	cf.register(fs)
	recursive := fs.Bool("recursive", false, "delete a folder with everything in it")
	pos, c, ctx, cancel, err := cf.connect(ctx, e, fs, args, 1, "one path")
	if err != nil {
		return err
	}
	defer cancel()
	q := url.Values{"path": {pos[0]}}
	if *recursive {
		q.Set("recursive", "true")
	}
	if err := c.do(ctx, request{method: http.MethodDelete, path: "/api/v1/scripts", query: q}, nil); err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "deleted %s\n", pos[0])
	return nil
}

func scriptMkdir(ctx context.Context, e Env, args []string) error {
	fs := newFlagSet(e, "script mkdir", "DIR [flags]", "Create a folder (and missing parents).")
	var cf clientFlags
	cf.register(fs)
	pos, c, ctx, cancel, err := cf.connect(ctx, e, fs, args, 1, "one folder")
	if err != nil {
		return err
	}
	defer cancel()
	if err := c.do(ctx, request{method: http.MethodPost, path: "/api/v1/scripts/folder", body: httpapi.ScriptFolderRequest{Path: pos[0]}}, nil); err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "created %s/\n", pos[0])
	return nil
}

// archiveFormat names the format of an archive by its file name.
func archiveFormat(name string) (string, error) {
	n := strings.ToLower(name)
	switch {
	case strings.HasSuffix(n, ".tar.gz") || strings.HasSuffix(n, ".tgz"):
		return scripts.FormatTarGz, nil
	case strings.HasSuffix(n, ".tar"):
		return scripts.FormatTar, nil
	case strings.HasSuffix(n, ".zip"):
		return scripts.FormatZip, nil
	}
	return "", usagef("%s: an archive must end in .tar, .tar.gz, .tgz or .zip (a single script: script put)", name)
}

func scriptUpload(ctx context.Context, e Env, args []string) error {
	fs := newFlagSet(e, "script upload", "ARCHIVE [--to DIR] [--overwrite] [flags]",
		"Unpack an archive into the scripts folder. The whole archive is checked first (paths, links, devices,\n"+
			"limits) and nothing is written unless all of it passes.")
	var cf clientFlags
	cf.register(fs)
	to := fs.String("to", "", "target folder (default: the top of the scripts folder)")
	overwrite := fs.Bool("overwrite", false, "replace files that exist")
	pos, c, ctx, cancel, err := cf.connect(ctx, e, fs, args, 1, "one archive")
	if err != nil {
		return err
	}
	defer cancel()
	format, err := archiveFormat(pos[0])
	if err != nil {
		return err
	}
	f, err := os.Open(pos[0])
	if err != nil {
		return err
	}
	defer f.Close()
	q := url.Values{"path": {*to}, "format": {format}}
	if *overwrite {
		q.Set("overwrite", "true")
	}
	var out httpapi.ScriptUploadResult
	if err := c.do(ctx, request{method: http.MethodPost, path: "/api/v1/scripts/upload", query: q, raw: f}, &out); err != nil {
		return err
	}
	if cf.json {
		return printJSON(e.Stdout, out)
	}
	fmt.Fprintf(e.Stdout, "unpacked %d files, %d folders (%d bytes)\n", out.Files, out.Folders, out.Bytes)
	return nil
}

func scriptRun(ctx context.Context, e Env, args []string) error {
	fs := newFlagSet(e, "script run", "FILE [ARGS...] [--follow] [flags]",
		"Run a script now: a normal Run (logs, cancel, history) of the script's own task \"script: FILE\".\nArguments after FILE are passed to the script (put them after -- if they start with -).")
	var cf clientFlags
	cf.register(fs)
	follow := fs.Bool("follow", false, "print the output as it comes, until the run ends")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("script run needs a file")
	}
	c, err := cf.client(e)
	if err != nil {
		return err
	}
	rctx, cancel := withTimeout(ctx, cf.timeout)
	defer cancel()
	var rn httpapi.Run
	if err := c.do(rctx, request{method: http.MethodPost, path: "/api/v1/scripts/run",
		body: httpapi.ScriptRunRequest{Path: pos[0], Args: pos[1:]}}, &rn); err != nil {
		return err
	}
	if cf.json && !*follow {
		return printJSON(e.Stdout, rn)
	}
	fmt.Fprintf(e.Stderr, "run %s queued (task %s)\n", rn.ID, rn.TaskID)
	if !*follow {
		fmt.Fprintln(e.Stdout, rn.ID)
		return nil
	}
	_, err = followLog(ctx, e.Stdout, c, rn.ID, 1, 0)
	return err
}
