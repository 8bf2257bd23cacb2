package adminapi_test

import (
	"slices"
	"testing"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/adminapi"
)

// Labels through the admin API: a bad label on create or update changes
// nothing (checked before the task or its revision is written); PATCH
// sets them; the list filters by label and enabled with its total; views
// of a project.
func TestTaskLabelsAndViewsThroughTheAPI(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	mustStatus(t, "project", f.call("POST", "/api/v1/projects", `{"name":"ops"}`, nil), 201)
	spec := `"spec":{"kind":"qinglong/command@v1","shell":{"command":"true"}}`
	mustStatus(t, "bad label on create", f.call("POST", "/api/v1/tasks", `{"project":"ops","name":"a",`+spec+`,"labels":["x,y"]}`, nil), 400)
	var list adminapi.TaskList
	mustStatus(t, "list", f.call("GET", "/api/v1/tasks?project=ops", nil, &list), 200)
	if list.Total != 0 || len(list.Items) != 0 {
		t.Fatalf("a refused create left a task: %+v", list)
	}
	var a adminapi.Task
	mustStatus(t, "create", f.call("POST", "/api/v1/tasks", `{"project":"ops","name":"a",`+spec+`,"labels":["京东"]}`, &a), 201)
	if !slices.Equal(a.Labels, []string{"京东"}) {
		t.Fatalf("created: %+v", a.Labels)
	}
	mustStatus(t, "create b", f.call("POST", "/api/v1/tasks", `{"project":"ops","name":"b","enabled":false,`+spec+`}`, nil), 201)
	mustStatus(t, "bad label on update", f.call("PUT", "/api/v1/tasks/"+a.ID, `{"expectedRevision":1,"name":"a2",`+spec+`,"labels":["x,y"]}`, nil), 400)
	var got adminapi.Task
	mustStatus(t, "get", f.call("GET", "/api/v1/tasks/"+a.ID, nil, &got), 200)
	if got.Revision != 1 || got.Name != "a" {
		t.Fatalf("a refused update made a revision: %+v", got)
	}
	mustStatus(t, "patch", f.call("PATCH", "/api/v1/tasks/"+a.ID, `{"labels":["京东","daily"]}`, &got), 200)
	if !slices.Equal(got.Labels, []string{"京东", "daily"}) {
		t.Fatalf("patched: %+v", got.Labels)
	}
	for _, c := range []struct {
		query string
		want  int64
	}{{"", 2}, {"&label=daily", 1}, {"&enabled=false", 1}, {"&label=daily&enabled=false", 0}, {"&q=DAILY", 1}} {
		mustStatus(t, c.query, f.call("GET", "/api/v1/tasks?project=ops"+c.query, nil, &list), 200)
		if list.Total != c.want || int64(len(list.Items)) != c.want {
			t.Errorf("%s: %d items, total %d; want %d", c.query, len(list.Items), list.Total, c.want)
		}
	}
	mustStatus(t, "bad enabled", f.call("GET", "/api/v1/tasks?enabled=maybe", nil, nil), 400)
	var v controlplane.TaskView
	mustStatus(t, "view", f.call("POST", "/api/v1/views", `{"project":"ops","name":"daily","filter":{"label":"daily"}}`, &v), 201)
	mustStatus(t, "unknown field", f.call("POST", "/api/v1/views", `{"project":"ops","name":"x","filter":{"colour":"red"}}`, nil), 400)
	mustStatus(t, "no project", f.call("GET", "/api/v1/views", nil, nil), 400)
	var views adminapi.List[controlplane.TaskView]
	mustStatus(t, "views", f.call("GET", "/api/v1/views?project=ops", nil, &views), 200)
	if len(views.Items) != 1 || views.Items[0].Filter.Label != "daily" {
		t.Fatalf("views: %+v", views)
	}
	mustStatus(t, "delete view", f.call("DELETE", "/api/v1/views/"+v.ID, nil, nil), 204)
	mustStatus(t, "delete view again", f.call("DELETE", "/api/v1/views/"+v.ID, nil, nil), 404)
}
