package qlimport

import (
	"reflect"
	"strings"
	"testing"
)

func find[T any](t *testing.T, items []T, id func(T) int64, want int64) T {
	t.Helper()
	for _, it := range items {
		if id(it) == want {
			return it
		}
	}
	t.Fatalf("no item %d", want)
	var zero T
	return zero
}

func taskOf(t *testing.T, p Plan, id int64) TaskPlan {
	return find(t, p.Tasks, func(x TaskPlan) int64 { return x.SourceID }, id)
}

func TestTasks(t *testing.T) {
	src := Source{Crontabs: []Crontab{
		{ID: 1, Name: "京东签到", Command: "task jd_sign.js", Schedule: "5 8 * * *", Labels: []string{"jd"}},
		{ID: 2, Name: "multi", Command: "task /ql/data/scripts/dir/a.py arg1 'two words'", Schedule: "0 9 * * *", ExtraSchedules: []string{"0 21 * * *", "0 9 * * *"}, AllowMultipleInstances: true},
		{ID: 3, Name: "", Command: "curl -fsS https://example.invalid/ping", Schedule: "*/5 * * * *", IsDisabled: true},
		{ID: 4, Name: "uses helpers", Command: "cd $QL_DIR && bash x.sh", Schedule: "0 0 * * *"},
		{ID: 5, Name: "wrapped", Command: "task w.js", Schedule: "0 1 * * *", TaskBefore: "echo before", TaskAfter: "echo after"},
		{ID: 6, Name: "system", Command: "ql update", Schedule: "0 3 * * *", IsSystem: true},
		{ID: 7, Name: "once", Command: "task x.js", Schedule: "@once"},
		{ID: 8, Name: "bad cron", Command: "task x.js", Schedule: "61 * * * *"},
		{ID: 9, Name: "per account", Command: "task x.js conc JD_COOKIE", Schedule: "0 2 * * *"},
		{ID: 10, Name: "from sub", Command: "task repo_x.js", Schedule: "0 4 * * *", SubID: 3},
		{ID: 11, Name: "repo cmd", Command: "ql repo https://example.invalid/r.git jd_", Schedule: "0 5 * * *"},
		{ID: 12, Name: "京东签到", Command: "task jd_sign2.js", Schedule: "5 9 * * *"},
		{ID: 13, Name: "empty", Command: "  ", Schedule: "0 0 * * *"},
		{ID: 14, Name: "timed", Command: "task -m 300 t.ts now", Schedule: "0 0 * * 0"},
		{ID: 15, Name: "pyc", Command: "task x.pyc", Schedule: "0 0 * * *"},
		{ID: 16, Name: "seconds", Command: "task s.js", Schedule: "*/30 * * * * *"},
		{ID: 17, Name: "hell\u043e", Command: "task s.js", Schedule: "0 0 * * *"},
		{ID: 18, Name: "daily macro", Command: "task s.js", Schedule: "@daily"},
		{ID: 19, Name: "missing file", Command: "task gone.js", Schedule: "0 0 * * *"},
	}, Files: scriptFiles("jd_sign.js", "dir/a.py", "x.js", "w.js", "jd_sign2.js", "t.ts", "x.pyc", "s.js")}
	p, err := Inspect(src, "Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		id     int64
		class  Class
		reason string
	}{
		{1, Lossless, ""}, {2, Lossless, ""}, {3, Lossless, "empty name: imported as Legacy Crontab 3"},
		{4, RequiresShell, "QingLong's shell environment"}, {5, RequiresShell, "task_before/task_after"},
		{6, RequiresManual, "system task"}, {7, RequiresManual, "@once"}, {8, Malformed, `"61 * * * *" does not parse`},
		{9, RequiresManual, "once per account"}, {10, RequiresManual, "subscription 3"}, {11, RequiresManual, "ql repo/raw"},
		{12, Lossless, `imported as "京东签到 #12"`}, {13, Malformed, "empty command"}, {14, Lossless, ""},
		{15, RequiresManual, `no interpreter for ".pyc"`}, {16, Lossless, ""}, {17, RequiresManual, "must not mix Latin and Cyrillic"},
		{18, RequiresManual, "macro @daily"}, {19, RequiresManual, "scripts/gone.js is not copied"},
	} {
		got := taskOf(t, p, tc.id)
		if got.Class != tc.class || tc.reason != "" && !strings.Contains(strings.Join(got.Reasons, "; "), tc.reason) {
			t.Errorf("task %d: %s %q, want %s with %q", tc.id, got.Class, got.Reasons, tc.class, tc.reason)
		}
	}
	if a := taskOf(t, p, 1); a.Kind != "script" || !reflect.DeepEqual(a.Script, &ScriptCall{File: "jd_sign.js", Args: []string{}}) ||
		a.Concurrency != "replace" || !reflect.DeepEqual(a.Labels, []string{"jd"}) || !a.Enabled {
		t.Errorf("task 1 mapping %+v", a)
	}
	if b := taskOf(t, p, 2); !reflect.DeepEqual(b.Script, &ScriptCall{File: "dir/a.py", Args: []string{"arg1", "two words"}}) ||
		!reflect.DeepEqual(b.Schedules, []string{"0 9 * * *", "0 21 * * *"}) || b.Concurrency != "allow" {
		t.Errorf("task 2 mapping %+v", b)
	}
	if c := taskOf(t, p, 3); c.Kind != "shell" || c.Enabled || c.Name != "Legacy Crontab 3" {
		t.Errorf("task 3 mapping %+v", c)
	}
	if w := taskOf(t, p, 5); w.Kind != "shell" || w.Shell != "echo before\ntask w.js\necho after" {
		t.Errorf("task 5 mapping %+v", w)
	}
	if m := taskOf(t, p, 14); m.TimeoutMs != 300_000 || m.Script.File != "t.ts" {
		t.Errorf("task 14 mapping %+v", m)
	}
	if s := taskOf(t, p, 6); s.Kind != "" || s.Shell != "" || s.Script != nil {
		t.Errorf("a task not created carries a mapping: %+v", s)
	}
	if p.Counts["tasks"][Lossless] != 6 || p.Counts["tasks"][Malformed] != 2 {
		t.Errorf("counts %v", p.Counts["tasks"])
	}
}

