package importer

import (
	"context"
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/ql3/ql3/core/env"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/qlimport"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/qlsource"
)

// What the fixture's plan creates (scripts/qlfixture/gen.js).
const (
	fixtureTasks = 11 // 8 lossless + 3 requires_shell_compatibility
	fixtureEnvs  = 9  // 6 rows + 3 config.sh drafts
	fixtureSubs  = 1
	fixtureDeps  = 4
	fixtureFiles = 7
)

func TestApplyFixture(t *testing.T) {
	ctx := context.Background()
	from := copyTree(t, fixture)
	before := treeState(t, from)
	e := openEdge(t, t.TempDir())

	p, src, err := Inspect(ctx, from, zone)
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.im.Apply(ctx, from, zone, p.Digest, "test")
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != StatusApplied || res.Tasks != fixtureTasks || res.Envs != fixtureEnvs || res.Subs != fixtureSubs ||
		res.Deps != fixtureDeps || res.Files != fixtureFiles {
		t.Fatalf("result %+v", res)
	}

	// The source: not a byte, mode or mtime changed.
	if after := treeState(t, from); after != before {
		t.Fatalf("the source changed:\n%s\n---\n%s", before, after)
	}

	// Tasks: each created plan row is a task as mapped, with a trigger per
	// schedule in the legacy zone; disabled stays disabled.
	tasks, err := e.store.ListTasks(ctx, edge.TaskFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks.Tasks) != fixtureTasks {
		t.Fatalf("%d tasks", len(tasks.Tasks))
	}
	byName := map[string]edge.Task{}
	for _, tk := range tasks.Tasks {
		byName[tk.Name] = tk
	}
	sign := byName["京东签到"]
	if sign.Spec.Script == nil || sign.Spec.Script.File != "jd_sign.js" || !slices.Equal(sign.Labels, []string{"京东", "daily"}) || !sign.Enabled {
		t.Errorf("京东签到: %+v", sign)
	}
	if d := byName["disabled task"]; d.Enabled {
		t.Error("a disabled QingLong task was imported enabled")
	}
	if l := byName["Legacy Crontab 3"]; l.Spec.Shell == nil || l.Spec.Shell.Shell != "/bin/bash" {
		t.Errorf("Legacy Crontab 3: %+v", l.Spec)
	}
	if m := byName["multi schedule"]; m.Spec.Concurrency != "allow" {
		t.Errorf("multi schedule concurrency %s", m.Spec.Concurrency)
	}
	if w := byName["with timeout"]; w.Spec.TimeoutMs != 300_000 {
		t.Errorf("with timeout: %d", w.Spec.TimeoutMs)
	}
	for _, tp := range p.Tasks {
		if !tp.Created() {
			if _, ok := byName[tp.Name]; ok && tp.Name != "京东签到" {
				t.Errorf("task %d (%s) is %s but was created", tp.SourceID, tp.Name, tp.Class)
			}
			continue
		}
		tk, ok := byName[tp.Name]
		if !ok {
			t.Fatalf("task %d %q not created", tp.SourceID, tp.Name)
		}
		trs, err := e.store.ListTriggers(ctx, tk.ID)
		if err != nil {
			t.Fatal(err)
		}
		var exprs []string
		for _, tr := range trs {
			if tr.TimeZone != zone {
				t.Errorf("%s: trigger zone %s", tk.Name, tr.TimeZone)
			}
			exprs = append(exprs, tr.Expression)
		}
		if !slices.Equal(exprs, tp.Schedules) {
			t.Errorf("%s: triggers %v, want %v", tk.Name, exprs, tp.Schedules)
		}
	}

	// Env: the process of every imported task sees what QingLong exported
	// for each name the import adopted.
	checkJoined(t, e, p, src)

	// Files are in the scripts folder with their content.
	for _, f := range p.Files {
		if f.Dir {
			continue
		}
		_, etag, err := e.im.Folder.Read(f.Path)
		if err != nil || etag != f.SHA256 {
			t.Errorf("scripts/%s: %v etag %s", f.Path, err, etag)
		}
	}
	if rec, err := e.store.ImportRecord(ctx, p.Digest); err != nil || rec.FilesPending || rec.Zone != zone {
		t.Errorf("ledger %+v %v", rec, err)
	}
	if n := countStaged(t, e); n != 0 {
		t.Errorf("%d staged files left", n)
	}

	// Replay: existing, nothing written.
	again, err := e.im.Apply(ctx, from, zone, p.Digest, "test")
	if err != nil || again.Status != StatusExisting || again.Tasks != fixtureTasks {
		t.Fatalf("replay %+v %v", again, err)
	}
	assertCounts(t, e, fixtureTasks, fixtureEnvs)
	if after := treeState(t, from); after != before {
		t.Fatal("the source changed during the replay")
	}
}

