package subs

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ql3/ql3/core/subplan"
	"github.com/ql3/ql3/edge"
)

// Header shapes of real QingLong repositories (JavaScript, Python, shell;
// Quantumult X, Loon and Surge rewrite lines), and four that declare no
// usable schedule.
var shapes = map[string]string{
	"jd_bean.js":     "/*\ncron: 0 0 * * *\n*/\nconst $ = new Env('京豆变动');\n",
	"checkin.js":     "// cron: 5 8 * * *\n// name: 每日签到\n",
	"py/sign.py":     "# -*- coding: utf-8 -*-\n# cron: 30 7,19 * * *\n# new Env('Python 签到')\n",
	"backup.sh":      "#!/usr/bin/env bash\n# cron: 15 3 * * *\n",
	"qx/jd_joy.js":   "/*\n[task_local]\n5 8 * * * https://raw.githubusercontent.com/someone/scripts/main/jd_joy.js, tag=宠汪汪, enabled=true\n*/\n",
	"jd_fruit.js":    "[Script]\ncron \"10 6-18/6 * * *\" script-path=https://example.invalid/jd_fruit.js,tag=东东农场\n",
	"jd_pet.js":      "东东萌宠 = type=cron,cronexp=\"15 6-18/6 * * *\",wake-system=1,timeout=3600,script-path=jd_pet.js\n",
	"fast.js":        "// cron: 0 */30 * * * *\n",
	"a.js":           "/* cron: 10 9,21 * * * */\n",
	"b.js":           "//cron:1 0 * * *\n",
	"c.js":           "/**\n * cron: 45 23 * * 1-5\n */\n",
	"d.py":           "# cron: @daily\n",
	"e.js":           "// cron \"0 12 * * *\" 中午提醒\n",
	"f.js":           "// cron: 20 4 * * *\r\nconst $ = new Env('Windows 写的');\r\n",
	"g.js":           "// cron: 0 9 * * *\nconst $ = new Env(\"京东-签到\", { logLevel: 'info' });\n",
	"mine.js":        "5 8 * * * https://example.invalid/other.js, tag=other\n// cron: 7 7 * * *\n",
	"bad.js":         "// cron: 61 * * * *\n",
	"bad2.js":        "// cron: every day at noon\n",
	"util.js":        "module.exports = { add: (a, b) => a + b };\n",
	"empty.py":       "",
	"README.md":      "# cron: 1 1 * * *  (not a script: filtered by extension)\n",
	"lib/helper.txt": "cron: 2 2 * * *\n",
}

func TestPullsFollowTheRepository(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	r.Write(shapes)
	r.Commit("first")
	e := newEnv(t)
	sub := e.subscribe(r.URL(), nil)

	ch, log, err := e.pull(sub)
	if err != nil {
		t.Fatalf("first pull: %v\n%s", err, log)
	}
	added, skipped := 0, map[string]string{}
	for _, c := range ch {
		switch c.Action {
		case subplan.Add:
			added++
		case subplan.Skip:
			skipped[c.Path] = c.Reason
		}
	}
	if added != 16 {
		t.Errorf("first pull added %d tasks, want 16: %+v", added, ch)
	}
	for p, want := range map[string]string{"bad.js": "not a valid cron expression", "bad2.js": "not a valid cron expression",
		"util.js": "no cron comment", "empty.py": "no cron comment"} {
		if !strings.Contains(skipped[p], want) {
			t.Errorf("%s skipped with %q, want %q", p, skipped[p], want)
		}
	}
	if len(skipped) != 4 {
		t.Errorf("skipped %v", skipped)
	}
	tasks, _ := e.store.SubscriptionPlanTasks(ctx, sub.ID)
	byPath := map[string]subplan.Task{}
	for _, tk := range tasks {
		byPath[tk.Path] = tk
	}
	if tk := byPath["py/sign.py"]; tk.AppliedCron != "30 7,19 * * *" || tk.AppliedName != "Python 签到" {
		t.Errorf("sign.py task %+v", tk)
	}
	task, err := e.store.GetTask(ctx, byPath["qx/jd_joy.js"].ID)
	if err != nil || task.Spec.Script == nil || task.Spec.Script.File != "repo/qx/jd_joy.js" {
		t.Fatalf("jd_joy task %+v %v", task, err)
	}
	if b, err := os.ReadFile(filepath.Join(e.root, "repo", "jd_pet.js")); err != nil || string(b) != shapes["jd_pet.js"] {
		t.Fatalf("pulled file: %q %v", b, err)
	}

	// A person edits fast.js's task (its trigger); a pull that repeats
	// changes nothing.
	fast := byPath["fast.js"].ID
	trs, _ := e.store.ListTriggers(ctx, fast)
	if _, err := e.store.UpdateTrigger(ctx, trs[0].ID, trs[0].Revision, edge.TriggerInput{Expression: "0 0 * * * *", Enabled: true}); err != nil {
		t.Fatal(err)
	}
	if ch, _, err = e.pull(sub); err != nil {
		t.Fatal(err)
	}
	if got := actions(ch); len(got) != 1 || got["fast.js"] != subplan.Diverged {
		t.Fatalf("repeat pull: %v", got)
	}

	// One cron edited, one script added, one deleted (and fast.js's cron
	// edited upstream: its hand-edited task is still left alone).
	r.Write(map[string]string{"checkin.js": "// cron: 6 9 * * *\n// name: 每日签到\n", "new.js": "// cron: 3 3 * * *\n",
		"fast.js": "// cron: 0 */10 * * * *\n"})
	if err := os.Remove(filepath.Join(r.Dir, "backup.sh")); err != nil {
		t.Fatal(err)
	}
	r.Commit("second")
	if ch, _, err = e.pull(sub); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"checkin.js": subplan.Update, "new.js": subplan.Add, "backup.sh": subplan.Disable, "fast.js": subplan.Diverged}
	if got := actions(ch); !equal(got, want) {
		t.Fatalf("second pull plan %v, want %v", got, want)
	}
	trs, _ = e.store.ListTriggers(ctx, byPath["checkin.js"].ID)
	if len(trs) != 1 || trs[0].Expression != "6 9 * * *" {
		t.Errorf("checkin trigger %+v", trs)
	}
	trs, _ = e.store.ListTriggers(ctx, fast)
	if trs[0].Expression != "0 0 * * * *" {
		t.Errorf("hand-edited trigger overwritten: %q", trs[0].Expression)
	}
	if bk, _ := e.store.GetTask(ctx, byPath["backup.sh"].ID); bk.Enabled {
		t.Error("backup.sh task still enabled")
	}
	if _, err := os.Stat(filepath.Join(e.root, "repo", "backup.sh")); !os.IsNotExist(err) {
		t.Errorf("deleted script still in the folder: %v", err)
	}

	// History rewritten: the branch is reset to the first commit and a new
	// commit made on it, then force-pushed (here: the origin's branch moves).
	r.Git("reset", "--quiet", "--hard", "HEAD~1")
	r.Write(map[string]string{"rewritten.js": "// cron: 4 4 * * *\n"})
	head := r.Commit("rewritten")
	if ch, _, err = e.pull(sub); err != nil {
		t.Fatalf("pull after a history rewrite: %v", err)
	}
	got := actions(ch)
	if got["rewritten.js"] != subplan.Add || got["new.js"] != subplan.Disable || got["checkin.js"] != subplan.Update {
		t.Errorf("after the rewrite: %v", got)
	}
	s2, _ := e.store.GetSubscription(ctx, sub.ID)
	if s2.LastCommit != head {
		t.Errorf("last commit %s, want %s", s2.LastCommit, head)
	}
	if _, err := os.Stat(filepath.Join(e.root, "repo", "backup.sh")); err != nil {
		t.Errorf("the rewritten tree is not in place: %v", err)
	}
}