// scriptFiles is a scripts folder holding paths (and their folders).
func scriptFiles(paths ...string) []File {
	var out []File
	dirs := map[string]bool{}
	for _, p := range paths {
		if i := strings.LastIndexByte(p, '/'); i > 0 && !dirs[p[:i]] {
			dirs[p[:i]] = true
			out = append(out, File{Path: p[:i], Mode: ModeDir})
		}
		out = append(out, File{Path: p, Mode: ModeFile, Links: 1, Size: 10, SHA256: strings.Repeat("a", 64)})
	}
	return out
}

func TestTooManySchedules(t *testing.T) {
	extra := make([]string, MaxTriggers)
	for i := range extra {
		extra[i] = "0 0 * * *"
	}
	p, _ := Inspect(Source{Crontabs: []Crontab{{ID: 1, Name: "x", Command: "task x.js", Schedule: "0 1 * * *", ExtraSchedules: extra}}}, "UTC")
	if got := p.Tasks[0]; got.Class != RequiresManual || !strings.Contains(got.Reasons[0], "65 schedules: a ql3 task takes at most 64") {
		t.Fatalf("%+v", got)
	}
}

func TestEnvOrderAndClasses(t *testing.T) {
	rows := []Env{
		{ID: 1, Name: "JD_COOKIE", Value: "c1", Position: 100, CreatedAtMs: 10},
		{ID: 2, Name: "JD_COOKIE", Value: "c2", Position: 300, CreatedAtMs: 20},
		{ID: 3, Name: "JD_COOKIE", Value: "c3", Position: 100, CreatedAtMs: 5},
		{ID: 4, Name: "JD_COOKIE", Value: "pinned", Position: 1, Pinned: true, CreatedAtMs: 30},
		{ID: 5, Name: "JD_COOKIE", Value: "off", Position: 999, Disabled: true},
		{ID: 6, Name: "bad-name", Value: "x"},
		{ID: 7, Name: "QL3_TOKEN", Value: "x"},
		{ID: 8, Name: "NUL", Value: "a\x00b"},
		{ID: 9, Name: "BIG", Value: strings.Repeat("x", MaxEnvValueBytes+1)},
		{ID: 10, Name: "SPACED", Value: " padded "},
		{ID: 11, Name: "SPACED_OFF", Value: " padded ", Disabled: true},
		{ID: 12, Name: "中文", Value: "x"},
	}
	want := map[string]string{"JD_COOKIE": "pinned&c2&c3&c1", "NUL": "a\x00b", "BIG": strings.Repeat("x", MaxEnvValueBytes+1),
		"SPACED": " padded ", "QL3_TOKEN": "x"}
	if got := JoinedValues(rows); !reflect.DeepEqual(got, want) {
		t.Errorf("JoinedValues keys %d, JD_COOKIE %q", len(got), got["JD_COOKIE"])
	}
	p, err := Inspect(Source{Envs: rows}, "UTC")
	if err != nil {
		t.Fatal(err)
	}
	env := func(id int64) EnvPlan { return find(t, p.Envs, func(e EnvPlan) int64 { return e.SourceID }, id) }
	for id, rank := range map[int64]int{4: 0, 5: 1, 2: 2, 3: 3, 1: 4} {
		if got := env(id).Rank; got != rank {
			t.Errorf("env %d rank %d, want %d", id, got, rank)
		}
	}
	for _, tc := range []struct {
		id     int64
		class  Class
		reason string
	}{
		{1, Lossless, ""}, {5, Lossless, ""}, {6, RequiresManual, "not a shell variable name"}, {7, RequiresManual, "QL3_"},
		{8, RequiresManual, "NUL"}, {9, RequiresManual, "limit is 131072"}, {10, RequiresManual, "white space"},
		{11, Lossless, ""}, {12, RequiresManual, "not a shell variable name"},
	} {
		got := env(tc.id)
		if got.Class != tc.class || tc.reason != "" && !strings.Contains(strings.Join(got.Reasons, "; "), tc.reason) {
			t.Errorf("env %d: %s %q, want %s %q", tc.id, got.Class, got.Reasons, tc.class, tc.reason)
		}
	}
	if e := env(5); e.Enabled {
		t.Error("a disabled row must stay disabled")
	}
}

