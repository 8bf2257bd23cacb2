package scriptstore_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/internal/pgfixture"
	"github.com/ql3/ql3/controlplane/postgres/scriptstore"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/fence"
	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/core/spec"
)

type fixture struct {
	pgfixture.Life
	store *scriptstore.Store
	fetch *scriptstore.Fetch
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	l := pgfixture.NewLife(t)
	return fixture{Life: l, store: scriptstore.New(l.DB.Pool(t, postgres.RoleAdmin)), fetch: scriptstore.NewFetch(l.Runtime)}
}

func (f fixture) put(t *testing.T, path, body string, pre controlplane.ScriptPrecondition) controlplane.ScriptWriteResult {
	t.Helper()
	res, err := f.store.WriteScript(context.Background(), f.ProjectID, path, []byte(body), pre)
	if err != nil {
		t.Fatalf("write %s: %v", path, err)
	}
	return res
}

var create = controlplane.ScriptPrecondition{IfNoneMatch: true}

// TestFolderOperations: create, list, read, a stale write refused with the
// current ETag, a blob stored once per project, move, delete, and every
// change audited.
func TestFolderOperations(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	w := f.put(t, "lib/utils.js", "module.exports = 1\n", create)
	if !w.Created || len(w.ETag) != 64 {
		t.Fatalf("create: %+v", w)
	}
	f.put(t, "main.js", "module.exports = 1\n", create) // same content: same blob
	if n := f.Count(t, `SELECT count(*) FROM ql3.script_blobs`); n != 1 {
		t.Errorf("blobs after two files with one content: %d, want 1", n)
	}
	_, err := f.store.WriteScript(ctx, f.ProjectID, "main.js", []byte("x"), create)
	var stale *controlplane.ScriptStaleError
	if !errors.As(err, &stale) || stale.Current != w.ETag {
		t.Fatalf("create over an existing file: %v, want stale with ETag %s", err, w.ETag)
	}
	w2 := f.put(t, "main.js", "console.log(2)\n", controlplane.ScriptPrecondition{IfMatch: w.ETag})
	if _, err := f.store.WriteScript(ctx, f.ProjectID, "main.js", []byte("y"), controlplane.ScriptPrecondition{IfMatch: w.ETag}); !errors.As(err, &stale) || stale.Current != w2.ETag {
		t.Fatalf("stale If-Match: %v", err)
	}
	list, err := f.store.ListScripts(ctx, f.ProjectID, "")
	if err != nil || len(list) != 2 || list[0].Name != "lib" || list[0].Kind != "dir" || list[1].Name != "main.js" || list[1].SHA256 != w2.ETag || list[1].Size != 15 {
		t.Fatalf("list: %+v %v", list, err)
	}
	data, etag, err := f.store.ReadScript(ctx, f.ProjectID, "main.js")
	if err != nil || string(data) != "console.log(2)\n" || etag != w2.ETag {
		t.Fatalf("read: %q %s %v", data, etag, err)
	}
	if err := f.store.MoveScript(ctx, f.ProjectID, "lib", "pkg/lib"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.store.ReadScript(ctx, f.ProjectID, "pkg/lib/utils.js"); err != nil {
		t.Fatalf("read after move: %v", err)
	}
	if err := f.store.MoveScript(ctx, f.ProjectID, "pkg", "pkg/x"); errs.Field(err) != "to" {
		t.Errorf("move into itself: %v", err)
	}
	if err := f.store.MoveScript(ctx, f.ProjectID, "main.js", "pkg"); errs.Code(err) != errs.Conflict {
		t.Errorf("move over a folder: %v", err)
	}
	if err := f.store.DeleteScript(ctx, f.ProjectID, "pkg", false); errs.Code(err) != errs.Conflict {
		t.Errorf("delete a full folder without recursive: %v", err)
	}
	if err := f.store.DeleteScript(ctx, f.ProjectID, "pkg", true); err != nil {
		t.Fatal(err)
	}
	if n := f.Count(t, `SELECT count(*) FROM ql3.script_entries`); n != 1 {
		t.Errorf("entries after delete: %d", n)
	}
	if n := f.Count(t, `SELECT count(*) FROM ql3.audit_log WHERE action LIKE 'script.%'`); n != 5 {
		t.Errorf("audit lines: %d, want 5 (create, create, write, move, delete)", n)
	}
}

// TestPathAttacksWriteNothing: every path attack of issue 22 is refused
// as invalid and nothing is written.
func TestPathAttacksWriteNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	for _, p := range []string{"../x", "/etc/passwd", "a/../../x", "a\x00b", "a//b", "./a", `a\b`} {
		if _, err := f.store.WriteScript(ctx, f.ProjectID, p, []byte("x"), create); errs.Code(err) != errs.Invalid {
			t.Errorf("write %q: %v, want invalid", p, err)
		}
		if err := f.store.MkdirScript(ctx, f.ProjectID, p); errs.Code(err) != errs.Invalid {
			t.Errorf("mkdir %q: %v, want invalid", p, err)
		}
	}
	archives := map[string][]byte{
		"dot-dot": tarOf(t, map[string]string{"ok.js": "1", "../escape.js": "2"}),
		"symlink": tarLink(t),
	}
	for name, a := range archives {
		if _, err := f.store.UploadScripts(ctx, f.ProjectID, "", "tar", bytes.NewReader(a), int64(len(a)), false); errs.Code(err) != errs.Invalid {
			t.Errorf("upload %s: %v, want invalid", name, err)
		}
	}
	if _, err := f.store.WriteScript(ctx, f.ProjectID, "big.js", make([]byte, 64<<20+1), create); errs.Code(err) != errs.TooLarge {
		t.Errorf("a file past 64 MiB: %v", err)
	}
	if n := f.Count(t, `SELECT count(*) FROM ql3.script_entries`) + f.Count(t, `SELECT count(*) FROM ql3.script_blobs`); n != 0 {
		t.Errorf("%d rows written by refused requests", n)
	}
}

