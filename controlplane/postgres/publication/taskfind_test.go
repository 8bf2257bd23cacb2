package publication_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/core/errs"
)

func TestTaskLabelsFiltersAndTotal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newPubFixture(t)
	proj := mustProject(t, f, "home")
	other := mustProject(t, f, "office")
	mk := func(project, name string) controlplane.Task {
		t.Helper()
		tk, err := f.pub.PublishTask(ctx, controlplane.TaskInput{ProjectID: project, Name: name, Spec: shellSpec("true")})
		if err != nil {
			t.Fatal(err)
		}
		return tk
	}
	var tasks []controlplane.Task
	for i := range 7 {
		tasks = append(tasks, mk(proj.ID, fmt.Sprintf("task %d", i)))
	}
	foreign := mk(other.ID, "foreign")
	for i, tk := range tasks[:5] {
		ls := []string{"京东"}
		if i%2 == 0 {
			ls = append(ls, "Daily")
		}
		got, err := f.pub.SetTaskLabels(ctx, tk.ID, ls)
		if err != nil || !slices.Equal(got.Labels, ls) {
			t.Fatalf("labels of %s: %v %v", tk.Name, got.Labels, err)
		}
	}
	if _, err := f.pub.SetTaskLabels(ctx, foreign.ID, []string{"京东"}); err != nil {
		t.Fatal(err)
	}
	off := false
	if _, err := f.pub.SetTaskEnabled(ctx, controlplane.TaskEnabledInput{TaskID: tasks[0].ID, Enabled: off}); err != nil {
		t.Fatal(err)
	}
	walk := func(fl controlplane.TaskFilter) ([]string, int64) {
		t.Helper()
		var names []string
		var total int64 = -1
		fl.Page.Limit = 2
		for {
			p, err := f.pub.FindTaskPage(ctx, fl)
			if err != nil {
				t.Fatal(err)
			}
			if total >= 0 && p.Total != total {
				t.Fatalf("total changed between pages: %d, %d", total, p.Total)
			}
			total = p.Total
			for _, tk := range p.Items {
				names = append(names, tk.Name)
			}
			if fl.Page.Cursor = p.NextCursor; fl.Page.Cursor == "" {
				return names, total
			}
		}
	}
	for _, c := range []struct {
		name string
		f    controlplane.TaskFilter
		want int
	}{
		{"every task of the project", controlplane.TaskFilter{ProjectID: proj.ID}, 7},
		{"label", controlplane.TaskFilter{ProjectID: proj.ID, Label: "京东"}, 5},
		{"label of every project", controlplane.TaskFilter{Label: "京东"}, 6},
		{"label is exact", controlplane.TaskFilter{ProjectID: proj.ID, Label: "daily"}, 0},
		{"search finds a label, folded", controlplane.TaskFilter{ProjectID: proj.ID, Q: "DAILY"}, 3},
		{"label and enabled", controlplane.TaskFilter{ProjectID: proj.ID, Label: "Daily", Enabled: &off}, 1},
		{"search and label", controlplane.TaskFilter{ProjectID: proj.ID, Label: "京东", Q: "task 4"}, 1},
	} {
		if got, total := walk(c.f); len(got) != c.want || total != int64(c.want) {
			t.Errorf("%s: %v (total %d), want %d", c.name, got, total, c.want)
		}
	}
	// Labels survive an update and stay searchable; a deleted task leaves the filter.
	tk, _ := f.pub.GetTask(ctx, tasks[2].ID)
	if tk, err := f.pub.PublishTask(ctx, controlplane.TaskInput{TaskID: tk.ID, ExpectedRevision: tk.Revision, Name: "renamed", Spec: shellSpec("true")}); err != nil || len(tk.Labels) != 2 {
		t.Fatalf("update: %+v %v", tk.Labels, err)
	}
	if got, _ := walk(controlplane.TaskFilter{ProjectID: proj.ID, Q: "daily"}); !slices.Contains(got, "renamed") {
		t.Fatalf("labels left the search text on update: %v", got)
	}
	if _, err := f.pub.DeleteTask(ctx, controlplane.DeleteInput{TaskID: tasks[4].ID}); err != nil {
		t.Fatal(err)
	}
	if got, total := walk(controlplane.TaskFilter{ProjectID: proj.ID, Label: "京东"}); len(got) != 4 || total != 4 {
		t.Fatalf("after delete: %v %d", got, total)
	}
	// Clearing, and bad labels naming the field.
	if got, err := f.pub.SetTaskLabels(ctx, tasks[1].ID, nil); err != nil || got.Labels != nil {
		t.Fatalf("clear: %v %v", got.Labels, err)
	}
	for _, bad := range [][]string{{"a,b"}, {"x", "x"}, {"0123456789012345678901234567890123"}} {
		if _, err := f.pub.SetTaskLabels(ctx, tasks[1].ID, bad); errs.Code(err) != errs.Invalid {
			t.Errorf("labels %q: %v", bad, err)
		}
	}
	if _, err := f.pub.FindTaskPage(ctx, controlplane.TaskFilter{Label: "a,b"}); errs.Code(err) != errs.Invalid {
		t.Errorf("label filter with a comma: %v", err)
	}
}

func TestTaskViews(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newPubFixture(t)
	proj := mustProject(t, f, "home")
	other := mustProject(t, f, "office")
	v, err := f.pub.CreateTaskView(ctx, proj.ID, "京东", controlplane.TaskViewFilter{Q: " 签到 ", Label: "京东", Enabled: "true"})
	if err != nil || v.Filter.Q != "签到" || v.ProjectID != proj.ID {
		t.Fatalf("create: %+v %v", v, err)
	}
	if _, err := f.pub.CreateTaskView(ctx, proj.ID, "京东", controlplane.TaskViewFilter{}); errs.Code(err) != errs.Conflict {
		t.Fatalf("same name: %v", err)
	}
	if _, err := f.pub.CreateTaskView(ctx, other.ID, "京东", controlplane.TaskViewFilter{}); err != nil {
		t.Fatalf("same name in another project: %v", err)
	}
	if _, err := f.pub.CreateTaskView(ctx, proj.ID, "x", controlplane.TaskViewFilter{Enabled: "maybe"}); errs.Code(err) != errs.Invalid {
		t.Fatalf("bad enabled: %v", err)
	}
	vs, err := f.pub.ListTaskViews(ctx, proj.ID)
	if err != nil || len(vs) != 1 || vs[0].ID != v.ID || vs[0].Filter.Label != "京东" {
		t.Fatalf("list: %+v %v", vs, err)
	}
	if err := f.pub.DeleteTaskView(ctx, v.ID); err != nil {
		t.Fatal(err)
	}
	if err := f.pub.DeleteTaskView(ctx, v.ID); errs.Code(err) != errs.NotFound {
		t.Fatalf("delete twice: %v", err)
	}
	if vs, _ = f.pub.ListTaskViews(ctx, proj.ID); len(vs) != 0 {
		t.Fatalf("after delete: %+v", vs)
	}
	for i := range 100 {
		if _, err := f.pub.CreateTaskView(ctx, proj.ID, fmt.Sprintf("v%03d", i), controlplane.TaskViewFilter{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.pub.CreateTaskView(ctx, proj.ID, "one too many", controlplane.TaskViewFilter{}); errs.Code(err) != errs.Invalid {
		t.Fatalf("101st view: %v", err)
	}
}