func TestEnvJoinedLimit(t *testing.T) {
	half := strings.Repeat("v", MaxEnvJoinedBytes/2)
	p, _ := Inspect(Source{Envs: []Env{{ID: 1, Name: "A", Value: half}, {ID: 2, Name: "A", Value: half}}}, "UTC")
	for _, e := range p.Envs {
		if e.Class != RequiresManual || !strings.Contains(e.Reasons[0], "join to 131073 bytes") {
			t.Fatalf("%+v", e)
		}
	}
}

func TestConfigExports(t *testing.T) {
	text := "## config\nexport A=\"1\"\nexport B='x y'  # comment\nexport C=plain\nexport D=\"$HOME/x\"\nexport E=$(cat f)\nF=1\nexport QL3_X=1\nexport G=\"a\" ; rm -rf /\n"
	ex, ignored := ParseConfigExports(text)
	got := map[string]string{}
	for _, e := range ex {
		got[e.Name] = e.Value
	}
	if !reflect.DeepEqual(got, map[string]string{"A": "1", "B": "x y", "C": "plain", "QL3_X": "1"}) || ignored != 4 {
		t.Fatalf("exports %v, ignored %d", got, ignored)
	}
	p, _ := Inspect(Source{ConfigExports: ex}, "UTC")
	if p.Counts["configDrafts"][Lossless] != 3 || p.Counts["configDrafts"][RequiresManual] != 1 {
		t.Fatalf("%v", p.Counts["configDrafts"])
	}
}

func TestSubscriptionsAndDependencies(t *testing.T) {
	p, err := Inspect(Source{
		Subscriptions: []Subscription{
			{ID: 1, Name: "faker", Alias: "faker2", Type: "public-repo", URL: "https://example.invalid/faker2.git", Branch: "main", Schedule: "0 */6 * * *", Whitelist: "jd_|jx_", Blacklist: "test", Extensions: "js py", AutoAddCron: true, AutoDelCron: true},
			{ID: 2, Name: "regex", Alias: "rx", URL: "https://example.invalid/rx.git", Schedule: "0 0 * * *", Whitelist: "^(jd|jx)_.*\\.js$"},
			{ID: 3, Name: "private", Alias: "p", Type: "private-repo", URL: "git@example.invalid:me/p.git", Schedule: "0 0 * * *", HasCredential: true},
			{ID: 4, Name: "interval", Alias: "i", URL: "https://example.invalid/i.js", Type: "file", ScheduleType: "interval"},
			{ID: 5, Name: "bad", Alias: "../x", URL: "https://example.invalid/b.git", Schedule: "nope"},
		},
		Dependences: []Dependence{
			{ID: 1, Name: "axios@1.6.0", Type: 0}, {ID: 2, Name: "@scope/pkg@2", Type: 0}, {ID: 3, Name: "requests==2.31.0", Type: 1},
			{ID: 4, Name: "curl", Type: 2}, {ID: 5, Name: "a b", Type: 0}, {ID: 6, Name: "x", Type: 9}, {ID: 7, Name: "", Type: 1},
		},
	}, "Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	sub := func(id int64) SubscriptionPlan {
		return find(t, p.Subscriptions, func(s SubscriptionPlan) int64 { return s.SourceID }, id)
	}
	if s := sub(1); s.Class != Lossless || !reflect.DeepEqual(s.Include, []string{"*jd_*", "*jx_*"}) || !reflect.DeepEqual(s.Extensions, []string{".js", ".py"}) || s.Folder != "faker2" {
		t.Errorf("sub 1 %+v", s)
	}
	for id, want := range map[int64]string{2: "regular expression", 3: "credentials are not copied", 4: "interval", 5: "does not parse"} {
		if s := sub(id); s.Class == Lossless || !strings.Contains(strings.Join(s.Reasons, "; "), want) {
			t.Errorf("sub %d %s %q, want %q", id, s.Class, s.Reasons, want)
		}
	}
	dep := func(id int64) DependencyPlan {
		return find(t, p.Dependencies, func(d DependencyPlan) int64 { return d.SourceID }, id)
	}
	for id, want := range map[int64][3]string{1: {"node", "axios", "1.6.0"}, 2: {"node", "@scope/pkg", "2"}, 3: {"python", "requests", "2.31.0"}, 4: {"linux", "curl", ""}} {
		if d := dep(id); d.Class != Lossless || d.Kind != want[0] || d.Name != want[1] || d.Version != want[2] {
			t.Errorf("dep %d %+v", id, d)
		}
	}
	if dep(5).Class != RequiresManual || dep(6).Class != Malformed || dep(7).Class != Malformed {
		t.Errorf("deps 5-7: %s %s %s", dep(5).Class, dep(6).Class, dep(7).Class)
	}
}