// checkJoined compares the joined values a task's process gets from the
// store with the values QingLong exported, for every adopted name, and
// checks the variable in a real process.
func checkJoined(t *testing.T, e *edgeDir, p qlimport.Plan, src qlimport.Source) {
	t.Helper()
	entries, err := e.store.EnabledEnvs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	vars, err := env.Resolve(entries)
	if err != nil {
		t.Fatal(err)
	}
	got, err := env.Compose(vars, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := qlimport.JoinedValues(src.Envs)
	adopted := map[string]bool{}
	for _, ep := range p.Envs {
		if ep.Created() && ep.Enabled {
			adopted[ep.Name] = true
		}
	}
	if len(adopted) < 2 {
		t.Fatalf("only %d names adopted", len(adopted))
	}
	for name := range adopted {
		if got[name] != want[name] {
			t.Errorf("%s: ql3 exports %q, QingLong exported %q", name, got[name], want[name])
		}
	}
	for name := range got {
		if !adopted[name] {
			t.Errorf("%s is exported but no enabled row of it was adopted", name)
		}
	}
	if want["JD_COOKIE"] != "pt_key=CCC333;pt_pin=carol;&pt_key=EEE555;pt_pin=erin;&pt_key=AAA111;pt_pin=alice;&pt_key=BBB222;pt_pin=bob;" {
		t.Fatalf("the fixture's QingLong order changed: %q", want["JD_COOKIE"])
	}
	// The process: the composed environment, as the runner hands it over.
	cmd := exec.Command("/bin/sh", "-c", `printf %s "$JD_COOKIE"`)
	for k, v := range got {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.Output()
	if err != nil || string(out) != want["JD_COOKIE"] {
		t.Errorf("the process saw %q (%v)", out, err)
	}
}

func assertCounts(t *testing.T, e *edgeDir, tasks, envs int) {
	t.Helper()
	ctx := context.Background()
	page, err := e.store.ListTasks(ctx, edge.TaskFilter{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	all, err := e.store.ExportEnvs(ctx, false, "test")
	if err != nil {
		t.Fatal(err)
	}
	if int(page.Total) != tasks || len(all) != envs {
		t.Fatalf("%d tasks, %d env entries; want %d, %d", page.Total, len(all), tasks, envs)
	}
}

func countStaged(t *testing.T, e *edgeDir) int {
	entries, _ := os.ReadDir(e.im.StagingDir)
	return len(entries)
}

// TestChangedSourceRefused: a change of the source after inspect — a
// value the plan never shows, a script's content — refuses the apply and
// writes nothing.
func TestChangedSourceRefused(t *testing.T) {
	ctx := context.Background()
	for name, change := range map[string]func(t *testing.T, from string){
		"env value": func(t *testing.T, from string) {
			db, err := sql.Open("sqlite", filepath.Join(from, qlsource.DBFile))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec(`UPDATE Envs SET value = 'pt_key=NEW;' WHERE id = 1`); err != nil {
				t.Fatal(err)
			}
		},
		"script": func(t *testing.T, from string) {
			if err := os.WriteFile(filepath.Join(from, "scripts", "utils.js"), []byte("changed\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			from := copyTree(t, fixture)
			e := openEdge(t, t.TempDir())
			p, _, err := Inspect(ctx, from, zone)
			if err != nil {
				t.Fatal(err)
			}
			change(t, from)
			_, err = e.im.Apply(ctx, from, zone, p.Digest, "test")
			if errs.Code(err) != errs.Conflict || !strings.Contains(err.Error(), "source changed") {
				t.Fatalf("apply after a change: %v", err)
			}
			assertCounts(t, e, 0, 0)
			if _, err := e.store.ImportRecord(ctx, p.Digest); errs.Code(err) != errs.NotFound {
				t.Fatalf("ledger: %v", err)
			}
		})
	}
}

// TestUnsafeFilesRefusedOneByOne: links, hard links, world-writable and
// special files are listed with their reason and not copied; the rest is.
func TestUnsafeFilesRefusedOneByOne(t *testing.T) {
	ctx := context.Background()
	from := copyTree(t, fixture)
	sdir := filepath.Join(from, "scripts")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink("/etc/passwd", filepath.Join(sdir, "passwd.js")))
	must(os.Link(filepath.Join(sdir, "utils.js"), filepath.Join(sdir, "utils-hard.js")))
	must(os.WriteFile(filepath.Join(sdir, "open.js"), []byte("x\n"), 0o644))
	must(os.Chmod(filepath.Join(sdir, "open.js"), 0o666))
	must(syscall.Mkfifo(filepath.Join(sdir, "pipe"), 0o600))
	must(os.MkdirAll(filepath.Join(sdir, "node_modules", "axios"), 0o755))
	must(os.WriteFile(filepath.Join(sdir, "node_modules", "axios", "index.js"), []byte("x\n"), 0o644))
	before := treeState(t, from)

	e := openEdge(t, t.TempDir())
	p, _, err := Inspect(ctx, from, zone)
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.im.Apply(ctx, from, zone, p.Digest, "test")
	if err != nil {
		t.Fatal(err)
	}
	refused := map[string]string{}
	for _, f := range res.Refused {
		refused[f.Path] = strings.Join(f.Reasons, "; ")
	}
	for path, reason := range map[string]string{"passwd.js": "symbolic link", "utils-hard.js": "hard links",
		"utils.js": "hard links", "open.js": "world-writable", "pipe": "socket or pipe", "node_modules": "install the dependencies"} {
		if !strings.Contains(refused[path], reason) {
			t.Errorf("%s: refused %q, want %q", path, refused[path], reason)
		}
		if _, _, err := e.im.Folder.Read(path); err == nil {
			t.Errorf("%s was copied", path)
		}
	}
	if _, _, err := e.im.Folder.Read("jd_sign2.js"); err != nil {
		t.Errorf("a safe file was not copied: %v", err)
	}
	// jd_sign.js requires ./utils, refused here: the task stays, the file
	// list says why utils.js is missing.
	if after := treeState(t, from); after != before {
		t.Fatal("the source changed")
	}
}

// TestDestinationClash: a scripts folder with another file at a path to
// copy refuses the apply before anything is written.
func TestDestinationClash(t *testing.T) {
	ctx := context.Background()
	from := copyTree(t, fixture)
	e := openEdge(t, t.TempDir())
	if err := os.WriteFile(filepath.Join(e.im.Folder.Root(), "tool.ts"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, _, err := Inspect(ctx, from, zone)
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.im.Apply(ctx, from, zone, p.Digest, "test")
	if errs.Code(err) != errs.Conflict || !strings.Contains(err.Error(), "tool.ts") {
		t.Fatalf("%v", err)
	}
	assertCounts(t, e, 0, 0)
}

func TestInspectNeedsZone(t *testing.T) {
	for _, z := range []string{"", "Local", "Mars/Base"} {
		if _, _, err := Inspect(context.Background(), fixture, z); err == nil {
			t.Errorf("zone %q accepted", z)
		}
	}
	if _, _, err := Inspect(context.Background(), t.TempDir(), zone); err == nil || !strings.Contains(err.Error(), "not a QingLong data directory") {
		t.Errorf("an empty folder: %v", err)
	}
}
