package scriptpath

import (
	"reflect"
	"strings"
	"testing"
)

func TestClean(t *testing.T) {
	ok := map[string]string{
		"a.js": "a.js", "dir/b.py": "dir/b.py", "dir/sub/": "dir/sub", "京东/签到.js": "京东/签到.js",
		".hidden": ".hidden", "a..b.js": "a..b.js", "with space.sh": "with space.sh",
	}
	for in, want := range ok {
		got, err := Clean("path", in, false)
		if err != nil || got != want {
			t.Errorf("Clean(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if got, err := Clean("path", "", true); err != nil || got != "" {
		t.Errorf("Clean(root) = %q, %v", got, err)
	}
	bad := map[string]string{
		"":                             "must name a file",
		"../x":                         `must not contain ".."`,
		"a/../../x":                    `must not contain ".."`,
		"a/./b":                        `must not contain "."`,
		"/etc/passwd":                  "relative",
		"a\x00b":                       "NUL",
		"a\\b":                         "separator",
		"a//b":                         "empty element",
		"a\nb":                         "control",
		"\xff":                         "UTF-8",
		strings.Repeat("a/", 33) + "x": "levels deep, limit is 32",
		strings.Repeat("x", 256):       "element of 256 bytes, limit is 255",
		strings.Repeat("ab/", 400):     "bytes, limit is 1024",
	}
	for in, want := range bad {
		if _, err := Clean("path", in, false); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Clean(%.40q) = %v, want an error containing %q", in, err, want)
		}
	}
}

func TestDirBase(t *testing.T) {
	for _, tc := range []struct{ p, dir, base string }{{"a.js", "", "a.js"}, {"x/y/a.js", "x/y", "a.js"}} {
		if Dir(tc.p) != tc.dir || Base(tc.p) != tc.base {
			t.Errorf("Dir/Base(%q) = %q/%q", tc.p, Dir(tc.p), Base(tc.p))
		}
	}
}

func TestInterpreters(t *testing.T) {
	it, err := NewInterpreters([]string{".py=/opt/py/bin/python3", ".rb=ruby"})
	if err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string][]string{
		"a.js": {"node"}, "b.MJS": {"node"}, "c.cjs": {"node"}, "d/e.py": {"/opt/py/bin/python3"},
		"f.sh": {"bash"}, "g.ts": {"tsx", "ts-node"}, "h.rb": {"ruby"},
	} {
		got, err := it.For("file", file)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("For(%q) = %v, %v; want %v", file, got, err, want)
		}
	}
	if _, err := DefaultInterpretersTable().For("file", "x.exe"); err == nil || !strings.Contains(err.Error(), `no interpreter for ".exe" files; supported: .cjs .js .mjs .py .sh .ts`) {
		t.Errorf("For(x.exe) = %v", err)
	}
	if _, err := DefaultInterpretersTable().For("file", "Makefile"); err == nil || !strings.Contains(err.Error(), "has no extension") {
		t.Errorf("For(Makefile) = %v", err)
	}
	for _, o := range []string{"py=python", ".py=", "=x", ".p y=x", ".py=a\x00b"} {
		if _, err := NewInterpreters([]string{o}); err == nil {
			t.Errorf("NewInterpreters(%q) accepted", o)
		}
	}
	if DefaultInterpreters[".py"][0] != "python3" {
		t.Fatal("an override changed the defaults")
	}
}

