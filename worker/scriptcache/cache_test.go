package scriptcache

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/core/scriptpath"
)

// fakeTree is the authority's side: a manifest and its blobs, with a
// fault to inject (a cut after some bytes, a corrupted blob).
type fakeTree struct {
	files   map[string][]byte
	exec    map[string]bool
	digest  canonjson.Digest
	blobs   map[string][]byte
	cutAt   int64 // fail a blob read once this many bytes were served (0 = never)
	served  int64
	corrupt bool
	pages   int
	reads   int
}

var errCut = errors.New("connection reset (injected)")

func newFakeTree(t testing.TB, files map[string]string) *fakeTree {
	t.Helper()
	f := &fakeTree{files: map[string][]byte{}, exec: map[string]bool{}, blobs: map[string][]byte{}}
	var tfs []scriptpath.TreeFile
	for p, body := range files {
		f.files[p] = []byte(body)
		sum := sha256.Sum256([]byte(body))
		f.blobs[hex.EncodeToString(sum[:])] = []byte(body)
		tfs = append(tfs, scriptpath.TreeFile{Path: p, Size: int64(len(body)), SHA256: sum})
	}
	d, err := scriptpath.TreeDigest(tfs)
	if err != nil {
		t.Fatal(err)
	}
	f.digest = d
	return f
}

func (f *fakeTree) TreePage(ctx context.Context, after string) (protocol.ScriptTreePage, error) {
	f.pages++
	var paths []string
	for p := range f.files {
		if p > after {
			paths = append(paths, p)
		}
	}
	sortStrings(paths)
	page := protocol.ScriptTreePage{V: protocol.Version, Digest: f.digest.String()}
	for _, p := range paths {
		if len(page.Files) == 2 { // small pages: the paging is exercised
			page.More = true
			break
		}
		sum := sha256.Sum256(f.files[p])
		page.Files = append(page.Files, protocol.ScriptTreeFile{Path: p, Size: int64(len(f.files[p])), SHA256: hex.EncodeToString(sum[:])})
	}
	return page, nil
}

func (f *fakeTree) Blob(ctx context.Context, sum string, offset, limit int64) ([]byte, int64, error) {
	f.reads++
	b, ok := f.blobs[sum]
	if !ok {
		return nil, 0, errors.New("no such blob")
	}
	end := min(offset+limit, int64(len(b)))
	if f.cutAt > 0 && f.served+end-offset > f.cutAt {
		end = offset + (f.cutAt - f.served)
		f.cutAt = 0
		if end > offset {
			f.served += end - offset
			return nil, 0, errCut // the bytes are lost with the connection
		}
		return nil, 0, errCut
	}
	f.served += end - offset
	out := bytes.Clone(b[offset:end])
	if f.corrupt && len(out) > 0 {
		out[0] ^= 1
	}
	return out, int64(len(b)), nil
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

func tree1MiB() map[string]string {
	return map[string]string{
		"main.js":     "const u = require('./utils'); console.log(u.greet(process.env.WHO))\n",
		"utils.js":    "exports.greet = (w) => 'hello ' + w\n",
		"data/big.js": strings.Repeat("// padding line to make the tree a megabyte\n", 1<<20/44),
		"lib/a.py":    "X = 1\n",
	}
}

// TestEnsureFetchesVerifiesAndReuses: the first Ensure fetches every blob
// (pages of the manifest, ranges of the blobs) and materialises a
// read-only tree with exactly the content; the second reuses it without a
// request.
func TestEnsureFetchesVerifiesAndReuses(t *testing.T) {
	c, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := newFakeTree(t, tree1MiB())
	root, st, err := c.Ensure(context.Background(), f.digest.String(), f)
	if err != nil {
		t.Fatal(err)
	}
	if st.Reused || st.BlobsFetched != 4 || f.pages != 2 {
		t.Errorf("first use: %+v, %d manifest pages", st, f.pages)
	}
	for p, body := range f.files {
		got, err := os.ReadFile(filepath.Join(root, p))
		if err != nil || !bytes.Equal(got, body) {
			t.Errorf("%s: %v", p, err)
		}
	}
	for _, p := range []string{root, filepath.Join(root, "data"), filepath.Join(root, "main.js")} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm()&0o222 != 0 {
			t.Errorf("%s is writable: %v %v", p, fi.Mode(), err)
		}
	}
	reads := f.reads + f.pages
	root2, st, err := c.Ensure(context.Background(), f.digest.String(), f)
	if err != nil || root2 != root || !st.Reused || f.reads+f.pages != reads {
		t.Errorf("second use: %+v %v, %d more requests", st, err, f.reads+f.pages-reads)
	}
}

