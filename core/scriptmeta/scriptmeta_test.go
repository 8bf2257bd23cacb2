package scriptmeta

import (
	"strings"
	"testing"
)

// The shapes below are the ones scripts in public QingLong repositories
// carry in their headers (JavaScript, Python and shell), including the
// Quantumult X, Loon and Surge rewrite lines that name the script.
func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, file, src                  string
		cron, cronFrom, display, nameFrm string
		skip                             string
	}{
		{name: "js cron marker", file: "jd_bean.js",
			src:  "/*\ncron: 0 0 * * *\n*/\nconst $ = new Env('京豆变动');\n",
			cron: "0 0 * * *", cronFrom: FromCronMarker, display: "京豆变动", nameFrm: FromNewEnv},
		{name: "line comment cron marker", file: "checkin.js",
			src:  "// cron: 5 8 * * *\n// name: 每日签到\n",
			cron: "5 8 * * *", cronFrom: FromCronMarker, display: "每日签到", nameFrm: FromNameMarker},
		{name: "python hash comment", file: "sign.py",
			src:  "# -*- coding: utf-8 -*-\n# cron: 30 7,19 * * *\n# new Env('Python 签到')\n",
			cron: "30 7,19 * * *", cronFrom: FromCronMarker, display: "Python 签到", nameFrm: FromNewEnv},
		{name: "shell script", file: "backup.sh",
			src:  "#!/usr/bin/env bash\n# cron: 15 3 * * *\n",
			cron: "15 3 * * *", cronFrom: FromCronMarker, display: "backup.sh", nameFrm: FromFileName},
		{name: "quantumult x rewrite line", file: "jd_bean.js",
			src:  "/*\n[task_local]\n#京豆\n5 8 * * * https://raw.githubusercontent.com/someone/scripts/main/jd_bean.js, tag=京豆, enabled=true\n*/\nconst $ = new Env(\"京豆\");\n",
			cron: "5 8 * * *", cronFrom: FromScriptLine, display: "京豆", nameFrm: FromNewEnv},
		{name: "loon cron line", file: "jd_fruit.js",
			src:  "[Script]\ncron \"10 6-18/6 * * *\" script-path=https://example.invalid/jd_fruit.js,tag=东东农场\n",
			cron: "10 6-18/6 * * *", cronFrom: FromScriptLine, display: "jd_fruit.js", nameFrm: FromFileName},
		{name: "surge cronexp line", file: "jd_pet.js",
			src:  "东东萌宠 = type=cron,cronexp=\"15 6-18/6 * * *\",wake-system=1,timeout=3600,script-path=jd_pet.js\n",
			cron: "15 6-18/6 * * *", cronFrom: FromScriptLine, display: "jd_pet.js", nameFrm: FromFileName},
		{name: "seconds field", file: "fast.js",
			src:  "// cron: 0 */30 * * * *\n",
			cron: "0 */30 * * * *", cronFrom: FromCronMarker, display: "fast.js", nameFrm: FromFileName},
		{name: "comment closer after the expression", file: "a.js",
			src:  "/* cron: 10 9,21 * * * */\n",
			cron: "10 9,21 * * *", cronFrom: FromCronMarker, display: "a.js", nameFrm: FromFileName},
		{name: "no space after the marker", file: "b.js",
			src:  "//cron:1 0 * * *\n",
			cron: "1 0 * * *", cronFrom: FromCronMarker, display: "b.js", nameFrm: FromFileName},
		{name: "jsdoc star line", file: "c.js",
			src:  "/**\n * cron: 45 23 * * 1-5\n */\n",
			cron: "45 23 * * 1-5", cronFrom: FromCronMarker, display: "c.js", nameFrm: FromFileName},
		{name: "descriptor", file: "d.py",
			src:  "# cron: @daily\n",
			cron: "@daily", cronFrom: FromCronMarker, display: "d.py", nameFrm: FromFileName},
		{name: "quoted form only", file: "e.js",
			src:  "// cron \"0 12 * * *\" 中午提醒\n",
			cron: "0 12 * * *", cronFrom: FromCronQuoted, display: "e.js", nameFrm: FromFileName},
		{name: "crlf line endings", file: "f.js",
			src:  "// cron: 20 4 * * *\r\nconst $ = new Env('Windows 写的');\r\n",
			cron: "20 4 * * *", cronFrom: FromCronMarker, display: "Windows 写的", nameFrm: FromNewEnv},
		{name: "new Env with options", file: "g.js",
			src:  "// cron: 0 9 * * *\nconst $ = new Env(\"京东-签到\", { logLevel: 'info' });\n",
			cron: "0 9 * * *", cronFrom: FromCronMarker, display: "京东-签到", nameFrm: FromNewEnv},
		{name: "rewrite line for another file is not ours", file: "mine.js",
			src:  "5 8 * * * https://example.invalid/other.js, tag=other\n// cron: 7 7 * * *\n",
			cron: "7 7 * * *", cronFrom: FromCronMarker, display: "mine.js", nameFrm: FromFileName},
		{name: "malformed minute", file: "bad.js",
			src:     "// cron: 61 * * * *\n",
			display: "bad.js", nameFrm: FromFileName, skip: `the cron comment "61 * * * *" is not a valid cron expression`},
		{name: "malformed words", file: "bad2.js",
			src:     "// cron: every day at noon\n",
			display: "bad2.js", nameFrm: FromFileName, skip: `the cron comment "every day at noon" is not a valid cron expression`},
		{name: "no declaration", file: "util.js",
			src:     "module.exports = { add: (a, b) => a + b };\n",
			display: "util.js", nameFrm: FromFileName, skip: "no cron comment"},
		{name: "empty file", file: "empty.py", src: "",
			display: "empty.py", nameFrm: FromFileName, skip: "no cron comment"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := Parse("repo/dir/"+tc.file, []byte(tc.src))
			if h.Cron != tc.cron || h.CronSource != tc.cronFrom {
				t.Errorf("cron = %q from %q, want %q from %q (skip %q)", h.Cron, h.CronSource, tc.cron, tc.cronFrom, h.Skip)
			}
			if h.Name != tc.display || h.NameSource != tc.nameFrm {
				t.Errorf("name = %q from %q, want %q from %q", h.Name, h.NameSource, tc.display, tc.nameFrm)
			}
			if tc.skip == "" && h.Skip != "" || tc.skip != "" && !strings.Contains(h.Skip, tc.skip) {
				t.Errorf("skip = %q, want %q", h.Skip, tc.skip)
			}
		})
	}
}

// TestParseScansOnlyTheHead: a declaration past MaxScanBytes (inside
// megabytes of bundled code) is not read.
func TestParseScansOnlyTheHead(t *testing.T) {
	src := strings.Repeat("x", MaxScanBytes) + "\n// cron: 0 0 * * *\n"
	if h := Parse("big.js", []byte(src)); h.Cron != "" {
		t.Fatalf("cron %q found past the scan limit", h.Cron)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"// cron: 0 0 * * *\nnew Env('x')", "5 8 * * * a.js, tag=x", "cron \"1 2 3 4 5\"", "name: \xff"} {
		f.Add("a.js", s)
	}
	f.Fuzz(func(t *testing.T, file, src string) {
		h := Parse(file, []byte(src))
		if (h.Cron == "") == (h.Skip == "") {
			t.Fatalf("exactly one of Cron and Skip must be set: %+v", h)
		}
		if h.Cron != "" {
			if again, ok := validCron(h.Cron); !ok || again != h.Cron {
				t.Fatalf("returned cron %q does not parse back", h.Cron)
			}
		}
		if h.Name == "" && h.NameSource != FromFileName {
			t.Fatalf("empty name from %s", h.NameSource)
		}
	})
}