func TestParseTaskCommand(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		want TaskCommand
	}{
		{"task jd_bean.js", TaskCommand{File: "jd_bean.js", Args: []string{}}},
		{"task ./dir/sign.py a b", TaskCommand{File: "dir/sign.py", Args: []string{"a", "b"}}},
		{"task  x.js  'two words'  \"q\\\"d\"", TaskCommand{File: "x.js", Args: []string{"two words", `q"d`}}},
		{"task -l -m 300 x.js now", TaskCommand{File: "x.js", MaxTimeSec: 300, Mode: "now", Args: []string{}}},
		{"task x.js conc JD_COOKIE", TaskCommand{File: "x.js", Mode: "conc", ModeEnv: "JD_COOKIE"}},
		{"task x.js desi JD_COOKIE 1 3-4,6", TaskCommand{File: "x.js", Mode: "desi", ModeEnv: "JD_COOKIE", Accounts: []int{1, 3, 4, 6}}},
		{"ql3-task 京东/签到.js", TaskCommand{File: "京东/签到.js", Args: []string{}}},
	} {
		got, ok, err := ParseTaskCommand(tc.cmd)
		if !ok || err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseTaskCommand(%q) = %+v, %v, %v; want %+v", tc.cmd, got, ok, err, tc.want)
		}
	}
	for _, cmd := range []string{"node x.js", "task x.js | tee log", "task x.js; rm -rf /", "task $FILE", "task \"$X\"", "echo task", "task x.js > out", "task 'unterminated", ""} {
		if _, ok, err := ParseTaskCommand(cmd); ok || err != nil {
			t.Errorf("ParseTaskCommand(%q) = ok %v, err %v; want not a task command", cmd, ok, err)
		}
	}
	for cmd, want := range map[string]string{
		"task":                      "needs a script file",
		"task -m":                   "needs a number",
		"task -m 0 x.js":            "1..604800",
		"task -x x.js":              "unknown option",
		"task ../x.js":              `must not contain ".."`,
		"task /ql/scripts/x.js":     "relative",
		"task x.js desi JD":         "needs account numbers",
		"task x.js conc":            "needs an env name",
		"task x.js desi JD 0":       "1..10000",
		"task x.js desi JD 5-2":     "1..10000",
		"task x.js desi JD 1-99999": "1..10000",
	} {
		if _, ok, err := ParseTaskCommand(cmd); !ok || err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseTaskCommand(%q) = ok %v, %v; want an error containing %q", cmd, ok, err, want)
		}
	}
}

func TestRandomDelayMs(t *testing.T) {
	const max = 300_000
	a := RandomDelayMs("ql3:cron:v1:t:1:1000", max)
	if a != RandomDelayMs("ql3:cron:v1:t:1:1000", max) {
		t.Fatal("not deterministic")
	}
	seen := map[int64]bool{}
	for i := 0; i < 200; i++ {
		d := RandomDelayMs("ql3:cron:v1:t:1:"+strings.Repeat("9", i%7)+string(rune('a'+i%26))+string(rune('A'+i/26)), max)
		if d < 0 || d >= max {
			t.Fatalf("delay %d outside [0, %d)", d, max)
		}
		seen[d/30_000] = true
	}
	if len(seen) < 8 {
		t.Fatalf("200 occurrences fell into %d of 10 buckets: not spread", len(seen))
	}
	if RandomDelayMs("k", 0) != 0 || RandomDelayMs("k", -5) != 0 {
		t.Fatal("a zero or negative max must give no delay")
	}
}

func FuzzClean(f *testing.F) {
	for _, s := range []string{"a.js", "../x", "a/b/../c", "a\x00", "京东/x.py", "a//b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		got, err := Clean("path", p, false)
		if err != nil {
			return
		}
		for _, s := range strings.Split(got, "/") {
			if s == "" || s == "." || s == ".." {
				t.Fatalf("Clean(%q) = %q holds %q", p, got, s)
			}
		}
		if strings.ContainsAny(got, "\x00\\") || strings.HasPrefix(got, "/") {
			t.Fatalf("Clean(%q) = %q", p, got)
		}
		if again, err := Clean("path", got, false); err != nil || again != got {
			t.Fatalf("Clean is not idempotent on %q: %q, %v", got, again, err)
		}
	})
}

func FuzzParseTaskCommand(f *testing.F) {
	for _, s := range []string{"task x.js", "task -m 5 a/b.py now", "task x.js desi A 1-3", "task 'a b.js' \"c\""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		tc, ok, err := ParseTaskCommand(cmd)
		if !ok || err != nil {
			return
		}
		if _, cerr := Clean("file", tc.File, false); cerr != nil {
			t.Fatalf("accepted file %q fails Clean: %v", tc.File, cerr)
		}
		if len(tc.Accounts) > maxAccounts {
			t.Fatalf("%d accounts", len(tc.Accounts))
		}
	})
}
