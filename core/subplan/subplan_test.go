package subplan

import (
	"reflect"
	"strings"
	"testing"

	"github.com/ql3/ql3/core/scriptmeta"
)

func script(p, src string) Script { return Script{Path: p, Header: scriptmeta.Parse(p, []byte(src))} }

// apply plays a plan onto the task list the way a store would, so a test
// can pull twice.
func apply(t *testing.T, tasks []Task, changes []Change) []Task {
	t.Helper()
	byID := map[string]*Task{}
	var out []Task
	for _, tk := range tasks {
		out = append(out, tk)
	}
	for i := range out {
		byID[out[i].ID] = &out[i]
	}
	for _, c := range changes {
		switch c.Action {
		case Add:
			out = append(out, Task{ID: "t-" + c.Path, Path: c.Path, AppliedName: c.Name, AppliedCron: c.Cron, CurrentName: c.Name, CurrentCron: c.Cron, Enabled: true})
		case Update:
			tk := byID[c.TaskID]
			tk.AppliedName, tk.AppliedCron, tk.CurrentName, tk.CurrentCron = c.Name, c.Cron, c.Name, c.Cron
		case Disable:
			byID[c.TaskID].Enabled = false
		case Remove:
			for i := range out {
				if out[i].ID == c.TaskID {
					out = append(out[:i], out[i+1:]...)
					break
				}
			}
		}
	}
	return out
}

func actions(cs []Change) map[string]string {
	m := map[string]string{}
	for _, c := range cs {
		m[c.Path] = c.Action
	}
	return m
}

func TestTwoPulls(t *testing.T) {
	o := Options{AutoAdd: true, AutoRemove: true}
	first := []Script{
		script("jd_bean.js", "// cron: 5 8 * * *\nconst $ = new Env('京豆');"),
		script("jd_fruit.js", "// cron: 10 6 * * *\nconst $ = new Env('农场');"),
		script("jd_pet.js", "// cron: 15 6 * * *"),
		script("utils.js", "module.exports = {}"),
	}
	plan1, err := Plan(first, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	if got := actions(plan1); !reflect.DeepEqual(got, map[string]string{"jd_bean.js": Add, "jd_fruit.js": Add, "jd_pet.js": Add, "utils.js": Skip}) {
		t.Fatalf("first pull %v", got)
	}
	tasks := apply(t, nil, plan1)
	if again, _ := Plan(first, tasks, o); countMutating(again) != 0 {
		t.Fatalf("re-planning after apply mutates: %+v", again)
	}

	// The next commit edits one cron, adds one script, deletes one; a
	// person renamed the fruit task in the meantime.
	second := []Script{
		script("jd_bean.js", "// cron: 5 9 * * *\nconst $ = new Env('京豆');"),
		script("jd_fruit.js", "// cron: 20 6 * * *\nconst $ = new Env('农场');"),
		script("jd_new.js", "// cron: 0 12 * * *"),
	}
	for i := range tasks {
		if tasks[i].Path == "jd_fruit.js" {
			tasks[i].CurrentName = "my farm"
		}
	}
	plan2, err := Plan(second, tasks, o)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"jd_bean.js": Update, "jd_fruit.js": Diverged, "jd_new.js": Add, "jd_pet.js": Disable}
	if got := actions(plan2); !reflect.DeepEqual(got, want) {
		t.Fatalf("second pull %v, want %v", got, want)
	}
	for _, c := range plan2 {
		if c.Path == "jd_bean.js" && (c.Cron != "5 9 * * *" || c.Name != "京豆") {
			t.Fatalf("update %+v", c)
		}
	}
	tasks = apply(t, tasks, plan2)
	if again, _ := Plan(second, tasks, o); countMutating(again) != 0 {
		t.Fatalf("second re-plan mutates: %+v", again)
	}
}

func countMutating(cs []Change) int {
	n := 0
	for _, c := range cs {
		if c.Mutates() {
			n++
		}
	}
	return n
}

func TestOptions(t *testing.T) {
	tasks := []Task{{ID: "a", Path: "gone.js", AppliedName: "g", AppliedCron: "0 0 * * *", CurrentName: "g", CurrentCron: "0 0 * * *", Enabled: true}}
	scripts := []Script{script("new.js", "// cron: 1 1 * * *"), script("nocron.js", "x")}
	for _, tc := range []struct {
		o    Options
		want map[string]string
	}{
		{Options{}, map[string]string{"new.js": Skip, "gone.js": Keep, "nocron.js": Skip}},
		{Options{AutoAdd: true, AutoRemove: true, RemoveMode: RemoveDelete}, map[string]string{"new.js": Add, "gone.js": Remove, "nocron.js": Skip}},
		{Options{AutoAdd: true, DefaultCron: "0 3 * * *"}, map[string]string{"new.js": Add, "gone.js": Keep, "nocron.js": Add}},
	} {
		got, err := Plan(scripts, tasks, tc.o)
		if err != nil {
			t.Fatal(err)
		}
		if a := actions(got); !reflect.DeepEqual(a, tc.want) {
			t.Errorf("%+v: %v, want %v", tc.o, a, tc.want)
		}
	}
	if _, err := Plan(nil, nil, Options{RemoveMode: "shred"}); err == nil || !strings.Contains(err.Error(), "removeMode") {
		t.Errorf("bad mode: %v", err)
	}
	if _, err := Plan([]Script{script("a.js", ""), script("a.js", "")}, nil, Options{}); err == nil {
		t.Error("a path listed twice accepted")
	}
	// A hand-edited task whose script is gone is left alone, not removed.
	edited := []Task{{ID: "b", Path: "gone.js", AppliedCron: "0 0 * * *", CurrentCron: "0 1 * * *", Enabled: true}}
	got, _ := Plan(nil, edited, Options{AutoRemove: true, RemoveMode: RemoveDelete})
	if len(got) != 1 || got[0].Action != Diverged {
		t.Errorf("%+v", got)
	}
}

func TestFilter(t *testing.T) {
	f := Filter{Include: []string{"jd_*", "**/tools/*.py"}, Exclude: []string{"*_test.js"}, Extensions: []string{".js", ".py"}}
	if err := f.Validate(); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]bool{
		"jd_bean.js": true, "sub/jd_bean.js": true, "jd_bean_test.js": false, "jx_bean.js": false,
		"jd_notes.md": false, "a/tools/x.py": true, "tools.py": false,
	} {
		if got := f.Match(p); got != want {
			t.Errorf("Match(%q) = %v", p, got)
		}
	}
	if !(Filter{}).Match("anything/at/all.bin") {
		t.Error("an empty filter must select everything")
	}
	for _, bad := range []Filter{{Include: []string{"["}}, {Extensions: []string{"js"}}, {Include: []string{""}}, {Exclude: make([]string, 65)}} {
		if err := bad.Validate(); err == nil {
			t.Errorf("Validate(%+v) accepted", bad)
		}
	}
}