// TestUploadAndLimits: an archive lands whole (folders made, files
// stored); an existing file is not replaced without overwrite; the entry
// limit counts the folder as it is.
func TestUploadAndLimits(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	a := tarOf(t, map[string]string{"app/main.py": "import util\n", "app/util.py": "X = 1\n"})
	res, err := f.store.UploadScripts(ctx, f.ProjectID, "py", "tar", bytes.NewReader(a), int64(len(a)), false)
	if err != nil || res.Files != 2 || res.Folders != 2 {
		t.Fatalf("upload: %+v %v", res, err)
	}
	if _, _, err := f.store.ReadScript(ctx, f.ProjectID, "py/app/util.py"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.UploadScripts(ctx, f.ProjectID, "py", "tar", bytes.NewReader(a), int64(len(a)), false); errs.Code(err) != errs.Conflict {
		t.Errorf("upload over existing files: %v", err)
	}
	// Fill the folder to its limit directly, then one more is refused.
	f.Exec(t, `INSERT INTO ql3.script_entries (project_id, path, parent, kind, mtime_ms)
		SELECT $1::uuid, 'fill/' || i, 'fill', 'dir', 1 FROM generate_series(1, 8192 - 5) i`, f.ProjectID)
	f.Exec(t, `INSERT INTO ql3.script_entries (project_id, path, parent, kind, mtime_ms) VALUES ($1::uuid, 'fill', '', 'dir', 1)`, f.ProjectID)
	if _, err := f.store.WriteScript(ctx, f.ProjectID, "one-more.js", []byte("x"), create); errs.Code(err) != errs.Invalid || !strings.Contains(err.Error(), "8192") {
		t.Errorf("entry 8,193: %v", err)
	}
}

func tarOf(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Size: int64(len(body)), Mode: 0o644}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(body))
	}
	tw.Close()
	return b.Bytes()
}

func tarLink(t *testing.T) []byte {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	if err := tw.WriteHeader(&tar.Header{Name: "l", Typeflag: tar.TypeSymlink, Linkname: "/etc"}); err != nil {
		t.Fatal(err)
	}
	tw.Close()
	return b.Bytes()
}

func scriptTask(t *testing.T, f fixture, name, file string) controlplane.Task {
	t.Helper()
	cmd := spec.Command{Kind: spec.KindCommandV1, Script: &spec.Script{File: file}}.WithDefaults()
	task, err := f.Pub.PublishTask(context.Background(), controlplane.TaskInput{ProjectID: f.ProjectID, Name: name, Spec: cmd})
	if err != nil {
		t.Fatalf("publish %s: %v", name, err)
	}
	return task
}