// TestInterruptedDownloadResumes: a transfer cut in the middle leaves no
// tree (nothing can run) and a partial blob; a new cache on the same
// directory (a restarted worker) resumes from the bytes it has.
func TestInterruptedDownloadResumes(t *testing.T) {
	dir := t.TempDir()
	c, _ := Open(dir, Options{})
	f := newFakeTree(t, map[string]string{"big.js": strings.Repeat("x", 700_000), "main.js": "require('./big')\n"})
	f.cutAt = 600_000
	if _, _, err := c.Ensure(context.Background(), f.digest.String(), f); !errors.Is(err, errCut) {
		t.Fatalf("cut transfer: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "trees"))
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".build-") {
			t.Errorf("a tree exists after a cut transfer: %s", e.Name())
		}
	}
	c2, _ := Open(dir, Options{})
	served := f.served
	_, st, err := c2.Ensure(context.Background(), f.digest.String(), f)
	if err != nil {
		t.Fatal(err)
	}
	if st.ResumedAtBytes != 512<<10 || st.BytesFetched != 700_000-512<<10+int64(len("require('./big')\n")) {
		t.Errorf("resume: %+v (served %d before)", st, served)
	}
}

// TestTamperedCacheIsRefetched: a changed file of a materialised tree and
// a changed cached blob are both detected and fetched again; the tree ends
// up exactly as pinned.
func TestTamperedCacheIsRefetched(t *testing.T) {
	dir := t.TempDir()
	c, _ := Open(dir, Options{})
	f := newFakeTree(t, map[string]string{"main.py": "import util\nprint(util.X)\n", "util.py": "X = 'pinned'\n"})
	root, _, err := c.Ensure(context.Background(), f.digest.String(), f)
	if err != nil {
		t.Fatal(err)
	}
	util := filepath.Join(root, "util.py")
	os.Chmod(root, 0o755)
	os.Chmod(util, 0o644)
	if err := os.WriteFile(util, []byte("X = 'evil'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(f.files["util.py"])
	blob := filepath.Join(dir, "blobs", hex.EncodeToString(sum[:]))
	os.Chmod(blob, 0o600)
	os.WriteFile(blob, []byte("X = 'evil'\n"), 0o600)
	root, st, err := c.Ensure(context.Background(), f.digest.String(), f)
	if err != nil {
		t.Fatal(err)
	}
	if st.Reused || st.Refetched == 0 || st.BlobsFetched != 1 {
		t.Errorf("after tampering: %+v", st)
	}
	if got, _ := os.ReadFile(filepath.Join(root, "util.py")); string(got) != "X = 'pinned'\n" {
		t.Errorf("util.py is %q", got)
	}
}

// TestWrongBytesNeverRun: a blob that does not hash to its name, or a
// manifest for another digest, leaves no tree.
func TestWrongBytesNeverRun(t *testing.T) {
	c, _ := Open(t.TempDir(), Options{})
	f := newFakeTree(t, map[string]string{"a.sh": "echo hi\n"})
	f.corrupt = true
	if _, _, err := c.Ensure(context.Background(), f.digest.String(), f); !errors.Is(err, ErrDigest) {
		t.Errorf("corrupt blob: %v", err)
	}
	f.corrupt = false
	other := canonjson.Sum("x", nil)
	if _, _, err := c.Ensure(context.Background(), other.String(), f); !errors.Is(err, ErrDigest) {
		t.Errorf("manifest of another tree: %v", err)
	}
	if _, _, err := c.Ensure(context.Background(), "sha256:nope", f); !errors.Is(err, ErrDigest) {
		t.Errorf("bad digest: %v", err)
	}
}

// TestEvictionKeepsTheCapLRU: with a small cap the least recently used
// tree goes first, the one just used stays.
func TestEvictionKeepsTheCapLRU(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	c, _ := Open(t.TempDir(), Options{MaxBytes: 310_000, Now: func() time.Time { return now }})
	a := newFakeTree(t, map[string]string{"a.js": strings.Repeat("a", 60_000)})
	b := newFakeTree(t, map[string]string{"b.js": strings.Repeat("b", 60_000)})
	d := newFakeTree(t, map[string]string{"d.js": strings.Repeat("d", 60_000)})
	ra, _, _ := c.Ensure(context.Background(), a.digest.String(), a)
	os.Chtimes(ra+".manifest", now.Add(-time.Hour), now.Add(-time.Hour))
	rb, _, _ := c.Ensure(context.Background(), b.digest.String(), b)
	rd, _, err := c.Ensure(context.Background(), d.digest.String(), d)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ra); !os.IsNotExist(err) {
		t.Errorf("the oldest tree is still there: %v", err)
	}
	for _, r := range []string{rb, rd} {
		if _, err := os.Stat(r + ".manifest"); err != nil {
			t.Errorf("%s: %v", r, err)
		}
	}
}

func TestCommandNamesAMissingInterpreter(t *testing.T) {
	_, _, err := Command(nil, "/t", "x/a.py", nil, "/nonexistent")
	if err == nil || !strings.Contains(err.Error(), "python3") {
		t.Errorf("missing python3: %v", err)
	}
	interps, _ := scriptpath.NewInterpreters([]string{".sh=/bin/sh"})
	argv, dir, err := Command(interps, "/t", "x/a.sh", []string{"1"}, "")
	if err != nil || strings.Join(argv, " ") != "/bin/sh /t/a.sh 1" || dir != "/t" {
		t.Errorf("sh: %v %s %v", argv, dir, err)
	}
}
