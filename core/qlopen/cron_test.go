package qlopen

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/run"
	"github.com/ql3/ql3/core/spec"
)

func TestCheckCronInput(t *testing.T) {
	s := func(v string) *string { return &v }
	two := 2
	for _, c := range []struct {
		name  string
		in    CronInput
		field string // "" → accepted
		want  []string
	}{
		{"plain", CronInput{Command: "task a.js", Schedule: " 0 8 * * * "}, "", []string{"0 8 * * *"}},
		{"extra", CronInput{Command: "x", Schedule: "0 8 * * *", ExtraSchedules: []Schedule{{"0 9 * * *"}}}, "", []string{"0 8 * * *", "0 9 * * *"}},
		{"no command", CronInput{Schedule: "0 8 * * *"}, "command", nil},
		{"no schedule", CronInput{Command: "x"}, "schedule", nil},
		{"once", CronInput{Command: "x", Schedule: "@once"}, "schedule", nil},
		{"boot", CronInput{Command: "x", Schedule: "@boot"}, "schedule", nil},
		{"labels", CronInput{Command: "x", Schedule: "0 8 * * *", Labels: []string{"a"}}, "labels", nil},
		{"sub", CronInput{Command: "x", Schedule: "0 8 * * *", SubID: new(int64)}, "sub_id", nil},
		{"before", CronInput{Command: "x", Schedule: "0 8 * * *", TaskBefore: s("echo")}, "task_before", nil},
		{"empty before", CronInput{Command: "x", Schedule: "0 8 * * *", TaskBefore: s("")}, "", []string{"0 8 * * *"}},
		{"log name", CronInput{Command: "x", Schedule: "0 8 * * *", LogName: s("a")}, "log_name", nil},
		{"work dir", CronInput{Command: "x", Schedule: "0 8 * * *", WorkDir: s("/tmp")}, "work_dir", nil},
		{"multiple 2", CronInput{Command: "x", Schedule: "0 8 * * *", AllowMultipleInstances: &two}, "allow_multiple_instances", nil},
		{"too many", CronInput{Command: "x", Schedule: "0 8 * * *", ExtraSchedules: make([]Schedule, 3)}, "extra_schedules", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := CheckCronInput(c.in, 3)
			if c.field == "" {
				if err != nil || strings.Join(got, "|") != strings.Join(c.want, "|") {
					t.Fatalf("got %q, %v", got, err)
				}
				return
			}
			var e *errs.Error
			if !errors.As(err, &e) || e.Field != c.field {
				t.Fatalf("want a refusal on %s, got %v", c.field, err)
			}
		})
	}
}

func TestCronOf(t *testing.T) {
	sp := CronSpec(CronInput{Command: "task jd.js", AllowMultipleInstances: new(int)}, nil)
	one := 1
	allow := CronSpec(CronInput{Command: "echo 1", AllowMultipleInstances: &one}, &sp)
	for _, c := range []struct {
		name string
		v    TaskView
		chk  func(Cron) bool
	}{
		{"idle, enabled, two schedules", TaskView{Num: 7, Name: "签到", Spec: sp, Enabled: true, Schedules: []string{"0 8 * * *", "0 9 * * *"}},
			func(c Cron) bool {
				return c.ID == 7 && c.Status == 1 && c.IsDisabled == 0 && c.Schedule == "0 8 * * *" && len(c.ExtraSchedules) == 1 && c.Command == "task jd.js" && c.AllowMultipleInstances == 0
			}},
		{"running", TaskView{Spec: allow, Last: &LastRun{Status: run.RunRunning, CreatedAtMs: 5000}},
			func(c Cron) bool {
				return c.Status == 0 && c.LastExecutionTime == 5 && c.IsDisabled == 1 && c.AllowMultipleInstances == 1 && c.Command == "echo 1"
			}},
		{"queued", TaskView{Spec: sp, Last: &LastRun{Status: run.RunRetryWait}}, func(c Cron) bool { return c.Status == 3 }},
		{"finished", TaskView{Spec: sp, Last: &LastRun{Status: run.RunSucceeded, CreatedAtMs: 1000, FinishedAtMs: 61000}},
			func(c Cron) bool { return c.Status == 1 && c.LastRunningTime == 60 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := CronOf(c.v)
			if !c.chk(got) {
				t.Fatalf("%+v", got)
			}
			// QingLong's clients read these keys; nil slices would be null.
			b, _ := json.Marshal(got)
			if !strings.Contains(string(b), `"labels":[]`) || !strings.Contains(string(b), `"extra_schedules":[`) {
				t.Fatalf("%s", b)
			}
		})
	}
	if sp.Shell == nil || sp.Shell.Shell != spec.ShellBash || sp.Concurrency != spec.DefaultConcurrency {
		t.Fatalf("spec %+v", sp)
	}
}

func TestCronNameAndPaging(t *testing.T) {
	if n := CronName(CronInput{Command: "  task   jd.js  "}); n != "task jd.js" {
		t.Fatalf("name %q", n)
	}
	if n := CronName(CronInput{Command: strings.Repeat("长", 300)}); len([]rune(n)) != 128 {
		t.Fatalf("long name %d", len([]rune(n)))
	}
	for _, c := range []struct {
		page, size string
		p, s       int
		ok         bool
	}{{"", "", 0, 0, true}, {"2", "20", 2, 20, true}, {"1", "", 0, 0, false}, {"0", "5", 0, 0, false}, {"1", "201", 0, 0, false}, {"x", "1", 0, 0, false}} {
		p, s, err := Paging(c.page, c.size, 200)
		if (err == nil) != c.ok || p != c.p || s != c.s {
			t.Errorf("%q %q: %d %d %v", c.page, c.size, p, s, err)
		}
	}
	if CheckListQuery("{}", "", "") != nil || CheckListQuery(`{"status":[0]}`, "", "") == nil || CheckListQuery("", "name", "") == nil {
		t.Fatal("list query checks")
	}
}

func FuzzCheckCronInput(f *testing.F) {
	for _, s := range []string{`{"command":"x","schedule":"0 8 * * *"}`, `{"schedule":"@once"}`, `{"command":"a","schedule":"b","extra_schedules":[{"schedule":"c"}]}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		var in CronInput
		if json.Unmarshal([]byte(body), &in) != nil {
			return
		}
		got, err := CheckCronInput(in, 64)
		if err == nil && (len(got) != 1+len(in.ExtraSchedules) || got[0] == "") {
			t.Fatalf("%q accepted as %q", body, got)
		}
		if n := CronName(in); len([]rune(n)) > 128 {
			t.Fatalf("name of %d characters", len([]rune(n)))
		}
	})
}

func TestSystemRefusal(t *testing.T) {
	for path, want := range map[string]string{
		"/open/system/config/timezone": "time zone",
		"/open/system/config":          "flags",
		"/open/system/command-run":     "tasks",
		"/open/system/whatever":        "ADR 0057",
	} {
		if got := SystemRefusal("PUT", path); !strings.Contains(got, want) || !strings.Contains(got, path) {
			t.Errorf("%s: %q", path, got)
		}
	}
	if s := SystemInfo("v1"); !s.IsInitialized || s.Version != "v1" {
		t.Fatalf("%+v", s)
	}
}
