package scriptstore_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/spec"
)

// TestShellTaskLinePinsItsTree (ADR 0052, amendment): a shell task's
// `task FILE ARGS` line pins FILE's folder like a script task while the
// task keeps its shell spec; published before the file exists it pins
// nothing until the file is written, then it is pinned; an edit re-pins
// it; deleting the file is a conflict; a line the edge's helper refuses is
// refused at publish on spec.shell.command.
func TestShellTaskLinePinsItsTree(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	shell := func(line string) spec.Command {
		return spec.Command{Kind: spec.KindCommandV1, Shell: &spec.Shell{Command: line}}.WithDefaults()
	}
	if _, err := f.Pub.PublishTask(ctx, controlplane.TaskInput{ProjectID: f.ProjectID, Name: "conc",
		Spec: shell("task q/x.js conc JD_COOKIE")}); errs.Field(err) != "spec.shell.command" {
		t.Errorf("conc: %v", err)
	}
	early, err := f.Pub.PublishTask(ctx, controlplane.TaskInput{ProjectID: f.ProjectID, Name: "early", Spec: shell("task q/main.js a b")})
	if err != nil {
		t.Fatal(err)
	}
	if tree := f.treeOf(t, early.ID, early.Revision); tree != nil {
		t.Fatalf("a line whose file is missing pinned %x", tree)
	}
	u := f.put(t, "q/util.js", "module.exports = 1\n", create)
	got, _ := f.Pub.GetTask(ctx, early.ID)
	if got.Revision != early.Revision {
		t.Errorf("writing a sibling pinned the task (revision %d)", got.Revision)
	}
	if w := f.put(t, "q/main.js", "console.log(require('./util'))\n", create); w.Repinned != 1 {
		t.Errorf("writing the file repinned %d tasks, want 1", w.Repinned)
	}
	got, _ = f.Pub.GetTask(ctx, early.ID)
	first := f.treeOf(t, early.ID, got.Revision)
	if got.Revision != early.Revision+1 || len(first) != 32 || got.Spec.Shell == nil || got.Spec.Shell.Command != "task q/main.js a b" || got.Spec.Script != nil {
		t.Fatalf("after the file was written: revision %d, tree %x, spec %+v", got.Revision, first, got.Spec)
	}
	tree, err := f.store.ScriptTreeOf(ctx, f.ProjectID, "q")
	if err != nil || !bytes.Equal(tree.Digest[:], first) {
		t.Fatalf("pinned %x, the folder's tree %+v %v", first, tree, err)
	}
	later, err := f.Pub.PublishTask(ctx, controlplane.TaskInput{ProjectID: f.ProjectID, Name: "later", Spec: shell("task q/main.js")})
	if err != nil || !bytes.Equal(f.treeOf(t, later.ID, later.Revision), first) {
		t.Fatalf("a line whose file exists: %v", err)
	}
	if w := f.put(t, "q/util.js", "module.exports = 2\n", controlplane.ScriptPrecondition{IfMatch: u.ETag}); w.Repinned != 2 {
		t.Errorf("an edit repinned %d tasks, want 2", w.Repinned)
	}
	got, _ = f.Pub.GetTask(ctx, early.ID)
	if second := f.treeOf(t, early.ID, got.Revision); bytes.Equal(second, first) || len(second) != 32 {
		t.Errorf("after the edit: tree %x (was %x)", second, first)
	}
	if err := f.store.DeleteScript(ctx, f.ProjectID, "q/main.js", false); errs.Code(err) != errs.Conflict {
		t.Errorf("deleting the file a task line runs: %v", err)
	}
}