func equal(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// With removeMode delete, a removed script's task is deleted (its history
// stays) and no longer the subscription's; with autoRemoveTasks off it is
// kept as it is.
func TestRemovedScriptsTaskDeletedOrKept(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name       string
		autoRemove bool
		want       string
	}{{"delete", true, subplan.Remove}, {"kept", false, ""}} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRepo(t)
			r.Write(map[string]string{"a.js": "// cron: 1 1 * * *\n", "b.js": "// cron: 2 2 * * *\n"})
			r.Commit("one")
			e := newEnv(t)
			sub := e.subscribe(r.URL(), func(in *edge.NewSubscription) { in.RemoveMode, in.AutoRemove = subplan.RemoveDelete, tc.autoRemove })
			ch, _, err := e.pull(sub)
			if err != nil || len(actions(ch)) != 2 {
				t.Fatalf("first pull %v %v", actions(ch), err)
			}
			if err := os.Remove(filepath.Join(r.Dir, "b.js")); err != nil {
				t.Fatal(err)
			}
			r.Commit("two")
			if ch, _, err = e.pull(sub); err != nil {
				t.Fatal(err)
			}
			want := map[string]string{}
			if tc.want != "" {
				want["b.js"] = tc.want
			}
			if got := actions(ch); !equal(got, want) {
				t.Fatalf("second pull %v, want %v", got, want)
			}
			tasks, _ := e.store.SubscriptionPlanTasks(ctx, sub.ID)
			deleted := 0
			for _, c := range ch {
				if c.Path == "b.js" && c.TaskID != "" {
					if tk, _ := e.store.GetTask(ctx, c.TaskID); tk.Deleted() {
						deleted++
					}
				}
			}
			if tc.autoRemove && (len(tasks) != 1 || deleted != 1) || !tc.autoRemove && (len(tasks) != 2 || deleted != 0) {
				t.Fatalf("tasks of the subscription %d, deleted %d", len(tasks), deleted)
			}
			// Forgetting the subscription drops its cache; its folder and tasks stay.
			if err := e.svc.Delete(ctx, sub.ID, "test"); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(e.work, "repo")); !os.IsNotExist(err) {
				t.Errorf("cache left: %v", err)
			}
			if _, err := os.Stat(filepath.Join(e.root, "repo", "a.js")); err != nil {
				t.Errorf("folder gone: %v", err)
			}
			if left, err := e.store.ListTasks(ctx, edge.TaskFilter{Label: "sub:repo"}); err != nil || len(left.Tasks) != len(tasks) {
				t.Errorf("tasks after forgetting: %d, want %d (%v)", len(left.Tasks), len(tasks), err)
			}
		})
	}
}