func TestFiles(t *testing.T) {
	sha := strings.Repeat("a", 64)
	p, _ := Inspect(Source{Files: []File{
		{Path: "a.js", Mode: ModeFile, Size: 10, Links: 1, SHA256: sha},
		{Path: "dir", Mode: ModeDir},
		{Path: "dir/link", Mode: ModeSymlink},
		{Path: "dir/fifo", Mode: ModeSpecial},
		{Path: "hard.js", Mode: ModeFile, Links: 2, SHA256: sha},
		{Path: "open.js", Mode: ModeFile, Links: 1, Writable: true, SHA256: sha},
		{Path: "huge.bin", Mode: ModeFile, Links: 1, Size: 64<<20 + 1, SHA256: sha},
	}}, "UTC")
	want := map[string]Class{"a.js": Lossless, "dir": Lossless, "dir/link": RequiresManual, "dir/fifo": RequiresManual,
		"hard.js": RequiresManual, "open.js": RequiresManual, "huge.bin": RequiresManual}
	for _, f := range p.Files {
		if f.Class != want[f.Path] {
			t.Errorf("%s: %s %q", f.Path, f.Class, f.Reasons)
		}
	}
}

// TestDigestBindsEverything: the same source gives the same digest; any
// change, including an env value the plan never shows, changes it.
func TestDigestBindsEverything(t *testing.T) {
	base := func() Source {
		return Source{
			Crontabs: []Crontab{{ID: 1, Name: "a", Command: "task a.js", Schedule: "0 0 * * *"}},
			Envs:     []Env{{ID: 1, Name: "A", Value: "secret-1"}},
			Files:    []File{{Path: "a.js", Mode: ModeFile, Links: 1, SHA256: strings.Repeat("b", 64)}},
		}
	}
	p1, _ := Inspect(base(), "Asia/Shanghai")
	p2, _ := Inspect(base(), "Asia/Shanghai")
	if p1.Digest != p2.Digest || !strings.HasPrefix(p1.Digest, "sha256:") {
		t.Fatalf("digest not stable: %s %s", p1.Digest, p2.Digest)
	}
	changes := map[string]func(*Source){
		"env value":   func(s *Source) { s.Envs[0].Value = "secret-2" },
		"schedule":    func(s *Source) { s.Crontabs[0].Schedule = "0 1 * * *" },
		"file digest": func(s *Source) { s.Files[0].SHA256 = strings.Repeat("c", 64) },
		"disabled":    func(s *Source) { s.Crontabs[0].IsDisabled = true },
	}
	for name, change := range changes {
		s := base()
		change(&s)
		p, _ := Inspect(s, "Asia/Shanghai")
		if p.Digest == p1.Digest {
			t.Errorf("%s changed but the digest did not", name)
		}
	}
	if p, _ := Inspect(base(), "UTC"); p.Digest == p1.Digest {
		t.Error("the zone is not bound by the digest")
	}
	if _, err := Inspect(base(), ""); err == nil || !strings.Contains(err.Error(), "zone: is required") {
		t.Errorf("no zone: %v", err)
	}
	if _, err := Inspect(base(), "Local"); err == nil {
		t.Error("the host's Local zone accepted")
	}
}

func FuzzParseConfigExports(f *testing.F) {
	f.Add("export A=\"1\"\nexport B='x'\nexport C=$(id)\n")
	f.Fuzz(func(t *testing.T, text string) {
		ex, _ := ParseConfigExports(text)
		for _, e := range ex {
			if !posixName.MatchString(e.Name) || strings.ContainsAny(e.Value, "\n") {
				t.Fatalf("accepted %+v", e)
			}
		}
	})
}
