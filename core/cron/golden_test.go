package cron

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // tests run on machines without /usr/share/zoneinfo too
)

var update = flag.Bool("update", false, "rewrite the expected fires in testdata/dst/*.txt")

// goldenCase is one block of a golden file:
//
//	# comments (kept on -update)
//	expr: <expression>
//	after: <RFC3339 instant>
//	count: <n>
//	<n expected fires, RFC3339 with the zone's offset, one per line>
type goldenCase struct {
	comments []string
	expr     string
	after    time.Time
	count    int
	want     []string
	line     int
}

type goldenFile struct {
	zone  string
	cases []goldenCase
}

func readGolden(t *testing.T, path string) goldenFile {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var g goldenFile
	var cur *goldenCase
	var pending []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		key, val, _ := strings.Cut(line, ": ")
		switch {
		case line == "":
			cur = nil
		case strings.HasPrefix(line, "#"):
			pending = append(pending, line)
		case key == "zone":
			g.zone, pending = val, nil
		case key == "expr":
			g.cases = append(g.cases, goldenCase{comments: pending, expr: val, line: n})
			cur, pending = &g.cases[len(g.cases)-1], nil
		case cur == nil:
			t.Fatalf("%s:%d: %q outside a case", path, n, line)
		case key == "after":
			if cur.after, err = time.Parse(time.RFC3339, val); err != nil {
				t.Fatalf("%s:%d: %v", path, n, err)
			}
		case key == "count":
			if cur.count, err = strconv.Atoi(val); err != nil || cur.count < 1 {
				t.Fatalf("%s:%d: bad count %q", path, n, val)
			}
		default:
			cur.want = append(cur.want, line)
		}
	}
	if g.zone == "" || len(g.cases) == 0 {
		t.Fatalf("%s: no zone or no cases", path)
	}
	return g
}

func writeGolden(t *testing.T, path string, g goldenFile, header []string) {
	t.Helper()
	var b strings.Builder
	for _, h := range header {
		b.WriteString(h + "\n")
	}
	fmt.Fprintf(&b, "zone: %s\n", g.zone)
	for _, c := range g.cases {
		b.WriteString("\n")
		for _, com := range c.comments {
			b.WriteString(com + "\n")
		}
		fmt.Fprintf(&b, "expr: %s\nafter: %s\ncount: %d\n", c.expr, c.after.Format(time.RFC3339), c.count)
		for _, w := range c.want {
			b.WriteString(w + "\n")
		}
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestGoldenDST replays testdata/dst/*.txt. With -update it rewrites the
// expected fires; the reference model and TestDSTPolicy check them
// independently, so a regenerated table cannot silently bless a bug.
func TestGoldenDST(t *testing.T) {
	paths, err := filepath.Glob("testdata/dst/*.txt")
	if err != nil || len(paths) < 4 {
		t.Fatalf("want at least 4 golden files, found %d (%v)", len(paths), err)
	}
	for _, path := range paths {
		g := readGolden(t, path)
		loc := loadZone(t, g.zone)
		for i := range g.cases {
			c := &g.cases[i]
			s, err := Parse(c.expr, loc)
			if err != nil {
				t.Fatalf("%s:%d: Parse(%q): %v", path, c.line, c.expr, err)
			}
			got := make([]string, 0, c.count)
			at := c.after
			for range c.count {
				if at, err = s.Next(at); err != nil {
					t.Fatalf("%s:%d: Next: %v", path, c.line, err)
				}
				got = append(got, at.Format(time.RFC3339))
			}
			ref := newReference(t, c.expr, loc)
			end, _ := time.Parse(time.RFC3339, got[len(got)-1])
			if want := formatAll(ref.fires(c.after.Unix(), end.Unix()), loc); strings.Join(want, " ") != strings.Join(got, " ") {
				t.Errorf("%s:%d %q: Next disagrees with the reference model:\n got  %v\n want %v", path, c.line, c.expr, got, want)
			}
			if *update {
				c.want = got
				continue
			}
			if strings.Join(c.want, "\n") != strings.Join(got, "\n") {
				t.Errorf("%s:%d %q after %s:\n got  %v\n want %v", path, c.line, c.expr, c.after.Format(time.RFC3339), got, c.want)
			}
		}
		if *update {
			writeGolden(t, path, g, goldenHeader)
		}
	}
}

var goldenHeader = []string{
	"# Golden DST table: cron Next in one zone. Each case lists an expression, the",
	"# instant to start after and the next `count` fires (RFC3339 in the zone).",
	"# Regenerate: go test ./cron -run TestGoldenDST -update  (then review the diff;",
	"# the test also checks every line against the brute-force reference model).",
}
