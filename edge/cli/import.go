package cli

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/ql3/ql3/core/qlimport"
	"github.com/ql3/ql3/edge/httpapi"
	"github.com/ql3/ql3/edge/importer"
)

const importUsage = `Usage: ql3-edge import <inspect|apply> [flags]

Move a QingLong 2 installation into this server (ADR 0056). The QingLong data directory
(db/database.sqlite, scripts/, config/config.sh) is read on the server and never written.

  inspect   print the plan: every row classified lossless | requires_shell_compatibility |
            requires_manual_action | malformed with the reason, what it becomes, and the plan digest
               import inspect --from /ql/data --zone Asia/Shanghai
               import inspect --archive ql-data.tar.gz --zone Asia/Shanghai   (uploads it)
  apply     apply the plan with that digest, all or nothing; refused if the source changed;
            running it again answers "existing"
               import apply --from /ql/data --plan sha256:...

--zone is the time zone QingLong ran in (its schedules are wall-clock times there).
Env values are never printed: the digest binds them.
`

func importCmd(ctx context.Context, e Env, args []string) error {
	return dispatch(ctx, e, "import", importUsage, args, map[string]subcommand{
		"inspect": importInspect, "apply": importApply,
	})
}

// serverPath makes a local path absolute: the server reads it, on this
// machine.
func serverPath(p string) (string, error) {
	if p == "" || strings.HasPrefix(p, importer.UploadPrefix) {
		return p, nil
	}
	return filepath.Abs(p)
}

func importInspect(ctx context.Context, e Env, args []string) error {
	fs := newFlagSet(e, "import inspect", "--from DIR | --archive FILE --zone ZONE [flags]",
		"Print the import plan of a QingLong data directory and its digest (read-only).")
	var cf clientFlags
	cf.register(fs)
	from := fs.String("from", "", "the QingLong data directory, on the server's machine")
	archive := fs.String("archive", "", "a tar or tar.gz of the data directory, uploaded to the server")
	zone := fs.String("zone", "", "the IANA time zone QingLong ran in (required), e.g. Asia/Shanghai")
	all := fs.Bool("all", false, "list every row, lossless ones too (default: only rows that need attention, and counts)")
	_, c, ctx, cancel, err := cf.connect(ctx, e, fs, args, 0, "no arguments")
	if err != nil {
		return err
	}
	defer cancel()
	if (*from == "") == (*archive == "") {
		return usagef("give exactly one of --from and --archive")
	}
	if *zone == "" {
		return usagef("--zone is required: the time zone QingLong ran in (QingLong's schedules are wall-clock times there)")
	}
	var out importer.Inspection
	if *archive != "" {
		format := importer.FormatTar
		if strings.HasSuffix(*archive, ".tar.gz") || strings.HasSuffix(*archive, ".tgz") {
			format = importer.FormatTarGz
		}
		f, err := os.Open(*archive)
		if err != nil {
			return err
		}
		defer f.Close()
		err = c.do(ctx, request{method: http.MethodPost, path: "/api/v1/import/upload",
			query: url.Values{"zone": {*zone}, "format": {format}}, raw: f}, &out)
		if err != nil {
			return err
		}
	} else {
		dir, err := serverPath(*from)
		if err != nil {
			return err
		}
		if err := c.do(ctx, request{method: http.MethodPost, path: "/api/v1/import/inspect",
			body: httpapi.ImportInspectRequest{From: dir, Zone: *zone}}, &out); err != nil {
			return err
		}
	}
	if cf.json {
		return printJSON(e.Stdout, out)
	}
	printPlan(e, out, *all)
	return nil
}

func printPlan(e Env, in importer.Inspection, all bool) {
	p := in.Plan
	qlimport.WritePlan(e.Stdout, p, all)
	for _, s := range in.Skipped {
		fmt.Fprintf(e.Stdout, "not unpacked (a link or special file): %s\n", s)
	}
	fmt.Fprintf(e.Stdout, "zone: %s\nplan: %s\napply: ql3-edge import apply --from %s --plan %s\n", p.Zone, in.Digest, in.From, in.Digest)
}

func importApply(ctx context.Context, e Env, args []string) error {
	fs := newFlagSet(e, "import apply", "--from DIR --plan DIGEST [--zone ZONE] [flags]",
		"Apply the import plan with this digest: one transaction, the script files copied, the source never written.\n"+
			"Refused when the source changed since inspect; a plan applied before answers \"existing\".")
	var cf clientFlags
	cf.register(fs)
	from := fs.String("from", "", "the data directory inspected (or upload:ID)")
	plan := fs.String("plan", "", "the plan digest inspect printed (required)")
	zone := fs.String("zone", "", "the zone inspected (default: the one the server remembers for this plan)")
	_, c, ctx, cancel, err := cf.connect(ctx, e, fs, args, 0, "no arguments")
	if err != nil {
		return err
	}
	defer cancel()
	if *plan == "" {
		return usagef("--plan is required: the digest import inspect printed")
	}
	dir, err := serverPath(*from)
	if err != nil {
		return err
	}
	var out importer.Result
	if err := c.do(ctx, request{method: http.MethodPost, path: "/api/v1/import/apply",
		body: httpapi.ImportApplyRequest{Plan: *plan, From: dir, Zone: *zone}}, &out); err != nil {
		return err
	}
	if cf.json {
		return printJSON(e.Stdout, out)
	}
	fmt.Fprintf(e.Stdout, "%s: %d tasks, %d env entries, %d subscriptions, %d dependencies, %d script files (zone %s)\n",
		out.Status, out.Tasks, out.Envs, out.Subs, out.Deps, out.Files, out.Zone)
	for _, f := range out.Refused {
		fmt.Fprintf(e.Stdout, "not copied: scripts/%s: %s\n", f.Path, strings.Join(f.Reasons, "; "))
	}
	for _, w := range out.Warnings {
		fmt.Fprintf(e.Stdout, "warning: %s\n", w)
	}
	return nil
}