func (f fixture) treeOf(t *testing.T, taskID string, rev int64) []byte {
	t.Helper()
	var d []byte
	if err := f.SU.QueryRow(context.Background(), `SELECT script_tree FROM ql3.execution_revisions WHERE task_id = $1::uuid AND task_revision = $2`,
		taskID, rev).Scan(&d); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestScriptTaskPinsItsTree: publishing pins the tree of the script's
// folder; an edit inside it publishes a new revision with a new digest
// while the old revision keeps its tree; an edit elsewhere does not; a
// script a task runs cannot be deleted; a missing file or an extension no
// interpreter runs is refused at publish.
func TestScriptTaskPinsItsTree(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.Pub.PublishTask(ctx, controlplane.TaskInput{ProjectID: f.ProjectID, Name: "nofile",
		Spec: spec.Command{Kind: spec.KindCommandV1, Script: &spec.Script{File: "a/none.js"}}.WithDefaults()}); errs.Field(err) != "spec.script.file" {
		t.Errorf("a script that is not in the folder: %v", err)
	}
	f.put(t, "a/x.rb", "puts 1", create)
	if _, err := f.Pub.PublishTask(ctx, controlplane.TaskInput{ProjectID: f.ProjectID, Name: "ruby",
		Spec: spec.Command{Kind: spec.KindCommandV1, Script: &spec.Script{File: "a/x.rb"}}.WithDefaults()}); errs.Field(err) != "spec.script.file" {
		t.Errorf("an extension with no interpreter: %v", err)
	}
	u := f.put(t, "a/utils.js", "module.exports = 'one'\n", create)
	f.put(t, "a/main.js", "console.log(require('./utils'))\n", create)
	task := scriptTask(t, f, "main", "a/main.js")
	first := f.treeOf(t, task.ID, task.Revision)
	if len(first) != 32 {
		t.Fatalf("revision 1 pins %x", first)
	}
	tree, err := f.store.ScriptTreeOf(ctx, f.ProjectID, "a")
	if err != nil || !bytes.Equal(tree.Digest[:], first) || len(tree.Files) != 3 {
		t.Fatalf("tree of a: %+v %v (pinned %x)", tree, err, first)
	}
	f.put(t, "elsewhere.js", "1", create)
	got, _ := f.Pub.GetTask(ctx, task.ID)
	if got.Revision != task.Revision {
		t.Errorf("an edit outside the tree moved the task to revision %d", got.Revision)
	}
	w := f.put(t, "a/utils.js", "module.exports = 'two'\n", controlplane.ScriptPrecondition{IfMatch: u.ETag})
	if w.Repinned != 1 {
		t.Errorf("repinned %d tasks, want 1", w.Repinned)
	}
	got, _ = f.Pub.GetTask(ctx, task.ID)
	second := f.treeOf(t, task.ID, got.Revision)
	if got.Revision != task.Revision+1 || bytes.Equal(first, second) {
		t.Fatalf("after the edit: revision %d, tree %x (was %x)", got.Revision, second, first)
	}
	if again := f.treeOf(t, task.ID, task.Revision); !bytes.Equal(again, first) {
		t.Errorf("the old revision's tree changed: %x", again)
	}
	if n := f.Count(t, `SELECT count(*) FROM ql3.script_tree_files WHERE tree_digest = $1`, first); n != 3 {
		t.Errorf("the old tree lists %d files, want 3", n)
	}
	for _, p := range []string{"a/main.js", "a"} {
		if err := f.store.DeleteScript(ctx, f.ProjectID, p, true); errs.Code(err) != errs.Conflict || !strings.Contains(err.Error(), "main") {
			t.Errorf("delete %s under a task: %v", p, err)
		}
	}
	if err := f.store.MoveScript(ctx, f.ProjectID, "a", "b"); errs.Code(err) != errs.Conflict {
		t.Errorf("move the task's folder: %v", err)
	}
}

// TestRetentionKeepsWhatIsNamed: a blob no entry and no tree names is
// deleted by the sweep (after its grace); a blob a pinned tree names
// stays after the file changed.
func TestRetentionKeepsWhatIsNamed(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	u := f.put(t, "s/u.js", "old\n", create)
	f.put(t, "s/m.js", "require('./u')\n", create)
	scriptTask(t, f, "m", "s/m.js")
	f.put(t, "s/u.js", "new\n", controlplane.ScriptPrecondition{IfMatch: u.ETag})
	o := f.put(t, "orphan.js", "gone soon\n", create)
	if err := f.store.DeleteScript(context.Background(), f.ProjectID, "orphan.js", false); err != nil {
		t.Fatal(err)
	}
	f.Exec(t, `UPDATE ql3.script_blobs SET created_at_ms = 0`)
	rep := f.Sweep(t)
	if rep.Retention.ScriptBlobs != 1 {
		t.Errorf("retention deleted %d blobs, want 1 (the orphan)", rep.Retention.ScriptBlobs)
	}
	if n := f.Count(t, `SELECT count(*) FROM ql3.script_blobs WHERE encode(sha256, 'hex') = $1`, o.ETag); n != 0 {
		t.Error("the orphan blob is still there")
	}
	if n := f.Count(t, `SELECT count(*) FROM ql3.script_blobs WHERE encode(sha256, 'hex') = $1`, u.ETag); n != 1 {
		t.Error("the blob of the pinned tree was deleted")
	}
}

// TestFetchIsLeaseFenced: a live lease of a script task's Run reads the
// manifest and ranges of its blobs; a wrong token, a blob outside the tree
// and a lease that ended read nothing.
func TestFetchIsLeaseFenced(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	body := strings.Repeat("0123456789", 300)
	f.put(t, "j/lib.js", body, create)
	f.put(t, "j/main.js", "require('./lib')\n", create)
	f.put(t, "other.js", "secret\n", create)
	task := scriptTask(t, f, "j", "j/main.js")
	runID, attemptID := f.Run(t, pgfixture.LifeRun{Status: "running", Attempt: "running", Lease: "live", TaskID: task.ID})
	token, err := fence.NewLeaseToken(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	offerID := uuid.New()
	digest := token.Digest()
	f.Exec(t, `UPDATE ql3.run_leases SET offer_id = $2, token_digest = $3 WHERE attempt_id = $1::uuid`, attemptID, offerID.String(), digest[:])
	ref := protocol.LeaseRef{SessionID: f.SessionID.String(), Generation: 1, RunID: runID.String(), AttemptID: attemptID.String(),
		OfferID: offerID.String(), LeaseGeneration: 1, LeaseToken: token}
	p := controlplane.Principal{WorkerID: f.WorkerID.String()}
	tree, err := f.fetch.LeaseScriptTree(ctx, p, ref)
	if err != nil || len(tree.Files) != 2 || !bytes.Equal(tree.Digest[:], f.treeOf(t, task.ID, task.Revision)) {
		t.Fatalf("manifest: %+v %v", tree, err)
	}
	lib := sha256.Sum256([]byte(body))
	var got []byte
	for off := int64(0); off < int64(len(body)); {
		data, size, err := f.fetch.LeaseScriptBlob(ctx, p, ref, lib, off, 1000)
		if err != nil || size != int64(len(body)) || len(data) == 0 {
			t.Fatalf("range at %d: %d bytes of %d, %v", off, len(data), size, err)
		}
		got = append(got, data...)
		off += int64(len(data))
	}
	if string(got) != body {
		t.Error("the ranges do not add up to the blob")
	}
	if _, _, err := f.fetch.LeaseScriptBlob(ctx, p, ref, sha256.Sum256([]byte("secret\n")), 0, 10); errs.Code(err) != errs.NotFound {
		t.Errorf("a blob outside the tree: %v", err)
	}
	bad := ref
	bad.LeaseToken, _ = fence.NewLeaseToken(rand.Reader)
	if _, err := f.fetch.LeaseScriptTree(ctx, p, bad); err == nil {
		t.Error("a wrong lease token read the manifest")
	}
	f.Exec(t, `UPDATE ql3.run_leases SET status = 'released', release_reason = 'test', ended_at_ms = 1 WHERE attempt_id = $1::uuid`, attemptID)
	if _, _, err := f.fetch.LeaseScriptBlob(ctx, p, ref, lib, 0, 10); errs.Code(err) != errs.Conflict {
		t.Errorf("an ended lease: %v", err)
	}
}
