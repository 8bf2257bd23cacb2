package subfetch

import (
	"strings"
	"testing"

	"github.com/ql3/ql3/core/scriptpath"
)

// FuzzTreeListing: any `git ls-tree -r -z -l` answer either fails to
// parse or yields entries whose check never panics, and every entry the
// check keeps has a clean path without a .git element, a size within the
// file limit, and the kept files stay within the count and byte limits.
func FuzzTreeListing(f *testing.F) {
	f.Add([]byte("100644 blob 0123 12\ta.js\x00"))
	f.Add([]byte("120000 blob 0123 4\tetc\x00160000 commit 0123 -\tsub\x00"))
	f.Add([]byte("100644 blob 0123 1\t..\x00"))
	f.Add([]byte("100755 blob 0123 3\t.git/hooks/x\x00100644 blob 0123 99999999999\tbig\x00"))
	l := Limits{MaxFiles: 3, MaxFileBytes: 100, MaxTotalBytes: 150, MaxDepth: 2}.WithDefaults()
	f.Fuzz(func(t *testing.T, listing []byte) {
		raw, err := parseLsTree(listing)
		if err != nil {
			return
		}
		keep, skip, err := checkEntries(raw, l)
		if err != nil {
			if keep != nil || skip != nil {
				t.Fatalf("a refused tree kept %d and skipped %d entries", len(keep), len(skip))
			}
			return
		}
		var total int64
		for _, e := range keep {
			if c, err := scriptpath.Clean("path", e.path, false); err != nil || c != e.path || hasGitElement(e.path) {
				t.Fatalf("kept %q (%v)", e.path, err)
			}
			if e.size < 0 || e.size > l.MaxFileBytes || strings.Count(e.path, "/") >= l.MaxDepth {
				t.Fatalf("kept %q of %d bytes", e.path, e.size)
			}
			total += e.size
		}
		if len(keep) > l.MaxFiles || total > l.MaxTotalBytes {
			t.Fatalf("kept %d files, %d bytes", len(keep), total)
		}
		if len(keep)+len(skip) != len(raw) {
			t.Fatalf("%d entries, %d kept, %d skipped", len(raw), len(keep), len(skip))
		}
	})
}
