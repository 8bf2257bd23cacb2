package scriptpath

import (
	"crypto/sha256"
	"strings"
	"testing"
)

func file(p, content string, x bool) TreeFile {
	return TreeFile{Path: p, Executable: x, Size: int64(len(content)), SHA256: sha256.Sum256([]byte(content))}
}

func TestTreeDigest(t *testing.T) {
	a := []TreeFile{file("main.js", "require('./utils')", false), file("utils.js", "module.exports={}", false), file("d/run.sh", "echo", true)}
	d1, err := TreeDigest(a)
	if err != nil {
		t.Fatal(err)
	}
	// Order of listing does not matter.
	d2, _ := TreeDigest([]TreeFile{a[2], a[0], a[1]})
	if d1 != d2 {
		t.Fatal("digest depends on listing order")
	}
	// A golden value: the canonical form is a wire contract between the
	// edge, the control plane and the worker; changing it is a new domain.
	if got := d1.String(); got != "sha256:"+goldenTree {
		t.Fatalf("TreeDigest = %s; the canonical form changed", got)
	}
	empty, _ := TreeDigest(nil)
	for name, other := range map[string][]TreeFile{
		"one byte":   {file("main.js", "require('./utils');", false), a[1], a[2]},
		"rename":     {file("main2.js", "require('./utils')", false), a[1], a[2]},
		"chmod +x":   {file("main.js", "require('./utils')", true), a[1], a[2]},
		"one less":   {a[0], a[1]},
		"moved file": {a[0], a[1], file("e/run.sh", "echo", true)},
	} {
		d, err := TreeDigest(other)
		if err != nil || d == d1 || d == empty {
			t.Errorf("%s: %s, %v", name, d, err)
		}
	}
	for _, tc := range []struct {
		files []TreeFile
		want  string
	}{
		{[]TreeFile{file("../x", "", false)}, `".."`},
		{[]TreeFile{file("/x", "", false)}, "relative"},
		{[]TreeFile{file("a/", "", false)}, `must be written as "a"`},
		{[]TreeFile{file("a", "1", false), file("a", "2", false)}, "listed twice"},
		{[]TreeFile{{Path: "a", Size: -1}}, "limit is"},
		{make([]TreeFile, MaxEntries+1), "limit is 8192"},
	} {
		if _, err := TreeDigest(tc.files); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("TreeDigest(%.60v) = %v, want %q", tc.files, err, tc.want)
		}
	}
}

// goldenTree was computed independently of this code from the documented form.
const goldenTree = "645dd774eecafe8548809ed1afc387c7cb5bcf126732a2f2864eb51199a2173e"
